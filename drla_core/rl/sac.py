"""Soft Actor-Critic (Haarnoja et al., 2018, with the automatic temperature of the second paper) for continuous actions.

The shape follows SB3's ``SAC`` (twin Q networks and their Polyak-averaged targets, a tanh-squashed diagonal
Gaussian policy, the entropy temperature learnt towards a target entropy of ``-|A|``, replay as DQN's) and the
update reads top to bottom like CleanRL's ``sac_continuous_action.py``: temperature -> target -> critic ->
actor -> target update, one gradient step at a time.

Everything is float32 numpy. Actions live in ``[-1, 1]`` (the action space must be that box: every continuous
action of DRLA is, from the pendulum to a Motor Action node); the deterministic policy, ``tanh(mean)``, is what
``predict`` and the exported model (``to_model``: an MLP whose output activation is ``tanh``) give.

The gradients are written out by hand. With ``u = mean + std * eps`` (eps ~ N(0, 1), drawn from the agent's
generator), ``a = tanh(u)`` and ``log pi(a|s) = sum_j (-eps_j^2 / 2 - log std_j - log(2 pi) / 2
- log(1 - tanh(u_j)^2))``, where ``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))`` exactly (SB3 adds 1e-6
inside the log instead) and its derivative is ``-2 tanh(u)``:
``d log pi / d mean = 2a`` and ``d log pi / d log_std = -1 + 2a * std * eps``; ``tests/test_sac.py`` checks every
gradient against finite differences.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..base.lineage import ancestry_record, params_digest
from ..base.spaces import Box, Space
from ..io.model_io import Model
from ..nn.mlp import MLP, LayerSpec, _activation_grad, as_layer_specs
from ..nn.optim import Adam
from .replay_buffer import ReplayBuffer

__all__ = ["SACConfig", "SACAgent", "LOG_STD_MIN", "LOG_STD_MAX"]

#: The policy's log standard deviation is clipped to this range (SB3's bounds).
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
_HALF_LOG_2PI = np.float32(0.5 * math.log(2.0 * math.pi))
_LOG2 = np.float32(math.log(2.0))


@dataclass
class SACConfig:
    """Hyper-parameters of SAC.

    The defaults are SB3's (the rl-zoo's Pendulum-v1 settings: learning rate 1e-3, the rest SB3's defaults)
    except the network, 2x64 instead of 2x256, and a replay buffer of 100 000: on the pendulum they reach SB3's final
    return at a sixteenth of the arithmetic per gradient step, in a few more steps (bench/sac_pendulum.py, seeds 0-9:
    median 7,000 against SB3's 6,000; 2x128 matches SB3's 6,000 at a quarter of 2x256's arithmetic).
    """

    learning_rate: float = 1e-3
    """Adam step size of the actor, the critics and the temperature."""
    gamma: float = 0.99
    """Discount factor of future rewards."""
    batch_size: int = 256
    """Transitions per gradient step."""
    buffer_size: int = 100_000
    """Replay buffer capacity (transitions); the oldest are dropped first."""
    learning_starts: int = 100
    """Environment steps of uniformly random actions before the first gradient step."""
    train_freq: int = 1
    """Train every ``train_freq`` environment steps ..."""
    gradient_steps: int = 1
    """... with this many gradient steps each time."""
    tau: float = 0.005
    """Polyak rate of the target critics: target <- tau * critic + (1 - tau) * target after every gradient step."""
    init_temperature: float = 1.0
    """The entropy temperature (alpha) at the start; it is learnt from there unless ``learn_temperature`` is off."""
    learn_temperature: bool = True
    """Learn the temperature so that the policy's entropy tends to ``target_entropy`` (-|A| when not given)."""
    target_entropy: float | None = None
    """The entropy the temperature steers the policy to; None: minus the number of action dimensions."""
    hidden: list[LayerSpec] = field(default_factory=lambda: [LayerSpec(64, "relu"), LayerSpec(64, "relu")])
    """Hidden layers of the actor and of each critic, each with its own size and activation."""
    adam_eps: float = 1e-8
    """Adam's epsilon (numerical stability)."""
    keep_best: bool = True
    """Remember the policy with the best evaluation mean return and restore it when training ends."""
    total_timesteps: int = 20_000
    """Training length; ``TrainingRun`` sets it from its budget."""

    def __post_init__(self) -> None:
        self.hidden = as_layer_specs(self.hidden)
        if not 0.0 < self.tau <= 1.0:
            raise ValueError("SACConfig.tau must be in (0, 1]")
        if not (math.isfinite(self.init_temperature) and self.init_temperature > 0.0):
            raise ValueError("SACConfig.init_temperature must be a positive number")
        for name in ("batch_size", "buffer_size", "train_freq", "gradient_steps"):
            if getattr(self, name) <= 0:
                raise ValueError(f"SACConfig.{name} must be positive")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _log1m_tanh2(u: np.ndarray) -> np.ndarray:
    """log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), without the overflow or the 0 of the direct form."""
    v = -2.0 * u
    softplus = np.maximum(v, 0.0) + np.log1p(np.exp(-np.abs(v)))
    return (2.0 * (_LOG2 - u - softplus)).astype(np.float32)


def _input_grad(net: MLP, grad_y: np.ndarray) -> np.ndarray:
    """dL/dx of the network's last ``forward_train`` given dL/dy (no parameter gradients: the actor's step
    backpropagates through the critics to their action inputs only)."""
    cache = net._last_train
    assert cache is not None, "_input_grad needs a forward_train first"
    z, masks, acts = cache["z"], cache["masks"], net.activations
    last = len(z) - 1
    delta = np.array(grad_y, dtype=np.float32).reshape(z[last].shape)
    if acts[last] != "linear":
        _activation_grad(acts[last], z[last], delta, masks[last])
    for i in range(last, 0, -1):
        delta = delta @ net.weights[i].T
        if acts[i - 1] != "linear":
            _activation_grad(acts[i - 1], z[i - 1], delta, masks[i - 1])
    return delta @ net.weights[0].T


class SACAgent:
    """A SAC agent for a ``Box`` observation space and a ``Box(-1, 1)`` action space.

    Args:
        observation_space: a ``Box``; observations are flattened into the networks' input.
        action_space: a ``Box`` with every bound -1 and 1 (normalised actions).
        config: hyper-parameters (``SACConfig()`` when omitted).
        seed: seeds the initial weights, the exploration noise and the replay sampling.
    """

    checkpoint_kind = "sac"

    def __init__(self, observation_space: Space, action_space: Space, config: SACConfig | None = None,
                 seed: int | None = 0) -> None:
        if not isinstance(observation_space, Box):
            raise TypeError(f"SAC needs a Box observation space, got {observation_space!r}")
        if not isinstance(action_space, Box):
            raise TypeError(f"SAC needs continuous actions (a Box action space), got {action_space!r}: "
                            "train a set of actions with DQN")
        if not (np.all(action_space.low == -1.0) and np.all(action_space.high == 1.0)):
            raise ValueError(f"SAC needs actions normalised to [-1, 1], got bounds {action_space.low.tolist()} .. "
                             f"{action_space.high.tolist()}: scale the environment's actions")
        self.observation_space = observation_space
        self.action_space = action_space
        self.config = cfg = config if config is not None else SACConfig()
        self.rng = np.random.default_rng(seed)
        self.obs_size = observation_space.size
        self.n_actions = action_space.size
        self.target_entropy = float(-self.n_actions if cfg.target_entropy is None else cfg.target_entropy)

        a = self.n_actions
        self.actor = MLP(self.obs_size, cfg.hidden, 2 * a, rng=self.rng)  # outputs: mean, log std
        self.critics = [MLP(self.obs_size + a, cfg.hidden, 1, rng=self.rng) for _ in range(2)]
        self.targets = [c.copy() for c in self.critics]
        self.log_temperature = np.array([math.log(cfg.init_temperature)], dtype=np.float32)
        self.origin = params_digest(self.actor.params)
        self.optimizers = {"actor": Adam(self.actor.params, lr=cfg.learning_rate, eps=cfg.adam_eps),
                           "critic1": Adam(self.critics[0].params, lr=cfg.learning_rate, eps=cfg.adam_eps),
                           "critic2": Adam(self.critics[1].params, lr=cfg.learning_rate, eps=cfg.adam_eps),
                           "temperature": Adam(self.log_temperature, lr=cfg.learning_rate, eps=cfg.adam_eps)}
        obs_dtype = np.float32 if observation_space.dtype.kind == "f" else observation_space.dtype
        self.replay_buffer = ReplayBuffer(cfg.buffer_size, observation_space.shape, obs_dtype=obs_dtype,
                                          action_shape=action_space.shape, action_dtype=np.float32)
        self.total_timesteps = cfg.total_timesteps
        self.num_timesteps = 0
        self.n_updates = 0
        self.last_losses = {"critic": 0.0, "actor": 0.0}
        self.best_mean_return = -np.inf
        self.best_params: np.ndarray | None = None

    @property
    def temperature(self) -> float:
        """The entropy temperature alpha."""
        return float(np.exp(self.log_temperature[0]))

    #: The training loop records ``exploration`` per episode where DQN's epsilon goes; the report names it so.
    exploration_label = "temperature"
    exploration = temperature

    # ---- the policy -----------------------------------------------------------------------------------------

    def _flat(self, obs: Any) -> np.ndarray:
        x = np.asarray(obs, dtype=np.float32)
        return x.reshape(self.obs_size) if x.size == self.obs_size else x.reshape(-1, self.obs_size)

    def sample(self, y: np.ndarray, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """From the actor's outputs ``y`` (B, 2A) and the noise ``eps`` (B, A): ``(action, log_prob, u, std)``."""
        a = self.n_actions
        mean, log_std = y[:, :a], np.clip(y[:, a:], LOG_STD_MIN, LOG_STD_MAX)
        std = np.exp(log_std)
        u = mean + std * eps
        action = np.tanh(u)
        log_prob = (-0.5 * eps * eps - log_std - _HALF_LOG_2PI - _log1m_tanh2(u)).sum(axis=1)
        return action, log_prob.astype(np.float32), u, std

    def predict(self, obs: Any) -> np.ndarray:
        """The deterministic action tanh(mean), shaped like the action space (a batch: one more axis in front)."""
        x = self._flat(obs)
        mean = self.actor.forward(x)[..., :self.n_actions]
        return np.tanh(mean).reshape(mean.shape[:-1] + self.action_space.shape)

    def act(self, obs: Any, explore: bool = True) -> np.ndarray:
        """A sampled action when ``explore`` (uniformly random before ``learning_starts``), else ``predict``."""
        if not explore:
            return self.predict(obs)
        return self.act_batch(self._flat(obs).reshape(1, self.obs_size))[0]

    def act_batch(self, obs: np.ndarray, explore: bool = True) -> np.ndarray:
        """One action per copy of a vector env, ``(N, *action_shape)``, from ONE actor call on the batch."""
        x = np.asarray(obs, dtype=np.float32).reshape(len(obs), self.obs_size)
        shape = (len(x), *self.action_space.shape)
        if not explore:
            return self.predict(x)
        if self.num_timesteps < self.config.learning_starts:
            return self.rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
        eps = self.rng.standard_normal((len(x), self.n_actions), dtype=np.float32)
        action, _, _, _ = self.sample(self.actor.forward(x), eps)
        return action.reshape(shape)

    # ---- learning ----------------------------------------------------------------------------------------

    def observe(self, obs: Any, action: Any, reward: float, next_obs: Any, terminated: bool,
                truncated: bool) -> dict[str, float]:
        """Store a transition and train when it is time; returns ``{"loss": critic loss}`` when it trained."""
        self.replay_buffer.add(obs, action, reward, next_obs, terminated, truncated)
        return self._after(1)

    def observe_batch(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, next_obs: np.ndarray,
                      terminated: np.ndarray, truncated: np.ndarray) -> dict[str, float]:
        """The N transitions of one vector step (``next_obs``: ``vector_env.real_next_obs``); every multiple of
        ``train_freq`` env steps passed beyond ``learning_starts`` is one phase of ``gradient_steps``."""
        self.replay_buffer.add_batch(obs, actions, rewards, next_obs, terminated, truncated)
        return self._after(len(rewards))

    def _after(self, n: int) -> dict[str, float]:
        cfg = self.config
        before = self.num_timesteps
        self.num_timesteps += n
        start = max(before, cfg.learning_starts)
        phases = max(self.num_timesteps // cfg.train_freq - start // cfg.train_freq, 0)
        if phases:
            return {"loss": self.update(phases * cfg.gradient_steps)}
        return {}

    def update(self, gradient_steps: int | None = None) -> float:
        """``gradient_steps`` SAC gradient steps on replayed batches; returns the mean critic loss."""
        cfg = self.config
        n_steps = cfg.gradient_steps if gradient_steps is None else int(gradient_steps)
        b, o = cfg.batch_size, self.obs_size
        data = self.replay_buffer.sample(b * n_steps, self.rng)
        obs, next_obs = data.obs.reshape(-1, o), data.next_obs.reshape(-1, o)
        actions = data.actions.reshape(-1, self.n_actions)
        total = 0.0
        for k in range(n_steps):
            rows = slice(k * b, (k + 1) * b)
            total += self.gradient_step(obs[rows], actions[rows], data.rewards[rows], next_obs[rows],
                                        data.terminated[rows])
        self.n_updates += n_steps
        return total / max(n_steps, 1)

    def gradient_step(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, next_obs: np.ndarray,
                      terminated: np.ndarray) -> float:
        """One step of each part, in SB3's order: temperature, critics, actor, targets. Returns the critic loss."""
        gen = self.rng
        eps = gen.standard_normal((len(obs), self.n_actions), dtype=np.float32)
        next_eps = gen.standard_normal((len(obs), self.n_actions), dtype=np.float32)
        alpha = np.float32(self.temperature)  # the losses of this step use alpha before its update (SB3)

        # 1. the policy on the batch (kept for the actor's backward) and the temperature's step
        y = self.actor.forward_train(obs)
        action_pi, log_prob, u, std = self.sample(y, eps)
        if self.config.learn_temperature:
            _, grad = self.temperature_loss(log_prob)
            self.optimizers["temperature"].step(grad)

        # 2. target: r + gamma * (1 - terminated) * (min_i Q_target_i(s', a') - alpha * log pi(a'|s'))
        target = self.td_target(rewards, next_obs, terminated, next_eps, alpha)

        # 3. critics: 0.5 * sum_i mean((Q_i(s, a) - target)^2)
        loss, grads = self.critic_loss(obs, actions, target)
        for i, grad in enumerate(grads):
            self.optimizers[f"critic{i + 1}"].step(grad)

        # 4. actor: mean(alpha * log pi(a~|s) - min_i Q_i(s, a~)) through the updated critics
        self.last_losses["actor"], grad = self.actor_loss(obs, y, eps, alpha, action_pi, log_prob, u, std)
        self.optimizers["actor"].step(grad)

        # 5. targets follow the critics
        self.polyak_update()
        self.last_losses["critic"] = loss
        return loss

    def temperature_loss(self, log_prob: np.ndarray) -> tuple[float, np.ndarray]:
        """-log(alpha) * mean(log pi + target entropy) (SB3's, on log alpha), and its gradient."""
        m = float(np.mean(log_prob, dtype=np.float64)) + self.target_entropy
        return -float(self.log_temperature[0]) * m, np.array([-m], dtype=np.float32)

    def td_target(self, rewards: np.ndarray, next_obs: np.ndarray, terminated: np.ndarray, next_eps: np.ndarray,
                  alpha: np.float32) -> np.ndarray:
        next_action, next_log_prob, _, _ = self.sample(self.actor.forward(next_obs), next_eps)
        x = np.concatenate([next_obs, next_action], axis=1)
        q = np.minimum(self.targets[0].forward(x)[:, 0], self.targets[1].forward(x)[:, 0])
        return (rewards + np.float32(self.config.gamma) * (1.0 - terminated) * (q - alpha * next_log_prob)).astype(
            np.float32)

    def critic_loss(self, obs: np.ndarray, actions: np.ndarray, target: np.ndarray) -> tuple[float, list[np.ndarray]]:
        """0.5 * sum_i mean((Q_i(s, a) - target)^2) and each critic's gradient (copies)."""
        x = np.concatenate([obs, actions], axis=1)
        loss, grads = 0.0, []
        for critic in self.critics:
            diff = critic.forward_train(x)[:, 0] - target
            loss += 0.5 * float(np.dot(diff, diff)) / len(diff)
            grads.append(critic.backward((diff / np.float32(len(diff)))[:, None]).copy())
        return loss, grads

    def actor_loss(self, obs: np.ndarray, y: np.ndarray, eps: np.ndarray, alpha: np.float32,
                   action: np.ndarray, log_prob: np.ndarray, u: np.ndarray,
                   std: np.ndarray) -> tuple[float, np.ndarray]:
        """mean(alpha * log pi(a~|s) - min_i Q_i(s, a~)) with a~ = tanh(mean + std * eps), and its gradient with
        respect to the actor's parameters (``y``: the actor's outputs from its last ``forward_train`` on ``obs``)."""
        n, a = len(obs), self.n_actions
        x = np.concatenate([obs, action], axis=1)
        q = [critic.forward_train(x)[:, 0].copy() for critic in self.critics]
        first = q[0] <= q[1]
        q_min = np.where(first, q[0], q[1])
        loss = float(np.mean(alpha * log_prob - q_min, dtype=np.float64))
        # dL/da~ through whichever critic is the smaller (the other's share is 0)
        grad_action = np.zeros((n, a), dtype=np.float32)
        for critic, mask in zip(self.critics, (first, ~first)):  # each critic keeps its own forward_train
            grad_action += _input_grad(critic, (mask * np.float32(-1.0 / n))[:, None])[:, self.obs_size:]
        scale = alpha / np.float32(n)
        grad_u = scale * 2.0 * action + grad_action * (1.0 - action * action)
        grad_log_std = -scale + grad_u * std * eps
        raw = y[:, a:]
        grad_log_std[(raw < LOG_STD_MIN) | (raw > LOG_STD_MAX)] = 0.0  # clipped: no gradient
        grad_y = np.concatenate([grad_u, grad_log_std], axis=1).astype(np.float32)
        # ``y`` is the actor's train cache; the td_target's forward used the inference cache, so it still holds
        return loss, self.actor.backward(grad_y).copy()

    def polyak_update(self) -> None:
        """theta_target <- tau * theta + (1 - tau) * theta_target, for both critics."""
        tau = np.float32(self.config.tau)
        for critic, target in zip(self.critics, self.targets):
            target.params *= np.float32(1.0) - tau
            target.params += tau * critic.params

    # ---- hooks called by the training loop ----------------------------------------------------------------

    def on_training_start(self, total_steps: int) -> None:
        self.total_timesteps = max(int(total_steps), 1)

    def on_evaluation(self, step: int, mean_return: float) -> None:
        """Keep-best: remember the policy of the best (latest among equals) greedy evaluation."""
        if self.config.keep_best and mean_return >= self.best_mean_return:
            self.best_mean_return = float(mean_return)
            self.best_params = self.actor.params.copy()

    def on_training_end(self) -> None:
        """Keep-best: put the best evaluated policy back (the critics keep training's end)."""
        if self.config.keep_best and self.best_params is not None:
            np.copyto(self.actor.params, self.best_params)

    def status(self) -> dict[str, str]:
        """What the progress line shows for SAC, beside the episodes and the return."""
        return {"Temperature": f"{self.temperature:.3f}"}

    # ---- checkpoints (rl/checkpoint.py asks the agent for its own state; it saves the replay buffer) -------

    def architecture(self) -> dict[str, Any]:
        return {"actor": self.actor.architecture(), "critic": self.critics[0].architecture()}

    def checkpoint_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """``(meta, arrays)``: the networks, Adam's moments, the temperature, the generator and the counters
        (the arrays are views; the caller copies or writes them at once)."""
        arrays = {"actor_params": self.actor.params, "log_temperature": self.log_temperature}
        for i, (critic, target) in enumerate(zip(self.critics, self.targets)):
            arrays[f"critic{i + 1}_params"] = critic.params
            arrays[f"target{i + 1}_params"] = target.params
        for name, opt in self.optimizers.items():
            arrays[f"adam_{name}_m_scaled"] = opt._m
            arrays[f"adam_{name}_v_scaled"] = opt._v
        if self.best_params is not None:
            arrays["best_params"] = self.best_params
        state = self.rng.bit_generator.state
        best = float(self.best_mean_return)
        meta = {"config": self.config.to_dict(), "architecture": self.architecture(),
                "observation_space": self.observation_space.to_dict(), "action_space": self.action_space.to_dict(),
                "rng": dict(state), "num_timesteps": int(self.num_timesteps), "n_updates": int(self.n_updates),
                "total_timesteps": int(self.total_timesteps), "last_losses": dict(self.last_losses),
                "best_mean_return": best if math.isfinite(best) else None, "origin": self.origin,
                "adam": {name: {"t": int(opt.t)} for name, opt in self.optimizers.items()}}
        return meta, arrays

    def checkpoint_mismatch(self, meta: dict[str, Any]) -> str | None:
        """Why this agent cannot continue the checkpointed one (``None``: it can)."""
        from .restore import describe_network
        if meta.get("architecture") != self.architecture():
            return (f"the network differs: the checkpoint has {describe_network(meta['architecture'])}, this run "
                    f"{describe_network(self.architecture())}; a resumed run keeps its network (drop the change to "
                    "the hidden layers, or start a new run)")
        return None

    def load_checkpoint_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray], total_steps: int) -> None:
        """Put a ``checkpoint_state`` back (the learning rates come from this agent's config)."""
        np.copyto(self.actor.params, arrays["actor_params"])
        np.copyto(self.log_temperature, arrays["log_temperature"])
        for i, (critic, target) in enumerate(zip(self.critics, self.targets)):
            np.copyto(critic.params, arrays[f"critic{i + 1}_params"])
            np.copyto(target.params, arrays[f"target{i + 1}_params"])
        for name, opt in self.optimizers.items():
            np.copyto(opt._m, arrays[f"adam_{name}_m_scaled"])
            np.copyto(opt._v, arrays[f"adam_{name}_v_scaled"])
            opt.t = int(meta["adam"][name]["t"])
        self.best_params = arrays["best_params"].copy() if "best_params" in arrays else None
        self.rng.bit_generator.state = meta["rng"]
        self.num_timesteps, self.n_updates = int(meta["num_timesteps"]), int(meta["n_updates"])
        self.last_losses = {k: float(v) for k, v in meta["last_losses"].items()}
        best = meta["best_mean_return"]
        self.best_mean_return = -np.inf if best is None else float(best)
        self.origin = str(meta.get("origin", self.origin))
        self.total_timesteps = max(int(total_steps), 1)

    # ---- export -------------------------------------------------------------------------------------------

    def policy_network(self) -> MLP:
        """The deterministic policy as one MLP: the actor's layers, its mean outputs only, tanh on them."""
        net = MLP(self.obs_size, self.config.hidden, self.n_actions, output_activation="tanh", rng=0)
        for i in range(self.actor.num_layers - 1):
            np.copyto(net.weights[i], self.actor.weights[i])
            np.copyto(net.biases[i], self.actor.biases[i])
        np.copyto(net.weights[-1], self.actor.weights[-1][:, :self.n_actions])
        np.copyto(net.biases[-1], self.actor.biases[-1][:self.n_actions])
        return net

    def to_model(self, meta: dict[str, Any] | None = None) -> Model:
        """The deterministic policy tanh(mean) as a ``model_io.Model`` (kind ``"mlp"``: its outputs are the
        actions, clipped to the action space by ``Model.act``), ready for ``save_model``."""
        meta = {"agent": "sac", **dict(meta or {})}
        meta.setdefault("ancestry", ancestry_record(self.origin, self.actor.params))
        return Model(network=self.policy_network(), observation_space=self.observation_space,
                     action_space=self.action_space, kind="mlp", meta=meta,
                     extra={"config": self.config.to_dict(), "num_timesteps": self.num_timesteps,
                            "temperature": self.temperature})
