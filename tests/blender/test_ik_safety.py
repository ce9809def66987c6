"""Learned IK runtime safety: follow mode ends with the file and gives the pose back; IK Bake writes a
new action (the user's stays), restores the frame and cleans up after an error; Esc never raises."""

from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

SCENE = Path(__file__).resolve().parents[2] / "scenes" / "robot_arm" / "robot_arm.blend"


@pytest.fixture
def arm3(arm3_scene):
    """The robot arm scene with Arm3 trained briefly (a stored model): ``(scene, armature, target)``."""
    assert bpy.ops.drla.train(steps=400) == {'FINISHED'}
    yield arm3_scene, bpy.data.objects["Arm3"], bpy.data.objects["Arm3Target"]


def _pose(ob):
    return {pb.name: (pb.rotation_mode, tuple(pb.rotation_quaternion), tuple(pb.rotation_euler),
                      tuple(pb.rotation_axis_angle)) for pb in ob.pose.bones}


def _reachable_points(ob, n, seed):
    from drla_ext.addon.scene import armature

    arm = armature.arm_description(ob)
    return arm, arm.local_to_world(arm.sample_targets(n, seed)[0])


# --------------------------------------------------------------------------- follow mode
@pytest.mark.parametrize("opener", ["open_mainfile", "read_homefile"])
def test_opening_another_file_ends_follow_mode(arm3, opener):
    from drla_ext.addon.runs import ik_follow
    from drla_ext.addon.runs import kinds

    scene, ob, _target = arm3
    assert bpy.ops.drla.ik_follow() == {'FINISHED'}
    assert kinds.follow_state(scene.drla.tree)[0] and ik_follow._FOLLOWERS
    assert ik_follow._on_depsgraph_update in bpy.app.handlers.depsgraph_update_post
    if opener == "open_mainfile":
        bpy.ops.wm.open_mainfile(filepath=str(SCENE))
        scene = bpy.context.scene
        scene.drla.tree = bpy.data.node_groups["Arm3"]
        assert not kinds.follow_state(scene.drla.tree)[0]  # the panel no longer says "On"
    else:
        bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert not ik_follow._FOLLOWERS
    assert ik_follow._on_depsgraph_update not in bpy.app.handlers.depsgraph_update_post


def test_follow_off_puts_the_pose_back_exactly(arm3):
    from drla_ext.addon.runs import ik_follow
    from drla_ext.addon.scene import armature

    scene, ob, target = arm3
    bones = ob.pose.bones
    euler, quat, axis = bones["Base"], bones["Upper"], bones["Fore"]
    euler.rotation_mode = 'ZXY'
    euler.rotation_euler = (0.1, -0.2, 0.3)
    euler.rotation_quaternion = (0.9, 0.1, 0.2, 0.3)  # unused by the mode, still must survive
    quat.rotation_mode = 'QUATERNION'
    quat.rotation_quaternion = (0.8, 0.0, 0.6, 0.0)
    quat.rotation_euler = (0.5, 0.0, 0.0)
    axis.rotation_mode = 'AXIS_ANGLE'
    axis.rotation_axis_angle = (0.7, 0.0, 1.0, 0.0)
    view_layer = bpy.context.view_layer
    view_layer.update()
    before = _pose(ob)

    assert bpy.ops.drla.ik_follow() == {'FINISHED'} and ik_follow.follow_active(ob)
    arm, points = _reachable_points(ob, 2, 3)
    for p in points:
        target.location = p.tolist()
        view_layer.update()
        view_layer.update()
        assert np.linalg.norm(armature.tip_world(ob, arm) - p) < 1e-3  # it does follow
    assert _pose(ob) != before
    assert bpy.ops.drla.ik_follow() == {'FINISHED'} and not ik_follow.follow_active(ob)
    assert _pose(ob) == before
    assert "put back" in bpy.types.DRLA_OT_ik_follow.bl_description

    # re-enabling while on keeps the first pose (no second capture of a followed pose)
    assert bpy.ops.drla.ik_follow() == {'FINISHED'}
    target.location = points[0].tolist()
    view_layer.update()
    ik_follow.enable_follow(ob, target, ik_follow._FOLLOWERS[ob.name]["solver"])
    ik_follow.disable_follow(ob)
    assert _pose(ob) == before


# --------------------------------------------------------------------------- IK bake
def _user_action(ob):
    """A user's action on Arm3: Euler keys on Base at frames 1 and 5."""
    base = ob.pose.bones["Base"]
    base.rotation_mode = 'XYZ'
    for frame, z in ((1, 0.0), (5, 0.4)):
        base.rotation_euler = (0.0, 0.0, z)
        base.keyframe_insert("rotation_euler", frame=frame)
    action = ob.animation_data.action
    action.name = "UserAnim"
    return action


def _keys(action):
    from drla_ext.addon.scene import keyframes

    ob = bpy.data.objects["Arm3"]
    slot = ob.animation_data.action_slot if ob.animation_data.action == action else None
    curves = keyframes.fcurves_for(ob, action) if slot is not None else [
        fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags for fc in bag.fcurves]
    return {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points] for fc in curves}


def _animate_target(scene, target, ob, seed=8):
    _arm, (a, b) = _reachable_points(ob, 2, seed)
    for frame, p in ((1, a), (10, b)):
        target.location = p.tolist()
        target.keyframe_insert("location", frame=frame)
    scene.frame_start, scene.frame_end = 1, 10


