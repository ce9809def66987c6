"""N copies of one environment stepped together: Gymnasium 1.x ``VectorEnv`` semantics, autoreset in SAME_STEP mode.

Game-engine RL gets its speed from many copies stepped at once with one network call for all of
them. A ``VectorEnv`` takes one action per copy and returns batched arrays; a copy whose episode
ended is reset inside the same ``step`` call, so the returned observation is already its next
episode's first one, and the last observation of the ended episode (needed to bootstrap the TD
target of a truncated episode) travels in ``infos["final_obs"]``.

Batched layout (N = ``num_envs``):

* ``observation_space``: ``Box`` of shape ``(N, *single shape)``, the single bounds repeated.
* ``action_space``: ``MultiDiscrete([n] * N)`` for a ``Discrete(n)`` copy (Gymnasium's rule), a
  ``Box`` of shape ``(N, *single shape)`` for a ``Box`` copy. ``step`` takes an ``(N,)`` int array
  (or ``(N, ...)`` floats).
* ``step`` returns ``obs (N, ...)`` in the single space's dtype (float32), ``rewards (N,)`` float64,
  ``terminated`` and ``truncated (N,)`` bool, and ``infos``: Gymnasium's dict of arrays, each key
  ``k`` a length-N array with a bool mask ``infos["_k"]`` saying which copies reported it.
* For a copy ``i`` that ended in this call: ``infos["_final_obs"][i]`` is True and
  ``infos["final_obs"][i]`` its last observation; ``infos["final_obs"]`` is an ``(N, ...)`` array
  (zeros where no episode ended; Gymnasium's ``_add_info`` builds the same for array observations),
  so it drops into a replay buffer. Both are absent when no copy ended. ``infos["final_info"]`` is
  the ended step's info as a dict of arrays (with its own ``_k`` masks) and ``infos["_final_info"]``
  the mask. The top-level keys of an ended copy hold
  its *reset* info. ``vector_info_values`` reads a key per copy from the right place.

``reset`` and ``step`` return arrays the caller owns (Gymnasium's ``copy=True``): a training loop keeps
the observations of one step while it takes the next, so an env must not write into arrays it
returned before (``check_vector_env`` checks it).

Seeding follows Gymnasium: ``reset(seed=s)`` seeds copy ``i`` with ``s + i``; a list gives each
copy its own seed; ``None`` leaves every copy's generator running.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .env import Env, EnvCheckError
from .spaces import Box, Discrete, MultiDiscrete, Space

__all__ = ["VectorEnv", "SyncVectorEnv", "batch_space", "check_vector_env", "copy_seeds", "add_info",
           "autoreset_step", "vector_info_values", "real_next_obs"]


def batch_space(space: Space, n: int) -> Space:
    """The space of ``n`` stacked values of ``space`` (Gymnasium's ``batch_space`` for Box and Discrete)."""
    if isinstance(space, Discrete):
        return MultiDiscrete([space.n] * n)
    if isinstance(space, Box):
        return Box(np.stack([space.low] * n), np.stack([space.high] * n), (n, *space.shape), space.dtype)
    raise TypeError(f"cannot batch {space!r}: only Box and Discrete copies are supported")


def copy_seeds(seed: int | Sequence[int | None] | None, n: int) -> list[int | None]:
    """Each copy's reset seed: ``seed + i`` for an int, the list itself (length ``n``), or all None."""
    if seed is None:
        return [None] * n
    if isinstance(seed, (int, np.integer)):
        return [int(seed) + i for i in range(n)]
    seeds = list(seed)
    if len(seeds) != n:
        raise ValueError(f"reset: {len(seeds)} seeds for {n} copies (give one per copy, or one int)")
    return [None if s is None else int(s) for s in seeds]


def add_info(infos: dict[str, Any], info: dict[str, Any], i: int, n: int) -> dict[str, Any]:
    """Put copy ``i``'s ``info`` into the batched ``infos`` (Gymnasium's ``_add_info``): ``infos[k][i] = v``
    and ``infos["_k"][i] = True``; nested dicts recurse. Numbers get a typed array, anything else an object array.
    """
    for key, value in info.items():
        if isinstance(value, dict):
            array: Any = add_info(infos.get(key, {}), value, i, n)
        else:
            array = infos.get(key)
            if array is None:
                if isinstance(value, (bool, int, float, np.number)):
                    array = np.zeros(n, dtype=np.asarray(value).dtype)
                elif isinstance(value, np.ndarray):
                    array = np.zeros((n, *value.shape), dtype=value.dtype)
                else:
                    array = np.full(n, None, dtype=object)
            array[i] = value
        mask = infos.get(f"_{key}")
        if mask is None:
            mask = np.zeros(n, dtype=bool)
        mask[i] = True
        infos[key], infos[f"_{key}"] = array, mask
    return infos


def vector_info_values(infos: dict[str, Any], key: str, ended: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per copy, the value of ``key`` its *stepped* info reported, and a mask of the copies that reported it.

    For a copy that ended (``ended[i]``) that is ``infos["final_info"]``, not the top level (which holds
    its reset info). The task metric (a tank's ``hit``) is read this way.
    """
    n = len(ended)
    values = np.zeros(n, dtype=np.float64)
    present = np.zeros(n, dtype=bool)
    top, top_mask = infos.get(key), infos.get(f"_{key}")
    if top is not None and top_mask is not None:
        use = top_mask & ~ended
        values[use] = np.asarray(top, dtype=np.float64)[use]
        present |= use
    final = infos.get("final_info")
    if final is not None and final.get(key) is not None:
        use = final[f"_{key}"] & ended & infos.get("_final_info", ended)
        values[use] = np.asarray(final[key], dtype=np.float64)[use]
        present |= use
    return values, present


def real_next_obs(next_obs: np.ndarray, infos: dict[str, Any]) -> np.ndarray:
    """The observations each copy's action led to: ``next_obs`` with ``final_obs`` where a copy ended.

    What a replay buffer must store: after an autoreset ``next_obs[i]`` is the next episode's start.
    """
    ended = infos.get("_final_obs")
    if ended is None or not ended.any():
        return next_obs
    out = next_obs.copy()
    out[ended] = infos["final_obs"][ended]
    return out


def autoreset_step(obs: np.ndarray, rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray,
                   step_infos: Sequence[dict[str, Any]], reset_copy: Callable[[int], tuple[Any, dict[str, Any]]],
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Turn the results of N copies stepped together into a SAME_STEP vector step (modifies ``obs`` in place).

    For every copy that ended: its observation moves to ``infos["final_obs"]`` and its info to
    ``infos["final_info"]`` (with the masks), ``reset_copy(i) -> (obs, info)`` starts its next
    episode, and that first observation and reset info take its place. For an environment that steps
    all its copies at once (scene copies advanced by one frame) and resets them one by one.
    """
    n = len(rewards)
    ended = np.asarray(terminated, dtype=bool) | np.asarray(truncated, dtype=bool)
    infos: dict[str, Any] = {}
    if ended.any():
        infos["final_obs"] = np.zeros_like(obs)
        infos["_final_obs"] = ended.copy()
    for i in range(n):
        info = step_infos[i]
        if ended[i]:
            infos["final_obs"][i] = obs[i]
            add_info(infos, {"final_info": info}, i, n)
            obs[i], info = reset_copy(i)
        add_info(infos, info, i, n)
    return obs, rewards, terminated, truncated, infos


class VectorEnv:
    """Base class of N environment copies stepped together; see the module docstring for the layout.

    Subclasses set ``num_envs``, ``single_observation_space``, ``single_action_space`` and call
    ``_set_spaces()``; they implement ``reset`` and ``step`` with autoreset in the same step.
    """

    num_envs: int
    single_observation_space: Space
    single_action_space: Space
    observation_space: Space
    action_space: Space
    #: Same meaning as ``Env.task_metric``: an info key with a 0/1 success per event.
    task_metric: str | None = None
    metadata: dict[str, Any] = {"autoreset_mode": "same_step"}

    def _set_spaces(self) -> None:
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        raise NotImplementedError

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        raise NotImplementedError

    def close(self) -> None:
        """Release every copy (scene copies delete what they created)."""

    def __len__(self) -> int:
        return self.num_envs


class SyncVectorEnv(VectorEnv):
    """N pure ``Env`` copies stepped one after the other in this process (Gymnasium's ``SyncVectorEnv``).

    Args:
        env_fns: one callable per copy, each making a fresh ``Env``; all copies must declare equal spaces.
    """

    def __init__(self, env_fns: Sequence[Callable[[], Env]]) -> None:
        if len(env_fns) == 0:
            raise ValueError("SyncVectorEnv needs at least one environment function")
        self.envs: list[Env] = [fn() for fn in env_fns]
        first = self.envs[0]
        for i, env in enumerate(self.envs[1:], start=1):
            if env.observation_space != first.observation_space or env.action_space != first.action_space:
                raise ValueError(f"SyncVectorEnv: copy {i} has other spaces than copy 0 "
                                 f"({env.observation_space}, {env.action_space} against "
                                 f"{first.observation_space}, {first.action_space})")
        self.num_envs = len(self.envs)
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.task_metric = first.task_metric
        self.metadata = {**first.metadata, "autoreset_mode": "same_step"}
        self._set_spaces()
        self._obs_dtype = self.single_observation_space.dtype
        self._started = False

    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        seeds = copy_seeds(seed, self.num_envs)
        obs = np.empty(self.observation_space.shape, dtype=self._obs_dtype)
        infos: dict[str, Any] = {}
        for i, (env, s) in enumerate(zip(self.envs, seeds)):
            obs[i], info = env.reset(seed=s, options=options)
            add_info(infos, info, i, self.num_envs)
        self._started = True
        return obs, infos

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._started:
            raise RuntimeError("SyncVectorEnv: call reset() before step()")
        actions = np.asarray(actions)
        if actions.shape != self.action_space.shape:
            raise ValueError(f"SyncVectorEnv: actions of shape {actions.shape}, expected {self.action_space.shape} "
                             f"(one per copy)")
        n = self.num_envs
        obs = np.empty(self.observation_space.shape, dtype=self._obs_dtype)
        rewards = np.zeros(n, dtype=np.float64)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        step_infos = []
        for i, env in enumerate(self.envs):
            obs[i], rewards[i], terminated[i], truncated[i], info = env.step(actions[i])
            step_infos.append(info)
        return autoreset_step(obs, rewards, terminated, truncated, step_infos, lambda i: self.envs[i].reset())

    def close(self) -> None:
        for env in self.envs:
            env.close()


# ---- the checker -----------------------------------------------------------------------------------


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise EnvCheckError(msg)


def _check_step(venv: VectorEnv, result: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
    n = venv.num_envs
    _require(isinstance(result, tuple) and len(result) == 5,
             "step() must return (obs, rewards, terminated, truncated, infos)")
    obs, rewards, terminated, truncated, infos = result
    _require(isinstance(obs, np.ndarray) and obs.shape == venv.observation_space.shape,
             f"step() observations must be an array of shape {venv.observation_space.shape}, "
             f"got {getattr(obs, 'shape', type(obs).__name__)}")
    _require(obs.dtype == venv.single_observation_space.dtype,
             f"step() observations must be {venv.single_observation_space.dtype}, got {obs.dtype}")
    for i in range(n):
        _require(venv.single_observation_space.contains(obs[i]),
                 f"step() observation of copy {i} not in single_observation_space {venv.single_observation_space}")
    for name, arr, dtype in (("rewards", rewards, np.float64), ("terminated", terminated, np.bool_),
                             ("truncated", truncated, np.bool_)):
        _require(isinstance(arr, np.ndarray) and arr.shape == (n,) and arr.dtype == dtype,
                 f"step() {name} must be a ({n},) {np.dtype(dtype).name} array, got "
                 f"{getattr(arr, 'shape', type(arr).__name__)} {getattr(arr, 'dtype', '')}")
    _require(bool(np.all(np.isfinite(rewards))), "rewards must be finite")
    _require(isinstance(infos, dict), "step() infos must be a dict")
    ended = terminated | truncated
    if ended.any():
        _require("final_obs" in infos and "_final_obs" in infos,
                 "a copy ended but infos has no final_obs/_final_obs: autoreset must keep the last observation")
        _require(np.array_equal(infos["_final_obs"], ended),
                 "infos['_final_obs'] must be True exactly for the copies that ended in this step")
        final = infos["final_obs"]
        _require(isinstance(final, np.ndarray) and final.shape == obs.shape,
                 f"infos['final_obs'] must be an array of shape {obs.shape}")
        for i in np.flatnonzero(ended):
            _require(venv.single_observation_space.contains(final[i]),
                     f"final observation of copy {i} not in single_observation_space")
        _require("_final_info" in infos and np.array_equal(infos["_final_info"], ended),
                 "infos['_final_info'] must be True exactly for the copies that ended in this step")
    else:
        _require(not np.any(infos.get("_final_obs", False)), "infos['_final_obs'] set but no copy ended")
    return obs, rewards, terminated, truncated, infos


def _rollout(venv: VectorEnv, seeds: list[int], steps: int, action_seeds: list[int]) -> list[list[Any]]:
    """Per copy, the trace of (obs, reward, terminated, truncated, final_obs) of a seeded random rollout."""
    n = venv.num_envs
    out = venv.reset(seed=seeds)
    _require(isinstance(out, tuple) and len(out) == 2, "reset() must return (obs, infos)")
    obs, infos = out
    _require(isinstance(infos, dict), "reset() infos must be a dict")
    _require(isinstance(obs, np.ndarray) and obs.shape == venv.observation_space.shape,
             f"reset() observations must be an array of shape {venv.observation_space.shape}")
    rngs = [np.random.default_rng(s) for s in action_seeds]
    traces: list[list[Any]] = [[obs[i].copy()] for i in range(n)]
    for _ in range(steps):
        actions = np.stack([np.asarray(venv.single_action_space.sample(rng)) for rng in rngs])
        _require(venv.action_space.contains(actions), f"sampled actions not in action_space {venv.action_space}")
        previous, previous_copy = obs, obs.copy()
        obs, rewards, terminated, truncated, infos = _check_step(venv, venv.step(actions))
        _require(np.array_equal(previous, previous_copy),
                 "step() wrote into the observation array it returned before: return a new array each time")
        for i in range(n):
            final = infos["final_obs"][i].copy() if terminated[i] or truncated[i] else None
            traces[i].append((obs[i].copy(), float(rewards[i]), bool(terminated[i]), bool(truncated[i]), final))
    return traces


def _same(a: list[Any], b: list[Any], atol: float = 0.0) -> bool:
    def eq(u: Any, v: Any) -> bool:
        return bool(np.array_equal(u, v) if atol == 0 else np.allclose(u, v, rtol=0.0, atol=atol))

    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, tuple):
            if not (eq(x[0], y[0]) and eq(x[1], y[1]) and x[2:4] == y[2:4] and
                    (x[4] is None) == (y[4] is None) and (x[4] is None or eq(x[4], y[4]))):
                return False
        elif not eq(x, y):
            return False
    return True


def _single_trace(env: Env, seed: int, steps: int, action_seed: int) -> list[Any]:
    """What copy ``i`` must produce: a single env with the same seed and actions, reset by hand at each end."""
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(action_seed)
    trace: list[Any] = [np.asarray(obs).copy()]
    for _ in range(steps):
        o, r, term, trunc, _info = env.step(env.action_space.sample(rng))
        final = None
        if term or trunc:
            final = np.asarray(o).copy()
            o, _ = env.reset()
        trace.append((np.asarray(o).copy(), float(r), bool(term), bool(trunc), final))
    return trace


def check_vector_env(venv: VectorEnv, steps: int = 50, seed: int = 123,
                     make_env: Callable[[], Env] | None = None, atol: float = 0.0) -> None:
    """Check ``venv`` against the contract; raise ``EnvCheckError`` naming the first problem.

    Checks: batched spaces; shapes and dtypes of reset and step; autoreset in the same step
    (``final_obs``/``final_info`` and their masks exactly for the copies that ended); per-copy
    seeding reproducible (the same seeds and actions give the same traces twice); ``reset(seed=s)``
    equals ``reset(seed=[s, s+1, ...])``; copies independent: giving the copies their seeds and
    action streams in reverse order reverses the traces (no copy reads another's state or random
    stream). With ``make_env`` (a factory of single copies), copy ``i`` must also equal a single env
    seeded ``seed + i`` driven by the same actions, reset by hand where it ended. ``atol``: how far apart
    observations and rewards of different copies may be (0: bit-exact, as pure copies are; scene copies
    stand at different places in float32 world space, about 1e-5 apart at 100 m).
    """
    n = venv.num_envs
    _require(isinstance(n, int) and n >= 1, "num_envs must be a positive int")
    _require(isinstance(venv.single_observation_space, Space), "single_observation_space must be a drla_core Space")
    _require(isinstance(venv.single_action_space, (Box, Discrete)), "single_action_space must be Box or Discrete")
    _require(venv.observation_space == batch_space(venv.single_observation_space, n),
             f"observation_space must be the single space batched {n} times")
    _require(venv.action_space == batch_space(venv.single_action_space, n),
             f"action_space must be the single action space batched {n} times")
    seeds = [seed + i for i in range(n)]
    action_seeds = [seed + 1000 + i for i in range(n)]
    first = _rollout(venv, seeds, steps, action_seeds)
    second = _rollout(venv, seeds, steps, action_seeds)
    for i in range(n):
        _require(_same(first[i], second[i]),
                 f"not reproducible: copy {i} differs between two rollouts with the same seeds and actions")
    obs_int, _ = venv.reset(seed=seed)
    _require(np.array_equal(obs_int, np.stack([t[0] for t in first])),
             f"reset(seed={seed}) must seed copy i with {seed} + i (as reset(seed=[{seed}, {seed + 1}, ...]))")
    if n > 1:
        backwards = _rollout(venv, seeds[::-1], steps, action_seeds[::-1])
        for i in range(n):
            _require(_same(first[i], backwards[n - 1 - i], atol),
                     f"copies not independent: copy {i}'s seed and actions given to copy {n - 1 - i} "
                     f"gave another trace")
    if make_env is not None:
        for i in range(n):
            single = _single_trace(make_env(), seeds[i], steps, action_seeds[i])
            _require(_same(first[i], single, atol),
                     f"copy {i} differs from a single environment seeded {seeds[i]} with the same actions")
