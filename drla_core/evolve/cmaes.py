"""CMA-ES (Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772, 2016) with its default settings,
and sep-CMA-ES (Ros & Hansen 2008, "A Simple Modification in CMA-ES Achieving Linear Time and Space Complexity")
for large networks: ``CMAES`` on any vectors (minimising, like pycma) and ``CMAESMethod``, the ask/tell method of
``EvolutionJob`` on fixed-topology networks (``CMAESConfig``: higher scores are better).

The defaults (the tutorial's Table 1, positive weights only): ``lambda = 4 + floor(3 ln n)``, ``mu = lambda // 2``,
``w_i ~ ln((lambda + 1) / 2) - ln i`` summing to 1, ``mu_eff = 1 / sum w_i^2``, ``c_sigma = (mu_eff + 2) /
(n + mu_eff + 5)``, ``d_sigma = 1 + 2 max(0, sqrt((mu_eff - 1) / (n + 1)) - 1) + c_sigma``, ``c_c = (4 + mu_eff / n)
/ (n + 4 + 2 mu_eff / n)``, ``c_1 = 2 / ((n + 1.3)^2 + mu_eff)``, ``c_mu = min(1 - c_1, 2 (mu_eff - 2 + 1 / mu_eff)
/ ((n + 2)^2 + mu_eff))``; the evolution paths ``p_sigma`` (with ``C^-1/2``) and ``p_c`` (stalled by
``h_sigma``), the rank-one and rank-mu updates of ``C``, cumulative step-size adaptation; the eigendecomposition
``C = B D^2 B^T`` redone only when ``lambda / (c_1 + c_mu) / n / 10`` evaluations have passed since the last
(lazy, the tutorial's B.2). sep-CMA keeps ``C`` diagonal (``O(n)`` a sample) with ``c_1`` and ``c_mu`` times
``(n + 2) / 3``. Everything is float64; ``state`` holds it all (JSON lists) so a run resumes bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .es import FixedTopologyMethod, loaded_array
from .population import PopulationMLP

COVARIANCES = ("auto", "full", "diagonal")


def default_population(n: int) -> int:
    """The tutorial's ``lambda = 4 + floor(3 ln n)``."""
    return 4 + int(math.floor(3 * math.log(n)))


