"""A batched CartPole as a ``gymnasium.vector.VectorEnv`` (``gymnasium.make_vec("drla/CartPole-v0", num_envs=N,
vectorization_mode="vector_entry_point")``): N CartPoles stepped together.

Each copy follows the scalar ``drla/CartPole-v0`` (and Gymnasium's ``CartPole-v1``) bit for bit: the same float64
arithmetic in the same order. Two kernels do the step, both exact on every CPU and ``DRLA_EXACT_MATH`` path: for a
few copies (``kernel="python"``, the default up to ``PYTHON_KERNEL_MAX`` copies) the scalar env's own Python float
arithmetic row by row, with no numpy call but the one that builds the observations; for more (``kernel="numpy"``)
``CartPoleBatch``, about 40 numpy calls whatever N, ``cos``, ``sin`` and ``x**2`` through CartPole's exact math
(``x**2`` as C's ``pow`` gives it, from numpy's ``x * x``: see ``cartpole._ProductSquare``). One copy has its own
shortest step.

Seeding is ``SyncVectorEnv``'s: ``reset(seed=s)`` seeds copy ``i`` with ``s + i`` (a list gives each its own), and
every copy draws its start states from its own generator, as the scalar env does, so a run equals ``SyncVectorEnv``
over N scalar envs step for step (``tests/test_gym_vector.py``). The start states of the next 256 episodes (64 beyond
1024 copies) are drawn ahead in one call per copy (the same numbers: one generator, in order; an explicit reset
winds the generator back to the first not used). Autoreset is Gymnasium's, in the mode given
(``metadata["autoreset_mode"]``): ``NEXT_STEP`` (the default, as Gymnasium's own ``CartPoleVectorEnv``): a copy whose
episode ended is reset on its next step, which pays 0 and ignores its action; ``SAME_STEP``: it is reset in the step
that ends it, its last observation in ``info["final_obs"]``; ``DISABLED``: never (``reset(options={"reset_mask":
mask})`` resets some). Every array ``step`` returns is the caller's (the rewards and flags of a step where nothing
happened are read-only arrays shared between such steps).
"""

from __future__ import annotations

import math
import struct
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from drla_core.envs import cartpole as cp

from .gym_convert import to_gym_space

__all__ = ["CartPoleVectorEnv", "PYTHON_KERNEL_MAX"]

#: up to this many copies the Python kernel is the faster (on a 2-core EPYC the two cross near 48 copies)
PYTHON_KERNEL_MAX = 40
_AHEAD = 64  # start states drawn ahead per copy (4 KiB; 256 for up to 1024 copies: fewer draws of a block)
_BINARY = frozenset((0, 1))


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


class _PythonKernel:
    """The scalar CartPole's step, row by row in Python floats (``CartPole.step``'s expressions, in its order); the
    state is one flat list (x, x_dot, theta, theta_dot of row 0, then row 1, ...), packed into the observations at
    once."""

    def __init__(self, n: int, env: cp.CartPole) -> None:
        self.n = n
        self.state = [0.0] * (4 * n)
        self._pack = struct.Struct(f"{4 * n}d").pack
        self.constants = self._k = (env.force_mag, env.polemass_length, env.total_mass, env.gravity, env.length,
                                    env.masspole, env.tau, env.x_threshold, env.theta_threshold_radians)

    def restart(self, rows: np.ndarray, states: np.ndarray) -> None:
        for i, s in zip(rows.tolist(), states.tolist()):
            self.state[4 * i:4 * i + 4] = s

    def restart_ordered(self, rows: np.ndarray, states: np.ndarray) -> None:
        self.restart(rows, states[:, (0, 2, 1, 3)])

    def observations(self) -> np.ndarray:
        if self.n <= 4:  # (numpy's list conversion is the cheaper for a few rows, packing for more)
            return np.array(self.state, np.float32).reshape(self.n, 4)
        return np.ndarray((self.n, 4), np.float64, self._pack(*self.state)).astype(np.float32)

    def advance(self, acts: list, starts: dict[int, list[float]] | None, cos: Any = math.cos, sin: Any = math.sin,
                f32: Any = np.float32) -> tuple[np.ndarray, list[int]]:
        """Step every row (its action in ``acts``, already checked) but those of ``starts``, which start again at
        the state given; returns the observations and the rows whose episode terminated."""
        fm, pml, total_mass, gravity, length, masspole, tau, xt, tt = self._k
        st = self.state
        ended = []
        j = 0
        for i, action in enumerate(acts):
            if starts and i in starts:
                st[j:j + 4] = starts[i]
                j += 4
                continue
            x, x_dot, theta, theta_dot = st[j:j + 4]
            force = fm if action == 1 else -fm
            costheta = cos(theta)
            sintheta = sin(theta)
            temp = (force + pml * theta_dot**2 * sintheta) / total_mass
            thetaacc = (gravity * sintheta - costheta * temp) / (length * (4.0 / 3.0 - masspole * costheta**2
                                                                          / total_mass))
            xacc = temp - pml * thetaacc * costheta / total_mass
            x = x + tau * x_dot
            x_dot = x_dot + tau * xacc
            theta = theta + tau * theta_dot
            theta_dot = theta_dot + tau * thetaacc
            st[j:j + 4] = x, x_dot, theta, theta_dot
            if x < -xt or x > xt or theta < -tt or theta > tt:
                ended.append(i)
            j += 4
        if j <= 16:  # (as observations())
            return np.array(st, f32).reshape(j >> 2, 4), ended
        return np.ndarray((j >> 2, 4), np.float64, self._pack(*st)).astype(f32), ended


