"""Demonstrations from keyframes (addon/runs/demos_keyframes.py) on the Reach example: the cube keyframed along
a scripted path of the tree's own moves (right 0.5, front 0.5, wait...) is read back as those actions."""

import math

import bpy
import numpy as np
import pytest

SCRIPT = [0, 0, 2, 4, 2, 1, 3, 4, 0, 2]  # right right front wait front left back wait right front


def keyframed_reach(scene, script, jitter=0.0):
    from drla_ext.addon.ui import examples

    agent, goal = examples.build_transform_scene(scene)
    tree = examples.build_transform_tree(scene)
    env = tree.nodes["Environment"]
    env.random_object_1 = env.random_object_2 = None
    agent.location, goal.location = (0, 0, 0), (3, 2, 0)
    moves = {0: (0.5, 0, 0), 1: (-0.5, 0, 0), 2: (0, 0.5, 0), 3: (0, -0.5, 0), 4: (0, 0, 0)}
    scene.frame_start, scene.frame_end = 1, 1 + len(script)
    where = np.zeros(3)
    for i, a in enumerate([None] + list(script)):
        if a is not None:
            where = where + np.array(moves[a]) + (jitter * (i % 2) if a != 4 else 0)
        agent.location = tuple(where)
        agent.keyframe_insert("location", frame=1 + i)
    for fc in agent.animation_data.action.fcurves if hasattr(agent.animation_data.action, "fcurves") else []:
        for k in fc.keyframe_points:
            k.interpolation = 'LINEAR'
    return tree, agent


def test_keyframed_moves_are_read_back_as_the_actions(empty_scene, tmp_path):
    from drla_ext.addon.runs import demos_keyframes
    from drla_ext.drla_core.io.demos import load_demo

    tree, agent = keyframed_reach(empty_scene, SCRIPT)
    path, result = demos_keyframes.record_keyframes_to_file(tree, empty_scene, tmp_path / "d.npz",
                                                            blend_path=str(tmp_path / "reach.blend"))
    demo = load_demo(path)
    assert demo.actions.tolist() == SCRIPT
    assert result.explained == 1.0 and demo.meta["explained"] == 1.0
    assert demo.recorded_by == "keyframes" and demo.source == {"blend": "reach.blend", "tree": tree.name}
    # the observations are the env's (the State's scale times): the goal relative to the agent, their distance
    scale = demo.obs[0][0] / 3
    assert scale > 0 and np.allclose(demo.obs[0], scale * np.array([3, 2, 0, np.hypot(3, 2)]), atol=1e-5)
    assert np.allclose(demo.obs[1], scale * np.array([2.5, 2, 0, np.hypot(2.5, 2)]), atol=1e-5)
    assert demo.truncated[-1] and demo.n_episodes == 1
    assert empty_scene.frame_current == 1 and tuple(agent.location) == pytest.approx((0, 0, 0))  # scene as before


def test_steps_no_action_explains_are_counted(empty_scene):
    from drla_ext.addon.runs import demos_keyframes

    # every other step moves 0.2 further than any action does: those steps are the nearest action, unexplained
    tree, _ = keyframed_reach(empty_scene, [0, 0, 2, 2], jitter=0.2)
    result = demos_keyframes.record_keyframes(tree, empty_scene, tolerance=0.05)
    assert result.demo.actions.tolist() == [0, 0, 2, 2]
    assert result.explained == 0.5
    assert [e > 0.15 for e in result.errors] == [True, False, True, False]


