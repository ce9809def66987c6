"""The example arms: a six-DOF arm (``arm6``) and a three-DOF one (``arm3``), as the robot-arm scenes build them."""

from __future__ import annotations

import math

import numpy as np

from .chain import ArmDescription, BoneSpec


def _deg(a: float) -> float:
    return math.radians(a)


def arm6_specs() -> list[BoneSpec]:
    """A 6-joint industrial-style arm, 1.0 m from base to flange, standing on +Z.

    Base yaw, shoulder pitch, elbow pitch, wrist roll, wrist pitch, flange roll (roll = about
    the bone's own Y axis; pitch = about the bone's local X).
    """
    z = np.cumsum([0.0, 0.15, 0.40, 0.30, 0.05, 0.07, 0.03])
    dofs = [
        [("Y", _deg(-170), _deg(170))],
        [("X", _deg(-100), _deg(100))],
        [("X", _deg(-140), _deg(140))],
        [("Y", _deg(-170), _deg(170))],
        [("X", _deg(-120), _deg(120))],
        [("Y", _deg(-170), _deg(170))],
    ]
    names = ["Base", "Shoulder", "Elbow", "WristRoll", "WristPitch", "Flange"]
    return [BoneSpec(n, (0.0, 0.0, z[i]), (0.0, 0.0, z[i + 1]), 0.0, d) for i, (n, d) in enumerate(zip(names, dofs))]


def arm3_specs() -> list[BoneSpec]:
    """A simple 3-bone arm, 1.0 m long: base yaw, shoulder pitch, elbow pitch."""
    z = np.cumsum([0.0, 0.20, 0.45, 0.35])
    dofs = [
        [("Y", _deg(-170), _deg(170))],
        [("X", _deg(-110), _deg(110))],
        [("X", _deg(-150), _deg(150))],
    ]
    names = ["Base", "Upper", "Fore"]
    return [BoneSpec(n, (0.0, 0.0, z[i]), (0.0, 0.0, z[i + 1]), 0.0, d) for i, (n, d) in enumerate(zip(names, dofs))]


ARM6_BASE = np.eye(4)
ARM3_BASE = np.array(
    [
        [math.cos(_deg(30)), -math.sin(_deg(30)), 0.0, 2.0],
        [math.sin(_deg(30)), math.cos(_deg(30)), 0.0, 0.0],
        [0.0, 0.0, 1.0, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ]
)


def arm6() -> ArmDescription:
    return ArmDescription.from_bone_specs("Arm6", arm6_specs(), ARM6_BASE)


def arm3() -> ArmDescription:
    return ArmDescription.from_bone_specs("Arm3", arm3_specs(), ARM3_BASE)