class _NumpyKernel:
    """``CartPoleBatch``: every row in one set of numpy calls (rows that start again are put at their start inside
    it: ``CartPoleBatch.step(restart=...)``)."""

    def __init__(self, n: int, env: cp.CartPole) -> None:
        self._batch = cp.CartPoleBatch(n, env)
        self._batch.reset([0] * n)

    def restart(self, rows: np.ndarray, states: np.ndarray) -> None:
        self._batch.restart(rows, states)

    def restart_ordered(self, rows: np.ndarray, states: np.ndarray) -> None:
        """``restart`` with ``states`` in the batch's own order (x, theta, x_dot, theta_dot)."""
        self._batch.restart(rows, states, None)

    def observations(self) -> np.ndarray:
        return self._batch.observations().copy()

    @staticmethod
    def checked(a: np.ndarray) -> np.ndarray:
        """The actions as indices (0 or 1), or ValueError."""
        kind = a.dtype.kind
        if kind in "iu":
            bad = np.count_nonzero(a >> 1)
        elif kind == "b":
            bad, a = 0, a.view(np.uint8)
        else:  # (as the scalar env: any number equal to 0 or 1)
            bad = kind not in "fc" or np.count_nonzero((a != 0) & (a != 1))
            if not bad:
                a = a.real.astype(np.intp)
        if bad:
            raise ValueError(f"step: actions must be {len(a)} zeros and ones, got {a!r}")
        return a

    def advance(self, a: np.ndarray, restart: tuple[np.ndarray, np.ndarray] | None = None
                ) -> tuple[np.ndarray, np.ndarray | None]:
        """Step every row (the actions ``checked``; ``restart``: see ``CartPoleBatch.step``); returns the observations
        and which rows terminated (None: none did)."""
        obs, _, terminated, _ = self._batch.step(a, restart)
        return obs.copy(), terminated.copy() if np.count_nonzero(terminated) else None


