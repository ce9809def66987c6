"""What PPO's policy needs beside its networks: the action distributions, orthogonal initialisation and running
mean / variance (observation and reward normalisation), float32 numpy.

Each head turns the network's outputs for a batch into a distribution over actions and back:

* ``CategoricalHead(nvec)``: one softmax per group of logits; ``Discrete(n)`` is ``nvec = [n]``,
  ``MultiDiscrete(nvec)`` one group per component (log-probability and entropy summed over the groups).
* ``GaussianHead(low, high)``: a diagonal Gaussian whose mean is the network's output and whose log standard
  deviation is a free parameter vector (state-independent, as SB3's and CleanRL's PPO); the sampled action is
  kept as drawn for the loss and clipped to the bounds for the environment.

``evaluate(out, actions) -> (logp, entropy)`` keeps what ``backward(g_logp, g_entropy)`` needs: the gradients
of ``sum_i g_logp[i] * logp[i] + g_entropy[i] * entropy[i]`` with respect to the outputs (and the log-std).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base.spaces import Box, Discrete, MultiDiscrete, Space
from ..nn.mlp import MLP

__all__ = ["CategoricalHead", "GaussianHead", "head_for", "RunningMeanStd", "orthogonal", "init_orthogonal",
           "masked_logits", "MASKED_LOGIT"]

MASKED_LOGIT = -1e9
"""What a disabled action's logit becomes: its probability is exactly 0 in float32 (and so its gradient)."""


def masked_logits(out: np.ndarray, masks: Any) -> np.ndarray:
    """The logits ``(B, n)`` with the actions ``masks`` (0/1 per logit, ``(B, n)``) disables at ``MASKED_LOGIT``;
    a row that enables nothing is left as it is (no choice is left to honour)."""
    m = np.asarray(masks).reshape(out.shape) != 0
    m |= ~m.any(axis=-1, keepdims=True)
    return np.where(m, out, out.dtype.type(MASKED_LOGIT))

_LOG_2PI = math.log(2.0 * math.pi)


def orthogonal(fan_in: int, fan_out: int, gain: float, rng: np.random.Generator) -> np.ndarray:
    """An ``(fan_in, fan_out)`` float32 matrix with orthonormal rows or columns times ``gain`` (Saxe et al. 2014;
    torch's ``orthogonal_`` on the ``(out, in)`` weight, transposed to MLP's ``x @ W`` layout)."""
    rows, cols = fan_out, fan_in
    a = rng.standard_normal((rows, cols) if rows >= cols else (cols, rows))
    q, r = np.linalg.qr(a)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return (gain * q).T.astype(np.float32)


def init_orthogonal(net: MLP, rng: np.random.Generator, out_gains: Sequence[float] | float,
                    hidden_gain: float = math.sqrt(2.0)) -> None:
    """SB3's actor-critic initialisation in place: orthogonal weights (``hidden_gain`` for hidden layers, the output
    layer's columns scaled by ``out_gains``, one per output or one for all), zero biases."""
    last = net.num_layers - 1
    for i, w in enumerate(net.weights):
        w[...] = orthogonal(w.shape[0], w.shape[1], 1.0 if i == last else hidden_gain, rng)
        net.biases[i][...] = 0.0
    gains = np.broadcast_to(np.asarray(out_gains, dtype=np.float32), (net.output_size,))
    net.weights[last][...] *= gains


class RunningMeanStd:
    """Mean and variance of everything seen so far, merged batch by batch (Chan et al.; SB3's ``RunningMeanStd``),
    in float64."""

    def __init__(self, shape: tuple[int, ...] = (), epsilon: float = 1e-4) -> None:
        self.mean = np.zeros(shape, dtype=np.float64)
        self.var = np.ones(shape, dtype=np.float64)
        self.count = float(epsilon)

    def update(self, batch: np.ndarray) -> None:
        batch = np.asarray(batch, dtype=np.float64)
        b_mean, b_var, b_count = batch.mean(axis=0), batch.var(axis=0), batch.shape[0]
        delta = b_mean - self.mean
        total = self.count + b_count
        self.mean = self.mean + delta * b_count / total
        m2 = self.var * self.count + b_var * b_count + np.square(delta) * self.count * b_count / total
        self.var = m2 / total
        self.count = total

    def state(self) -> dict[str, Any]:
        return {"mean": self.mean.copy(), "var": self.var.copy(), "count": self.count}

    def load(self, mean: np.ndarray, var: np.ndarray, count: float) -> None:
        self.mean = np.array(mean, dtype=np.float64).reshape(self.mean.shape)
        self.var = np.array(var, dtype=np.float64).reshape(self.var.shape)
        self.count = float(count)


