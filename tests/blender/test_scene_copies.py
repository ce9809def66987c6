"""Scene copies (issue 11): N copies of an environment in one scene are N independent episodes.

Copy i reset with seed s observes what a single SceneEnv reset with s + i observes, step after step and
across its own resets; actions reach their own copy; after the run every copy, empty and collection is
gone and the scene is as it was, after an error too; what cannot be copied says why."""

import bpy
import numpy as np
import pytest

from test_sensors_actions import Tree, cube, empty


def chase_tree(scene, copies: int):
    """An agent cube moves left/right/forward towards a goal placed at random; world-space Transform
    sensors of both (so a copy's reading must not depend on where the copy stands)."""
    agent = cube(scene, "Agent", (0.0, 0.0, 0.0), size=0.5)
    eye = empty(scene, "Eye", (0.0, 0.3, 0.0))
    eye.parent = agent  # a child comes along with its parent
    goal = empty(scene, "Goal", (2.0, 0.0, 0.0))
    t = Tree(scene, max_steps=7)
    t.env_node.copies = copies
    t.env_node.random_object_1 = goal
    t.env_node.random_min, t.env_node.random_max, t.env_node.random_grid = (-3, -3, 0), (3, 3, 0), 0.5
    t.sensor("DRLA_TransformSensorNode", object=agent)
    t.sensor("DRLA_TransformSensorNode", object=goal)
    t.sensor("DRLA_TransformSensorNode", object=eye)
    t.sensor("DRLA_DistanceSensorNode", object_a=agent, object_b=goal)
    t.action("left", 'MOVE', object=agent, vector=(-0.5, 0.0, 0.0))
    t.action("right", 'MOVE', object=agent, vector=(0.5, 0.0, 0.0))
    t.action("forward", 'MOVE', object=agent, vector=(0.0, 0.5, 0.0))
    t.done("DRLA_WithinDistanceNode", object_a=agent, object_b=goal, distance=0.6, reward=1.0)
    t.done("DRLA_OutOfBoundsNode", object=agent, bounds='BOX', box_min=(-3, -3, -1), box_max=(3, 3, 1), reward=-1.0)
    return t


def compiled(t):
    from drla_ext.addon.tree import compiler

    return compiler.compile_tree(t.b.tree, t.scene)


def datablocks():
    return {attr: sorted(x.name for x in getattr(bpy.data, attr)) for attr in ("objects", "collections", "meshes",
                                                                              "cameras", "materials", "actions")}


ACTIONS = np.random.default_rng(3).integers(0, 3, size=(40, 4))


def test_copies_observe_what_single_runs_with_the_same_seeds_observe(empty_scene):
    from drla_ext.addon.scene.scene_env import SceneEnv
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene

    scene = empty_scene
    t = chase_tree(scene, copies=4)
    spec = compiled(t).env
    singles = []
    for i in range(4):  # copy i alone, seeded 11 + i, the same actions, resetting when its episode ends
        with restored_scene(scene):
            env = SceneEnv(spec, scene)
            obs, _ = env.reset(seed=11 + i)
            seen, rewards, ends = [obs], [], []
            for a in ACTIONS[:, i]:
                obs, r, term, trunc, _ = env.step(int(a))
                seen.append(obs)
                rewards.append(r)
                ends.append(term or trunc)
                if term or trunc:
                    obs, _ = env.reset()
                    seen[-1] = (seen[-1], obs)
            singles.append((seen, rewards, ends))
    before = datablocks()
    with restored_scene(scene):
        venv = SceneVectorEnv(spec, scene)
        try:
            assert venv.num_envs == 4 and len(bpy.data.collections["DRLA Copies"].objects) == 3 * (3 + 1)
            obs, _ = venv.reset(seed=11)
            assert obs.shape == (4, 10) and venv.observation_space.shape == (4, 10)
            for i in range(4):
                np.testing.assert_allclose(obs[i], singles[i][0][0], atol=1e-4)
            episodes_ended = 0
            for step, a in enumerate(ACTIONS):
                obs, rewards, term, trunc, infos = venv.step(a)
                for i in range(4):
                    seen, single_rewards, single_ends = singles[i]
                    expected = seen[step + 1]
                    assert rewards[i] == single_rewards[step] and (term[i] or trunc[i]) == single_ends[step]
                    if isinstance(expected, tuple):  # the episode ended: final obs kept, the next one begun
                        assert infos["_final_obs"][i]
                        np.testing.assert_allclose(infos["final_obs"][i], expected[0], atol=1e-4)
                        np.testing.assert_allclose(obs[i], expected[1], atol=1e-4)
                        episodes_ended += 1
                    else:
                        np.testing.assert_allclose(obs[i], expected, atol=1e-4)
            assert episodes_ended >= 4  # the copies ended and restarted on their own
        finally:
            venv.close()
    assert datablocks() == before  # every copy, empty and the collection are gone


def test_copies_stand_apart_and_actions_reach_their_own_copy(empty_scene):
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene

    scene = empty_scene
    t = chase_tree(scene, copies=3)
    with restored_scene(scene):
        venv = SceneVectorEnv(compiled(t).env, scene)
        try:
            venv.reset(seed=0)
            agents = [scene.objects["Agent"], scene.objects["Agent [1]"], scene.objects["Agent [2]"]]
            start = [ob.matrix_world.translation.copy() for ob in agents]
            assert (start[1] - start[0]).length >= venv.spacing - 1e-3  # apart by the spacing at least
            _, _, term, trunc, _ = venv.step(np.array([1, 0, 2]))  # right, left, forward
            moved = [tuple(ob.matrix_world.translation - s) for ob, s in zip(agents, start)]
            expected = [(0.5, 0, 0), (-0.5, 0, 0), (0, 0.5, 0)]
            ran_on = ~(term | trunc)  # a copy that reached its goal was put back at its start at once
            assert ran_on.sum() >= 2
            np.testing.assert_allclose(np.array(moved)[ran_on], np.array(expected)[ran_on], atol=1e-5)
        finally:
            venv.close()


