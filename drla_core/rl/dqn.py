"""Deep Q-Network (Mnih et al., 2015) with the double-DQN option (van Hasselt et al., 2016).

The shape follows SB3 (``DQNConfig``, a ``ReplayBuffer`` of named ``Batch`` es, ``act`` /
``observe`` / ``update``) and the update reads like CleanRL's ``dqn.py``: ``DQNAgent.update``
goes target -> td_target -> loss -> grad -> clip -> step -> target update, top to bottom.

Everything is float32 numpy. The hot path (one gradient step on a batch of 64 through a
2x64 network) is a few dozen numpy calls on preallocated arrays; the replay draws for a
whole training phase are sampled at once (the buffer does not change during the phase, so
this is the same distribution as one draw per gradient step).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..base.lineage import ancestry_record, params_digest
from ..nn.losses import clip_grad_norm, huber, mse
from ..nn.mlp import MLP, LayerSpec, as_layer_specs
from ..io.model_io import Model
from ..nn.optim import Adam
from .replay_buffer import ReplayBuffer
from ..base.schedules import linear_schedule
from ..base.spaces import Box, Discrete, Space

__all__ = ["DQNConfig", "DQNAgent"]


def _row_max(q: np.ndarray) -> np.ndarray:
    """``q.max(axis=1)`` for few columns: numpy reduces a short axis slowly (8192 x 2: 270 us; this: 10 us)."""
    best = q[:, 0].copy()
    for a in range(1, q.shape[1]):
        np.maximum(best, q[:, a], out=best)
    return best


def enabled_rows(masks: Any, n_actions: int) -> np.ndarray:
    """Action masks as bool ``(N, n_actions)``; a row that enables nothing enables everything (no choice is left
    to honour, so the mask is ignored there rather than leaving no action)."""
    m = np.asarray(masks).reshape(-1, n_actions) != 0
    none = ~m.any(axis=1)
    if none.any():
        m[none] = True
    return m


def _masked_q(q: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``q`` with the disabled actions at -inf, so ``argmax`` and ``max`` see only the enabled ones."""
    return np.where(masks, q, np.float32(-np.inf))


