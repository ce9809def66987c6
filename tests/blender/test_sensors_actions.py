"""Behaviour of the Ray and Bone Rotations sensors, the discrete and continuous actions and the
done conditions over a real (headless) scene: each test builds a tiny tree, compiles it and
steps the ``SceneEnv``, checking the numbers against the scene."""

import math

import bpy
import numpy as np
import pytest
from mathutils import Euler, Quaternion


# --------------------------------------------------------------------------- helpers


def cube(scene, name: str, location=(0.0, 0.0, 0.0), size: float = 1.0):
    """A mesh cube of edge ``size`` centred on its origin."""
    h = size / 2
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([(x, y, z) for z in (-h, h) for y in (-h, h) for x in (-h, h)], [],
                     [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)])
    ob = bpy.data.objects.new(name, mesh)
    scene.collection.objects.link(ob)
    ob.location = location
    return ob


def empty(scene, name: str, location=(0.0, 0.0, 0.0)):
    ob = bpy.data.objects.new(name, None)
    scene.collection.objects.link(ob)
    ob.location = location
    return ob


def armature(scene, name: str = "Rig"):
    """Two connected bones along +Z (``Lower`` 0..1, ``Upper`` 1..2), quaternion rotation."""
    ob = bpy.data.objects.new(name, bpy.data.armatures.new(name))
    scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode='EDIT')
    lower = ob.data.edit_bones.new("Lower")
    lower.head, lower.tail = (0, 0, 0), (0, 0, 1)
    upper = ob.data.edit_bones.new("Upper")
    upper.head, upper.tail = (0, 0, 1), (0, 0, 2)
    upper.parent, upper.use_connect = lower, True
    bpy.ops.object.mode_set(mode='OBJECT')
    for pb in ob.pose.bones:
        pb.rotation_mode = 'QUATERNION'
    return ob


class Tree:
    """Sensors -> State -> Environment <- Action Set (or Bone Rotation Actions), plus Done nodes."""

    def __init__(self, scene, max_steps: int = 100):
        from drla_ext.addon.ui.examples import _Builder

        self.scene = scene
        self.b = _Builder("T")
        self.state = self.b.node("DRLA_StateNode")
        self.env_node = self.b.node("DRLA_EnvironmentNode", max_steps=max_steps, random_object_1=None,
                                    random_object_2=None, random_object_3=None)
        self.b.link(self.state, self.env_node, "State")
        self.action_set = None

    def sensor(self, idname: str, **props):
        node = self.b.node(idname, **props)
        self.b.link(node, self.state, "Sensors")
        return node

    def action(self, name: str, kind: str, **props):
        if self.action_set is None:
            self.action_set = self.b.node("DRLA_ActionSetNode")
            self.b.link(self.action_set, self.env_node, "Actions")
        node = self.b.node("DRLA_ActionNode", action_name=name, kind=kind, **props)
        self.b.link(node, self.action_set, "Actions")
        return node

    def bone_actions(self, **props):
        node = self.b.node("DRLA_BoneActionsNode", **props)
        self.b.link(node, self.env_node, "Actions")
        return node

    def done(self, idname: str, **props):
        node = self.b.node(idname, **props)
        self.b.link(node, self.env_node, "Done")
        return node

    def env(self):
        from drla_ext.addon.runs import build
        from drla_ext.addon.tree import compiler

        compiled = compiler.compile_tree(self.b.tree, self.scene)
        return build.build_env(compiled, self.scene)


def with_wait(t: Tree) -> Tree:
    t.action("wait", 'WAIT')
    return t


# --------------------------------------------------------------------------- Ray sensor


def ray_env(scene, emitter, rays=5, spread=math.pi / 2, max_distance=10.0, scale=1.0, axis='POS_Y'):
    t = with_wait(Tree(scene))
    t.sensor("DRLA_RaySensorNode", object=emitter, axis=axis, rays=rays, spread=spread,
             max_distance=max_distance, scale=scale)
    return t.env()


