"""Scene copies stepped in one batch (issue 11's speed): every batched reader, reward, ending and action gives
exactly (bit for bit) what each copy's own per-copy code gives, on real Blender."""

from pathlib import Path

import bpy
import numpy as np

from test_sensors_actions import Tree, cube, empty


def batch_tree(scene, copies: int):
    """Rotated, non-uniformly scaled objects (so relative locations exercise the whole 3x3 inverse); every
    batched sensor, reward and ending, and some that are not batched (rotation, Local moves, Rotate)."""
    agent = cube(scene, "Agent", (0.2, -0.4, 0.1), size=0.5)
    agent.rotation_euler = (0.3, -0.2, 0.7)
    agent.scale = (1.5, 0.5, 2.0)
    goal = empty(scene, "Goal", (2.0, 0.5, 0.0))
    ref = cube(scene, "Ref", (-1.0, 2.0, 0.5), size=0.3)
    ref.rotation_euler = (1.1, 0.4, -2.3)
    ref.scale = (0.7, 1.9, 1.3)
    t = Tree(scene, max_steps=9)
    t.env_node.copies = copies
    t.env_node.random_object_1 = goal
    t.env_node.random_min, t.env_node.random_max = (-3, -3, 0), (3, 3, 1)
    t.sensor("DRLA_TransformSensorNode", object=agent, use_location=True, use_rotation=False)
    t.sensor("DRLA_TransformSensorNode", object=goal, relative_to=ref, use_location=True, use_rotation=False,
             scale=0.3)
    t.sensor("DRLA_TransformSensorNode", object=goal, relative_to=agent, use_location=True, use_rotation=False)
    t.sensor("DRLA_DistanceSensorNode", object_a=agent, object_b=goal, scale=0.2)
    t.sensor("DRLA_TransformSensorNode", object=agent, use_location=True, use_rotation=True)  # not batched
    t.action("right", 'MOVE', object=agent, vector=(0.5, 0.1, 0.0))
    t.action("left", 'MOVE', object=agent, vector=(-0.5, 0.0, 0.2), use_limits=True,
             limit_min=(-2.0, -2.0, -1.0), limit_max=(2.0, 2.0, 0.6))
    t.action("forward", 'MOVE', object=agent, vector=(0.0, 0.4, 0.0), space='LOCAL')  # not batched
    t.action("turn", 'ROTATE', object=agent, vector=(0.0, 0.0, 20.0))  # not batched
    t.action("wait", 'WAIT')
    for mode, weight in (('PROGRESS', 1.0), ('NEGATIVE', 0.1)):
        t.b.link(t.b.node("DRLA_DistanceRewardNode", object_a=agent, object_b=goal, mode=mode, weight=weight),
                 t.env_node, "Rewards")
    t.b.link(t.b.node("DRLA_StepCostNode", cost=0.01), t.env_node, "Rewards")
    t.done("DRLA_WithinDistanceNode", object_a=agent, object_b=goal, distance=0.7, reward=1.0)
    t.done("DRLA_OutOfBoundsNode", object=agent, bounds='BOX', box_min=(-2.5, -2.5, -1), box_max=(2.5, 2.5, 1),
           reward=-1.0)
    return t


def _spec(t):
    from drla_ext.addon.tree import compiler

    return compiler.compile_tree(t.b.tree, t.scene).env


def test_batched_step_equals_each_copys_own_step_bit_for_bit(empty_scene):
    """Drive 4 copies by hand: the batched act/observe (one matrix read, numpy for all copies) against each
    copy's SceneEnv.act/observe on the same scene: observations, rewards and endings are identical."""
    from drla_ext.addon.scene.batch import world_matrices
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene

    scene = empty_scene
    t = batch_tree(scene, copies=4)
    with restored_scene(scene):
        venv = SceneVectorEnv(_spec(t), scene)
        try:
            batched = venv._batched
            # the batched parts are the ones meant to be: 4 of 5 sensors, every reward and ending, 2 moves
            assert [p[2] is not None for p in batched.state.parts] == [True, True, True, True, False]
            assert all(r[0] is not None for r in batched.rewards) and all(d[0] is not None for d in batched.dones)
            assert batched.moves.batched == [True, True, False, False, False]
            obs, _ = venv.reset(seed=5)
            np.testing.assert_array_equal(obs, np.stack([env.state.read() for env in venv.envs]))
            rng = np.random.default_rng(0)
            ended = 0
            for _ in range(40):
                events = batched.act(rng.integers(0, 5, size=4))
                venv._frame += 1
                scene.frame_set(venv._frame)
                mats = world_matrices(batched.arrays.read())
                assert np.array_equal(mats, world_matrices(batched.arrays.read()))  # reading changes nothing
                b_obs, b_reward, b_term = batched.observe(events)
                batched.steps += 1
                for i, env in enumerate(venv.envs):
                    obs_i, reward_i, term_i, trunc_i, _ = env.observe(events[i])
                    np.testing.assert_array_equal(b_obs[i], obs_i)
                    assert b_reward[i] == reward_i and b_term[i] == term_i
                    assert (not term_i and batched.steps[i] >= venv.max_steps) == trunc_i
                    if term_i or trunc_i:
                        ended += 1
                        env.restart_objects()
                        bpy.context.view_layer.update()
                        env.begin_episode()
                        batched.begin([i])
            assert ended >= 4
        finally:
            venv.close()


