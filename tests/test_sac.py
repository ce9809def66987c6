"""SAC (drla_core/rl/sac.py): its gradients against finite differences, the Polyak update, learning the pendulum,
bit-exact resume (in process and after SIGKILL), the exported deterministic policy, and its refusals."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from drla_core.base.spaces import Box, Discrete
from drla_core.envs import make
from drla_core.io.model_io import load_model, save_model
from drla_core.rl.checkpoint import CheckpointError, read_checkpoint, read_latest
from drla_core.rl.sac import LOG_STD_MAX, SACAgent, SACConfig
from drla_core.rl.train import TrainingRun, evaluate
from drla_core.rl.vector_train import VectorTrainingRun
from drla_core.base.vector_env import SyncVectorEnv

ROOT = Path(__file__).resolve().parents[1]
OBS = Box(-np.ones(3, dtype=np.float32), np.ones(3, dtype=np.float32))
ACT = Box(-1.0, 1.0, (2,))


def small_agent(**kw) -> SACAgent:
    return SACAgent(OBS, ACT, SACConfig(hidden=[(8, "tanh"), (6, "relu")], batch_size=5, **kw), seed=1)


def batch(agent: SACAgent, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = agent.config.batch_size
    f = lambda *s: rng.uniform(-1, 1, size=s).astype(np.float32)  # noqa: E731
    return f(n, 3), f(n, 2), f(n), f(n, 3), (rng.random(n) < 0.3).astype(np.float32), \
        rng.standard_normal((n, 2)).astype(np.float32)


def numeric_grad(params: np.ndarray, loss, indices, h=1e-2) -> np.ndarray:
    """Central differences of ``loss()`` in float64 arithmetic over float32 parameters (h large enough for them)."""
    out = []
    for i in indices:
        old = params[i]
        params[i] = old + h
        up = loss()
        params[i] = old - h
        down = loss()
        params[i] = old
        out.append((up - down) / (2 * h))
    return np.array(out)


def assert_close(numeric, analytic):
    assert np.allclose(numeric, analytic, rtol=3e-2, atol=2e-4), np.c_[numeric, analytic]


def test_critic_gradient_matches_finite_differences():
    agent = small_agent()
    obs, actions, _, _, _, _ = batch(agent)
    target = np.random.default_rng(5).normal(size=len(obs)).astype(np.float32)
    _, grads = agent.critic_loss(obs, actions, target)
    for critic, grad in zip(agent.critics, grads):
        idx = range(0, critic.params.size, 7)
        numeric = numeric_grad(critic.params, lambda: agent.critic_loss(obs, actions, target)[0], idx)
        assert_close(numeric, grad[list(idx)])


def test_actor_gradient_matches_finite_differences():
    """Through the squashing, the log-prob correction, the clipped log std and the smaller of the two critics."""
    agent = small_agent()
    obs, _, _, _, _, eps = batch(agent)
    alpha = np.float32(0.7)
    agent.actor.biases[-1][2:] = [LOG_STD_MAX + 0.5, -0.3]  # one log std clipped: its gradient is 0

    def loss_and_grad():
        y = agent.actor.forward_train(obs).copy()
        action, log_prob, u, std = agent.sample(y, eps)
        return agent.actor_loss(obs, y, eps, alpha, action, log_prob, u, std)

    _, grad = loss_and_grad()
    idx = list(range(0, agent.actor.params.size, 3))
    numeric = numeric_grad(agent.actor.params, lambda: loss_and_grad()[0], idx, h=3e-3)
    assert_close(numeric, grad[idx])
    assert np.any(grad != 0)


def test_temperature_gradient_matches_finite_differences():
    agent = small_agent(init_temperature=0.3)
    log_prob = np.array([-1.5, 0.2, 0.9, -3.0], dtype=np.float32)
    _, grad = agent.temperature_loss(log_prob)
    numeric = numeric_grad(agent.log_temperature, lambda: agent.temperature_loss(log_prob)[0], [0])
    assert_close(numeric, grad)
    # an entropy (-mean log pi = 0.85) above the target (-|A| = -2): alpha must fall, a step down its gradient
    assert grad[0] > 0 and agent.target_entropy == -2.0
    assert agent.temperature_loss(np.full(4, 3.0, dtype=np.float32))[1][0] < 0  # below the target: alpha rises


def test_log_prob_is_the_squashed_gaussian_density():
    """log pi(a) = log N(u; mean, std) - sum log(1 - tanh(u)^2): checked against the density by change of variables."""
    agent = small_agent()
    y = np.array([[0.3, -1.2, -0.5, 0.4]], dtype=np.float32)
    eps = np.array([[0.8, -2.5]], dtype=np.float32)
    action, log_prob, u, std = agent.sample(y, eps)
    mean, s = y[0, :2].astype(np.float64), np.exp(y[0, 2:].astype(np.float64))
    uu = mean + s * eps[0]
    gauss = -0.5 * ((uu - mean) / s) ** 2 - np.log(s) - 0.5 * math.log(2 * math.pi)
    expected = np.sum(gauss - np.log(1 - np.tanh(uu) ** 2))
    assert np.allclose(action[0], np.tanh(uu), atol=1e-6)
    assert abs(log_prob[0] - expected) < 1e-4


def test_polyak_update():
    agent = small_agent(tau=0.25)
    before = [t.params.copy() for t in agent.targets]
    for c in agent.critics:
        c.params += 1.0
    agent.polyak_update()
    for c, t, old in zip(agent.critics, agent.targets, before):
        assert np.allclose(t.params, 0.75 * old + 0.25 * c.params, atol=1e-6)


# ---- checkpoints: a resumed run ends bit for bit where the uninterrupted one does -----------------------------


def _run(steps=1200, copies=0, **kw):
    env = make("pendulum")
    config = SACConfig(learning_starts=200, batch_size=32, buffer_size=1000, train_freq=4, gradient_steps=2,
                       hidden=[(16, "relu"), (16, "relu")], **kw)
    agent = SACAgent(env.observation_space, env.action_space, config, seed=4)
    if copies:  # N copies stepped together: one actor call for all
        venv = SyncVectorEnv([lambda: make("pendulum")] * copies)
        return VectorTrainingRun(venv, agent, steps, seed=4, eval_env=make("pendulum"), eval_interval=500,
                                 eval_episodes=2)
    return TrainingRun(env, agent, steps, seed=4, eval_env=make("pendulum"), eval_interval=500, eval_episodes=2)


def _state(run):
    a = run.agent
    return [a.actor.params, *(c.params for c in a.critics), *(t.params for t in a.targets), a.log_temperature,
            a.best_params, *(o._m for o in a.optimizers.values()), *(o._v for o in a.optimizers.values()),
            a.replay_buffer.obs, a.replay_buffer.actions]


@pytest.mark.parametrize("copies", [0, 3])
def test_resume_mid_episode_is_bit_exact(tmp_path, copies):
    """Saved at an odd step (mid-episode, the buffer wrapped, keep-best holding a policy): the same end, bit for bit;
    on one environment and on three copies."""
    whole = _run(copies=copies).run()
    first = _run(copies=copies)
    first.advance(max_steps=1117)
    assert first.agent.replay_buffer.full and first.agent.best_params is not None
    path = first.save_checkpoint(tmp_path / "c.npz")
    assert read_checkpoint(path).meta["kind"] == "sac"
    second = _run(copies=copies)
    assert second.load_checkpoint(path) == []
    second.run()
    for a, b in zip(_state(whole), _state(second)):
        assert np.array_equal(a, b)
    assert whole.agent.rng.bit_generator.state == second.agent.rng.bit_generator.state
    assert whole.history.episode_returns == second.history.episode_returns
    assert whole.history.losses == second.history.losses
    assert whole.agent.temperature == second.agent.temperature != 1.0
    # the curve where DQN's epsilon goes holds the temperature at each episode's end (the report's Exploration)
    assert whole.history.epsilons == second.history.epsilons and len(set(whole.history.epsilons)) > 1


def test_checkpoint_refuses_another_agent_or_network(tmp_path):
    first = _run()
    first.advance(max_steps=300)
    path = first.save_checkpoint(tmp_path / "c.npz")
    env = make("pendulum")
    wider = SACAgent(env.observation_space, env.action_space, SACConfig(hidden=[(32, "relu")]), seed=4)
    with pytest.raises(CheckpointError, match=r"the network differs: the checkpoint has actor 3 -> 16 relu -> 16 "
                                              r"relu -> 2 linear; critic 4 -> 16 relu"):
        TrainingRun(env, wider, 1200).load_checkpoint(path)
    from drla_core.rl.dqn import DQNAgent
    cart = make("cartpole")
    with pytest.raises(CheckpointError, match=r"the checkpoint is of a SAC run, this run trains DQN; resume it with "
                                              r"the agent it was trained with \(--agent sac\)"):
        TrainingRun(cart, DQNAgent(cart.observation_space, cart.action_space), 1200).load_checkpoint(path)


# ---- export: the deterministic policy as a model file, JSON and ONNX ----------------------------------------


def test_export_round_trip_gives_the_deterministic_policy(tmp_path):
    run = _run(steps=600).run()
    agent = run.agent
    model = run.to_model({"env": "pendulum"})
    assert model.kind == "mlp" and model.network.output_activation == "tanh" and model.meta["agent"] == "sac"
    path = save_model(tmp_path / "m.json", model)
    loaded = load_model(path)
    obs = np.random.default_rng(0).uniform(-1, 1, size=(50, 3)).astype(np.float32) * [1, 1, 8]
    obs = obs.astype(np.float32)
    assert np.array_equal(loaded.predict(obs), model.predict(obs))
    expected = np.tanh(agent.actor.forward(obs)[:, :1])
    assert np.allclose(loaded.act(obs), expected, atol=1e-6)
    assert np.allclose(agent.predict(obs), expected, atol=1e-6)
    assert loaded.act(obs[0]).shape == (1,) and np.all(np.abs(loaded.act(obs)) <= 1)
    # the same policy scores the same in the environment
    a = evaluate(make("pendulum"), agent, 2, seed=7).returns
    b = evaluate(make("pendulum"), loaded.act, 2, seed=7).returns
    assert np.allclose(a, b, rtol=1e-4)


def test_onnx_export_runs_in_onnxruntime(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from drla.onnx_io import export_onnx

    model = _run(steps=400).run().to_model({"env": "pendulum"})
    path = export_onnx(model, tmp_path / "m.onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    obs = np.random.default_rng(1).uniform(-1, 1, size=(20, 3)).astype(np.float32)
    outputs = dict(zip([o.name for o in session.get_outputs()], session.run(None, {"obs": obs})))
    assert np.allclose(outputs["output"], model.predict(obs), atol=1e-6)
    assert np.allclose(outputs["action"], model.act(obs), atol=1e-6)


# ---- refusals ---------------------------------------------------------------------------------------------


def test_refuses_what_it_cannot_learn():
    with pytest.raises(TypeError, match=r"SAC needs continuous actions \(a Box action space\), got Discrete\(2\)"):
        SACAgent(OBS, Discrete(2))
    with pytest.raises(ValueError, match=r"SAC needs actions normalised to \[-1, 1\], got bounds \[-2.0\] .. \[2.0\]"):
        SACAgent(OBS, Box(-2.0, 2.0, (1,)))
    with pytest.raises(ValueError, match=r"SACConfig.tau must be in \(0, 1\]"):
        SACConfig(tau=0.0)
    with pytest.raises(ValueError, match="SACConfig.init_temperature must be a positive number"):
        SACConfig(init_temperature=0.0)


def cli(*args, cwd=ROOT, timeout=300):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "drla", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.parametrize("argv, message", [
    (["cartpole", "--agent", "sac"], "--agent sac needs continuous actions; cartpole has a set of actions "
                                     "(Discrete(2)): train it with --agent dqn"),
    (["pendulum", "--agent", "sac", "--double-dqn"], "--double-dqn: not a SAC setting; --agent sac does not use it"),
    (["pendulum", "--agent", "sac", "--population", "5"], "--population: not a SAC setting"),
    (["pendulum", "--init-temperature", "0.5"], "--init-temperature: a SAC setting; --agent dqn does not use it"),
    (["pendulum", "--agent", "ga", "--target-entropy", "-1"], "--target-entropy: a SAC setting; --agent ga"),
    (["pendulum", "--agent", "sac", "--init-temperature", "0"],
     "argument --init-temperature: needs a number in (0, 1_000_000], got 0"),
    (["pendulum"], "pendulum has continuous actions (Box(shape=(1,), dtype=float32)) and DQN needs discrete ones: "
                   "train it with --agent ppo or --agent sac"),
])
def test_cli_refusals_in_one_line(argv, message):
    out = cli("train", *argv, "--steps", "10", "--out", "/tmp/never_written/m.json")
    assert out.returncode == 2, out
    assert message in out.stderr and "Traceback" not in out.stderr


# ---- the CLI: learning the pendulum, and a run killed with SIGKILL resumed bit for bit ----------------------


@pytest.mark.slow
def test_learns_the_pendulum(tmp_path):
    """The default settings, seed 0: a greedy mean of at least -200 over 10 episodes within 8000 steps."""
    out = cli("train", "pendulum", "--agent", "sac", "--steps", "8000", "--quiet", "--out", tmp_path / "m.json")
    assert out.returncode == 0, out.stderr
    model = load_model(tmp_path / "m.json")
    result = evaluate(make("pendulum"), model.act, 10, seed=1000)
    assert result.mean_return >= -200, result.returns


TRAIN = ["train", "pendulum", "--agent", "sac", "--steps", "1500", "--checkpoint-interval", "500", "--eval-interval",
         "500", "--eval-episodes", "2", "--learning-starts", "200", "--batch-size", "64", "--quiet"]


@pytest.mark.slow
def test_sigkilled_run_resumed_ends_bit_exact(tmp_path):
    from test_checkpoint import assert_same_state

    whole, killed = tmp_path / "whole", tmp_path / "killed"
    out = cli(*TRAIN, "--out", whole / "m.json")
    assert out.returncode == 0, out.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "drla", *TRAIN, "--out", str(killed / "m.json")], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    ckpt = killed / "m_ckpt.npz"
    t0 = time.monotonic()
    while not ckpt.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < 120, "no checkpoint appeared"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    at = read_latest(ckpt)[0].steps
    assert 500 <= at < 1500

    out = cli("train", "pendulum", "--resume", ckpt, "--quiet")  # no --agent: the checkpoint says sac
    assert out.returncode == 0, out.stderr
    assert f"resuming {ckpt} at step {at} of 1500" in out.stderr
    a, b = load_model(whole / "m.json"), load_model(killed / "m.json")
    assert np.array_equal(a.network.params, b.network.params)
    assert_same_state(read_checkpoint(whole / "m_ckpt.npz"), read_checkpoint(killed / "m_ckpt.npz"))
