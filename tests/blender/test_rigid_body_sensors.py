"""The sensors rigid bodies need: Joint Angle (two bodies about an axis, or a hinge's), Height and Tilt,
and Contact with the ground, read from real objects moved by hand (the cart-pole test reads them under
physics)."""

import math

import numpy as np
import pytest

from test_sensors_actions import Tree, cube, empty, with_wait


def read(t):
    env = t.env()
    obs, _ = env.reset(seed=0)
    return env, obs


def test_joint_angle_of_two_bodies_about_an_axis_of_the_first(empty_scene):
    scene = empty_scene
    a, b = cube(scene, "Thigh"), cube(scene, "Shin", (0, 0, -1))
    a.rotation_euler = (0.0, 0.0, math.radians(30))  # A turned about Z: its own Y is no longer world Y
    b.rotation_euler = (0.0, 0.0, math.radians(30))
    t = with_wait(Tree(scene))
    t.sensor("DRLA_JointAngleSensorNode", object_a=a, object_b=b, axis='POS_Y')
    env, obs = read(t)
    assert obs[0] == pytest.approx(0.0, abs=1e-6)  # turned alike
    b.rotation_euler = (0.0, 0.0, 0.0)
    b.rotation_mode = 'QUATERNION'
    from mathutils import Euler, Quaternion
    qa = Euler(a.rotation_euler).to_quaternion()
    b.rotation_quaternion = qa @ Quaternion((0.0, 1.0, 0.0), math.radians(40))  # 40 degrees about A's Y
    obs, *_ = env.step(0)
    assert obs[0] == pytest.approx(math.radians(40), abs=1e-5)
    b.rotation_quaternion = qa @ Quaternion((0.0, 1.0, 0.0), math.radians(-170))
    obs, *_ = env.step(0)
    assert obs[0] == pytest.approx(math.radians(-170), abs=1e-5)
    assert tuple(env.observation_space.low) == pytest.approx((-math.pi,))


def test_joint_angle_of_a_hinge_constraint(empty_scene):
    import bpy

    scene = empty_scene
    bpy.ops.rigidbody.world_add()
    a, b = cube(scene, "Base"), cube(scene, "Arm", (0, 0, 1))
    hinge = empty(scene, "Hinge", (0, 0, 0.5))
    hinge.rotation_euler = (math.pi / 2, 0.0, 0.0)  # its local Z along world -Y
    for ob, kind in ((a, 'PASSIVE'), (b, 'ACTIVE')):
        scene.rigidbody_world.collection = scene.rigidbody_world.collection or bpy.data.collections.new("RBW")
        scene.rigidbody_world.collection.objects.link(ob)
        ob.rigid_body.type = kind
    scene.rigidbody_world.constraints = bpy.data.collections.new("RBC")
    scene.rigidbody_world.constraints.objects.link(hinge)
    hinge.rigid_body_constraint.type = 'HINGE'
    hinge.rigid_body_constraint.object1, hinge.rigid_body_constraint.object2 = a, b
    bpy.context.view_layer.update()
    t = with_wait(Tree(scene))
    node = t.sensor("DRLA_JointAngleSensorNode", source='HINGE', hinge=hinge)
    env = t.env()
    b.rotation_euler = (0.0, math.radians(25), 0.0)  # +25 degrees about world Y = -25 about the hinge's axis
    bpy.context.view_layer.update()
    out = np.zeros(1, np.float32)
    env.state.readers[0].read(out)
    assert out[0] == pytest.approx(math.radians(-25), abs=1e-5)
    node.hinge = a  # not a constraint
    from drla_ext.addon.specs import CompileError
    from drla_ext.addon.tree import compiler
    with pytest.raises(CompileError):
        compiler.compile_tree(t.b.tree, scene)
    assert node.drla_error == "'Base' holds no Hinge rigid-body constraint"


def test_height_and_tilt(empty_scene):
    scene = empty_scene
    ob = cube(scene, "Torso", (1.0, 2.0, 0.8))
    t = with_wait(Tree(scene))
    t.sensor("DRLA_HeightTiltSensorNode", object=ob)
    env, obs = read(t)
    np.testing.assert_allclose(obs, [0.8, 0.0], atol=1e-6)
    ob.rotation_euler = (math.radians(30), 0.0, math.radians(70))  # a lean of 30 degrees, whatever the heading
    ob.location.z = 0.5
    obs, *_ = env.step(0)
    np.testing.assert_allclose(obs, [0.5, math.radians(30)], atol=1e-5)
    ob.rotation_euler = (math.pi, 0.0, 0.0)
    obs, *_ = env.step(0)
    assert obs[1] == pytest.approx(math.pi, abs=1e-5)
    t2 = with_wait(Tree(scene))
    node = t2.sensor("DRLA_HeightTiltSensorNode", object=ob, use_height=False)
    env2 = t2.env()
    assert (env2.observation_space.low[0], env2.observation_space.high[0]) == pytest.approx((0.0, math.pi))
    node.use_tilt = False
    from drla_ext.addon.specs import CompileError
    from drla_ext.addon.tree import compiler
    with pytest.raises(CompileError):
        compiler.compile_tree(t2.b.tree, scene)
    assert node.drla_error == "choose Height and/or Tilt"


def test_contact_is_one_when_the_ground_is_just_below(empty_scene):
    scene = empty_scene
    ground = cube(scene, "Ground", (0.0, 0.0, -0.5))  # top face at z = 0
    foot = empty(scene, "Foot", (0.0, 0.0, 0.05))
    wall = cube(scene, "Step", (5.0, 0.0, -0.45))  # another object: not the ground
    t = with_wait(Tree(scene))
    t.sensor("DRLA_ContactSensorNode", object=foot, ground=ground, distance=0.1)
    env, obs = read(t)
    assert obs[0] == 1.0
    foot.location.z = 0.3  # lifted above the distance
    obs, *_ = env.step(0)
    assert obs[0] == 0.0
    foot.location = (5.0, 0.0, 0.12)  # over another object
    obs, *_ = env.step(0)
    assert obs[0] == 0.0 and wall.name == "Step"
    assert tuple(env.observation_space.high) == (1.0,)
