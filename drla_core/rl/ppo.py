"""Proximal Policy Optimization (Schulman et al., 2017) in float32 numpy, shaped like SB3's ``PPO``.

The agent plugs into the one training loop (``TrainingRun`` / ``VectorTrainingRun``) as DQN does: ``act_batch``
samples the N copies' actions from ONE forward of the policy (and one of the critic, when separate), keeping
the log-probabilities and values; ``observe_batch`` stores the rewards, and every ``n_steps`` vector steps the
rollout (``n_steps * N`` transitions) is turned into GAE(lambda) advantages and learnt from: ``n_epochs``
passes of shuffled minibatches of the clipped surrogate, the value loss (optionally clipped around the old
values, as SB3), the entropy bonus, one global gradient-norm clip and Adam. Learning rate and clip range
follow a constant or linear schedule of the progress ``1 - steps / total_steps`` (SB3's ``progress_remaining``).
The actor, the critic and the log std live in one parameter vector, so one Adam step (``AdamGroup``) and one
gradient scale update them all; each epoch puts the rollout in its shuffled order once and takes slices of it.

Options: running observation normalisation (exported in the model's ``obs_norm``, so the file plays the same
policy) and reward scaling by the running standard deviation of the discounted return (VecNormalize's); a
shared or separate actor / critic trunk; Discrete, MultiDiscrete and Box actions (``policies``). A truncated
episode (time limit) bootstraps its last reward with ``gamma * V(final observation)``, as SB3 does.

The deterministic policy is the argmax of the logits (Discrete) or the mean clipped to the bounds (Box); it is
what ``predict`` answers and what ``to_model`` exports (kind ``"mlp"``: the actor network alone).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..base.lineage import ancestry_record, params_digest
from ..base.spaces import Box, Discrete, MultiDiscrete, Space
from ..io.model_io import Model
from ..nn.mlp import MLP, LayerSpec, as_layer_specs
from ..nn.optim import Adam, AdamGroup
from .policies import GaussianHead, RunningMeanStd, head_for, init_orthogonal, masked_logits

__all__ = ["PPOConfig", "PPOAgent", "schedule_value"]

SCHEDULES = ("constant", "linear")


def schedule_value(start: float, schedule: str, progress_remaining: float) -> float:
    """``start`` (constant) or ``start * progress_remaining`` (linear, SB3's ``get_linear_fn(start, 0, 1)``)."""
    return float(start) if schedule == "constant" else float(start) * float(progress_remaining)


@dataclass
class PPOConfig:
    """Hyper-parameters of PPO. The defaults are SB3's ``PPO`` defaults (CartPole's rl-zoo settings: the CLI's
    per-environment defaults); ``n_steps`` counts vector steps, so a rollout holds ``n_steps * copies``
    transitions."""

    learning_rate: float = 3e-4
    """Adam step size (at the start, with the linear schedule)."""
    lr_schedule: str = "constant"
    """``constant``, or ``linear``: the learning rate falls to 0 at the end of training."""
    n_steps: int = 2048
    """Steps of each copy per rollout: the policy learns every ``n_steps`` vector steps."""
    batch_size: int = 64
    """Transitions per minibatch."""
    n_epochs: int = 10
    """Passes over each rollout."""
    gamma: float = 0.99
    """Discount factor of future rewards."""
    gae_lambda: float = 0.95
    """GAE's lambda: 1 is Monte-Carlo returns, 0 one-step TD."""
    clip_range: float = 0.2
    """How far the probability ratio may move from 1 before the surrogate stops rewarding it."""
    clip_schedule: str = "constant"
    """``constant``, or ``linear``: the clip range falls to 0 at the end of training."""
    clip_range_vf: float = 0.0
    """Clip the new values to the old ones plus or minus this (0: no value clipping)."""
    ent_coef: float = 0.0
    """Weight of the entropy bonus."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    max_grad_norm: float = 0.5
    """Gradients (all parameters together) are rescaled to at most this L2 norm."""
    normalize_advantage: bool = True
    """Normalise the advantages of each minibatch to mean 0, standard deviation 1."""
    normalize_obs: bool = False
    """Normalise observations by their running mean and standard deviation (saved with the model)."""
    normalize_reward: bool = False
    """Scale rewards by the running standard deviation of the discounted return."""
    shared_trunk: bool = False
    """One network for the actor and the critic (the value is one more output) instead of two."""
    hidden: list[LayerSpec] = field(default_factory=lambda: [LayerSpec(64, "tanh"), LayerSpec(64, "tanh")])
    """Hidden layers of the actor and of the critic, each with its own size and activation."""
    log_std_init: float = 0.0
    """Initial log standard deviation of a continuous policy."""
    ortho_init: bool = True
    """Orthogonal initial weights (gains sqrt 2, 0.01 for the policy outputs, 1 for the value), as SB3."""
    adam_eps: float = 1e-5
    """Adam's epsilon (SB3's PPO uses 1e-5)."""
    total_timesteps: int = 100_000
    """Training length the schedules are measured against; ``TrainingRun`` sets it from its budget."""

    def __post_init__(self) -> None:
        self.hidden = as_layer_specs(self.hidden)
        for name in ("lr_schedule", "clip_schedule"):
            if getattr(self, name) not in SCHEDULES:
                raise ValueError(f"PPOConfig.{name} must be 'constant' or 'linear', got {getattr(self, name)!r}")
        for name in ("n_steps", "batch_size", "n_epochs"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"PPOConfig.{name} must be positive, got {getattr(self, name)}")
        if not 0.0 < self.clip_range:
            raise ValueError(f"PPOConfig.clip_range must be positive, got {self.clip_range}")
        if self.learning_rate <= 0 or self.max_grad_norm <= 0:
            raise ValueError("PPOConfig.learning_rate and max_grad_norm must be positive")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class PPOAgent:
    """A PPO agent for a ``Box`` observation space and a Discrete, MultiDiscrete or Box action space.

    Args:
        observation_space: a ``Box``; observations are flattened into the network input.
        action_space: ``Discrete`` / ``MultiDiscrete`` (softmax policies) or ``Box`` (diagonal Gaussian).
        config: hyper-parameters (``PPOConfig()`` when omitted).
        seed: seeds the initial weights, the action draws and the minibatch shuffles.
    """

    checkpoint_kind = "ppo"

    def __init__(self, observation_space: Space, action_space: Space, config: PPOConfig | None = None,
                 seed: int | None = 0) -> None:
        if not isinstance(observation_space, Box):
            raise TypeError(f"PPO needs a Box observation space, got {observation_space!r}")
        self.config = cfg = config if config is not None else PPOConfig()
        self.observation_space, self.action_space = observation_space, action_space
        self.head = head_for(action_space, cfg.log_std_init, 'PPO')
        self.rng = np.random.default_rng(seed)
        self.obs_size = observation_space.size
        k = self.n_policy = self.head.n_outputs
        # every parameter (actor, critic, log std) lives in one vector, stepped by one Adam (AdamGroup)
        sizes = [MLP.param_count(self.obs_size, cfg.hidden, k + cfg.shared_trunk)]
        sizes += [] if cfg.shared_trunk else [MLP.param_count(self.obs_size, cfg.hidden, 1)]
        n_std = k if isinstance(self.head, GaussianHead) else 0
        self._flat_params = np.zeros(sum(sizes) + n_std, dtype=np.float32)
        self._flat_grad = np.zeros_like(self._flat_params)
        ends = np.cumsum([0] + sizes)
        nets = [MLP(self.obs_size, cfg.hidden, k + cfg.shared_trunk if i == 0 else 1, rng=self.rng,
                    buffers=(self._flat_params[a:b], self._flat_grad[a:b]))
                for i, (a, b) in enumerate(zip(ends[:-1], ends[1:]))]
        self.actor, self.critic = nets[0], (None if cfg.shared_trunk else nets[1])
        if isinstance(self.head, GaussianHead):
            self._flat_params[-n_std:] = self.head.log_std
            self.head.log_std = self._flat_params[-n_std:]
        if cfg.ortho_init:
            init_orthogonal(self.actor, self.rng, [0.01] * k + ([1.0] if cfg.shared_trunk else []))
            if self.critic is not None:
                init_orthogonal(self.critic, self.rng, 1.0)
        self.origin = params_digest(self.actor.params)
        self.optimizers = [Adam(p, lr=cfg.learning_rate, eps=cfg.adam_eps) for p in self._param_vectors()]
        self._adam = AdamGroup(self._flat_params, self.optimizers)
        self.obs_rms = RunningMeanStd((self.obs_size,))
        self.ret_rms = RunningMeanStd(())
        self.total_timesteps = cfg.total_timesteps
        self.num_timesteps = 0
        self.n_updates = 0
        self.stats: dict[str, float] = {}
        self.num_envs = 0
        self.pos = 0
        self._returns: np.ndarray | None = None  # discounted return of each copy (reward scaling)

    def _param_vectors(self) -> list[np.ndarray]:
        vectors = [self.actor.params] + ([self.critic.params] if self.critic is not None else [])
        if isinstance(self.head, GaussianHead):
            vectors.append(self.head.log_std)
        return vectors

    # ---- the rollout buffer ------------------------------------------------------------------------------

    def _buffer(self, n: int) -> None:
        """Allocate the rollout for ``n`` copies (the first ``act_batch`` says how many)."""
        if self.num_envs == n:
            return
        if self.num_envs and self.pos:
            raise ValueError(f"PPO's rollout holds {self.num_envs} copies; it cannot go on with {n}")
        t = self.config.n_steps
        self.num_envs = n
        act_shape: tuple[int, ...] = () if isinstance(self.action_space, Discrete) else (self.head.n_outputs,) \
            if isinstance(self.head, GaussianHead) else (len(self.head.nvec),)
        act_dtype = np.float32 if isinstance(self.head, GaussianHead) else np.int64
        self.buf_obs = np.zeros((t, n, self.obs_size), dtype=np.float32)
        self.buf_actions = np.zeros((t, n) + act_shape, dtype=act_dtype)
        self.buf_logp = np.zeros((t, n), dtype=np.float32)
        self.buf_values = np.zeros((t, n), dtype=np.float32)
        self.buf_rewards = np.zeros((t, n), dtype=np.float32)
        self.buf_dones = np.zeros((t, n), dtype=np.float32)
        self.buf_masks: np.ndarray | None = None  # (t, n, logits) bool, from the first masked step (action masks)
        self._returns = np.zeros(n, dtype=np.float64)

    # ---- acting ------------------------------------------------------------------------------------------

    def _normalize(self, x: np.ndarray) -> np.ndarray:
        """Observations as the networks read them: ``(x - mean) / std`` in float32, as ``Model._input`` does."""
        if not self.config.normalize_obs:
            return x
        mean, std = self.obs_norm()
        return (x - mean) / std

    def obs_norm(self) -> tuple[np.ndarray, np.ndarray]:
        """The running mean and standard deviation as float32 (what the model file holds)."""
        return self.obs_rms.mean.astype(np.float32), np.sqrt(self.obs_rms.var + 1e-8).astype(np.float32)

    def _flat(self, obs: Any) -> np.ndarray:
        x = np.asarray(obs, dtype=np.float32)
        return x.reshape(len(x), self.obs_size)

    def _values(self, x: np.ndarray) -> np.ndarray:
        """V(x) for normalised observations ``(B, obs)``: ``(B,)`` float32 (a copy)."""
        if self.critic is None:
            return self.actor.forward(x)[:, -1]
        return self.critic.forward(x)[:, 0]

    def _policy_out(self, y: np.ndarray) -> np.ndarray:
        return y[..., :self.n_policy] if self.critic is None else y

    def predict(self, obs: Any, mask: Any = None) -> Any:
        """The deterministic action: argmax of the logits (of the actions ``mask`` enables), or the mean clipped."""
        x = np.asarray(obs, dtype=np.float32).reshape(self.obs_size)
        if self.config.normalize_obs:
            x = self._normalize(x)
        out = self._policy_out(self.actor.forward_into_cache(x))
        action = self.head.mode(out if mask is None else masked_logits(out, mask))
        if isinstance(self.action_space, Discrete):
            return int(action)
        return np.array(action).reshape(self.action_space.shape)

    def act(self, obs: Any, explore: bool = True, mask: Any = None) -> Any:
        """A sampled action when ``explore`` (one copy: a batch of one), the deterministic one otherwise."""
        if not explore:
            return self.predict(obs, mask)
        action = self.act_batch(np.asarray(obs)[None], True, None if mask is None else np.asarray(mask)[None])[0]
        return int(action) if isinstance(self.action_space, Discrete) else action

    def act_batch(self, obs: np.ndarray, explore: bool = True, masks: np.ndarray | None = None) -> np.ndarray:
        """One action per copy from ONE forward over the ``(N, ...)`` batch (and one of the critic when separate).

        Exploring, the draws, their log-probabilities, the values and the (normalised) observations go into the
        rollout; the observation statistics take in the batch first. Box actions come back clipped to the bounds.
        ``masks`` (one 0/1 per logit and copy): disabled actions get probability 0; the rollout keeps the masks.
        """
        x = self._flat(obs)
        if not explore:
            out = self._policy_out(self.actor.forward(self._normalize(x)))
            return np.asarray(self.head.mode(out if masks is None else masked_logits(out, masks)))
        n = len(x)
        self._buffer(n)
        if self.config.normalize_obs:
            self.obs_rms.update(x)
        x = self._normalize(x)
        y = self.actor.forward_into_cache(x)
        out = self._policy_out(y)
        if masks is not None:
            out = masked_logits(out, masks)
            if self.buf_masks is None:
                self.buf_masks = np.ones((self.config.n_steps, n, out.shape[1]), dtype=bool)
            self.buf_masks[self.pos] = np.asarray(masks).reshape(out.shape) != 0
        raw = self.head.sample(out, self.rng)
        logp, _ = self.head.evaluate(out, raw)
        values = y[:, -1] if self.critic is None else self.critic.forward_into_cache(x)[:, 0]
        t = self.pos
        self.buf_obs[t] = x
        self.buf_actions[t] = raw.reshape(self.buf_actions.shape[1:])
        self.buf_logp[t] = logp
        self.buf_values[t] = values
        if isinstance(self.head, GaussianHead):
            return self.head.clip(raw).reshape((n,) + self.action_space.shape)
        return raw

    # ---- learning ----------------------------------------------------------------------------------------

    def observe(self, obs: Any, action: Any, reward: float, next_obs: Any, terminated: bool,
                truncated: bool, next_mask: Any = None) -> dict[str, float]:
        """One copy's transition (``TrainingRun``): ``observe_batch`` with a batch of one."""
        return self.observe_batch(np.asarray(obs)[None], np.asarray([action]), np.array([reward], dtype=np.float64),
                                  np.asarray(next_obs)[None], np.array([terminated]), np.array([truncated]))

    def observe_batch(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, next_obs: np.ndarray,
                      terminated: np.ndarray, truncated: np.ndarray, next_masks: Any = None) -> dict[str, float]:
        """The rewards of the step ``act_batch`` took (``next_obs``: ``final_obs`` where a copy ended); every
        ``n_steps`` steps, the update. Returns ``{"loss": mean loss}`` after an update, ``{}`` otherwise."""
        cfg = self.config
        terminated = np.asarray(terminated, dtype=bool)
        truncated = np.asarray(truncated, dtype=bool)
        dones = terminated | truncated
        r = np.asarray(rewards, dtype=np.float64).reshape(self.num_envs)
        if cfg.normalize_reward:
            assert self._returns is not None
            self._returns = self._returns * cfg.gamma + r
            self.ret_rms.update(self._returns)
            r = np.clip(r / np.sqrt(self.ret_rms.var + 1e-8), -10.0, 10.0)
            self._returns[dones] = 0.0
        r32 = r.astype(np.float32)
        cut = truncated & ~terminated
        if cut.any():  # the time limit is not part of the task: bootstrap from the final observation
            r32[cut] += np.float32(cfg.gamma) * self._values(self._normalize(self._flat(next_obs)[cut]))
        t = self.pos
        self.buf_rewards[t] = r32
        self.buf_dones[t] = dones
        self.pos += 1
        self.num_timesteps += self.num_envs
        if self.pos < cfg.n_steps:
            return {}
        last_values = self._values(self._normalize(self._flat(next_obs)))
        self.pos = 0
        return {"loss": self.update(last_values)}

    def advantages(self, last_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """GAE(lambda) over the rollout (``(T, N)`` float32 each): advantages, and returns = advantages + values."""
        cfg = self.config
        gamma, lam = np.float32(cfg.gamma), np.float32(cfg.gamma * cfg.gae_lambda)
        adv = np.zeros_like(self.buf_rewards)
        last = np.zeros(self.num_envs, dtype=np.float32)
        next_values = np.asarray(last_values, dtype=np.float32)
        for t in range(cfg.n_steps - 1, -1, -1):
            live = np.float32(1.0) - self.buf_dones[t]
            delta = self.buf_rewards[t] + gamma * next_values * live - self.buf_values[t]
            last = delta + lam * live * last
            adv[t] = last
            next_values = self.buf_values[t]
        return adv, adv + self.buf_values

    def progress_remaining(self) -> float:
        return 1.0 - self.num_timesteps / max(self.total_timesteps, 1)

    def update(self, last_values: np.ndarray) -> float:
        """Learn from the full rollout: ``n_epochs`` passes of shuffled minibatches; returns the mean loss."""
        cfg = self.config
        progress = self.progress_remaining()
        lr = schedule_value(cfg.learning_rate, cfg.lr_schedule, progress)
        clip = schedule_value(cfg.clip_range, cfg.clip_schedule, progress)
        for opt in self.optimizers:
            opt.lr = lr
        adv, returns = self.advantages(last_values)
        m = cfg.n_steps * self.num_envs
        data = (self.buf_obs.reshape(m, self.obs_size), self.buf_actions.reshape((m,) + self.buf_actions.shape[2:]),
                self.buf_logp.reshape(m), self.buf_values.reshape(m), adv.reshape(m), returns.reshape(m)) + (
            () if self.buf_masks is None else (self.buf_masks.reshape(m, -1),))
        totals = np.zeros(6)
        count = 0
        for _ in range(cfg.n_epochs):
            count += self.train_epoch(data, clip, totals)
        self.n_updates += count
        means = totals / max(count, 1)
        self.stats = {"loss": means[0], "policy_loss": means[1], "value_loss": means[2], "entropy": means[3],
                      "approx_kl": means[4], "clip_fraction": means[5], "learning_rate": lr, "clip_range": clip}
        return float(means[0])

    def train_epoch(self, data: tuple[np.ndarray, ...], clip: float, totals: np.ndarray) -> int:
        """One pass over the rollout ``data`` (``update``'s arrays, one row per transition) in shuffled minibatches
        (the rows put in the shuffled order once: each minibatch is a slice); ``minibatch_step``'s figures are
        added to ``totals``. Returns the number of minibatches."""
        m, size = len(data[0]), self.config.batch_size
        order = self.rng.permutation(m)
        shuffled = [a[order] for a in data]
        for start in range(0, m, size):
            end = start + size
            totals += self.minibatch_step(*(a[start:end] for a in shuffled[:6]), clip,  # type: ignore[call-arg]
                                          *(a[start:end] for a in shuffled[6:]))
        return -(-m // size)

    def losses(self, obs: np.ndarray, actions: np.ndarray, old_logp: np.ndarray, old_values: np.ndarray,
               adv: np.ndarray, returns: np.ndarray, clip: float, backward: bool = True,
               masks: np.ndarray | None = None) -> tuple[np.ndarray, list]:
        """The loss of one minibatch and (``backward``) the gradient of each parameter vector (``_param_vectors``
        order): ``(loss, policy loss, value loss, entropy, approx KL, clip fraction), [grads]``; ``masks``: the
        action masks the rollout was acted under (the disabled logits masked as when acting)."""
        cfg = self.config
        b = len(obs)
        y = self.actor.forward_train(obs)
        out = self._policy_out(y)
        if masks is not None:
            out = masked_logits(out, masks)
        values = y[:, -1] if self.critic is None else self.critic.forward_train(obs)[:, 0]
        logp, entropy = self.head.evaluate(out, actions)
        inv_b = 1.0 / b  # (sums times 1/b: np.mean's Python wrapper costs more than its arithmetic here)
        if cfg.normalize_advantage and b > 1:  # torch's std: unbiased
            centered = adv - np.float32(adv.sum() * inv_b)
            std = math.sqrt(float(np.dot(centered, centered)) / (b - 1))
            adv = centered / np.float32(std + 1e-8)
        log_ratio = logp - old_logp
        ratio = np.exp(log_ratio)
        surr1 = adv * ratio
        surr2 = adv * np.minimum(np.maximum(ratio, np.float32(1.0 - clip)), np.float32(1.0 + clip))
        unclipped = surr1 <= surr2
        policy_loss = -float(np.where(unclipped, surr1, surr2).sum()) * inv_b
        if cfg.clip_range_vf > 0:
            moved = values - old_values
            inside = np.abs(moved) <= np.float32(cfg.clip_range_vf)
            pred = old_values + np.clip(moved, -np.float32(cfg.clip_range_vf), np.float32(cfg.clip_range_vf))
        else:
            inside, pred = None, values
        err = pred - returns
        value_loss = float(np.dot(err, err)) * inv_b
        mean_entropy = float(entropy.sum()) * inv_b
        loss = policy_loss - cfg.ent_coef * mean_entropy + cfg.vf_coef * value_loss
        moved_ratio = ratio - np.float32(1.0)
        figures = np.array([loss, policy_loss, value_loss, mean_entropy, float((moved_ratio - log_ratio).sum()) * inv_b,
                            np.count_nonzero(np.abs(moved_ratio, out=moved_ratio) > clip) * inv_b])
        if not backward:
            return figures, []
        # d policy_loss / d logp: through the unclipped term where it is the minimum, else 0
        g_logp = surr1 * np.float32(-inv_b)
        g_logp *= unclipped
        g_entropy = np.full(b, -cfg.ent_coef * inv_b, dtype=np.float32) if cfg.ent_coef else None  # (0: no term)
        g_values = err * np.float32(2.0 * cfg.vf_coef * inv_b)
        if inside is not None:
            g_values *= inside
        grad_out, grad_log_std = self.head.backward(g_logp, g_entropy)
        if self.critic is None:
            grads = [self.actor.backward(np.concatenate([grad_out, g_values[:, None]], axis=1))]
        else:
            grads = [self.actor.backward(grad_out), self.critic.backward(g_values[:, None])]
        if grad_log_std is not None:
            grads.append(self._flat_grad[-len(grad_log_std):])
            grads[-1][...] = grad_log_std
        return figures, grads

    def minibatch_step(self, obs: np.ndarray, actions: np.ndarray, old_logp: np.ndarray, old_values: np.ndarray,
                       adv: np.ndarray, returns: np.ndarray, clip: float,
                       masks: np.ndarray | None = None) -> np.ndarray:
        """One gradient step: the losses, one global norm clip over every parameter, Adam."""
        figures, grads = self.losses(obs, actions, old_logp, old_values, adv, returns, clip, masks=masks)
        norm = math.sqrt(sum(float(np.dot(g, g)) for g in grads))
        if norm > self.config.max_grad_norm:  # torch's clip_grad_norm_: max_norm / (norm + 1e-6)
            self._flat_grad *= np.float32(self.config.max_grad_norm / (norm + 1e-6))
        self._adam.step(self._flat_grad)  # (the grads are views of _flat_grad)
        return figures

    # ---- hooks of the training loop ----------------------------------------------------------------------

    def on_training_start(self, total_steps: int) -> None:
        """Measure the schedules against the run's length."""
        self.total_timesteps = max(int(total_steps), 1)

    # ---- export ------------------------------------------------------------------------------------------

    def policy_network(self) -> MLP:
        """The actor alone (a shared trunk's value output dropped): what the model file holds."""
        if self.critic is not None:
            return self.actor.copy()
        net = MLP(self.obs_size, self.config.hidden, self.n_policy, rng=0)
        for i in range(net.num_layers):
            w, b = self.actor.weights[i], self.actor.biases[i]
            if i == net.num_layers - 1:
                w, b = w[:, :self.n_policy], b[:self.n_policy]
            net.weights[i][...] = w
            net.biases[i][...] = b
        return net

    def to_model(self, meta: dict[str, Any] | None = None) -> Model:
        """The deterministic policy as a ``model_io.Model`` of kind ``"mlp"``: its act is the argmax of the logits
        (Discrete) or the mean clipped to the bounds (Box); the observation statistics go in ``obs_norm``."""
        if isinstance(self.action_space, MultiDiscrete):
            raise ValueError("a MultiDiscrete PPO policy cannot be saved as a model file (the format has no "
                             "MultiDiscrete action space); use predict() in Python")
        meta = {"agent": "ppo", **dict(meta or {}), **({"action_mask": True} if self.buf_masks is not None else {})}
        meta.setdefault("ancestry", ancestry_record(self.origin, self.actor.params))
        obs_norm = None
        if self.config.normalize_obs:
            mean, std = self.obs_norm()
            obs_norm = {"mean": mean.tolist(), "std": std.tolist()}
        extra: dict[str, Any] = {"algorithm": "ppo", "config": self.config.to_dict(),
                                 "num_timesteps": self.num_timesteps}
        if isinstance(self.head, GaussianHead):
            extra["log_std"] = self.head.log_std.tolist()
        return Model(network=self.policy_network(), observation_space=self.observation_space,
                     action_space=self.action_space, kind="mlp", obs_norm=obs_norm, meta=meta, extra=extra)

    # ---- checkpoints (rl/checkpoint.py asks the agent for its own state) -----------------------------------

    def checkpoint_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Everything a resumed run needs to go on bit for bit: ``(JSON-able meta, arrays)`` (views; the caller
        copies or writes them at once)."""
        arrays: dict[str, np.ndarray] = {f"params.{i}": p for i, p in enumerate(self._param_vectors())}
        for i, opt in enumerate(self.optimizers):
            arrays[f"adam.{i}.m_scaled"], arrays[f"adam.{i}.v_scaled"] = opt._m, opt._v
        arrays["obs_rms.mean"], arrays["obs_rms.var"] = self.obs_rms.mean, self.obs_rms.var
        arrays["ret_rms.mean"], arrays["ret_rms.var"] = self.ret_rms.mean, self.ret_rms.var
        if self.num_envs:
            assert self._returns is not None
            arrays["returns"] = self._returns
            for name in ("obs", "actions", "logp", "values", "rewards", "dones"):
                arrays[f"rollout.{name}"] = getattr(self, f"buf_{name}")
            if self.buf_masks is not None:
                arrays["rollout.masks"] = self.buf_masks
        meta = {"config": self.config.to_dict(), "architecture": self.actor.architecture(),
                "critic_architecture": self.critic.architecture() if self.critic is not None else None,
                "observation_space": self.observation_space.to_dict(), "action_space": self.action_space.to_dict(),
                "rng": self.rng.bit_generator.state, "num_timesteps": int(self.num_timesteps),
                "n_updates": int(self.n_updates), "total_timesteps": int(self.total_timesteps),
                "num_envs": int(self.num_envs), "pos": int(self.pos), "origin": self.origin,
                "adam_t": [int(opt.t) for opt in self.optimizers],
                "obs_rms_count": self.obs_rms.count, "ret_rms_count": self.ret_rms.count,
                "stats": {k: float(v) for k, v in self.stats.items()}}
        return meta, arrays

    def checkpoint_mismatch(self, meta: dict[str, Any]) -> str | None:
        """Why this agent cannot continue the checkpointed one (``None``: it can)."""
        if meta.get("architecture") != self.actor.architecture() or meta.get("critic_architecture") != (
                self.critic.architecture() if self.critic is not None else None):
            return ("the network differs (hidden layers or a shared trunk); a resumed run keeps its network (drop the "
                    "change to the hidden layers or --shared-trunk, or start a new run)")
        if int(meta["config"].get("n_steps", -1)) != self.config.n_steps:
            return (f"the rollout length differs: the checkpoint's n_steps is {meta['config'].get('n_steps')}, this "
                    f"run's {self.config.n_steps}; keep --n-steps")
        return None

    def load_checkpoint_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray], total_steps: int) -> None:
        """Put a ``checkpoint_state`` back into this freshly built agent (same network); the learning rate, clip
        range and the other settings come from this agent's config (a changed one applies from here)."""
        for i, p in enumerate(self._param_vectors()):
            np.copyto(p, arrays[f"params.{i}"])
        for i, (opt, t) in enumerate(zip(self.optimizers, meta["adam_t"])):
            np.copyto(opt._m, arrays[f"adam.{i}.m_scaled"])
            np.copyto(opt._v, arrays[f"adam.{i}.v_scaled"])
            opt.t = int(t)
        self.obs_rms.load(arrays["obs_rms.mean"], arrays["obs_rms.var"], meta["obs_rms_count"])
        self.ret_rms.load(arrays["ret_rms.mean"], arrays["ret_rms.var"], meta["ret_rms_count"])
        self.rng.bit_generator.state = meta["rng"]
        self.num_timesteps, self.n_updates = int(meta["num_timesteps"]), int(meta["n_updates"])
        self.total_timesteps = max(int(total_steps), 1)
        self.origin = str(meta.get("origin") or self.origin)
        self.stats = dict(meta.get("stats") or {})
        self.num_envs, self.pos = 0, 0
        if int(meta["num_envs"]):
            self._buffer(int(meta["num_envs"]))
            np.copyto(self._returns, arrays["returns"])  # type: ignore[arg-type]
            for name in ("obs", "actions", "logp", "values", "rewards", "dones"):
                np.copyto(getattr(self, f"buf_{name}"), arrays[f"rollout.{name}"])
            if "rollout.masks" in arrays:
                self.buf_masks = arrays["rollout.masks"].copy()
            self.pos = int(meta["pos"])

    def status(self) -> dict[str, str]:
        """Figures of the last update for the progress line: the policy's entropy and how far it moved."""
        if not self.stats:
            return {}
        return {"Entropy": f"{self.stats['entropy']:.3f}", "KL": f"{self.stats['approx_kl']:.4f}"}
