"""scenes/robot_arm/robot_arm.blend: rebuilt from its script it equals the committed file."""

import importlib
from types import SimpleNamespace
import importlib.util
from pathlib import Path

import bpy
import numpy as np
import pytest

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


@pytest.fixture(scope="module")
def runtime_and_solver(ext):
    runtime = SimpleNamespace(**{name: importlib.import_module(f"{ext.__name__}.addon.{name.replace('_', '.', 1)}")
                                 for name in ("scene_armature", "runs_ik_follow", "runs_bake")})
    ik = importlib.import_module(f"{ext.__name__}.drla_core.rl.ik")
    bpy.ops.wm.open_mainfile(filepath=str(SCENE_DIR / "robot_arm.blend"))
    arm = runtime.scene_armature.arm_description(bpy.data.objects["Arm3"])
    solver = ik.IKSolver(arm, hidden=((64, "tanh"), (64, "tanh")), seed=0)
    solver.train_self_supervised(steps=1500, batch_size=256, eval_every=0)
    return runtime, solver


def _reachable_world_points(arm, n, seed):
    targets, _ = arm.sample_targets(n, seed)
    return arm.local_to_world(targets)


def test_learned_ik_follow_mode(runtime_and_solver):
    runtime, solver = runtime_and_solver
    bpy.ops.wm.open_mainfile(filepath=str(SCENE_DIR / "robot_arm.blend"))
    ob, target = bpy.data.objects["Arm3"], bpy.data.objects["Arm3Target"]
    view_layer = bpy.context.view_layer
    runtime.runs_ik_follow.enable_follow(ob, target, solver)
    try:
        assert runtime.runs_ik_follow.follow_active(ob)
        for p in _reachable_world_points(solver.arm, 5, 31):
            target.location = p.tolist()
            view_layer.update()  # handler: solve + set the bones
            view_layer.update()  # evaluate the new pose
            assert np.linalg.norm(runtime.scene_armature.tip_world(ob, solver.arm) - p) < 1e-3
    finally:
        runtime.runs_ik_follow.disable_follow(ob)
    assert not runtime.runs_ik_follow.follow_active(ob)
    assert runtime.runs_ik_follow._on_depsgraph_update not in bpy.app.handlers.depsgraph_update_post


def test_bake_target_animation_to_keyframes(runtime_and_solver):
    runtime, solver = runtime_and_solver
    bpy.ops.wm.open_mainfile(filepath=str(SCENE_DIR / "robot_arm.blend"))
    scene = bpy.context.scene
    ob, target = bpy.data.objects["Arm3"], bpy.data.objects["Arm3Target"]
    a, b = _reachable_world_points(solver.arm, 2, 32)
    for frame, p in ((1, a), (12, b)):
        target.location = p.tolist()
        target.keyframe_insert("location", frame=frame)
    assert runtime.runs_bake.bake_target(ob, target, solver, 1, 12) == 12
    for frame in (1, 5, 12):
        scene.frame_set(frame)
        want = np.array(target.matrix_world.translation)
        assert np.linalg.norm(runtime.scene_armature.tip_world(ob, solver.arm) - want) < 1e-3


def test_committed_ik_model_loads_for_the_scene_armature(ext):
    runtime = importlib.import_module(f"{ext.__name__}.addon.runs.ik")
    bpy.ops.wm.open_mainfile(filepath=str(SCENE_DIR / "robot_arm.blend"))
    for name in ("Arm6", "Arm3"):
        ob = bpy.data.objects[name]
        solver = runtime.train_for_armature(ob, seconds=0, model_path=str(SCENE_DIR / f"{name.lower()}_ik.json"))
        targets, _ = solver.arm.sample_targets(200, 5)
        err = solver.errors(targets, solver.solve_refined(targets))
        assert np.mean(err < 1e-3) >= 0.99
