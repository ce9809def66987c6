"""Learned IK trees in Blender: the solver of a compiled tree, and the parts a bake or follow needs.

The armature side (reading the chain, setting bones) is ``scene.armature``; follow mode is
``runs.ik_follow``; baking the target's animation is ``runs.bake.bake_target``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import bpy
import numpy as np

from ...drla_core.rl.ik import IKSolver
from ...drla_core.io.model_io import load_model
from ..scene.armature import apply_angles, arm_description, move_target, solve_for_target, tip_world
from ..scene.snapshot import restored_scene
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


def evaluate_targets(scene, compiled, model, n: int, seed: int, frames_dir: Path | None = None) -> str:
    """Move the tree's target to ``n`` random reachable spots, solve each with ``model`` in Blender (the
    pose set on the armature, the tip read back from Blender's own evaluation), and report the tip
    errors in words. The scene is restored afterwards."""
    if frames_dir is not None:
        raise ValueError("a Learned IK tree has no episodes to render frames of")
    ob, target = compiled_armature(compiled)
    solver = solver_for(ob, model)
    iters = compiled.agent.config["refine_iters"]
    points = solver.arm.local_to_world(solver.arm.sample_targets(n, seed)[0])
    errors, net_errors = [], []
    t0 = time.perf_counter()
    with restored_scene(scene):
        view_layer = bpy.context.view_layer
        for p in points:
            move_target(target, p)
            view_layer.update()
            where = np.array(target.matrix_world.translation, dtype=np.float64)
            local = solver.arm.world_to_local(where)
            net_errors.append(float(solver.errors(local[None], solver.solve(local[None]))[0]))
            apply_angles(ob, solver.arm, solve_for_target(ob, solver, where, iters))
            view_layer.update()
            errors.append(float(np.linalg.norm(tip_world(ob, solver.arm) - where)))
    wall = time.perf_counter() - t0
    mm, net_mm = 1000.0 * np.array(errors), 1000.0 * np.array(net_errors)
    return (f"{compiled.tree}: {len(points)} random reachable targets for '{ob.name}', solved in Blender "
            f"({1000 * wall / max(len(points), 1):.1f} ms each with the scene update): tip error median "
            f"{np.median(mm):.4f} mm, p90 {np.percentile(mm, 90):.4f} mm, max {mm.max():.4f} mm, "
            f"{np.mean(mm < 1.0):.0%} under 1 mm (network alone: median {np.median(net_mm):.1f} mm)")


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
