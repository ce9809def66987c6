"""OpenAI-ES (Salimans, Ho, Chen, Sidor & Sutskever 2017, "Evolution Strategies as a Scalable Alternative to
Reinforcement Learning") on fixed-topology networks: ``ESConfig`` and ``OpenAIES`` (ask/tell, like ``ga.GA``).

One generation samples ``P / 2`` directions ``eps_j ~ N(0, I)`` and evaluates the antithetic pairs
``theta + sigma eps_j`` (row ``2j``) and ``theta - sigma eps_j`` (row ``2j + 1``); the scores become centred
ranks in ``[-0.5, 0.5]`` (fitness shaping); the gradient of the smoothed objective ``E[F(theta + sigma eps)]`` is
estimated as ``g = 1 / (P sigma) sum_i s_i eps_i`` (``gradient``), and Adam ascends it with weight decay. As the
paper's code (``evolution-strategies-starter``, ``es.py``) Adam is given ``-(sigma g) + weight_decay theta``
(its ``g`` is ours times ``sigma``; Adam's steps do not depend on the scale of its input, the weight of the
decay beside it does). ``sigma`` stays fixed. The parameters ``theta`` and Adam's moments are float64; the rows
evaluated are float32 (``MLP.params``), and what a checkpoint holds (``state``) resumes bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..nn.mlp import MLP
from .population import PopulationMLP

FITNESS_SHAPINGS = ("centered_rank", "none")


class FixedTopologyMethod:
    """What ES and CMA-ES share with ``ga.GA``: a float32 population matrix over one ``PopulationMLP``, its
    batched policy, and genomes as rows (JSON lists of float32 values)."""

    net: PopulationMLP
    population: np.ndarray
    #: No champion check alongside the generation (``Evaluation``): a population around one point has many
    #: individuals that may be its best, whose check episodes would play in every generation (doubling its time
    #: on CartPole); the job checks the generation's best on its own when it reaches the target (same results).
    check_alongside = False

    def __len__(self) -> int:
        return self.population.shape[0]

    def policy(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """``policy(individuals, obs)``: outputs of the given rows for the given observations, one call."""
        pop, net = self.population, self.net
        return lambda idx, obs: net.forward(pop[idx], obs)

    def network(self, i: int) -> MLP:
        return self.net.to_mlp(self.population[i])

    def genome(self, i: int) -> Any:
        return self.population[i].copy()

    def genome_network(self, genome: Any) -> MLP:
        return self.net.to_mlp(genome)

    def genome_to_data(self, genome: Any) -> Any:
        return np.asarray(genome, dtype=np.float32).tolist()

    def genome_from_data(self, data: Any) -> Any:
        return np.asarray(data, dtype=np.float32)


def loaded_array(state: Mapping[str, Any], key: str, shape: tuple[int, ...]) -> np.ndarray:
    """``state[key]`` as a float64 array of ``shape``, or ``ValueError`` saying what it is instead."""
    a = np.asarray(state[key], dtype=np.float64)
    if a.shape != shape:
        raise ValueError(f"checkpoint {key} has shape {a.shape}, this configuration needs {shape}")
    return a


def centered_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks scaled to ``[-0.5, 0.5]`` (the lowest -0.5; ties ranked by position), as the paper's code."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    ranks = np.empty(x.size, dtype=np.float64)
    ranks[np.argsort(x, kind="stable")] = np.arange(x.size)
    return ranks / max(1, x.size - 1) - 0.5


@dataclass
class ESConfig:
    """OpenAI-ES on fixed-topology networks (the paper's Adam and weight decay; step sizes for small networks)."""

    population_size: int = 64
    """Evaluations per generation: ``population_size / 2`` antithetic pairs (so it is even)."""
    hidden: list[Any] = field(default_factory=lambda: [(16, "tanh"), (16, "tanh")])
    sigma: float = 0.2
    """Standard deviation of the parameter noise (fixed). The paper's 0.02 and 0.01 suit its normalised
    observations and populations in the thousands; 0.2 and 0.1 solve CartPole with 64 (8 seeds of 8, in 7 to 29
    generations)."""
    learning_rate: float = 0.1
    """Adam's step size."""
    weight_decay: float = 0.005
    """L2 coefficient added to Adam's input (the paper's ``l2coeff``)."""
    fitness_shaping: str = "centered_rank"
    """centered_rank (the paper's) or none (raw scores)."""
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8

    def check(self) -> None:
        if self.population_size < 2 or self.population_size % 2:
            raise ValueError(f"population_size must be even and at least 2 (antithetic pairs), not "
                             f"{self.population_size}")
        if not (self.sigma > 0 and math.isfinite(self.sigma)):
            raise ValueError("sigma must be > 0")
        if not self.learning_rate > 0:
            raise ValueError("learning_rate must be > 0")
        if self.weight_decay < 0:
            raise ValueError("weight_decay must be >= 0")
        if self.fitness_shaping not in FITNESS_SHAPINGS:
            raise ValueError(f"unknown fitness_shaping {self.fitness_shaping!r}; choose from "
                             f"{', '.join(FITNESS_SHAPINGS)}")
        if not (0.0 <= self.beta1 < 1.0 and 0.0 <= self.beta2 < 1.0):
            raise ValueError("beta1 and beta2 must be in [0, 1)")


class OpenAIES(FixedTopologyMethod):
    """The search point ``theta``, Adam's state and the generation's noise; ``tell`` takes one step."""

    def __init__(self, net: PopulationMLP, config: ESConfig, rng: np.random.Generator) -> None:
        config.check()
        self.net, self.config, self.rng = net, config, rng
        self.theta = net.init_params(1, rng)[0].astype(np.float64)
        self.m = np.zeros_like(self.theta)
        self.v = np.zeros_like(self.theta)
        self.t = 0
        # the noise and its scaled copy, filled in place each generation (fresh arrays cost more than the numbers)
        self.noise = np.empty((config.population_size // 2, self.theta.size))
        self._step = np.empty_like(self.noise)
        self._sample()

    def _sample(self) -> None:
        """The next generation's noise (``P / 2`` directions) and its antithetic rows."""
        self.rng.standard_normal(out=self.noise)
        self._rows()

    def _rows(self) -> None:
        step = np.multiply(self.noise, self.config.sigma, out=self._step)
        pop = np.empty((2 * self.noise.shape[0], self.theta.size), dtype=np.float32)
        np.add(self.theta, step, out=pop[0::2], casting="unsafe")  # summed in float64, then rounded
        np.subtract(self.theta, step, out=pop[1::2], casting="unsafe")
        self.population = pop

    def shaped(self, scores: np.ndarray) -> np.ndarray:
        scores = np.asarray(scores, dtype=np.float64).reshape(-1)
        if scores.size != len(self):
            raise ValueError(f"{scores.size} scores for a population of {len(self)}")
        return centered_ranks(scores) if self.config.fitness_shaping == "centered_rank" else scores

    def gradient(self, scores: np.ndarray) -> np.ndarray:
        """The estimate ``1 / (P sigma) sum_i s_i eps_i`` of the smoothed objective's gradient at ``theta``
        (``s`` the shaped scores, ``eps_i = +-eps_j``): ``(1 / P sigma) sum_j (s_2j - s_2j+1) eps_j``."""
        s = self.shaped(scores)
        return ((s[0::2] - s[1::2]) @ self.noise) / (len(self) * self.config.sigma)

    def tell(self, scores: np.ndarray) -> None:
        """One Adam step up the estimated gradient (higher scores are better), then new noise."""
        c = self.config
        grad = -c.sigma * self.gradient(scores) + c.weight_decay * self.theta  # Adam minimises this
        self.t += 1
        a = c.learning_rate * math.sqrt(1 - c.beta2 ** self.t) / (1 - c.beta1 ** self.t)
        self.m = c.beta1 * self.m + (1 - c.beta1) * grad
        self.v = c.beta2 * self.v + (1 - c.beta2) * (grad * grad)
        self.theta = self.theta - a * self.m / (np.sqrt(self.v) + c.epsilon)
        self._sample()

    def mean_network(self) -> MLP:
        """The network at ``theta`` (the distribution's centre, never evaluated by the job itself)."""
        return self.net.to_mlp(self.theta.astype(np.float32))

    def state(self) -> dict[str, Any]:
        return {"theta": self.theta.tolist(), "m": self.m.tolist(), "v": self.v.tolist(), "t": self.t,
                "noise": self.noise.tolist()}

    def load_state(self, state: Mapping[str, Any]) -> None:
        n = self.theta.size
        self.theta = loaded_array(state, "theta", (n,))
        self.m, self.v = loaded_array(state, "m", (n,)), loaded_array(state, "v", (n,))
        self.noise[...] = loaded_array(state, "noise", self.noise.shape)
        self.t = int(state["t"])
        self._rows()

    def status(self) -> dict[str, str]:
        return {"theta norm": f"{float(np.linalg.norm(self.theta)):.4g}"}
