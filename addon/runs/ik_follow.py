"""Learned IK follow mode: a ``depsgraph_update_post`` handler re-solves (network + DLS refinement)
whenever the target moved, and sets the bones. The pose (rotation modes and rotations of every
pose bone) is captured when follow starts and put back exactly when it stops. Opening another file
ends every follower (``runs.sessions``' load_pre handler calls ``on_file_unload``).
"""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np

from ..scene.armature import apply_angles, capture_pose, restore_pose, solve_for_target

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


def follow_now(scene) -> None:
    """Solve for every follower at once (the target may not move for a while)."""
    _on_depsgraph_update(scene)


def follow_active(ob: bpy.types.Object) -> bool:
    return ob.name in _FOLLOWERS


def on_file_unload() -> None:
    """The file is being replaced: forget every follower (its objects go away, nothing to restore)."""
    disable_follow(restore=False)