def drla(*args, cwd):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run([sys.executable, "-m", "drla", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=env)


def test_cli_record_keyframes_then_train_with_the_demo(empty_scene, tmp_path):
    """drla record-keyframes writes the demonstration beside the .blend; drla train --demo learns from it."""
    from drla_ext.drla_core.io.demos import load_demo
    from drla_ext.drla_core.io.model_io import load_model

    keyframed_reach(empty_scene, SCRIPT)
    blend = tmp_path / "reach.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    out = drla("record-keyframes", blend, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    path = tmp_path / "reach_Reach_keyframes.npz"
    assert "10 steps recorded from frames 1..11; 100% explained" in out.stdout and str(path) in out.stdout
    assert load_demo(path).actions.tolist() == SCRIPT
    # DQN trains from it: pre-training on the demonstration, its transitions in the replay
    trained = drla("train", blend, "--demo", path, "--steps", "60", "--learning-starts", "1000", "--quiet",
                   "--out", tmp_path / "m.json", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    assert f"demonstration {path}: 10 steps, 1 episodes; margin_loss" in trained.stderr
    model = load_model(tmp_path / "m.json")
    demo = load_demo(path)
    # 60 steps, none learning: what it does is the cloning. A wait leaves the observation as it was, so the step
    # after it has the same observation and another action: those two steps cannot both be imitated
    unique = [i for i, o in enumerate(demo.obs) if sum(np.array_equal(o, p) for p in demo.obs) == 1]
    assert len(unique) >= 5 and all(model.act(demo.obs[i]) == SCRIPT[i] for i in unique)
    bad = drla("record-keyframes", blend, "--out", tmp_path / "d.json", cwd=tmp_path)
    assert bad.returncode == 2 and "error: --out: a demonstration is an .npz file" in bad.stderr


def _continuous_tree(scene):
    from test_sensors_actions import Tree, cube

    agent = cube(scene, "Agent", (0.0, 0.0, 0.0), size=0.5)
    agent["fuel"] = 1.0
    t = Tree(scene, max_steps=50)
    t.sensor("DRLA_TransformSensorNode", object=agent, use_location=True, use_rotation=False)
    t.action("forward", 'MOVE', object=agent, vector=(2.0, 0.0, 0.0), amount=True)
    t.action("turn", 'ROTATE', object=agent, vector=(0.0, 0.0, 90.0), amount=True)
    t.action("burn", 'ADD_PROPERTY', object=agent, property="fuel", value=-0.5, amount=True)
    return t.b.tree, agent


def test_keyframed_amounts_are_read_back(empty_scene):
    """Continuous actions: the amounts whose changes add up to the keyframed one (least squares), in [-1, 1]."""
    from drla_ext.addon.runs import demos_keyframes

    tree, agent = _continuous_tree(empty_scene)
    empty_scene.frame_start, empty_scene.frame_end = 1, 5
    # x, z rotation (degrees), fuel per frame: amounts (x / 2, degrees / 90, -fuel change / 0.5)
    keys = [(0.0, 0.0, 1.0), (0.5, 45.0, 1.0), (1.5, 45.0, 0.75), (1.0, 0.0, 0.75), (4.0, 0.0, 0.75)]
    for frame, (x, deg, fuel) in enumerate(keys, start=1):
        agent.location = (x, 0, 0)
        agent.rotation_euler = (0, 0, math.radians(deg))
        agent["fuel"] = fuel
        agent.keyframe_insert("location", frame=frame)
        agent.keyframe_insert("rotation_euler", frame=frame)
        agent.keyframe_insert('["fuel"]', frame=frame)
    result = demos_keyframes.record_keyframes(tree, empty_scene)
    expected = [[0.25, 0.5, 0.0], [0.5, 0.0, 0.5], [-0.25, -0.5, 0.0], [1.0, 0.0, 0.0]]
    assert np.allclose(result.demo.actions, expected, atol=1e-4)
    # the last step moved 3.0: more than an amount of 1 can (2.0), so it is clipped and not explained
    assert result.explained == 0.75 and result.errors[3] == pytest.approx(1.0, abs=1e-4)
    assert tuple(agent.location) == pytest.approx((0, 0, 0)) and agent["fuel"] == 1.0  # the scene as before


def test_keyboard_recorder_with_continuous_actions(empty_scene, tmp_path):
    from drla_ext.addon.runs import demos_record
    from drla_ext.drla_core.io.demos import load_demo

    tree, agent = _continuous_tree(empty_scene)
    rec = demos_record.KeyboardRecorder(empty_scene, tree, str(tmp_path / "c.blend")).start()
    assert [k for k, _ in rec.labels] == ["Q / A", "W / S", "E / D", "Space"]
    for key in ("Q", "S", "SPACE", "A"):
        assert rec.press(key)
    assert agent.location.x == pytest.approx(0.0) and agent.rotation_euler.z == pytest.approx(-math.pi / 2)
    demo = load_demo(rec.stop())
    assert demo.actions.tolist() == [[1, 0, 0], [0, -1, 0], [0, 0, 0], [-1, 0, 0]]
    assert agent.rotation_euler.z == 0.0


def test_keyframed_drla_action_names_the_action(empty_scene):
    """A shot moves nothing: the scene's keyframed drla_action (1 = the first action) says what to take there."""
    from drla_ext.addon.runs import demos_keyframes

    tree, _ = keyframed_reach(empty_scene, SCRIPT)
    numbers = [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]  # frame 4 (the 4th step, keyframed as a wait): "left"
    for frame, number in enumerate(numbers, start=1):
        empty_scene["drla_action"] = number
        empty_scene.keyframe_insert('["drla_action"]', frame=frame)
    result = demos_keyframes.record_keyframes(tree, empty_scene)
    assert result.demo.actions.tolist() == SCRIPT[:3] + [1] + SCRIPT[4:]
    assert result.explained == 1.0
    empty_scene["drla_action"] = 9
    empty_scene.animation_data_clear()
    with pytest.raises(ValueError, match="the scene's drla_action is 9 at frame 1, but the tree has 5 actions"):
        demos_keyframes.record_keyframes(tree, empty_scene)
