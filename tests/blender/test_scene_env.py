"""SceneEnv over real scenes: the Gymnasium contract, resets, physics, and a short DQN run (speed:
bench/scene_env.py)."""

import math
import time
from pathlib import Path

import bpy
import numpy as np
import pytest

TANK_BLEND = Path(__file__).resolve().parents[2] / "scenes" / "tank" / "tank.blend"


def reach_env(scene, **env_props):
    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler
    from drla_ext.addon.ui import examples

    tree = examples.build_transform_tree(scene)
    for key, value in env_props.items():
        setattr(tree.nodes["Environment"], key, value)
    compiled = compiler.compile_tree(tree, scene)
    return build.build_env(compiled, scene), compiled


def test_check_env_transform_scene(empty_scene):
    from drla_ext.drla_core.base.env import check_env
    from drla_ext.drla_core.base.spaces import Box, Discrete

    env, _ = reach_env(empty_scene)
    check_env(env, steps=200)
    # the agent's location (unbounded), then its distance to the goal (never below 0): the declared bounds
    assert env.observation_space == Box([-np.inf, -np.inf, -np.inf, 0.0], np.inf, (4,))
    assert env.action_space == Discrete(5, ["right", "left", "front", "back", "wait"])
    assert env.task_metric is None


def test_reset_restores_start_and_seeds_randomisation(empty_scene):
    env, _ = reach_env(empty_scene)
    agent = empty_scene.objects["Agent"]
    obs_a, _ = env.reset(seed=3)
    start = tuple(agent.location)
    for _ in range(5):
        env.step(0)
    assert tuple(agent.location) != start
    assert empty_scene.frame_current == empty_scene.frame_start + 5
    obs_b, _ = env.reset(seed=3)
    assert tuple(agent.location) == start and np.array_equal(obs_a, obs_b)
    assert empty_scene.frame_current == empty_scene.frame_start
    obs_c, _ = env.reset(seed=4)
    assert not np.array_equal(obs_a, obs_c)


def test_rewards_and_endings(empty_scene):
    from drla_ext.addon.ui import examples

    agent, goal = examples.build_transform_scene(empty_scene)
    agent.location, goal.location = (0, 0, 0), (2, 0, 0)
    env, _ = reach_env(empty_scene, random_object_1=None, random_object_2=None)
    obs, _ = env.reset(seed=0)
    np.testing.assert_allclose(obs, [0.4, 0, 0, 0.4], atol=1e-6)  # goal relative to agent, distance; scale 0.2
    _, r, term, trunc, _ = env.step(0)  # right: 0.5 closer, minus the step cost
    assert r == pytest.approx(0.5 - 0.01) and not term and not trunc
    env.step(0)
    _, r, term, _, _ = env.step(0)  # distance 0.5: within distance -> +1, terminated
    assert term and r == pytest.approx(0.5 - 0.01 + 1.0)
    env.reset()
    for _ in range(12):
        _, r, term, _, _ = env.step(1)  # left until out of [-5, 5]
        if term:
            break
    assert term and r == pytest.approx(-0.5 - 0.01 - 1.0)
    env.reset()
    ends = [env.step(4)[2:4] for _ in range(50)]
    assert ends[-1] == (False, True) and not any(any(e) for e in ends[:-1])


