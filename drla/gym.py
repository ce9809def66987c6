"""DRLA's built-in environments as native Gymnasium and PettingZoo environments (``pip install '.[gym]'``).

Outside Blender only: DRLA's own ``drla_core`` spaces and envs follow the Gymnasium API already, but with DRLA's
space classes; this module gives the ecosystem the real thing, so any trainer that takes a ``gymnasium.Env``
(Stable-Baselines3, CleanRL, RLlib, ...) or a PettingZoo ``ParallelEnv`` trains on them as they are:

    import gymnasium, drla.gym                 # importing drla.gym registers the ids
    env = gymnasium.make("drla/CartPole-v0")   # or gymnasium.make("drla.gym:drla/CartPole-v0") with no import
    env = drla.gym.parallel_env("pacman")      # a pettingzoo.ParallelEnv

Spaces become Gymnasium's (``Box``, ``Discrete``, ``MultiDiscrete``); actions come back to DRLA as the types
its envs take; seeding follows Gymnasium (``reset(seed=...)`` seeds the env and the action space's sampler).
Environments whose ``render`` draws text take ``render_mode="ansi"``. A Blender scene's tree is
``gymnasium.make("drla/Scene-v0", blend=PATH, tree=NAME)`` (and ``make_vec`` for its copies, ``parallel_env(blend=PATH,
tree=NAME)`` for a multi-agent tree): ``drla.gym_scene``, with ``bpy`` in this process.
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces as gym_spaces


from .gym_convert import DrlaParallelEnv, _pettingzoo, _render_modes, _to_drla_action, to_gym_space
from drla_core.envs import ENV_NAMES, make

__all__ = ["to_gym_space", "GymEnv", "DrlaParallelEnv", "env", "parallel_env", "ENV_IDS", "SCENE_ID", "register_envs"]


class GymEnv(gymnasium.Env):
    """A DRLA ``Env`` as a ``gymnasium.Env``: ``GymEnv("cartpole")`` or ``GymEnv(drla_env)``."""

    def __init__(self, name_or_env: str | Any = "cartpole", render_mode: str | None = None, **kwargs: Any) -> None:
        self.inner = make(name_or_env, **kwargs) if isinstance(name_or_env, str) else name_or_env
        self.metadata = {"render_modes": _render_modes(self.inner), "render_fps": 30}
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: this environment renders {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.observation_space = to_gym_space(self.inner.observation_space)
        self.action_space = to_gym_space(self.inner.action_space)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        if seed is None and self.inner._np_random is None:  # the inner env draws from Gymnasium's generator
            seed = int(self.np_random.integers(2**31 - 1))
        obs, info = self.inner.reset(seed=seed, options=options)
        return self._obs(obs), dict(info)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.inner.step(_to_drla_action(self.inner.action_space, action))
        return self._obs(obs), float(reward), bool(terminated), bool(truncated), dict(info)

    def render(self) -> Any:
        return self.inner.render() if self.render_mode is not None else None

    def close(self) -> None:
        self.inner.close()

    def _obs(self, obs: Any) -> Any:
        space = self.observation_space
        return np.asarray(obs, dtype=space.dtype) if isinstance(space, gym_spaces.Box) else obs


#: The built-in multi-agent games: name -> (module in drla_core.envs, class)
PARALLEL_GAMES = {"pacman": ("pacman", "PacmanEnv"), "chase": ("chase", "ChaseEnv"),
                  "tank_duel": ("tank_duel", "TankDuel")}


def parallel_env(name: str | None = None, render_mode: str | None = None, *, blend: Any = None,
                 tree: str | None = None, **kwargs: Any) -> DrlaParallelEnv:
    """A built-in multi-agent game as a ``pettingzoo.ParallelEnv`` (needs ``pip install pettingzoo``); ``kwargs``
    go to the game (``parallel_env("chase", target="agent")``). With ``blend=PATH`` (and ``tree=NAME``): that
    .blend's multi-agent tree instead (``drla.gym_scene.BlendParallelEnv``; ``kwargs``: ``render_size``)."""
    try:
        _pettingzoo()
    except ImportError:
        raise ImportError("drla.gym.parallel_env needs PettingZoo: pip install '.[gym]' (or pip install "
                          "pettingzoo)") from None
    if blend is not None:
        if name is not None:
            raise TypeError(f"parallel_env: give a built-in game's name ({name!r}) or blend=, not both")
        from .gym_scene import parallel_env as scene_parallel_env

        return scene_parallel_env(blend, tree, render_mode=render_mode, **kwargs)
    if tree is not None:
        raise TypeError("parallel_env: tree= names a tree of a .blend: give blend=PATH too")
    name = "pacman" if name is None else name
    if name not in PARALLEL_GAMES:
        raise KeyError(f"unknown multi-agent game {name!r}; known: {', '.join(sorted(PARALLEL_GAMES))}")
    module, cls = PARALLEL_GAMES[name]
    inner = getattr(importlib.import_module(f"drla_core.envs.{module}"), cls)(**kwargs)
    return DrlaParallelEnv(inner, render_mode=render_mode)


def env(name: str = "cartpole", render_mode: str | None = None, **kwargs: Any) -> GymEnv:
    """A built-in single-agent environment as a ``gymnasium.Env`` (the entry point of every ``drla/...`` id)."""
    return GymEnv(name, render_mode=render_mode, **kwargs)


def _gym_id(name: str) -> str:
    return "drla/" + "".join(part.capitalize() for part in name.split("_")).replace("Cartpole", "CartPole") + "-v0"


#: A .blend's tree: ``gymnasium.make(SCENE_ID, blend=PATH, tree=NAME)`` (``drla.gym_scene``)
SCENE_ID = "drla/Scene-v0"

#: ``gymnasium.make`` id -> the built-in environment's name (``drla/CartPole-v0`` -> ``cartpole``)
ENV_IDS = {_gym_id(name): name for name in ENV_NAMES}


def register_envs() -> None:
    """Register every built-in environment with Gymnasium under ``drla/<Name>-v0`` (done on import)."""
    for env_id, name in ENV_IDS.items():
        if env_id not in gymnasium.registry:
            # (each env ends its own episodes: CartPole truncates at 500 steps itself, so no TimeLimit wrapper)
            vector = "drla.gym_vector:CartPoleVectorEnv" if name == "cartpole" else None
            gymnasium.register(env_id, entry_point="drla.gym:env", kwargs={"name": name}, vector_entry_point=vector)
    if SCENE_ID not in gymnasium.registry:  # a .blend's tree (bpy is imported when one is made, not before)
        gymnasium.register(SCENE_ID, entry_point="drla.gym_scene:BlendEnv",
                           vector_entry_point="drla.gym_scene:BlendVectorEnv")


register_envs()
