"""Neuroevolution on fixed-topology networks: a population held as one float32 matrix, evaluated batched.

* ``PopulationMLP``: the layout of ``mlp.MLP`` (one flat vector per network: each layer's ``(in, out)``
  weights then its biases), for a whole population at once: ``params`` is ``(individuals, n_params)`` and
  ``forward(params, x)`` gives every individual's outputs in one call (a batched matmul per layer). Any row
  loads into an ``MLP`` (``to_mlp``) and exports with ``model_io``.
* GA operators (Holland; Goldberg 1989), all taking a ``numpy.random.Generator`` so a seed fixes a run:
  ``roulette_select`` (fitness-proportionate, shifted so negative fitness works), ``tournament_select``,
  ``rank_select`` (linear ranking, Baker 1985), ``uniform_crossover``, ``one_point_crossover`` (cut only at
  layer boundaries), ``gaussian_mutation``; ``GA.tell`` adds elitism.
* Novelty search (Lehman & Stanley 2011): ``novelty_scores`` (mean distance to the k nearest behaviours
  among the population and the archive) and ``NoveltyArchive`` (adaptive threshold or probability).
* ``Evaluation``: one generation's episodes, every individual and episode on a pool of environments, one
  batched forward per step, pausable between steps (so a session can advance it in time slices).
* ``EvolutionJob``: a ``TrainingJob`` (see ``agents/base.py``) over GA or NEAT (``neat.NEAT``), with
  novelty, checkpoints as JSON and a report picture.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .env import Env
from .files import atomic_write
from .mlp import ACTIVATIONS, MLP, _activate, _init_bound, as_layer_specs
from .model_io import Model
from .neat import NEAT, NEATConfig
from .plot import BLUE, GREEN, ORANGE, PURPLE, Panel, Series, render_panels
from .png import write_png
from .spaces import Box, Discrete, Space

__all__ = [
    "PopulationMLP", "roulette_select", "tournament_select", "rank_select", "SELECTIONS", "uniform_crossover",
    "one_point_crossover", "gaussian_mutation", "GAConfig", "GA", "novelty_scores", "NoveltyConfig",
    "NoveltyArchive", "Evaluation", "EvolutionConfig", "EvolutionJob", "save_evolution_report",
    "evolution_panels", "CHECKPOINT_FORMAT", "rng_state", "rng_from_state", "EvolutionCheckpoint",
    "read_evolution_checkpoint", "check_evolution_checkpoint",
]

CHECKPOINT_FORMAT = "drla-evolution"
CHECKPOINT_VERSION = 1


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


# ---- novelty search --------------------------------------------------------------------------------------


def novelty_scores(behaviors: np.ndarray, archive: np.ndarray | None, k: int) -> np.ndarray:
    """Each behaviour's mean Euclidean distance to its ``k`` nearest neighbours among the population
    (itself excluded) and the archive."""
    b = np.asarray(behaviors, dtype=np.float64).reshape(len(behaviors), -1)
    others = b if archive is None or len(archive) == 0 else np.concatenate([b, np.asarray(archive, np.float64)])
    d = np.sqrt(np.maximum(((b[:, None, :] - others[None, :, :]) ** 2).sum(-1), 0.0))
    d[np.arange(len(b)), np.arange(len(b))] = np.inf  # not its own neighbour
    kk = min(max(1, int(k)), others.shape[0] - 1)
    if kk <= 0:
        return np.zeros(len(b))
    nearest = np.partition(d, kk - 1, axis=1)[:, :kk]
    return nearest.mean(axis=1)


@dataclass
class NoveltyConfig:
    """Novelty search settings."""

    k: int = 15
    archive: str = "threshold"
    """threshold (added when novelty > an adaptive threshold) or probability (each added with add_probability)."""
    threshold: float = 0.05
    """Starting threshold; it rises 20 % after a generation that added more than 4, falls 5 % after none."""
    add_probability: float = 0.02
    fitness_weight: float = 0.0
    """Score = (1 - w) * novelty + w * fitness, both scaled to [0, 1] in the population; 0: novelty alone."""
    max_archive: int = 2000

    def check(self) -> None:
        if self.k < 1:
            raise ValueError("novelty k must be at least 1")
        if self.archive not in ("threshold", "probability"):
            raise ValueError(f"unknown archive insertion {self.archive!r}; choose threshold or probability")
        if not 0.0 <= self.fitness_weight <= 1.0 or not 0.0 <= self.add_probability <= 1.0:
            raise ValueError("fitness_weight and add_probability must be in [0, 1]")


class NoveltyArchive:
    """Past behaviours novelty is measured against; insertion by adaptive threshold or by probability."""

    def __init__(self, config: NoveltyConfig) -> None:
        config.check()
        self.config = config
        self.threshold = float(config.threshold)
        self.items: list[list[float]] = []

    def array(self) -> np.ndarray | None:
        return np.asarray(self.items, dtype=np.float64) if self.items else None

    def score(self, behaviors: np.ndarray, fitness: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray,
                                                                                                  np.ndarray]:
        """(scores for selection, novelty) of this generation; adds behaviours to the archive."""
        c = self.config
        novelty = novelty_scores(behaviors, self.array(), c.k)
        if c.archive == "threshold":
            added = np.flatnonzero(novelty > self.threshold)
            if len(added) > 4:
                self.threshold *= 1.2
            elif len(added) == 0:
                self.threshold *= 0.95
        else:
            added = np.flatnonzero(rng.random(len(novelty)) < c.add_probability)
        for i in added:
            self.items.append([float(v) for v in np.asarray(behaviors[i], dtype=np.float64).reshape(-1)])
        del self.items[:max(0, len(self.items) - c.max_archive)]
        if c.fitness_weight == 0.0:
            return novelty, novelty

        def unit(v: np.ndarray) -> np.ndarray:
            span = v.max() - v.min()
            return (v - v.min()) / span if span > 0 else np.zeros_like(v)

        w = c.fitness_weight
        return (1 - w) * unit(novelty) + w * unit(np.asarray(fitness, np.float64)), novelty

    def state(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "items": self.items}

    def load_state(self, state: Mapping[str, Any]) -> None:
        self.threshold = float(state["threshold"])
        self.items = [[float(v) for v in item] for item in state["items"]]


# ---- evaluating a population on environments ------------------------------------------------------------


def action_function(space: Space) -> Callable[[np.ndarray], list[Any]]:
    """Network outputs -> env actions: argmax for ``Discrete``; for a ``Box`` the tanh output in [-1, 1]
    scaled linearly onto the box (``low + (y + 1) / 2 * (high - low)``; unbounded dims take ``y`` itself)."""
    if isinstance(space, Discrete):
        return _ArgmaxActions()
    if isinstance(space, Box):
        low = np.broadcast_to(np.asarray(space.low, np.float64), space.shape).reshape(-1)
        high = np.broadcast_to(np.asarray(space.high, np.float64), space.shape).reshape(-1)
        finite = np.isfinite(low) & np.isfinite(high)
        mid = np.where(finite, (low + high) / 2, 0.0)
        half = np.where(finite, (high - low) / 2, 1.0)
        shape, dtype = space.shape, space.dtype

        def box(out: np.ndarray) -> list[Any]:
            acts = np.clip(mid + half * np.clip(out, -1.0, 1.0), low, high).astype(dtype)
            return [a.reshape(shape) for a in acts]
        return box
    raise TypeError(f"evolution needs a Box or Discrete action space, got {type(space).__name__}")


class _ArgmaxActions:
    """Discrete actions: the argmax of each row, as a list (``__call__``) or an int array (``array``, what a
    batched environment takes)."""

    def __call__(self, out: np.ndarray) -> list[Any]:
        return np.argmax(out, axis=-1).tolist()

    @staticmethod
    def array(out: np.ndarray) -> np.ndarray:
        return out.argmax(axis=-1)


def output_activation_for(space: Space) -> str:
    return "tanh" if isinstance(space, Box) else "linear"


def default_behavior(obs: Any, info: Mapping[str, Any]) -> np.ndarray:
    """An episode's behaviour: ``info["behavior"]`` when the env gives one, else the last observation."""
    b = info.get("behavior") if isinstance(info, Mapping) else None
    return np.asarray(obs if b is None else b, dtype=np.float64).reshape(-1)