class CMAES:
    """The search distribution ``N(mean, sigma^2 C)``: ``ask() -> (lambda, n)`` samples, ``tell(x, values)``
    with their values (lower is better); ``x`` may be any ``lambda`` points (e.g. another library's samples).

    Args:
        mean: the start point (``n`` values). sigma: the initial step size.
        population_size: ``lambda`` (None: ``default_population(n)``).
        diagonal: sep-CMA (``C`` diagonal).
        rng: the generator ``ask`` draws from.
    """

    def __init__(self, mean: np.ndarray, sigma: float, population_size: int | None = None,
                 diagonal: bool = False, rng: np.random.Generator | None = None) -> None:
        self.mean = np.array(mean, dtype=np.float64).reshape(-1)
        n = self.n = self.mean.size
        if n < 1:
            raise ValueError("CMA-ES needs at least one parameter")
        if not (sigma > 0 and math.isfinite(sigma)):
            raise ValueError(f"sigma must be > 0, not {sigma}")
        lam = default_population(n) if population_size is None else int(population_size)
        if lam < 2:
            raise ValueError(f"population_size must be at least 2, not {lam}")
        self.sigma, self.lam, self.mu, self.diagonal = float(sigma), lam, lam // 2, bool(diagonal)
        self.rng = rng if rng is not None else np.random.default_rng()
        w = math.log((lam + 1) / 2) - np.log(np.arange(1, self.mu + 1))
        self.weights = w / w.sum()
        self.mueff = float(1.0 / np.sum(self.weights ** 2))
        mueff = self.mueff
        self.cs = (mueff + 2) / (n + mueff + 5)
        self.damps = 1 + 2 * max(0.0, math.sqrt((mueff - 1) / (n + 1)) - 1) + self.cs
        self.cc = (4 + mueff / n) / (n + 4 + 2 * mueff / n)
        self.c1 = 2 / ((n + 1.3) ** 2 + mueff)
        self.cmu = min(1 - self.c1, 2 * (mueff - 2 + 1 / mueff) / ((n + 2) ** 2 + mueff))
        if self.diagonal:  # Ros & Hansen 2008: a diagonal C learns (n + 2) / 3 times faster
            self.c1 *= (n + 2) / 3
            self.cmu = min(1 - self.c1, self.cmu * (n + 2) / 3)
        self.chin = math.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n ** 2))
        self.eigen_gap = lam / (self.c1 + self.cmu) / n / 10  # evaluations between eigendecompositions
        self.pc = np.zeros(n)
        self.ps = np.zeros(n)
        self.C = np.ones(n) if self.diagonal else np.eye(n)
        self.B = None if self.diagonal else np.eye(n)
        self.D = np.ones(n)  # sqrt of C's eigenvalues (sep: of its diagonal)
        self.generation = 0
        self.evaluations = 0
        self.eigen_evaluations = 0
        self._scratch: np.ndarray | None = None

    def ask(self) -> np.ndarray:
        """``lambda`` samples ``mean + sigma B D z`` (``z ~ N(0, I)``), one per row."""
        y = self.rng.standard_normal((self.lam, self.n))
        y *= self.D  # in place: a few arrays of lambda x n freshly allocated cost more than the arithmetic
        if self.B is not None:
            y = y @ self.B.T
        y *= self.sigma
        y += self.mean
        return y

    def _invsqrt(self, y: np.ndarray) -> np.ndarray:
        """``C^-1/2 y`` from the decomposition (sep: ``y / D``)."""
        return y / self.D if self.B is None else self.B @ ((self.B.T @ y) / self.D)

    def tell(self, x: np.ndarray, values: np.ndarray) -> None:
        """Update the mean, the paths, ``C`` and ``sigma`` from ``lambda`` points and their values (lower is
        better; ties: the earlier row first)."""
        x = np.asarray(x, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        if x.shape != (self.lam, self.n) or values.size != self.lam:
            raise ValueError(f"tell needs {self.lam} points of {self.n} values and {self.lam} values, got "
                             f"{x.shape} and {values.size}")
        n, w = self.n, self.weights
        best = np.argsort(values, kind="stable")[:self.mu]
        y = (x[best] - self.mean) / self.sigma  # (mu, n)
        yw = w @ y
        self.mean = self.mean + self.sigma * yw
        self.ps = (1 - self.cs) * self.ps + math.sqrt(self.cs * (2 - self.cs) * self.mueff) * self._invsqrt(yw)
        self.generation += 1
        self.evaluations += self.lam
        ps_norm = float(np.linalg.norm(self.ps))
        hsig = ps_norm / math.sqrt(1 - (1 - self.cs) ** (2 * self.generation)) < (1.4 + 2 / (n + 1)) * self.chin
        self.pc = (1 - self.cc) * self.pc + (math.sqrt(self.cc * (2 - self.cc) * self.mueff) * yw if hsig else 0.0)
        dh = 0.0 if hsig else self.cc * (2 - self.cc)
        keep = 1 + self.c1 * dh - self.c1 - self.cmu * float(w.sum())
        if self.B is None:
            self.C = keep * self.C + self.c1 * self.pc ** 2 + self.cmu * (w @ (y * y))
        else:  # in place, through one scratch matrix: fresh n x n arrays cost more than the arithmetic
            if self._scratch is None:
                self._scratch = np.empty_like(self.C)
            self.C *= keep
            self.C += np.outer(self.c1 * self.pc, self.pc, out=self._scratch)
            self.C += np.matmul(y.T * (self.cmu * w), y, out=self._scratch)
        self.sigma *= math.exp((self.cs / self.damps) * (ps_norm / self.chin - 1))
        self._decompose()

    def _decompose(self) -> None:
        if self.B is None:
            self.D = np.sqrt(np.maximum(self.C, 1e-300))
            return
        if self.evaluations - self.eigen_evaluations <= self.eigen_gap:
            return
        self.eigen_evaluations = self.evaluations
        self.C = np.triu(self.C) + np.triu(self.C, 1).T  # symmetric to the last bit
        d2, self.B = np.linalg.eigh(self.C)
        self.D = np.sqrt(np.maximum(d2, 1e-300))

    def state(self) -> dict[str, Any]:
        return {"mean": self.mean.tolist(), "sigma": self.sigma, "pc": self.pc.tolist(), "ps": self.ps.tolist(),
                "C": self.C.tolist(), "B": None if self.B is None else self.B.tolist(), "D": self.D.tolist(),
                "generation": self.generation, "evaluations": self.evaluations,
                "eigen_evaluations": self.eigen_evaluations}

    def load_state(self, state: Mapping[str, Any]) -> None:
        n = self.n
        self.mean, self.pc, self.ps = (loaded_array(state, k, (n,)) for k in ("mean", "pc", "ps"))
        self.C = loaded_array(state, "C", (n,) if self.B is None else (n, n))
        if self.B is not None:
            self.B = loaded_array(state, "B", (n, n))
        self.D = loaded_array(state, "D", (n,))
        self.sigma = float(state["sigma"])
        self.generation, self.evaluations = int(state["generation"]), int(state["evaluations"])
        self.eigen_evaluations = int(state["eigen_evaluations"])


@dataclass
class CMAESConfig:
    """CMA-ES on fixed-topology networks."""

    population_size: int | None = None
    """lambda (None: the default ``4 + floor(3 ln n)`` of the network's ``n`` parameters)."""
    hidden: list[Any] = field(default_factory=lambda: [(16, "tanh"), (16, "tanh")])
    sigma: float = 0.3
    """The initial step size (it adapts); 0.3 solves CartPole on 8 seeds of 8 (in 2 to 20 generations), 0.1 on 7."""
    covariance: str = "auto"
    """full, diagonal (sep-CMA) or auto: diagonal above ``diagonal_above`` parameters."""
    diagonal_above: int = 1000
    """auto: networks with more parameters than this use sep-CMA (a full C of n^2 values, decomposed in
    O(n^3), costs too much in time and in checkpoint size beyond a few thousand)."""

    def check(self) -> None:
        if self.population_size is not None and self.population_size < 2:
            raise ValueError(f"population_size must be at least 2, not {self.population_size}")
        if not (self.sigma > 0 and math.isfinite(self.sigma)):
            raise ValueError("sigma must be > 0")
        if self.covariance not in COVARIANCES:
            raise ValueError(f"unknown covariance {self.covariance!r}; choose from {', '.join(COVARIANCES)}")


class CMAESMethod(FixedTopologyMethod):
    """CMA-ES over a network's parameters, started at a network initialised like ``MLP``'s."""

    def __init__(self, net: PopulationMLP, config: CMAESConfig, rng: np.random.Generator) -> None:
        config.check()
        self.net, self.config = net, config
        diagonal = config.covariance == "diagonal" or (config.covariance == "auto"
                                                       and net.n_params > config.diagonal_above)
        self.es = CMAES(net.init_params(1, rng)[0], config.sigma, config.population_size, diagonal, rng)
        self._sample()

    @property
    def rng(self) -> np.random.Generator:
        return self.es.rng

    @rng.setter
    def rng(self, rng: np.random.Generator) -> None:
        self.es.rng = rng

    def _sample(self) -> None:
        self.x = self.es.ask()
        self.population = self.x.astype(np.float32)

    def tell(self, scores: np.ndarray) -> None:
        """One CMA-ES update from the scores (higher is better), then the next samples."""
        self.es.tell(self.x, -np.asarray(scores, dtype=np.float64))
        self._sample()

    def state(self) -> dict[str, Any]:
        return {**self.es.state(), "x": self.x.tolist()}

    def load_state(self, state: Mapping[str, Any]) -> None:
        self.es.load_state(state)
        self.x = loaded_array(state, "x", (self.es.lam, self.es.n))
        self.population = self.x.astype(np.float32)

    def status(self) -> dict[str, str]:
        return {"sigma": f"{self.es.sigma:.4g}" + (" (sep-CMA)" if self.es.diagonal else "")}
