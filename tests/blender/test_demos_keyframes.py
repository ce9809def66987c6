"""Demonstrations from keyframes (addon/runs/demos_keyframes.py) on the Reach example: the cube keyframed along
a scripted path of the tree's own moves (right 0.5, front 0.5, wait...) is read back as those actions."""

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
