"""The genetic algorithm on fixed-topology networks: ``GAConfig`` and ``GA`` (ask/tell with elitism)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..nn.mlp import MLP
from .population import (
    SELECTIONS,
    PopulationMLP,
    gaussian_mutation,
    one_point_crossover,
    rank_select,
    roulette_select,
    tournament_select,
    uniform_crossover,
)


# ---- the GA ----------------------------------------------------------------------------------------------


@dataclass
class GAConfig:
    """A generational GA on fixed-topology networks."""

    population_size: int = 64
    hidden: list[Any] = field(default_factory=lambda: [(16, "tanh"), (16, "tanh")])
    selection: str = "tournament"
    """roulette (fitness-proportionate), tournament or rank."""
    tournament_size: int = 3
    rank_pressure: float = 1.5
    crossover: str = "uniform"
    """uniform, one_point (cut at a layer boundary) or none."""
    crossover_rate: float = 0.5
    mutation_rate: float = 0.1
    mutation_sigma: float = 0.1
    elites: int = 2
    """The best individuals copied unchanged into the next generation."""

    def check(self) -> None:
        if self.population_size < 2:
            raise ValueError("population_size must be at least 2")
        if self.selection not in SELECTIONS:
            raise ValueError(f"unknown selection {self.selection!r}; choose from {', '.join(SELECTIONS)}")
        if self.crossover not in ("uniform", "one_point", "none"):
            raise ValueError(f"unknown crossover {self.crossover!r}; choose from uniform, one_point, none")
        if not 0 <= self.elites < self.population_size:
            raise ValueError("elites must be between 0 and population_size - 1")
        for name in ("crossover_rate", "mutation_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1]")
        if self.mutation_sigma < 0:
            raise ValueError("mutation_sigma must be >= 0")


class GA:
    """The population matrix and one generation's step (``tell``): elites, selection, crossover, mutation."""

    def __init__(self, net: PopulationMLP, config: GAConfig, rng: np.random.Generator) -> None:
        config.check()
        self.net, self.config, self.rng = net, config, rng
        self.population = net.init_params(config.population_size, rng)

    def __len__(self) -> int:
        return self.population.shape[0]

    def policy(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """``policy(individuals, obs)``: outputs of the given rows for the given observations, one call."""
        pop, net = self.population, self.net
        return lambda idx, obs: net.forward(pop[idx], obs)

    def select(self, scores: np.ndarray, n: int) -> np.ndarray:
        c = self.config
        if c.selection == "tournament":
            return tournament_select(scores, n, self.rng, c.tournament_size)
        if c.selection == "rank":
            return rank_select(scores, n, self.rng, c.rank_pressure)
        return roulette_select(scores, n, self.rng)

    def tell(self, scores: np.ndarray) -> None:
        """Replace the population by the next generation, bred from these scores (higher is better)."""
        c, rng, pop = self.config, self.rng, self.population
        scores = np.asarray(scores, dtype=np.float64)
        order = np.argsort(-scores, kind="stable")
        n_children = len(pop) - c.elites
        a = pop[self.select(scores, n_children)]
        b = pop[self.select(scores, n_children)]
        cross = rng.random(n_children) < c.crossover_rate
        if c.crossover == "uniform":
            mixed = uniform_crossover(a, b, rng)
        elif c.crossover == "one_point":
            mixed = one_point_crossover(a, b, rng, self.net.cut_points)
        else:
            mixed = a
        children = np.where(cross[:, None], mixed, a)
        children = gaussian_mutation(children, c.mutation_rate, c.mutation_sigma, rng)
        self.population = np.concatenate([pop[order[:c.elites]], children]).astype(np.float32)

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

    def state(self) -> dict[str, Any]:
        return {"population": self.population.tolist()}

    def load_state(self, state: Mapping[str, Any]) -> None:
        pop = np.asarray(state["population"], dtype=np.float32)
        if pop.shape != self.population.shape:
            raise ValueError(f"checkpoint population has shape {pop.shape}, this configuration needs "
                             f"{self.population.shape}")
        self.population = pop

    def status(self) -> dict[str, str]:
        return {}


