"""Networks that grow and shrink during training: Net2Net widen and deepen, pruning, a growth rule.

Widen and deepen follow Net2Net (Chen, Goodfellow & Shlens, 2016): the grown network computes the
same function as before, so training carries on from where it was instead of starting again.

- ``widen``: a hidden layer gets new units, each a copy of an existing unit (same incoming weights
  and bias, so the same activation, whatever the activation function); every copy's outgoing
  weights are divided by the number of copies, so the next layer sums to the same value.
- ``deepen``: a layer initialised to the identity (W = I, b = 0) is inserted after a hidden layer.
  Exact when the activation is idempotent on the previous layer's outputs: relu (relu(relu(x)) =
  relu(x)) and linear. It is NOT exact for tanh, sigmoid or leaky_relu (tanh(tanh(x)) differs from
  tanh(x) by up to 0.24 at |x| = 1): ``deepen`` refuses those unless asked for a linear layer
  (``activation="linear"``, exact: the identity composed with anything is that thing) or
  ``exact=False``.
- ``prune``: removes the hidden units with the smallest |incoming| x |outgoing| weight norms.

Every operation is a ``Remap``: for each parameter of the new network, which old parameter it
comes from (or -1 for a new one) and by how much it is scaled. The same map carries the Adam
moments over (``remap_adam``), the target network and DQN's keep-best parameters, so an agent
grows in place (``grow_agent``) without losing its optimiser state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..nn.mlp import MLP
from ..nn.optim import Adam
from ..rl.train import Callback

__all__ = ["Remap", "widen", "deepen", "prune", "remap_adam", "grow_agent", "grow", "GrowthRule",
           "IDEMPOTENT", "param_layout"]

IDEMPOTENT = ("relu", "linear")
"""Activations f with f(f(x)) = f(x): an identity layer after them changes nothing."""


def param_layout(sizes: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each layer, the flat ``params`` indices of its weights ``(in, out)`` and bias ``(out,)`` (MLP's layout)."""
    layout = []
    offset = 0
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = np.arange(offset, offset + fan_in * fan_out, dtype=np.int64).reshape(fan_in, fan_out)
        offset += fan_in * fan_out
        b = np.arange(offset, offset + fan_out, dtype=np.int64)
        offset += fan_out
        layout.append((w, b))
    return layout


@dataclass
class Remap:
    """How a new network's parameters come from an old one's.

    ``source[k]``: the old parameter index the new parameter ``k`` copies (-1: a new parameter, set to
    ``init[k]``); ``scale[k]`` multiplies the copied value; ``grad_scale[k]`` is how the parameter's
    gradient relates to its source's (used for the Adam moments: m scales by it, v by its square).
    """

    old_architecture: dict[str, Any]
    architecture: dict[str, Any]
    source: np.ndarray
    scale: np.ndarray
    grad_scale: np.ndarray
    init: np.ndarray
    record: dict[str, Any] = field(default_factory=dict)

    def apply(self, old_params: np.ndarray) -> np.ndarray:
        """The new flat parameter vector from an old one (float32)."""
        taken = np.asarray(old_params, dtype=np.float32)[np.maximum(self.source, 0)]
        return np.where(self.source >= 0, taken * self.scale, self.init).astype(np.float32)

    def apply_net(self, net: MLP) -> MLP:
        """A new network with the remapped parameters (the old one is left as it was)."""
        if net.architecture() != self.old_architecture:
            raise ValueError("this remap was made for another architecture")
        new = MLP.from_architecture(self.architecture, rng=0)
        new.params[...] = self.apply(net.params)
        return new