def test_ray_middle_ray_reads_hit_distance_over_max(empty_scene):
    scene = empty_scene
    emitter = empty(scene, "Eye")
    target = cube(scene, "Wall", (0.0, 5.0, 0.0), size=1.0)  # near face at y = 4.5
    env = ray_env(scene, emitter)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (5,)
    assert obs[2] == pytest.approx(4.5 / 10.0, abs=1e-5)
    # The side rays (+-22.5 and +-45 degrees) pass beside a 1-wide cube 4.5 away: misses read 1.
    np.testing.assert_allclose(obs[[0, 1, 3, 4]], 1.0, atol=1e-6)

    target.location.y = 3.0  # near face at 2.5; the env reads the scene as it is now
    obs, *_ = env.step(0)
    assert obs[2] == pytest.approx(0.25, abs=1e-5)

    target.location.y = 12.0  # beyond Max Distance: a miss
    obs, *_ = env.step(0)
    np.testing.assert_allclose(obs, 1.0, atol=1e-6)

    target.location = (0.0, -3.0, 0.0)  # behind the emitter: the fan looks along +Y only
    obs, *_ = env.step(0)
    np.testing.assert_allclose(obs, 1.0, atol=1e-6)


def test_ray_side_rays_fan_in_the_axis_plane_and_scale(empty_scene):
    scene = empty_scene
    emitter = empty(scene, "Eye")
    # 3 rays over 90 degrees along +Y: at -45, 0, +45 degrees towards +X (the fan's neighbour axis).
    # A cube whose near face is at x = 2 in the +45 degree direction: the ray hits x = 2 at 2 * sqrt(2).
    cube(scene, "Side", (2.5, 2.0, 0.0), size=1.0)
    env = ray_env(scene, emitter, rays=3, max_distance=8.0, scale=2.0)
    obs, _ = env.reset(seed=0)
    assert obs[1] == pytest.approx(2.0, abs=1e-6)  # straight ahead: a miss, 1 x scale
    hit = [v for v in (obs[0], obs[2]) if v < 2.0]
    assert len(hit) == 1 and hit[0] == pytest.approx(2.0 * 2.0 * math.sqrt(2.0) / 8.0, abs=1e-5)
    assert obs[2] == hit[0]  # the +45 degree ray is the last one (linspace from -spread/2)


def test_ray_follows_emitter_rotation_and_ignores_its_own_mesh(empty_scene):
    scene = empty_scene
    emitter = cube(scene, "Body", size=1.0)  # a mesh emitter: its own faces are not hits
    emitter.rotation_euler = (0.0, 0.0, math.radians(90))  # local +Y now points to world -X
    cube(scene, "Wall", (-4.0, 0.0, 0.0), size=1.0)  # near face at x = -3.5
    env = ray_env(scene, emitter, rays=1, max_distance=5.0)
    obs, _ = env.reset(seed=0)
    assert obs[0] == pytest.approx(3.5 / 5.0, abs=1e-5)


# --------------------------------------------------------------------------- Bone Rotations sensor


def test_bone_rotations_sensor_reads_quaternions_wxyz(empty_scene):
    scene = empty_scene
    rig = armature(scene)
    t = with_wait(Tree(scene))
    t.sensor("DRLA_BoneRotationsSensorNode", armature=rig, bones="")
    env = t.env()
    obs, _ = env.reset(seed=0)
    np.testing.assert_allclose(obs, [1, 0, 0, 0, 1, 0, 0, 0], atol=1e-6)  # rest pose

    q_lower = Quaternion((1.0, 0.0, 0.0), 0.7)
    q_upper = Quaternion((0.0, 0.6, 0.8), -1.1)
    rig.pose.bones["Lower"].rotation_quaternion = q_lower
    rig.pose.bones["Upper"].rotation_quaternion = q_upper
    obs, *_ = env.step(0)
    np.testing.assert_allclose(obs[:4], [q_lower.w, q_lower.x, q_lower.y, q_lower.z], atol=1e-6)
    np.testing.assert_allclose(obs[4:], list(q_upper), atol=1e-6)

    # An Euler bone reads as the quaternion of its rotation; a named subset reads in the listed order.
    rig.pose.bones["Lower"].rotation_mode = 'XYZ'
    rig.pose.bones["Lower"].rotation_euler = (0.3, -0.2, 0.5)
    t2 = with_wait(Tree(scene))
    t2.sensor("DRLA_BoneRotationsSensorNode", armature=rig, bones="Upper, Lower")
    obs, _ = t2.env().reset(seed=0)
    want = Euler((0.3, -0.2, 0.5), 'XYZ').to_quaternion()
    np.testing.assert_allclose(obs[:4], list(q_upper), atol=1e-6)
    np.testing.assert_allclose(obs[4:], list(want), atol=1e-6)


