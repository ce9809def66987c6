"""CartPole: the classic control benchmark, with Gymnasium CartPole-v1 dynamics exactly.

The state is kept in Python floats (float64) and integrated with explicit Euler, as in
Gymnasium's ``cartpole.py``, so the same seed and actions give the same trajectory as
``gymnasium.make("CartPole-v1")``; only the observation is float32.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base.env import Env
from ..base.spaces import Box, Discrete

__all__ = ["CartPole", "CartPoleBatch"]


class CartPole(Env):
    """Balance a pole on a cart by pushing the cart left or right.

    ## Description
    The cart-pole problem of Barto, Sutton and Anderson, "Neuronlike Adaptive Elements That Can
    Solve Difficult Learning Control Problems" (1983). A pole is attached by an un-actuated joint
    to a cart moving along a frictionless track. The pole starts upright and the goal is to keep
    it balanced by applying forces to the cart. Physics: gravity 9.8, cart mass 1.0, pole mass
    0.1, pole half-length 0.5, force 10.0, time step 0.02 s, explicit Euler integration.

    ## Action Space
    ``Discrete(2)``: ``0`` pushes the cart to the left, ``1`` pushes it to the right. The change in
    velocity is not fixed: it depends on the angle of the pole.

    ## Observation Space
    ``Box((4,), float32)``:

    | Num | Observation           | Min                 | Max               |
    |-----|-----------------------|---------------------|-------------------|
    | 0   | Cart Position         | -4.8                | 4.8               |
    | 1   | Cart Velocity         | -Inf                | Inf               |
    | 2   | Pole Angle            | ~ -0.418 rad (-24°) | ~ 0.418 rad (24°) |
    | 3   | Pole Angular Velocity | -Inf                | Inf               |

    (The velocity bounds are float32's largest finite value, as in Gymnasium.) The episode ends
    well inside the position and angle bounds: at ±2.4 and ±12°.

    ## Rewards
    ``+1`` for every step taken, the terminating step included, so the best return is 500.

    ## Starting State
    All four state variables uniform in ``(-0.05, 0.05)``, drawn from ``self.np_random``.

    ## Episode End
    1. Termination: the pole angle leaves ±12° (±0.2095 rad).
    2. Termination: the cart position leaves ±2.4 (the cart centre reaches the edge of the display).
    3. Truncation: the episode reaches ``max_episode_steps`` (500, as in CartPole-v1).
    """

    metadata = {"render_fps": 50}

    episode_attrs = ("state", "elapsed_steps")

    def __init__(self, max_episode_steps: int = 500) -> None:
        self.gravity = 9.8
        self.masscart = 1.0
        self.masspole = 0.1
        self.total_mass = self.masspole + self.masscart
        self.length = 0.5  # half the pole's length
        self.polemass_length = self.masspole * self.length
        self.force_mag = 10.0
        self.tau = 0.02  # seconds between state updates
        self.theta_threshold_radians = 12 * 2 * math.pi / 360
        self.x_threshold = 2.4
        self.max_episode_steps = int(max_episode_steps)

        high = np.array([self.x_threshold * 2, np.finfo(np.float32).max, self.theta_threshold_radians * 2,
                         np.finfo(np.float32).max], dtype=np.float32)
        self.observation_space = Box(-high, high, dtype=np.float32)
        self.action_space = Discrete(2, names=["push_left", "push_right"])
        self.state: tuple[float, float, float, float] | None = None
        self.elapsed_steps = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        low, high = -0.05, 0.05
        if options:  # Gymnasium's maybe_parse_reset_bounds: custom start bounds
            low, high = float(options.get("low", low)), float(options.get("high", high))
        x, x_dot, theta, theta_dot = (float(v) for v in self.np_random.uniform(low, high, size=(4,)))
        self.state = (x, x_dot, theta, theta_dot)
        self.elapsed_steps = 0
        return np.array(self.state, dtype=np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self.state is None:
            raise RuntimeError("CartPole: call reset() before step()")
        if action != 0 and action != 1:
            raise ValueError(f"CartPole: action must be 0 or 1, got {action!r}")
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        costheta = math.cos(theta)
        sintheta = math.sin(theta)

        # Equations of motion: https://coneural.org/florian/papers/05_cart_pole.pdf
        temp = (force + self.polemass_length * theta_dot**2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta**2 / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass

        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        self.state = (x, x_dot, theta, theta_dot)
        self.elapsed_steps += 1

        terminated = (x < -self.x_threshold or x > self.x_threshold
                      or theta < -self.theta_threshold_radians or theta > self.theta_threshold_radians)
        truncated = self.elapsed_steps >= self.max_episode_steps
        return np.array(self.state, dtype=np.float32), 1.0, terminated, truncated, {}

    def batch(self, n: int, capacity: int = 0) -> CartPoleBatch | None:
        """``n`` copies of this CartPole stepped together in numpy (``CartPoleBatch``, room for ``capacity`` rows
        in all), or None when a subclass changes ``step`` or ``reset`` (its dynamics are then not these)."""
        if type(self).step is not CartPole.step or type(self).reset is not CartPole.reset:
            return None
        return CartPoleBatch(n, self, capacity)


EXACT_MATH_VARIABLE = "DRLA_EXACT_MATH"
EXACT_MATH_PATHS = ("auto", "numpy", "python")


def _py_cos(v: np.ndarray, out: np.ndarray) -> np.ndarray:  # (called with out positional, like a ufunc)
    out[...] = np.reshape([math.cos(t) for t in v.ravel().tolist()], v.shape)
    return out


def _py_sin(v: np.ndarray, out: np.ndarray) -> np.ndarray:
    out[...] = np.reshape([math.sin(t) for t in v.ravel().tolist()], v.shape)
    return out


def _py_square(v: np.ndarray, two: np.ndarray, out: np.ndarray) -> np.ndarray:
    out[...] = np.reshape([t**2 for t in v.ravel().tolist()], v.shape)
    return out


# the ufunc (np.clip adds a Python wrapper's cost); numpy 1.x may have a bare ``_core`` stub (after onnx's import)
_CLIP = (getattr(getattr(np, "_core", None), "umath", None) or np.core.umath).clip


class _ProductSquare:
    """Python's ``x**2`` (C ``pow(x, 2)``) on a float64 array, from numpy's ``x * x``; called ``f(x, two, out)``.

    ``x * x`` is the correctly rounded square; C's ``pow`` is not always: where the exact square lies within a hair
    of the midpoint between two doubles it may round the other way (glibc's, about 1 square in 1250). The exact
    error of the product, ``e = x*x - p``, tells where: ``x`` splits into ``hi`` (its top 26 bits: ``hi*hi`` is
    exact) and ``lo = x - hi`` (exact), and ``e = (hi*hi - p) + lo*(hi + x)`` to about 2**-24 ULP. Every element
    whose ``|e|`` is not below ``(1/2 - 1/64)`` ULP of ``p`` (about 3 % of them), or whose square is outside
    [2**-39, 2**40], or zero, is squared again by Python; the others are ``x*x``, which is then what ``pow`` gives
    (an infinite or NaN square stays numpy's: Python's ``x**2`` raises OverflowError there). The margin: glibc's
    ``pow`` (ARM's optimized-routines code) errs by at most 0.509 ULP in its ``exp`` step plus 1.5 * 2**-68 of
    relative error times ``|2 log x|`` in its ``log`` step, so by at most 0.0103 ULP before its last rounding
    for squares in that range (where ``|2 log x| <= 28``), 1.5 times less than 1/64; the worst seen in 4 million
    squares is 0.0067 ULP. ``exact_math``'s probe checks the values just outside the window on the running CPU and
    C library (else the square is Python's per element). Arrays of at most
    ``small`` elements are squared by Python at once (cheaper there than the 15 numpy calls).
    """

    _HI = np.int64(-(1 << 27))  # sign, exponent and the top 25 stored mantissa bits: 26 significant bits
    _SIGN_EXP = np.int64(-(1 << 52))
    # thr bits = clip(bits(p) - (983 << 52) - 1, -2**52, 80 << 52) & sign_exp: 2**(E - 983) for p = m 2**E, E in
    # [-39, 40] (for a power of two 2**(E - 984): the gap below it is half), -inf below that range (p tiny or 0: every
    # such element goes to Python), capped above it (a smaller threshold: only more go to Python)
    _OFFSET = np.int64((983 << 52) + 1)
    _FLOOR = np.int64(-(1 << 52))  # (bits of -inf)
    _CAP = np.int64(80 << 52)
    _SCALE = (0.5 - 1.0 / 64.0) * 2.0**931  # 2**(E - 983) -> (1/2 - 1/64) * 2**(E - 52), one ULP of p

    def __init__(self, small: int = 24) -> None:
        self.small = small
        self._last: tuple[Any, ...] = (None, None, ())  # the last call's arrays and their views (a batch's are reused)

    def __call__(self, v: np.ndarray, two: Any, out: np.ndarray) -> np.ndarray:
        last_v, last_out, views = self._last
        if v is not last_v or out is not last_out:
            m = v.size
            if m <= self.small:
                return _py_square(v, two, out)
            if not (v.flags.c_contiguous and out.flags.c_contiguous and v.dtype == out.dtype == np.float64):
                out[...] = self(np.ascontiguousarray(v, dtype=np.float64), two, np.empty(v.shape))
                return out
            x, p = v.reshape(m), out.reshape(m)
            hi, lo, e, thr = (np.empty(m) for _ in range(4))
            views = (x, p, x.view(np.int64), p.view(np.int64), hi, hi.view(np.int64), lo, e, thr, thr.view(np.int64),
                     np.empty(m, bool))
            self._last = (v, out, views)
        x, p, x_bits, p_bits, hi, hi_bits, lo, e, thr, t, bad = views
        np.multiply(x, x, p)
        np.bitwise_and(x_bits, self._HI, hi_bits)
        np.subtract(x, hi, lo)
        np.multiply(hi, hi, e)
        np.subtract(e, p, e)  # exact (Sterbenz)
        np.add(hi, x, hi)
        np.multiply(hi, lo, lo)
        np.add(e, lo, e)
        np.abs(e, e)
        np.subtract(p_bits, self._OFFSET, t)
        _CLIP(t, self._FLOOR, self._CAP, t)
        np.bitwise_and(t, self._SIGN_EXP, t)
        np.multiply(thr, self._SCALE, thr)
        np.greater_equal(e, thr, bad)
        if np.count_nonzero(bad):
            p[bad] = [t**2 for t in x[bad].tolist()]
        return out


def _near_the_midpoints(values: np.ndarray) -> np.ndarray:
    """Those of ``values`` whose exact square lies between 1/2 - 1/32 and 1/2 - 1/64 ULP from ``x*x``: the closest to
    the rounding midpoint that ``_ProductSquare`` leaves to numpy's product (found by Dekker's classic product,
    Veltkamp's split: not the formula under test)."""
    p = values * values
    c = values * 134217729.0  # 2**27 + 1
    hi = c - (c - values)
    lo = values - hi
    e = ((hi * hi - p) + 2.0 * hi * lo) + lo * lo
    r = np.abs(e) / np.spacing(p)
    return values[(r >= 0.5 - 1.0 / 32.0) & (r < 0.5 - 1.0 / 64.0)]


def _probe_numpy_is_exact() -> dict[str, bool]:
    """Whether numpy's ``cos`` and ``sin`` and ``_ProductSquare`` give, on this CPU, what ``math.cos``, ``math.sin``
    and Python's ``x**2`` (C ``pow``) give, on 1024 values of the ranges CartPole meets (and, for the square, on
    the values of 8192 nearest the rounding midpoints that it leaves to numpy's product)."""
    probe = np.random.default_rng(12345)
    angles = probe.uniform(-0.5, 0.5, 512)
    values = np.concatenate([angles, probe.normal(0.0, 3.0, 512)])
    squares = np.concatenate([values, _near_the_midpoints(probe.normal(0.0, 3.0, 8192))])

    def same(fn: Any, ref: Any, v: np.ndarray, *args: Any) -> bool:
        return np.array_equal(fn(v, *args, np.empty_like(v)), ref(v, *args, np.empty_like(v)))

    return {"cos": same(np.cos, _py_cos, angles), "sin": same(np.sin, _py_sin, angles),
            "square": same(_ProductSquare(small=0), _py_square, squares, None)}


def exact_math(path: str | None = None) -> tuple[Any, Any, Any, dict[str, str]]:
    """``cos``, ``sin`` and ``pow(x, 2)`` on float64 arrays of any shape (called ``f(x, [two,] out)``) that give
    what ``math.cos``, ``math.sin`` and Python's ``x**2`` (C ``pow``) give, so a batch follows the scalar
    CartPole (and Gymnasium) bit for bit; and which path each took.

    numpy's float64 ``cos``/``sin`` call the C library on most CPUs; where a numpy build uses its own SIMD versions
    instead (AVX-512 SVML), they can differ in the last bit and the batch calls ``math`` per element (slower, still
    exact). The square is never numpy's ``power`` (SVML's differs from C's ``pow`` in 14 % of squares on AVX-512) nor
    plain ``x * x`` (correctly rounded, unlike glibc's ``pow``, which differs in about 1 square in 1250): it is
    ``_ProductSquare``, ``x * x`` with Python's ``x**2`` for the squares next to a rounding midpoint. ``path``:
    ``"auto"`` (probe the CPU and C library, the default), ``"python"`` (always the per-element fallback) or
    ``"numpy"`` (always numpy's ``cos``/``sin`` and the product square: exact only where the probe agrees); None reads
    ``DRLA_EXACT_MATH``, so the test suite runs every path on every machine.
    """
    path = path if path is not None else (os.environ.get(EXACT_MATH_VARIABLE) or "auto")
    if path not in EXACT_MATH_PATHS:
        raise ValueError(f"{EXACT_MATH_VARIABLE}={path!r}: expected one of {', '.join(EXACT_MATH_PATHS)}")
    numpy_ok = _probe_numpy_is_exact() if path == "auto" else dict.fromkeys(("cos", "sin", "square"),
                                                                               path == "numpy")
    chosen = (np.cos if numpy_ok["cos"] else _py_cos, np.sin if numpy_ok["sin"] else _py_sin,
              _ProductSquare() if numpy_ok["square"] else _py_square)
    return (*chosen, {name: "numpy" if ok else "python" for name, ok in numpy_ok.items()})


def use_exact_math(path: str | None = None) -> dict[str, str]:
    """Switch every ``CartPoleBatch`` to ``path`` (see ``exact_math``); returns which function took which path.
    The suite calls it to force each path; the module calls it once at import (``DRLA_EXACT_MATH`` or auto)."""
    global _COS, _SIN, _SQUARE, EXACT_MATH_CHOICE
    _COS, _SIN, _SQUARE, EXACT_MATH_CHOICE = exact_math(path)
    return EXACT_MATH_CHOICE


_COS: Any
_SIN: Any
_SQUARE: Any
EXACT_MATH_CHOICE: dict[str, str]
use_exact_math()


class CartPoleBatch:
    """``n`` CartPoles with one step for all: the scalar ``CartPole``'s arithmetic, in the same order, on
    float64 arrays, so every row follows the trajectory the scalar env follows from the same seed and actions
    bit for bit (a test checks it). What ``evolution.Evaluation`` runs when its env is a CartPole.

    The rows of ``reset(seeds)`` start together and share one step count (truncation at ``max_episode_steps``);
    ``add(seeds)`` starts more rows later (up to ``capacity`` in all), each group truncated at its own
    ``max_episode_steps``; ``keep(mask)`` drops ended rows. Actions: an int array of 0 and 1. ``step`` works
    in preallocated arrays (about 20 numpy calls whatever ``n``, every operand a flat run of rows of one
    contiguous work array: no broadcasting, no 2-d operand, each of which costs numpy more than a call): the
    observations and flags it returns are overwritten by the next ``step``. Every step's reward is 1.0
    (``unit_rewards``), so a row's return is the
    number of steps it ran.
    """

    # rows of the work array: the state (x, theta, x_dot, theta_dot), so that rows 2-5 are the state's rates
    # (x_dot, theta_dot, xacc, thetaacc); row 4 holds cos(theta) until xacc overwrites it, so that one pow call
    # squares rows 3-4 (theta_dot, cos) into 6-7, next to sin (8): one multiply by the constant rows 19-21
    # makes rows 9-11 (polemass_length * theta_dot**2, masspole * cos**2, gravity * sin). Row 22: the pole length;
    # row 23: the denominator; rows 24-25: the termination limits (x, theta). Operands of several rows are flat
    # views of those rows (the block is contiguous): numpy takes a 1-d array faster than a 2-d one.
    _ROWS = 26
    unit_rewards = True

    def __init__(self, n: int, env: CartPole | None = None, capacity: int = 0) -> None:
        env = env or CartPole()
        self.n = max(int(n), int(capacity))
        self.max_episode_steps = env.max_episode_steps
        self.elapsed_steps = 0
        self._start: np.ndarray | None = None  # each row's first step, once rows were added after reset
        self._ends: set[int] = set()  # the steps at which a group of rows reaches max_episode_steps
        f64 = np.float64
        self._force = np.array([-env.force_mag, env.force_mag], dtype=f64)
        self._k = {name: np.array(v, dtype=f64) for name, v in (
            ("total_mass", env.total_mass), ("pml", env.polemass_length), ("tau", env.tau),
            ("four_thirds", 4.0 / 3.0))}
        self.capacity = self.n
        # the work array for n rows is the first 26 * n values of _flat, so that it is one contiguous block
        # whatever n (a view of some columns of a wider array costs numpy several times more per call)
        self._flat = np.zeros(self._ROWS * self.n, dtype=f64)
        self._constants = np.zeros((self._ROWS - 19, self.n), dtype=f64)  # rows 19-25
        for row, value in ((19, env.polemass_length), (20, env.masspole), (21, env.gravity), (22, env.length),
                           (24, env.x_threshold), (25, env.theta_threshold_radians)):
            self._constants[row - 19] = value
        self._two = np.full(2 * self.n, 2.0, dtype=f64)
        self._ones = np.ones(self.n, dtype=f64)  # every reward
        self._zeros = np.zeros(self.n, dtype=bool)
        self._flags = np.zeros(3 * self.n, dtype=bool)  # (x, theta) beyond their limits; then terminated
        self._obs = np.zeros((self.n, 4), dtype=np.float32)
        self._views(self.n)

    # step's operands: runs of rows [a, b) of the work block (flat, 1-d views), in the order step unpacks them
    _OPERANDS = ((1, 2), (3, 5), None, (4, 5), (8, 9), (6, 9), (19, 22), (9, 12), (9, 10), (9, 11), (10, 11),
                 (22, 23), (23, 24), (11, 12), (12, 13), (5, 6), (4, 5), (2, 6), (13, 17), (0, 4), (0, 2), (17, 19),
                 (24, 26))

    def _views(self, n: int) -> None:
        """The arrays ``step`` works in, as views of the first ``n`` columns (made once per size change)."""
        self.n = n
        f = self._flat[:self._ROWS * n]
        w = self._work = f.reshape(self._ROWS, n)
        w[19:] = self._constants[:, :n]
        self._state = w[0:4]
        obs = self._obs_n = self._obs[:n]
        # obs[:, 2 * i + j] = state[2 * j + i]: (x, x_dot, theta, theta_dot) from (x, theta, x_dot, theta_dot)
        self._obs_copy = (obs.reshape(n, 2, 2), w[0:4].reshape(2, 2, n).transpose(2, 1, 0))
        self._rewards = self._ones[:n]
        self._terminated = self._flags[2 * self.capacity:2 * self.capacity + n]
        self._none_terminated = self._zeros[:n]  # (never written)
        flags = self._flags[:2 * n]
        two = self._two[:2 * n]
        self._v = (*[two if r is None else f[r[0] * n:r[1] * n] for r in self._OPERANDS], flags, flags[:n],
                   flags[n:])
        self._squares = f[6 * n:8 * n]  # (the same view every step: the exact square keeps its own views of it)

    def reset(self, seeds: Sequence[int]) -> np.ndarray:
        """Row ``i`` starts as ``CartPole().reset(seed=seeds[i])`` does; returns the observations ``(n, 4)``."""
        if not 0 < len(seeds) <= self.capacity:
            raise ValueError(f"CartPoleBatch.reset: {len(seeds)} seeds for {self.capacity} rows")
        self._views(len(seeds))
        self._state[...] = self._starts(seeds)
        self.elapsed_steps = 0
        self._start, self._ends = None, set()
        np.copyto(*self._obs_copy, casting="same_kind")
        return self._obs_n

    _start_cache: dict[int, np.ndarray] = {}  # seed -> start state (a champion check's seeds come back)

    @classmethod
    def _starts(cls, seeds: Sequence[int]) -> np.ndarray:
        """The start states of ``CartPole().reset(seed=s)``, as columns (x, theta, x_dot, theta_dot)."""
        cache = cls._start_cache
        for s in seeds:  # every individual of a generation shares its episode seeds: one generator per seed
            if s not in cache:
                if len(cache) >= 4096:
                    cache.clear()
                cache[s] = np.random.default_rng(int(s)).uniform(-0.05, 0.05, size=(4,))
        return np.array([cache[s] for s in seeds], dtype=np.float64)[:, [0, 2, 1, 3]].T

    def add(self, seeds: Sequence[int]) -> np.ndarray:
        """Start ``len(seeds)`` more rows now (after the others), row ``j`` as ``CartPole().reset(seed=seeds[j])``;
        returns all the observations ``(n, 4)`` (the new rows last). Each row is truncated after its own
        ``max_episode_steps``."""
        n0, k = self.n, len(seeds)
        if n0 + k > self.capacity:
            raise ValueError(f"CartPoleBatch.add: {n0} + {k} rows, room for {self.capacity}")
        start = self._start if self._start is not None else np.zeros(n0, dtype=np.int64)
        self._start = np.concatenate([start, np.full(k, self.elapsed_steps, dtype=np.int64)])
        self._ends |= {self.elapsed_steps + self.max_episode_steps, self.max_episode_steps}
        old = self._state.copy()
        self._views(n0 + k)
        self._state[:, :n0] = old
        self._state[:, n0:] = self._starts(seeds)
        np.copyto(*self._obs_copy, casting="same_kind")
        return self._obs_n

    def restart(self, rows: np.ndarray, states: np.ndarray, columns: Sequence[int] | None = (0, 2, 1, 3)) -> None:
        """Put ``rows`` (indices) at ``states`` ((k, 4): x, x_dot, theta, theta_dot, as a CartPole's state) now (a
        vector env's autoreset; ``observations()`` shows them). ``columns=None``: ``states`` are in the batch's own
        order, x, theta, x_dot, theta_dot."""
        self._state[:, rows] = (states if columns is None else states[:, columns]).T

    def observations(self) -> np.ndarray:
        """The rows' observations now ``(n, 4)`` float32 (overwritten by the next ``step``)."""
        np.copyto(*self._obs_copy, casting="same_kind")
        return self._obs_n

    def steps_run(self, mask: np.ndarray) -> np.ndarray:
        """The steps each row where ``mask`` is True has run since it started."""
        if self._start is None:
            return np.full(np.count_nonzero(mask), self.elapsed_steps, dtype=np.int64)
        return self.elapsed_steps - self._start[mask]

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the rows where ``mask`` is True (the others' episodes ended)."""
        kept = self._state[:, mask]
        self._views(kept.shape[1])
        self._state[...] = kept
        if self._start is not None:
            self._start = self._start[mask]

    def step(self, actions: np.ndarray, restart: tuple[np.ndarray, np.ndarray] | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool | np.ndarray]:
        """One step of every row: ``(obs (n, 4) float32, rewards (n,), terminated (n,) bool, truncated)``;
        ``truncated`` is one bool for every row, or once rows were added, a bool array on a step that
        truncates some (False on the others). ``restart=(mask, states)``: the rows where ``mask`` is True are put
        at their row of ``states`` ((n, 4), the batch's order: x, theta, x_dot, theta_dot) instead of stepped (their
        observations and flags those of that state: a vector env's autoreset)."""
        (theta, pow_in, two, costheta, sintheta, mul_in, mul_k, mul_out, temp, temp_and_c2, c2, length,
         denominator, num, b, thetaacc, xacc, rates, scaled, state, positions, magnitudes, limits, flags, flag_x,
         flag_theta) = self._v
        k = self._k
        multiply, divide, subtract = np.multiply, np.divide, np.subtract  # (out positional: a little faster)
        force = self._force[actions]
        _COS(theta, costheta)
        _SIN(theta, sintheta)
        _SQUARE(pow_in, two, self._squares)  # theta_dot**2, costheta**2
        multiply(mul_in, mul_k, mul_out)  # polemass_length * theta_dot**2, masspole * costheta**2, gravity * sin
        multiply(temp, sintheta, temp)
        np.add(force, temp, temp)
        divide(temp_and_c2, k["total_mass"], temp_and_c2)  # temp; masspole * costheta**2 / total_mass
        subtract(k["four_thirds"], c2, c2)
        multiply(length, c2, denominator)  # length * (4/3 - masspole * costheta**2 / total_mass)
        multiply(costheta, temp, b)
        subtract(num, b, num)  # gravity * sintheta - costheta * temp
        divide(num, denominator, thetaacc)
        multiply(k["pml"], thetaacc, b)
        multiply(b, costheta, b)
        divide(b, k["total_mass"], b)
        subtract(temp, b, xacc)  # (cos(theta) is not needed any more: xacc takes its row)
        multiply(k["tau"], rates, scaled)
        np.add(state, scaled, state)  # x + tau * x_dot, theta + tau * theta_dot, x_dot + tau * xacc, ...
        if restart is not None:
            np.copyto(self._state, restart[1].T, where=restart[0])
        self.elapsed_steps += 1
        np.abs(positions, magnitudes)
        np.greater(magnitudes, limits, flags)
        terminated = self._none_terminated
        if np.count_nonzero(flags):  # (most steps end no episode: no per-row flags to combine)
            terminated = np.logical_or(flag_x, flag_theta, self._terminated)
        np.copyto(*self._obs_copy, casting="same_kind")
        if self._start is None:
            return self._obs_n, self._rewards, terminated, self.elapsed_steps >= self.max_episode_steps
        truncated: bool | np.ndarray = False
        if self.elapsed_steps in self._ends:
            truncated = self.elapsed_steps - self._start >= self.max_episode_steps
        return self._obs_n, self._rewards, terminated, truncated