def test_an_error_midway_leaves_nothing_behind(empty_scene):
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene

    scene = empty_scene
    t = chase_tree(scene, copies=4)
    spec = compiled(t).env
    agent = scene.objects["Agent"]
    before = datablocks()
    place = tuple(agent.matrix_world.translation)
    with pytest.raises(ValueError), restored_scene(scene):
        venv = SceneVectorEnv(spec, scene)
        try:
            venv.reset(seed=0)
            venv.step(np.array([0, 1, 2, 0]))
            raise ValueError("the user's property went NaN")
        finally:
            venv.close()
    assert datablocks() == before
    assert tuple(agent.matrix_world.translation) == place


def test_a_rigid_body_environment_says_a_dqn_run_cannot_copy_it(empty_scene):
    from drla_ext.addon.scene.copies import CopyError
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv

    scene = empty_scene
    t = chase_tree(scene, copies=2)
    agent = scene.objects["Agent"]
    bpy.context.view_layer.objects.active = agent
    bpy.ops.rigidbody.object_add()
    before = datablocks()
    with pytest.raises(CopyError, match="'Agent' is a rigid body: copies of a physics scene restart together at "
                                        "the start frame, which only an Evolution Agent can use"):
        SceneVectorEnv(compiled(t).env, scene)
    assert datablocks() == before


def test_tank_copies_see_what_the_single_tank_sees(ext):
    """Camera pixels: each copy's camera draws its own copy only, so copy i's pictures are the single
    tank's with seed s + i, step after step (the copies stand 100+ m apart, far beyond each other)."""
    from pathlib import Path

    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.scene_env import SceneEnv
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.specs import CompiledTree
    from drla_ext.addon.tree import compiler

    bpy.ops.wm.open_mainfile(filepath=str(Path(__file__).resolve().parents[2] / "scenes" / "tank" / "tank.blend"))
    scene = bpy.context.scene
    spec = compiler.compile_tree(bpy.data.node_groups["Tank"], scene).env
    actions = np.random.default_rng(5).integers(0, len(spec.actions), size=(12, 3))
    singles = []
    for i in range(3):
        with restored_scene(scene):
            env = SceneEnv(spec, scene)
            try:
                frames = [env.reset(seed=20 + i)[0]]
                for a in actions[:, i]:
                    obs, _, term, trunc, _ = env.step(int(a))
                    frames.append(env.reset()[0] if term or trunc else obs)
            finally:
                env.close()
        singles.append(np.array(frames))
    assert singles[0].std() > 0  # the pictures show something
    spec.copies = 3
    with restored_scene(scene):
        venv = build.build_env(CompiledTree("Tank", spec), scene)
        try:
            seen = [venv.reset(seed=20)[0]]
            for a in actions:
                seen.append(venv.step(a)[0])
        finally:
            venv.close()
    seen = np.array(seen)
    for i in range(3):
        np.testing.assert_array_equal(seen[:, i], singles[i])


def test_scene_copies_pass_the_vector_env_check(empty_scene):
    """drla_core's check_vector_env on 3 copies of the Reach example: spaces, autoreset, per-copy seeding,
    independence (copies given their seeds and actions in reverse order give the traces in reverse, to float32
    world-space precision)."""
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.ui import examples
    from drla_ext.drla_core.base.vector_env import check_vector_env

    from drla_ext.addon.tree import compiler

    scene = empty_scene
    spec = compiler.compile_tree(examples.build_transform_tree(scene), scene).env
    with restored_scene(scene):
        venv = SceneVectorEnv(spec, scene, 3)
        try:
            check_vector_env(venv, steps=60, atol=1e-4)  # float32 world space, copies 100+ m apart
        finally:
            venv.close()


def test_a_team_scene_passes_the_parallel_env_check(empty_scene):
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler
    from drla_ext.addon.ui import examples
    from drla_ext.drla_core.rl.multi_agent import check_parallel_env

    scene = empty_scene
    team = compiler.compile_tree(examples.build_chase_tree(scene), scene)
    with restored_scene(scene):
        env = build.build_env(team, scene)
        try:
            check_parallel_env(env, steps=80)
        finally:
            env.close()


def test_the_panel_trains_with_copies_shows_them_and_removes_them(empty_scene, tmp_path):
    """Train from the panel's session on 4 copies of the Reach example: the sidebar's figures name the
    copies while it runs, the model is stored, and afterwards the file holds what it held before."""
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.ui import examples

    scene = empty_scene
    tree = examples.build_transform_tree(scene, total_steps=400)
    tree.nodes["Environment"].copies = 4
    bpy.context.view_layer.update()  # world matrices of the objects the example just placed
    before = datablocks()
    places = {ob.name: tuple(ob.matrix_world.translation) for ob in scene.objects}
    sess = TrainSession(scene, tree, output_dir=str(tmp_path)).start()
    # 3 copies of Agent and Goal and 1 more for the Trainer's evaluations, each under its holder empty
    assert len(bpy.data.collections["DRLA Copies"].all_objects) == 4 * 2 + 4
    sess.tick(0.2)
    assert "Copies\t4" in scene.drla.status
    sess.run_blocking()
    assert sess.state == "DONE", scene.drla.error
    assert sess.steps >= 400 and "Trained" in sess.message
    after = datablocks()
    assert after == before  # the stored model is a text; no object, collection or mesh left
    assert {ob.name: tuple(ob.matrix_world.translation) for ob in scene.objects} == places
