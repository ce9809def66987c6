"""The State node's Frames (issue 26): an observation is the last K readings, oldest first, padded with the first
reading at an episode's start; the scene copies' batched step stacks exactly as each copy's own env; DQN trains
on it and the model plays it back."""

import numpy as np
import pytest

from test_scene_batch import _spec, batch_tree
from test_sensors_actions import Tree, empty


def _mover(scene, frames: int):
    agent = empty(scene, "Agent", (0.0, 0.0, 0.0))
    t = Tree(scene, max_steps=4)
    t.state.frames = frames
    t.sensor("DRLA_TransformSensorNode", object=agent, use_location=True, use_rotation=False)
    t.action("right", 'MOVE', object=agent, vector=(1.0, 0.0, 0.0))
    t.action("up", 'MOVE', object=agent, vector=(0.0, 0.0, 1.0))
    return t


def test_frames_stack_the_last_readings_oldest_first_and_restart_with_the_first(empty_scene):
    t = _mover(empty_scene, frames=3)
    assert t.state.summary() == "observation size 9 (3 x 3)"
    env = t.env()
    try:
        assert env.observation_space.shape == (9,)
        obs, _ = env.reset(seed=0)
        np.testing.assert_array_equal(obs, np.zeros(9, np.float32))  # padded with the first reading
        obs, *_ = env.step(0)
        np.testing.assert_array_equal(obs.reshape(3, 3), [[0, 0, 0], [0, 0, 0], [1, 0, 0]])
        obs, *_ = env.step(1)
        np.testing.assert_array_equal(obs.reshape(3, 3), [[0, 0, 0], [1, 0, 0], [1, 0, 1]])
        obs, *_ = env.step(0)
        np.testing.assert_array_equal(obs.reshape(3, 3), [[1, 0, 0], [1, 0, 1], [2, 0, 1]])
        obs, _, _, truncated, _ = env.step(0)
        assert truncated
        obs, _ = env.reset(seed=1)  # a new episode does not see the last one's frames
        np.testing.assert_array_equal(obs, np.zeros(9, np.float32))
    finally:
        env.close()


def test_one_frame_is_the_reading_alone(empty_scene):
    t = _mover(empty_scene, frames=1)
    assert t.state.summary() == "observation size 3"
    env = t.env()
    try:
        assert env.observation_space.shape == (3,)
        env.reset(seed=0)
        obs, *_ = env.step(0)
        np.testing.assert_array_equal(obs, [1, 0, 0])
    finally:
        env.close()


def test_frame_bounds_repeat_per_frame(empty_scene):
    agent = empty(empty_scene, "Agent")
    t = Tree(empty_scene)
    t.state.frames = 2
    t.sensor("DRLA_DistanceSensorNode", object_a=agent, object_b=agent, scale=0.5)
    t.sensor("DRLA_TransformSensorNode", object=agent, use_location=True, use_rotation=False)
    t.action("wait", 'WAIT')
    env = t.env()
    try:
        one = env.state._bounds()
        np.testing.assert_array_equal(env.observation_space.low, np.tile(one[0], 2))
        np.testing.assert_array_equal(env.observation_space.high, np.tile(one[1], 2))
        assert env.observation_space.low[0] == 0.0 and env.observation_space.low[4] == 0.0  # distances from 0
    finally:
        env.close()


@pytest.mark.parametrize("frames", [1, 3])
def test_batched_copies_stack_exactly_as_each_copys_own_env(empty_scene, frames):
    """4 copies through the vector env (batched reads, autoreset) against a per-copy replay of the same
    actions: with frames, each copy's stack (and its restart after an ending) is the same bit for bit.
    (A fixed Copy Spacing: the automatic one is measured from the scene and may differ by a rounding between
    two runs, and a copy's float32 readings with it.)"""
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene

    scene = empty_scene
    t = batch_tree(scene, copies=4)
    t.env_node.copy_spacing = 16.0
    t.state.frames = frames
    spec = _spec(t)
    assert spec.state.size == frames * spec.state.frame_size
    actions = np.random.default_rng(3).integers(0, 5, size=(14, 4))
    with restored_scene(scene):
        venv = SceneVectorEnv(spec, scene)
        try:
            assert venv._batched is not None
            obs, _ = venv.reset(seed=5)
            batched = [obs]
            for a in actions:
                obs, _, terminated, truncated, _ = venv.step(a)
                batched.append(obs)
        finally:
            venv.close()
    with restored_scene(scene):
        venv = SceneVectorEnv(spec, scene)
        try:
            venv._batched = None  # every copy's own SceneEnv.act/observe
            obs, _ = venv.reset(seed=5)
            each = [obs]
            for a in actions:
                obs, *_ = venv.step(a)
                each.append(obs)
        finally:
            venv.close()
    assert batched[0].shape == (4, frames * spec.state.frame_size)
    for step, (a, b) in enumerate(zip(batched, each)):
        np.testing.assert_array_equal(a, b, err_msg=f"step {step}")


def test_cli_trains_and_plays_the_reach_example_with_two_frames(ext, tmp_path):
    """The Reach example with Frames 2, as a user runs it: the model's network takes the stacked vector and
    ``drla play`` plays it back on the same tree."""
    import bpy

    from drla_core.io.model_io import load_model
    from drla_ext.addon.ui import examples
    from test_cli_scene import run_cli

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    examples.build_transform_scene(scene)
    tree = examples.build_transform_tree(scene)
    state = next(n for n in tree.nodes if n.bl_idname == "DRLA_StateNode")
    state.frames = 2
    size = int(state.summary().split()[2])
    blend = tmp_path / "reach2.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    model = tmp_path / "reach2.json"
    out = run_cli("train", blend, "--steps", "300", "--seed", "1", "--out", model, "--learning-starts", "100",
                  "--train-freq", "8")
    assert out.returncode == 0, out.stderr
    assert load_model(model).network.input_size == size == 8  # the first layer takes both frames of 4 values
    out = run_cli("play", blend, "--model", model, "--episodes", "1")
    assert out.returncode == 0, out.stderr
    assert "mean return" in out.stdout


def test_copies_of_objects_just_placed_by_a_script_are_spaced_by_where_they_are(empty_scene):
    """Objects placed by a script since the scene was last evaluated still have the origin as world matrix;
    the copies' spacing was measured from that (2.0 here, copies overlapping the spread-out originals)."""
    from drla_ext.addon.scene import copies
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene

    t = batch_tree(empty_scene, copies=4)  # its objects were just placed: nothing evaluated yet
    spec = _spec(t)
    with restored_scene(empty_scene):
        venv = SceneVectorEnv(spec, empty_scene)
        try:
            spacing = venv.copies.spacing
        finally:
            venv.close()
    originals = [empty_scene.objects[n] for n in ("Agent", "Goal", "Ref")]
    assert spacing == copies._extent(originals) + copies._sight(originals, spec) + 1.0
    assert spacing > 4.0
