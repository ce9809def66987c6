"""A small float32 multi-layer perceptron with a hand-written backward pass.

Every weight and bias lives in ONE flat float32 vector (``MLP.params``); the per-layer
``weights[i]`` (shape ``(in, out)``, so ``y = x @ W + b``) and ``biases[i]`` are views into
it. That makes optimisers, gradient clipping, target-network copies and soft updates a
single vector operation each, and the gradient from ``backward`` has the same layout.

Work arrays are preallocated per batch size and reused, because at DQN sizes
(64x64 layers, batch 64) numpy call overhead, not arithmetic, is the cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ACTIVATIONS", "LayerSpec", "MLP", "as_layer_specs"]

ACTIVATIONS = ("relu", "tanh", "leaky_relu", "linear", "sigmoid")
LEAKY_SLOPE = np.float32(0.01)
_MAX_CACHED_BATCH_SIZES = 8  # bounds the work-array caches when callers use many batch sizes
_BLOCK_ROWS = 1024  # inference on larger batches goes block by block (see forward_into_cache)


@dataclass
class LayerSpec:
    """One hidden layer: its width and the activation applied after it."""

    size: int
    activation: str = "relu"

    def __post_init__(self) -> None:
        self.size = int(self.size)
        if self.size <= 0:
            raise ValueError(f"layer size must be positive, got {self.size}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {self.activation!r}; choose from {ACTIVATIONS}")


def as_layer_specs(hidden: Sequence[LayerSpec | tuple[int, str] | int | Mapping[str, Any]]) -> list[LayerSpec]:
    """Accept LayerSpec, (size, activation) tuples, bare ints (relu) or {"size", "activation"} dicts."""
    specs = []
    for h in hidden:
        if isinstance(h, LayerSpec):
            specs.append(LayerSpec(h.size, h.activation))
        elif isinstance(h, Mapping):
            specs.append(LayerSpec(int(h["size"]), str(h.get("activation", "relu"))))
        elif isinstance(h, (int, np.integer)):
            specs.append(LayerSpec(int(h)))
        else:
            size, activation = h
            specs.append(LayerSpec(int(size), str(activation)))
    return specs


def _activate(name: str, z: np.ndarray) -> None:
    """Apply an activation in place (z holds pre-activations, then activations)."""
    if name == "relu":
        np.maximum(z, 0, out=z)
    elif name == "tanh":
        np.tanh(z, out=z)
    elif name == "leaky_relu":
        np.maximum(z, z * LEAKY_SLOPE, out=z)
    elif name == "sigmoid":
        # 0.5 * (1 + tanh(z / 2)) is the logistic function without exp overflow.
        z *= 0.5
        np.tanh(z, out=z)
        z += 1.0
        z *= 0.5


def _activation_grad(name: str, a: np.ndarray, delta: np.ndarray, mask: np.ndarray) -> None:
    """Turn dL/da into dL/dz in place, using the activation's output ``a`` (all five allow it)."""
    if name == "relu":
        np.greater(a, 0, out=mask)
        np.multiply(delta, mask, out=delta)
    elif name == "tanh":
        delta *= 1.0 - a * a
    elif name == "leaky_relu":
        np.greater(a, 0, out=mask)
        delta *= np.where(mask, np.float32(1.0), LEAKY_SLOPE)
    elif name == "sigmoid":
        delta *= a * (1.0 - a)


def _init_bound(activation: str, fan_in: int, fan_out: int) -> float:
    """Uniform init bound: He (Kaiming) for the relu family, Xavier/Glorot for tanh, sigmoid, linear."""
    if activation in ("relu", "leaky_relu"):
        return float(np.sqrt(6.0 / fan_in))
    return float(np.sqrt(6.0 / (fan_in + fan_out)))


