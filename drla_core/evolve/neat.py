"""NEAT: NeuroEvolution of Augmenting Topologies (Stanley & Miikkulainen 2002), feed-forward by default.

Genomes carry node genes (bias, activation) and connection genes (source, target, weight, enabled)
keyed by innovation number. ``InnovationTracker`` numbers them consistently across a run: a connection
``(source, target)`` keeps one innovation number for the whole run, and splitting the same connection in one
generation gives the same new node and the same two innovation numbers. Crossover aligns genes by
innovation (matching genes from either parent, disjoint and excess from the fitter one); species by
compatibility distance (neat-python's form: disjoint genes and weight differences normalised by genome
size), explicit fitness sharing (a species' offspring share is the mean of its members' adjusted fitness),
stagnant species dropped.

Evaluation is batched: ``NEAT.policy()`` packs every genome into one padded dense tensor
``(genomes, nodes, nodes)`` and evaluates all of them (and all their environment copies) with one
batched product per network level. A genome exports as a ``graph_net.GraphNetwork``.

``NEATConfig(recurrent=True)``: new connections may close cycles, as in the paper; such genomes run one
activation per step (``neat_tasks.RecurrentPopulation``, ``graph_net.RecurrentGraphNetwork``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..nn.graph_net import GraphNetwork, RecurrentGraphNetwork
from ..nn.mlp import ACTIVATIONS, _activate
from .neat_breed import BreedRandom, tell_cpp
from .neat_genome import Genome, InnovationTracker, compatibility_distance, crossover, paper_distance, reaches
from .neat_species import speciate

__all__ = ["NEATConfig", "Genome", "InnovationTracker", "NEAT", "compatibility_distance", "crossover"]


#: NEAT C++'s sigmoid steepness over tanh's (tanh x = 2 sigmoid(2 x) - 1): 4.924273 / 2
STEEPNESS = 4.924273 / 2


@dataclass
class NEATConfig:
    """NEAT settings; the defaults are neat-python's usual ones, tuned a little for small control tasks."""

    population_size: int = 100
    activation: str = "tanh"
    """Activation of every hidden node (outputs: the job's choice, linear for discrete actions)."""
    initial_weight_sigma: float = 1.0
    weight_max: float = 30.0
    compatibility_threshold: float = 3.0
    disjoint_coefficient: float = 1.0
    weight_coefficient: float = 0.5
    add_connection_prob: float = 0.5
    add_node_prob: float = 0.2
    weight_mutate_rate: float = 0.8
    weight_perturb_sigma: float = 0.5
    weight_replace_rate: float = 0.1
    bias_mutate_rate: float = 0.7
    enable_mutate_rate: float = 0.01
    survival_threshold: float = 0.2
    """Fraction of each species (its best) that may breed."""
    elitism: int = 2
    """Best genomes of each species copied unchanged."""
    species_elitism: int = 2
    """The best species are never removed for stagnation."""
    max_stagnation: int = 15
    min_species_size: int = 2
    add_connection_tries: int = 1
    """Pairs drawn to find an unconnected one (NEAT C++: 20)."""
    recurrent: bool = False
    """Let new connections close cycles (recurrent networks, one activation per step; off: a DAG)."""
    compatibility: str = "neat-python"
    """neat-python's distance, or paper (``neat_genome.paper_distance``)."""
    reproduction: str = "neat-python"
    """neat-python's breeding, or neat-c++ (Stanley's NEAT C++ rules, ``neat_breed``; these options below)."""
    mutate_only_prob: float = 0.25
    """neat-c++: children that are a mutated copy of one parent (the others are crosses)."""
    mate_only_prob: float = 0.2
    """neat-c++: crosses left unmutated."""
    interspecies_mate_rate: float = 0.001
    """neat-c++: crosses whose father is another species' champion."""
    mate_multipoint_prob: float = 0.6
    """neat-c++: crosses taking matching genes from either parent (the others average them)."""
    weight_mutate_power: float = 2.5
    """neat-c++: weights move by a uniform draw in +- this (times ``weight_scale``)."""
    weight_scale: float = 1.0
    """DRLA's weight per unit of NEAT C++'s (its sigmoid is steeper than tanh: ``STEEPNESS``): neat-c++'s
    power and ``weight_max`` are multiplied by it, the paper distance's weight term divided by it."""

    @classmethod
    def paper(cls, **changes: Any) -> NEATConfig:
        """The paper's section 4 bred by NEAT C++'s rules (``neat_breed``, its ``pole2_markov.ne``): 150 genomes;
        c1 = c2 = 1, c3 = 0.4, threshold 3; 25 % of children mutation only, interspecies mating 0.001, crosses
        60 % multipoint, 40 % averaged; weights mutated 80 % (power 2.5, capped at 8, c3 applied: NEAT C++'s
        units, ``weight_scale``); node 3 %, link 5 % (20 tries); best 20 % breed, champion kept in species of more
        than 5; stagnation 15.
        ``reproduction="neat-python"`` breeds it as before (neat-python's rules with the paper's rates)."""
        base: dict[str, Any] = dict(population_size=150, compatibility="paper", weight_coefficient=0.4,
                                    add_node_prob=0.03, add_connection_prob=0.05, add_connection_tries=20,
                                    elitism=1)
        if changes.get("reproduction", "neat-c++") == "neat-c++":
            base.update(reproduction="neat-c++", weight_mutate_rate=0.8, weight_replace_rate=0.0,
                        weight_mutate_power=2.5, weight_max=8.0, enable_mutate_rate=0.0, weight_scale=STEEPNESS)
        else:
            base.update(weight_mutate_rate=0.72, weight_replace_rate=0.08, bias_mutate_rate=0.72)
        return cls(**{**base, **changes})

    def check(self) -> None:
        if self.population_size < 2:
            raise ValueError("NEAT population_size must be at least 2")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {self.activation!r}; choose from {ACTIVATIONS}")
        if self.compatibility_threshold <= 0:
            raise ValueError("compatibility_threshold must be positive")
        if self.compatibility not in ("neat-python", "paper"):
            raise ValueError(f"unknown compatibility {self.compatibility!r}; choose neat-python or paper")
        if self.reproduction not in ("neat-python", "neat-c++"):
            raise ValueError(f"unknown reproduction {self.reproduction!r}; choose neat-python or neat-c++")


