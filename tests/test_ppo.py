"""PPO (drla_core/rl/ppo.py, rl/policies.py): the gradients against finite differences, GAE, the schedules, learning
CartPole, resuming bit for bit (in process and after SIGKILL through the CLI), the exported policy, the errors."""

from __future__ import annotations

import json
import math
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from drla_core.base.spaces import Box, Discrete, MultiDiscrete
from drla_core.base.vector_env import SyncVectorEnv
from drla_core.envs import make
from drla_core.io.model_io import load_model, save_model
from drla_core.rl.checkpoint import CheckpointError, read_checkpoint
from drla_core.rl.history import evaluate
from drla_core.rl.policies import CategoricalHead, GaussianHead, RunningMeanStd, orthogonal
from drla_core.rl.ppo import PPOAgent, PPOConfig, schedule_value
from drla_core.rl.train import TrainingRun
from drla_core.rl.vector_train import VectorTrainingRun

ROOT = Path(__file__).resolve().parents[1]
#: rl-zoo's CartPole-v1 settings (n_envs 8)
ZOO = dict(n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0, learning_rate=1e-3,
           lr_schedule="linear", clip_range=0.2, clip_schedule="linear")


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "drla", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, **kw)


# ---- gradients against finite differences ----------------------------------------------------------------------

SPACES = {
    "discrete": Discrete(3),
    "multidiscrete": MultiDiscrete([2, 3]),
    "gaussian": Box(-1.0, 1.0, (2,)),
}


def _minibatch(agent, rng, b=16):
    """A minibatch whose old log-probabilities put some ratios well inside the clip range and some well outside
    (so that a small finite-difference step crosses no kink)."""
    obs = rng.standard_normal((b, agent.obs_size)).astype(np.float32)
    y = agent.actor.forward(obs)
    out = agent._policy_out(y)
    actions = agent.head.sample(out, rng)
    logp, _ = agent.head.evaluate(out, actions)
    shift = np.where(np.arange(b) % 2 == 0, rng.uniform(-0.05, 0.05, b), rng.choice([-0.6, 0.6], b))
    old_logp = (logp + shift).astype(np.float32)
    old_values = agent._values(obs)
    old_values += np.where(np.arange(b) % 3 == 0, 0.5, 0.01).astype(np.float32)
    adv = rng.standard_normal(b).astype(np.float32)
    returns = rng.standard_normal(b).astype(np.float32)
    return obs, actions, old_logp, old_values, adv, returns


@pytest.mark.parametrize("space", sorted(SPACES))
@pytest.mark.parametrize("part", ["surrogate", "value", "value_clipped", "entropy"])
@pytest.mark.parametrize("shared", [False, True])
def test_loss_gradients_match_finite_differences(space, part, shared):
    weights = {"surrogate": dict(vf_coef=0.0, ent_coef=0.0), "value": dict(vf_coef=0.7, ent_coef=0.0),
               "value_clipped": dict(vf_coef=0.7, ent_coef=0.0, clip_range_vf=0.2),
               "entropy": dict(vf_coef=0.0, ent_coef=0.3)}[part]
    config = PPOConfig(hidden=[(8, "tanh"), (8, "tanh")], shared_trunk=shared, log_std_init=-0.3, **weights)
    agent = PPOAgent(Box(-5, 5, (4,)), SPACES[space], config, seed=1)
    rng = np.random.default_rng(2)
    batch = _minibatch(agent, rng)  # each part alone: the other terms' weights are 0

    def loss() -> float:
        return float(agent.losses(*batch, clip=0.2, backward=False)[0][0])

    _, grads = agent.losses(*batch, clip=0.2)
    grads = [g.astype(np.float64).copy() for g in grads]
    vectors = agent._param_vectors()
    assert len(grads) == len(vectors)
    analytic = numeric = 0.0
    eps = 1e-3
    for _ in range(3):  # random directions over every parameter at once
        directions = [rng.standard_normal(v.shape).astype(np.float32) for v in vectors]
        analytic = sum(float(np.dot(g, d)) for g, d in zip(grads, directions))
        saved = [v.copy() for v in vectors]
        for v, d in zip(vectors, directions):
            v += np.float32(eps) * d
        up = loss()
        for v, s, d in zip(vectors, saved, directions):
            np.copyto(v, s - np.float32(eps) * d)
        down = loss()
        for v, s in zip(vectors, saved):
            np.copyto(v, s)
        numeric = (up - down) / (2 * eps)
        assert abs(analytic) > 1e-4, "a gradient that is zero proves nothing"
        assert numeric == pytest.approx(analytic, rel=2e-2, abs=2e-4), (space, part, shared)


