"""PettingZoo's parallel API as a base class (``ParallelEnv``: every live agent acts each step, results in dicts keyed
by agent name) and its checker (``check_parallel_env``), for the multi-agent games and the scene's teams."""

from __future__ import annotations

from typing import Any

import numpy as np

from .env import EnvCheckError
from .spaces import Box, Discrete, Space

__all__ = ["ParallelEnv", "check_parallel_env"]


class ParallelEnv:
    """Base class with PettingZoo's parallel API.

    ``reset(seed=None, options=None) -> (observations, infos)`` and
    ``step(actions) -> (observations, rewards, terminations, truncations, infos)``, each a dict keyed by
    the names in ``agents`` (the live agents; ``possible_agents`` lists every name the env can have).
    Spaces are per agent: ``observation_space(name)``, ``action_space(name)``. Randomness comes from
    ``self.np_random``, re-seeded by ``reset(seed=...)``.
    """

    possible_agents: list[str]
    agents: list[str]
    metadata: dict[str, Any] = {}
    #: An info key with a 0/1 task success per event, read per agent (as ``Env.task_metric``).
    task_metric: str | None = None
    _np_random: np.random.Generator | None = None

    @property
    def np_random(self) -> np.random.Generator:
        if self._np_random is None:
            self._np_random = np.random.default_rng()
        return self._np_random

    @property
    def num_agents(self) -> int:
        return len(self.agents)

    @property
    def max_num_agents(self) -> int:
        return len(self.possible_agents)

    def observation_space(self, agent: str) -> Space:
        raise NotImplementedError

    def action_space(self, agent: str) -> Space:
        raise NotImplementedError

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Start an episode; subclasses call ``super().reset(seed=seed)`` first."""
        if seed is not None:
            self._np_random = np.random.default_rng(seed)
        return {}, {}  # pragma: no cover - overridden

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        raise NotImplementedError

    def close(self) -> None:
        """Release resources (scene environments restore the scene)."""


# ---- the checker ------------------------------------------------------------------------------------


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise EnvCheckError(msg)


def _check_keys(name: str, d: Any, agents: list[str]) -> None:
    _require(isinstance(d, dict), f"{name} must be a dict keyed by agent name")
    _require(sorted(d) == sorted(agents), f"{name} must have one entry per live agent {sorted(agents)}, "
                                          f"got {sorted(d)}")


def _check_spaces(env: ParallelEnv) -> None:
    names = env.possible_agents
    _require(isinstance(names, list) and len(names) > 0 and all(isinstance(a, str) for a in names),
             "possible_agents must be a non-empty list of names")
    _require(len(set(names)) == len(names), "possible_agents must not repeat a name")
    for a in names:
        _require(isinstance(env.observation_space(a), Space), f"observation_space({a!r}) must be a drla_core Space")
        _require(isinstance(env.action_space(a), (Box, Discrete)), f"action_space({a!r}) must be Box or Discrete")


def _check_step(env: ParallelEnv, live: list[str], result: Any) -> tuple[dict, dict, dict, dict, dict]:
    _require(isinstance(result, tuple) and len(result) == 5,
             "step() must return (observations, rewards, terminations, truncations, infos)")
    obs, rewards, terms, truncs, infos = result
    for name, d in (("observations", obs), ("rewards", rewards), ("terminations", terms), ("truncations", truncs),
                    ("infos", infos)):
        _check_keys(f"step() {name}", d, live)
    for a in live:
        _require(env.observation_space(a).contains(obs[a]), f"step() observation of {a!r} not in its space")
        r = rewards[a]
        _require(isinstance(r, (float, int, np.floating, np.integer)) and not isinstance(r, bool) and np.isfinite(r),
                 f"reward of {a!r} must be a finite number, got {r!r}")
        _require(isinstance(terms[a], (bool, np.bool_)) and isinstance(truncs[a], (bool, np.bool_)),
                 f"terminations and truncations of {a!r} must be bools")
        _require(isinstance(infos[a], dict), f"info of {a!r} must be a dict")
    ended = {a for a in live if terms[a] or truncs[a]}
    _require(sorted(env.agents) == sorted(a for a in live if a not in ended),
             f"after a step, agents must be the live agents that did not end: {sorted(env.agents)}")
    return obs, rewards, terms, truncs, infos


def check_parallel_env(env: ParallelEnv, steps: int = 50, seed: int = 123) -> None:
    """Check ``env`` against the parallel contract; raise ``EnvCheckError`` naming the first problem.

    Checks: names and per-agent spaces; reset returns ``(observations, infos)`` keyed by ``agents``,
    a subset of ``possible_agents``; every step's five dicts are keyed by the agents that acted,
    observations lie in their spaces, rewards are finite numbers; agents that ended leave ``agents``;
    the same seed and actions reproduce the same observations and rewards (determinism).
    """
    _check_spaces(env)

    def rollout() -> list[Any]:
        out = env.reset(seed=seed)
        _require(isinstance(out, tuple) and len(out) == 2, "reset() must return (observations, infos)")
        obs, infos = out
        _require(len(env.agents) > 0 and set(env.agents) <= set(env.possible_agents),
                 "after reset, agents must be a non-empty subset of possible_agents")
        _check_keys("reset() observations", obs, env.agents)
        _check_keys("reset() infos", infos, env.agents)
        for a in env.agents:
            _require(env.observation_space(a).contains(obs[a]), f"reset() observation of {a!r} not in its space")
        rng = np.random.default_rng(seed)
        trace: list[Any] = [{a: np.array(o, copy=True) for a, o in obs.items()}]
        for _ in range(steps):
            live = list(env.agents)
            actions = {a: env.action_space(a).sample(rng) for a in live}
            obs, rewards, terms, truncs, _ = _check_step(env, live, env.step(actions))
            trace.append(({a: np.array(o, copy=True) for a, o in obs.items()}, dict(rewards), dict(terms),
                          dict(truncs)))
            if not env.agents:
                obs, _ = env.reset()
                trace.append({a: np.array(o, copy=True) for a, o in obs.items()})
        return trace

    def same(x: Any, y: Any) -> bool:
        if isinstance(x, tuple):
            return all(same(a, b) for a, b in zip(x, y))
        return x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)

    first, second = rollout(), rollout()
    for i, (a, b) in enumerate(zip(first, second)):
        _require(same(a, b), f"not deterministic: reset(seed={seed}) with the same actions differs at entry {i}")
