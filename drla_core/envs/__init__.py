"""Pure-numpy environments and a small registry: ``make("tank_grid", camera="top")``."""

from __future__ import annotations

import importlib
from typing import Any

from ..env import Env

__all__ = ["ENV_NAMES", "make", "DeceptiveMaze", "EvacuationGrid", "TankGrid", "IdentityEnv"]

#: name -> (module, class). Modules are imported on first use, so a missing one only breaks its own name.
_REGISTRY: dict[str, tuple[str, str]] = {
    "cartpole": (".cartpole", "CartPole"),
    "deceptive_maze": (".deceptive_maze", "DeceptiveMaze"),
    "evacuation": (".evacuation", "EvacuationGrid"),
    "tank_grid": (".tank_grid", "TankGrid"),
    "identity": (".identity", "IdentityEnv"),
}
ENV_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def env_class(name: str) -> type[Env]:
    """The class registered under ``name``; ``KeyError`` lists the known names."""
    if name not in _REGISTRY:
        raise KeyError(f"unknown environment {name!r}; known: {', '.join(ENV_NAMES)}")
    module_name, class_name = _REGISTRY[name]
    module = importlib.import_module(module_name, __name__)
    return getattr(module, class_name)


def make(name: str, **kwargs: Any) -> Env:
    """Create the environment registered under ``name``, passing ``kwargs`` to its constructor."""
    return env_class(name)(**kwargs)


def __getattr__(name: str) -> Any:
    # Lazy access to the classes (``from drla_core.envs import TankGrid``) without importing every module upfront.
    for key, (_, class_name) in _REGISTRY.items():
        if class_name == name:
            return env_class(key)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
