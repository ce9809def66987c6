"""NEAT C++'s reproduction (Stanley's NEAT 1.2.1: ``Population::epoch``, ``Species::adjust_fitness``,
``Species::count_offspring``, ``Species::reproduce``, ``Genome::mutate_link_weights``), for
``NEATConfig(reproduction="neat-c++")`` (``NEATConfig.paper()``'s choice).

Its rules, as ported here (``neat.NEAT.tell`` calls ``tell_cpp``):

* fitness sharing: each genome's fitness over its species' size; a species that has not improved for
  ``max_stagnation - 1`` generations (NEAT C++'s ``dropoff_age`` test) keeps 1 % of its fitness instead of
  being removed, and every 30 generations the worst species at least 20 generations old is obliterated the
  same way (the best one when none is that old: NEAT C++'s loop);
* offspring: each genome's share of the population's mean adjusted fitness, floored, the fractions carried
  ("skim") from genome to genome and species to species; a shortfall goes to the species expecting most;
* when the population's best has not improved for ``max_stagnation + 5`` generations, only the two best
  species breed (half the population each, from their champions: delta coding);
* only the best ``floor(survival_threshold * size) + 1`` of a species breed; a species with more than 5
  offspring keeps its champion unchanged;
* each other child: with ``mutate_only_prob`` a mutated copy of a random parent, else a cross of two random
  parents (with ``interspecies_mate_rate`` the father is another species' champion): multipoint (matching
  genes from either parent) with ``mate_multipoint_prob``, else averaged (matching genes' weights averaged);
  a cross is mutated too unless (``mate_only_prob``) its parents differ;
* a mutation is one of: a new node (``add_node_prob``), else a new connection (``add_connection_prob``),
  else weights (``weight_mutate_rate``) and a toggled connection (``enable_mutate_rate``);
* weights (connection weights and node biases, the C++ bias links) move by a uniform draw in
  ``+-weight_mutate_power`` (times ``weight_scale``, as ``weight_max``): every gene, or in a "severe" mutation
  (half of them) 70 % moved, 20 % replaced by the draw; in genomes of 10 genes or more the last 20 % of the
  genes 50 % moved, 20 % replaced; capped at ``+-weight_max``.

Speciation stays ``neat_species.speciate``'s (each genome to the closest species under the threshold).
"""

from __future__ import annotations

import math
import random
from typing import Any, Protocol

import numpy as np

from .neat_genome import Genome, InnovationTracker, crossover, paper_distance


class NEAT(Protocol):
    """What these rules use of ``neat.NEAT`` (a Protocol: ``neat`` imports this module)."""

    config: Any  # neat.NEATConfig
    rng: np.random.Generator
    tracker: InnovationTracker
    generation: int
    genomes: list[Genome]
    species: list[dict[str, Any]]
    breed_state: dict[str, Any]

    def _add_node(self, g: Genome) -> None: ...

    def _add_connection(self, g: Genome) -> bool: ...

    def _speciate(self) -> None: ...

__all__ = ["tell_cpp", "crossover_multipoint", "crossover_average", "mutate_weights_cpp", "BreedRandom"]


class BreedRandom:
    """One generation's scalar draws (``random``, ``integers(n)``, ``uniform``, ``normal``) from Python's Mersenne
    Twister, seeded by one draw of the population's numpy generator: a numpy scalar draw costs about 0.5 us, and
    breeding an XOR generation makes thousands of them (a fifth of its time). Between generations the population's
    state is still only its numpy generator, so checkpoints and resume are unchanged."""

    __slots__ = ("random", "_gauss")

    def __init__(self, seed: int) -> None:
        r = random.Random(seed)
        self.random, self._gauss = r.random, r.gauss

    def integers(self, n: int) -> int:
        """A whole number in [0, n)."""
        return int(self.random() * n)

    def uniform(self, low: float = 0.0, high: float = 1.0) -> float:
        return low + (high - low) * self.random()  # (random.uniform's formula, one call fewer)

    def normal(self, loc: float = 0.0, scale: float = 1.0) -> float:
        return self._gauss(loc, scale)


def crossover_multipoint(fit: Genome, other: Genome, rng: np.random.Generator) -> Genome:
    """NEAT C++'s ``mate_multipoint``: ``neat_genome.crossover``'s rule, genes visited in key order (so a genome
    read back from its data breeds the same)."""
    return crossover(Genome({k: fit.nodes[k] for k in sorted(fit.nodes)}, {k: fit.conns[k] for k in sorted(fit.conns)}),
                     other, rng)


