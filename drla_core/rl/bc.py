"""Learning from demonstrations: behavioural cloning for DQN and PPO, and a decaying BC term during PPO.

* ``pretrain_dqn``: DQfD's pre-training (Hester et al., 2018) on the demonstration's transitions: the
  large-margin loss ``max_a [Q(s, a) + l(a_E, a)] - Q(s, a_E)`` (``l`` = ``margin`` for a != a_E, 0 for a_E)
  pushes the demonstrated action's Q-value above the others by the margin, and a 1-step TD loss keeps the
  Q-values on the scale of the returns (margin alone would leave them anywhere, and the TD learning that
  follows would first have to undo that). Afterwards ``fill_replay`` puts the transitions in the replay.
* ``pretrain_ppo``: maximum likelihood of the demonstrated actions under the actor: cross-entropy on the
  logits (Discrete), the Gaussian log-likelihood of the mean (Box; the log-std is left alone, so PPO still
  explores as it would).
* ``attach_bc_term``: after each PPO update, minibatch steps on ``strength(t) * -log pi(a_E | s)`` with
  ``strength`` falling linearly to 0 over ``decay_steps`` environment steps (ML-Agents' behavioural
  cloning module: its strength and its steps). Its minibatches are drawn from a generator seeded by the
  seed and the agent's step count, and step the agent's own Adam, so a resumed run continues the same way.

Nothing here changes ``dqn.py`` or ``ppo.py``: the functions drive the agents' networks and optimisers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.spaces import Discrete
from ..io.demos import Demonstration, demo_fits
from ..nn.losses import clip_grad_norm
from ..nn.optim import Adam
from .dqn import DQNAgent
from .policies import GaussianHead
from .ppo import PPOAgent

__all__ = ["demo_transitions", "pretrain_dqn", "fill_replay", "pretrain_ppo", "attach_bc_term", "imitation"]


def demo_transitions(demo: Demonstration) -> tuple[np.ndarray, ...]:
    """``(obs, actions, rewards, next_obs, terminated, has_next)`` of every step (flat observations).

    ``next_obs`` is the next step's observation inside an episode; a truncated episode's last step has none
    (``has_next`` False: no TD target), a terminated one needs none (not bootstrapped).
    """
    t = len(demo)
    obs = demo.obs.reshape(t, -1)
    next_obs = np.empty_like(obs)
    next_obs[:-1] = obs[1:]
    next_obs[-1] = obs[-1]
    has_next = ~demo.truncated
    return obs, demo.actions, demo.rewards, next_obs, demo.terminated.astype(np.float32), has_next


def _margin_loss(q: np.ndarray, actions: np.ndarray, margin: float) -> tuple[float, np.ndarray]:
    """Mean of ``max_a [Q + l] - Q(a_E)`` and its gradient with respect to ``q`` (``(B, n)``)."""
    b, n = q.shape
    rows = np.arange(b)
    boosted = q + np.float32(margin)
    boosted[rows, actions] = q[rows, actions]
    best = boosted.argmax(axis=1)
    loss = float((boosted[rows, best] - q[rows, actions]).mean())
    grad = np.zeros_like(q)
    np.add.at(grad, (rows, best), np.float32(1.0 / b))
    np.add.at(grad, (rows, actions), np.float32(-1.0 / b))
    return loss, grad


def pretrain_dqn(agent: DQNAgent, demo: Demonstration, steps: int = 1000, batch_size: int = 64,
                 margin: float = 0.8, td_weight: float = 1.0, target_interval: int = 100,
                 seed: int = 0) -> dict[str, float]:
    """DQfD pre-training of ``agent``'s Q-network on ``demo``: ``steps`` minibatch steps; returns the last losses
    and the fraction of demonstrated actions the greedy policy then takes (``agreement``)."""
    demo_fits(demo, agent.observation_space, agent.action_space)
    obs, actions, rewards, next_obs, terminated, has_next = demo_transitions(demo)
    rng = np.random.default_rng(seed)
    cfg, net = agent.config, agent.q_network
    batch_size = min(batch_size, len(obs))
    rows = np.arange(batch_size)
    margin_loss = td_loss = 0.0
    for k in range(int(steps)):
        idx = rng.integers(len(obs), size=batch_size)
        live = has_next[idx].astype(np.float32)
        next_q = agent.target_network.forward(next_obs[idx]).max(axis=1)
        target = rewards[idx] + np.float32(cfg.gamma) * (1.0 - terminated[idx]) * next_q
        q = net.forward_train(obs[idx])
        a = actions[idx]
        margin_loss, grad = _margin_loss(q, a, margin)
        err = (q[rows, a] - target) * live
        td_loss = float(np.dot(err, err)) / batch_size
        grad[rows, a] += np.float32(2.0 * td_weight / batch_size) * err
        g = net.backward(grad)
        clip_grad_norm(g, cfg.max_grad_norm)
        agent.optimizer.step(g)
        if (k + 1) % target_interval == 0:
            np.copyto(agent.target_network.params, net.params)
    np.copyto(agent.target_network.params, net.params)
    greedy = net.forward(obs).argmax(axis=1)
    return {"margin_loss": margin_loss, "td_loss": td_loss, "agreement": float(np.mean(greedy == actions))}


def fill_replay(agent: DQNAgent, demo: Demonstration) -> int:
    """Add the demonstration's transitions (those with a next observation or a terminal end) to the replay."""
    obs, actions, rewards, next_obs, terminated, has_next = demo_transitions(demo)
    keep = np.flatnonzero(has_next)
    shape = (len(keep),) + tuple(agent.observation_space.shape)
    agent.replay_buffer.add_batch(obs[keep].reshape(shape), actions[keep], rewards[keep], next_obs[keep].reshape(shape),
                                  terminated[keep].astype(bool), np.zeros(len(keep), dtype=bool))
    return len(keep)


