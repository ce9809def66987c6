"""The population as one float32 matrix (``PopulationMLP``) and the GA operators on it: selection
(roulette, tournament, rank), crossover (uniform, one-point at layer boundaries) and Gaussian mutation, each
taking a ``numpy.random.Generator`` so a seed fixes a run (Holland; Goldberg 1989; Baker 1985)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..nn.mlp import ACTIVATIONS, MLP, _activate, _init_bound, as_layer_specs


# ---- the population as one matrix ---------------------------------------------------------------------


class PopulationMLP:
    """Fixed-topology MLPs for a whole population; params ``(P, n_params)`` in ``MLP.params`` layout."""

    def __init__(self, input_size: int, hidden: Sequence[Any], output_size: int,
                 output_activation: str = "tanh") -> None:
        self.input_size, self.output_size = int(input_size), int(output_size)
        self.hidden = as_layer_specs(hidden)
        if output_activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {output_activation!r}; choose from {ACTIVATIONS}")
        self.output_activation = output_activation
        self.sizes = [self.input_size] + [h.size for h in self.hidden] + [self.output_size]
        self.activations = [h.activation for h in self.hidden] + [output_activation]
        self.layers: list[tuple[int, int, int, int]] = []  # (weight offset, fan in, fan out, bias offset)
        offset = 0
        for fan_in, fan_out in zip(self.sizes[:-1], self.sizes[1:]):
            self.layers.append((offset, fan_in, fan_out, offset + fan_in * fan_out))
            offset += fan_in * fan_out + fan_out
        self.n_params = offset
        #: Layer boundaries inside a row: where a layer-aligned one-point crossover may cut.
        self.cut_points = [w for w, _, _, _ in self.layers[1:]]

    def init_params(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` rows initialised like ``MLP`` (uniform He/Glorot weights, zero biases)."""
        params = np.zeros((n, self.n_params), dtype=np.float32)
        for (w, fi, fo, _), act in zip(self.layers, self.activations):
            bound = _init_bound(act, fi, fo)
            params[:, w:w + fi * fo] = rng.uniform(-bound, bound, size=(n, fi * fo))
        return params

    def forward(self, params: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Row i of ``params`` applied to ``x[i]``: ``x`` is ``(P, in)`` or ``(P, B, in)``; one call for all."""
        x = np.asarray(x, dtype=np.float32)
        flat = x.ndim == 2
        h = x[:, None, :] if flat else x
        p = params.shape[0]
        for (w, fi, fo, b), act in zip(self.layers, self.activations):
            h = np.matmul(h, params[:, w:w + fi * fo].reshape(p, fi, fo))
            h += params[:, None, b:b + fo]
            if act != "linear":
                _activate(act, h)
        return h[:, 0, :] if flat else h

    def to_mlp(self, row: np.ndarray) -> MLP:
        """One individual as an ``MLP`` (same layout: a copy of the row is its ``params``)."""
        net = MLP(self.input_size, self.hidden, self.output_size, self.output_activation, rng=0)
        net.params[...] = np.asarray(row, dtype=np.float32)
        return net

    def architecture(self) -> dict[str, Any]:
        return {"input_size": self.input_size, "hidden": [{"size": h.size, "activation": h.activation}
                                                          for h in self.hidden],
                "output_size": self.output_size, "output_activation": self.output_activation}


# ---- selection -----------------------------------------------------------------------------------------


def roulette_select(fitness: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` indices drawn with probability proportional to fitness (shifted so the worst has weight 0,
    plus a small floor so every individual keeps a chance; equal fitness: uniform)."""
    f = np.asarray(fitness, dtype=np.float64)
    w = f - f.min()
    span = w.max()
    if not np.isfinite(span) or span <= 0:
        return rng.integers(0, f.size, size=n)
    w = w + span * 1e-3
    return rng.choice(f.size, size=n, p=w / w.sum())


def tournament_select(fitness: np.ndarray, n: int, rng: np.random.Generator, size: int = 3) -> np.ndarray:
    """``n`` winners of tournaments of ``size`` individuals drawn with replacement (ties: lowest index)."""
    f = np.asarray(fitness, dtype=np.float64)
    entrants = rng.integers(0, f.size, size=(n, max(1, int(size))))
    return entrants[np.arange(n), np.argmax(f[entrants], axis=1)]


def rank_select(fitness: np.ndarray, n: int, rng: np.random.Generator, pressure: float = 1.5) -> np.ndarray:
    """Linear ranking (Baker): the best has ``pressure`` times the mean chance, the worst ``2 - pressure``."""
    f = np.asarray(fitness, dtype=np.float64)
    m = f.size
    if m == 1:
        return np.zeros(n, dtype=np.int64)
    ranks = np.empty(m)
    ranks[np.argsort(f, kind="stable")] = np.arange(m)  # 0 = worst
    p = ((2.0 - pressure) + 2.0 * (pressure - 1.0) * ranks / (m - 1)) / m
    return rng.choice(m, size=n, p=p / p.sum())


SELECTIONS: dict[str, Callable[..., np.ndarray]] = {
    "roulette": roulette_select, "tournament": tournament_select, "rank": rank_select,
}


# ---- crossover and mutation -----------------------------------------------------------------------------


def uniform_crossover(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Children whose every gene comes from ``a`` or ``b`` with probability 1/2 (rows paired)."""
    return np.where(rng.random(a.shape) < 0.5, a, b).astype(a.dtype, copy=False)


def one_point_crossover(a: np.ndarray, b: np.ndarray, rng: np.random.Generator,
                        cut_points: Sequence[int]) -> np.ndarray:
    """Children ``a[:cut] + b[cut:]``, the cut drawn per row among ``cut_points`` (layer boundaries, so
    a layer's weights and biases are never split between parents)."""
    a2, b2 = np.atleast_2d(a), np.atleast_2d(b)
    if not len(cut_points):
        return a2.copy().reshape(a.shape)
    cuts = np.asarray(cut_points)[rng.integers(0, len(cut_points), size=a2.shape[0])]
    from_a = np.arange(a2.shape[1])[None, :] < cuts[:, None]
    return np.where(from_a, a2, b2).astype(a.dtype, copy=False).reshape(a.shape)


def gaussian_mutation(x: np.ndarray, rate: float, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Each gene, with probability ``rate``, gets ``N(0, sigma)`` added; a new array."""
    mask = rng.random(x.shape) < rate
    return (x + mask * rng.normal(0.0, sigma, size=x.shape)).astype(x.dtype, copy=False)


