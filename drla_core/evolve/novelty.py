"""Novelty search (Lehman & Stanley 2011): ``novelty_scores`` (mean distance to the k nearest behaviours
among the population and the archive) and ``NoveltyArchive`` (adaptive threshold or probability)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np



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