def _depth(p: int, n: int, n_in: int, conn_g: list[int], conn_s: list[int], conn_t: list[int]) -> int:
    """The deepest node level of ``p`` acyclic genomes (``graph_net.graph_levels``'s levels: inputs 0, others 1 +
    their deepest source's), all at once: levels relaxed along the enabled connections until none changes."""
    adj = np.zeros((p, n, n), dtype=bool)
    adj[conn_g, conn_s, conn_t] = True
    level = np.ones((p, n), dtype=np.int64)
    level[:, :n_in] = 0
    for _ in range(n + 1):  # (a DAG settles within its node count)
        new = np.maximum(level, np.where(adj, level[:, :, None] + 1, 0).max(axis=1))
        if np.array_equal(new, level):
            break
        level = new
    return max(1, int(level.max()))


class NEAT:
    """A NEAT population: ``policy()`` to evaluate it batched, ``tell(fitness)`` to breed the next one."""

    def __init__(self, n_inputs: int, n_outputs: int, config: NEATConfig, rng: np.random.Generator,
                 output_activation: str = "linear") -> None:
        config.check()
        self.n_in, self.n_out, self.config, self.rng = int(n_inputs), int(n_outputs), config, rng
        self.output_activation = output_activation
        self.tracker = InnovationTracker(self.n_in + self.n_out)
        self.generation = 0
        self.genomes = [self._initial_genome() for _ in range(config.population_size)]
        # each species: {"id", "representative": Genome, "members": [genome index], "best", "last_improved"}
        self.species: list[dict[str, Any]] = []
        self.next_species_id = 0
        self.breed_state: dict[str, Any] = {"highest": -math.inf, "since": 0}  # neat-c++: the population's stagnation
        self._speciate()

    def __len__(self) -> int:
        return len(self.genomes)

    # -- genomes -------------------------------------------------------------------------------------------

    def _initial_genome(self) -> Genome:
        """Every input connected to every output, weights N(0, initial_weight_sigma), biases 0 (neat-c++: weights
        and biases uniform in +-weight_scale, NEAT C++'s ``Population`` start: ``mutate_link_weights(1, 1,
        COLDGAUSSIAN)`` on the start genome, its bias links included)."""
        c, rng = self.config, self.rng
        nodes = {self.n_in + j: [0.0, self.output_activation] for j in range(self.n_out)}
        conns = {}
        if c.reproduction == "neat-c++":
            drawn = rng.uniform(-c.weight_scale, c.weight_scale, size=self.n_in * self.n_out + self.n_out).tolist()
            for j in range(self.n_out):
                nodes[self.n_in + j][0] = drawn[self.n_in * self.n_out + j]
        else:
            drawn = rng.normal(0.0, c.initial_weight_sigma, size=self.n_in * self.n_out).tolist()
        weights = iter(drawn)  # (the same draws as one call each, in this order)
        for s in range(self.n_in):
            for j in range(self.n_out):
                t = self.n_in + j
                conns[self.tracker.connection(s, t)] = [s, t, next(weights), True]
        return Genome(nodes, conns)

    def _mutate(self, g: Genome) -> None:
        c, rng = self.config, self.rng
        if rng.random() < c.add_node_prob:
            self._add_node(g)
        if rng.random() < c.add_connection_prob:
            any(self._add_connection(g) for _ in range(c.add_connection_tries))
        random, normal = rng.random, rng.normal
        replace, perturb, enable = c.weight_replace_rate, c.weight_replace_rate + c.weight_mutate_rate, \
            c.enable_mutate_rate
        sigma0, sigma, hi = c.initial_weight_sigma, c.weight_perturb_sigma, c.weight_max
        lo = -hi
        for gene in g.conns.values():  # (min/max, not np.clip: the same clamp without a numpy call per gene)
            r = random()
            if r < replace:
                gene[2] = float(normal(0.0, sigma0))
            elif r < perturb:
                gene[2] = float(min(max(gene[2] + normal(0.0, sigma), lo), hi))
            if random() < enable:
                gene[3] = not gene[3]
        perturb = c.weight_replace_rate + c.bias_mutate_rate
        for node in g.nodes.values():
            r = random()
            if r < replace:
                node[0] = float(normal(0.0, sigma0))
            elif r < perturb:
                node[0] = float(min(max(node[0] + normal(0.0, sigma), lo), hi))

    def _add_node(self, g: Genome) -> None:
        """Split an enabled connection s->t into s->new (weight 1) and new->t (the old weight)."""
        enabled = [k for k in sorted(g.conns) if g.conns[k][3]]
        if not enabled:
            return
        k = enabled[int(self.rng.integers(len(enabled)))]
        s, t, w, _ = g.conns[k]
        g.conns[k][3] = False
        node, i_in, i_out = self.tracker.split(k, s, t, g)
        g.nodes[node] = [0.0, self.config.activation]
        g.conns[i_in] = [s, node, 1.0, True]
        g.conns[i_out] = [node, t, w, True]

    def _add_connection(self, g: Genome) -> bool:
        """A new connection between two unconnected nodes that keeps the network acyclic (or re-enable one):
        False when the pair drawn was already connected or not allowed (``add_connection_tries`` draws again)."""
        rng = self.rng
        sources = list(range(self.n_in)) + sorted(g.nodes)
        targets = sorted(g.nodes)
        s = sources[int(rng.integers(len(sources)))]
        t = targets[int(rng.integers(len(targets)))]
        recurrent = self.config.recurrent
        if not recurrent and (s == t or (self.n_in <= s < self.n_in + self.n_out and t < self.n_in + self.n_out)):
            return False  # no self loops; no output -> output (keeps outputs a last layer, like neat-python's ff)
        innovation = self.tracker.connections.get((s, t))
        if innovation is not None and innovation in g.conns:
            enabled, g.conns[innovation][3] = g.conns[innovation][3], True
            return not enabled
        if not recurrent and reaches(g, t, s):
            return False  # would close a cycle
        c = self.config  # (neat-c++: NEAT C++'s new link weight, uniform in +-1 of its units)
        w = rng.uniform(-c.weight_scale, c.weight_scale) if c.reproduction == "neat-c++" else \
            rng.normal(0.0, c.initial_weight_sigma)
        g.conns[self.tracker.connection(s, t)] = [s, t, float(w), True]
        return True

    # -- species -------------------------------------------------------------------------------------------

    def _speciate(self) -> None:
        """Species for this generation (``neat_species.speciate``: distances in numpy, decided as the loops)."""
        dist = paper_distance if self.config.compatibility == "paper" else compatibility_distance
        self.species, self.next_species_id = speciate(self.genomes, self.species, self.config, self.next_species_id,
                                                      self.generation, dist)

    # -- evaluation ------------------------------------------------------------------------------------------

    def genome_network(self, genome: Genome) -> GraphNetwork | RecurrentGraphNetwork:
        """The genome as a ``GraphNetwork`` (enabled connections; nodes renumbered inputs, outputs, hidden)."""
        order, conns = self._layout(genome)
        index = {node: i for i, node in enumerate(order)}
        net = RecurrentGraphNetwork if self.config.recurrent else GraphNetwork
        hidden = [genome.nodes[n][1] for n in order[self.n_in + self.n_out:]]
        return net(self.n_in, self.n_out, self.output_activation, hidden,
                   [(index[s], index[t]) for s, t, _ in conns], [w for _, _, w in conns],
                   [genome.nodes[n][0] for n in order[self.n_in:]])

    def _layout(self, genome: Genome) -> tuple[list[int], list[tuple[int, int, float]]]:
        outputs = list(range(self.n_in, self.n_in + self.n_out))
        hidden = sorted(n for n in genome.nodes if n >= self.n_in + self.n_out)
        conns = [(s, t, w) for _, (s, t, w, e) in sorted(genome.conns.items()) if e]
        return list(range(self.n_in)) + outputs + hidden, conns

    def policy(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """``policy(genomes, obs)``: every listed genome's outputs for its observation, batched.

        Genomes are padded to the largest node count; ``levels`` iterations of ``v = act(v @ W + b)``
        (inputs held: each input feeds itself with weight 1) compute a DAG exactly, where ``levels`` is the
        deepest genome's depth (after ``k`` iterations every node of level ``k`` or less holds its value,
        whatever the others held).

        The genomes' weights, biases and work arrays are gathered once per ``genomes`` array and reused while
        the caller passes that same array object (as ``evolution.Evaluation`` does from step to step): do not
        change it in place between calls.
        """
        if self.config.recurrent:
            return self._recurrent_policy()
        n_in, n_out, n_io = self.n_in, self.n_out, self.n_in + self.n_out
        weights, biases, node_act, act_names, depth = self._pack()
        n = weights.shape[1]
        if depth > 1:  # each input node feeds itself with weight 1: every level carries the inputs on, exactly
            weights[:, np.arange(n_in), np.arange(n_in)] = 1.0  # (x * 1 + 0 * ...), no copy back per level
        single = act_names[0] if len(act_names) == 1 else None
        nonlinear = [(a, i) for i, a in enumerate(act_names) if a != "linear"]
        # NEAT's usual case: every output one activation, every hidden node another. Outputs are columns
        # n_in .. n_io, hidden nodes n_io ..: one activation call on each slice, no masks
        out_acts = {a for g in self.genomes for node, (_, a) in g.nodes.items() if node < n_io}
        hidden_acts = {a for g in self.genomes for node, (_, a) in g.nodes.items() if node >= n_io}
        slices: list[tuple[str, slice]] | None = None
        if single is not None:
            slices = [] if single == "linear" else [(single, slice(n_in, n))]
        elif len(out_acts) == 1 and len(hidden_acts) == 1:
            parts = ((out_acts.pop(), slice(n_in, n_io)), (hidden_acts.pop(), slice(n_io, n)))
            slices = [(a, cols) for a, cols in parts if a != "linear"]
        elif len(out_acts) == 1 and not hidden_acts:  # no hidden node in any genome (a first generation)
            slices = [] if out_acts == {"linear"} else [(out_acts.pop(), slice(n_in, n_io))]
        # after the last level only the outputs are read: no activation of the hidden nodes there
        last = [(a, slice(n_in, n_io)) for a, cols in slices or [] if cols.start < n_io]
        cache: list[Any] = [None]

        def gather(idx: np.ndarray) -> tuple[Any, ...]:
            rows = len(idx)
            masks = [(a, node_act[idx] == i) for a, i in nonlinear]
            values = (np.zeros((rows, 1, n), dtype=np.float32), np.zeros((rows, 1, n), dtype=np.float32))
            return idx, weights[idx], biases[idx], masks, values, np.zeros((rows, n), dtype=np.float32)

        def forward(idx: np.ndarray, obs: np.ndarray) -> np.ndarray:
            got = cache[0]
            if got is None or got[0] is not idx:
                got = cache[0] = gather(idx)
            _, w, b, masks, values, work = got
            rows = len(idx)
            x = obs if type(obs) is np.ndarray and obs.shape == (rows, n_in) else \
                np.asarray(obs, dtype=np.float32).reshape(rows, n_in)
            src = values[0]
            src[:, 0, :n_in] = x  # (float32 either way: a float64 obs is rounded here)
            for level in range(depth):
                dst = values[(level + 1) % 2]
                np.matmul(src, w, dst)
                z = dst[:, 0, :]
                z += b
                if slices is not None:
                    for a, cols in (slices if level < depth - 1 else last):
                        _activate(a, z[:, cols])
                else:
                    for a, mask in masks:
                        np.copyto(work, z)
                        _activate(a, work)
                        np.copyto(z, work, where=mask)
                src = dst
            return src[:, 0, n_in:n_in + n_out].copy()
        return forward

    def _recurrent_policy(self) -> Callable[..., np.ndarray]:
        """``policy(genomes, obs, tasks)`` for recurrent genomes: one activation per call, with a state per task
        (an episode: ``evolution.Evaluation`` numbers them), zero when a task is first seen. The rule is
        ``neat_tasks.RecurrentPopulation``'s and ``graph_net.RecurrentGraphNetwork``'s. ``keeps_state`` tells
        ``Evaluation`` to pass the tasks."""
        weights, biases, node_act, names, _ = self._pack(levels=False)
        n_in, n_out, n = self.n_in, self.n_out, weights.shape[1]
        single = names[0] if len(names) == 1 and names[0] != "linear" else None
        all_masks = [(a, node_act == i) for i, a in enumerate(names) if a != "linear"]
        cache: list[Any] = [None]
        state = [np.zeros((0, n), dtype=np.float32)]

        def forward(idx: np.ndarray, obs: np.ndarray, tasks: np.ndarray) -> np.ndarray:
            got = cache[0]
            if got is None or got[0] is not idx:
                got = cache[0] = (idx, weights[idx], biases[idx], [(a, m[idx]) for a, m in all_masks])
            _, w, b, masks = got
            tasks = np.asarray(tasks, dtype=np.int64)
            values = state[0]
            top = int(tasks.max()) + 1 if len(tasks) else 0
            if top > len(values):  # new tasks start from zero
                grown = np.zeros((max(top, 2 * len(values)), n), dtype=np.float32)
                grown[:len(values)] = values
                values = state[0] = grown
            u = values[tasks][:, None, :]
            u[:, 0, :n_in] = np.asarray(obs, dtype=np.float32).reshape(len(tasks), n_in)
            z = np.matmul(u, w)[:, 0, :]
            z += b
            if single is not None:
                _activate(single, z)
            else:
                for a, mask in masks:
                    work = z.copy()
                    _activate(a, work)
                    np.copyto(z, work, where=mask)
            values[tasks] = z
            return z[:, n_in:n_in + n_out].copy()
        forward.keeps_state = True  # type: ignore[attr-defined]
        return forward

    @property
    def check_alongside(self) -> bool:
        """``EvolutionJob`` plays the champion check alongside a generation only for feed-forward genomes (a
        recurrent network's recorded actions cannot be replayed one observation at a time)."""
        return not self.config.recurrent

    def _pack(self, levels: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], int]:
        """Every genome as dense padded arrays: weights ``(P, n, n)``, biases ``(P, n)``, each node's activation
        (an index into the sorted activation names; -1 for inputs and padding), the names, the deepest depth.
        Nodes are numbered inputs, outputs, then each genome's hidden nodes in id order."""
        n_in, n_io = self.n_in, self.n_in + self.n_out
        n = max(n_in + len(g.nodes) for g in self.genomes)
        p = len(self.genomes)
        weights = np.zeros((p, n, n), dtype=np.float32)
        biases = np.zeros((p, n), dtype=np.float32)
        act_names = sorted({a for g in self.genomes for _, a in g.nodes.values()})
        act_index = {a: i for i, a in enumerate(act_names)}
        node_act = np.full((p, n), -1, dtype=np.int64)
        depth = 1
        # each genome's node renumbering (hidden nodes after the outputs, in id order), then every gene through
        # list comprehensions (no per-gene appends)
        index = [{node: n_io + k for k, node in enumerate(sorted(nd for nd in g.nodes if nd >= n_io))}
                 for g in self.genomes]
        enabled = [[gene for gene in g.conns.values() if gene[3]] for g in self.genomes]
        conn_g = [gi for gi, genes in enumerate(enabled) for _ in range(len(genes))]
        conn_s = [ix.get(gene[0], gene[0]) for ix, genes in zip(index, enabled) for gene in genes]
        conn_t = [ix.get(gene[1], gene[1]) for ix, genes in zip(index, enabled) for gene in genes]
        conn_w = [gene[2] for genes in enabled for gene in genes]
        node_g = [gi for gi, g in enumerate(self.genomes) for _ in range(len(g.nodes))]
        node_i = [ix.get(node, node) for ix, g in zip(index, self.genomes) for node in g.nodes]
        node_b = [v[0] for g in self.genomes for v in g.nodes.values()]
        node_a = [act_index[v[1]] for g in self.genomes for v in g.nodes.values()]
        if conn_g:  # (source, target) pairs are unique in a genome: one innovation number per pair
            weights[conn_g, conn_s, conn_t] = conn_w
            if levels and n > n_io:  # without hidden nodes every connection goes from an input to an output: depth 1
                depth = _depth(p, n, n_in, conn_g, conn_s, conn_t)
        biases[node_g, node_i] = node_b
        node_act[node_g, node_i] = node_a
        return weights, biases, node_act, act_names, depth

    # -- reproduction ----------------------------------------------------------------------------------------

    def tell(self, fitness: np.ndarray) -> None:
        """Stagnation, fitness sharing, offspring per species, elites, crossover and mutation; speciate."""
        c, rng = self.config, self.rng
        if c.reproduction == "neat-c++":  # (its scalar draws from a generation's BreedRandom: 4x cheaper)
            self.rng = BreedRandom(int(rng.integers(2 ** 63)))  # type: ignore[assignment]
            try:
                return tell_cpp(self, fitness)
            finally:
                self.rng = rng
        f = np.asarray(fitness, dtype=np.float64)
        # stagnation: a species whose best fitness has not improved for max_stagnation generations goes,
        # unless it is among the species_elitism best
        for sp in self.species:
            best = float(f[sp["members"]].max())
            if best > sp["best"]:
                sp["best"], sp["last_improved"] = best, self.generation
        ranked = sorted(self.species, key=lambda sp: -sp["best"])
        keep = [sp for r, sp in enumerate(ranked)
                if r < c.species_elitism or self.generation - sp["last_improved"] < c.max_stagnation]
        keep = keep or ranked[:1]  # species_elitism 0 and every species stagnant: the best goes on
        members = np.concatenate([sp["members"] for sp in keep])
        lo, hi = f[members].min(), f[members].max()
        span = max(1.0, hi - lo)
        adjusted = np.array([((f[sp["members"]] - lo) / span).mean() for sp in keep])
        spawn = self._spawn_amounts(adjusted, [len(sp["members"]) for sp in keep])
        children: list[Genome] = []
        self.tracker.new_generation()
        for sp, count in zip(keep, spawn):
            order = sorted(sp["members"], key=lambda i: (-f[i], i))
            elites = order[:min(c.elitism, count)]
            children.extend(self.genomes[i].copy() for i in elites)
            count -= len(elites)
            parents = order[:max(2, math.ceil(c.survival_threshold * len(order)))]
            for _ in range(count):
                a = parents[int(rng.integers(len(parents)))]
                b = parents[int(rng.integers(len(parents)))]
                if f[b] > f[a]:
                    a, b = b, a
                child = crossover(self.genomes[a], self.genomes[b], rng) if a != b else self.genomes[a].copy()
                self._mutate(child)
                children.append(child)
        self.genomes = children
        self.species = keep
        self.generation += 1
        self._speciate()

    def _spawn_amounts(self, adjusted: np.ndarray, sizes: list[int]) -> list[int]:
        """Offspring per species in proportion to adjusted fitness, at least min_species_size, summing to
        the population size (largest remainders)."""
        c = self.config
        total = c.population_size
        share = adjusted / adjusted.sum() if adjusted.sum() > 0 else np.full(len(adjusted), 1 / len(adjusted))
        floor_each = min(c.min_species_size, total // len(adjusted))
        raw = floor_each + share * (total - floor_each * len(adjusted))
        spawn = np.floor(raw).astype(int)
        for i in np.argsort(-(raw - spawn), kind="stable")[:total - spawn.sum()]:
            spawn[i] += 1
        return [int(s) for s in spawn]

    # -- the Method protocol ---------------------------------------------------------------------------------

    def genome(self, i: int) -> Genome:
        return self.genomes[i].copy()

    def genome_to_data(self, genome: Genome) -> Any:
        return genome.to_data()

    def genome_from_data(self, data: Any) -> Genome:
        return Genome.from_data(data)

    def state(self) -> dict[str, Any]:
        d = {"generation": self.generation, "tracker": self.tracker.state(),
             "genomes": [g.to_data() for g in self.genomes], "next_species_id": self.next_species_id,
             "species": [{"id": sp["id"], "representative": sp["representative"].to_data(),
                          "members": list(sp["members"]), "best": sp["best"] if math.isfinite(sp["best"]) else None,
                          "last_improved": sp["last_improved"], **({"born": sp["born"]} if "born" in sp else {})}
                         for sp in self.species]}
        if self.config.reproduction == "neat-c++":
            h = self.breed_state["highest"]
            d["breed"] = {"highest": h if math.isfinite(h) else None, "since": self.breed_state["since"]}
        return d

    def load_state(self, d: Mapping[str, Any]) -> None:
        self.generation = int(d["generation"])
        self.tracker.load_state(d["tracker"])
        self.genomes = [Genome.from_data(g) for g in d["genomes"]]
        self.next_species_id = int(d["next_species_id"])
        self.species = [{"id": int(sp["id"]), "representative": Genome.from_data(sp["representative"]),
                         "members": [int(i) for i in sp["members"]],
                         "best": -math.inf if sp["best"] is None else float(sp["best"]),
                         "last_improved": int(sp["last_improved"]),
                         **({"born": int(sp["born"])} if "born" in sp else {})} for sp in d["species"]]
        b = d.get("breed") or {}
        self.breed_state = {"highest": -math.inf if b.get("highest") is None else float(b["highest"]),
                            "since": int(b.get("since", 0))}

    def status(self) -> dict[str, str]:
        hidden = [len(g.nodes) - self.n_out for g in self.genomes]
        return {"species": str(len(self.species)), "hidden nodes": f"{np.mean(hidden):.1f} mean, {max(hidden)} max"}
