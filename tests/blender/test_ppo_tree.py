"""The PPO Agent node (issue 26): on the rigid-body cart-pole (scenes/cartpole_rb, a continuous Motor action) it
compiles to its settings, trains in Blender headless through the panel's TrainSession (the user's scene bit-exact
afterwards), its stored model is the deterministic policy and plays; on a set of actions with Conditions it never
takes a disabled action (the masks come through the loop's ``info``); the Trainer's Demonstration is cloned first;
Grow on Plateau is refused on the node. The shipped scenes/cartpole_rb/cartpole_rb_ppo.blend is what its build
script builds, and the CLI trains, resumes and plays it."""

import numpy as np
import pytest

from test_snapshot import full_dump

bpy = pytest.importorskip("bpy")

import tree_cases  # noqa: E402

PPO_BLEND = tree_cases.CARTPOLE_RB / "cartpole_rb_ppo.blend"


@pytest.fixture(scope="module")
def builder(ext):
    return tree_cases.cartpole_builder()


@pytest.fixture
def ppo_cartpole(builder):
    """The cart-pole scene with its PPO tree (the Evolution Agent replaced by a PPO Agent, the Network linked),
    a short rollout and a run of 300 steps."""
    scene = builder.build_scene()
    tree = builder.build_ppo_tree(scene)
    agent = next(n for n in tree.nodes if n.bl_idname == "DRLA_PPOAgentNode")
    agent.n_steps, agent.batch_size, agent.n_epochs, agent.learning_rate = 50, 25, 2, 2e-3
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_TrainerNode")
    trainer.total_steps, trainer.eval_interval = 300, 0
    yield scene, tree, agent
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)


def test_the_ppo_node_compiles_to_its_settings(ppo_cartpole):
    from drla_ext.addon.runs import build, kinds
    from drla_ext.addon.tree import compiler

    scene, tree, _ = ppo_cartpole
    compiled = compiler.compile_tree(tree, scene)
    assert compiled.agent.kind == "ppo" and kinds.of(compiled) is kinds.PPO and kinds.of_tree(tree) is kinds.PPO
    config = build.ppo_config_of(compiled.agent, 300)
    assert (config.n_steps, config.batch_size, config.n_epochs, config.total_timesteps) == (50, 25, 2, 300)
    assert (config.learning_rate, config.gamma, config.gae_lambda, config.clip_range) == pytest.approx(
        (2e-3, 0.98, 0.8, 0.2))
    assert config.normalize_obs is True
    assert [(h.size, h.activation) for h in config.hidden] == [(8, "tanh")]  # the Network node's


def test_ppo_trains_the_rigid_body_cart_pole_and_plays_its_model(ppo_cartpole):
    from drla_ext.addon.runs import kinds, model_store
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.tree import compiler
    from drla_ext.drla_core.base.spaces import Box
    from drla_ext.drla_core.rl.ppo import PPOAgent

    scene, tree, _ = ppo_cartpole
    before = full_dump(scene)
    session = TrainSession(scene, tree, seed=0).start()
    while session.tick(1.0):
        pass
    assert session.state == "DONE", session.message
    assert full_dump(scene) == before
    agent = session.job.agent
    assert isinstance(agent, PPOAgent) and isinstance(agent.action_space, Box)
    assert agent.n_updates == 6 * 2 * 2  # 300 steps: 6 rollouts of 50, 2 epochs of 2 minibatches each
    assert np.all(np.isfinite(agent.actor.params)) and "Entropy" in session.job.status()
    model = model_store.load_stored_model(tree)
    assert model.kind == "mlp" and model.meta["agent"] == "ppo" and model.obs_norm is not None
    assert kinds.PPO.makes(model) and not kinds.SAC.makes(model) and not kinds.DQN.makes(model)
    obs = np.random.default_rng(0).uniform(-1, 1, (5, model.network.input_size)).astype(np.float32)
    assert np.allclose(model.act(obs), [agent.predict(o) for o in obs], atol=1e-6)
    text = kinds.PPO.evaluate(scene, compiler.compile_tree(tree, scene), model, 1, 0, None)
    assert "mean return" in text, text
    assert full_dump(scene) == before


class _Audit:
    """A scene env that counts the actions taken while the mask had them disabled."""

    def __init__(self, env):
        self.env, self.observation_space, self.action_space = env, env.observation_space, env.action_space
        self.mask, self.disabled, self.taken = None, 0, 0

    def __getattr__(self, name):  # the rest (task_metric, ...) is the scene env's
        return getattr(self.env, name)

    def reset(self, *, seed=None, options=None):
        obs, info = self.env.reset(seed=seed)
        self.mask = info["action_mask"]
        return obs, info

    def step(self, action):
        self.taken += 1
        self.disabled += int(self.mask[int(action)] == 0)
        out = self.env.step(action)
        self.mask = out[4]["action_mask"]
        return out

    def close(self):
        self.env.close()


