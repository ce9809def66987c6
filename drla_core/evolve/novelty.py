"""Novelty search (Lehman & Stanley 2011): ``novelty_scores`` (mean distance to the k nearest behaviours
among the population and the archive) and ``NoveltyArchive`` (adaptive threshold or probability)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np



# ---- novelty search --------------------------------------------------------------------------------------


def _distances(b: np.ndarray, others: np.ndarray, distance: str) -> np.ndarray:
    if distance == "mean_abs":
        return np.abs(b[:, None, :] - others[None, :, :]).mean(-1)
    return np.sqrt(np.maximum(((b[:, None, :] - others[None, :, :]) ** 2).sum(-1), 0.0))


def novelty_scores(behaviors: np.ndarray, archive: np.ndarray | None, k: int,
                   distance: str = "euclidean") -> np.ndarray:
    """Each behaviour's mean distance (Euclidean, or ``mean_abs``: the mean absolute difference per dimension)
    to its ``k`` nearest neighbours among the population (itself excluded) and the archive."""
    b = np.asarray(behaviors, dtype=np.float64).reshape(len(behaviors), -1)
    others = b if archive is None or len(archive) == 0 else np.concatenate([b, np.asarray(archive, np.float64)])
    d = _distances(b, others, distance)
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
    # Lehman and Stanley's settings (Novelty Search C++, noveltyset.h), as options; the defaults keep DRLA's own:
    distance: str = "euclidean"
    """euclidean, or mean_abs: the mean absolute difference per dimension (the C++ ``hist_diff``)."""
    admit: str = "novelty"
    """What the threshold is compared with: novelty (the k-nearest score) or nearest (the distance to the nearest
    archived behaviour, the behaviours tried one by one; an empty archive takes the first: the C++ code's rule)."""
    lower_after: int = 1
    """Generations in a row that add nothing before the threshold falls 5 % (the C++ code: 10)."""
    threshold_floor: float = 0.0
    """The threshold never falls below this (the C++ code: 0.25)."""

    def check(self) -> None:
        if self.k < 1:
            raise ValueError("novelty k must be at least 1")
        if self.archive not in ("threshold", "probability"):
            raise ValueError(f"unknown archive insertion {self.archive!r}; choose threshold or probability")
        if not 0.0 <= self.fitness_weight <= 1.0 or not 0.0 <= self.add_probability <= 1.0:
            raise ValueError("fitness_weight and add_probability must be in [0, 1]")
        if self.distance not in ("euclidean", "mean_abs"):
            raise ValueError(f"unknown novelty distance {self.distance!r}; choose euclidean or mean_abs")
        if self.admit not in ("novelty", "nearest"):
            raise ValueError(f"unknown archive admission {self.admit!r}; choose novelty or nearest")
        if self.lower_after < 1:
            raise ValueError("novelty lower_after must be at least 1")


class NoveltyArchive:
    """Past behaviours novelty is measured against; insertion by adaptive threshold or by probability."""

    def __init__(self, config: NoveltyConfig) -> None:
        config.check()
        self.config = config
        self.threshold = float(config.threshold)
        self.items: list[list[float]] = []
        self.quiet = 0  # generations in a row that added nothing (``lower_after``)

    def array(self) -> np.ndarray | None:
        return np.asarray(self.items, dtype=np.float64) if self.items else None

    def score(self, behaviors: np.ndarray, fitness: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray,
                                                                                                  np.ndarray]:
        """(scores for selection, novelty) of this generation; adds behaviours to the archive."""
        c = self.config
        novelty = novelty_scores(behaviors, self.array(), c.k, c.distance)
        if c.archive == "threshold":
            added = self._nearest_admitted(behaviors) if c.admit == "nearest" else \
                np.flatnonzero(novelty > self.threshold)
            self.quiet = 0 if len(added) else self.quiet + 1
            if len(added) > 4:
                self.threshold *= 1.2
            elif self.quiet >= c.lower_after:
                self.threshold = max(self.threshold * 0.95, c.threshold_floor)
                self.quiet = 0
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

    def _nearest_admitted(self, behaviors: np.ndarray) -> np.ndarray:
        """The behaviours (tried in order, each against the archive as it would stand then) farther than the
        threshold from every archived one; the first goes straight in when the archive is empty (added here,
        not returned). Vectorised: each behaviour's distance to the archive and to the population come in two
        array operations; the loop only keeps, per behaviour, the nearest of those admitted before it (the
        same distances, so the same choices, as trying them one by one)."""
        b = np.asarray(behaviors, dtype=np.float64).reshape(len(behaviors), -1)
        if len(b) == 0:
            return np.zeros(0, dtype=np.int64)
        archive, first = self.array(), 0
        if archive is None:  # (the C++ seeds the archive with it and scores it 0: not counted as an addition)
            self.items.append([float(v) for v in b[0]])
            archive, first = b[:1], 1
        nearest = _distances(b, archive, self.config.distance).min(axis=1)
        among = _distances(b, b, self.config.distance)
        added = []
        for i in range(first, len(b)):
            if nearest[i] > self.threshold:
                added.append(i)
                np.minimum(nearest, among[:, i], out=nearest)  # (row i's own entry, 0, is never read again)
        return np.asarray(added, dtype=np.int64)  # (``score`` archives them)

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = {"threshold": self.threshold, "items": self.items}
        if self.quiet:
            out["quiet"] = self.quiet
        return out

    def load_state(self, state: Mapping[str, Any]) -> None:
        self.threshold = float(state["threshold"])
        self.items = [[float(v) for v in item] for item in state["items"]]
        self.quiet = int(state.get("quiet", 0))


