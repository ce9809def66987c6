"""Any registered Gymnasium environment as a DRLA ``Env`` (``drla train --gym-id ID``); needs ``gymnasium``.

The other direction from ``drla.gym`` (which makes DRLA's environments Gymnasium ones): DRLA's agents train on
``gymnasium.make(ID)``. ``drla_core`` never imports gymnasium; this adapter lives outside it and gives DRLA's
trainers DRLA spaces:

* observations: a Gymnasium ``Box`` (any shape, read as float32; flattened by the network);
* actions: a ``Discrete`` (``start`` other than 0 is shifted: DRLA's action ``i`` is Gymnasium's ``start + i``).

Other spaces (continuous ``Box`` actions, ``Dict`` / ``Discrete`` observations, ...) are refused with the reason.
The env's random generator is Gymnasium's own (``env.unwrapped.np_random``): a DQN checkpoint saves it and a
resumed run gets it back, then starts a fresh episode (a Gymnasium env cannot be restored mid-episode).

Targets: the CLI's built-in environments keep their names; a Gymnasium id is the target ``gym:ID``
(``make_target("gym:CartPole-v1")``), what ``--gym-id ID`` gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from drla_core.base.env import Env
from drla_core.base.spaces import Box, Discrete

__all__ = ["GymnasiumEnv", "GymIdError", "make_gym_env", "make_target", "GYM_PREFIX"]

GYM_PREFIX = "gym:"


class GymIdError(ValueError):
    """A Gymnasium id that cannot be trained here, with the reason in one line."""


def _gymnasium() -> Any:
    try:
        import gymnasium
    except ImportError:
        raise GymIdError("--gym-id needs gymnasium: pip install '.[gym]' (or pip install gymnasium)") from None
    try:
        from . import gym as _registers_drla_ids  # noqa: F401 - drla/CartPole-v0 and friends
    except ImportError:
        pass
    return gymnasium


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class GymnasiumEnv(Env):
    """A ``gymnasium.Env`` (Box observations, Discrete actions) as a DRLA ``Env``."""

    episode_attrs = None  # not restorable mid-episode: a resumed run starts a fresh one

    def __init__(self, inner: Any, env_id: str = "") -> None:
        from gymnasium import spaces as gym_spaces

        self.inner, self.env_id = inner, env_id or str(getattr(inner.spec, "id", "") or type(inner).__name__)
        obs, act = inner.observation_space, inner.action_space
        if not isinstance(obs, gym_spaces.Box):
            inner.close()
            raise GymIdError(f"{self.env_id}: observations {obs} are not a Box; DRLA's agents read a Box of numbers")
        if isinstance(act, gym_spaces.Box):
            inner.close()
            raise GymIdError(f"{self.env_id} has continuous actions ({act}): --gym-id trains environments with "
                             f"discrete actions (a Discrete action space) for now")
        if not isinstance(act, gym_spaces.Discrete):
            inner.close()
            raise GymIdError(f"{self.env_id}: actions {act} are not Discrete; --gym-id trains discrete actions only")
        low = np.asarray(obs.low, np.float64)
        high = np.asarray(obs.high, np.float64)
        big = np.finfo(np.float32).max  # Gymnasium's "unbounded" is float32's largest value: infinite here
        self.observation_space = Box(np.where(low <= -big, -np.inf, low), np.where(high >= big, np.inf, high),
                                     obs.shape)
        self.action_space = Discrete(int(act.n))
        self._start = int(act.start)
        self.metadata = dict(getattr(inner, "metadata", {}) or {})

    # Gymnasium's generator is the env's: the training loop and checkpoints read and set it as DRLA's.
    @property  # type: ignore[override]
    def _np_random(self) -> np.random.Generator | None:
        return getattr(self.inner.unwrapped, "_np_random", None)

    @_np_random.setter
    def _np_random(self, value: np.random.Generator | None) -> None:
        self.inner.unwrapped._np_random = value

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        obs, info = self.inner.reset(seed=seed, options=options)
        return np.asarray(obs, np.float32), dict(info)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.inner.step(self._start + int(np.asarray(action).reshape(())))
        return np.asarray(obs, np.float32), float(reward), bool(terminated), bool(truncated), dict(info)

    def close(self) -> None:
        self.inner.close()


def make_gym_env(env_id: str, **kwargs: Any) -> GymnasiumEnv:
    """``gymnasium.make(env_id, **kwargs)`` as a DRLA ``Env``; ``GymIdError`` with one line otherwise."""
    gymnasium = _gymnasium()
    try:
        inner = gymnasium.make(env_id, **kwargs)
    except gymnasium.error.DependencyNotInstalled as exc:
        raise GymIdError(f"{env_id} needs a package that is not installed: {_first_line(exc)}") from None
    except ImportError as exc:
        raise GymIdError(f"{env_id} needs a package that is not installed ({_first_line(exc)})") from None
    except gymnasium.error.Error as exc:  # NameNotFound, NamespaceNotFound, VersionNotFound, ...
        raise GymIdError(f"unknown Gymnasium id {env_id!r}: {_first_line(exc)}") from None
    return GymnasiumEnv(inner, env_id)


def make_target(target: str) -> Env:
    """A training target's environment: ``gym:ID`` through Gymnasium, else a built-in by name."""
    if target.startswith(GYM_PREFIX):
        return make_gym_env(target[len(GYM_PREFIX):])
    from drla_core.envs import make

    return make(target)
