"""SAC (drla_core/rl/sac.py): its gradients against finite differences, the Polyak update, learning the pendulum,
bit-exact resume (in process and after SIGKILL), the exported deterministic policy, and its refusals."""

from __future__ import annotations

import json
import math
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