def test_head_gradients_match_finite_differences_in_float64():
    """The distributions alone, in float64 (the networks out of the way): d logp and d entropy per output."""
    rng = np.random.default_rng(0)
    for head in (CategoricalHead([3, 2], multi=True), GaussianHead(-np.ones(2), np.ones(2), log_std_init=0.2)):
        out = rng.standard_normal((5, head.n_outputs))
        actions = head.sample(out, rng)
        g_logp, g_ent = rng.standard_normal(5), rng.standard_normal(5)

        def f(z, head=head, actions=actions, g_logp=g_logp, g_ent=g_ent):
            logp, ent = head.evaluate(z, actions)
            return float(np.dot(g_logp, logp) + np.dot(g_ent, ent))

        f(out)
        grad, grad_log_std = head.backward(g_logp.astype(np.float32), g_ent.astype(np.float32))
        for i in range(5):
            for j in range(head.n_outputs):
                z = out.copy()
                z[i, j] += 1e-4
                hi = f(z)
                z[i, j] -= 2e-4
                lo = f(z)
                assert (hi - lo) / 2e-4 == pytest.approx(grad[i, j], rel=1e-3, abs=1e-4)
        if isinstance(head, GaussianHead):
            for j in range(2):
                head.log_std[j] += np.float32(1e-2)
                hi = f(out)
                head.log_std[j] -= np.float32(2e-2)
                lo = f(out)
                head.log_std[j] += np.float32(1e-2)
                assert (hi - lo) / 2e-2 == pytest.approx(grad_log_std[j], rel=1e-3, abs=1e-3)


def test_categorical_sampling_follows_the_probabilities():
    head = CategoricalHead([3])
    logits = np.log(np.array([[0.2, 0.5, 0.3]] * 40_000, dtype=np.float32))
    counts = np.bincount(head.sample(logits, np.random.default_rng(0)), minlength=3) / 40_000
    assert np.allclose(counts, [0.2, 0.5, 0.3], atol=0.01)
    logp, ent = head.evaluate(logits[:1], np.array([1]))
    assert logp[0] == pytest.approx(math.log(0.5), abs=1e-6)
    assert ent[0] == pytest.approx(-(0.2 * math.log(0.2) + 0.5 * math.log(0.5) + 0.3 * math.log(0.3)), abs=1e-6)


def test_orthogonal_rows_and_running_statistics():
    w = orthogonal(64, 8, 2.0, np.random.default_rng(0))
    assert w.shape == (64, 8) and np.allclose(w.T @ w, 4.0 * np.eye(8), atol=1e-4)
    rms, data = RunningMeanStd((3,)), np.random.default_rng(1).normal(2.0, 3.0, (1000, 3))
    for chunk in np.split(data, 10):
        rms.update(chunk)
    assert np.allclose(rms.mean, data.mean(axis=0), atol=1e-3) and np.allclose(rms.var, data.var(axis=0), rtol=1e-3)


# ---- GAE and schedules -----------------------------------------------------------------------------------------


def test_gae_matches_the_recursion_written_out():
    agent = PPOAgent(Box(-1, 1, (2,)), Discrete(2), PPOConfig(n_steps=4, gamma=0.9, gae_lambda=0.8), seed=0)
    agent._buffer(1)
    agent.buf_rewards[:, 0] = [1.0, 0.5, -1.0, 2.0]
    agent.buf_values[:, 0] = [0.3, 0.2, 0.1, 0.4]
    agent.buf_dones[:, 0] = [0, 1, 0, 0]  # the episode ends after step 1
    adv, returns = agent.advantages(np.array([0.7], dtype=np.float32))
    d3 = 2.0 + 0.9 * 0.7 - 0.4
    d2 = -1.0 + 0.9 * 0.4 - 0.1
    d1 = 0.5 - 0.2  # ended: no bootstrap
    d0 = 1.0 + 0.9 * 0.2 - 0.3
    a3 = d3
    a2 = d2 + 0.72 * a3
    a1 = d1
    a0 = d0 + 0.72 * a1
    assert np.allclose(adv[:, 0], [a0, a1, a2, a3], atol=1e-6)
    assert np.allclose(returns, adv + agent.buf_values)


