"""Actions with Amount (issue 26): a Move, Rotate, Rotate Bone or property Action whose size the agent picks in
[-1, 1], making the Action Set continuous; the scene comes back as it was; discrete and continuous never mix."""

import math

import numpy as np
import pytest

from test_sensors_actions import Tree, armature, cube, empty


def _continuous_tree(scene):
    agent = cube(scene, "Agent", (0.0, 0.0, 0.0), size=0.5)
    agent["fuel"] = 1.0
    t = Tree(scene, max_steps=5)
    t.sensor("DRLA_TransformSensorNode", object=agent, use_location=True, use_rotation=False)
    t.action("forward", 'MOVE', object=agent, vector=(2.0, 0.0, 0.0), amount=True, use_limits=True,
             limit_min=(-3.0, -3.0, -3.0), limit_max=(3.0, 3.0, 3.0))
    t.action("turn", 'ROTATE', object=agent, vector=(0.0, 0.0, 90.0), amount=True)
    t.action("burn", 'ADD_PROPERTY', object=agent, property="fuel", value=-0.5, amount=True)
    return t, agent


def test_amounts_scale_each_action_and_clip_to_one(empty_scene):
    t, agent = _continuous_tree(empty_scene)
    env = t.env()
    try:
        assert env.action_space.shape == (3,)
        assert float(env.action_space.low.min()) == -1.0 and float(env.action_space.high.max()) == 1.0
        env.reset(seed=0)
        obs, *_ = env.step(np.array([0.25, -0.5, 1.0], np.float32))
        assert agent.location.x == pytest.approx(0.5)
        assert obs[0] == pytest.approx(0.5)
        assert agent.rotation_euler.z == pytest.approx(math.radians(-45.0))
        assert agent["fuel"] == pytest.approx(0.5)
        env.step(np.array([4.0, 0.0, -2.0], np.float32))  # beyond [-1, 1]: clipped to 1 and -1
        assert agent.location.x == pytest.approx(2.5)
        assert agent["fuel"] == pytest.approx(1.0)
        env.step(np.array([1.0, 0.0, 0.0], np.float32))  # the Move's Limits still hold
        assert agent.location.x == pytest.approx(3.0)
        env.reset(seed=1)  # a reset puts back what the actions touched
        assert tuple(agent.location) == (0.0, 0.0, 0.0) and agent.rotation_euler.z == 0.0
        assert agent["fuel"] == 1.0
    finally:
        env.close()


def test_a_bone_rotation_with_amount(empty_scene):
    rig = armature(empty_scene)
    t = Tree(empty_scene)
    t.sensor("DRLA_TransformSensorNode", object=rig, use_location=True, use_rotation=False)
    t.action("bend", 'BONE_ROTATE', object=rig, bone="Upper", vector=(60.0, 0.0, 0.0), amount=True)
    env = t.env()
    try:
        env.reset(seed=0)
        env.step(np.array([0.5], np.float32))
        angle = rig.pose.bones["Upper"].rotation_quaternion.to_euler('XYZ').x
        assert angle == pytest.approx(math.radians(30.0), abs=1e-6)
    finally:
        env.close()


def test_a_set_mixing_discrete_and_continuous_actions_is_refused_on_its_node(empty_scene):
    from drla_ext.addon.tree import compiler

    agent = empty(empty_scene, "Agent")
    t = Tree(empty_scene)
    t.sensor("DRLA_TransformSensorNode", object=agent, use_location=True, use_rotation=False)
    t.action("slide", 'MOVE', object=agent, vector=(1.0, 0.0, 0.0), amount=True)
    t.action("wait", 'WAIT')
    with pytest.raises(compiler.CompileError) as err:
        compiler.compile_tree(t.b.tree, empty_scene)
    assert ("Motor actions and actions with Amount are continuous, and 'wait' is discrete: an Action Set holds "
            "either kind, not both") in str(err.value)


def test_copies_move_by_their_own_amounts(empty_scene):
    """Scene copies with continuous moves: each copy moves its own agent by its own amount."""
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    t, agent = _continuous_tree(empty_scene)
    t.env_node.copies = 3
    spec = compiler.compile_tree(t.b.tree, empty_scene).env
    with restored_scene(empty_scene):
        venv = SceneVectorEnv(spec, empty_scene)
        try:
            venv.reset(seed=0)
            obs, *_ = venv.step(np.array([[0.5, 0, 0], [-0.5, 0, 0], [0.0, 0, 0]], np.float32))
            np.testing.assert_allclose(obs[:, 0], [1.0, -1.0, 0.0], atol=1e-6)
        finally:
            venv.close()
    assert tuple(agent.location) == (0.0, 0.0, 0.0)
    assert [ob.name for ob in empty_scene.objects] == ["Agent"]


def test_an_evolution_agent_learns_the_reach_with_continuous_moves(empty_scene):
    """The Reach example with its Move actions turned into two with Amount (x and y): an Evolution Agent
    trains through the panel's session to a clearly better champion, Play plays it, and the scene is as before."""
    import bpy

    from drla_ext.addon.runs.play import PlaySession
    from drla_ext.addon.runs.train import TrainSession
    from test_evolution_tree import reach_tree
    from test_snapshot import full_dump as fingerprint

    tree, _agent = reach_tree(empty_scene, population_size=16, generations=6, episodes=2)
    moves = [n for n in tree.nodes if n.bl_idname == "DRLA_ActionNode" and n.kind == 'MOVE']
    assert len(moves) == 4
    for node in [n for n in tree.nodes if n.bl_idname == "DRLA_ActionNode" and n not in moves[:2]]:
        tree.nodes.remove(node)  # the other moves and Wait
    for node, axis in zip(moves[:2], ((0.5, 0.0, 0.0), (0.0, 0.5, 0.0))):
        node.vector, node.amount = axis, True
    bpy.context.view_layer.update()
    before = fingerprint(empty_scene)
    session = TrainSession(empty_scene, tree, seed=3).start()
    while session.tick(0.5):
        pass
    assert session.state == "DONE", session.message
    best = session.job.history["best"]
    assert max(best[1:]) > best[0] + 0.5, best
    play = PlaySession(empty_scene, tree, seed=0).start()
    play.run_episode(max_steps=50)
    play.stop()
    assert fingerprint(empty_scene) == before