class MLP:
    """Fully connected network: ``hidden`` layers each with their own size and activation.

    Args:
        input_size: length of the (flattened) input vector.
        hidden: one entry per hidden layer: ``LayerSpec``, ``(size, activation)`` or an int (relu).
        output_size: number of outputs (Q-values for DQN).
        output_activation: activation after the last layer, usually ``"linear"``.
        rng: generator or seed for the initial weights.
        buffers: ``(params, grad)``, two flat float32 vectors of ``param_count`` elements the network lives in
            (views into longer vectors, e.g. an actor's and a critic's side by side for one optimiser step);
            by default the network allocates its own.
    """

    def __init__(
        self,
        input_size: int,
        hidden: Sequence[LayerSpec | tuple[int, str] | int | Mapping[str, Any]],
        output_size: int,
        output_activation: str = "linear",
        rng: np.random.Generator | int | None = None,
        buffers: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        if output_activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {output_activation!r}; choose from {ACTIVATIONS}")
        self.input_size = int(input_size)
        self.output_size = int(output_size)
        self.hidden = as_layer_specs(hidden)
        self.output_activation = output_activation
        self.sizes = [self.input_size] + [h.size for h in self.hidden] + [self.output_size]
        self.activations = [h.activation for h in self.hidden] + [output_activation]

        n_params = sum(i * o + o for i, o in zip(self.sizes[:-1], self.sizes[1:]))
        if buffers is None:
            self.params = np.zeros(n_params, dtype=np.float32)
            self.grad = np.zeros(n_params, dtype=np.float32)
        else:
            self.params, self.grad = buffers
            for flat in buffers:
                if not (isinstance(flat, np.ndarray) and flat.dtype == np.float32 and flat.shape == (n_params,)
                        and flat.flags.c_contiguous):
                    raise ValueError(f"MLP buffers must be contiguous float32 vectors of {n_params} elements")
            self.params[...] = 0.0
        self.weights: list[np.ndarray] = []
        self.biases: list[np.ndarray] = []
        self._grad_weights: list[np.ndarray] = []
        self._grad_biases: list[np.ndarray] = []
        # A layer's bias directly follows its weights, so [W; b] is a free (in + 1, out) view, and
        # [h, 1] @ [W; b] = h @ W + b: one dot per layer forward, one per layer for the gradient.
        self._weights_aug: list[np.ndarray] = []
        self._grad_weights_aug: list[np.ndarray] = []
        offset = 0
        for fan_in, fan_out in zip(self.sizes[:-1], self.sizes[1:]):
            for views, flat in ((self.weights, self.params), (self._grad_weights, self.grad)):
                views.append(flat[offset:offset + fan_in * fan_out].reshape(fan_in, fan_out))
            for views, flat in ((self._weights_aug, self.params), (self._grad_weights_aug, self.grad)):
                views.append(flat[offset:offset + (fan_in + 1) * fan_out].reshape(fan_in + 1, fan_out))
            offset += fan_in * fan_out
            self.biases.append(self.params[offset:offset + fan_out])
            self._grad_biases.append(self.grad[offset:offset + fan_out])
            offset += fan_out

        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        for w, activation in zip(self.weights, self.activations):
            bound = _init_bound(activation, w.shape[0], w.shape[1])
            w[...] = rng.uniform(-bound, bound, size=w.shape)

        self._infer_cache: dict[int, tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]] = {}
        self._infer_out: dict[int, np.ndarray] = {}
        self._train_cache: dict[int, dict[str, Any]] = {}
        self._last_train: dict[str, Any] | None = None
        self._one: list[tuple[np.ndarray, np.ndarray, np.ndarray, str, np.ndarray]] | None = None
        self._one_out = np.empty(0, dtype=np.float32)

    @staticmethod
    def param_count(input_size: int, hidden: Sequence[Any], output_size: int) -> int:
        """How many parameters (weights and biases) such a network has: the length of its ``params``."""
        sizes = [int(input_size)] + [h.size for h in as_layer_specs(hidden)] + [int(output_size)]
        return sum(i * o + o for i, o in zip(sizes[:-1], sizes[1:]))

    @property
    def num_layers(self) -> int:
        return len(self.weights)

    # ---- forward -------------------------------------------------------------------------------

    def forward_into_cache(self, x: np.ndarray) -> np.ndarray:
        """Inference into reused work arrays: fast, but the result is overwritten by the next call.

        Batches take the same one-dot-per-layer path as ``forward_train`` (``[h, 1] @ [W; b]``), in
        blocks of ``_BLOCK_ROWS`` rows: DQN values a whole training phase's next states (8192 rows)
        at once, and 1024-row work arrays stay in L2 cache where 8192-row ones do not (-15 %).
        """
        if (x.ndim if isinstance(x, np.ndarray) else np.ndim(x)) == 1:  # (np.ndim alone costs ~1.5 us)
            return self._forward_one(x)
        x = np.asarray(x, dtype=np.float32)
        lead = x.shape[:-1]
        rows = x.reshape(-1, self.input_size)
        n = rows.shape[0]
        block = min(n, _BLOCK_ROWS)
        work = self._infer_cache.get(block)
        if work is None:
            work = self._make_work(block)
            if len(self._infer_cache) < _MAX_CACHED_BATCH_SIZES:
                self._infer_cache[block] = work
        aug, z, zeros = work
        if n <= block:
            np.copyto(aug[0][:, :-1], rows)
            return self._run_layers(aug, z, zeros).reshape(lead + (self.output_size,))
        out = self._infer_out.get(n)
        if out is None:
            out = np.empty((n, self.output_size), dtype=np.float32)
            if len(self._infer_out) < _MAX_CACHED_BATCH_SIZES:
                self._infer_out[n] = out
        for start in range(0, n, block):
            stop = min(start + block, n)
            if stop - start < block:  # the last, partial block: leading views of the work arrays
                aug, z, zeros = ([a[:stop - start] for a in arrays] for arrays in (aug, z, zeros))
            np.copyto(aug[0][:, :-1], rows[start:stop])
            np.copyto(out[start:stop], self._run_layers(aug, z, zeros))
        return out.reshape(lead + (self.output_size,))

    def _run_layers(self, aug: list[np.ndarray], z: list[np.ndarray], zeros: list[np.ndarray]) -> np.ndarray:
        """Forward through every layer; ``aug[0][:, :-1]`` holds the input. Returns ``z[-1]``.

        ``aug[i]`` is layer i's input with a trailing column of ones, so ``[a, 1] @ [W; b] = a @ W + b``
        is one dot. Each hidden activation is written into the next layer's ``aug`` columns;
        ``z[i]`` keeps the activation (for relu: the pre-activation, which has the same sign).
        ``zeros[i]`` is a zeros array shaped like ``z[i]``: relu is ``np.maximum(z, zeros)`` (and its
        mask ``np.greater(z, zeros)``) because numpy runs these with its SIMD loops only when both
        operands are contiguous arrays; against the scalar 0 they take 2-3x longer (64 x 64: 3.4 us
        against 1.2 us).
        """
        last = len(z) - 1
        for i, (w_aug, act) in enumerate(zip(self._weights_aug, self.activations)):
            out = z[i]
            np.dot(aug[i], w_aug, out=out)
            if i < last:
                if act == "relu":
                    np.maximum(out, zeros[i], out=aug[i + 1][:, :-1])
                else:
                    _activate(act, out)
                    np.copyto(aug[i + 1][:, :-1], out)
            elif act != "linear":
                _activate(act, out)
        return z[last]

    def _make_work(self, batch: int) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        """Work arrays for ``_run_layers``: each layer's input with a column of ones, its output, zeros."""
        return ([np.ones((batch, n + 1), dtype=np.float32) for n in self.sizes[:-1]],
                [np.empty((batch, n), dtype=np.float32) for n in self.sizes[1:]],
                [np.zeros((batch, n), dtype=np.float32) for n in self.sizes[1:]])

    def _forward_one(self, x: np.ndarray) -> np.ndarray:
        """One observation (the act path): each layer is one dot (``[h, 1] @ [W; b]``) and one activation."""
        one = self._one
        if one is None:
            one = self._one = []
            for fan_in, fan_out, w_aug, act in zip(self.sizes[:-1], self.sizes[1:], self._weights_aug,
                                                    self.activations):
                h_aug = np.ones(fan_in + 1, dtype=np.float32)
                # zeros: relu against an array, not the scalar 0 (3x faster: see _run_layers)
                one.append((h_aug, h_aug[:fan_in], w_aug, act, np.zeros(fan_out, dtype=np.float32)))
            self._one_out = np.empty(self.output_size, dtype=np.float32)
        one[0][1][...] = x
        last = len(one) - 1
        for i, (h_aug, _, w_aug, act, zeros) in enumerate(one):
            out = one[i + 1][1] if i < last else self._one_out
            np.dot(h_aug, w_aug, out=out)
            if act == "relu":
                np.maximum(out, zeros, out=out)
            elif act != "linear":
                _activate(act, out)
        return self._one_out

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Inference: ``x`` of shape ``(in,)`` or ``(B, in)`` -> a new float32 array ``(out,)``/``(B, out)``."""
        return self.forward_into_cache(x).copy()

    __call__ = forward

    def forward_train(self, x: np.ndarray) -> np.ndarray:
        """Forward pass that keeps every layer's activations for ``backward``.

        ``x`` is ``(B, in)`` (a 1-D input is treated as a batch of one). The returned array is a
        work buffer reused by the next ``forward_train`` with the same batch size.
        """
        x = np.asarray(x, dtype=np.float32)
        if x.ndim == 1:
            x = x[None, :]
        cache = self._train_cache.get(x.shape[0])
        if cache is None:
            cache = self._make_train_cache(x.shape[0])
        np.copyto(cache["acts"][0], x)  # a copy, so callers may reuse their input array before backward
        self._last_train = cache
        return self._run_layers(cache["aug"], cache["z"], cache["zeros"])

    def _make_train_cache(self, batch: int) -> dict[str, Any]:
        """Work arrays for one batch size: each layer's input with a trailing column of ones, outputs, deltas."""
        aug, z, zeros = self._make_work(batch)
        cache = {
            "aug": aug,
            "acts": [a[:, :-1] for a in aug],  # the layer inputs proper (strided views)
            "z": z,
            "zeros": zeros,
            "deltas": [np.empty((batch, n), dtype=np.float32) for n in self.sizes[1:]],
            "masks": [np.empty((batch, n), dtype=bool) for n in self.sizes[1:]],
        }
        if len(self._train_cache) < _MAX_CACHED_BATCH_SIZES:
            self._train_cache[batch] = cache
        return cache

    # ---- backward ------------------------------------------------------------------------------

    def backward(self, grad_y: np.ndarray) -> np.ndarray:
        """Gradient of the loss w.r.t. ``params`` given dL/dy for the last ``forward_train``.

        Returns ``self.grad``: a flat float32 vector in the ``params`` layout, overwritten (not
        accumulated) by each call.
        """
        cache = self._last_train
        if cache is None:
            raise RuntimeError("backward() needs a forward_train() first")
        aug, z, deltas, masks, zeros = cache["aug"], cache["z"], cache["deltas"], cache["masks"], cache["zeros"]
        acts = self.activations
        last = len(z) - 1
        if acts[last] == "linear":
            delta = grad_y  # read only below, so the caller's array is safe
            if not (isinstance(delta, np.ndarray) and delta.dtype == np.float32 and delta.shape == z[last].shape):
                delta = np.asarray(grad_y, dtype=np.float32).reshape(z[last].shape)
        else:
            delta = deltas[last]
            np.copyto(delta, np.reshape(grad_y, delta.shape))
            _activation_grad(acts[last], z[last], delta, masks[last])
        for i in range(last, -1, -1):
            np.dot(aug[i].T, delta, out=self._grad_weights_aug[i])  # [dW; db] = [a, 1]^T @ delta
            if i > 0:  # (no dL/dinput for the first layer: nothing uses it)
                prev = deltas[i - 1]
                np.dot(delta, self.weights[i].T, out=prev)
                # z[i - 1] is contiguous and holds the activation, or for relu the pre-activation,
                # which has the same sign: either gives the derivative
                if acts[i - 1] == "relu":  # the common case, inlined (a Python call is ~5 % of a layer)
                    np.greater(z[i - 1], zeros[i - 1], out=masks[i - 1])
                    np.multiply(prev, masks[i - 1], out=prev)
                elif acts[i - 1] != "linear":
                    _activation_grad(acts[i - 1], z[i - 1], prev, masks[i - 1])
                delta = prev
        return self.grad

    # ---- description, copies and state dicts ---------------------------------------------------

    def architecture(self) -> dict[str, Any]:
        """Plain-data description, enough to rebuild the network (``MLP.from_architecture``)."""
        return {
            "input_size": self.input_size,
            "hidden": [{"size": h.size, "activation": h.activation} for h in self.hidden],
            "output_size": self.output_size,
            "output_activation": self.output_activation,
        }

    @classmethod
    def from_architecture(cls, arch: Mapping[str, Any], rng: np.random.Generator | int | None = None) -> MLP:
        return cls(int(arch["input_size"]), arch["hidden"], int(arch["output_size"]),
                   str(arch.get("output_activation", "linear")), rng=rng)

    def copy(self) -> MLP:
        """A new network with the same architecture and a copy of the parameters."""
        clone = MLP.from_architecture(self.architecture(), rng=0)
        np.copyto(clone.params, self.params)
        return clone

    def copy_params_from(self, other: MLP) -> None:
        """Overwrite this network's parameters with ``other``'s (in place: views stay valid)."""
        if other.architecture() != self.architecture():
            raise ValueError("copy_params_from: architectures differ")
        np.copyto(self.params, other.params)

    def state_dict(self) -> dict[str, np.ndarray]:
        """``{"layers.0.weight": (out, in), "layers.0.bias": (out,), ...}`` in torch/tinygrad layout (copies)."""
        d: dict[str, np.ndarray] = {}
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            d[f"layers.{i}.weight"] = np.ascontiguousarray(w.T)
            d[f"layers.{i}.bias"] = b.copy()
        return d

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Load a ``state_dict``; raises ``ValueError`` naming the first missing/extra key or bad shape."""
        expected = {f"layers.{i}.{k}" for i in range(self.num_layers) for k in ("weight", "bias")}
        missing, extra = expected - set(state), set(state) - expected
        if missing or extra:
            raise ValueError(f"state dict keys differ: missing {sorted(missing)}, unexpected {sorted(extra)}")
        arrays = {}
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            for key, want in ((f"layers.{i}.weight", (w.shape[1], w.shape[0])), (f"layers.{i}.bias", b.shape)):
                arr = np.asarray(state[key], dtype=np.float32)
                if arr.shape != want:
                    raise ValueError(f"{key}: expected shape {want}, got {arr.shape}")
                if not np.all(np.isfinite(arr)):
                    raise ValueError(f"{key}: contains NaN or infinity")
                arrays[key] = arr
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):  # all checked first: no half-loaded network
            w[...] = arrays[f"layers.{i}.weight"].T
            b[...] = arrays[f"layers.{i}.bias"]

    def __repr__(self) -> str:
        layers = ", ".join(f"{h.size}:{h.activation}" for h in self.hidden)
        return f"MLP({self.input_size} -> [{layers}] -> {self.output_size}:{self.output_activation})"