def crossover_average(fit: Genome, other: Genome, rng: np.random.Generator) -> Genome:
    """NEAT C++'s ``mate_multipoint_avg``: matching genes' weights (and biases) averaged, disjoint and excess
    genes from ``fit``; a gene disabled in either parent stays disabled 75 % of the time."""
    nodes = {}
    for k in sorted(fit.nodes):
        g, o = fit.nodes[k], other.nodes.get(k)
        nodes[k] = list(g) if o is None else [(g[0] + o[0]) / 2.0, g[1]]
    conns = {}
    for k in sorted(fit.conns):
        g, o = fit.conns[k], other.conns.get(k)
        if o is None:
            conns[k] = list(g)
            continue
        enabled = True
        if (not g[3] or not o[3]) and rng.random() < 0.75:
            enabled = False
        conns[k] = [g[0], g[1], (g[2] + o[2]) / 2.0, enabled]
    return Genome(nodes, conns)


def mutate_weights_cpp(g: Genome, power: float, cap: float, rng: np.random.Generator) -> None:
    """``Genome::mutate_link_weights(power, 1.0, GAUSSIAN)`` over the connection genes (innovation order),
    then the node biases (id order). Each gene draws its odds then its move (``uniform(-power, power)``, written
    out: numpy's and Python's formula, ``low + (high - low) * random()``)."""
    conns = [g.conns[k] for k in sorted(g.conns)]
    nodes = [g.nodes[k] for k in sorted(g.nodes)]
    n = len(conns) + len(nodes)
    if not n:
        return
    draw = rng.random
    severe = draw() > 0.5
    tail = 0.8 * n if n >= 10 and not severe else math.inf  # genes past this index: the tail's odds
    lo, span = -cap, power + power
    low = -power
    i = 0
    for genes, j in ((conns, 2), (nodes, 0)):  # (plain floats: a few genes, cheaper than numpy calls)
        for gene in genes:
            r, d = draw(), low + span * draw()
            if severe:
                w = gene[j] + d if r > 0.3 else d if r > 0.1 else gene[j]
            elif i > tail:
                w = gene[j] + d if r > 0.5 else d if r > 0.3 else gene[j]
            else:
                w = gene[j] + d
            gene[j] = w if lo <= w <= cap else (lo if w < lo else cap)
            i += 1


def _mutate_cpp(neat: NEAT, g: Genome) -> None:
    """One of: a new node, a new connection, or weights and a toggle (``Species::reproduce``'s mutation)."""
    c, rng = neat.config, neat.rng
    if rng.random() < c.add_node_prob:
        neat._add_node(g)
    elif rng.random() < c.add_connection_prob:
        any(neat._add_connection(g) for _ in range(c.add_connection_tries))
    else:
        if rng.random() < c.weight_mutate_rate:
            mutate_weights_cpp(g, c.weight_mutate_power * c.weight_scale, c.weight_max * c.weight_scale, rng)
        if rng.random() < c.enable_mutate_rate and g.conns:
            keys = sorted(g.conns)
            gene = g.conns[keys[int(rng.integers(len(keys)))]]
            gene[3] = not gene[3]


def _born(sp: dict[str, Any]) -> int:
    return int(sp.get("born", sp["last_improved"]))


def _adjust(neat: NEAT, f: np.ndarray, ranked: list[int], best_of: list[float]) -> tuple[list[np.ndarray],
                                                                                           list[list[int]]]:
    """``Species::adjust_fitness`` for every species: (adjusted fitness, members) best first; records improvement."""
    c, species = neat.config, neat.species
    gen = neat.generation + 1  # NEAT C++ numbers generations from 1
    obliterate = -1  # every 30 generations the worst species 20 generations old or more (else the best)
    if gen % 30 == 0:
        pos = len(ranked) - 1
        while pos > 0 and gen - _born(species[ranked[pos]]) + 1 < 20:
            pos -= 1
        obliterate = ranked[pos]
    adjusted, orders = [], []
    for s, sp in enumerate(species):
        members = sp["members"]
        stale = neat.generation - sp["last_improved"] + 1 >= c.max_stagnation
        a = f[members] * (0.01 if stale or s == obliterate else 1.0)
        a = np.where(a < 0.0, 0.0001, a) / len(members)
        order = sorted(range(len(members)), key=lambda i: (-a[i], members[i]))
        adjusted.append(a[order])
        orders.append([members[i] for i in order])
        if best_of[s] > sp["best"]:
            sp["best"], sp["last_improved"] = best_of[s], neat.generation
    return adjusted, orders


def _expected(adjusted: list[np.ndarray], total: int) -> list[int]:
    """Offspring per species: ``count_offspring``'s floors and skim, the shortfall to the species expecting most."""
    mean = float(np.concatenate(adjusted).sum()) / total
    expected = []
    skim = 0.0
    for a in adjusted:
        count = 0
        for e in (a / mean if mean > 0 else np.ones(len(a))).tolist():
            count += int(math.floor(e))
            skim += math.fmod(e, 1.0)
            if skim > 1.0:
                whole = math.floor(skim)
                count += int(whole)
                skim -= whole
        expected.append(count)
    if sum(expected) < total:
        top = max(s for s in range(len(expected)) if expected[s] == max(expected))  # (the last of equals)
        expected[top] += 1
        if sum(expected) < total:
            expected = [0] * len(expected)
            expected[top] = total
    return expected


