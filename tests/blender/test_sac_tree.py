"""The SAC Agent node on the rigid-body cart-pole (scenes/cartpole_rb, a continuous Motor action): it compiles to
its settings, trains in Blender headless through the panel's TrainSession (the user's scene bit-exact afterwards),
its stored model is the deterministic policy and plays; on a set of actions it says why on the node. The shipped
scenes/cartpole_rb/cartpole_rb_sac.blend is what its build script builds, and the CLI trains, resumes and plays it."""

import numpy as np
import pytest

from test_snapshot import full_dump

bpy = pytest.importorskip("bpy")

import tree_cases  # noqa: E402

SAC_BLEND = tree_cases.CARTPOLE_RB / "cartpole_rb_sac.blend"


@pytest.fixture(scope="module")
def builder(ext):
    return tree_cases.cartpole_builder()


@pytest.fixture
def sac_cartpole(builder):
    """The cart-pole scene, its tree's Evolution Agent replaced by a SAC Agent (the same Network linked)."""
    scene = builder.build_scene()
    tree = builder.build_tree(scene)
    evolution = next(n for n in tree.nodes if n.bl_idname == "DRLA_EvolutionAgentNode")
    tree.nodes.remove(evolution)
    agent = tree.nodes.new("DRLA_SACAgentNode")
    agent.learning_rate, agent.init_temperature = 3e-3, 0.5
    replay = tree.nodes.new("DRLA_ReplayMemoryNode")
    replay.capacity, replay.batch_size, replay.learning_starts = 5000, 32, 100
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_TrainerNode")
    trainer.total_steps, trainer.eval_interval = 300, 0
    tree.links.new(tree.nodes["Network"].outputs[0], agent.inputs["Network"])
    tree.links.new(replay.outputs[0], agent.inputs["Replay"])
    tree.links.new(agent.outputs[0], trainer.inputs["Agent"])
    yield scene, tree, agent
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)


def test_the_sac_node_compiles_to_its_settings(sac_cartpole):
    from drla_ext.addon.runs import build, kinds
    from drla_ext.addon.tree import compiler

    scene, tree, _ = sac_cartpole
    compiled = compiler.compile_tree(tree, scene)
    assert compiled.agent.kind == "sac" and kinds.of(compiled) is kinds.SAC and kinds.of_tree(tree) is kinds.SAC
    config = build.sac_config_of(compiled.agent, 300)
    assert (config.learning_rate, config.init_temperature, config.batch_size, config.buffer_size,
            config.learning_starts, config.total_timesteps) == pytest.approx((3e-3, 0.5, 32, 5000, 100, 300))
    assert [(h.size, h.activation) for h in config.hidden] == [(8, "tanh")]


def test_sac_trains_the_rigid_body_cart_pole_and_plays_its_model(sac_cartpole):
    from drla_ext.addon.runs import kinds, model_store
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.tree import compiler
    from drla_ext.drla_core.rl.sac import SACAgent

    scene, tree, _ = sac_cartpole
    before = full_dump(scene)
    session = TrainSession(scene, tree, seed=0).start()
    while session.tick(1.0):
        pass
    assert session.state == "DONE", session.message
    assert full_dump(scene) == before
    agent = session.job.agent
    assert isinstance(agent, SACAgent) and agent.n_updates == 200 and agent.temperature != 0.5
    assert np.all(np.isfinite(agent.actor.params))
    model = model_store.load_stored_model(tree)
    assert model.kind == "mlp" and model.meta["agent"] == "sac" and model.network.output_activation == "tanh"
    assert kinds.SAC.makes(model) and not kinds.DQN.makes(model)
    obs = np.random.default_rng(0).uniform(-1, 1, (5, model.network.input_size)).astype(np.float32)
    assert np.allclose(model.act(obs), agent.predict(obs), atol=1e-6)
    text = kinds.SAC.evaluate(scene, compiler.compile_tree(tree, scene), model, 1, 0, None)
    assert "mean return" in text, text
    assert full_dump(scene) == before


def test_a_set_of_actions_is_refused_on_the_node(sac_cartpole):
    from drla_ext.addon.specs import CompileError
    from drla_ext.addon.tree import compiler

    scene, tree, agent = sac_cartpole
    tree.nodes.remove(next(n for n in tree.nodes if n.bl_idname == "DRLA_MotorActionNode"))
    discrete = tree.nodes.new("DRLA_ActionNode")
    discrete.kind, discrete.action_name = 'WAIT', "wait"
    action_set = next(n for n in tree.nodes if n.bl_idname == "DRLA_ActionSetNode")
    tree.links.new(discrete.outputs[0], action_set.inputs[0])
    with pytest.raises(CompileError):
        compiler.compile_tree(tree, scene)
    assert agent.drla_error.startswith("a SAC agent needs continuous actions (a Motor Action or Bone Rotation node)")


def test_rebuild_matches_committed_sac_blend(builder, tmp_path):
    committed = tree_cases.assert_rebuild_matches(builder, tmp_path, SAC_BLEND, " --sac", sac=True)
    assert list(committed["node_trees"]) == ["CartPole SAC"]


def test_cli_trains_resumes_and_plays_the_sac_scene(tmp_path):
    tree_cases.assert_cli_trains_resumes_and_plays(SAC_BLEND, "SAC on CartPole SAC", "sac", tmp_path)


@pytest.mark.slow
def test_cli_sac_run_killed_mid_episode_resumes_bit_exact(tmp_path):
    """SIGKILL after a checkpoint taken mid-episode, then --resume: the scene's episode is played again from its
    start and the run ends with the uninterrupted run's model file."""
    tree_cases.assert_sigkilled_run_resumes_bit_exact(SAC_BLEND, tmp_path)