def test_batched_moves_equal_moves_one_by_one(empty_scene):
    """MoveBatch (float32 additions and clamping in numpy) writes the very locations _Item.apply writes."""
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene

    scene = empty_scene
    t = batch_tree(scene, copies=3)
    with restored_scene(scene):
        venv = SceneVectorEnv(_spec(t), scene)
        try:
            venv.reset(seed=1)
            agents = [env.actuator.items[0].ob for env in venv.envs]
            rng = np.random.default_rng(4)
            for _ in range(30):
                actions = rng.integers(0, 2, size=3)  # the two batched moves (one with limits)
                start = [tuple(ob.location) for ob in agents]
                venv._batched.act(actions)
                batched = [tuple(ob.location) for ob in agents]
                for ob, loc in zip(agents, start):
                    ob.location = loc
                for env, a in zip(venv.envs, actions):
                    env.act(int(a))
                assert [tuple(ob.location) for ob in agents] == batched
            assert max(abs(v) for ob in agents for v in ob.location[:2]) > 1.0  # they went somewhere
        finally:
            venv.close()


def test_object_arrays_follow_renames_and_new_objects(empty_scene):
    from drla_ext.addon.scene.batch import ObjectArrays, world_matrices

    scene = empty_scene
    obs = [cube(scene, f"C{i}", (i, 2 * i, -i)) for i in range(3)]
    for i, ob in enumerate(obs):
        ob.rotation_euler = (0.1 * i, 0.2, 0.3)
    bpy.context.view_layer.update()
    arrays = ObjectArrays(obs)

    def expected():
        return np.array([ob.matrix_world for ob in obs], np.float32).astype(np.float64)

    np.testing.assert_array_equal(world_matrices(arrays.read()), expected())
    obs[0].name = "ZZ last now"  # bpy.data.objects is sorted by name: the rows move
    cube(scene, "A first now")
    np.testing.assert_array_equal(world_matrices(arrays.read()), expected())
    np.testing.assert_array_equal(arrays.read().shape, (3, 16))
    locs = ObjectArrays(obs, "location", 3).read()
    np.testing.assert_array_equal(locs, np.array([ob.location for ob in obs], np.float32))
    # in a file of many objects (a user's scene) the few needed are read one by one: the same values
    many = [cube(scene, f"Filler {i}") for i in range(400)]
    each = ObjectArrays(obs)
    assert each.one_by_one and not arrays.one_by_one
    np.testing.assert_array_equal(each.read(), arrays.read())
    np.testing.assert_array_equal(ObjectArrays(obs, "location", 3).read(), locs)
    for ob in many:
        bpy.data.objects.remove(ob)


def test_batched_camera_tiles_equal_each_copys_own_camera(ext):
    """The tank's camera in 3 copies: one draw of the atlas, all tiles converted at once, equals every copy's
    CameraReader.read of its own tile. The spare evaluation copy draws its own picture alone (not the atlas,
    which would draw every copy on each of its steps)."""
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.sensors import CameraBatch
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    bpy.ops.wm.open_mainfile(filepath=str(Path(__file__).resolve().parents[2] / "scenes" / "tank" / "tank.blend"))
    scene = bpy.context.scene
    spec = compiler.compile_tree(bpy.data.node_groups["Tank"], scene).env
    with restored_scene(scene):
        venv = SceneVectorEnv(spec, scene, 3, eval_copy=True)
        try:
            spare = next(r for r in venv.eval_env.state.readers if hasattr(r, "renderer"))
            assert spare.atlas is None and spare.renderer._impl.atlas is None and spare.batch is None
            venv.reset(seed=2)
            part = next(p for p in venv._batched.state.parts if isinstance(p[2], CameraBatch))
            sl, readers = part[0], part[5]
            for a in [0, 5, 2, 6, 1]:
                venv.step(np.array([a, (a + 1) % 5, 7]))
                out = np.empty((3, sl.stop - sl.start), np.float32)
                part[2](None, out)
                assert out.std() > 0
                for i, reader in enumerate(readers):
                    own = np.empty(sl.stop - sl.start, np.float32)
                    reader.read(own)
                    np.testing.assert_array_equal(out[i], own)
        finally:
            venv.close()


def test_one_copy_steps_as_the_single_scene_and_passes_the_check(empty_scene):
    """With one copy SceneVectorEnv steps through SceneEnv's own act/observe (no batch), and still keeps the
    vector contract."""
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.drla_core.base.vector_env import check_vector_env

    scene = empty_scene
    t = batch_tree(scene, copies=1)
    with restored_scene(scene):
        venv = SceneVectorEnv(_spec(t), scene)
        try:
            assert venv.num_envs == 1 and venv._batched is None
            check_vector_env(venv, steps=30)
        finally:
            venv.close()