#: How many individuals at a time play the champion check alongside their generation (``Evaluation``).
CHECK_ALONGSIDE = 3


class Evaluation:
    """Every (individual, episode) task run on a pool of environments; one batched forward per step.

    ``run(deadline)`` returns True when every episode has ended, False if it stopped at the deadline
    (between two steps; call ``run`` again to go on). Episode ``e`` of every individual starts with
    ``reset(seed=seeds[e])`` (common random numbers: individuals are compared on the same episodes).

    When the first environment offers ``batch(n)`` (an object that steps ``n`` copies of it at once in numpy,
    like ``envs.cartpole.CartPoleBatch``, with the same trajectories as the env itself) and the actions are
    discrete, every task runs at once on it: one batched forward and one batched environment step per step,
    no Python per environment. The results are the same as on the pool.

    On that batched path, ``check_seeds`` and ``check_target`` run a generation's champion check alongside it
    (``EvolutionJob``'s greedy check of the generation's best, when it reaches the target) as more rows of the
    same batch (``batch.add``), for a guess at the best: the ``CHECK_ALONGSIDE`` lowest-numbered individuals
    that may still be it (the best is the first of the highest fitness, and an episode capped at its step
    limit often ties: then it is the lowest-numbered of them). An individual starts the check's episodes when
    it enters that guess, and its check rows are dropped once its fitness is known to be below the target or
    once the generation's best is known and it is another. ``check_result(i)`` then gives individual ``i``'s
    check (returns, steps, and the observations and actions of its check episodes, step by step), or None when
    it did not play it to the end. Those rows count in no ``env_steps`` (the job counts the check it uses).
    The job runs the check on its own when the guess was wrong: the results are the same either way.

    When the first environment is a vector of copies that can restart some of them with seeds of their own
    (``num_envs`` and ``restart(copies, seeds) -> first observations``, like a Blender scene's copies), each
    copy is a slot of the pool but all copies step together: one forward for the running slots and one
    ``step`` of the vector per step (a copy without a task left acts too; its episode is not counted).
    A vector whose copies ``restarts_together`` (one physics world) plays rounds: every copy starts a task,
    and the next round starts when the last of them ends.
    """

    def __init__(self, policy: Callable[[np.ndarray, np.ndarray], np.ndarray], n_individuals: int,
                 seeds: Sequence[int], envs: Sequence[Env], act: Callable[[np.ndarray], list[Any]],
                 behavior: Callable[[Any, Mapping[str, Any]], np.ndarray] = default_behavior,
                 check_seeds: Sequence[int] = (), check_target: float | None = None) -> None:
        self.policy, self.envs, self.act, self.behavior = policy, list(envs), act, behavior
        self.seeds = [int(s) for s in seeds]
        self.n, self.episodes = int(n_individuals), len(self.seeds)
        self._returns = [0.0] * (self.n * self.episodes)
        self.behaviors: list[np.ndarray | None] = [None] * (self.n * self.episodes)
        self.env_steps = 0
        self._next_task = 0
        self._slot_task = [-1] * len(self.envs)
        self._x: np.ndarray | None = None  # each slot's current observation, flattened (float32)
        self._flat = True
        self._active: list[int] = []
        self._rows = np.zeros(0, dtype=np.int64)
        self.done = self.n * self.episodes == 0
        # the batched path: every task at once on one vector of environments
        self._batch: Any = None
        self._act_array = getattr(act, "array", None)
        batch = getattr(self.envs[0], "batch", None) if self.envs else None
        self._check_seeds = [int(s) for s in check_seeds] if check_target is not None else []
        self._check_target = check_target
        n_check = len(self._check_seeds)
        if callable(batch) and self._act_array is not None and not self.done:
            if n_check:
                try:
                    self._batch = batch(self.n * self.episodes, capacity=self.n * self.episodes +
                                        min(self.n, CHECK_ALONGSIDE) * n_check)
                except TypeError:  # a batch(n) without room for more rows
                    self._batch = None
                if not callable(getattr(self._batch, "add", None)):  # a batch that cannot start rows later
                    self._batch, self._check_seeds = batch(self.n * self.episodes), []
            else:
                self._batch = batch(self.n * self.episodes)
        # the champion check alongside (batched path): who started it, whether it goes on
        self._check_started: set[int] = set()
        self._check_guess: set[int] = set()
        self._checking = self._batch is not None and bool(self._check_seeds)
        self._check_wanted = self._checking  # the guess has to be (re)made
        self._main_alive_before = 0  # (the generation's rows before an episode-end step's changes)
        self._check_returns = np.full(self.n * n_check, np.nan)
        self._check_steps = np.zeros(self.n * n_check, dtype=np.int64)
        # every step's check rows (their tasks, observations and actions), one after the other
        self._record: list[np.ndarray] = []  # tasks, observations, actions: grown by doubling
        self._recorded = 0
        self._main_left = np.full(self.n, self.episodes, dtype=np.int64)  # main episodes still playing
        self._main_alive = self.n * self.episodes
        # the vector path: the copies of one vector environment are the pool's slots
        first: Any = self.envs[0] if self.envs else None
        self._vector: Any = first if callable(getattr(first, "restart", None)) and \
            getattr(first, "num_envs", 0) >= 1 else None
        if self._vector is not None:
            self._slot_task = [-1] * int(first.num_envs)
        self._tasks = np.zeros(0, dtype=np.int64)
        self._batch_returns = np.zeros(self.n * self.episodes, dtype=np.float64)
        self._acc = np.zeros(0, dtype=np.float64)

    @property
    def returns(self) -> np.ndarray:
        """Each individual's return in each episode, ``(individuals, episodes)``."""
        if self._batch is not None:
            return self._batch_returns.reshape(self.n, self.episodes).copy()
        return np.asarray(self._returns, dtype=np.float64).reshape(self.n, self.episodes)

    def _put(self, s: int, obs: Any) -> None:
        if self._x is None:
            flat = np.asarray(obs, dtype=np.float32).reshape(-1)
            self._x = np.zeros((len(self._slot_task), flat.size), dtype=np.float32)
            self._flat = np.ndim(obs) <= 1
        if self._flat:
            self._x[s] = obs  # numpy converts; no intermediate array (this runs once per env step)
        else:
            self._x[s] = np.asarray(obs, dtype=np.float32).reshape(-1)

    def _refill(self) -> None:
        """Start the next tasks on free environments; recompute which slots run and whose they are."""
        total, slot_task = self.n * self.episodes, self._slot_task
        for s, env in enumerate(self.envs):
            if slot_task[s] < 0 and self._next_task < total:
                task = self._next_task
                self._next_task += 1
                slot_task[s] = task
                obs, _ = env.reset(seed=self.seeds[task % self.episodes])
                self._put(s, obs)
        self._active = [s for s in range(len(self.envs)) if slot_task[s] >= 0]
        self._rows = np.array([slot_task[s] // self.episodes for s in self._active], dtype=np.int64)

    def run(self, deadline: float | None = None) -> bool:
        """Step every running episode until all have ended (True) or ``deadline`` passes (False)."""
        if self._batch is not None:
            return self._run_batch(deadline)
        if self._vector is not None:
            return self._run_vector(deadline)
        envs, slot_task, returns, put = self.envs, self._slot_task, self._returns, self._put
        changed = not self._active
        while not self.done:
            if changed:
                self._refill()
                changed = False
                if not self._active:
                    self.done = True
                    break
            active, x = self._active, self._x
            assert x is not None  # _refill put the first observations
            if len(active) != len(envs):
                x = x[active]
            actions = self.act(self.policy(self._rows, x))
            for s, action in zip(active, actions):
                o, r, terminated, truncated, info = envs[s].step(action)
                task = slot_task[s]
                returns[task] += float(r)
                put(s, o)
                if terminated or truncated:
                    self.behaviors[task] = self.behavior(o, info)
                    slot_task[s] = -1
                    changed = True
            self.env_steps += len(active)
            if changed:  # ended slots: take them out now so a pause leaves a consistent state
                self._refill()
                changed = False
                if not self._active:
                    self.done = True
            if deadline is not None and time.perf_counter() >= deadline:
                break
        return self.done

    def _start_vector_tasks(self, slots: list[int]) -> None:
        """The next tasks on the free ``slots`` (copies), each restarted with its task's episode seed."""
        total, slot_task = self.n * self.episodes, self._slot_task
        starting = []
        for s in slots:
            if self._next_task < total:
                slot_task[s] = self._next_task
                self._next_task += 1
                starting.append(s)
        if starting:
            obs = self._vector.restart(starting, [self.seeds[slot_task[s] % self.episodes] for s in starting])
            for s, o in zip(starting, obs):
                self._put(s, o)

    def _run_vector(self, deadline: float | None) -> bool:
        """``run`` on a vector of copies: the pool's loop with one ``step`` of the vector for every copy."""
        venv, slot_task, returns = self._vector, self._slot_task, self._returns
        together = bool(getattr(venv, "restarts_together", False))
        if self._x is None:
            self._start_vector_tasks(list(range(len(slot_task))))
        changed = True
        while not self.done:
            if changed:  # which copies play, and whose individual each one is
                active = [s for s in range(len(slot_task)) if slot_task[s] >= 0]
                if not active:
                    self.done = True
                    break
                rows = np.array([slot_task[s] // self.episodes for s in active], dtype=np.int64)
                changed = False
            assert self._x is not None
            chosen = self.act(self.policy(rows, self._x[active]))
            actions = [chosen[0]] * len(slot_task)  # a copy without a task plays along; nothing of it counts
            for s, a in zip(active, chosen):
                actions[s] = a
            obs, rewards, terminated, truncated, infos = venv.step(np.asarray(actions))
            ended = []
            for s in active:
                task = slot_task[s]
                returns[task] += float(rewards[s])
                if terminated[s] or truncated[s]:
                    final = infos["final_obs"][s] if "final_obs" in infos else obs[s]
                    self.behaviors[task] = self.behavior(final, {})
                    slot_task[s] = -1
                    ended.append(s)
                else:
                    self._put(s, obs[s])
            self.env_steps += len(active)
            if ended:
                changed = True
                if not together:
                    self._start_vector_tasks(ended)
                elif all(task < 0 for task in slot_task):  # a round ends when its last episode does
                    self._start_vector_tasks(list(range(len(slot_task))))
            if deadline is not None and time.perf_counter() >= deadline:
                break
        return self.done

    def _run_batch(self, deadline: float | None) -> bool:
        """``run`` on the batched environment: every task is a row; ended rows are dropped. Each row's return
        is summed in ``_acc`` (in step order, as the pool path sums it) and stored when its episode ends; when
        every reward is 1.0 (the batch's ``unit_rewards``) the return is the number of steps, summed by nobody.
        The check's rows (tasks ``n * episodes`` on) come after the generation's."""
        batch, act, policy = self._batch, self._act_array, self.policy
        assert act is not None
        unit = bool(getattr(batch, "unit_rewards", False))
        if self._x is None:  # start every task
            total = self.n * self.episodes
            self._tasks = np.arange(total, dtype=np.int64)
            self._rows = self._tasks // self.episodes
            self._acc = np.zeros(total, dtype=np.float64)
            self._x = batch.reset([self.seeds[t % self.episodes] for t in range(total)])
            if self._checking:
                self._tasks, self._rows, self._x, self._acc = self._start_checks(
                    self._tasks, self._rows, self._x, self._acc)
        tasks, rows, x, acc = self._tasks, self._rows, self._x, self._acc
        count_nonzero = np.count_nonzero
        while not self.done:
            actions = act(policy(rows, x))
            main = self._main_alive
            if len(tasks) > main:  # the check rows' observations and actions, for check_result
                at, k = self._recorded, len(tasks) - main
                if not self._record or at + k > len(self._record[0]):
                    self._grow_record(at + k, x, actions)
                record_tasks, record_obs, record_actions = self._record
                record_tasks[at:at + k] = tasks[main:]
                record_obs[at:at + k] = x[main:]
                record_actions[at:at + k] = actions[main:]
                self._recorded = at + k
            x, rewards, terminated, truncated = batch.step(actions)
            if not unit:
                np.add(acc, rewards, acc)
            self.env_steps += main
            if truncated is not False or count_nonzero(terminated):  # (count_nonzero: a fifth of any()'s cost)
                if truncated is True:
                    ended = np.ones(len(tasks), dtype=bool)
                else:
                    ended = terminated if truncated is False else terminated | truncated
                tasks, rows, x, acc = self._episodes_ended(ended, tasks, rows, x, acc, main, unit)
                if self.done:
                    break
            if deadline is not None and time.perf_counter() >= deadline:
                break
        self._tasks, self._rows, self._x, self._acc = tasks, rows, x, acc
        return self.done

    def _episodes_ended(self, ended: np.ndarray, tasks: np.ndarray, rows: np.ndarray, x: np.ndarray,
                        acc: np.ndarray, main: int,
                        unit: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The rows ``ended`` ended their episodes (``main``: how many of the rows are the generation's): store
        their returns and behaviours, drop them (and check rows that are no use any more) from the batch."""
        batch, returns = self._batch, self._batch_returns
        done = tasks[ended]
        got = batch.steps_run(ended).astype(np.float64) if unit else acc[ended]
        final = x[ended]
        keep = ~ended
        if len(tasks) > main:  # check rows among them
            is_main = done < self.n * self.episodes
            if not is_main.all():
                check = done[~is_main] - self.n * self.episodes
                self._check_returns[check] = got[~is_main]
                self._check_steps[check] = batch.steps_run(ended)[~is_main]
                done, got, final = done[is_main], got[is_main], final[is_main]
        returns[done] = got
        if self.behavior is default_behavior:  # (the final observations, without a call for each)
            for task, obs in zip(done.tolist(), final.astype(np.float64)):
                self.behaviors[task] = obs
        else:
            for task, obs in zip(done.tolist(), final):
                self.behaviors[task] = self.behavior(obs, {})
        if len(done):
            self._main_alive_before = main
            self._main_ended(done, tasks, keep)
        if not keep.any():
            self.done = True
            return tasks, rows, x, acc
        batch.keep(keep)
        tasks, rows, x = tasks[keep], rows[keep], x[keep]
        if not unit:
            acc = acc[keep]
        if self._checking and self._check_wanted:
            tasks, rows, x, acc = self._start_checks(tasks, rows, x, acc)
        return tasks, rows, x, acc

    def _start_checks(self, tasks: np.ndarray, rows: np.ndarray, x: np.ndarray,
                      acc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The individuals that enter the guess at the generation's best start the check's episodes, as rows
        after the others."""
        self._check_wanted = False
        e = self.episodes
        fitness = self._batch_returns.reshape(self.n, e).mean(axis=1)
        in_play = np.flatnonzero((self._main_left > 0) | (fitness >= self._check_target))  # type: ignore[operator]
        self._check_guess = {int(i) for i in in_play[:CHECK_ALONGSIDE]}
        new = sorted(self._check_guess - self._check_started)
        if not new:
            return tasks, rows, x, acc
        self._check_started.update(new)
        c = len(self._check_seeds)
        who = np.array(new, dtype=np.int64)
        added = (self.n * e + who[:, None] * c + np.arange(c)[None, :]).reshape(-1)
        x = self._batch.add(self._check_seeds * len(new))
        return (np.concatenate([tasks, added]), np.concatenate([rows, np.repeat(who, c)]), x,
                np.concatenate([acc, np.zeros(len(added))]))

    def _main_ended(self, done: np.ndarray, tasks: np.ndarray, keep: np.ndarray) -> None:
        """Generation episodes ``done`` ended: drop (in ``keep``) the check rows of every individual now known
        not to be the generation's best, or known to score below the target."""
        e, target = self.episodes, self._check_target
        self._main_alive -= len(done)
        owners = done // e
        if e == 1:
            self._main_left[owners] = 0
        else:
            self._main_left -= np.bincount(owners, minlength=self.n)
        if not self._checking:
            return
        n_main = self.n * e
        if self._main_alive == 0:  # every fitness known: only the best's check matters (none below the target)
            fitness = self.fitness()
            best = int(np.argmax(fitness))
            keep[self._main_alive_before:] &= (tasks[self._main_alive_before:] - n_main) // \
                len(self._check_seeds) == best
            if fitness[best] < target:  # type: ignore[operator]
                keep[self._main_alive_before:] = False
            self._checking = False  # no more starts
            return
        returns = self._batch_returns
        lost = [i for i in {int(o) for o in owners.tolist()} & self._check_guess
                if self._main_left[i] == 0 and returns[i * e:(i + 1) * e].mean() < target]  # type: ignore[operator]
        if lost:  # a guessed individual scored below the target: its rows go, the next one comes in
            self._check_wanted = True
            owner = (tasks[self._main_alive_before:] - n_main) // len(self._check_seeds)
            keep[self._main_alive_before:] &= ~np.isin(owner, lost)

    def check_result(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """Individual ``i``'s check played alongside the generation: ``(returns, steps)`` per check episode and
        ``(observations, actions)``, every step of its check episodes; None unless it played them all."""
        c = len(self._check_seeds)
        if not c or not self._recorded:
            return None
        got = self._check_returns[i * c:(i + 1) * c]
        if np.isnan(got).any():
            return None
        tasks, obs, actions = (a[:self._recorded] for a in self._record)
        first = self.n * self.episodes + i * c
        mine = (tasks >= first) & (tasks < first + c)
        return got.copy(), self._check_steps[i * c:(i + 1) * c].copy(), obs[mine], actions[mine]

    def _grow_record(self, need: int, x: np.ndarray, actions: np.ndarray) -> None:
        size = max(need, 2 * len(self._record[0]) if self._record else 512 * need)
        grown = [np.empty(size, dtype=np.int64), np.empty((size, *x.shape[1:]), dtype=x.dtype),
                 np.empty((size, *actions.shape[1:]), dtype=actions.dtype)]
        for new, old in zip(grown, self._record):
            new[:self._recorded] = old[:self._recorded]
        self._record = grown

    def fitness(self) -> np.ndarray:
        """Mean return over the episodes, per individual."""
        return self.returns.mean(axis=1)

    def mean_behaviors(self) -> np.ndarray:
        """Mean behaviour vector over the episodes, per individual."""
        b = np.stack([np.asarray(v) for v in self.behaviors])
        return b.reshape(self.n, self.episodes, -1).mean(axis=1)


# ---- the job ---------------------------------------------------------------------------------------------


class Method(Protocol):
    """What ``EvolutionJob`` needs of GA and NEAT."""

    def __len__(self) -> int: ...
    def policy(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]: ...
    def tell(self, scores: np.ndarray) -> None: ...
    def genome(self, i: int) -> Any: ...
    def genome_network(self, genome: Any) -> Any: ...
    def genome_to_data(self, genome: Any) -> Any: ...
    def genome_from_data(self, data: Any) -> Any: ...
    def state(self) -> dict[str, Any]: ...
    def load_state(self, state: Mapping[str, Any]) -> None: ...
    def status(self) -> dict[str, str]: ...


@dataclass
class EvolutionConfig:
    """One evolution run: the method and its settings, the budget, how individuals are scored."""

    method: str = "ga"
    """ga (fixed-topology MLPs) or neat."""
    generations: int = 100
    episodes: int = 1
    """Episodes per individual per generation; fitness = their mean return."""
    novelty: NoveltyConfig | None = None
    """Score by novelty (of ``info["behavior"]``, else the final observation) instead of fitness."""
    ga: GAConfig = field(default_factory=GAConfig)
    neat: Any = None
    """A ``neat.NEATConfig`` (its defaults when None)."""
    target_return: float | None = None
    """Stop once the champion's greedy mean return over ``solve_episodes`` fresh episodes reaches this."""
    solve_episodes: int = 20
    solve_seed: int = 10_000
    max_envs: int = 1024
    """Most environments made from a factory (one per running episode)."""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.neat is not None:
            d["neat"] = asdict(self.neat)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EvolutionConfig:

        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"evolution config: unknown key {unknown[0]!r}")
        kw = dict(d)
        kw["ga"] = GAConfig(**kw.get("ga") or {})
        kw["novelty"] = NoveltyConfig(**kw["novelty"]) if kw.get("novelty") else None
        kw["neat"] = NEATConfig(**kw["neat"]) if kw.get("neat") else None
        return cls(**kw)


EnvSource = Callable[[], Env] | Sequence[Env] | Env


def rng_state(rng: np.random.Generator) -> dict[str, Any]:
    return dict(rng.bit_generator.state)


def rng_from_state(state: Mapping[str, Any]) -> np.random.Generator:
    if state.get("bit_generator") != "PCG64":
        raise ValueError(f"checkpoint RNG {state.get('bit_generator')!r} is not PCG64")
    rng = np.random.default_rng()
    rng.bit_generator.state = dict(state)
    return rng


class EvolutionJob:
    """An evolution run as a ``TrainingJob``, advanced in time-boxed slices.

    ``steps`` counts finished generations and ``total_steps`` is ``config.generations`` (the env steps run
    are ``env_steps``). A generation may span slices: ``advance`` stops between two environment steps when
    ``max_seconds`` is up and the next call goes on from there; ``max_steps`` counts whole generations. The
    greedy check of a candidate champion (``target_return``) runs whole, at the end of its generation.
    Checkpoints hold the state at the start of the running generation (episode seeds come from
    ``(seed, generation)``, so a resumed run repeats it exactly).

    Args:
        env: a factory ``() -> Env`` (the job makes one env per running episode, up to ``max_envs``), a list
            of envs (episodes run on them in turn) or one env. Gymnasium API; Box or Discrete actions.
        config: ``EvolutionConfig``.
        seed: fixes the whole run.
        behavior: ``(final_obs, final_info) -> vector`` for novelty (default ``default_behavior``).
        meta: copied into the champion model's meta.
    """

    def __init__(self, env: EnvSource, config: EvolutionConfig | None = None, seed: int = 0,
                 behavior: Callable[[Any, Mapping[str, Any]], np.ndarray] = default_behavior) -> None:
        self.config = config = config or EvolutionConfig()
        if config.generations < 1 or config.episodes < 1:
            raise ValueError("generations and episodes must be at least 1")
        self.seed = int(seed)
        self.behavior = behavior
        self._set_env(env)
        probe = self.envs[0]  # (a vector of copies: one copy's spaces)
        self.observation_space = getattr(probe, "single_observation_space", probe.observation_space)
        self.action_space = getattr(probe, "single_action_space", probe.action_space)
        self._act = action_function(self.action_space)
        self.input_size = int(np.prod(self.observation_space.shape))
        self.output_size = self.action_space.n if isinstance(self.action_space, Discrete) \
            else int(np.prod(self.action_space.shape))
        self.rng = np.random.default_rng(self.seed)
        self.method: Method = self._make_method()
        self.archive = NoveltyArchive(config.novelty) if config.novelty is not None else None
        self.done = False
        self._interrupted = False
        self.steps = 0
        self.total_steps = config.generations
        self.env_steps = 0
        self.solved = False
        self.champion: Any = None
        self.champion_fitness = -math.inf
        self.champion_generation = -1
        self.champion_eval: float | None = None
        self.history: dict[str, Any] = {"generation": [], "best": [], "mean": [], "novelty": [],
                                        "champion": [], "env_steps": [], "evals": [], "seconds": []}
        self._eval: Evaluation | None = None
        self._solve_eval: Evaluation | None = None
        self._candidate: tuple[Any, float] = (None, -math.inf)
        self._pending_scores: np.ndarray | None = None  # the generation's scores, told after its champion check
        self._wall = 0.0

    # -- set-up --------------------------------------------------------------------------------------------

    def _set_env(self, env: EnvSource) -> None:
        if isinstance(env, Env) or callable(getattr(env, "restart", None)):  # an env, or a vector of copies
            self.envs: list[Env] = [env]  # type: ignore[list-item]
            self._factory: Callable[[], Env] | None = None
        elif callable(env):
            self._factory = env
            self.envs = [env()]
        else:
            self.envs = list(env)
            self._factory = None
            if not self.envs:
                raise ValueError("EvolutionJob: the list of environments is empty")

    def _pool(self, n: int) -> list[Env]:
        """``n`` environments when a factory can make them, else the ones given (just the first when it steps
        a batch itself: see ``Evaluation``)."""
        batch = getattr(self.envs[0], "batch", None)
        if isinstance(self.action_space, Discrete) and callable(batch) and batch(1) is not None:
            return self.envs[:1]
        if callable(getattr(self.envs[0], "restart", None)):  # a vector of copies: its copies are the pool
            return self.envs[:1]
        if self._factory is not None:
            while len(self.envs) < min(n, self.config.max_envs):
                self.envs.append(self._factory())
        return self.envs[:max(1, min(n, len(self.envs)))]

    def _make_method(self) -> Method:
        c = self.config
        if c.method == "ga":
            hidden = [tuple(h) if isinstance(h, list) else h for h in c.ga.hidden]
            net = PopulationMLP(self.input_size, hidden, self.output_size, output_activation_for(self.action_space))
            return GA(net, c.ga, self.rng)
        if c.method == "neat":

            return NEAT(self.input_size, self.output_size, c.neat or NEATConfig(), self.rng,
                        output_activation=output_activation_for(self.action_space))
        raise ValueError(f"unknown evolution method {c.method!r}; choose ga or neat")

    # -- TrainingJob -----------------------------------------------------------------------------------------

    def _episode_seeds(self) -> list[int]:
        gen_rng = np.random.default_rng([self.seed, self.steps])
        return [int(s) for s in gen_rng.integers(0, 2**31 - 1, size=self.config.episodes)]

    def advance(self, max_steps: int | None = None, max_seconds: float | None = None) -> int:
        """Run up to ``max_steps`` more generations (default: to the end) or until ``max_seconds`` pass;
        returns the generations finished in this call."""
        t0 = time.perf_counter()
        deadline = None if max_seconds is None else t0 + max_seconds
        finished = 0
        try:
            while not self.done and (max_steps is None or finished < max_steps):
                if not self._step_generation(deadline):
                    break
                finished += 1
                if deadline is not None and time.perf_counter() >= deadline:
                    break
        finally:
            self._wall += time.perf_counter() - t0
        return finished

    def _step_generation(self, deadline: float | None) -> bool:
        """Advance the running generation; True when it finished."""
        if self._solve_eval is not None:  # the previous generation's champion check is still running
            return self._finish_solve_check(deadline)
        if self._eval is None:
            n = len(self.method)
            seeds = self._episode_seeds()
            target = self.config.target_return
            self._eval = Evaluation(self.method.policy(), n, seeds, self._pool(n * len(seeds)), self._act,
                                    self.behavior, check_seeds=self._check_seeds() if target is not None else (),
                                    check_target=target)
        ev = self._eval
        steps_before = ev.env_steps
        finished = ev.run(deadline)
        self.env_steps += ev.env_steps - steps_before
        if not finished:
            return False
        self._eval = None
        fitness = ev.fitness()
        novelty = None
        scores = fitness
        if self.archive is not None:
            scores, novelty = self.archive.score(ev.mean_behaviors(), fitness, self.rng)
        best = int(np.argmax(fitness))
        candidate = self.method.genome(best)
        target = self.config.target_return
        if fitness[best] > self.champion_fitness and (target is None or self.champion_eval is None):
            self._set_champion(candidate, float(fitness[best]), None)
        h = self.history
        h["generation"].append(self.steps + 1)
        h["best"].append(float(fitness[best]))
        h["mean"].append(float(fitness.mean()))
        h["novelty"].append(None if novelty is None else float(novelty.mean()))
        h["champion"].append(self.champion_fitness)
        h["env_steps"].append(self.env_steps)
        h["seconds"].append(self._wall)
        if target is not None and fitness[best] >= target and not self._same_genome(candidate, self.champion,
                                                                                     checked=True):
            # the check first, then breeding only if the run goes on (the check draws nothing from the RNG,
            # so the next generation is the same either way; a solved run does not breed one it won't use)
            self._candidate = (candidate, float(fitness[best]))
            self._pending_scores = scores
            greedy = self._check_alongside(ev, best, candidate)
            if greedy is not None:
                return self._end_check(greedy)
            self._solve_eval = self._champion_evaluation(candidate)
            return self._finish_solve_check(None)  # to the end: a checkpoint never falls inside it
        self.method.tell(scores)
        return self._end_generation()

    def _set_champion(self, genome: Any, fitness: float, greedy: float | None) -> None:
        self.champion, self.champion_fitness, self.champion_eval = genome, fitness, greedy
        self.champion_generation = self.steps

    def _same_genome(self, a: Any, b: Any, checked: bool) -> bool:
        """Whether ``a`` is ``b`` (the champion) and, with ``checked``, ``b`` was already given its greedy check."""
        if b is None or (checked and self.champion_eval is None):
            return False
        return bool(self.method.genome_to_data(a) == self.method.genome_to_data(b))

    def _check_seeds(self) -> list[int]:
        c = self.config
        return [c.solve_seed + i for i in range(c.solve_episodes)]

    def _champion_evaluation(self, genome: Any) -> Evaluation:
        """The greedy check of a candidate champion: ``solve_episodes`` fixed episodes, not used for training."""
        network = self.method.genome_network(genome)
        seeds = self._check_seeds()
        return Evaluation(lambda idx, obs: network.forward(obs), 1, seeds, self._pool(len(seeds)), self._act,
                          self.behavior)

    def _check_alongside(self, ev: Evaluation, best: int, genome: Any) -> float | None:
        """The candidate's greedy mean from the check its generation played alongside (``Evaluation``), when it
        played it whole and the exported network (``genome_network``, what ``to_model`` saves) chooses every one
        of its actions there: then that network, playing the check itself, would see the same observations
        and score the same. None otherwise (the check then runs on its own, as ``_champion_evaluation``)."""
        got = ev.check_result(best)
        act = getattr(self._act, "array", None)
        if got is None or act is None:
            return None
        returns, steps, obs, actions = got
        if not np.array_equal(act(self.method.genome_network(genome).forward(obs)), actions):
            return None
        self.env_steps += int(steps.sum())
        return float(returns.reshape(1, -1).mean(axis=1)[0])  # (as Evaluation.fitness averages the check)

    def _finish_solve_check(self, deadline: float | None) -> bool:
        ev = self._solve_eval
        assert ev is not None
        before = ev.env_steps
        finished = ev.run(deadline)
        self.env_steps += ev.env_steps - before
        if not finished:
            return False
        self._solve_eval = None
        return self._end_check(float(ev.fitness()[0]))

    def _end_check(self, greedy: float) -> bool:
        """The candidate's check scored ``greedy``: a new champion, solved, or the next generation bred."""
        genome, fitness = self._candidate
        if self.champion_eval is None or greedy > self.champion_eval:  # a checked champion beats an unchecked one
            self._set_champion(genome, fitness, greedy)
        self.history["evals"].append((self.steps + 1, greedy))
        if self.config.target_return is not None and greedy >= self.config.target_return:
            self.solved = True
            self.done = True
        elif self._pending_scores is not None:
            self.method.tell(self._pending_scores)
        self._pending_scores = None
        return self._end_generation()

    def _end_generation(self) -> bool:
        self.steps += 1
        if self.steps >= self.total_steps:
            self.done = True
        return True

    def resume(self, env: EnvSource | None = None) -> None:
        """Go on after a stop (a closed scene, a loaded checkpoint): new environments if given; a
        generation cut short restarts from its beginning (same seeds, so the same result)."""
        if env is not None:
            self._set_env(env)
        if self._eval is not None or self._solve_eval is not None:
            self.env_steps -= self._in_flight_steps()  # counted again when the generation reruns
            self._eval = None
            if self._solve_eval is not None:
                self._solve_eval = self._champion_evaluation(self._candidate[0])
        self.done = self.steps >= self.total_steps or self.solved

    def _in_flight_steps(self) -> int:
        return sum(ev.env_steps for ev in (self._eval, self._solve_eval) if ev is not None)

    def stop(self, evaluate: bool = True, interrupted: bool = False) -> None:
        """End the run now (Ctrl-C, Stop): the champion so far is the result."""
        self.done = True
        self._interrupted = self._interrupted or interrupted

    @property
    def interrupted(self) -> bool:
        return self._interrupted

    def finish(self) -> None:
        """Nothing left to measure: each generation scored its champion as it ended."""

    def summary(self, wall_seconds: float) -> list[str]:
        """Generations, environment steps and time, then the run's figures (``status``)."""
        return [f"evolved {self.steps} generations ({self.env_steps} environment steps) in {wall_seconds:.1f} s",
                *(f"{k}: {v}" for k, v in self.status().items())]

    def save_report(self, path: Any, title: str, wall_seconds: float = 0.0) -> Path:
        """Best / mean / champion fitness (and novelty) by generation, and the summary."""
        return save_evolution_report(path, self.history, title, self.summary(wall_seconds))

    def status(self) -> dict[str, str]:
        h = self.history
        out = {"generation": f"{self.steps} / {self.total_steps}"}
        if h["best"]:
            out["best"] = f"{h['best'][-1]:.4g}"
            out["mean"] = f"{h['mean'][-1]:.4g}"
            out["champion"] = f"{self.champion_fitness:.4g} (gen {self.champion_generation + 1})"
        if h["novelty"] and h["novelty"][-1] is not None:
            out["novelty"] = f"{h['novelty'][-1]:.3g}"
            assert self.archive is not None
            out["archive"] = str(len(self.archive.items))
        out.update(self.method.status())
        if self.champion_eval is not None:
            out["greedy"] = f"{self.champion_eval:.4g} over {self.config.solve_episodes} episodes"
        return out

    def champion_network(self) -> Any:
        if self.champion is None:
            raise RuntimeError("no champion yet: advance at least one generation")
        return self.method.genome_network(self.champion)

    def champion_policy(self) -> Callable[[Any], Any]:
        """The champion's greedy action for one observation (what Play runs)."""
        network = self.champion_network()
        return lambda obs: self._act(network.forward(np.asarray(obs, np.float32).reshape(1, -1)))[0]

    def to_model(self, meta: dict[str, Any] | None = None) -> Model:
        """The champion (best fitness so far) as a model file's ``Model`` (kind ``mlp``)."""
        m = {"agent": f"evolution-{self.config.method}" + ("-novelty" if self.archive else ""),
             "training_steps": self.steps, "generations": self.steps, "env_steps": self.env_steps,
             "seed": self.seed, "champion_fitness": self.champion_fitness, **dict(meta or {})}
        extra: dict[str, Any] = {}
        if isinstance(self.action_space, Box):
            extra["action_transform"] = "tanh outputs scaled linearly from [-1, 1] onto the action box"
        return Model(self.champion_network(), self.observation_space, self.action_space, kind="mlp", meta=m,
                     extra=extra)

    # -- checkpoints -----------------------------------------------------------------------------------------

    def checkpoint(self, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The run as plain JSON data (no pickle): config, generation, RNG, population, archive, history;
        ``settings``: what the caller wants back on resume (the CLI: target, tree, out)."""
        if self._solve_eval is not None:
            raise RuntimeError("checkpoint between generations (the champion check is running)")
        return {
            "format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "kind": "evolution",
            "settings": dict(settings or {}), "seed": self.seed,
            "config": self.config.to_dict(), "generation": self.steps,
            "env_steps": self.env_steps - self._in_flight_steps(),
            "rng": rng_state(self.rng), "method": self.method.state(),
            "archive": None if self.archive is None else self.archive.state(),
            "champion": None if self.champion is None else self.method.genome_to_data(self.champion),
            "champion_fitness": self.champion_fitness if self.champion is not None else None,
            "champion_generation": self.champion_generation, "champion_eval": self.champion_eval,
            "solved": self.solved, "history": self.history,
        }

    def save_checkpoint(self, path: str | os.PathLike[str], settings: Mapping[str, Any] | None = None,
                        **_: Any) -> Path:
        """``checkpoint(settings)`` as a JSON file (written whole or not at all). Other keyword arguments
        (a DQN run's ``max_buffer_bytes``) do not apply and are ignored."""
        text = json.dumps(self.checkpoint(settings), allow_nan=False, separators=(",", ":"))
        return atomic_write(path, (text + "\n").encode("utf-8"))

    def continue_from(self, checkpoint: Any) -> list[tuple[str, Any, Any]]:
        """Load a checkpoint (an ``EvolutionCheckpoint``, its data, or a path) into this freshly built job,
        whose configuration may differ only in ``generations``; returns the changes as ``(setting, old,
        new)``. A bad checkpoint raises ``ValueError`` (build the job afresh before using it again)."""
        if isinstance(checkpoint, (str, os.PathLike)):
            checkpoint = read_evolution_checkpoint(checkpoint)
        data = checkpoint.data if isinstance(checkpoint, EvolutionCheckpoint) else checkpoint
        check_evolution_checkpoint(data)
        try:
            saved = json.loads(json.dumps(EvolutionConfig.from_dict(data["config"]).to_dict()))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"broken evolution checkpoint: {exc}") from None
        now = json.loads(json.dumps(self.config.to_dict()))  # as JSON has it: tuples become lists
        differ = sorted(k for k in now if k != "generations" and now[k] != saved.get(k))
        if differ:
            raise ValueError(f"the checkpoint was evolved with other settings ({', '.join(differ)}): "
                             "a population continues only with the settings it was made with")
        if int(data.get("seed", -1)) != self.seed:
            raise ValueError(f"the checkpoint's seed is {data.get('seed')}, this run's {self.seed}")
        total = self.total_steps
        try:
            self._load(data)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"broken evolution checkpoint: {what}") from None
        old = int(saved["generations"])
        self.done = self.steps >= self.total_steps or self.solved
        return [("generations", old, total)] if old != total else []

    @classmethod
    def from_checkpoint(cls, data: Mapping[str, Any], env: EnvSource,
                        behavior: Callable[[Any, Mapping[str, Any]], np.ndarray] = default_behavior) -> EvolutionJob:
        check_evolution_checkpoint(data)
        try:
            job = cls(env, EvolutionConfig.from_dict(data["config"]), seed=int(data["seed"]), behavior=behavior)
            job._load(data)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"broken evolution checkpoint: {what}") from None
        return job

    def _load(self, data: Mapping[str, Any]) -> None:
        self.rng = rng_from_state(data["rng"])
        self.method.rng = self.rng  # type: ignore[attr-defined]
        self.method.load_state(data["method"])
        if self.archive is not None:
            self.archive.load_state(data["archive"])
        self.steps, self.env_steps = int(data["generation"]), int(data["env_steps"])
        if data["champion"] is not None:
            self.champion = self.method.genome_from_data(data["champion"])
            self.champion_fitness = float(data["champion_fitness"])
        self.champion_generation = int(data["champion_generation"])
        self.champion_eval = None if data["champion_eval"] is None else float(data["champion_eval"])
        self.solved = bool(data["solved"])
        h = data["history"]
        self.history = {k: list(h[k]) for k in self.history}
        self.history["evals"] = [tuple(e) for e in self.history["evals"]]
        self.resume()

    @classmethod
    def load_checkpoint(cls, path: str | os.PathLike[str], env: EnvSource,
                        behavior: Callable[[Any, Mapping[str, Any]], np.ndarray] = default_behavior) -> EvolutionJob:
        return cls.from_checkpoint(json.loads(Path(path).read_text(encoding="utf-8")), env, behavior)


def check_evolution_checkpoint(data: Any) -> None:
    """Raise ``ValueError`` unless ``data`` is an evolution checkpoint this version reads."""
    if not isinstance(data, Mapping) or data.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"not a DRLA evolution checkpoint (format must be {CHECKPOINT_FORMAT!r})")
    if data.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"unsupported evolution checkpoint version {data.get('version')!r}: "
                         f"this DRLA reads version {CHECKPOINT_VERSION}")


@dataclass
class EvolutionCheckpoint:
    """An evolution checkpoint read back, with the surface ``--resume`` and the panel's Resume read of a DQN
    ``checkpoint.Checkpoint``: ``meta`` (``kind`` and ``run``: seed, steps, total_steps), ``settings``, ``steps``;
    ``config`` is None (no DQN configuration)."""

    path: Path
    data: dict[str, Any]
    config: None = None

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.data.get("settings") or {})

    @property
    def steps(self) -> int:
        return int(self.data["generation"])

    @property
    def meta(self) -> dict[str, Any]:
        d = self.data
        if d.get("format") == COEVOLUTION_CHECKPOINT_FORMAT:  # each side's config holds the generations
            total = int(next(iter(d["sides"].values()))["config"]["generations"])
            kind = "coevolution"
        else:
            total, kind = int(d["config"]["generations"]), d.get("kind", "evolution")
        return {"kind": kind, "run": {
            "seed": int(d["seed"]), "steps": int(d["generation"]), "total_steps": total,
            "checkpoint_interval": int(self.settings.get("checkpoint_interval", 0))}}


#: A co-evolution's checkpoint (``drla_core.coevolution``, which imports this module): the same reader serves both.
COEVOLUTION_CHECKPOINT_FORMAT = "drla-coevolution"


def read_evolution_checkpoint(path: str | os.PathLike[str]) -> EvolutionCheckpoint:
    """Read and check an evolution checkpoint file (one population, or a co-evolution's two); ``ValueError``
    names what is wrong."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read {p}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{p} is not a JSON evolution checkpoint: {exc}") from None
    if not (isinstance(data, dict) and data.get("format") == COEVOLUTION_CHECKPOINT_FORMAT):
        check_evolution_checkpoint(data)
    ckpt = EvolutionCheckpoint(p, data)
    try:
        if ckpt.meta["run"]["total_steps"] < 1:
            raise ValueError("generations must be at least 1")
    except (KeyError, TypeError, ValueError) as exc:
        what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ValueError(f"broken evolution checkpoint {p}: {what}") from None
    return ckpt


# ---- the report ---------------------------------------------------------------------------------------------


def evolution_panels(history: Mapping[str, Any]) -> list[Any]:
    """Best / mean fitness and novelty per generation as ``plot.Panel`` objects."""

    gens = np.asarray(history.get("generation") or [], dtype=np.float64)
    fit = Panel("Fitness per generation", x_label="generation")
    if gens.size:
        fit.series = [Series(gens, np.asarray(history["mean"], np.float64), BLUE, "mean"),
                      Series(gens, np.asarray(history["best"], np.float64), ORANGE, "best"),
                      Series(gens, np.asarray(history["champion"], np.float64), GREEN, "champion", width=1)]
    panels = [fit]
    novelty = [v for v in history.get("novelty") or [] if v is not None]
    if novelty:
        xs = np.asarray([g for g, v in zip(history["generation"], history["novelty"]) if v is not None], np.float64)
        panels.append(Panel("Mean novelty", [Series(xs, np.asarray(novelty, np.float64), PURPLE, "novelty")],
                            x_label="generation"))
    return panels


def save_evolution_report(path: str | os.PathLike[str], history: Mapping[str, Any], title: str = "DRLA evolution",
                          summary: Sequence[str] = (), width: int = 1200) -> Path:
    """The evolution curves (and a summary text panel) as a PNG."""

    panels = evolution_panels(history)
    panels.append(Panel("Summary", text_lines=list(summary) or ["no data yet"]))
    return write_png(path, render_panels(panels, title, width))