def _actor_inputs(agent: PPOAgent, obs: np.ndarray) -> np.ndarray:
    return agent._normalize(obs.reshape(len(obs), agent.obs_size).astype(np.float32))


def _bc_grad(agent: PPOAgent, x: np.ndarray, actions: np.ndarray, weight: float) -> tuple[float, np.ndarray]:
    """``weight * mean(-log pi(a | x))`` on the actor and its gradient for the actor's parameters."""
    b = len(x)
    y = agent.actor.forward_train(x)
    out = agent._policy_out(y)
    logp, _ = agent.head.evaluate(out, actions)
    grad_out, _ = agent.head.backward(np.full(b, -weight / b, dtype=np.float32), np.zeros(b, dtype=np.float32))
    if agent.critic is None:  # shared trunk: the value output gets no gradient from cloning
        grad_out = np.concatenate([grad_out, np.zeros((b, 1), dtype=np.float32)], axis=1)
    return -float(logp.mean()), agent.actor.backward(grad_out.astype(np.float32))


def pretrain_ppo(agent: PPOAgent, demo: Demonstration, epochs: int = 20, batch_size: int = 64,
                 learning_rate: float = 1e-3, seed: int = 0) -> dict[str, float]:
    """Behavioural cloning of ``agent``'s actor on ``demo`` (``epochs`` passes of shuffled minibatches, its own
    Adam); returns the last mean negative log-likelihood and the fraction of demonstrated actions its
    deterministic policy takes (Discrete) or the mean absolute error of its mean (Box)."""
    demo_fits(demo, agent.observation_space, agent.action_space)
    obs = demo.obs.reshape(len(demo), -1)
    if agent.config.normalize_obs:
        agent.obs_rms.update(obs)
    x = _actor_inputs(agent, obs)
    actions = demo.actions
    rng = np.random.default_rng(seed)
    opt = Adam(agent.actor.params, lr=learning_rate)
    nll = 0.0
    for _ in range(int(epochs)):
        order = rng.permutation(len(x))
        for start in range(0, len(x), batch_size):
            idx = order[start:start + batch_size]
            nll, g = _bc_grad(agent, x[idx], actions[idx], 1.0)
            clip_grad_norm(g, max(agent.config.max_grad_norm, 1.0))
            opt.step(g)
    return {"nll": nll, **_fit(agent, x, actions)}


def _fit(agent: PPOAgent, x: np.ndarray, actions: np.ndarray) -> dict[str, float]:
    mode = agent.head.mode(agent._policy_out(agent.actor.forward(x)))
    if isinstance(agent.head, GaussianHead):
        return {"mean_abs_error": float(np.abs(mode.reshape(actions.shape) - actions).mean())}
    return {"agreement": float(np.mean(mode.reshape(actions.shape) == actions))}


def attach_bc_term(agent: PPOAgent, demo: Demonstration, strength: float = 1.0, decay_steps: int | None = None,
                   batches: int | None = None, batch_size: int = 64, seed: int = 0) -> None:
    """After each of ``agent``'s updates, ``batches`` minibatch steps (default: as many as PPO's own: its epochs
    over the rollout) of the BC loss times ``strength * (1 - steps / decay_steps)`` (``decay_steps`` default: the
    run's length)."""
    demo_fits(demo, agent.observation_space, agent.action_space)
    obs = demo.obs.reshape(len(demo), -1).astype(np.float32)
    actions = demo.actions
    ppo_update = agent.update

    def update_with_bc(last_values: np.ndarray) -> float:
        loss = ppo_update(last_values)
        horizon = decay_steps or agent.total_timesteps
        weight = float(strength) * max(0.0, 1.0 - agent.num_timesteps / max(horizon, 1))
        if weight <= 0.0:
            return loss
        x = _actor_inputs(agent, obs)
        rng = np.random.default_rng([int(seed), int(agent.num_timesteps)])
        n = batches or max(1, agent.config.n_epochs * agent.config.n_steps * max(agent.num_envs, 1)
                           // agent.config.batch_size)
        opt = agent.optimizers[0]
        nll = 0.0
        for _ in range(n):
            idx = rng.integers(len(x), size=min(batch_size, len(x)))
            nll, g = _bc_grad(agent, x[idx], actions[idx], weight)
            clip_grad_norm(g, max(agent.config.max_grad_norm, 1.0))
            opt.step(g)
        agent.stats.update(bc_weight=weight, bc_nll=nll)
        return loss

    agent.update = update_with_bc  # type: ignore[method-assign]


def imitation(agent: Any, demo: Demonstration, seed: int = 0, pretrain: bool = True, bc_strength: float = 1.0,
              decay_steps: int | None = None) -> dict[str, float]:
    """What ``--demo`` does: DQN: DQfD pre-training then the transitions into the replay; PPO: cloning, then the
    decaying BC term during training (``bc_strength`` 0: none). Returns the pre-training's figures."""
    figures: dict[str, float] = {}
    if isinstance(agent, DQNAgent):
        if not isinstance(demo.action_space, Discrete):
            raise ValueError("DQN learns from demonstrations of discrete actions only")
        if pretrain:  # (a resumed run has both in its checkpoint)
            figures = pretrain_dqn(agent, demo, seed=seed)
            figures["replay"] = fill_replay(agent, demo)
    elif isinstance(agent, PPOAgent):
        if pretrain:
            figures = pretrain_ppo(agent, demo, seed=seed)
        if bc_strength > 0:
            attach_bc_term(agent, demo, bc_strength, decay_steps, seed=seed)
    else:
        raise TypeError(f"demonstrations train DQN and PPO agents, not {type(agent).__name__}")
    return figures
