"""drla_core: the pure-numpy learning library behind DRLA (never imports bpy).

Its floors, bottom up (a module imports only from its own floor or the ones below; ``tests/test_layers.py``):

* ``base``: spaces, the ``Env``, vector and parallel (multi-agent) contracts and their checkers, atomic
  files, schedules, metric words, lineage;
* ``nn`` (networks: MLP, graph networks, optimisers, losses) and ``kinematics`` (arms, batched FK, IK solvers);
* ``io``: the model file format (JSON, the team file), PNG, drawing, charts and training reports;
* ``envs``: the built-in environments;
* ``rl`` (the ``Agent``/``TrainingJob`` protocols, the training loop, replay, checkpoints of a run, one
  module per algorithm: ``dqn``, ``ik``, multi-agent runs) and ``evolve`` (population, GA, novelty, NEAT,
  evaluation, the evolution job, co-evolution);
* ``nets``: tools on trained networks: growth, merge, experts and their library, network views.

The flat module names of 0.1 (``drla_core.evolution``, ``drla_core.model_io``, ``drla_core.train``, ...) keep
working for one release: importing one gives the module at its new place, with a ``DeprecationWarning``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from typing import Any

__version__ = "0.1.0"

#: The 0.1 module names and where each lives now (removed in 0.3).
MOVED = {
    "spaces": "base.spaces", "env": "base.env", "vector_env": "base.vector_env", "files": "base.files",
    "schedules": "base.schedules", "metrics": "base.metrics", "lineage": "base.lineage",
    "mlp": "nn.mlp", "graph_net": "nn.graph_net", "optim": "nn.optim", "losses": "nn.losses",
    "model_io": "io.model_io", "png": "io.png", "plot": "io.plot",
    "train": "rl.train", "replay_buffer": "rl.replay_buffer", "checkpoint": "rl.checkpoint",
    "multi_agent": "rl.multi_agent", "agents": "rl", "agents.base": "rl.base", "agents.dqn": "rl.dqn",
    "agents.ik": "rl.ik",
    "evolution": "evolve.evolution", "neat": "evolve.neat", "coevolution": "evolve.coevolution",
    "growth": "nets.growth", "merge": "nets.merge", "experts": "nets.experts",
    "expert_library": "nets.expert_library", "netview": "nets.netview",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``drla_core.<old name>`` and gives the module at its new place (the same module object)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        prefix = __name__ + "."
        if not fullname.startswith(prefix) or fullname[len(prefix):] not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: Any) -> Any:
        new = __name__ + "." + MOVED[spec.name[len(__name__) + 1:]]
        warnings.warn(f"{spec.name} moved to {new}; the old name goes in DRLA 0.3", DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module: Any) -> None:
        pass


if not any(isinstance(f, _MovedModules) and getattr(f, "package", None) == __name__ for f in sys.meta_path):
    _finder = _MovedModules()
    _finder.package = __name__  # type: ignore[attr-defined]
    sys.meta_path.insert(0, _finder)  # before an editable install's finder, which may know the old files
