"""Armatures as numpy: the bone chain a Learned IK agent moves, poses read and put back exactly.

* ``arm_description(ob)`` reads an armature object into a ``drla_core.kinematics.ArmDescription``
  (rest matrices, lengths, DOFs and limits from the pose bones' IK settings, ``matrix_world``).
* ``apply_angles(ob, arm, angles)`` writes joint angles to the pose bones' ``rotation_quaternion``.
* ``tip_world(ob, arm)`` reads the end effector (last bone's tail) in world space after an update.
* ``capture_pose`` / ``restore_pose``: every bone's rotation mode and values, put back bit-exact.
"""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np

from ...drla_core import kinematics as kin


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


def move_target(target: bpy.types.Object, world: np.ndarray) -> None:
    """Put ``target``'s origin at a world-space point (whatever its parent)."""
    m = target.matrix_world.copy()
    m.translation = [float(v) for v in world]
    target.matrix_world = m