def _row_reduce(op: Any, a: np.ndarray) -> np.ndarray:
    """``op.reduce(a, axis=-1)`` for a few columns, column by column: numpy reduces a short last axis slowly."""
    if a.shape[-1] > 8:
        return op.reduce(a, axis=-1)
    out = a[..., 0].copy()
    for j in range(1, a.shape[-1]):
        op(out, a[..., j], out=out)
    return out


class CategoricalHead:
    """Independent categorical distributions over groups of logits (``nvec[g]`` logits in group ``g``)."""

    def __init__(self, nvec: Sequence[int], multi: bool = False) -> None:
        self.nvec = [int(n) for n in nvec]
        self.multi = multi
        self.n_outputs = sum(self.nvec)
        self.bounds = np.cumsum([0] + self.nvec)
        self._cache: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def _groups(self, out: np.ndarray) -> list[np.ndarray]:
        return [out[..., a:b] for a, b in zip(self.bounds[:-1], self.bounds[1:])]

    @staticmethod
    def _log_softmax(z: np.ndarray) -> np.ndarray:
        shifted = z - _row_reduce(np.maximum, z)[..., None]
        return shifted - np.log(_row_reduce(np.add, np.exp(shifted)))[..., None]

    def _as_columns(self, actions: np.ndarray) -> np.ndarray:
        return np.asarray(actions).reshape(len(actions), len(self.nvec))

    def sample(self, out: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One draw per row by the inverse CDF of one uniform per group: ``(B,)`` int64 (``(B, groups)`` multi)."""
        u = rng.random((out.shape[0], len(self.nvec)))
        cols = []
        for g, z in enumerate(self._groups(out)):
            p = np.exp(self._log_softmax(z))
            cdf = np.cumsum(p, axis=1)
            cols.append(np.minimum((cdf < (u[:, g:g + 1] * cdf[:, -1:])).sum(axis=1), z.shape[1] - 1))
        actions = np.stack(cols, axis=1).astype(np.int64)
        return actions if self.multi else actions[:, 0]

    def mode(self, out: np.ndarray) -> np.ndarray:
        """The most likely action of each row (argmax of each group's logits)."""
        actions = np.stack([z.argmax(axis=-1) for z in self._groups(out)], axis=-1).astype(np.int64)
        return actions if self.multi else actions[..., 0]

    def evaluate(self, out: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Log-probability of ``actions`` and entropy, ``(B,)`` float32 each (summed over the groups)."""
        acts = self._as_columns(actions)
        rows = np.arange(out.shape[0])
        if len(self.nvec) == 1:  # one group (Discrete): nothing to sum over the groups
            log_p = self._log_softmax(out)
            p = np.exp(log_p)
            h = -_row_reduce(np.add, p * log_p)
            self._cache = [(p, log_p, h, acts[:, 0])]
            return log_p[rows, acts[:, 0]], h
        dtype = np.result_type(out.dtype, np.float32)  # float32 in training; float64 in the gradient tests
        logp = np.zeros(out.shape[0], dtype=dtype)
        entropy = np.zeros(out.shape[0], dtype=dtype)
        self._cache = []
        for g, z in enumerate(self._groups(out)):
            log_p = self._log_softmax(z)
            p = np.exp(log_p)
            h = -_row_reduce(np.add, p * log_p)
            logp += log_p[rows, acts[:, g]]
            entropy += h
            self._cache.append((p, log_p, h, acts[:, g]))
        return logp, entropy

    def backward(self, g_logp: np.ndarray, g_entropy: np.ndarray | None) -> tuple[np.ndarray, None]:
        """d(sum g_logp * logp + g_entropy * entropy)/d logits, for the last ``evaluate``; no extra parameters
        (``g_entropy`` None: no entropy term).

        d log p_a / dz = onehot(a) - p;  d H / dz_j = -p_j (log p_j + H).
        """
        parts = []
        for p, log_p, h, a in self._cache:
            grad = -p * g_logp[:, None]
            grad[np.arange(len(a)), a] += g_logp
            if g_entropy is not None:
                grad -= (g_entropy[:, None] * p) * (log_p + h[:, None])
            parts.append(grad)
        return (parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)), None


class GaussianHead:
    """A diagonal Gaussian: mean = the network's outputs, log std = ``log_std`` (one per action dimension)."""

    def __init__(self, low: np.ndarray, high: np.ndarray, log_std_init: float = 0.0) -> None:
        self.low = np.asarray(low, dtype=np.float32).reshape(-1)
        self.high = np.asarray(high, dtype=np.float32).reshape(-1)
        self.n_outputs = self.low.size
        self.log_std = np.full(self.n_outputs, log_std_init, dtype=np.float32)
        self._cache: tuple[np.ndarray, np.ndarray] | None = None

    def sample(self, out: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """mean + std * N(0, 1), ``(B, dims)`` float32, unclipped (the loss needs the very action drawn)."""
        noise = rng.standard_normal(out.shape).astype(np.float32)
        return out + np.exp(self.log_std) * noise

    def clip(self, actions: np.ndarray) -> np.ndarray:
        """What the environment gets: each action clipped to the space's bounds."""
        return np.clip(actions, self.low, self.high).astype(np.float32)

    def mode(self, out: np.ndarray) -> np.ndarray:
        """The deterministic action: the mean, clipped to the bounds."""
        return self.clip(out)

    def evaluate(self, out: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dtype = np.result_type(out.dtype, np.float32)  # float32 in training; float64 in the gradient tests
        log_std = self.log_std.astype(dtype)
        std = np.exp(log_std)
        z = (np.asarray(actions, dtype=dtype).reshape(out.shape) - out) / std
        logp = -0.5 * (z * z).sum(axis=1) - log_std.sum() - dtype.type(0.5 * _LOG_2PI * self.n_outputs)
        entropy = np.full(out.shape[0], log_std.sum() + dtype.type((0.5 + 0.5 * _LOG_2PI) * self.n_outputs),
                          dtype=dtype)
        self._cache = (z, std)
        return logp.astype(dtype, copy=False), entropy

    def backward(self, g_logp: np.ndarray, g_entropy: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Gradients for the mean (``(B, dims)``) and for ``log_std`` (``(dims,)``), for the last ``evaluate``
        (``g_entropy`` None: no entropy term).

        d logp/d mean = z / std;  d logp/d log_std = z^2 - 1;  d H/d log_std = 1.
        """
        if self._cache is None:
            raise RuntimeError("backward() needs an evaluate() first")
        z, std = self._cache
        grad_mean = (g_logp[:, None] * z) / std
        grad_log_std = (g_logp[:, None] * (z * z - 1.0)).sum(axis=0)
        if g_entropy is not None:
            grad_log_std = grad_log_std + g_entropy.sum()
        return grad_mean.astype(z.dtype, copy=False), grad_log_std.astype(np.float32)


def head_for(action_space: Space, log_std_init: float = 0.0, agent: str = "PPO") -> CategoricalHead | GaussianHead:
    """The head of an action space: one softmax (Discrete), one per component (MultiDiscrete) or a Gaussian (Box)."""
    if isinstance(action_space, Discrete):
        return CategoricalHead([action_space.n])
    if isinstance(action_space, MultiDiscrete):
        return CategoricalHead(list(action_space.nvec), multi=True)
    if isinstance(action_space, Box):
        return GaussianHead(action_space.low, action_space.high, log_std_init)
    raise TypeError(f"{agent} needs a Discrete, MultiDiscrete or Box action space, got {action_space!r}")
