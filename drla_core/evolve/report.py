"""The evolution report: fitness curves per generation as a PNG."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..io.plot import BLUE, GREEN, ORANGE, PURPLE, Panel, Series, render_panels
from ..io.png import write_png


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