class _Builder:
    """Assembles a Remap layer by layer: each new layer's weights and bias from old indices and scales."""

    def __init__(self, net: MLP, new_arch: dict[str, Any]) -> None:
        self.net = net
        self.old_layout = param_layout(net.sizes)
        self.arch = new_arch
        self.sizes = [new_arch["input_size"]] + [h["size"] for h in new_arch["hidden"]] + [new_arch["output_size"]]
        self.new_layout = param_layout(self.sizes)
        n = sum(i * o + o for i, o in zip(self.sizes[:-1], self.sizes[1:]))
        self.source = np.full(n, -1, dtype=np.int64)
        self.scale = np.ones(n, dtype=np.float32)
        self.grad_scale = np.ones(n, dtype=np.float32)
        self.init = np.zeros(n, dtype=np.float32)

    def copy_layer(self, new_i: int, src_w: np.ndarray, src_b: np.ndarray, w_scale: Any = 1.0, b_scale: Any = 1.0,
                   w_grad: Any = 1.0, b_grad: Any = 1.0) -> None:
        w_idx, b_idx = self.new_layout[new_i]
        self.source[w_idx] = src_w
        self.source[b_idx] = src_b
        self.scale[w_idx] = np.broadcast_to(np.asarray(w_scale, np.float32), w_idx.shape)
        self.scale[b_idx] = np.broadcast_to(np.asarray(b_scale, np.float32), b_idx.shape)
        self.grad_scale[w_idx] = np.broadcast_to(np.asarray(w_grad, np.float32), w_idx.shape)
        self.grad_scale[b_idx] = np.broadcast_to(np.asarray(b_grad, np.float32), b_idx.shape)

    def new_layer(self, new_i: int, weights: np.ndarray, bias: np.ndarray) -> None:
        w_idx, b_idx = self.new_layout[new_i]
        self.init[w_idx] = weights
        self.init[b_idx] = bias

    def done(self, record: dict[str, Any]) -> Remap:
        return Remap(self.net.architecture(), self.arch, self.source, self.scale, self.grad_scale, self.init, record)


def _check_hidden(net: MLP, layer: int) -> int:
    if not isinstance(net, MLP):
        raise TypeError(f"growth works on an MLP, got {type(net).__name__}")
    n_hidden = len(net.hidden)
    if not -n_hidden <= layer < n_hidden:
        raise ValueError(f"hidden layer {layer} does not exist: the network has {n_hidden} hidden layer(s)")
    return layer % n_hidden


def widen(net: MLP, layer: int, new_size: int, rng: np.random.Generator | int | None = None,
          units: Sequence[int] | None = None, noise: float = 0.2, init: str = "copy") -> Remap:
    """Net2WiderNet: hidden layer ``layer`` grows to ``new_size`` units by copying existing ones.

    The units copied are ``units`` (indices into the old layer) when given, else drawn at random:
    without replacement while there are enough (each unit at most doubled), then with. Returns the
    Remap; ``remap.record["units"]`` lists what was copied.

    A unit and its copies share each outgoing weight in random fractions that sum to one
    (``1/c +- noise/c``), not in equal parts: the function is the same, but the copies get different
    gradients, so training can tell them apart (equal parts would keep them identical for ever and
    the wider layer would learn nothing more). ``noise=0`` splits equally.

    ``init="fresh"`` instead gives the new units random incoming weights (the layer's initialiser)
    and zero outgoing weights: as exact (they add nothing to the next layer until trained), and the
    new units start as new features rather than near-copies of old ones.
    """
    if init not in ("copy", "fresh"):
        raise ValueError(f"widen: init must be 'copy' (Net2Net) or 'fresh', got {init!r}")
    layer = _check_hidden(net, layer)
    old = net.hidden[layer].size
    new_size = int(new_size)
    if new_size <= old:
        raise ValueError(f"widen: layer {layer} has {old} units; new_size must be larger, got {new_size}")
    extra = new_size - old
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    if units is None:
        picks = [gen.permutation(old)[:min(extra - k, old)] for k in range(0, extra, old)]
        chosen = np.concatenate(picks).astype(np.int64)
    else:
        chosen = np.asarray(units, dtype=np.int64)
        if chosen.shape != (extra,) or chosen.min() < 0 or chosen.max() >= old:
            raise ValueError(f"widen: units must be {extra} indices in [0, {old})")
    mapping = np.concatenate([np.arange(old, dtype=np.int64), chosen])  # new unit j copies old unit mapping[j]
    counts = np.bincount(mapping, minlength=old).astype(np.float64)
    share = (1.0 / counts)[mapping]  # each copy's share of the outgoing weights (on average)
    n_out = net.sizes[layer + 2]
    jitter = gen.uniform(-1.0, 1.0, size=(new_size, n_out)) if noise else np.zeros((new_size, n_out))
    group_sum = np.zeros((old, n_out))
    np.add.at(group_sum, mapping, jitter)
    jitter -= (group_sum / counts[:, None])[mapping]  # zero sum within each unit's copies: fractions sum to 1
    fractions = share[:, None] * (1.0 + float(noise) * jitter)

    arch = net.architecture()
    arch["hidden"][layer]["size"] = new_size
    b = _Builder(net, arch)
    if init == "fresh":
        for i, (w_src, b_src) in enumerate(b.old_layout):
            w_idx, b_idx = b.new_layout[i]
            if i == layer:
                b.source[w_idx[:, :old]], b.source[b_idx[:old]] = w_src, b_src
                fan_in = w_src.shape[0]
                bound = float(np.sqrt(6.0 / fan_in)) if net.activations[layer] in ("relu", "leaky_relu") else float(
                    np.sqrt(6.0 / (fan_in + new_size)))
                b.init[w_idx[:, old:]] = gen.uniform(-bound, bound, size=(fan_in, extra))
            elif i == layer + 1:
                b.source[w_idx[:old]], b.source[b_idx] = w_src, b_src  # the new rows stay 0
            else:
                b.copy_layer(i, w_src, b_src)
        return b.done({"op": "widen", "init": "fresh", "layer": layer, "from": old, "to": new_size})
    for i, (w_src, b_src) in enumerate(b.old_layout):
        if i == layer:  # incoming: columns copied; a copy's gradient is its share of the original's
            b.copy_layer(i, w_src[:, mapping], b_src[mapping], w_grad=share[None, :], b_grad=share)
        elif i == layer + 1:  # outgoing: rows copied and split; their gradients equal the original's
            b.copy_layer(i, w_src[mapping, :], b_src, w_scale=fractions)
        else:
            b.copy_layer(i, w_src, b_src)
    return b.done({"op": "widen", "layer": layer, "from": old, "to": new_size, "units": chosen.tolist()})


