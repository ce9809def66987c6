"""The environment contract (Gymnasium's, exactly) and a checker for it.

Every environment in DRLA, the pure reference games and the live Blender scene alike,
subclasses ``Env`` so one agent and one training loop serve them all.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .spaces import Box, Discrete, Space

__all__ = ["Env", "check_env", "EnvCheckError"]


class Env:
    """Base class with Gymnasium semantics.

    ``reset(*, seed=None, options=None) -> (obs, info)`` and
    ``step(action) -> (obs, reward, terminated, truncated, info)``.
    All randomness comes from ``self.np_random``, which ``reset(seed=...)`` re-seeds.
    ``terminated`` means the task ended (a true terminal state: no bootstrapping);
    ``truncated`` means a time limit cut the episode short (bootstrap from the next state).
    """

    observation_space: Space
    action_space: Space
    metadata: dict[str, Any] = {}
    #: Name of an ``info`` key holding a 0/1 task success signal per event (e.g. ``"hit"``), if any.
    task_metric: str | None = None
    #: The attributes holding the current episode (with ``np_random``, all of a pure env's changing state):
    #: a checkpoint saves them, so a resumed run continues the episode. None: not restorable (a Blender
    #: scene); a resumed run starts a fresh episode.
    episode_attrs: tuple[str, ...] | None = None
    _np_random: np.random.Generator | None = None

    @property
    def np_random(self) -> np.random.Generator:
        if self._np_random is None:
            self._np_random = np.random.default_rng()
        return self._np_random

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Start a new episode. Subclasses call ``super().reset(seed=seed)`` first."""
        if seed is not None:
            self._np_random = np.random.default_rng(seed)
        return None, {}  # pragma: no cover - overridden

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        raise NotImplementedError

    def close(self) -> None:
        """Release resources (and, for scene environments, restore the scene)."""


class EnvCheckError(AssertionError):
    """Raised by ``check_env`` with a message saying which rule was broken."""


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise EnvCheckError(msg)


def _obs_equal(a: Any, b: Any) -> bool:
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def check_env(env: Env, *, steps: int = 50, seed: int = 123) -> None:
    """Check ``env`` against the contract; raise ``EnvCheckError`` naming the first problem.

    Checks: declared spaces; reset returns ``(obs, dict)`` with obs inside the observation
    space; step returns a 5-tuple of the right types; reset with the same seed and the same
    actions reproduces the same observations and rewards (determinism).
    """
    _require(isinstance(env.observation_space, Space), "observation_space must be a drla_core Space")
    _require(isinstance(env.action_space, (Box, Discrete)), "action_space must be Box or Discrete")

    def rollout() -> list[tuple[Any, float, bool, bool]]:
        out = env.reset(seed=seed)
        _require(isinstance(out, tuple) and len(out) == 2, "reset() must return (obs, info)")
        obs, info = out
        _require(isinstance(info, dict), "reset() info must be a dict")
        _require(env.observation_space.contains(obs),
                 f"reset() observation not in observation_space {env.observation_space}: {obs!r}")
        action_rng = np.random.default_rng(seed)
        trace: list[tuple[Any, float, bool, bool]] = [(np.array(obs, copy=True), 0.0, False, False)]
        for _ in range(steps):
            action = env.action_space.sample(action_rng)
            result = env.step(action)
            _require(isinstance(result, tuple) and len(result) == 5,
                     "step() must return (obs, reward, terminated, truncated, info)")
            obs, reward, terminated, truncated, info = result
            _require(env.observation_space.contains(obs),
                     f"step() observation not in observation_space {env.observation_space}")
            _require(isinstance(reward, (float, int, np.floating, np.integer)) and not isinstance(reward, bool),
                     f"reward must be a number, got {type(reward).__name__}")
            _require(np.isfinite(reward), "reward must be finite")
            _require(isinstance(terminated, (bool, np.bool_)), "terminated must be a bool")
            _require(isinstance(truncated, (bool, np.bool_)), "truncated must be a bool")
            _require(isinstance(info, dict), "step() info must be a dict")
            trace.append((np.array(obs, copy=True), float(reward), bool(terminated), bool(truncated)))
            if terminated or truncated:
                obs, info = env.reset()
                _require(env.observation_space.contains(obs), "reset() after an episode end gave a bad observation")
        return trace

    first, second = rollout(), rollout()
    for i, (a, b) in enumerate(zip(first, second)):
        _require(_obs_equal(a[0], b[0]) and a[1:] == b[1:],
                 f"not deterministic: reset(seed={seed}) with the same actions differs at step {i}")
