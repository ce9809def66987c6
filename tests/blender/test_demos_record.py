"""Recording a demonstration by playing (addon/runs/demos_record.py): the stepping core driven by key names as
the modal operator feeds it (real window events cannot be made headless; tests/gui checks the operator), the
operators' polls, and Record from Keyframes as an operator with the Trainer node's Demonstration."""

import bpy
import numpy as np
import pytest


def reach(scene):
    from drla_ext.addon.properties import settings
    from drla_ext.addon.ui import examples

    agent, goal = examples.build_transform_scene(scene)
    tree = examples.build_transform_tree(scene)
    env = tree.nodes["Environment"]
    env.random_object_1 = env.random_object_2 = None
    env.max_steps = 4
    agent.location, goal.location = (0, 0, 0), (3, 2, 0)
    settings(scene).tree = tree
    return tree, agent


def test_keyboard_recorder_steps_as_in_training_and_saves(empty_scene, tmp_path):
    from drla_ext.addon.runs import demos_record
    from drla_ext.drla_core.io.demos import load_demo

    tree, agent = reach(empty_scene)
    rec = demos_record.KeyboardRecorder(empty_scene, tree, str(tmp_path / "reach.blend")).start()
    assert demos_record.active(empty_scene) is rec
    # the keys the panel shows: 1..4 the moves, 5 and Space the wait
    assert rec.labels == [("1", "right"), ("2", "left"), ("3", "front"), ("4", "back"), ("5", "wait"),
                          ("Space", "wait")]
    assert not rec.press("X") and rec.steps == 0
    for key in ("ONE", "ONE", "THREE"):
        assert rec.press(key)
    assert tuple(agent.location) == pytest.approx((1.0, 0.5, 0.0))  # the env moved the cube, as in training
    for key in ("SPACE", "TWO", "FOUR"):  # the 4th step ends the episode (max steps 4); the next one starts
        rec.press(key)
    assert rec.episodes == 1 and tuple(agent.location) == pytest.approx((-0.5, -0.5, 0.0))
    path = rec.stop()
    assert path == tmp_path / "reach_Reach_keyboard.npz" and demos_record.active(empty_scene) is None
    assert tuple(agent.location) == pytest.approx((0, 0, 0)) and empty_scene.frame_current == 1  # scene back
    demo = load_demo(path)
    assert demo.actions.tolist() == [0, 0, 2, 4, 1, 3]
    assert demo.truncated.tolist() == [False, False, False, True, False, True]  # the step limit, then the stop
    assert demo.recorded_by == "keyboard" and demo.n_episodes == 2
    scale = demo.obs[0][0] / 3
    assert np.allclose(demo.obs[1][:3], scale * np.array([2.5, 2, 0]), atol=1e-5)
    assert np.allclose(demo.obs[4][:3], scale * np.array([3, 2, 0]), atol=1e-5)  # the 2nd episode's start


def test_nothing_recorded_saves_nothing(empty_scene, tmp_path):
    from drla_ext.addon.runs import demos_record

    tree, _ = reach(empty_scene)
    rec = demos_record.KeyboardRecorder(empty_scene, tree, str(tmp_path / "r.blend")).start()
    with pytest.raises(ValueError, match="A recording is running in this scene"):
        demos_record.KeyboardRecorder(empty_scene, tree).start()
    assert rec.stop() is None and not list(tmp_path.iterdir())


def test_train_and_play_wait_for_a_recording(empty_scene, tmp_path):
    from drla_ext.addon.runs import demos_record

    tree, _ = reach(empty_scene)
    assert bpy.ops.drla.record_demonstration.poll()
    rec = demos_record.KeyboardRecorder(empty_scene, tree, str(tmp_path / "r.blend")).start()
    try:
        assert not bpy.ops.drla.train.poll() and not bpy.ops.drla.record_keyframes.poll()
    finally:
        rec.stop(save=False)
    assert bpy.ops.drla.train.poll()


def test_record_keyframes_operator_and_the_trainer_demonstration(empty_scene, tmp_path):
    """The operator writes the file beside the .blend; the Trainer node's Demonstration trains from it."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler

    tree, agent = reach(empty_scene)
    tree.nodes["Environment"].max_steps = 50
    empty_scene.frame_start, empty_scene.frame_end = 1, 4
    for frame, x in ((1, 0.0), (2, 0.5), (3, 1.0), (4, 1.0)):
        agent.location = (x, 0, 0)
        agent.keyframe_insert("location", frame=frame)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "reach.blend"))
    assert bpy.ops.drla.record_keyframes() == {'FINISHED'}
    path = tmp_path / "reach_Reach_keyframes.npz"
    assert path.is_file()
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_TrainerNode")
    trainer.demonstration = "//reach_Reach_keyframes.npz"
    compiled = compiler.compile_tree(tree, empty_scene)
    assert compiled.trainer.demonstration == str(path)
    agent.animation_data_clear()
    with build.one_scene_env(compiled, empty_scene) as env:
        job = build.build_job(compiled, env, seed=0, total_steps=10)
        assert len(job.agent.replay_buffer) == 2  # the demonstration's transitions but the last (truncated)
    trainer.demonstration = "//missing.npz"
    compiled = compiler.compile_tree(tree, empty_scene)
    with build.one_scene_env(compiled, empty_scene) as env:
        with pytest.raises(build.BuildError, match="Demonstration missing.npz: missing.npz: cannot read"):
            build.build_job(compiled, env, seed=0, total_steps=10)


def test_saving_the_file_stops_the_recording_first(empty_scene, tmp_path):
    """Save while recording: the steps so far are saved, the scene put back before the .blend is written."""
    from drla_ext.addon.runs import demos_record
    from drla_ext.drla_core.io.demos import load_demo

    tree, agent = reach(empty_scene)
    blend = tmp_path / "reach.blend"
    rec = demos_record.KeyboardRecorder(empty_scene, tree, str(blend)).start()
    rec.press("ONE")
    rec.press("THREE")
    assert tuple(agent.location) != pytest.approx((0, 0, 0))
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert demos_record.active(empty_scene) is None
    assert tuple(agent.location) == pytest.approx((0, 0, 0))
    assert load_demo(tmp_path / "reach_Reach_keyboard.npz").actions.tolist() == [0, 2]
    assert rec.stop() == tmp_path / "reach_Reach_keyboard.npz"  # the operator's own Esc afterwards: no change
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    assert tuple(bpy.context.scene.objects["Agent"].location) == pytest.approx((0, 0, 0))  # saved as before
