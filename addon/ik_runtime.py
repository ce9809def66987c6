"""Learned IK in a live Blender scene: the only bpy <-> numpy code for arms.

* ``arm_description(ob)`` reads an armature object into a ``drla_core.kinematics.ArmDescription``
  (rest matrices, lengths, DOFs and limits from the pose bones' IK settings, ``matrix_world``).
* ``apply_angles(ob, arm, angles)`` writes joint angles to the pose bones' ``rotation_quaternion``.
* ``tip_world(ob, arm)`` reads the end effector (last bone's tail) in world space after an update.
* ``enable_follow(ob, target, solver)`` / ``disable_follow(ob)``: "Learned IK" follow mode, a
  ``depsgraph_update_post`` handler that re-solves (network + DLS refinement) whenever the
  target empty moved, and sets the bones. The pose (rotation modes and rotations of every pose
  bone) is captured when follow starts and put back exactly when it stops. Opening another file
  ends every follower (``session``'s load_pre handler calls ``disable_follow(restore=False)``).
* ``bake_target(ob, target, solver, frame_start, frame_end, scene=...)``: keyframes the solved
  joint rotations for every frame of the target's animation into a NEW action
  ("DRLA Bake: <tree>: <armature>"); the previous action is kept (fake user), the bones keep
  their rotation modes, and the frame is restored even when the bake fails.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import bpy
import numpy as np

from ..drla_core import kinematics as kin

__all__ = ["accuracy", "apply_angles", "arm_description", "bake_target", "compiled_armature", "disable_follow",
           "enable_follow", "follow_active", "new_solver", "solve_for_target", "solver_for", "tip_world",
           "training_iter"]


def _chain_bones(data: bpy.types.Armature) -> list[bpy.types.Bone]:
    roots = [b for b in data.bones if b.parent is None]
    if len(roots) != 1:
        raise ValueError(f"armature {data.name!r}: learned IK needs exactly one root bone, found {len(roots)}")
    chain = [roots[0]]
    while chain[-1].children:
        if len(chain[-1].children) != 1:
            raise ValueError(f"armature {data.name!r}: bone {chain[-1].name!r} branches; learned IK needs a chain")
        chain.append(chain[-1].children[0])
    return chain


def arm_description(ob: bpy.types.Object) -> kin.ArmDescription:
    """Read an armature object's single bone chain into an ``ArmDescription``."""
    if ob is None or ob.type != 'ARMATURE':
        raise ValueError("arm_description: an armature object is needed")
    chain = _chain_bones(ob.data)
    local = [np.array(b.matrix_local, dtype=np.float64) for b in chain]
    rest = [local[0]] + [np.linalg.inv(local[i - 1]) @ local[i] for i in range(1, len(local))]
    dof_bone, dof_axis, lower, upper = [], [], [], []
    for i, b in enumerate(chain):
        pb = ob.pose.bones[b.name]
        for k, a in enumerate("xyz"):
            if getattr(pb, f"lock_ik_{a}"):
                continue
            if getattr(pb, f"use_ik_limit_{a}"):
                lo, hi = getattr(pb, f"ik_min_{a}"), getattr(pb, f"ik_max_{a}")
            else:
                lo, hi = -math.pi, math.pi
            dof_bone.append(i)
            dof_axis.append(k)
            lower.append(lo)
            upper.append(hi)
    if not dof_bone:
        raise ValueError(f"armature {ob.name!r}: every joint axis is locked (Bone > Inverse Kinematics > Lock), "
                         "nothing to solve")
    return kin.ArmDescription(ob.name, [b.name for b in chain], np.array(rest), np.array([b.length for b in chain]),
                              np.array(dof_bone), np.array(dof_axis), np.array(lower), np.array(upper),
                              np.array(ob.matrix_world, dtype=np.float64))