def deepen(net: MLP, layer: int, activation: str | None = None, exact: bool = True) -> Remap:
    """Net2DeeperNet: insert an identity-initialised hidden layer right after hidden layer ``layer``.

    The new layer has the same width and, by default, the same activation as the one before it.
    With ``exact`` (default), an activation that would change the function (anything but relu and
    linear after that layer's outputs) is refused with the reason.
    """
    layer = _check_hidden(net, layer)
    before = net.hidden[layer]
    act = before.activation if activation is None else activation
    if exact and act != "linear" and not (act == "relu" and before.activation == "relu"):
        raise ValueError(f"deepen: an identity layer with {act!r} after a {before.activation!r} layer is not "
                         f"function-preserving ({act}({before.activation}(x)) != {before.activation}(x)); "
                         "pass activation='linear' for an exact insert, or exact=False")
    arch = net.architecture()
    arch["hidden"].insert(layer + 1, {"size": before.size, "activation": act})
    b = _Builder(net, arch)
    for i, (w_src, b_src) in enumerate(b.old_layout):
        b.copy_layer(i if i <= layer else i + 1, w_src, b_src)
    b.new_layer(layer + 1, np.eye(before.size, dtype=np.float32), np.zeros(before.size, dtype=np.float32))
    return b.done({"op": "deepen", "layer": layer, "size": before.size, "activation": act})


def unit_strength(net: MLP, layer: int) -> np.ndarray:
    """A hidden unit's weight: |incoming weights| x |outgoing weights| (L2 norms; the bias counts as incoming)."""
    layer = _check_hidden(net, layer)
    incoming = np.sqrt(np.sum(net.weights[layer] ** 2, axis=0) + net.biases[layer] ** 2)
    outgoing = np.linalg.norm(net.weights[layer + 1], axis=1)
    return incoming * outgoing