# --------------------------------------------------------------------------- discrete actions


def test_move_and_rotate_actions_with_limits(empty_scene):
    scene = empty_scene
    box = cube(scene, "Box")
    box.rotation_euler = (0.0, 0.0, math.radians(90))
    t = Tree(scene)
    t.sensor("DRLA_TransformSensorNode", object=box, use_location=True, use_rotation=True)
    t.action("right", 'MOVE', object=box, vector=(0.75, 0.0, 0.0), use_limits=True,
             limit_min=(-1.0, -1.0, -1.0), limit_max=(1.0, 1.0, 1.0))
    t.action("forward_local", 'MOVE', object=box, vector=(0.0, 0.5, 0.0), space='LOCAL')
    t.action("yaw", 'ROTATE', object=box, vector=(0.0, 0.0, 30.0), use_limits=True,
             limit_min=(-180.0, -180.0, 0.0), limit_max=(180.0, 180.0, 120.0))
    t.action("wait", 'WAIT')
    env = t.env()
    env.reset(seed=0)

    env.step(0)
    np.testing.assert_allclose(box.location, (0.75, 0, 0), atol=1e-6)
    env.step(0)  # 1.5 clamps to the limit 1
    np.testing.assert_allclose(box.location, (1.0, 0, 0), atol=1e-6)

    env.step(1)  # local +Y of a box yawed 90 degrees is world -X
    np.testing.assert_allclose(box.location, (0.5, 0, 0), atol=1e-6)

    env.step(2)
    assert box.rotation_euler.z == pytest.approx(math.radians(120), abs=1e-6)
    env.step(2)  # 150 degrees clamps to 120
    assert box.rotation_euler.z == pytest.approx(math.radians(120), abs=1e-6)
    assert box.rotation_euler.x == pytest.approx(0.0, abs=1e-7)

    before = (tuple(box.location), tuple(box.rotation_euler), scene.frame_current)
    env.step(3)
    assert (tuple(box.location), tuple(box.rotation_euler)) == before[:2]
    assert scene.frame_current == before[2] + 1  # a wait still advances the scene a frame

    env.reset(seed=0)  # reset puts the touched object back
    np.testing.assert_allclose(box.location, (0, 0, 0), atol=1e-7)
    assert box.rotation_euler.z == pytest.approx(math.radians(90), abs=1e-6)


def test_rotate_bone_action(empty_scene):
    scene = empty_scene
    rig = armature(scene)
    t = Tree(scene)
    t.sensor("DRLA_BoneRotationsSensorNode", armature=rig)
    t.action("bend", 'BONE_ROTATE', object=rig, bone="Upper", vector=(30.0, 0.0, 0.0))
    t.action("wait", 'WAIT')
    env = t.env()
    env.reset(seed=0)
    env.step(0)
    got = rig.pose.bones["Upper"].rotation_quaternion
    want = Quaternion((1.0, 0.0, 0.0), math.radians(30))
    assert got.rotation_difference(want).angle == pytest.approx(0.0, abs=1e-5)
    assert tuple(rig.pose.bones["Lower"].rotation_quaternion) == (1.0, 0.0, 0.0, 0.0)
    env.step(0)
    got = rig.pose.bones["Upper"].rotation_quaternion
    assert got.rotation_difference(Quaternion((1.0, 0.0, 0.0), math.radians(60))).angle == pytest.approx(0, abs=1e-5)
    env.reset(seed=0)
    np.testing.assert_allclose(rig.pose.bones["Upper"].rotation_quaternion, (1, 0, 0, 0), atol=1e-7)


def test_rotate_bone_action_limits(empty_scene):
    """Limits clamp the bone's Euler angles (degrees), in Euler and in quaternion rotation modes."""
    scene = empty_scene
    rig = armature(scene)
    rig.pose.bones["Lower"].rotation_mode = 'XYZ'
    t = Tree(scene)
    t.sensor("DRLA_BoneRotationsSensorNode", armature=rig)
    limits = dict(use_limits=True, limit_min=(-45.0, -45.0, -45.0), limit_max=(45.0, 45.0, 45.0))
    t.action("bend_lower", 'BONE_ROTATE', object=rig, bone="Lower", vector=(30.0, 0.0, 0.0), **limits)
    t.action("bend_upper", 'BONE_ROTATE', object=rig, bone="Upper", vector=(30.0, 0.0, 0.0), **limits)
    env = t.env()
    env.reset(seed=0)
    for _ in range(2):
        env.step(0)
        env.step(1)
    assert rig.pose.bones["Lower"].rotation_euler.x == pytest.approx(math.radians(45), abs=1e-6)
    q = rig.pose.bones["Upper"].rotation_quaternion
    assert q.rotation_difference(Quaternion((1.0, 0.0, 0.0), math.radians(45))).angle == pytest.approx(0, abs=1e-5)


