"""Learned IK trees in Blender: the solver of a compiled tree, and the parts a bake or follow needs.

The armature side (reading the chain, setting bones) is ``scene.armature``; follow mode is
``runs.ik_follow``; baking the target's animation is ``runs.bake.bake_target``.
"""

from __future__ import annotations

from typing import Any

import bpy

from ...drla_core.agents.ik import IKSolver
from ...drla_core.model_io import load_model
from ..scene.armature import arm_description
from ..tree.compiler import compile_tree
from . import model_store


def compiled_armature(compiled: Any) -> tuple[bpy.types.Object, bpy.types.Object]:
    """The armature and target objects of a compiled Learned IK tree."""
    cfg = compiled.agent.config
    ob, target = bpy.data.objects.get(cfg["armature"]), bpy.data.objects.get(cfg["target"])
    if ob is None or target is None:
        raise ValueError(f"tree '{compiled.tree}': armature '{cfg['armature']}' or target '{cfg['target']}' is gone")
    return ob, target


def solver_for(ob: bpy.types.Object, model: Any) -> Any:
    """An ``IKSolver`` from a stored/loaded IK ``model``, placed on ``ob`` (its bones must match)."""
    solver = IKSolver.from_model(model)
    arm = arm_description(ob)
    if solver.arm.bones != arm.bones or solver.arm.n_dofs != arm.n_dofs:
        raise ValueError(f"the IK model was trained for bones {solver.arm.bones}, not {ob.name}'s {arm.bones}")
    solver.arm = arm  # this armature's placement and limits
    return solver


def new_solver(compiled: Any, seed: int = 0) -> Any:
    """The untrained (or, with the node's Model file, pre-trained) ``IKSolver`` of a compiled IK tree."""
    ob, _ = compiled_armature(compiled)
    path = compiled.agent.config.get("model_path") or ""
    if path:
        return solver_for(ob, load_model(path))
    return IKSolver(arm_description(ob), hidden=tuple(tuple(h) for h in compiled.agent.hidden), seed=seed)


def parts(scene, tree) -> tuple[Any, bpy.types.Object, bpy.types.Object, Any]:
    """``(compiled, armature, target, solver)`` of a Learned IK tree with a stored model."""
    compiled = compile_tree(tree, scene)
    ob, target = compiled_armature(compiled)
    return compiled, ob, target, solver_for(ob, model_store.load_stored_model(tree))


# ---- training helper (for operators and nodes) ---------------------------------------------
def train_for_armature(ob: bpy.types.Object, seconds: float = 60.0, method: str = 'SELF_SUPERVISED',
                       model_path: str = "", seed: int = 0) -> Any:
    """An ``IKSolver`` for the armature: loaded from ``model_path`` when given (its arm must match
    the armature's bones), then trained for ``seconds`` (0 = no training)."""
    arm = arm_description(ob)
    if model_path:
        solver = IKSolver.load(bpy.path.abspath(model_path))
        if solver.arm.bones != arm.bones or solver.arm.n_dofs != arm.n_dofs:
            raise ValueError(f"model {model_path!r} was trained for bones {solver.arm.bones}, not {arm.bones}")
        solver.arm = arm  # this armature's placement and limits
    else:
        solver = IKSolver(arm, seed=seed)
    if seconds > 0:
        if method == 'REWARD':
            solver.train_reward(steps=10**7, max_seconds=seconds, eval_every=0)
        else:
            solver.train_self_supervised(steps=10**7, max_seconds=seconds, eval_every=0)
    return solver