class CartPoleVectorEnv(VectorEnv):
    """``num_envs`` CartPoles with one step for all (see the module docstring)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 8, max_episode_steps: int = 500, render_mode: str | None = None,
                 name: str = "cartpole", autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
                 kernel: str = "auto") -> None:
        if name != "cartpole":  # (the registered id's kwargs name the env)
            raise ValueError(f"CartPoleVectorEnv steps CartPole only, not {name!r}")
        if render_mode is not None:
            raise ValueError(f"render_mode {render_mode!r}: the vector CartPole does not render")
        self.num_envs = n = int(num_envs)
        if n < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        if kernel not in ("auto", "python", "numpy"):
            raise ValueError(f"kernel {kernel!r}: expected 'auto', 'python' or 'numpy'")
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        self._env = env = cp.CartPole(max_episode_steps)  # its constants and spaces; never stepped
        self.max_episode_steps = env.max_episode_steps
        self.single_observation_space = to_gym_space(env.observation_space)
        self.single_action_space = to_gym_space(env.action_space)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self.render_mode = None
        if kernel == "auto":
            kernel = "python" if n <= PYTHON_KERNEL_MAX else "numpy"
        self.kernel = kernel
        self._python = kernel == "python"
        self._single = self._python and n == 1
        self._kernel: Any
        if self._python:
            self._kernel = rows = _PythonKernel(n, env)
            self._st, self._constants = rows.state, rows.constants  # (one copy's step reads them itself)
        else:
            self._kernel = _NumpyKernel(n, env)
        self._rngs = [np.random.default_rng() for _ in range(n)]
        # start states drawn ahead, _ahead[u, i]: row i's u-th, x, x_dot, theta, theta_dot, then again as CartPoleBatch
        # orders them (x, theta, x_dot, theta_dot); row i's next is _ahead_flat[_next[i]], _next[i] = u * n + i (always
        # below _spent: a row's block is drawn again when it is used up)
        self._ahead_n = ahead = _AHEAD * 4 if n <= 1024 else _AHEAD
        self._ahead = np.zeros((ahead, n, 8))
        self._ahead_flat = self._ahead.reshape(ahead * n, 8)
        self._next = np.arange(n)
        self._rows = _frozen(np.arange(n))
        self._spent = ahead * n
        self._t = 0  # steps since the first reset; row i's episode started at step _began[i]
        self._began = np.zeros(n, np.int64)
        self._next_truncation = self.max_episode_steps
        # NEXT_STEP: the rows to reset on the next step (their indices; for the numpy kernel a bool mask)
        self._pending: np.ndarray | None = None
        self._ended = np.zeros(n, bool)  # DISABLED: the rows whose episode ended (stepping them is an error)
        self._ones, self._zeros = _frozen(np.ones(n)), _frozen(np.zeros(n))
        self._no_flags, self._all_flags = _frozen(np.zeros(n, bool)), _frozen(np.ones(n, bool))
        self._started = False
        self._shape = (n,)
        self._quiet_until = 0  # steps before this one need no more than the kernel's step (see step)

    # ---- start states: each copy's own generator, as the scalar env's reset draws them
    def _refill(self, i: int) -> None:
        block = self._ahead[:, i]
        block[:, :4] = self._rngs[i].uniform(-0.05, 0.05, size=(self._ahead_n, 4))
        block[:, 4:] = block[:, (0, 2, 1, 3)]
        self._next[i] = i

    def _refill_spent(self) -> None:
        for i in np.flatnonzero(self._next >= self._spent).tolist():
            self._refill(i)

    def _rewind(self, i: int) -> np.random.Generator:
        """Row i's generator, set back to where its first start not yet used was drawn (PCG64: one draw a number)."""
        rng = self._rngs[i]
        unused = self._ahead_n - (int(self._next[i]) - i) // self.num_envs
        bits: Any = rng.bit_generator  # (PCG64, as default_rng and Gymnasium's seeding make)
        bits.advance(2**128 - 4 * unused)  # (the period is 2**128: this many steps back)
        return rng

    def _draw(self, rows: np.ndarray) -> np.ndarray:
        """The next start state of each of ``rows`` (k, 8: see ``_ahead``)."""
        at = self._next[rows]
        states = self._ahead_flat[at]
        at += self.num_envs
        self._next[rows] = at
        if at.max() >= self._spent:
            self._refill_spent()
        return states

    def _draw_one(self, i: int) -> list[float]:
        at = int(self._next[i])
        state = self._ahead_flat[at, :4].tolist()
        self._next[i] = at = at + self.num_envs
        if at >= self._spent:
            self._refill(i)
        return state

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict]:
        n = self.num_envs
        if seed is None or isinstance(seed, int):
            seeds: list[int | None] = [None if seed is None else seed + i for i in range(n)]
        else:
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(f"reset: {len(seeds)} seeds for {n} copies")
        if seed is not None:
            self._np_random, self._np_random_seed = gymnasium.utils.seeding.np_random(
                seed if isinstance(seed, int) else None)
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is None:
            rows = np.arange(n)
        else:
            if not (isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.shape == (n,) and mask.any()):
                raise ValueError(f"reset: options['reset_mask'] must be a bool array of shape ({n},) with a True")
            rows = np.flatnonzero(mask)
        if mask is not None and not self._started:
            raise ValueError("reset: reset every copy (no reset_mask) before resetting some")
        low, high = -0.05, 0.05
        if options:  # Gymnasium's maybe_parse_reset_bounds: custom start bounds
            low, high = float(options.get("low", low)), float(options.get("high", high))
        states = np.empty((len(rows), 4))
        for j, i in enumerate(rows.tolist()):
            if seeds[i] is not None:
                self._rngs[i] = rng = np.random.default_rng(seeds[i])
            else:
                rng = self._rewind(i) if self._started else self._rngs[i]
            states[j] = rng.uniform(low, high, size=(4,))
            self._refill(i)  # (the next autoreset's starts, drawn from here)
        self._kernel.restart(rows, states)
        self._began[rows] = self._t
        self._next_truncation = int(self._began.min()) + self.max_episode_steps
        self._ended[rows] = False
        if self._pending is not None:
            if mask is None:
                self._pending = None
            elif self._python:
                self._pending = np.setdiff1d(self._pending, rows)
                if not self._pending.size:
                    self._pending = None
            else:
                self._pending = self._pending & ~mask
                if not self._pending.any():
                    self._pending = None
        self._started = True
        self._quiet_until = 0 if self._ended.any() else self._next_truncation
        return self._kernel.observations(), {}

    def step(self, actions: Any, _cos: Any = math.cos, _sin: Any = math.sin, _f32: Any = np.float32
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        a = actions if type(actions) is np.ndarray else np.asarray(actions)
        t = self._t + 1
        if self._single and t < self._quiet_until:  # one copy's usual step, the shortest way
            action = a.tolist()[0] if a.shape == self._shape else None
            if action != 1 and action != 0:
                raise ValueError(f"step: actions must be 1 zeros and ones, got {actions!r}")
            self._t = t
            st = self._st
            if self._pending is not None:  # NEXT_STEP: it starts again, paying 0
                self._pending = None
                st[:] = start = self._draw_one(0)
                self._began[0] = t
                return np.array(start, _f32, ndmin=2), self._zeros, self._no_flags, self._no_flags, {}
            # (_PythonKernel.advance's arithmetic, for its one row)
            fm, pml, total_mass, gravity, length, masspole, tau, xt, tt = self._constants
            x, x_dot, theta, theta_dot = st
            force = fm if action == 1 else -fm
            costheta = _cos(theta)
            sintheta = _sin(theta)
            temp = (force + pml * theta_dot**2 * sintheta) / total_mass
            thetaacc = (gravity * sintheta - costheta * temp) / (length * (4.0 / 3.0 - masspole * costheta**2
                                                                          / total_mass))
            xacc = temp - pml * thetaacc * costheta / total_mass
            x = x + tau * x_dot
            x_dot = x_dot + tau * xacc
            theta = theta + tau * theta_dot
            theta_dot = theta_dot + tau * thetaacc
            st[:] = x, x_dot, theta, theta_dot
            obs = np.array(st, _f32, ndmin=2)
            if not (x < -xt or x > xt or theta < -tt or theta > tt):
                return obs, self._ones, self._no_flags, self._no_flags, {}
            if self.autoreset_mode is AutoresetMode.NEXT_STEP:
                self._pending = self._rows
                return obs, self._ones, self._all_flags, self._no_flags, {}
            terminated = np.ones(1, bool)
            return obs, self._ones, terminated, self._no_flags, self._episodes_ended(obs, terminated)
        if self._python and self._pending is None and t < self._quiet_until:  # a few copies' usual step, shortest
            acts = a.tolist()
            if a.shape != self._shape or not _BINARY.issuperset(acts):
                raise ValueError(f"step: actions must be {self.num_envs} zeros and ones, got {actions!r}")
            obs, terminal_rows = self._kernel.advance(acts, None)
            self._t = t
            if not terminal_rows:
                return obs, self._ones, self._no_flags, self._no_flags, {}
            terminated = np.zeros(self.num_envs, bool)
            terminated[terminal_rows] = True
            return obs, self._ones, terminated, self._no_flags, self._episodes_ended(obs, terminated)
        if a.shape != self._shape:
            raise ValueError(f"step: actions must be {self.num_envs} zeros and ones, got {actions!r}")
        if t >= self._quiet_until:  # (the step is an error, or some copies may be truncated)
            return self._step(a)
        obs, terminated, rewards = self._advance(a, t)
        if terminated is self._no_flags:
            return obs, rewards, terminated, terminated, {}
        return obs, rewards, terminated, self._no_flags, self._episodes_ended(obs, terminated)

    def _advance(self, a: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The kernel's step at step ``t``, the copies pending a reset (``NEXT_STEP``) starting again instead:
        ``(observations, terminated, rewards)``."""
        pending = self._pending
        if self._python:
            acts = a.tolist()
            if not _BINARY.issuperset(acts):
                raise ValueError(f"step: actions must be {self.num_envs} zeros and ones, got {a!r}")
            starts = None
            if pending is not None:
                starts = {i: self._draw_one(i) for i in pending.tolist()}
                self._began[pending] = t
            obs, terminal_rows = self._kernel.advance(acts, starts)
            terminated = self._no_flags
            if terminal_rows:
                terminated = np.zeros(self.num_envs, bool)
                terminated[terminal_rows] = True
        else:
            a = self._kernel.checked(a)
            restart = None
            if pending is not None:  # (a mask: whole-width copies, no index arrays)
                at = self._next
                restart = (pending, self._ahead_flat.take(at, 0)[:, 4:])
                np.add(at, self.num_envs, at, where=pending)
                if at.max() >= self._spent:
                    self._refill_spent()
                np.copyto(self._began, t, where=pending)
            obs, flags = self._kernel.advance(a, restart)
            terminated = self._no_flags if flags is None else flags
        self._t = t
        rewards = self._ones
        if pending is not None:
            self._pending = None
            self._quiet_until = self._next_truncation
            if not self._python:
                rewards = np.subtract(1.0, pending, dtype=np.float64)
            elif len(pending) == self.num_envs:
                rewards = self._zeros
            else:
                rewards = np.ones(self.num_envs)
                rewards[pending] = 0.0
        return obs, terminated, rewards

    def _step(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """``step`` where some copies may be truncated (or the call is an error)."""
        if not self._started:
            raise RuntimeError("CartPoleVectorEnv: call reset() before step()")
        if self._ended.any():
            raise RuntimeError(f"step: copies {np.flatnonzero(self._ended).tolist()} ended their episodes; "
                               "reset them first (autoreset_mode DISABLED): reset(options={'reset_mask': ...})")
        pending = self._pending
        t = self._t + 1
        obs, terminated, rewards = self._advance(a, t)
        truncated = self._no_flags
        if t >= self._next_truncation:
            truncated = t - self._began >= self.max_episode_steps
            self._next_truncation = int(self._began.min()) + self.max_episode_steps
            if pending is not None:
                truncated[pending] = False
            if not truncated.any():
                truncated = self._no_flags
        self._quiet_until = self._next_truncation
        if terminated is self._no_flags and truncated is self._no_flags:
            return obs, rewards, terminated, truncated, {}
        return obs, rewards, terminated, truncated, self._episodes_ended(obs, terminated | truncated)

    def _episodes_ended(self, obs: np.ndarray, ended_mask: np.ndarray) -> dict:
        """The autoreset mode's part after a step in which some episodes may have ended; returns the step's info."""
        info: dict = {}
        if self.autoreset_mode is AutoresetMode.NEXT_STEP and not self._python:
            self._pending = ended_mask.copy()  # (the caller's array, as it is)
            return info
        ended = np.flatnonzero(ended_mask)
        if not ended.size:
            return info
        if self.autoreset_mode is AutoresetMode.NEXT_STEP:
            self._pending = ended
        elif self.autoreset_mode is AutoresetMode.SAME_STEP:
            for i in ended.tolist():
                info = self._add_info(info, {"final_obs": obs[i].copy(), "final_info": {}}, i)
            self._restart(ended, obs, self._t)
        else:
            self._ended[ended] = True
            self._quiet_until = 0
        return info

    def _restart(self, rows: np.ndarray, obs: np.ndarray, t: int) -> None:
        states = self._draw(rows)
        self._kernel.restart_ordered(rows, states[:, 4:])
        obs[rows] = states[:, :4]
        self._began[rows] = t