def test_schedules_fall_linearly_with_the_progress():
    assert schedule_value(0.2, "constant", 0.1) == 0.2
    assert schedule_value(1e-3, "linear", 0.25) == pytest.approx(2.5e-4)
    config = PPOConfig(n_steps=8, batch_size=16, n_epochs=1, lr_schedule="linear", clip_schedule="linear",
                       learning_rate=1e-3, clip_range=0.2)
    env = SyncVectorEnv([lambda: make("cartpole")] * 2)
    agent = PPOAgent(env.single_observation_space, env.single_action_space, config, seed=0)
    run = VectorTrainingRun(env, agent, 64, seed=0)
    seen = []
    while not run.done:
        run.advance(max_steps=16)
        if agent.stats and (not seen or seen[-1][0] != agent.num_timesteps):
            seen.append((agent.num_timesteps, agent.stats["learning_rate"], agent.stats["clip_range"]))
    assert [s for s, _, _ in seen] == [16, 32, 48, 64]
    for steps, lr, clip in seen:
        assert lr == pytest.approx(1e-3 * (1 - steps / 64)) and clip == pytest.approx(0.2 * (1 - steps / 64))
    assert [opt.lr for opt in agent.optimizers] == [seen[-1][1]] * 2  # the actor's and the critic's Adam


def test_config_refuses_bad_settings():
    with pytest.raises(ValueError, match="lr_schedule must be 'constant' or 'linear', got 'cosine'"):
        PPOConfig(lr_schedule="cosine")
    with pytest.raises(ValueError, match="n_steps must be positive"):
        PPOConfig(n_steps=0)
    with pytest.raises(TypeError, match="PPO needs a Box observation space"):
        PPOAgent(Discrete(3), Discrete(2))


# ---- learning ---------------------------------------------------------------------------------------------------


def _cartpole_run(steps, seed=0, copies=8, **kw):
    venv = SyncVectorEnv([lambda: make("cartpole")] * copies)
    agent = PPOAgent(venv.single_observation_space, venv.single_action_space, PPOConfig(**{**ZOO, **kw}), seed=seed)
    return VectorTrainingRun(venv, agent, steps, seed=seed, eval_env=make("cartpole"), eval_interval=0), agent