def test_set_and_add_property_actions(empty_scene):
    scene = empty_scene
    holder = empty(scene, "Holder")
    holder["score"] = 2.0
    holder["level"] = 0
    t = Tree(scene)
    t.sensor("DRLA_PropertySensorNode", object=holder, property="score")
    t.action("set", 'SET_PROPERTY', object=holder, property="score", value=7.5)
    t.action("add", 'ADD_PROPERTY', object=holder, property="score", value=-3.0, use_limits=True,
             limit_min=(0.0, 0.0, 0.0), limit_max=(100.0, 0.0, 0.0))
    t.action("level_up", 'ADD_PROPERTY', object=holder, property="level", value=1.0)
    t.action("wait", 'WAIT')
    env = t.env()
    obs, _ = env.reset(seed=0)
    assert obs[0] == 2.0
    obs, *_ = env.step(0)
    assert holder["score"] == 7.5 and obs[0] == 7.5
    obs, *_ = env.step(1)
    assert holder["score"] == 4.5 and obs[0] == 4.5
    env.step(1)
    assert holder["score"] == 1.5
    env.step(1)  # -1.5 clamps to the minimum 0
    assert holder["score"] == 0.0
    env.step(2)
    assert holder["level"] == 1 and isinstance(holder["level"], int)  # an int property stays an int
    obs, *_ = env.step(3)
    assert holder["score"] == 0.0 and holder["level"] == 1 and obs[0] == 0.0
    obs, _ = env.reset(seed=0)
    assert holder["score"] == 2.0 and holder["level"] == 0 and obs[0] == 2.0


# --------------------------------------------------------------------------- continuous bone actions


def test_bone_rotation_actions_absolute_and_delta(empty_scene):
    scene = empty_scene
    rig = armature(scene)
    t = Tree(scene)
    t.sensor("DRLA_BoneRotationsSensorNode", armature=rig)
    node = t.bone_actions(armature=rig, bones="", mode='ABSOLUTE', max_angle=math.radians(60))
    assert node.summary() == "6 continuous values"
    env = t.env()
    from drla_ext.drla_core.base.spaces import Box

    assert env.action_space == Box(-1.0, 1.0, (6,))
    env.reset(seed=0)
    action = np.array([0.5, 0.0, 0.0, 0.0, -0.25, 2.0], np.float32)  # 2 is clipped to 1
    obs, *_ = env.step(action)
    want_lower = Euler((math.radians(30), 0, 0)).to_quaternion()
    want_upper = Euler((0, math.radians(-15), math.radians(60))).to_quaternion()
    for name, want, got in (("Lower", want_lower, obs[:4]), ("Upper", want_upper, obs[4:])):
        q = rig.pose.bones[name].rotation_quaternion
        assert q.rotation_difference(want).angle == pytest.approx(0.0, abs=1e-5)
        np.testing.assert_allclose(got, list(q), atol=1e-6)
    env.step(action)  # absolute: the same action gives the same pose
    assert rig.pose.bones["Lower"].rotation_quaternion.rotation_difference(want_lower).angle < 1e-5

    env.reset(seed=0)  # back to the rest pose before building the next env (it starts from the scene as is)
    node.mode = 'DELTA'
    env = t.env()
    env.reset(seed=0)
    one = np.array([0.5, 0, 0, 0, 0, 0], np.float32)
    env.step(one)
    env.step(one)  # deltas add up: 30 + 30 degrees about X
    q = rig.pose.bones["Lower"].rotation_quaternion
    assert q.rotation_difference(Quaternion((1, 0, 0), math.radians(60))).angle == pytest.approx(0, abs=1e-5)
    np.testing.assert_allclose(rig.pose.bones["Upper"].rotation_quaternion, (1, 0, 0, 0), atol=1e-6)
    env.reset(seed=0)
    np.testing.assert_allclose(rig.pose.bones["Lower"].rotation_quaternion, (1, 0, 0, 0), atol=1e-7)


