"""NEAT's speciation with the compatibility distances computed in numpy, decisions exactly as the plain loops.

``speciate`` is ``NEAT._speciate``'s algorithm (each old species keeps as representative its closest genome of
the new generation; every other genome joins the closest species under the threshold, the first of equals, or
founds one). The distances of one representative to every genome are one numpy row over the genes packed by
innovation number (``GenePack``). Numpy sums the weight differences in another order than the Python distance
functions (``neat_genome.compatibility_distance``, ``neat_genome.paper_distance``), so a distance can differ
from theirs in its last bits: wherever that could change a decision (a distance within ``TOLERANCE`` of the
threshold, or of the smallest one), the Python function decides it. The species are therefore the same as
the loops', genome for genome.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .neat_genome import Genome

__all__ = ["GenePack", "speciate", "TOLERANCE"]

#: Relative margin above numpy's rounding difference (about genes x 1e-16): decisions closer than this use
#: the Python distance.
TOLERANCE = 1e-9


class GenePack:
    """Genomes' genes as dense arrays ``(genomes, innovations)``: present, weight, enabled (connections) and
    present, bias, activation (nodes)."""

    def __init__(self, genomes: Sequence[Genome]) -> None:
        conn_keys = sorted({k for g in genomes for k in g.conns})
        node_keys = sorted({k for g in genomes for k in g.nodes})
        ci = {k: j for j, k in enumerate(conn_keys)}
        ni = {k: j for j, k in enumerate(node_keys)}
        p = len(genomes)
        # (list comprehensions over every gene: a few Python operations per gene, no per-gene appends)
        rows = [r for r, g in enumerate(genomes) for _ in range(len(g.conns))]
        cols = [ci[k] for g in genomes for k in g.conns]
        genes = [gene for g in genomes for gene in g.conns.values()]
        w = [gene[2] for gene in genes]
        en = [bool(gene[3]) for gene in genes]
        nrows = [r for r, g in enumerate(genomes) for _ in range(len(g.nodes))]
        ncols = [ni[k] for g in genomes for k in g.nodes]
        nodes = [node for g in genomes for node in g.nodes.values()]
        b = [node[0] for node in nodes]
        names: dict[str, int] = {}
        acts = [names.setdefault(node[1], len(names)) for node in nodes]
        self.cp = np.zeros((p, len(conn_keys)), dtype=bool)
        self.cw = np.zeros((p, len(conn_keys)))
        self.ce = np.zeros((p, len(conn_keys)), dtype=bool)
        self.np_ = np.zeros((p, len(node_keys)), dtype=bool)
        self.nb = np.zeros((p, len(node_keys)))
        self.na = np.full((p, len(node_keys)), -1, dtype=np.int64)
        self.cp[rows, cols] = True
        self.cw[rows, cols] = w
        self.ce[rows, cols] = en
        self.np_[nrows, ncols] = True
        self.nb[nrows, ncols] = b
        self.na[nrows, ncols] = acts
        self.n_conns = self.cp.sum(axis=1)
        self.n_nodes = self.np_.sum(axis=1)

    def paper_row(self, r: int, c: Any) -> np.ndarray:
        """``paper_distance(genome r, every genome)``, as numpy rounds it (over genome r's genes only: the others
        match nothing)."""
        cols, ncols = np.flatnonzero(self.cp[r]), np.flatnonzero(self.np_[r])
        cm, nm = self.cp[:, cols], self.np_[:, ncols]
        w = np.where(cm, np.abs(self.cw[:, cols] - self.cw[r, cols]), 0.0).sum(axis=1) + \
            np.where(nm, np.abs(self.nb[:, ncols] - self.nb[r, ncols]), 0.0).sum(axis=1)
        matching = cm.sum(axis=1)
        n = np.maximum(self.n_conns[r], self.n_conns)
        unmatched = self.n_conns[r] + self.n_conns - 2 * matching
        return c.disjoint_coefficient * unmatched / np.where(n >= 20, n, 1) + \
            c.weight_coefficient / getattr(c, "weight_scale", 1.0) * w / np.maximum(1, matching + nm.sum(axis=1))

    def neat_python_row(self, r: int, c: Any) -> np.ndarray:
        """``compatibility_distance(genome r, every genome)``, as numpy rounds it (over genome r's genes only)."""
        out = np.zeros(len(self.cp))
        for present, count, value, kind in ((self.np_, self.n_nodes, self.nb, self.na),
                                            (self.cp, self.n_conns, self.cw, self.ce)):
            cols = np.flatnonzero(present[r])
            m = present[:, cols]
            n = np.maximum(count[r], count)
            diff = np.abs(value[:, cols] - value[r, cols]) + (kind[:, cols] != kind[r, cols])
            w = np.where(m, diff, 0.0).sum(axis=1)
            part = (c.disjoint_coefficient * (count[r] + count - 2 * m.sum(axis=1)) + c.weight_coefficient * w) / \
                np.maximum(n, 1)
            out += np.where(n > 0, part, 0.0)
        return out


def _near(a: float, b: float) -> bool:
    return abs(a - b) <= TOLERANCE * (1.0 + abs(a) + abs(b))


def speciate(genomes: list[Genome], species: list[dict[str, Any]], config: Any, next_id: int, generation: int,
             dist: Callable[[Genome, Genome, Any], float]) -> tuple[list[dict[str, Any]], int]:
    """``(species, next species id)`` for ``genomes``: ``NEAT._speciate``'s result (see the module docstring)."""
    c, thr = config, config.compatibility_threshold
    p = len(genomes)
    olds = [sp["representative"] for sp in species]
    pack = GenePack(list(genomes) + olds)
    row = pack.paper_row if c.compatibility == "paper" else pack.neat_python_row
    unassigned = np.ones(p, dtype=bool)
    left = p
    new_species = []
    rep_rows: list[int] = []  # each new species' representative: a genome of this generation
    for k, sp in enumerate(species):  # each species keeps as representative its closest genome of this generation
        if not left:
            break
        rep = sp["representative"]
        d = row(p + k, c)[:p]
        idx = np.flatnonzero(unassigned)
        vals = d[idx]
        m = float(vals.min())
        near = idx[vals <= m + TOLERANCE * (1.0 + 2.0 * abs(m))]
        if len(near) > 1:
            best = min(near.tolist(), key=lambda i: (dist(rep, genomes[i], c), i))
        else:
            best = int(near[0])
        sp["representative"] = genomes[best].copy()
        sp["members"] = [best]
        unassigned[best] = False
        left -= 1
        new_species.append(sp)
        rep_rows.append(best)
    table = [row(r, c)[:p].tolist() for r in rep_rows]  # table[s][i]: species s's representative to genome i
    band = 4.0 * TOLERANCE * (1.0 + abs(thr))  # (wider than any rounding difference: inside it, the exact distance)
    lo, hi = thr - band, thr + band
    for i in np.flatnonzero(unassigned).tolist():
        g = genomes[i]
        cand = []
        for s, dists in enumerate(table):
            v = dists[i]
            if v < lo:
                cand.append((v, s))
            elif v < hi:
                v = dist(new_species[s]["representative"], g, c)
                if v < thr:
                    cand.append((v, s))
        best_s = None
        if cand:
            m = min(v for v, _ in cand)
            near_s = [(v, s) for v, s in cand if v <= m or _near(v, m)]
            if len(near_s) > 1:
                near_s = [(dist(new_species[s]["representative"], g, c), s) for _, s in near_s]
            best_s = min(near_s)[1]
        if best_s is None:
            new_species.append({"id": next_id, "representative": g.copy(), "members": [], "best": -math.inf,
                                "last_improved": generation, "born": generation})
            next_id += 1
            table.append(row(i, c)[:p].tolist())
            best_s = len(new_species) - 1
        new_species[best_s]["members"].append(i)
    return [sp for sp in new_species if sp["members"]], next_id