def prune(net: MLP, layer: int, remove: int) -> Remap:
    """Remove the ``remove`` weakest units of hidden layer ``layer`` (by ``unit_strength``; ties: the lower index).

    ``remap.record["removed"]`` lists the old indices removed, ``["kept"]`` those kept, in order.
    """
    layer = _check_hidden(net, layer)
    old = net.hidden[layer].size
    remove = int(remove)
    if not 0 < remove < old:
        raise ValueError(f"prune: layer {layer} has {old} units; remove between 1 and {old - 1}, got {remove}")
    order = np.argsort(unit_strength(net, layer), kind="stable")
    removed = np.sort(order[:remove])
    kept = np.setdiff1d(np.arange(old), removed)
    arch = net.architecture()
    arch["hidden"][layer]["size"] = old - remove
    b = _Builder(net, arch)
    for i, (w_src, b_src) in enumerate(b.old_layout):
        if i == layer:
            b.copy_layer(i, w_src[:, kept], b_src[kept])
        elif i == layer + 1:
            b.copy_layer(i, w_src[kept, :], b_src)
        else:
            b.copy_layer(i, w_src, b_src)
    return b.done({"op": "prune", "layer": layer, "from": old, "to": old - remove,
                   "removed": removed.tolist(), "kept": kept.tolist()})


def remap_adam(opt: Adam, params: np.ndarray, remap: Remap) -> Adam:
    """A new Adam on ``params`` (the grown network's) whose moments follow the units: m by grad_scale, v by its square.

    New parameters start with zero moments; the step count ``t`` carries over (the bias correction
    belongs to the run, not to a parameter).
    """
    new = Adam(params, lr=opt.lr, betas=(opt.beta1, opt.beta2), eps=opt.eps)
    new.t = opt.t
    src, has = np.maximum(remap.source, 0), remap.source >= 0
    new._m[...] = np.where(has, opt._m[src] * remap.grad_scale, 0.0)
    new._v[...] = np.where(has, opt._v[src] * remap.grad_scale * remap.grad_scale, 0.0)
    return new