def test_bone_rotation_actions_named_bones_euler_mode(empty_scene):
    scene = empty_scene
    rig = armature(scene)
    rig.pose.bones["Upper"].rotation_mode = 'XYZ'
    t = Tree(scene)
    t.sensor("DRLA_BoneRotationsSensorNode", armature=rig, bones="Upper")
    t.bone_actions(armature=rig, bones="Upper", max_angle=math.radians(90))
    env = t.env()
    assert env.action_space.shape == (3,)
    env.reset(seed=0)
    env.step(np.array([0.0, 0.0, -1.0], np.float32))
    np.testing.assert_allclose(rig.pose.bones["Upper"].rotation_euler, (0, 0, -math.pi / 2), atol=1e-6)
    np.testing.assert_allclose(rig.pose.bones["Lower"].rotation_quaternion, (1, 0, 0, 0), atol=1e-7)


# --------------------------------------------------------------------------- done conditions


def test_property_condition_done(empty_scene):
    scene = empty_scene
    holder = empty(scene, "Holder")
    holder["score"] = 0
    t = Tree(scene, max_steps=50)
    t.sensor("DRLA_PropertySensorNode", object=holder, property="score")
    t.action("add", 'ADD_PROPERTY', object=holder, property="score", value=1.0)
    t.done("DRLA_PropertyConditionNode", object=holder, property="score", compare='GE', value=3.0, reward=5.0)
    env = t.env()
    env.reset(seed=0)
    results = [env.step(0)[1:4] for _ in range(3)]
    assert results == [(0.0, False, False), (0.0, False, False), (5.0, True, False)]
    with pytest.raises(RuntimeError):
        env.step(0)
    env.reset(seed=0)
    assert holder["score"] == 0
    assert env.step(0)[2] is False


def test_property_condition_on_scene_property(empty_scene):
    scene = empty_scene
    scene["lives"] = 2.0
    holder = empty(scene, "Holder")
    holder["x"] = 0.0
    t = Tree(scene, max_steps=50)
    t.sensor("DRLA_PropertySensorNode", source='SCENE', property="lives")
    t.action("wait", 'WAIT')
    t.done("DRLA_PropertyConditionNode", source='SCENE', property="lives", compare='LE', value=0.0, reward=-2.0)
    env = t.env()
    env.reset(seed=0)
    assert env.step(0)[1:4] == (0.0, False, False)
    scene["lives"] = 0.0
    assert env.step(0)[1:4] == (-2.0, True, False)
    env.reset(seed=0)  # numeric scene properties are restored
    assert scene["lives"] == 2.0


def test_within_distance_done(empty_scene):
    scene = empty_scene
    agent = cube(scene, "Agent", (0.0, 0.0, 0.0), size=0.5)
    goal = empty(scene, "Goal", (2.0, 0.0, 0.0))
    t = Tree(scene, max_steps=50)
    t.sensor("DRLA_DistanceSensorNode", object_a=agent, object_b=goal)
    t.action("right", 'MOVE', object=agent, vector=(0.5, 0.0, 0.0))
    t.action("wait", 'WAIT')
    t.done("DRLA_WithinDistanceNode", object_a=agent, object_b=goal, distance=0.5, reward=3.0)
    env = t.env()
    env.reset(seed=0)
    assert env.step(1)[1:4] == (0.0, False, False)
    obs, r, term, trunc, _ = env.step(0)
    assert obs[0] == pytest.approx(1.5) and (r, term, trunc) == (0.0, False, False)
    assert env.step(0)[1:4] == (0.0, False, False)  # 1.0 away
    obs, r, term, trunc, _ = env.step(0)  # 0.5 away: within (<=) the distance
    assert obs[0] == pytest.approx(0.5) and (r, term, trunc) == (3.0, True, False)


