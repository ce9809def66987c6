"""The numpy forward kinematics equals Blender's pose evaluation (random poses, 1e-5)."""

import importlib
import importlib.util
from pathlib import Path

import bpy
import numpy as np
import pytest

from drla_core import kinematics as kin

BUILD = Path(__file__).resolve().parents[2] / "scenes" / "robot_arm" / "build_robot_arm.py"


def _build_module():
    spec = importlib.util.spec_from_file_location("build_robot_arm", BUILD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def arm_scene(ext):
    _build_module().build_scene()
    return importlib.import_module(f"{ext.__name__}.addon.scene.armature")


@pytest.mark.parametrize("name, factory", [("Arm6", kin.arm6), ("Arm3", kin.arm3)])
def test_description_read_from_blender_matches_specs(arm_scene, name, factory):
    read = arm_scene.arm_description(bpy.data.objects[name])
    want = factory()
    assert read.bones == want.bones
    np.testing.assert_allclose(read.rest_local, want.rest_local, atol=1e-6)
    np.testing.assert_allclose(read.lengths, want.lengths, atol=1e-6)
    np.testing.assert_array_equal(read.dof_bone, want.dof_bone)
    np.testing.assert_array_equal(read.dof_axis, want.dof_axis)
    np.testing.assert_allclose(read.lower, want.lower, atol=1e-6)
    np.testing.assert_allclose(read.upper, want.upper, atol=1e-6)
    np.testing.assert_allclose(read.base, want.base, atol=1e-6)


def test_bone_matrix_matches_blender_for_odd_bones(empty_scene):
    """Blender's head/tail/roll -> matrix_local, ported to numpy, for bones pointing anywhere."""
    rng = np.random.default_rng(3)
    data = bpy.data.armatures.new("Odd")
    ob = bpy.data.objects.new("Odd", data)
    empty_scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode='EDIT')
    specs = []
    for i in range(12):
        head = rng.normal(size=3)
        tail = head + rng.normal(size=3) * 0.7
        if i == 10:
            tail = head + np.array([0.0, -0.5, 0.0])  # the -Y special case
        roll = float(rng.uniform(-3, 3))
        eb = data.edit_bones.new(f"B{i}")
        eb.head, eb.tail, eb.roll = head.tolist(), tail.tolist(), roll
        specs.append((f"B{i}", head, tail, roll))
    bpy.ops.object.mode_set(mode='OBJECT')
    for name, head, tail, roll in specs:
        want = np.array(data.bones[name].matrix_local)
        np.testing.assert_allclose(kin.bone_matrix(head, tail, roll), want, atol=1e-5)  # Blender stores float32


@pytest.mark.parametrize("name", ["Arm6", "Arm3"])
def test_fk_equals_blender_on_random_poses(arm_scene, name):
    ob = bpy.data.objects[name]
    arm = arm_scene.arm_description(ob)
    angles = arm.sample_angles(40, 11)
    points, rots = kin.joint_positions(arm, angles)
    for k in range(len(angles)):
        arm_scene.apply_angles(ob, arm, angles[k])
        bpy.context.view_layer.update()
        heads = np.array([ob.pose.bones[b].head for b in arm.bones])
        tail = np.array(ob.pose.bones[arm.bones[-1]].tail)
        np.testing.assert_allclose(points[k, :-1], heads, atol=1e-5)
        np.testing.assert_allclose(points[k, -1], tail, atol=1e-5)
        np.testing.assert_allclose(kin.forward_kinematics(arm, angles[k]), tail, atol=1e-5)
        for i, b in enumerate(arm.bones):
            np.testing.assert_allclose(rots[k, i], np.array(ob.pose.bones[b].matrix)[:3, :3], atol=1e-5)
        world = arm.local_to_world(points[k, -1])
        np.testing.assert_allclose(world, arm_scene.tip_world(ob, arm), atol=1e-5)