@dataclass
class DQNConfig:
    """Hyper-parameters of DQN.

    The defaults are the rl-zoo settings tuned for CartPole-v1 (2x64 network), with the MSE loss
    (CleanRL) instead of SB3's Huber and keep-best on: on that benchmark (bench/dqn_cartpole.py,
    8 seeds) they solved every seed, where Huber left half of them unsolved at 50k steps. Double
    DQN is available but off: it solved as often, less steadily, and costs a forward pass per step.
    """

    learning_rate: float = 2.3e-3
    """Adam step size."""
    gamma: float = 0.99
    """Discount factor of future rewards."""
    batch_size: int = 64
    """Transitions per gradient step."""
    buffer_size: int = 100_000
    """Replay buffer capacity (transitions); the oldest are dropped first."""
    learning_starts: int = 1000
    """Environment steps of pure collection before the first gradient step."""
    train_freq: int = 256
    """Train every ``train_freq`` environment steps ..."""
    gradient_steps: int = 128
    """... with this many gradient steps each time."""
    target_update_interval: int = 10
    """Environment steps between target-network updates (SB3/CleanRL convention: env steps, not gradient steps)."""
    tau: float = 1.0
    """Target update rate: 1.0 copies the Q-network (hard update); below 1 is Polyak averaging (soft update)."""
    double_dqn: bool = False
    """Pick the next action with the Q-network and value it with the target network (reduces over-estimation)."""
    exploration_fraction: float = 0.16
    """Fraction of training over which epsilon falls linearly from its initial to its final value."""
    exploration_initial_eps: float = 1.0
    """Epsilon (probability of a random action) at the start of training."""
    exploration_final_eps: float = 0.04
    """Epsilon after ``exploration_fraction`` of training."""
    max_grad_norm: float = 10.0
    """Gradients are rescaled to at most this L2 norm."""
    hidden: list[LayerSpec] = field(default_factory=lambda: [LayerSpec(64, "relu"), LayerSpec(64, "relu")])
    """Hidden layers of the Q-network, each with its own size and activation."""
    loss: str = "mse"
    """TD regression loss: ``"huber"`` (SB3's smooth L1) or ``"mse"`` (CleanRL)."""
    adam_eps: float = 1e-8
    """Adam's epsilon (numerical stability)."""
    keep_best: bool = True
    """Remember the parameters with the best evaluation mean return and restore them when training ends."""
    total_timesteps: int = 100_000
    """Training length the exploration schedule is measured against; ``TrainingRun`` sets it from its budget."""

    def __post_init__(self) -> None:
        self.hidden = as_layer_specs(self.hidden)
        if self.loss not in ("huber", "mse"):
            raise ValueError(f"DQNConfig.loss must be 'huber' or 'mse', got {self.loss!r}")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError("DQNConfig.tau must be in (0, 1]")
        for name in ("batch_size", "buffer_size", "train_freq", "target_update_interval"):
            if getattr(self, name) <= 0:
                raise ValueError(f"DQNConfig.{name} must be positive")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class DQNAgent:
    """An epsilon-greedy DQN agent for a ``Discrete`` action space and a ``Box`` observation space.

    Args:
        observation_space: a ``Box``; observations are flattened into the network input.
        action_space: a ``Discrete``; the network has one output (a Q-value) per action.
        config: hyper-parameters (``DQNConfig()`` when omitted).
        seed: seeds the initial weights, exploration and replay sampling.
    """

    def __init__(self, observation_space: Space, action_space: Space, config: DQNConfig | None = None,
                 seed: int | None = 0) -> None:
        if not isinstance(action_space, Discrete):
            raise TypeError(f"DQN needs a Discrete action space, got {action_space!r}")
        if not isinstance(observation_space, Box):
            raise TypeError(f"DQN needs a Box observation space, got {observation_space!r}")
        self.observation_space = observation_space
        self.action_space = action_space
        self.config = cfg = config if config is not None else DQNConfig()
        self.rng = np.random.default_rng(seed)
        self.n_actions = action_space.n
        self.obs_size = observation_space.size

        self.q_network = MLP(self.obs_size, cfg.hidden, self.n_actions, rng=self.rng)
        self.target_network = self.q_network.copy()
        self.origin = params_digest(self.q_network.params)  # the initial weights: see lineage.py
        self.optimizer = Adam(self.q_network.params, lr=cfg.learning_rate, eps=cfg.adam_eps)
        obs_dtype = np.float32 if observation_space.dtype.kind == "f" else observation_space.dtype
        self.replay_buffer = ReplayBuffer(cfg.buffer_size, observation_space.shape, obs_dtype=obs_dtype)
        self.loss_fn = huber if cfg.loss == "huber" else mse

        self.total_timesteps = cfg.total_timesteps
        self.num_timesteps = 0
        self.n_updates = 0
        self.epsilon = cfg.exploration_initial_eps
        self._last_target_update = 0
        self.best_mean_return = -np.inf
        self.best_params: np.ndarray | None = None

        # work arrays for the update: row offsets turn (row, action) into a flat index of the Q output
        self._row_offsets = (np.arange(cfg.batch_size) * self.n_actions)[None, :]
        self._grad_q = np.zeros((cfg.batch_size, self.n_actions), dtype=np.float32)

    # ---- acting -----------------------------------------------------------------------------------

    def predict(self, obs: Any, mask: Any = None) -> int:
        """The greedy action: argmax_a Q(obs, a), over the actions ``mask`` enables when given."""
        if not (isinstance(obs, np.ndarray) and obs.ndim == 1):
            obs = np.reshape(obs, self.obs_size)
        q = self.q_network.forward_into_cache(obs)
        if mask is not None:
            return int(_masked_q(q, enabled_rows(mask, self.n_actions)[0]).argmax())
        return int(q.argmax())

    def act(self, obs: Any, explore: bool = True, mask: Any = None) -> int:
        """Epsilon-greedy action when ``explore``, greedy otherwise; with ``mask`` (one 0/1 per action, the
        env's ``info["action_mask"]``) both the random and the greedy choice are among the enabled actions."""
        if explore and self.rng.random() < self.epsilon:
            if mask is not None:
                enabled = np.flatnonzero(enabled_rows(mask, self.n_actions)[0])
                return int(enabled[self.rng.integers(len(enabled))])
            return int(self.rng.integers(self.n_actions))
        return self.predict(obs, mask)

    def act_batch(self, obs: np.ndarray, explore: bool = True, masks: np.ndarray | None = None) -> np.ndarray:
        """One action per copy of a vector env, ``(N,)`` int64, from ONE network call on the ``(N, ...)`` batch.

        With ``explore`` each copy is epsilon-greedy on its own: N uniform draws decide which copies
        act at random, N more give their random actions (both always drawn, so the stream of the
        agent's generator depends on N only, not on the outcomes). ``masks`` ``(N, n_actions)``: each copy
        chooses (at random and greedily) among the actions its row enables.
        """
        obs = np.asarray(obs)
        n = len(obs)
        x = obs.reshape(n, self.obs_size)
        if x.dtype != np.float32:
            x = x.astype(np.float32)
        q = self.q_network.forward_into_cache(x)
        if masks is not None:
            m = enabled_rows(masks, self.n_actions)
            greedy = _masked_q(q, m).argmax(axis=1).astype(np.int64)
            if not explore:
                return greedy
            random_copies = self.rng.random(n) < self.epsilon
            # the k-th enabled action of each row, k uniform among the row's enabled count
            k = np.floor(self.rng.random(n) * m.sum(axis=1)).astype(np.int64)
            random_actions = (np.cumsum(m, axis=1) <= k[:, None]).sum(axis=1).astype(np.int64)
            return np.where(random_copies, random_actions, greedy)
        greedy = q.argmax(axis=1).astype(np.int64)
        if not explore:
            return greedy
        random_copies = self.rng.random(n) < self.epsilon
        random_actions = self.rng.integers(self.n_actions, size=n)
        return np.where(random_copies, random_actions, greedy)

    # ---- learning ---------------------------------------------------------------------------------

    def observe(self, obs: Any, action: int, reward: float, next_obs: Any, terminated: bool,
                truncated: bool, next_mask: Any = None) -> dict[str, float]:
        """Store a transition, advance the epsilon schedule, and train when it is time; ``next_mask``: the
        actions enabled in ``next_obs`` (the TD target's max is over them).

        Returns ``{"loss": mean loss}`` after a training phase, ``{}`` otherwise.
        """
        cfg = self.config
        self.replay_buffer.add(obs, action, reward, next_obs, terminated, truncated, next_mask)
        self.num_timesteps += 1
        self.epsilon = linear_schedule(cfg.exploration_initial_eps, cfg.exploration_final_eps,
                                       cfg.exploration_fraction, self.num_timesteps / self.total_timesteps)
        if self.num_timesteps > cfg.learning_starts and self.num_timesteps % cfg.train_freq == 0:
            return {"loss": self.update()}
        return {}

    def observe_batch(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, next_obs: np.ndarray,
                      terminated: np.ndarray, truncated: np.ndarray,
                      next_masks: np.ndarray | None = None) -> dict[str, float]:
        """Store the N transitions of one vector step and train as N single ``observe`` calls would schedule it.

        ``next_obs`` must be what each action led to: ``final_obs`` for the copies that ended
        (``vector_env.real_next_obs``). Everything counts environment steps (N per call): epsilon,
        ``learning_starts``, ``train_freq`` and the target updates, so learning per env step matches one
        copy. Every multiple of ``train_freq`` passed (beyond ``learning_starts``) is one phase of
        ``gradient_steps``: ``N / train_freq`` phases per call on average, the fractions carried over in
        ``num_timesteps``; the phases due in one call run as one ``update`` (the buffer does not change
        between them). ``next_masks``: the actions enabled in each ``next_obs``. Returns ``{"loss": mean loss}``
        when it trained, ``{}`` otherwise.
        """
        cfg = self.config
        self.replay_buffer.add_batch(obs, actions, rewards, next_obs, terminated, truncated, next_masks)
        before = self.num_timesteps
        self.num_timesteps += len(rewards)
        self.epsilon = linear_schedule(cfg.exploration_initial_eps, cfg.exploration_final_eps,
                                       cfg.exploration_fraction, self.num_timesteps / self.total_timesteps)
        # phases: multiples k * train_freq in (max(before, learning_starts), num_timesteps]
        start = max(before, cfg.learning_starts)
        phases = max(self.num_timesteps // cfg.train_freq - start // cfg.train_freq, 0)
        if phases:
            return {"loss": self.update(phases * cfg.gradient_steps)}
        return {}

    def update(self, gradient_steps: int | None = None) -> float:
        """One training phase: ``gradient_steps`` DQN gradient steps, then the target update; returns the mean loss.

        Reads like the paper / CleanRL: target -> td_target -> loss -> grad -> clip -> step -> target update.
        The target network is fixed during a phase, so steps 1-2 value all the phase's next states in one
        batched pass (double DQN has to pick the next actions per step, with the current online network).
        """
        cfg = self.config
        n_steps = cfg.gradient_steps if gradient_steps is None else int(gradient_steps)
        batch_size = cfg.batch_size
        data = self.replay_buffer.sample(batch_size * n_steps, self.rng)
        obs, next_obs = self._flat(data.obs), self._flat(data.next_obs)
        actions = data.actions.reshape(n_steps, batch_size)
        # flat indices of Q(s_i, a_i) inside each step's (batch_size, n_actions) output
        taken = self._row_offsets + actions
        # and as a one-hot mask: dloss/dQ is dloss/dQ(s_i, a_i) at the taken action, 0 elsewhere, so
        # one broadcast multiply per step builds it (instead of fill + put)
        taken_mask = (actions[:, :, None] == np.arange(self.n_actions)).astype(np.float32)

        # 1. target: the value of each next state under the target network (a work array of the
        #    target network: nothing else runs it during the phase)
        next_q_target = self.target_network.forward_into_cache(next_obs)
        next_masks = None if data.next_masks is None else enabled_rows(data.next_masks, self.n_actions)
        if next_masks is not None:  # the max (and double DQN's argmax) is over the next state's enabled actions
            next_q_target = _masked_q(next_q_target, next_masks)
        if not cfg.double_dqn:
            next_q = _row_max(next_q_target)
            # 2. td_target = r + gamma * max_a' Q_target(s', a'), not bootstrapped from terminal states
            #    (truncated ones still bootstrap: the time limit is not part of the task)
            td_targets = data.rewards + cfg.gamma * (1.0 - data.terminated) * next_q

        q_network, optimizer, loss_fn, grad_q = self.q_network, self.optimizer, self.loss_fn, self._grad_q
        total_loss = 0.0
        for k in range(n_steps):
            rows = slice(k * batch_size, (k + 1) * batch_size)
            if cfg.double_dqn:
                # 1b. double DQN: the online network picks the next action, the target network values it
                next_online = q_network.forward_into_cache(next_obs[rows])
                if next_masks is not None:
                    next_online = _masked_q(next_online, next_masks[rows])
                next_actions = next_online.argmax(axis=1)
                next_q = np.take(next_q_target[rows].ravel(), self._row_offsets[0] + next_actions)
                # 2. td_target = r + gamma * Q_target(s', argmax_a' Q(s', a')), terminal states not bootstrapped
                td_target = data.rewards[rows] + cfg.gamma * (1.0 - data.terminated[rows]) * next_q
            else:
                td_target = td_targets[rows]

            # 3. loss between Q(s, a) of the taken actions and the TD target
            q_values = q_network.forward_train(obs[rows])
            q_taken = q_values.take(taken[k])  # flat indices into the (batch_size, n_actions) output
            loss, grad_q_taken = loss_fn(q_taken, td_target)

            # 4. grad: dloss/dQ is non-zero only at the taken actions; backpropagate it
            np.multiply(taken_mask[k], grad_q_taken[:, None], out=grad_q)
            grad = q_network.backward(grad_q)

            # 5. clip the gradient norm, then take an Adam step
            clip_grad_norm(grad, cfg.max_grad_norm)
            optimizer.step(grad)
            total_loss += loss
        self.n_updates += n_steps

        # 6. target update, once every target_update_interval environment steps (SB3/CleanRL units)
        interval = cfg.target_update_interval
        syncs = self.num_timesteps // interval - self._last_target_update // interval
        if syncs > 0:
            self.update_target(syncs)
        return total_loss / max(n_steps, 1)

    def update_target(self, syncs: int = 1) -> None:
        """theta_target <- tau * theta + (1 - tau) * theta_target, ``syncs`` times (a plain copy when tau == 1).

        The Q-network does not change between training phases, so ``syncs`` Polyak updates in a row
        equal one with rate ``1 - (1 - tau) ** syncs``: the same target as SB3's update per env step.
        """
        self._last_target_update = self.num_timesteps
        rate = 1.0 - (1.0 - self.config.tau) ** syncs
        if rate >= 1.0:
            np.copyto(self.target_network.params, self.q_network.params)
        else:
            target = self.target_network.params
            target *= np.float32(1.0 - rate)
            target += np.float32(rate) * self.q_network.params

    def _flat(self, x: np.ndarray) -> np.ndarray:
        return x if x.ndim == 2 and x.shape[1] == self.obs_size else x.reshape(len(x), self.obs_size)

    # ---- hooks called by the training loop ----------------------------------------------------------

    def on_training_start(self, total_steps: int) -> None:
        """Measure the exploration schedule against the run's length."""
        self.total_timesteps = max(int(total_steps), 1)

    def on_evaluation(self, step: int, mean_return: float) -> None:
        """Keep-best: remember the parameters of the best (latest among equals) greedy evaluation."""
        if self.config.keep_best and mean_return >= self.best_mean_return:
            self.best_mean_return = float(mean_return)
            if self.best_params is None:
                self.best_params = self.q_network.params.copy()
            else:
                np.copyto(self.best_params, self.q_network.params)

    def on_training_end(self) -> None:
        """Keep-best: put the best evaluated parameters back into both networks."""
        if self.config.keep_best and self.best_params is not None:
            np.copyto(self.q_network.params, self.best_params)
            np.copyto(self.target_network.params, self.best_params)

    # ---- export -------------------------------------------------------------------------------------

    def to_model(self, meta: dict[str, Any] | None = None) -> Any:
        """The trained Q-network as a ``model_io.Model`` (greedy policy), ready for ``save_model``.

        A network grown or pruned during training (``growth.grow_agent``) has its history in ``meta["growth"]``.
        """
        meta = dict(meta or {})
        meta.setdefault("ancestry", ancestry_record(self.origin, self.q_network.params))
        if self.replay_buffer.next_masks is not None:  # trained under action masks: exports take a mask
            meta.setdefault("action_mask", True)
        growth = getattr(self, "growth_history", None)
        if growth:
            meta["growth"] = [dict(record) for record in growth]
        return Model(network=self.q_network.copy(), observation_space=self.observation_space,
                     action_space=self.action_space, kind="dqn", meta=meta,
                     extra={"config": self.config.to_dict(), "num_timesteps": self.num_timesteps})
