"""The conversions every ``drla.gym`` environment shares: DRLA's spaces as Gymnasium's, actions back to the
types DRLA's envs take, and ``DrlaParallelEnv`` (a DRLA ``ParallelEnv`` as a PettingZoo one). Below both
``drla.gym`` (the built-in environments) and ``drla.gym_scene`` (a .blend's trees), which import it."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces as gym_spaces

from drla_core.base import spaces as drla_spaces

__all__ = ["to_gym_space", "DrlaParallelEnv"]


def to_gym_space(space: drla_spaces.Space) -> gym_spaces.Space:
    """The Gymnasium space equal to a DRLA space (same bounds, shape and dtype)."""
    if isinstance(space, drla_spaces.Box):
        return gym_spaces.Box(low=space.low, high=space.high, shape=space.shape, dtype=space.dtype)
    if isinstance(space, drla_spaces.Discrete):
        return gym_spaces.Discrete(int(space.n))
    if isinstance(space, drla_spaces.MultiDiscrete):
        return gym_spaces.MultiDiscrete(np.asarray(space.nvec, dtype=np.int64))
    raise TypeError(f"no Gymnasium space for {type(space).__name__}")


def _to_drla_action(space: drla_spaces.Space, action: Any) -> Any:
    if isinstance(space, drla_spaces.Discrete):
        return int(np.asarray(action).reshape(()))
    if isinstance(space, drla_spaces.MultiDiscrete):
        return np.asarray(action, dtype=np.int64)
    return np.asarray(action, dtype=space.dtype)


def _render_modes(inner: Any) -> list[str]:
    return list(getattr(inner, "metadata", {}).get("render_modes", []))


def _pettingzoo() -> Any:
    import pettingzoo

    return pettingzoo


def _parallel_base() -> type:
    try:
        return _pettingzoo().ParallelEnv
    except ImportError:  # pettingzoo is optional: parallel_env() says so when called
        return object


class DrlaParallelEnv(_parallel_base()):  # type: ignore[misc]
    """A DRLA ``ParallelEnv`` (pac-man, the chase, the tank duel) as a ``pettingzoo.ParallelEnv``."""

    def __init__(self, inner: Any, render_mode: str | None = None) -> None:
        self.inner = inner
        self.metadata = {"render_modes": _render_modes(inner), "name": type(inner).__name__.lower(),
                         "is_parallelizable": True}
        self.render_mode = render_mode
        self.possible_agents = list(inner.possible_agents)
        self.agents: list[str] = []
        self._obs_spaces = {a: to_gym_space(inner.observation_space(a)) for a in self.possible_agents}
        self._act_spaces = {a: to_gym_space(inner.action_space(a)) for a in self.possible_agents}

    def observation_space(self, agent: str) -> gym_spaces.Space:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> gym_spaces.Space:
        return self._act_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        if seed is not None:
            for i, agent in enumerate(self.possible_agents):
                self._act_spaces[agent].seed(seed + i)
        obs, infos = self.inner.reset(seed=seed, options=options)
        self.agents = list(self.inner.agents)
        return {a: self._obs(a, o) for a, o in obs.items()}, {a: dict(i) for a, i in infos.items()}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        drla_actions = {a: _to_drla_action(self.inner.action_space(a), act) for a, act in actions.items()}
        obs, rewards, terms, truncs, infos = self.inner.step(drla_actions)
        self.agents = list(self.inner.agents)
        return ({a: self._obs(a, o) for a, o in obs.items()}, {a: float(r) for a, r in rewards.items()},
                {a: bool(t) for a, t in terms.items()}, {a: bool(t) for a, t in truncs.items()},
                {a: dict(i) for a, i in infos.items()})

    def render(self) -> Any:
        return self.inner.render() if self.render_mode is not None else None

    def close(self) -> None:
        self.inner.close()

    def _obs(self, agent: str, obs: Any) -> Any:
        space = self._obs_spaces[agent]
        return np.asarray(obs, dtype=space.dtype) if isinstance(space, gym_spaces.Box) else obs
