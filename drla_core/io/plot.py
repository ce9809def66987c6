"""Training reports with numpy only: a run's history as panels of curves and counts, and the report picture
(drawing: ``draw.py``; charts: ``charts.py``; PNG files: ``png.py``).

Blender ships numpy but not matplotlib, so the report picture at the end of a run (and the live
learning curve in the sidebar) are drawn here by hand: axes with "nice" ticks, a 5x7 pixel font,
polylines and min/max bands for long noisy series.

Pictures are ``(H, W, 3)`` uint8 arrays with row 0 at the top, like any image file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..base.metrics import METRIC_WORDS, ONCE_PER_EPISODE
from .charts import (  # (re-exported: the pictures' one import for callers)
    BLUE,
    BLUE_LIGHT,
    GREEN,
    INK,
    ORANGE,
    PURPLE,
    PURPLE_LIGHT,
    RED,
    RED_LIGHT,
    Panel,
    Series,
    render_curve,
    render_panels,
)
from .draw import GLYPH_H, draw_text, moving_average, polyline, text_width
from .png import write_png

__all__ = ["render_report", "save_report", "render_agents_report", "save_agents_report", "render_curve", "draw_text",
           "text_width", "moving_average", "normalise_history", "polyline", "line_panels", "histogram_panels",
           "render_panels", "Panel", "Series", "GLYPH_H", "AGENT_COLORS", "BLUE", "GREEN", "ORANGE", "PURPLE", "RED",
           "INK"]


def _pairs(history: Mapping[str, Any], key: str, width: int = 2) -> np.ndarray:
    """``history[key]`` as an (N, width) float array; tolerant of a missing key, None values and short rows."""
    rows = history.get(key) or []
    out = np.full((len(rows), width), np.nan)
    for i, row in enumerate(rows):
        try:
            vals = list(row)[:width]
        except TypeError:
            continue
        for j, v in enumerate(vals):
            if v is not None and not isinstance(v, (str, bytes)):
                try:
                    out[i, j] = float(v)
                except (TypeError, ValueError):
                    pass
    return out


def _smooth_window(n: int) -> int:
    return int(np.clip(n // 10, 1, 100))


def _values(history: Mapping[str, Any], key: str) -> np.ndarray:
    out = []
    for v in history.get(key) or []:
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            out.append(np.nan)
    return np.asarray(out, dtype=np.float64)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def normalise_history(history: Any) -> dict[str, Any]:
    """Accept both history layouts and return the pair-list one ``render_report`` documents.

    Besides ``{"losses": [(step, loss)], "epsilons": [(step, eps)], "task_metric_name": name,
    "task_metric": [(step, value)]}``, this takes ``train.History`` (or its ``to_dict()``), which keeps
    ``losses`` with separate ``loss_steps``, one epsilon per episode, ``task_metric`` as the metric's
    name and ``episode_metrics`` per episode, aligned with ``episode_end_steps``; its per-episode
    ``episode_metric_sums`` and ``episode_metric_counts`` (the tank's hits and shots) become
    ``task_metric_sums`` and ``task_metric_counts``, ``[(step, value)]``.
    """
    h = dict(history.to_dict() if hasattr(history, "to_dict") else history or {})
    ends = list(h.get("episode_steps") or h.get("episode_end_steps") or [])
    h["episode_steps"] = ends

    def paired(values: list, steps: list) -> list:
        if values and all(_is_number(v) or v is None for v in values):
            xs = steps if len(steps) == len(values) else range(1, len(values) + 1)
            return [(x, v) for x, v in zip(xs, values) if v is not None]
        return values

    h["losses"] = paired(list(h.get("losses") or []), list(h.get("loss_steps") or []))
    h["epsilons"] = paired(list(h.get("epsilons") or []), ends)
    if isinstance(h.get("task_metric"), str):
        h["task_metric_name"] = h["task_metric"]
        h["task_metric"] = paired(list(h.get("episode_metrics") or []), ends)
        sums, counts = list(h.get("episode_metric_sums") or []), list(h.get("episode_metric_counts") or [])
        if len(sums) == len(counts):
            h["task_metric_sums"], h["task_metric_counts"] = paired(sums, ends), paired(counts, ends)
    return h


def _metric_words(name: str) -> tuple[str, str, str]:
    """(the 1s, the events, the event singular) of a task metric: ("hits", "shots", "shot") for "hit"."""

    (_, ones), (event, events) = METRIC_WORDS.get(name, ((name, name), (f"{name} event", f"{name} events")))
    return ones, events, event


def _counts_panel(history: Mapping[str, Any], name: str, summary: list[str]) -> Panel | None:
    """The task metric as counts per episode (hits and shots), not as a rate that one lucky shot makes 100 %."""
    sums, counts = _pairs(history, "task_metric_sums"), _pairs(history, "task_metric_counts")
    totals = _pairs(history, "eval_metric_totals", 4)
    totals = totals[np.all(np.isfinite(totals), axis=1) & (totals[:, 3] > 0)] if len(totals) else totals
    if len(sums) != len(counts) or not (len(sums) or len(totals)):
        return None
    ones, events, _ = _metric_words(name)
    panel = Panel(f"{ones.capitalize()} per episode")

    once_each = name in ONCE_PER_EPISODE  # one report per episode: its count says nothing
    if len(sums):
        w = max(_smooth_window(len(sums)), min(len(sums), 20))
        panel.series.append(Series(sums[:, 0], moving_average(sums[:, 1], w), PURPLE, f"{ones}, mean of {w}",
                                   "line", 2))
        if not once_each:
            panel.series.append(Series(counts[:, 0], moving_average(counts[:, 1], w), PURPLE_LIGHT, events, "line", 2))
        summary += [f"{ones} per episode, last {w}", "  " + _counts_line(name, float(np.sum(sums[-w:, 1])),
                                                                         float(np.sum(counts[-w:, 1])), w)]
    if len(totals):
        panel.series.append(Series(totals[:, 0], totals[:, 1] / totals[:, 3], ORANGE, "eval", "points"))
    top = max([float(np.nanmax(sr.ys)) for sr in panel.series if np.any(np.isfinite(sr.ys))] + [0.0])
    panel.y_range = (-0.02 * (top or 1.0), 1.05 * (top or 1.0))
    final = history.get("final_eval_metric_totals")
    if final and len(final) == 4 and final[3]:
        _, hit, shot, episodes = final
        summary += [f"final evaluation, {episodes} episodes", "  " + _counts_line(name, hit, shot, episodes)]
    return panel


def _counts_line(name: str, hit: float, shot: float, episodes: int) -> str:
    """``0.1 of 1.1 shots (9.1 %)``: the metric per episode, its events per episode and the rate."""
    _, events, _ = _metric_words(name)
    rate = f"{hit / shot:.1%}".replace("%", " %") if shot else f"no {events}"

    if name in ONCE_PER_EPISODE:  # reported once per episode: the rate is the count per episode
        return f"{rate} of {episodes} episodes"
    return f"{hit / episodes:.3g} of {shot / episodes:.3g} {events} ({rate})"


def line_panels(history: Mapping[str, Any]) -> tuple[list[Panel], list[str]]:
    """The report's plot panels and the lines of its summary."""
    history = normalise_history(history)
    panels: list[Panel] = []
    summary: list[str] = []
    returns = _values(history, "episode_returns")
    ends = _values(history, "episode_steps")
    evals = _pairs(history, "evals", 3)
    by_step = len(ends) == len(returns) and len(returns) > 0 and np.all(np.isfinite(ends))
    x = ends if by_step else np.arange(1, len(returns) + 1, dtype=np.float64)
    ret = Panel("Episode return", x_label="step" if by_step else "episode",
                empty_text="no finished episodes yet")
    if len(returns):
        w = _smooth_window(len(returns))
        ret.series.append(Series(x, returns, BLUE_LIGHT, "return", "band" if len(returns) > 400 else "line", 1))
        if w > 1:
            ret.series.append(Series(x, moving_average(returns, w, True), BLUE, f"mean of {w}", "line", 2))
        summary += ["episodes", f"  {len(returns)}, last {w}: mean return {np.nanmean(returns[-w:]):.3g}"]
    if by_step and len(evals):
        ret.series.append(Series(evals[:, 0], evals[:, 1], ORANGE, "eval", "points"))
    if len(evals) and np.any(np.isfinite(evals[:, 1])):
        best = int(np.nanargmax(evals[:, 1]))
        summary += ["best evaluation", f"  {evals[best, 1]:.3g} at step {evals[best, 0]:.0f}"]
    panels.append(ret)

    losses = _pairs(history, "losses")
    if len(losses):
        pos = losses[:, 1][np.isfinite(losses[:, 1])]
        log = bool(len(pos) > 1 and np.all(pos > 0) and pos.max() / max(pos.min(), 1e-300) > 50)
        loss = Panel("Loss" + (" (log scale)" if log else ""), log_y=log)
        w = _smooth_window(len(losses))
        kind = "band" if len(losses) > 400 else "line"
        loss.series.append(Series(losses[:, 0], losses[:, 1], RED_LIGHT, "loss", kind, 1))
        if w > 1:
            loss.series.append(Series(losses[:, 0], moving_average(losses[:, 1], w, True), RED, f"mean of {w}", "line",
                                      2))
        panels.append(loss)

    eps = _pairs(history, "epsilons")
    if len(eps) and np.nanmax(eps[:, 1]) > 0:  # none without exploration (PPO explores by sampling)
        what = history.get("exploration_label") or "epsilon"  # (SAC: its entropy temperature)
        panels.append(Panel(f"Exploration ({what})", [Series(eps[:, 0], eps[:, 1], GREEN, what, "line", 2)],
                            y_range=(0.0, 1.05) if np.nanmax(eps[:, 1]) <= 1 else None))

    name = history.get("task_metric_name")
    metric = _pairs(history, "task_metric")
    eval_metric = evals[np.isfinite(evals[:, 2])] if len(evals) else evals
    counts_panel = _counts_panel(history, str(name), summary) if name else None
    if counts_panel is not None:
        panels.append(counts_panel)
    elif name and (len(metric) or len(eval_metric)):  # an older history: rates only
        panel = Panel(f"{str(name).capitalize()} rate", y_range=(-0.02, 1.05))
        if len(metric):
            w = max(_smooth_window(len(metric)), min(len(metric), 20))
            panel.series.append(Series(metric[:, 0], moving_average(metric[:, 1], w), PURPLE, f"mean of last {w}",
                                       "line", 2))
            summary += [f"{name} rate", f"  last {w}: {np.nanmean(metric[-w:, 1]):.1%}".replace("%", " %")]
        if len(eval_metric):
            panel.series.append(Series(eval_metric[:, 0], eval_metric[:, 2], ORANGE, "eval", "points"))
        values = metric[:, 1][np.isfinite(metric[:, 1])] if len(metric) else np.zeros(0)
        if len(values) and (values.min() < 0 or values.max() > 1):
            panel.y_range, panel.title = None, str(name).capitalize()
        panels.append(panel)
    steps = [a[-1, 0] for a in (losses, eps, metric) if len(a)] + ([ends[-1]] if len(ends) else [])
    trained: Any = history.get("steps", 0)
    if _is_number(trained) and trained > 0:  # the steps actually trained, not the last episode's end
        steps = [trained]
    if steps:
        note = " (interrupted)" if history.get("interrupted") else ""
        summary = ["steps trained", f"  {np.nanmax(steps):.0f}{note}"] + summary
    return panels, summary


def histogram_panels(network: Any, states: np.ndarray | None = None, bins: int = 40) -> list[Panel]:
    """Per-layer histograms of an MLP: its weights, and its hidden activations over ``states`` when given.

    The indicators read at a glance: weights spreading out or collapsing to zero, and dead relu
    units (counted in the legend). One curve per layer, each normalised to its peak (y: share of the peak).
    """
    weights = Panel("Weights per layer", x_label="weight", y_range=(0.0, 1.05))
    for i, w in enumerate(getattr(network, "weights", [])):
        weights.series.append(_histogram_series(np.asarray(w).ravel(), bins, AGENT_COLORS[i % len(AGENT_COLORS)],
                                                f"layer {i + 1}"))
    panels = [weights]
    if states is not None and len(states) and hasattr(network, "forward_train"):
        acts = Panel("Hidden activations per layer", x_label="activation", y_range=(0.0, 1.05))
        h = np.asarray(states, dtype=np.float32).reshape(len(states), -1)
        for i, (w, b, act) in enumerate(zip(network.weights[:-1], network.biases[:-1], network.activations[:-1])):
            h = _apply_activation(act, h @ w + b)
            dead = int(np.sum(np.all(h <= 0, axis=0))) if act == "relu" else 0  # never active on these states
            label = f"layer {i + 1}" + (f" ({dead} dead)" if dead else "")
            acts.series.append(_histogram_series(h.ravel(), bins, AGENT_COLORS[i % len(AGENT_COLORS)], label))
        if acts.series:
            panels.append(acts)
    return panels


def _apply_activation(name: str, z: np.ndarray) -> np.ndarray:
    if name == "relu":
        return np.maximum(z, 0)
    if name == "tanh":
        return np.tanh(z)
    if name == "leaky_relu":
        return np.maximum(z, 0.01 * z)
    if name == "sigmoid":
        return 0.5 * (1 + np.tanh(0.5 * z))
    return z


def _histogram_series(values: np.ndarray, bins: int, color: tuple[int, int, int], label: str) -> Series:
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return Series(np.zeros(0), np.zeros(0), color, label)
    counts, edges = np.histogram(values, bins=int(min(bins, max(8, np.sqrt(len(values))))))
    centres = 0.5 * (edges[:-1] + edges[1:])
    return Series(centres, counts / max(counts.max(), 1), color, label, "line", 2)


def render_report(history: Mapping[str, Any] | Any, title: str = "DRLA training", width: int = 1200,
                  network: Any = None, states: np.ndarray | None = None) -> np.ndarray:
    """Picture of a training run: return, loss, epsilon and task-metric panels (those with data).

    With ``network`` (an MLP), per-layer weight histograms too, and activation histograms over
    ``states`` (recent observations) when given (``histogram_panels``).

    Args:
        history: plain dict of lists, every key optional: ``episode_returns``, ``episode_steps`` (the step
            at which each episode ended), ``losses`` ``[(step, loss)]``, ``epsilons`` ``[(step, eps)]``,
            ``evals`` ``[(step, mean_return, metric_or_None)]``, ``task_metric_name`` and
            ``task_metric`` ``[(step, 0/1 value)]``. A ``train.History`` (or its ``to_dict()``) works too,
            see ``normalise_history``.
        title: drawn at the top.
        width: picture width in pixels (text scales with it).

    Returns:
        ``(H, W, 3)`` uint8 RGB array.
    """
    panels, summary = line_panels(history)
    if network is not None and hasattr(network, "weights"):
        panels += histogram_panels(network, states)
    panels.append(Panel("Summary", text_lines=summary or ["no data yet"]))
    return render_panels(panels, title, width)


AGENT_COLORS = (BLUE, RED, GREEN, PURPLE, ORANGE, INK)


def render_agents_report(histories: Mapping[str, Any], title: str = "DRLA training", width: int = 1200) -> np.ndarray:
    """Picture of a multi-agent run: one curve per agent (``MultiAgentRun.histories``: name -> History).

    Panels: the smoothed episode return of every agent; their greedy evaluations; the task metric's
    rate per agent at each evaluation (when the task has one); a summary with each agent's figures.
    """
    ret = Panel("Episode return per agent", empty_text="no finished episodes yet")
    evals_panel = Panel("Greedy evaluation per agent", empty_text="no evaluation yet")
    metric_panel: Panel | None = None
    summary: list[str] = []
    for i, (name, history) in enumerate(histories.items()):
        h = normalise_history(history)
        color = AGENT_COLORS[i % len(AGENT_COLORS)]
        returns, ends = _values(h, "episode_returns"), _values(h, "episode_steps")
        if len(returns) and len(ends) == len(returns):
            w = _smooth_window(len(returns))
            ret.series.append(Series(ends, moving_average(returns, w, True), color, name, "line", 2))
            summary += [name, f"  {len(returns)} episodes, last {w}: mean return {np.nanmean(returns[-w:]):.3g}"]
        evals = _pairs(h, "evals", 3)
        if len(evals):
            evals_panel.series.append(Series(evals[:, 0], evals[:, 1], color, name, "line", 2))
            metric = evals[np.isfinite(evals[:, 2])]
            metric_name = h.get("task_metric_name")
            if metric_name and len(metric):
                metric_panel = metric_panel or Panel(f"{str(metric_name).capitalize()} rate at evaluations",
                                                     y_range=(-0.02, 1.05))
                metric_panel.series.append(Series(metric[:, 0], metric[:, 2], color, name, "line", 2))
                summary += [f"  last evaluation: {metric_name} rate {metric[-1, 2]:.0%}".replace("%", " %")]
    panels = [ret, evals_panel] + ([metric_panel] if metric_panel is not None else [])
    panels.append(Panel("Summary", text_lines=summary or ["no data yet"]))
    return render_panels(panels, title, width)


def save_agents_report(path: str | os.PathLike[str], histories: Mapping[str, Any], title: str = "DRLA training",
                       width: int = 1200) -> Path:
    """``render_agents_report`` written as a PNG; returns the path."""
    return write_png(path, render_agents_report(histories, title, width))




def save_report(path: str | os.PathLike[str], history: Mapping[str, Any] | Any, title: str = "DRLA training",
                width: int = 1200, network: Any = None, states: np.ndarray | None = None) -> Path:
    """``render_report`` written as a PNG; returns the path."""
    return write_png(path, render_report(history, title, width, network, states))


