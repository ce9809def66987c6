"""The Evolution Agent and Novelty nodes: compiled settings, errors drawn on the node, an evolution run
on a real scene through the one assembler and the panel's TrainSession (a champion better than
generation 0, the scene bit-exact afterwards), Play from the stored champion, and the live curve fed
from the generations' history."""

import bpy
import numpy as np
import pytest

from test_snapshot import full_dump as fingerprint


def reach_tree(scene, **agent_props):
    """The Reach example with an Evolution Agent in place of the DQN agent."""
    from drla_ext.addon.ui import examples

    tree = examples.build_transform_tree(scene)
    for node in [n for n in tree.nodes if n.bl_idname in {"DRLA_DQNAgentNode", "DRLA_EpsilonNode",
                                                            "DRLA_ReplayNode", "DRLA_NetworkNode",
                                                            "DRLA_HiddenLayerNode"}]:
        tree.nodes.remove(node)
    agent = tree.nodes.new("DRLA_EvolutionAgentNode")
    for key, value in agent_props.items():
        setattr(agent, key, value)
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_TrainerNode")
    tree.links.new(agent.outputs[0], trainer.inputs["Agent"])
    return tree, agent


def test_the_evolution_node_compiles_to_its_settings(empty_scene):
    from drla_ext.addon.runs import build, kinds
    from drla_ext.addon.tree import compiler

    tree, agent = reach_tree(empty_scene, population_size=12, generations=7, selection='RANK',
                             crossover='ONE_POINT', mutation_rate=0.2, mutation_sigma=0.3, elites=1, episodes=2)
    net = tree.nodes.new("DRLA_NetworkNode")
    layer = tree.nodes.new("DRLA_HiddenLayerNode")
    layer.size, layer.activation = 8, 'TANH'
    tree.links.new(layer.outputs[0], net.inputs["Layers"])
    tree.links.new(net.outputs[0], agent.inputs["Network"])
    novelty = tree.nodes.new("DRLA_NoveltyNode")
    novelty.behavior, novelty.sensor, novelty.k, novelty.fitness_weight = 'SENSOR', "Distance Sensor", 4, 0.5
    tree.links.new(novelty.outputs[0], agent.inputs["Novelty"])
    compiled = compiler.compile_tree(tree, empty_scene)
    assert compiled.agent.kind == "evolution" and kinds.of(compiled) is kinds.EVOLUTION
    assert kinds.of_tree(tree).unit == "generation"  # the sidebar's progress bar counts generations
    assert compiled.agent.hidden == [(8, "tanh")]
    assert build.total_steps_of(compiled) == 7  # generations, not the Trainer's steps
    config = build.evolution_config(compiled, 7)
    assert (config.generations, config.episodes, config.method) == (7, 2, "ga")
    ga = config.ga
    assert (ga.population_size, ga.selection, ga.crossover, ga.elites) == (12, "rank", "one_point", 1)
    assert (ga.mutation_rate, ga.mutation_sigma) == pytest.approx((0.2, 0.3))
    assert config.novelty.k == 4 and config.novelty.fitness_weight == 0.5
    sensors = compiled.env.state.sensors
    start = sum(s.size for s in sensors[:1])
    assert compiled.agent.config["novelty"]["behavior_start"] == start  # the Distance Sensor's place
    assert compiled.agent.config["novelty"]["behavior_end"] == start + 1


def test_a_broken_evolution_tree_gets_its_message_on_the_node(empty_scene):
    from drla_ext.addon.specs import CompileError
    from drla_ext.addon.tree import compiler

    tree, agent = reach_tree(empty_scene, population_size=4, elites=4)
    novelty = tree.nodes.new("DRLA_NoveltyNode")
    novelty.behavior, novelty.sensor = 'SENSOR', "No Such Sensor"
    tree.links.new(novelty.outputs[0], agent.inputs["Novelty"])
    with pytest.raises(CompileError):
        compiler.compile_tree(tree, empty_scene)
    assert agent.drla_error == "Elites (4) must be fewer than the Population (4)"
    assert novelty.drla_error == "no sensor node named 'No Such Sensor' is linked into the State"

    agent.elites = 1
    tree.nodes.remove(novelty)
    net = tree.nodes.new("DRLA_NetworkNode")
    layer = tree.nodes.new("DRLA_HiddenLayerNode")
    tree.links.new(layer.outputs[0], net.inputs["Layers"])
    tree.links.new(net.outputs[0], agent.inputs["Network"])
    net.grow = True  # growth is a DQN run's: said on the Network rather than silently ignored
    with pytest.raises(CompileError):
        compiler.compile_tree(tree, empty_scene)
    assert net.drla_error.startswith("Grow on Plateau grows a DQN Agent's network")
    net.grow = False
    compiler.compile_tree(tree, empty_scene)


