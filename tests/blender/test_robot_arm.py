"""scenes/robot_arm/robot_arm.blend: rebuilt from its script it equals the committed file."""

import importlib.util
from pathlib import Path

import bpy
import numpy as np

from drla_core import kinematics as kin

SCENE_DIR = Path(__file__).resolve().parents[2] / "scenes" / "robot_arm"


def _build_module():
    spec = importlib.util.spec_from_file_location("build_robot_arm", SCENE_DIR / "build_robot_arm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rebuilt_scene_equals_committed(ext, tmp_path):
    build = _build_module()
    bpy.ops.wm.open_mainfile(filepath=str(SCENE_DIR / "robot_arm.blend"))
    committed = build.canonical_dump()
    out = build.main(["--out", str(tmp_path / "rebuilt.blend")])
    bpy.ops.wm.open_mainfile(filepath=str(out))
    rebuilt = build.canonical_dump()
    assert rebuilt == committed
    assert {"Arm6", "Arm3", "Arm6Target", "Arm3Target"} <= set(committed["objects"])


def test_targets_are_reachable_and_blender_ik_is_muted(ext):
    bpy.ops.wm.open_mainfile(filepath=str(SCENE_DIR / "robot_arm.blend"))
    for name, arm in (("Arm6", kin.arm6()), ("Arm3", kin.arm3())):
        ob = bpy.data.objects[name]
        ik = ob.pose.bones[arm.bones[-1]].constraints["BlenderIK"]
        assert ik.mute and ik.target.name == f"{name}Target" and ik.chain_count == arm.n_bones
        target = np.array(bpy.data.objects[f"{name}Target"].matrix_world.translation)
        local = arm.world_to_local(target)
        angles = kin.dls_solve(arm, local[None], iters=100, tol=1e-6)
        assert np.linalg.norm(kin.forward_kinematics(arm, angles)[0] - local) < 1e-4