def apply_angles(ob: bpy.types.Object, arm: kin.ArmDescription, angles: np.ndarray) -> None:
    """Set the chain's ``rotation_quaternion`` from one joint-angle vector ``(D,)`` (needs an update to show)."""
    quats = kin.angles_to_quaternions(arm, np.asarray(angles, dtype=np.float64).reshape(arm.n_dofs))
    for name, q in zip(arm.bones, quats):
        pb = ob.pose.bones[name]
        pb.rotation_mode = 'QUATERNION'
        pb.rotation_quaternion = q.tolist()


def tip_world(ob: bpy.types.Object, arm: kin.ArmDescription) -> np.ndarray:
    """End effector (last bone's tail) in world space, as Blender evaluated it."""
    return np.array(ob.matrix_world @ ob.pose.bones[arm.bones[-1]].tail, dtype=np.float64)


def solve_for_target(ob: bpy.types.Object, solver: Any, target_world: np.ndarray, iters: int = 3) -> np.ndarray:
    """Joint angles reaching a world-space point (network + refinement), in the arm's current placement."""
    local = np.linalg.inv(np.array(ob.matrix_world, dtype=np.float64)) @ np.append(target_world, 1.0)
    return solver.solve_refined(local[None, :3], iters=iters)[0]


# ---- follow mode ------------------------------------------------------------------------------
_FOLLOWERS: dict[str, dict[str, Any]] = {}


def _on_depsgraph_update(scene: bpy.types.Scene, depsgraph: Any = None) -> None:
    for name, st in list(_FOLLOWERS.items()):
        ob, target = bpy.data.objects.get(name), bpy.data.objects.get(st["target"])
        if ob is None or target is None:
            _FOLLOWERS.pop(name, None)
            continue
        where = np.array(target.matrix_world.translation, dtype=np.float64)
        base = np.array(ob.matrix_world, dtype=np.float64)
        if st["last"] is not None and np.allclose(where, st["last"][0], atol=1e-7) and \
                np.allclose(base, st["last"][1], atol=1e-7):
            continue  # nothing moved (also stops the update our own pose change triggers)
        st["last"] = (where, base)
        try:
            apply_angles(ob, st["solver"].arm, solve_for_target(ob, st["solver"], where, st["iters"]))
        except Exception as exc:  # never raise into Blender's update loop
            st["error"] = str(exc)


_ROTATION_PROPS = ("rotation_quaternion", "rotation_euler", "rotation_axis_angle")


def capture_pose(ob: bpy.types.Object) -> dict[str, tuple[str, tuple[tuple[float, ...], ...]]]:
    """Every pose bone's rotation mode and rotations (all modes): what ``restore_pose`` puts back."""
    return {pb.name: (pb.rotation_mode, tuple(tuple(getattr(pb, p)) for p in _ROTATION_PROPS))
            for pb in ob.pose.bones}


def restore_pose(ob: bpy.types.Object, pose: dict[str, tuple[str, tuple[tuple[float, ...], ...]]]) -> None:
    """Put back what ``capture_pose`` read: the mode first (setting it converts), then the exact values."""
    for name, (mode, values) in pose.items():
        pb = ob.pose.bones.get(name)
        if pb is None:
            continue
        pb.rotation_mode = mode
        for prop, value in zip(_ROTATION_PROPS, values):
            setattr(pb, prop, value)


def enable_follow(ob: bpy.types.Object, target: bpy.types.Object, solver: Any, iters: int = 3) -> None:
    """Make ``ob`` follow ``target`` with learned IK (solved on every depsgraph update that moved it).

    The pose as it is now is kept and put back by ``disable_follow``."""
    old = _FOLLOWERS.get(ob.name)
    pose = old["pose"] if old is not None else capture_pose(ob)  # re-enabling keeps the first pose
    _FOLLOWERS[ob.name] = {"target": target.name, "solver": solver, "iters": iters, "last": None, "error": None,
                           "pose": pose}
    if _on_depsgraph_update not in bpy.app.handlers.depsgraph_update_post:
        bpy.app.handlers.depsgraph_update_post.append(_on_depsgraph_update)