def _delta_coding(neat: NEAT, ranked: list[int], best_now: float, expected: list[int]) -> list[int]:
    """The population's stagnation: past ``max_stagnation + 5`` generations without a new best, the two best
    species get half the population each, bred from their champions. Returns each species' champion children."""
    c, species, st = neat.config, neat.species, neat.breed_state
    super_champ = [0] * len(species)
    if best_now > st["highest"]:
        st["highest"], st["since"] = best_now, 0
    else:
        st["since"] += 1
    if st["since"] >= c.max_stagnation + 5:
        st["since"] = 0
        half = c.population_size // 2
        expected[:] = [0] * len(species)
        first = ranked[0]
        if len(ranked) > 1:
            second = ranked[1]
            super_champ[first], expected[first] = half, half
            super_champ[second], expected[second] = c.population_size - half, c.population_size - half
            species[first]["last_improved"] = species[second]["last_improved"] = neat.generation
        else:
            super_champ[first] += c.population_size - half
            expected[first] = c.population_size - half
    return super_champ


def _cross(neat: NEAT, f: np.ndarray, s: int, pool: list[int], ranked: list[int], champions: list[int]) -> Genome:
    """A cross of two parents of ``pool`` (or, rarely, with another species' champion), maybe mutated."""
    c, rng, genomes = neat.config, neat.rng, neat.genomes
    mom = pool[int(rng.integers(len(pool)))]
    if rng.random() > c.interspecies_mate_rate:
        dad = pool[int(rng.integers(len(pool)))]
    else:
        other, tries = s, 0
        while other == s and tries < 5:
            pick = int(math.floor(min(rng.normal() / 4.0, 1.0) * (len(ranked) - 1.0) + 0.5))
            other = ranked[min(max(pick, 0), len(ranked) - 1)]
            tries += 1
        dad = champions[other]
    a, b = genomes[mom], genomes[dad]
    if f[mom] > f[dad] or (f[mom] == f[dad] and len(a.conns) < len(b.conns)):
        fit, weak = a, b
    else:
        fit, weak = b, a
    child = crossover_multipoint(fit, weak, rng) if rng.random() < c.mate_multipoint_prob else \
        crossover_average(fit, weak, rng)
    if rng.random() > c.mate_only_prob or mom == dad or paper_distance(a, b, c) == 0.0:
        _mutate_cpp(neat, child)
    return child


def tell_cpp(neat: NEAT, fitness: np.ndarray) -> None:
    """Breed the next generation by NEAT C++'s rules (the module docstring); then speciate it."""
    c, rng, genomes = neat.config, neat.rng, neat.genomes
    f = np.asarray(fitness, dtype=np.float64)
    species = neat.species
    best_of = [float(f[sp["members"]].max()) for sp in species]
    ranked = sorted(range(len(species)), key=lambda s: -best_of[s])  # (stable: ties keep the species order)
    adjusted, orders = _adjust(neat, f, ranked, best_of)
    expected = _expected(adjusted, len(f))
    super_champ = _delta_coding(neat, ranked, best_of[ranked[0]], expected)
    pools = [order[:int(math.floor(c.survival_threshold * len(order) + 1.0))] for order in orders]
    champions = [pool[0] for pool in pools]
    neat.tracker.new_generation()
    children: list[Genome] = []
    for s, (pool, count) in enumerate(zip(pools, expected)):
        champ_done = False
        for _ in range(count):
            if super_champ[s] > 0:
                child = genomes[pool[0]].copy()
                if super_champ[s] > 1:
                    if rng.random() < 0.8 or c.add_connection_prob == 0.0:
                        mutate_weights_cpp(child, c.weight_mutate_power * c.weight_scale,
                                           c.weight_max * c.weight_scale, rng)
                    else:
                        any(neat._add_connection(child) for _ in range(c.add_connection_tries))
                super_champ[s] -= 1
            elif not champ_done and count > 5:
                child = genomes[pool[0]].copy()
                champ_done = True
            elif rng.random() < c.mutate_only_prob or len(pool) == 1:
                child = genomes[pool[int(rng.integers(len(pool)))]].copy()
                _mutate_cpp(neat, child)
            else:
                child = _cross(neat, f, s, pool, ranked, champions)
            children.append(child)
    neat.genomes = children
    neat.species = [sp for sp, count in zip(species, expected) if count]
    neat.generation += 1
    neat._speciate()