def test_evolution_trains_in_the_scene_and_restores_it(empty_scene):
    """Through the panel's session: a champion clearly better than generation 0's best, the scene
    bit-exact afterwards, the model stored for Play, the live curve reading best fitness per generation."""
    from drla_ext.addon.runs import kinds
    from drla_ext.addon.runs.play import PlaySession
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.ui import live_curve

    scene = empty_scene
    tree, _agent = reach_tree(scene, population_size=16, generations=6, episodes=2)
    bpy.context.view_layer.update()  # the example placed the goal: its matrix_world follows on update
    before = fingerprint(scene)
    session = TrainSession(scene, tree, seed=3).start()
    assert session.agent_kind is kinds.EVOLUTION
    while session.tick(0.5):
        pass
    assert session.state == "DONE", session.message
    assert fingerprint(scene) == before
    job = session.job
    h = job.history
    print("best per generation", h["best"])
    assert job.steps == 6 and len(h["best"]) == 6
    assert max(h["best"][1:]) > h["best"][0] + 0.5, h["best"]  # evolution, not luck: a clearly better champion
    assert job.champion_fitness >= max(h["best"])
    assert "champion fitness" in session.message
    raw, _ = live_curve.series(h, 'RETURN')
    np.testing.assert_array_equal(raw, h["best"])
    assert live_curve.title(h, 'RETURN') == "Best fitness per generation"
    assert live_curve.x_values(h, 'RETURN', 6)[1] == "generations"
    play = PlaySession(scene, tree, seed=0).start()
    play.run_episode(max_steps=100)
    assert play.episodes == 1
    play.stop()
    assert fingerprint(scene) == before


def test_evolution_refuses_dqn_flags(empty_scene):
    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler

    tree, _ = reach_tree(empty_scene, population_size=4, generations=1)
    compiled = compiler.compile_tree(tree, empty_scene)
    with pytest.raises(build.BuildError, match="do not apply to an Evolution Agent"):
        build.build_job(compiled, None, overrides={"learning_rate": 0.1})
    bpy.data.node_groups.remove(tree)


def _evolve(compiled, scene, copies: int) -> tuple[dict, int]:
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene

    compiled.env.copies = copies
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            job = build.build_job(compiled, env, seed=3)
            while not job.done:
                job.advance()
            return job.history, job.env_steps
        finally:
            env.close()


def test_a_population_evaluated_on_scene_copies_scores_as_on_the_scene_alone(empty_scene):
    """Four copies of the Reach scene play four individuals' episodes at once, each episode with its own seed:
    a generation's fitness is what the scene alone gives one individual after another (to float32 world-space
    precision: the copies stand 100 m apart; later generations may part where a network's saturated outputs
    tie), every copy is gone afterwards and the scene is exactly as before."""
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler

    tree, _ = reach_tree(empty_scene, population_size=10, generations=1, episodes=3)
    bpy.context.view_layer.update()  # the example placed the goal: its matrix_world follows on update
    before = fingerprint(empty_scene)
    compiled = compiler.compile_tree(tree, empty_scene)
    alone, alone_steps = _evolve(compiled, empty_scene, 1)
    assert fingerprint(empty_scene) == before
    on_copies, copies_steps = _evolve(compiled, empty_scene, 4)  # 30 episodes on 4 copies: some copies idle
    assert fingerprint(empty_scene) == before  # every copy gone
    assert copies_steps == alone_steps > 0
    np.testing.assert_allclose(on_copies["best"], alone["best"], atol=1e-5)
    np.testing.assert_allclose(on_copies["mean"], alone["mean"], atol=1e-5)
    compiled.env.copies = 64  # more copies than episodes: the idle ones play along
    assert _evolve(compiled, empty_scene, 64)[1] == alone_steps
    compiled.env.copies = 4
    env = build.build_env(compiled, empty_scene)
    try:
        assert isinstance(env, SceneVectorEnv) and env.eval_env is None  # no spare copy: evolution needs none
    finally:
        env.close()
    assert fingerprint(empty_scene) == before
    bpy.data.node_groups.remove(tree)


def test_neat_with_novelty_runs_in_the_scene(empty_scene):
    """NEAT and a Novelty node through the same assembler: novelty per generation, the archive filling,
    the champion a graph network that plays in the scene."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler
    from drla_ext.drla_core.nn.graph_net import GraphNetwork
    from drla_ext.drla_core.rl.train import evaluate

    scene = empty_scene
    tree, agent = reach_tree(scene, method='NEAT', population_size=12, generations=3)
    novelty = tree.nodes.new("DRLA_NoveltyNode")
    novelty.values, novelty.k, novelty.fitness_weight = 3, 5, 0.3
    tree.links.new(novelty.outputs[0], agent.inputs["Novelty"])
    compiled = compiler.compile_tree(tree, scene)
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        job = build.build_job(compiled, env, seed=2)
        job.advance()
        assert job.steps == 3 and all(v is not None and v > 0 for v in job.history["novelty"])
        assert job.archive.items and len(job.archive.items[0]) == 3  # the first 3 observation values
        model = job.to_model({"tree": tree.name})
        assert isinstance(model.network, GraphNetwork)
        result = evaluate(env, lambda obs: model.act(obs), episodes=2, seed=0)
        assert len(result.returns) == 2
        env.close()
