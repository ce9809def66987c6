"""Armature kinematics in numpy: arm description, batched FK, Jacobian, DLS and FABRIK.

The forward kinematics reproduces Blender's pose evaluation for a chain of bones whose
poses are rotations only (``rotation_quaternion``; the default inherit-rotation, no scale)::

    pose_0 = rest_local_0 @ R_0
    pose_i = pose_{i-1} @ rest_local_i @ R_i          rest_local_i = parent.matrix_local^-1 @ bone.matrix_local
    tip    = pose_last @ (0, length_last, 0, 1)       (armature space; world = base @ armature)

(see blender-notes §6; ``tests/blender/test_fk_blender.py`` checks it to 1e-5 against bpy).
Each bone carries zero or more rotational degrees of freedom ("DOFs"): a rotation about one
of its local axes X, Y or Z within ``[lower, upper]``; a bone's DOFs compose in X, Y, Z
order, ``R_i = R_x(a) @ R_y(b) @ R_z(c)``. In Blender this is what the IK settings of a pose
bone say (``lock_ik_*`` for the axes without a DOF, ``use_ik_limit_*``/``ik_min_*``/
``ik_max_*`` for the limits), so one armature is the single source of truth for both.

Everything is batched: ``angles`` is ``(N, D)`` (D = number of DOFs) and every function
returns arrays with a leading ``N``. Computations run in float64 (sub-millimetre IK needs it).
"""

from .chain import (
    _ROW5,
    AXES,
    ArmDescription,
    BoneSpec,
    _as_batch,
    _chain,
    _fk_t,
    _tip_error,
    angles_to_quaternions,
    bone_matrix,
    fk_jacobian,
    forward_kinematics,
    joint_positions,
)
from .examples import ARM3_BASE, ARM6_BASE, arm3, arm3_specs, arm6, arm6_specs
from .solvers import _dls_delta5, _dls_update, _limits, dls_solve, dls_step, fabrik_solve

__all__ = [
    "_ROW5", "_as_batch", "_chain", "_fk_t", "_tip_error", "_dls_delta5", "_dls_update", "_limits", "dls_step",
    "arm3_specs", "arm6_specs", "ARM3_BASE", "ARM6_BASE",
    "AXES",
    "ArmDescription",
    "BoneSpec",
    "angles_to_quaternions",
    "arm3",
    "arm6",
    "bone_matrix",
    "dls_solve",
    "fabrik_solve",
    "fk_jacobian",
    "forward_kinematics",
    "joint_positions",
]
