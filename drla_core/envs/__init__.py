"""Pure-numpy environments and a small registry: ``make("tank_grid", camera="top")``."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ENV_NAMES", "PARALLEL_ENV_NAMES", "make", "DeceptiveMaze", "HardMaze", "EvacuationGrid", "TankGrid",
           "IdentityEnv", "Pendulum", "XOR", "DoublePole", "DoublePoleNoVelocity", "TrapCorridor"]

#: name -> (module, class). Modules are imported on first use, so a missing one only breaks its own name.
_REGISTRY: dict[str, tuple[str, str]] = {
    "cartpole": (".cartpole", "CartPole"),
    "deceptive_maze": (".deceptive_maze", "DeceptiveMaze"),
    "hard_maze": (".hard_maze", "HardMaze"),  # Lehman & Stanley's maze: make("hard_maze", map="medium"|"hard")
    "evacuation": (".evacuation", "EvacuationGrid"),
    "tank_grid": (".tank_grid", "TankGrid"),
    "identity": (".identity", "IdentityEnv"),
    "pendulum": (".pendulum", "Pendulum"),
    "xor": (".xor", "XOR"),
    "double_pole": (".double_pole", "DoublePole"),
    "double_pole_nv": (".double_pole", "DoublePoleNoVelocity"),
    "trap_corridor": (".trap_corridor", "TrapCorridor"),
}
ENV_NAMES: tuple[str, ...] = tuple(_REGISTRY)
#: Multi-agent environments (``multi_agent.ParallelEnv``), made by the same ``make``: name -> (module, class).
_PARALLEL_REGISTRY: dict[str, tuple[str, str]] = {
    "pacman": (".pacman", "PacmanEnv"),
}
PARALLEL_ENV_NAMES: tuple[str, ...] = tuple(_PARALLEL_REGISTRY)


def env_class(name: str) -> type[Any]:
    """The class registered under ``name`` (an ``Env``, or a ``ParallelEnv`` for a name in
    ``PARALLEL_ENV_NAMES``); ``KeyError`` lists the known names."""
    if name not in _REGISTRY and name not in _PARALLEL_REGISTRY:
        raise KeyError(f"unknown environment {name!r}; known: {', '.join(ENV_NAMES + PARALLEL_ENV_NAMES)}")
    module_name, class_name = _REGISTRY.get(name) or _PARALLEL_REGISTRY[name]
    module = importlib.import_module(module_name, __name__)
    return getattr(module, class_name)


def make(name: str, **kwargs: Any) -> Any:
    """Create the environment registered under ``name``, passing ``kwargs`` to its constructor."""
    return env_class(name)(**kwargs)


def __getattr__(name: str) -> Any:
    # Lazy access to the classes (``from drla_core.envs import TankGrid``) without importing every module upfront.
    for key, (_, class_name) in {**_REGISTRY, **_PARALLEL_REGISTRY}.items():
        if class_name == name:
            return env_class(key)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