def _make_remap(net: MLP, op: str, layer: int, size: int | None, rng: np.random.Generator | None,
                activation: str | None, init: str = "copy") -> Remap:
    if op == "widen":
        return widen(net, layer, size if size is not None else 2 * net.hidden[layer].size, rng, init=init)
    if op == "deepen":
        return deepen(net, layer, activation)
    if op == "prune":
        return prune(net, layer, size if size is not None else net.hidden[layer].size // 2)
    raise ValueError(f"unknown growth operation {op!r}: widen, deepen or prune")


def grow_agent(agent: Any, op: str = "widen", layer: int = -1, size: int | None = None,
               activation: str | None = None, step: int | None = None, init: str = "copy") -> dict[str, Any]:
    """Grow (or prune) a DQN agent in place: Q-network, target network, Adam state, keep-best parameters.

    ``size``: the new width for widen (default: double), the units to remove for prune (default:
    half). ``layer`` -1 is the last hidden layer; ``init`` is widen's ("copy": Net2Net, or "fresh").
    The q and target networks take the SAME remap (one set of copied units), so they stay in step. Returns
    the history record, also appended to
    ``agent.growth_history`` (``to_model`` writes it into the model's ``meta["growth"]``).
    """
    q = agent.q_network
    remap = _make_remap(q, op, layer, size, agent.rng, activation, init)
    new_q = remap.apply_net(q)
    new_target = MLP.from_architecture(remap.architecture, rng=0)
    new_target.params[...] = remap.apply(agent.target_network.params)
    agent.optimizer = remap_adam(agent.optimizer, new_q.params, remap)
    if getattr(agent, "best_params", None) is not None:
        agent.best_params = remap.apply(agent.best_params)
    agent.q_network, agent.target_network = new_q, new_target
    agent.config.hidden = list(new_q.hidden)
    record = {key: value for key, value in remap.record.items() if key not in ("units", "kept")}
    record.update(step=int(step if step is not None else getattr(agent, "num_timesteps", 0)),
                  hidden=[h.size for h in new_q.hidden])
    history = getattr(agent, "growth_history", None)
    if history is None:
        history = agent.growth_history = []
    history.append(record)
    return record


def grow(agent: Any, how: str = "widen", **kwargs: Any) -> dict[str, Any]:
    """What a Grow button calls while training: widen every hidden layer (default) or deepen the last.

    ``how="widen"`` doubles each hidden layer (or to ``size``), ``"deepen"`` inserts an identity layer
    after the last hidden one. Returns the last history record.
    """
    if how == "widen":
        record: dict[str, Any] = {}
        for layer in range(len(agent.q_network.hidden)):
            record = grow_agent(agent, "widen", layer, kwargs.get("size"))
        return record
    if how == "deepen":
        return grow_agent(agent, "deepen", -1, activation=kwargs.get("activation"))
    raise ValueError(f"grow: how must be 'widen' or 'deepen', got {how!r}")


class GrowthRule(Callback):
    """Grow when the evaluation return plateaus: no gain of ``min_delta`` over the best so far for ``patience`` evals.

    Each growth multiplies every hidden layer's width by ``factor`` (``how="widen"``, up to ``max_size``
    units) or inserts an identity layer (``"deepen"``, up to ``max_layers``); at most ``max_grows``
    times. The plateau count starts again after a growth. ``solved``: no more growth once an
    evaluation has reached it (the network is big enough).

    ``init`` is widen's: "fresh" by default, because on CartPole from 2x4 (bench/networks.py, 6
    seeds, 50k steps, x4 per growth) it solved 6/6 seeds where Net2Net's copies ("copy") solved 3/6:
    near-copies of 4 units stay near-copies for a long time.
    """

    def __init__(self, patience: int = 3, max_grows: int = 3, how: str = "widen", max_size: int = 256,
                 max_layers: int = 4, min_delta: float = 0.0, solved: float | None = None, factor: int = 2,
                 init: str = "fresh") -> None:
        if how not in ("widen", "deepen"):
            raise ValueError(f"GrowthRule: how must be 'widen' or 'deepen', got {how!r}")
        if int(factor) < 2:
            raise ValueError(f"GrowthRule: factor must be at least 2, got {factor}")
        self.factor, self.init = int(factor), init
        self.patience, self.max_grows, self.how = int(patience), int(max_grows), how
        self.max_size, self.max_layers, self.min_delta, self.solved = int(max_size), int(max_layers), min_delta, solved
        self.best = -np.inf
        self.stale = 0
        self.grows: list[dict[str, Any]] = []

    #: ``checkpoint.py`` saves ``state_dict()`` under this name and gives it back to ``load_state_dict``.
    checkpoint_key = "growth_rule"

    def settings(self) -> dict[str, Any]:
        """The rule's arguments (``GrowthRule(**settings)`` makes the same rule)."""
        return {"patience": self.patience, "max_grows": self.max_grows, "how": self.how, "max_size": self.max_size,
                "max_layers": self.max_layers, "min_delta": float(self.min_delta), "solved": self.solved,
                "factor": self.factor, "init": self.init}

    def state_dict(self) -> dict[str, Any]:
        """The counters a resumed run needs (best return so far, evaluations since, growths done) and the settings."""
        return {"settings": self.settings(), "best": None if not np.isfinite(self.best) else float(self.best),
                "stale": int(self.stale), "grows": [dict(record) for record in self.grows]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue counting from ``state_dict()``'s counters (this rule's own settings stay)."""
        best = state.get("best")
        self.best = -np.inf if best is None else float(best)
        self.stale = int(state.get("stale", 0))
        self.grows = [dict(record) for record in state.get("grows", [])]

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> GrowthRule:
        """The rule a checkpoint holds, counters included."""
        rule = cls(**state["settings"])
        rule.load_state_dict(state)
        return rule

    def _can_grow(self, agent: Any) -> bool:
        if len(self.grows) >= self.max_grows:
            return False
        hidden = agent.q_network.hidden
        if self.how == "widen":
            return any(h.size < self.max_size for h in hidden)
        return len(hidden) < self.max_layers

    def on_eval(self, run: Any) -> None:
        mean_return = run.history.evals[-1][1]
        if self.solved is not None and max(self.best, mean_return) >= self.solved:
            self.best = max(self.best, mean_return)
            return
        if mean_return > self.best + self.min_delta:
            self.best, self.stale = mean_return, 0
            return
        self.stale += 1
        if self.stale >= self.patience and self._can_grow(run.agent):
            self.stale = 0
            if self.how == "widen":
                record: dict[str, Any] = {}
                for layer, h in enumerate(run.agent.q_network.hidden):
                    if h.size < self.max_size:
                        record = grow_agent(run.agent, "widen", layer, min(self.factor * h.size, self.max_size),
                                            step=run.steps, init=self.init)
            else:
                record = grow_agent(run.agent, "deepen", -1, step=run.steps)
            self.grows.append(record)