def test_learns_cartpole_to_475_with_the_zoo_settings():
    """rl-zoo's CartPole settings, 8 copies, 40k steps (rl-zoo trains 100k): the greedy policy holds the pole."""
    run, agent = _cartpole_run(40_000, seed=0)
    run.run()
    assert run.steps == 40_000 and agent.n_updates == (40_000 // 256) * 20
    result = evaluate(make("cartpole"), agent, 20, seed=1000)
    assert result.mean_return >= 475, result.returns


def test_learns_the_pendulum_a_little_with_a_gaussian_policy():
    """Continuous actions: the swing-up return improves clearly over the untrained policy (rl-zoo's pendulum
    settings without gSDE, shortened)."""
    def run_pendulum(steps):
        venv = SyncVectorEnv([lambda: make("pendulum")] * 4)
        config = PPOConfig(n_steps=256, gamma=0.9, gae_lambda=0.95, n_epochs=10, learning_rate=1e-3, batch_size=64,
                           normalize_obs=True, normalize_reward=True, log_std_init=-0.5)
        agent = PPOAgent(venv.single_observation_space, venv.single_action_space, config, seed=0)
        VectorTrainingRun(venv, agent, steps, seed=0).run()
        return evaluate(make("pendulum"), agent, 10, seed=1000).mean_return, agent
    before, _ = run_pendulum(1024)
    after, agent = run_pendulum(20_480)
    assert after > before + 200, (before, after)
    action = agent.predict(np.zeros(3, dtype=np.float32))
    assert action.shape == (1,) and -1.0 <= action[0] <= 1.0


# ---- checkpoints: bit for bit ----------------------------------------------------------------------------------


def _run(name, steps, copies, config, **kw):
    if copies:
        venv = SyncVectorEnv([lambda: make(name)] * copies)
        agent = PPOAgent(venv.single_observation_space, venv.single_action_space, config, seed=5)
        return VectorTrainingRun(venv, agent, steps, seed=5, eval_env=make(name), eval_interval=600,
                                 eval_episodes=2, **kw)
    env = make(name)
    agent = PPOAgent(env.observation_space, env.action_space, config, seed=5)
    return TrainingRun(env, agent, steps, seed=5, eval_env=make(name), eval_interval=600, eval_episodes=2, **kw)


@pytest.mark.parametrize("name,copies,options", [
    ("cartpole", 4, {}),
    ("cartpole", 0, {"shared_trunk": True}),
    ("pendulum", 3, {"normalize_obs": True, "normalize_reward": True, "clip_range_vf": 0.3}),
])
def test_a_resumed_run_ends_bit_exact_with_the_straight_one(tmp_path, name, copies, options):
    config = PPOConfig(n_steps=24, batch_size=32, n_epochs=2, lr_schedule="linear", clip_schedule="linear",
                       ent_coef=0.01, hidden=[(16, "tanh")], **options)
    steps = 2400
    straight = _run(name, steps, copies, config).run()
    ckpt = tmp_path / "c.npz"
    first = _run(name, steps, copies, config, checkpoint_interval=1000, checkpoint_path=str(ckpt),
                 save_fn=lambda run, path: run.save_checkpoint(path))
    while first.steps < 1000:  # stop mid-rollout, right after the first checkpoint
        first.advance(max_steps=1)
    saved = read_checkpoint(ckpt)
    assert saved.meta["kind"] == "ppo" and saved.steps == first.steps
    assert saved.meta["agent"]["pos"] != 0, "the checkpoint should cut a rollout"
    resumed = _run(name, steps, copies, config)
    assert resumed.load_checkpoint(ckpt) == [("checkpoint_interval", 1000, 0)]
    resumed.run()
    for a, b in zip(straight.agent._param_vectors(), resumed.agent._param_vectors()):
        assert a.tobytes() == b.tobytes()
    assert straight.history.episode_returns == resumed.history.episode_returns
    assert straight.history.evals == resumed.history.evals
    model_a, model_b = straight.to_model(), resumed.to_model()
    assert model_a.network.params.tobytes() == model_b.network.params.tobytes()


def test_a_checkpoint_of_another_network_or_agent_is_refused(tmp_path):
    config = PPOConfig(n_steps=8, batch_size=16, n_epochs=1, hidden=[(8, "tanh")])
    run = _run("cartpole", 100, 2, config)
    run.advance(max_steps=40)
    run.save_checkpoint(tmp_path / "c.npz")
    other = _run("cartpole", 100, 2, PPOConfig(n_steps=8, batch_size=16, n_epochs=1, hidden=[(16, "tanh")]))
    with pytest.raises(CheckpointError, match="the network differs"):
        other.load_checkpoint(tmp_path / "c.npz")
    longer = _run("cartpole", 100, 2, PPOConfig(n_steps=16, batch_size=16, n_epochs=1, hidden=[(8, "tanh")]))
    with pytest.raises(CheckpointError, match="the rollout length differs: the checkpoint's n_steps is 8"):
        longer.load_checkpoint(tmp_path / "c.npz")
    from drla_core.rl.dqn import DQNAgent, DQNConfig
    env = make("cartpole")
    dqn = TrainingRun(env, DQNAgent(env.observation_space, env.action_space, DQNConfig(), seed=0), 100)
    with pytest.raises(CheckpointError, match="the checkpoint is of a PPO run, this run trains DQN"):
        dqn.load_checkpoint(tmp_path / "c.npz")


# ---- the exported policy ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("space,shared,norm", [(Discrete(3), False, True), (Discrete(2), True, False),
                                               (Box(-0.5, 2.0, (2,)), True, True)])