def disable_follow(ob: bpy.types.Object | None = None, restore: bool = True) -> None:
    """Stop following (one arm, or all when ``ob`` is None); removes the handler when none is left.

    With ``restore`` the armatures get back the pose they had when follow started (rotation modes
    and values, exactly); ``restore=False`` is for a file being unloaded (nothing to put back)."""
    names = list(_FOLLOWERS) if ob is None else [ob.name]
    try:
        for name in names:
            st = _FOLLOWERS.pop(name, None)
            if st is None or not restore:
                continue
            arm_ob = ob if ob is not None else bpy.data.objects.get(name)
            if arm_ob is not None and arm_ob.pose is not None:
                restore_pose(arm_ob, st["pose"])
    finally:
        if not _FOLLOWERS and _on_depsgraph_update in bpy.app.handlers.depsgraph_update_post:
            bpy.app.handlers.depsgraph_update_post.remove(_on_depsgraph_update)


def follow_active(ob: bpy.types.Object) -> bool:
    return ob.name in _FOLLOWERS


def unregister() -> None:
    disable_follow()


def on_file_unload() -> None:
    """The file is being replaced: forget every follower (its objects go away, nothing to restore)."""
    disable_follow(restore=False)


# ---- baking -----------------------------------------------------------------------------------
def _rotation_path(mode: str) -> str:
    return {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(mode, "rotation_euler")


def _rotation_values(quats: np.ndarray, mode: str, start: Any) -> list[tuple[float, ...]]:
    """Per-frame quaternions ``(F, 4)`` as values of a bone's rotation mode, continuous from frame to frame."""
    from mathutils import Euler, Quaternion

    out: list[tuple[float, ...]] = []
    prev_q = np.asarray(start[0], dtype=np.float64)
    prev_e = Euler(start[1], mode if mode not in ("QUATERNION", "AXIS_ANGLE") else "XYZ")
    for q in quats:
        q = np.asarray(q, dtype=np.float64)
        if float(np.dot(q, prev_q)) < 0.0:
            q = -q  # the same rotation, without a flip between keys
        prev_q = q
        if mode == "QUATERNION":
            out.append(tuple(float(v) for v in q))
        elif mode == "AXIS_ANGLE":
            axis, angle = Quaternion(q.tolist()).to_axis_angle()
            out.append((float(angle), float(axis[0]), float(axis[1]), float(axis[2])))
        else:
            prev_e = Quaternion(q.tolist()).to_euler(mode, prev_e)
            out.append(tuple(float(v) for v in prev_e))
    return out


def _write_bone_curves(fcurves: Any, bone: str, prop: str, frames: list[int],
                       values: list[tuple[float, ...]]) -> None:
    """LINEAR keys of one bone's rotation channel at ``frames``."""
    from .bake import data_path, new_fcurve

    for index in range(len(values[0])):
        fc = new_fcurve(fcurves, data_path(bone, prop), index, bone)
        fc.keyframe_points.add(len(frames))
        fc.keyframe_points.foreach_set("co", [c for f, v in zip(frames, values) for c in (float(f), v[index])])
        for kp in fc.keyframe_points:
            kp.interpolation = 'LINEAR'
        fc.update()


def bake_target(ob: bpy.types.Object, target: bpy.types.Object, solver: Any, frame_start: int, frame_end: int,
                iters: int = 3, scene: bpy.types.Scene | None = None, tree_name: str = "") -> int:
    """Key the chain's rotations so the tip follows ``target`` over the frame range, in a NEW action.

    The target's (and armature's) world placement is read frame by frame, then all frames are
    solved in one batch and written as F-curves of a new action "DRLA Bake: <tree>: <armature>"
    assigned to ``ob``, each bone keyed in its own rotation mode (modes are left as they are). The
    previous action stays (fake user) so the user can switch back. The scene's frame and the pose
    are restored whatever happens; on an error the new action is removed and the old one reassigned.
    Returns the number of frames keyed.
    """
    from .bake import _fcurves

    scene = scene if scene is not None else bpy.context.scene
    was_frame, was_sub = scene.frame_current, scene.frame_subframe
    pose = capture_pose(ob)
    ad_existed = ob.animation_data is not None
    old_action = ob.animation_data.action if ad_existed else None
    old_slot = getattr(ob.animation_data, "action_slot", None) if ad_existed else None
    old_fake = old_action.use_fake_user if old_action is not None else False
    new_action = None
    ok = False
    try:
        frames = list(range(int(frame_start), int(frame_end) + 1))
        if not frames:
            raise ValueError(f"bake: empty frame range {frame_start}-{frame_end}")
        local = []
        for f in frames:
            scene.frame_set(f)
            where = np.append(np.array(target.matrix_world.translation, dtype=np.float64), 1.0)
            local.append((np.linalg.inv(np.array(ob.matrix_world, dtype=np.float64)) @ where)[:3])
        arm = solver.arm
        angles = solver.solve_refined(np.asarray(local), iters=iters)
        quats = kin.angles_to_quaternions(arm, angles)  # (F, bones, 4)
        name = f"DRLA Bake: {tree_name}: {ob.name}" if tree_name else f"DRLA Bake: {ob.name}"
        new_action = bpy.data.actions.new(name)
        ad = ob.animation_data or ob.animation_data_create()
        if old_action is not None:
            old_action.use_fake_user = True  # kept for the user to switch back to
        ad.action = new_action
        fcurves = _fcurves(ob, new_action)
        for b, bone in enumerate(arm.bones):
            pb = ob.pose.bones[bone]
            mode = pb.rotation_mode
            start = (tuple(pb.rotation_quaternion), tuple(pb.rotation_euler))
            _write_bone_curves(fcurves, bone, _rotation_path(mode), frames,
                               _rotation_values(quats[:, b], mode, start))
        ok = True
    finally:
        if not ok:
            if new_action is not None:
                if ob.animation_data is not None:
                    ob.animation_data.action = old_action
                    if old_action is not None and old_slot is not None and hasattr(ob.animation_data, "action_slot"):
                        with contextlib.suppress(Exception):
                            ob.animation_data.action_slot = old_slot
                bpy.data.actions.remove(new_action)
            if old_action is not None:
                old_action.use_fake_user = old_fake
            if not ad_existed and ob.animation_data is not None:
                ob.animation_data_clear()
            scene.frame_set(was_frame, subframe=was_sub)
            restore_pose(ob, pose)  # exactly the pose it had, unkeyed tweaks included
        else:
            restore_pose(ob, pose)
            scene.frame_set(was_frame, subframe=was_sub)  # the new action now drives the bones
    return len(frames)


# ---- compiled IK trees (CLI, panel) -------------------------------------------------------------
def compiled_armature(compiled: Any) -> tuple[bpy.types.Object, bpy.types.Object]:
    """The armature and target objects of a compiled Learned IK tree."""
    cfg = compiled.agent.config
    ob, target = bpy.data.objects.get(cfg["armature"]), bpy.data.objects.get(cfg["target"])
    if ob is None or target is None:
        raise ValueError(f"tree '{compiled.tree}': armature '{cfg['armature']}' or target '{cfg['target']}' is gone")
    return ob, target


def solver_for(ob: bpy.types.Object, model: Any) -> Any:
    """An ``IKSolver`` from a stored/loaded IK ``model``, placed on ``ob`` (its bones must match)."""
    from ..drla_core.ik import IKSolver

    solver = IKSolver.from_model(model)
    arm = arm_description(ob)
    if solver.arm.bones != arm.bones or solver.arm.n_dofs != arm.n_dofs:
        raise ValueError(f"the IK model was trained for bones {solver.arm.bones}, not {ob.name}'s {arm.bones}")
    solver.arm = arm  # this armature's placement and limits
    return solver


def new_solver(compiled: Any, seed: int = 0) -> Any:
    """The untrained (or, with the node's Model file, pre-trained) ``IKSolver`` of a compiled IK tree."""
    from ..drla_core.ik import IKSolver
    from ..drla_core.model_io import load_model

    ob, _ = compiled_armature(compiled)
    path = compiled.agent.config.get("model_path") or ""
    if path:
        return solver_for(ob, load_model(path))
    return IKSolver(arm_description(ob), hidden=tuple(tuple(h) for h in compiled.agent.hidden), seed=seed)


def train_steps_of(compiled: Any, steps: int = 0) -> int:
    return int(steps or compiled.agent.config.get("train_steps") or 16000)


def training_iter(solver: Any, compiled: Any, steps: int = 0, max_seconds: float | None = None) -> Any:
    """The node's training (self-supervised or reward) as a step generator (``IKSolver.iter_*``).

    ``max_seconds`` defaults to the node's Train Seconds; validation every ~2 % of the steps."""
    cfg = compiled.agent.config
    steps = train_steps_of(compiled, steps)
    seconds = cfg.get("train_seconds") if max_seconds is None else max_seconds
    every = max(50, steps // 50)
    if cfg.get("method") == 'REWARD':
        return solver.iter_reward(steps=steps, max_seconds=seconds or None, eval_every=every)
    return solver.iter_self_supervised(steps=steps, max_seconds=seconds or None, eval_every=every)


def accuracy(solver: Any, n: int = 1000, seed: int = 0, iters: int = 3) -> dict[str, float]:
    """Tip errors (mm) on ``n`` random reachable targets: network alone and network + refinement."""
    targets, _ = solver.arm.sample_targets(n, seed)
    out: dict[str, float] = {}
    for key, angles in (("net", solver.solve(targets)), ("refined", solver.solve_refined(targets, iters=iters))):
        err = solver.errors(targets, angles) * 1000.0
        out[f"{key}_median_mm"] = float(np.median(err))
        out[f"{key}_p90_mm"] = float(np.percentile(err, 90))
        out[f"{key}_under_1mm"] = float(np.mean(err < 1.0))
    return out


def accuracy_text(acc: dict[str, float]) -> str:
    return (f"network alone: median {acc['net_median_mm']:.1f} mm, p90 {acc['net_p90_mm']:.1f} mm, "
            f"{acc['net_under_1mm']:.1%} under 1 mm; network + refinement: median {acc['refined_median_mm']:.4f} mm, "
            f"p90 {acc['refined_p90_mm']:.4f} mm, {acc['refined_under_1mm']:.1%} under 1 mm")


def save_ik_report(path: Any, solver: Any, acc: dict[str, float], title: str, seconds: float = 0.0) -> Any:
    """The training report PNG: validation error curve plus the accuracy summary."""
    from ..drla_core.ik import save_report

    lines = [f"{solver.arm.name}: {solver.arm.n_dofs} joints, reach {solver.arm.reach:.3f} m",
             f"trained {solver.train_steps} steps" + (f" in {seconds:.1f} s" if seconds else ""),
             "1000 random reachable targets:",
             f"network alone: median {acc['net_median_mm']:.1f} mm",
             f"  p90 {acc['net_p90_mm']:.1f} mm, {acc['net_under_1mm']:.1%} < 1 mm",
             f"+ refinement: median {acc['refined_median_mm']:.4f} mm",
             f"  p90 {acc['refined_p90_mm']:.4f} mm, {acc['refined_under_1mm']:.1%} < 1 mm"]
    return save_report(path, list(getattr(solver, "curve", []) or []), lines, title)


def move_target(target: bpy.types.Object, world: np.ndarray) -> None:
    """Put ``target``'s origin at a world-space point (whatever its parent)."""
    m = target.matrix_world.copy()
    m.translation = [float(v) for v in world]
    target.matrix_world = m


# ---- training helper (for operators and nodes) ---------------------------------------------
def train_for_armature(ob: bpy.types.Object, seconds: float = 60.0, method: str = 'SELF_SUPERVISED',
                       model_path: str = "", seed: int = 0) -> Any:
    """An ``IKSolver`` for the armature: loaded from ``model_path`` when given (its arm must match
    the armature's bones), then trained for ``seconds`` (0 = no training)."""
    from ..drla_core.ik import IKSolver

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