def test_a_set_of_actions_trains_under_its_conditions(empty_scene):
    from test_scene_action_masks import FIRE, masked_tree

    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler
    from drla_ext.drla_core.base.spaces import Discrete

    t, _agent, _goal = masked_tree(empty_scene)
    ppo = t.b.node("DRLA_PPOAgentNode", n_steps=40, batch_size=20, n_epochs=2)
    trainer = t.b.node("DRLA_TrainerNode", total_steps=200, eval_interval=0)
    t.b.link(t.env_node, trainer, "Environment")
    t.b.link(ppo, trainer, "Agent")
    compiled = compiler.compile_tree(t.b.tree, empty_scene)
    assert compiled.agent.kind == "ppo"
    with restored_scene(empty_scene):
        env = _Audit(build.build_env(compiled, empty_scene))
        job = build.build_job(compiled, env, seed=0, total_steps=200)
        job.run()
        env.close()
    agent = job.agent
    assert isinstance(agent.action_space, Discrete) and agent.action_space.n == 5
    assert env.taken == 200 and env.disabled == 0 and agent.n_updates == 5 * 2 * 2
    assert agent.buf_masks is not None and not agent.buf_masks[:, :, FIRE].all()  # fire was disabled at times
    assert job.to_model().meta["action_mask"] is True


def test_scene_copies_train_one_rollout_for_all(empty_scene):
    """Two copies of the masked scene: one network call per step for both (a ``VectorTrainingRun``), each copy's
    mask in the rollout, and the spare copy evaluates."""
    from test_scene_action_masks import masked_tree

    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler
    from drla_ext.drla_core.rl.vector_train import VectorTrainingRun

    t, _agent, _goal = masked_tree(empty_scene)
    t.env_node.copies = 2
    ppo = t.b.node("DRLA_PPOAgentNode", n_steps=20, batch_size=20, n_epochs=1)
    trainer = t.b.node("DRLA_TrainerNode", total_steps=200, eval_interval=100, eval_episodes=1)
    t.b.link(t.env_node, trainer, "Environment")
    t.b.link(ppo, trainer, "Agent")
    compiled = compiler.compile_tree(t.b.tree, empty_scene)
    with restored_scene(empty_scene):
        env = build.build_env(compiled, empty_scene)
        try:
            job = build.build_job(compiled, env, seed=0, total_steps=200)
            job.run()
        finally:
            env.close()
    assert isinstance(job, VectorTrainingRun) and job.agent.num_envs == 2 and job.agent.n_updates == 5 * 2
    assert job.agent.buf_masks.shape == (20, 2, 5) and len(job.history.evals) == 2


def test_the_trainers_demonstration_is_cloned_first(ppo_cartpole, tmp_path):
    """A demonstration pushing the cart at +0.8 every step (640 steps): the PPO job's policy starts pushing (a fresh
    one's mean is near 0)."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler
    from drla_ext.drla_core.io.demos import Demonstration, save_demo

    scene, tree, _ = ppo_cartpole
    compiled = compiler.compile_tree(tree, scene)
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        obs, _ = env.reset(seed=0)
        rows, rewards, ends = [], [], []
        for _ in range(640):
            rows.append(obs)
            obs, reward, terminated, truncated, _ = env.step(np.array([0.8], np.float32))
            rewards.append(reward)
            ends.append(terminated or truncated)
            if terminated or truncated:
                obs, _ = env.reset()
        space, actions = env.observation_space, env.action_space
        env.close()
    n = len(rows)
    demo = Demonstration(space, actions, np.array(rows), np.full((n, 1), 0.8, np.float32), np.array(rewards),
                         np.array(ends), np.arange(n) == n - 1)
    save_demo(tmp_path / "push.npz", demo)

    def first_policy(demonstration):
        trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_TrainerNode")
        trainer.demonstration = demonstration
        compiled = compiler.compile_tree(tree, scene)
        with restored_scene(scene):
            env = build.build_env(compiled, scene)
            job = build.build_job(compiled, env, seed=0, total_steps=300)
            env.close()
        return np.array([job.agent.predict(o) for o in demo.obs])

    fresh, cloned = float(np.mean(first_policy(""))), float(np.mean(first_policy(str(tmp_path / "push.npz"))))
    assert abs(fresh) < 0.1 and cloned > 0.3  # cloned (20 epochs of 10 minibatches) towards +0.8


def test_grow_on_plateau_is_refused_on_the_network_node(ppo_cartpole):
    from drla_ext.addon.specs import CompileError
    from drla_ext.addon.tree import compiler

    scene, tree, _ = ppo_cartpole
    tree.nodes["Network"].grow = True
    with pytest.raises(CompileError):
        compiler.compile_tree(tree, scene)
    assert tree.nodes["Network"].drla_error.startswith("Grow on Plateau grows a DQN Agent's network; a PPO Agent's")


def test_rebuild_matches_committed_ppo_blend(builder, tmp_path):
    committed = tree_cases.assert_rebuild_matches(builder, tmp_path, PPO_BLEND, " --ppo", ppo=True)
    assert list(committed["node_trees"]) == ["CartPole PPO"]


def test_cli_trains_resumes_and_plays_the_ppo_scene(tmp_path):
    tree_cases.assert_cli_trains_resumes_and_plays(PPO_BLEND, "PPO on CartPole PPO", "ppo", tmp_path)
    out = tree_cases.drla("train", PPO_BLEND, "--steps", "10", "--buffer-size", "5000", "--quiet", "--out",
                          tmp_path / "b.json")
    assert out.returncode == 2
    assert "--buffer-size: a DQN setting; tree 'CartPole PPO' trains PPO, which does not use it" in out.stderr


@pytest.mark.slow
def test_cli_ppo_run_killed_mid_episode_resumes_bit_exact(tmp_path):
    """SIGKILL after a checkpoint taken mid-episode, then --resume: the scene's episode is played again from its
    start and the run ends with the uninterrupted run's model file."""
    tree_cases.assert_sigkilled_run_resumes_bit_exact(PPO_BLEND, tmp_path)
