"""NEAT's genes: ``Genome`` (node and connection genes keyed by innovation number), ``InnovationTracker``,
``compatibility_distance`` (neat-python's form) and ``crossover`` by innovation numbers (see ``neat``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


__all__ = ["Genome", "InnovationTracker", "compatibility_distance", "crossover", "reaches"]


class Genome:
    """Node genes ``{id: [bias, activation]}`` (non-input nodes) and connection genes
    ``{innovation: [source, target, weight, enabled]}``. Inputs are nodes ``0 .. n_in-1``, outputs
    ``n_in .. n_in+n_out-1``, hidden nodes get ids from the tracker."""

    __slots__ = ("nodes", "conns")

    def __init__(self, nodes: dict[int, list[Any]], conns: dict[int, list[Any]]) -> None:
        self.nodes, self.conns = nodes, conns

    def copy(self) -> Genome:
        return Genome({k: list(v) for k, v in self.nodes.items()}, {k: list(v) for k, v in self.conns.items()})

    def to_data(self) -> dict[str, Any]:
        return {"nodes": [[k, v[0], v[1]] for k, v in sorted(self.nodes.items())],
                "conns": [[k, v[0], v[1], v[2], bool(v[3])] for k, v in sorted(self.conns.items())]}

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> Genome:
        return cls({int(k): [float(b), str(a)] for k, b, a in d["nodes"]},
                   {int(k): [int(s), int(t), float(w), bool(e)] for k, s, t, w, e in d["conns"]})


class InnovationTracker:
    """Innovation numbers and node ids for a run; ``new_generation`` clears the per-generation split table."""

    def __init__(self, next_node: int) -> None:
        self.next_innovation = 0
        self.next_node = next_node
        self.connections: dict[tuple[int, int], int] = {}
        self.splits: dict[int, tuple[int, int, int]] = {}

    def connection(self, source: int, target: int) -> int:
        key = (source, target)
        if key not in self.connections:
            self.connections[key] = self.next_innovation
            self.next_innovation += 1
        return self.connections[key]

    def split(self, innovation: int, source: int, target: int, genome: Genome) -> tuple[int, int, int]:
        """(new node, innovation into it, innovation out of it) for splitting connection ``innovation``."""
        found = self.splits.get(innovation)
        if found is None or found[0] in genome.nodes:  # a genome splitting the same gene twice gets a new node
            node = self.next_node
            self.next_node += 1
            found = (node, self.connection(source, node), self.connection(node, target))
            if innovation not in self.splits:
                self.splits[innovation] = found
        return found

    def new_generation(self) -> None:
        self.splits = {}

    def state(self) -> dict[str, Any]:
        return {"next_innovation": self.next_innovation, "next_node": self.next_node,
                "connections": [[s, t, i] for (s, t), i in self.connections.items()],
                "splits": [[k, *v] for k, v in self.splits.items()]}

    def load_state(self, d: Mapping[str, Any]) -> None:
        self.next_innovation, self.next_node = int(d["next_innovation"]), int(d["next_node"])
        self.connections = {(int(s), int(t)): int(i) for s, t, i in d["connections"]}
        self.splits = {int(k): (int(a), int(b), int(c)) for k, a, b, c in d["splits"]}


def compatibility_distance(a: Genome, b: Genome, c: Any) -> float:
    """neat-python's distance: per gene kind, (c_d * disjoint + c_w * sum of matching differences) / size.

    (Plain loops, no per-gene function call: speciation calls this population x species times a generation.)
    """
    dist = 0.0
    ga, gb = a.nodes, b.nodes
    n = max(len(ga), len(gb))
    if n:
        matching = ga.keys() & gb.keys()
        w = 0.0
        for k in matching:
            x, y = ga[k], gb[k]
            w += abs(x[0] - y[0]) + (x[1] != y[1])
        dist += (c.disjoint_coefficient * (len(ga) + len(gb) - 2 * len(matching)) + c.weight_coefficient * w) / n
    ga, gb = a.conns, b.conns
    n = max(len(ga), len(gb))
    if n:
        matching = ga.keys() & gb.keys()
        w = 0.0
        for k in matching:
            x, y = ga[k], gb[k]
            w += abs(x[2] - y[2]) + (x[3] != y[3])
        dist += (c.disjoint_coefficient * (len(ga) + len(gb) - 2 * len(matching)) + c.weight_coefficient * w) / n
    return dist


def crossover(fit: Genome, other: Genome, rng: np.random.Generator) -> Genome:
    """Child aligned by innovation: matching genes from either parent at random, disjoint and excess
    genes from ``fit`` (the fitter parent); a gene disabled in either parent stays disabled 75 % of the time."""
    nodes = {}
    for k, g in fit.nodes.items():
        o = other.nodes.get(k)
        nodes[k] = list(o if o is not None and rng.random() < 0.5 else g)
    conns = {}
    for k, g in fit.conns.items():
        o = other.conns.get(k)
        gene = list(o if o is not None and rng.random() < 0.5 else g)
        if o is not None and (not g[3] or not o[3]):
            gene[3] = bool(rng.random() >= 0.75)
        conns[k] = gene
    return Genome(nodes, conns)


def reaches(genome: Genome, start: int, goal: int) -> bool:
    """Whether ``goal`` is reachable from ``start`` along connection genes (enabled or not)."""
    succ: dict[int, list[int]] = {}
    for s, t, _, _ in genome.conns.values():
        succ.setdefault(s, []).append(t)
    stack, seen = [start], {start}
    while stack:
        n = stack.pop()
        if n == goal:
            return True
        for t in succ.get(n, ()):
            if t not in seen:
                seen.add(t)
                stack.append(t)
    return False


def paper_distance(a: Genome, b: Genome, c: Any) -> float:
    """The NEAT paper's distance (NEAT C++'s: disjoint and excess alike, normalised only from 20 genes, mean weight
    difference over matching genes and nodes, in NEAT C++'s units: over ``c.weight_scale``); ``c`` a
    ``NEATConfig``. (Plain loops, like ``compatibility_distance``: speciation calls it population x species times.)"""
    ca, cb = a.conns, b.conns
    matching = ca.keys() & cb.keys()
    w = 0.0
    for k in matching:
        w += abs(ca[k][2] - cb[k][2])
    na, nb = a.nodes, b.nodes
    nodes = na.keys() & nb.keys()
    for k in nodes:
        w += abs(na[k][0] - nb[k][0])
    n = max(len(ca), len(cb))
    unmatched = len(ca) + len(cb) - 2 * len(matching)
    return c.disjoint_coefficient * unmatched / (n if n >= 20 else 1) + \
        c.weight_coefficient / getattr(c, "weight_scale", 1.0) * w / max(1, len(matching) + len(nodes))