def test_the_model_file_plays_the_agents_deterministic_policy(tmp_path, space, shared, norm):
    config = PPOConfig(hidden=[(16, "tanh"), (8, "relu")], shared_trunk=shared, normalize_obs=norm, ortho_init=False)
    agent = PPOAgent(Box(-5, 5, (4,)), space, config, seed=3)
    rng = np.random.default_rng(0)
    obs = rng.normal(1.0, 2.0, (200, 4)).astype(np.float32)
    agent.act_batch(obs[:50])  # moves the observation statistics
    save_model(tmp_path / "m.json", agent.to_model({"env": "x"}))
    model = load_model(tmp_path / "m.json")
    assert model.kind == "mlp" and model.meta["agent"] == "ppo" and (model.obs_norm is not None) == norm
    for x in obs:
        a, b = agent.predict(x), model.act(x)
        assert np.array_equal(np.asarray(a), np.asarray(b)), (a, b)
    assert np.array_equal(agent.act_batch(obs, explore=False), model.act(obs))


def test_onnx_export_gives_the_same_actions(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    run, agent = _cartpole_run(512, copies=2, hidden=[(16, "tanh")], normalize_obs=True)
    run.run()
    save_model(tmp_path / "m.json", agent.to_model({"env": "cartpole"}))
    out = cli("export-onnx", tmp_path / "m.json", tmp_path / "m.onnx")
    assert out.returncode == 0, out.stderr
    obs = np.random.default_rng(0).normal(0, 1, (64, 4)).astype(np.float32)
    session = ort.InferenceSession(str(tmp_path / "m.onnx"))
    outputs = dict(zip([o.name for o in session.get_outputs()], session.run(None, {"obs": obs})))
    assert np.array_equal(outputs["action"].reshape(-1), agent.act_batch(obs, explore=False))


def test_a_multidiscrete_policy_trains_but_cannot_be_saved():
    agent = PPOAgent(Box(-1, 1, (3,)), MultiDiscrete([2, 3]), PPOConfig(n_steps=4, batch_size=4, n_epochs=1), seed=0)
    obs = np.zeros((2, 3), dtype=np.float32)
    for _ in range(4):
        actions = agent.act_batch(obs)
        assert actions.shape == (2, 2) and actions[:, 1].max() <= 2
        out = agent.observe_batch(obs, actions, np.ones(2), obs, np.zeros(2, bool), np.zeros(2, bool))
    assert "loss" in out and math.isfinite(out["loss"])
    with pytest.raises(ValueError, match="a MultiDiscrete PPO policy cannot be saved as a model file"):
        agent.to_model()


# ---- the command line ------------------------------------------------------------------------------------------


PPO_TRAIN = ["train", "cartpole", "--agent", "ppo", "--steps", "6144", "--checkpoint-interval", "1000",
             "--eval-interval", "3000", "--eval-episodes", "2", "--quiet", "--hidden", "16:tanh"]


@pytest.mark.slow
def test_cli_sigkilled_ppo_run_resumed_ends_bit_exact(tmp_path):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    out = cli(*PPO_TRAIN, "--out", whole / "m.json")
    assert out.returncode == 0, out.stderr
    proc = subprocess.Popen([sys.executable, "-m", "drla", *PPO_TRAIN, "--out", str(killed / "m.json")], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ckpt = killed / "m_ckpt.npz"
    t0 = time.monotonic()
    while not ckpt.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < 120, "no checkpoint appeared"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    at = read_checkpoint(ckpt).steps
    assert 1000 <= at < 6144
    out = cli("train", "cartpole", "--resume", ckpt, "--quiet")
    assert out.returncode == 0, out.stderr
    assert f"resuming {ckpt} at step {at} of 6144" in out.stderr
    a, b = load_model(whole / "m.json"), load_model(killed / "m.json")
    assert a.network.params.tobytes() == b.network.params.tobytes()
    assert json.loads((whole / "m.json").read_text())["meta"]["agent"] == "ppo"


def test_cli_trains_ppo_and_refuses_dqn_settings(tmp_path):
    out = cli("train", "cartpole", "--agent", "ppo", "--steps", "600", "--copies", "2", "--n-steps", "50",
              "--batch-size", "50", "--n-epochs", "1", "--eval-interval", "0", "--out", tmp_path / "m.json")
    assert out.returncode == 0, out.stderr
    assert "trained 600 steps" in out.stdout and (tmp_path / "m_report.png").is_file()
    model = load_model(tmp_path / "m.json")
    assert model.meta["agent"] == "ppo" and model.meta["copies"] == 2
    out = cli("eval", tmp_path / "m.json", "--episodes", "2")
    assert out.returncode == 0 and "cartpole: mean return" in out.stdout
    out = cli("train", "cartpole", "--agent", "ppo", "--exploration-fraction", "0.2", "--out", tmp_path / "x.json")
    assert out.returncode == 2
    assert "error: --exploration-fraction: a DQN setting; --agent ppo does not use it" in out.stderr
    out = cli("train", "cartpole", "--n-epochs", "3", "--out", tmp_path / "y.json")
    assert out.returncode == 2 and "error: --n-epochs: a PPO setting; --agent dqn does not use it" in out.stderr
    out = cli("train", "cartpole", "--agent", "ppo", "--gae-lambda", "1.5")
    assert out.returncode == 2 and "--gae-lambda" in out.stderr
    out = cli("train", "cartpole", "--resume", tmp_path / "m.json")
    assert out.returncode == 2 and "is a model file" in out.stderr


def test_the_javascript_runtime_plays_a_ppo_model(tmp_path):
    """web/drla.js runs a PPO model file (a plain mlp): the same discrete actions, the same clipped means."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    obs = np.random.default_rng(0).normal(0, 1.5, (50, 4)).astype(np.float32)
    for name, space in (("discrete", Discrete(2)), ("box", Box(-1.0, 1.0, (2,)))):
        agent = PPOAgent(Box(-5, 5, (4,)), space, PPOConfig(hidden=[(16, "tanh")], normalize_obs=True,
                                                             ortho_init=False), seed=1)
        agent.act_batch(obs[:20] * 3 + 1)  # observation statistics away from 0 and 1
        save_model(tmp_path / f"{name}.json", agent.to_model({"env": "x"}))
        script = (f"import {{ load }} from {json.dumps((ROOT / 'web' / 'drla.js').as_uri())};\n"
                  "import { readFileSync } from 'node:fs';\n"
                  f"const model = load(readFileSync({json.dumps(str(tmp_path / (name + '.json')))}, 'utf8'));\n"
                  f"const xs = {json.dumps(obs.tolist())};\n"
                  "console.log(JSON.stringify(xs.map((x) => { const a = model.act(x); "
                  "return typeof a === 'number' ? a : Array.from(a); })));\n")
        (tmp_path / "play.mjs").write_text(script)
        out = subprocess.run([node, str(tmp_path / "play.mjs")], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        js = np.asarray(json.loads(out.stdout))
        python = np.asarray([agent.predict(x) for x in obs])
        if name == "discrete":
            assert js.tolist() == python.tolist()
        else:
            assert js.shape == python.shape and np.allclose(js, python, atol=1e-5)
            assert np.abs(js).max() <= 1.0


@pytest.mark.parametrize("shared", [False, True])
def test_one_forward_per_step_for_all_copies(shared):
    """Acting for N copies is one call of the actor (and one of the critic when separate), whatever N."""
    venv = SyncVectorEnv([lambda: make("cartpole")] * 6)
    agent = PPOAgent(venv.single_observation_space, venv.single_action_space,
                     PPOConfig(n_steps=100, shared_trunk=shared), seed=0)
    calls = {"actor": 0, "critic": 0}

    def counted(net, name):
        forward = net.forward_into_cache

        def wrapper(x):
            calls[name] += 1
            assert len(x) == 6
            return forward(x)
        net.forward_into_cache = wrapper

    counted(agent.actor, "actor")
    if agent.critic is not None:
        counted(agent.critic, "critic")
    run = VectorTrainingRun(venv, agent, 6 * 10, seed=0)
    run.run()
    assert calls == {"actor": 10, "critic": 0 if shared else 10}
    assert agent.pos == 10  # ten steps of the six copies in the rollout, not learnt from yet