def test_ik_bake_writes_a_new_action_and_keeps_the_users(arm3):
    from drla_ext.addon.scene import armature

    scene, ob, target = arm3
    user = _user_action(ob)
    user_keys = _keys(user)
    _animate_target(scene, target, ob)
    scene.frame_set(3)
    modes = {pb.name: pb.rotation_mode for pb in ob.pose.bones}

    assert bpy.ops.drla.bake() == {'FINISHED'}
    assert scene.frame_current == 3
    new = ob.animation_data.action
    assert new is not user and new.name == "DRLA Bake: Arm3: Arm3"
    assert "UserAnim" in scene.drla.message
    assert bpy.data.actions.get("UserAnim") is user and user.use_fake_user
    assert _keys(user) == user_keys  # untouched
    assert {pb.name: pb.rotation_mode for pb in ob.pose.bones} == modes  # Base stays Euler
    assert any(path.endswith("rotation_euler") and '"Base"' in path for path, _ in _keys(new))
    arm = armature.arm_description(ob)
    for frame in range(1, 11):
        scene.frame_set(frame)
        want = np.array(target.matrix_world.translation)
        assert np.linalg.norm(armature.tip_world(ob, arm) - want) < 1e-3

    # the user can switch back: their animation plays again
    ob.animation_data.action = user
    scene.frame_set(5)
    assert ob.pose.bones["Base"].rotation_euler.z == pytest.approx(0.4)


def test_ik_bake_uses_the_scene_it_is_given(arm3):
    from drla_ext.addon.runs import bake
    from drla_ext.addon.runs import ik as ik_runs

    scene, ob, target = arm3
    _animate_target(scene, target, ob)
    _compiled, ob, target, solver = ik_runs.parts(scene, scene.drla.tree)
    other = bpy.data.scenes.new("Other")  # not the context scene; its frame must not move
    other.frame_set(42)
    scene.frame_set(2)
    assert bake.bake_target(ob, target, solver, 1, 10, scene=scene, tree_name="Arm3") == 10
    assert scene.frame_current == 2 and other.frame_current == 42


@pytest.mark.parametrize("where", ["solver", "writing"])
def test_ik_bake_error_restores_frame_pose_and_action(arm3, monkeypatch, where):
    from drla_ext.addon.runs import bake
    from drla_ext.addon.runs import ik as ik_runs

    scene, ob, target = arm3
    user = _user_action(ob)
    user_keys = _keys(user)
    user.use_fake_user = False
    _animate_target(scene, target, ob)
    scene.frame_set(3)
    ob.pose.bones["Fore"].rotation_quaternion = (0.9, 0.1, 0.0, 0.0)  # an unkeyed tweak
    before_pose = _pose(ob)
    actions_before = set(bpy.data.actions.keys())
    _compiled, ob, target, solver = ik_runs.parts(scene, scene.drla.tree)

    def boom(*_a, **_k):
        raise RuntimeError("solver exploded")

    if where == "solver":
        monkeypatch.setattr(solver, "solve_refined", boom)
    else:
        real = bake.write_channel
        calls = []

        def half(*args, **kw):  # the first bone is written, then it fails
            if calls:
                boom()
            calls.append(1)
            real(*args, **kw)

        monkeypatch.setattr(bake, "write_channel", half)
    with pytest.raises(RuntimeError, match="solver exploded"):
        bake.bake_target(ob, target, solver, 1, 10, scene=scene, tree_name="Arm3")
    assert scene.frame_current == 3
    assert set(bpy.data.actions.keys()) == actions_before  # no half-written action left
    assert ob.animation_data.action is user and _keys(user) == user_keys and not user.use_fake_user
    assert _pose(ob) == before_pose

    # through the operator: reported, not raised
    if where == "solver":
        monkeypatch.setattr(ik_runs, "parts", lambda sc, tree: (_compiled, ob, target, solver))
        with pytest.raises(RuntimeError, match="solver exploded"):  # bpy.ops turns a reported ERROR into this
            bpy.ops.drla.bake()
        assert "solver exploded" in scene.drla.error
        assert scene.frame_current == 3 and set(bpy.data.actions.keys()) == actions_before


# --------------------------------------------------------------------------- the modal operator's Esc
@pytest.mark.parametrize("error", ["session", "other"])
def test_esc_when_stopping_fails_reports_and_ends_the_modal(arm3, error):
    """The operator's modal hands real event values to ``modal_step``; no stand-in event or operator."""
    from drla_ext.addon.ui import operators
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs import train as train_session

    scene, _ob, _target = arm3
    sess = train_session.TrainSession(scene, scene.drla.tree, total_steps=100_000).start()
    sess.tick(0.01)

    def failing_stop():
        if error == "session":
            raise sess._fail(KeyError("tree 'Arm3' was renamed"))
        raise KeyError("tree 'Arm3' was renamed")

    sess.stop = failing_stop
    outcome, message = operators.modal_step(sess, 'ESC', 'PRESS', False)  # no traceback
    assert outcome == operators.STOPPED_BY_ESC and "renamed" in message
    assert sess.state != sessions.RUNNING and sessions.active(scene) is None
    assert "renamed" in scene.drla.error