def test_rigid_body_physics_steps_and_resets(empty_scene):
    """Frames advance the simulation past the default 250-frame cache, and reset replays it."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler

    scene = empty_scene
    bpy.ops.rigidbody.world_add()
    bpy.ops.mesh.primitive_cube_add(location=(0, 0, 50))
    bpy.ops.rigidbody.object_add(type='ACTIVE')
    cube = bpy.context.active_object
    cube.name = "Box"
    tree = bpy.data.node_groups.new("Fall", "DRLA_NodeTree")
    sensor = tree.nodes.new("DRLA_TransformSensorNode")
    sensor.object = cube
    state, actions, wait, env_node = (tree.nodes.new(i) for i in ("DRLA_StateNode", "DRLA_ActionSetNode",
                                                                    "DRLA_ActionNode", "DRLA_EnvironmentNode"))
    wait.kind, wait.action_name = 'WAIT', "wait"
    env_node.frames_per_step, env_node.max_steps = 10, 30
    tree.links.new(sensor.outputs[0], state.inputs[0])
    tree.links.new(wait.outputs[0], actions.inputs[0])
    tree.links.new(state.outputs[0], env_node.inputs["State"])
    tree.links.new(actions.outputs[0], env_node.inputs["Actions"])
    env = build.build_env(compiler.compile_tree(tree, scene), scene)
    assert scene.rigidbody_world.point_cache.frame_end >= 1000
    obs0, _ = env.reset(seed=0)
    zs = [env.step(0)[0][2] for _ in range(30)]  # 300 frames: past the default cache end of 250
    assert obs0[2] == pytest.approx(50.0)
    assert zs[0] < 50 and zs[-1] < zs[-5] < zs[0]
    obs1, _ = env.reset()
    assert np.array_equal(obs0, obs1)
    assert env.step(0)[0][2] == zs[0]


@pytest.mark.skipif(not TANK_BLEND.exists(), reason="scenes/tank/tank.blend not built yet")
def test_tank_scene_env(ext):
    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler
    from drla_ext.addon.ui import examples
    from drla_ext.drla_core.base.env import check_env

    bpy.ops.wm.open_mainfile(filepath=str(TANK_BLEND))
    scene = bpy.context.scene
    tree = bpy.data.node_groups.get("Tank") or examples.build_tank_tree(scene)
    compiled = compiler.compile_tree(tree, scene)
    env = build.build_env(compiled, scene)
    assert env.action_space.names == list(examples.TANK_ACTIONS)
    assert env.task_metric == "hit"
    check_env(env, steps=100)
    # Line up under the target with the cannon level, and fire: a hit, +1, the target respawns.
    tank_a, tank_b = scene.objects["TankA"], scene.objects["TankB"]
    env.reset(seed=1)
    names = env.action_space.names
    steps = round((tank_b.location.x - tank_a.location.x) / 0.5)
    for _ in range(abs(steps)):
        env.step(names.index("move_right" if steps > 0 else "move_left"))
    before = tuple(tank_b.location)
    _, r, _, _, info = env.step(names.index("fire"))
    assert info == {"hit": 1} and r == 1.0 and tank_a["score"] == 1
    assert tuple(tank_b.location) != before
    env.step(names.index("canon_up"))
    env.step(names.index("canon_up"))
    assert scene.objects["Cannon"].rotation_euler.x == pytest.approx(math.radians(10))
    env.step(names.index("canon_up"))  # clamped at +10 degrees
    assert scene.objects["Cannon"].rotation_euler.x == pytest.approx(math.radians(10))
    env.reset()
    assert tank_a["score"] == 0 and scene.objects["Cannon"].rotation_euler.x == 0
    env.close()


def test_short_dqn_run_beats_random(empty_scene):
    from drla_ext.addon.runs import build
    from drla_ext.drla_core.rl.train import evaluate

    env, compiled = reach_env(empty_scene)
    random_policy = np.random.default_rng(0)
    baseline = evaluate(env, lambda obs: int(random_policy.integers(5)), episodes=20, seed=123).mean_return
    agent = build.build_agent(compiled, env, total_steps=6000)
    start = time.perf_counter()
    run = build.build_run(compiled, env, agent, total_steps=6000).run()
    print(f"reach: 6000 steps in {time.perf_counter() - start:.1f} s")
    assert run.steps == 6000
    trained = evaluate(env, agent, episodes=20, seed=123).mean_return
    print(f"reach: random {baseline:.2f} -> trained {trained:.2f}")
    assert trained > baseline + 1.0


def test_the_observation_space_declares_what_the_sensors_know(empty_scene):
    """Pixels and rays in 0..1, distances from 0, times each node's Scale, within the State's Clip."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler
    from test_sensors_actions import Tree, cube, empty, with_wait

    scene = empty_scene
    eye, box = empty(scene, "Eye"), cube(scene, "Box", (0, 3, 0))
    t = with_wait(Tree(scene))
    t.sensor("DRLA_RaySensorNode", object=eye, rays=2, scale=-2.0)
    t.sensor("DRLA_DistanceSensorNode", object_a=eye, object_b=box, scale=0.5)
    t.sensor("DRLA_TransformSensorNode", object=box)
    env = build.build_env(compiler.compile_tree(t.b.tree, scene), scene)
    space = env.observation_space
    np.testing.assert_array_equal(space.low, [-2, -2, 0, -np.inf, -np.inf, -np.inf])
    np.testing.assert_array_equal(space.high, [0, 0, np.inf, np.inf, np.inf, np.inf])
    obs, _ = env.reset(seed=0)
    assert space.contains(obs)
    t.state.clip = 1.5
    space = build.build_env(compiler.compile_tree(t.b.tree, scene), scene).observation_space
    np.testing.assert_array_equal(space.low, [-1.5, -1.5, 0, -1.5, -1.5, -1.5])
    np.testing.assert_array_equal(space.high, [0, 0, 1.5, 1.5, 1.5, 1.5])