def test_out_of_bounds_done_box_and_object(empty_scene):
    scene = empty_scene
    agent = cube(scene, "Agent", size=0.5)
    ground = cube(scene, "Ground", size=1.0)
    ground.scale = (3.0, 3.0, 0.1)  # X/Y extent [-1.5, 1.5]
    t = Tree(scene, max_steps=50)
    t.sensor("DRLA_TransformSensorNode", object=agent, use_location=True, use_rotation=False)
    t.action("right", 'MOVE', object=agent, vector=(0.5, 0.0, 0.0))
    t.action("up", 'MOVE', object=agent, vector=(0.0, 0.0, 1.0))
    bounds = t.done("DRLA_OutOfBoundsNode", object=agent, bounds='BOX', box_min=(-1.0, -1.0, -1.0),
                    box_max=(1.0, 1.0, 1.0), reward=-4.0)
    env = t.env()
    env.reset(seed=0)
    assert env.step(0)[1:4] == (0.0, False, False)
    assert env.step(0)[1:4] == (0.0, False, False)  # x = 1.0: on the edge is inside
    assert env.step(0)[1:4] == (-4.0, True, False)  # x = 1.5: out
    env.reset(seed=0)
    assert env.step(1)[1:4] == (0.0, False, False)  # z = 1
    assert env.step(1)[1:4] == (-4.0, True, False)  # z = 2: a box bounds Z too

    env.reset(seed=0)
    bounds.bounds, bounds.bounds_object = 'OBJECT', ground
    env = t.env()
    env.reset(seed=0)
    for _ in range(3):  # x up to 1.5 stays on the ground; height does not matter
        assert env.step(0)[1:4] == (0.0, False, False)
    assert env.step(1)[1:4] == (0.0, False, False)
    assert env.step(0)[1:4] == (-4.0, True, False)  # x = 2.0: off the ground


def test_truncation_and_first_done_reward_sum(empty_scene):
    """Two endings firing together add both rewards; without an ending, Max Steps truncates."""
    scene = empty_scene
    holder = empty(scene, "Holder")
    holder["score"] = 0.0
    t = Tree(scene, max_steps=4)
    t.sensor("DRLA_PropertySensorNode", object=holder, property="score")
    t.action("add", 'ADD_PROPERTY', object=holder, property="score", value=1.0)
    t.action("wait", 'WAIT')
    t.done("DRLA_PropertyConditionNode", object=holder, property="score", compare='GE', value=2.0, reward=1.0)
    t.done("DRLA_PropertyConditionNode", object=holder, property="score", compare='EQ', value=2.0, reward=0.5)
    env = t.env()
    env.reset(seed=0)
    assert env.step(0)[1:4] == (0.0, False, False)
    assert env.step(0)[1:4] == (1.5, True, False)
    env.reset(seed=0)
    ends = [env.step(1)[2:4] for _ in range(4)]
    assert ends == [(False, False)] * 3 + [(False, True)]


def test_property_actions_on_rna_paths_and_quaternion_object_rotation(empty_scene):
    """Set / Add work on RNA paths (``location.z``, ``location[0]``); a quaternion object's Rotate
    is clamped by its Limits like an Euler one."""
    scene = empty_scene
    box = cube(scene, "Box")
    box.rotation_mode = 'QUATERNION'
    t = Tree(scene)
    t.sensor("DRLA_TransformSensorNode", object=box, use_location=True, use_rotation=False)
    t.action("lift", 'SET_PROPERTY', object=box, property="location.z", value=2.0)
    t.action("push", 'ADD_PROPERTY', object=box, property="location[0]", value=0.25)
    t.action("spin", 'ROTATE', object=box, vector=(0.0, 0.0, 50.0), use_limits=True,
             limit_min=(-90.0, -90.0, -90.0), limit_max=(90.0, 90.0, 90.0))
    env = t.env()
    env.reset(seed=0)
    obs, *_ = env.step(0)
    np.testing.assert_allclose(obs, (0, 0, 2), atol=1e-6)
    env.step(1)
    obs, *_ = env.step(1)
    np.testing.assert_allclose(obs, (0.5, 0, 2), atol=1e-6)
    env.step(2)
    env.step(2)  # 100 degrees clamps to 90
    want = Quaternion((0.0, 0.0, 1.0), math.radians(90))
    assert box.rotation_quaternion.rotation_difference(want).angle == pytest.approx(0.0, abs=1e-5)
    env.reset(seed=0)
    np.testing.assert_allclose(box.location, (0, 0, 0), atol=1e-7)
    np.testing.assert_allclose(box.rotation_quaternion, (1, 0, 0, 0), atol=1e-7)
