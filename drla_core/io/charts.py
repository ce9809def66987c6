"""Charts: ``Series`` in ``Panel``s drawn with axes, grid, legend and min/max bands (``render_panels``), and the
sidebar's small learning curve (``render_curve``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .draw import _fill, _format, _format_power, _stamp, _ticks, draw_text, moving_average, polyline, text_width



# ---------------------------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------------------------

WHITE = (255, 255, 255)
INK = (40, 44, 52)
MUTED = (110, 116, 128)
GRID = (228, 231, 236)
FRAME = (190, 195, 204)
BLUE, BLUE_LIGHT = (31, 99, 196), (178, 204, 240)
ORANGE = (230, 120, 20)
RED, RED_LIGHT = (200, 50, 50), (240, 190, 190)
GREEN = (30, 150, 90)
PURPLE, PURPLE_LIGHT = (120, 70, 180), (215, 200, 236)


@dataclass
class Series:
    """One thing drawn in a panel: ``line`` (polyline), ``points`` (square markers) or ``band`` (min/max)."""

    xs: np.ndarray
    ys: np.ndarray
    color: tuple[int, int, int]
    label: str = ""
    kind: str = "line"
    width: int = 2


@dataclass
class Panel:
    title: str
    series: list[Series] = field(default_factory=list)
    x_label: str = "step"
    log_y: bool = False
    y_range: tuple[float, float] | None = None
    empty_text: str = "no data yet"
    text_lines: list[str] | None = None  # a text-only panel (the summary)


def _data_range(values: list[np.ndarray], log: bool) -> tuple[float, float] | None:
    finite = [v[np.isfinite(v) & ((v > 0) if log else True)] for v in values]
    finite = [v for v in finite if len(v)]
    if not finite:
        return None
    return float(min(v.min() for v in finite)), float(max(v.max() for v in finite))


@dataclass
class _Axes:
    """Pixel box of a plot area and the data ranges mapped onto it (y in log10 units when ``log``)."""

    px0: int
    py0: int
    px1: int
    py1: int
    x_lo: float
    x_hi: float
    lo: float
    hi: float
    log: bool

    def to_px(self, xs: Any) -> np.ndarray:
        frac = (np.asarray(xs, dtype=np.float64) - self.x_lo) / (self.x_hi - self.x_lo)
        return self.px0 + frac * (self.px1 - self.px0)

    def to_py(self, ys: Any, already_log: bool = False) -> np.ndarray:
        ys = np.asarray(ys, dtype=np.float64)
        if self.log and not already_log:
            with np.errstate(divide="ignore", invalid="ignore"):
                ys = np.log10(ys)
        return self.py1 - (ys - self.lo) / (self.hi - self.lo) * (self.py1 - self.py0)


def _ranges(panel: Panel, series: list[Series]) -> tuple[float, float, float, float, bool] | None:
    """(x_lo, x_hi, y_lo, y_hi, log): fixed where the panel says so, padded otherwise; None without data."""
    log = panel.log_y and all(np.all(sr.ys[np.isfinite(sr.ys)] > 0) for sr in series)
    yr = _data_range([sr.ys for sr in series], log)
    xr = _data_range([sr.xs for sr in series], False)
    if yr is None or xr is None:
        return None
    if log:
        lo, hi = math.log10(yr[0]), math.log10(yr[1])
        lo, hi = (lo - 0.5, hi + 0.5) if hi - lo < 1e-9 else (lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
    elif panel.y_range is not None:
        lo, hi = panel.y_range
    else:
        lo, hi = yr
        pad = 0.06 * (hi - lo) if hi > lo else max(abs(lo) * 0.1, 1.0)  # a flat series gets a visible range
        lo, hi = lo - pad, hi + pad
    x_lo, x_hi = xr if xr[1] > xr[0] else (xr[0] - 1.0, xr[1] + 1.0)
    if 0 < x_lo < 0.1 * (x_hi - x_lo):
        x_lo = 0.0
    return x_lo, x_hi, lo, hi, bool(log)


def _draw_grid(img: np.ndarray, ax: _Axes, x_label: str, s: int) -> None:
    """Grid lines, tick labels and the x-axis name."""
    if ax.log:
        y_ticks = np.arange(math.ceil(ax.lo - 1e-9), math.floor(ax.hi + 1e-9) + 1)
        if len(y_ticks) > 6:
            y_ticks = y_ticks[:: math.ceil(len(y_ticks) / 6)]
        y_labels = [_format_power(int(p)) for p in y_ticks]
    else:
        y_ticks, y_step = _ticks(ax.lo, ax.hi, max(3, (ax.py1 - ax.py0) // (22 * s)))
        y_labels = [_format(v, y_step) for v in y_ticks]
    for y, label in zip(ax.to_py(y_ticks, already_log=True), y_labels):
        yi = int(round(y))
        _fill(img, ax.px0, yi, ax.px1 + 1, yi + 1, GRID)
        draw_text(img, ax.px0 - 4 * s, yi - 3 * s, label, MUTED, s, "right")
    x_ticks, x_step = _ticks(ax.x_lo, ax.x_hi, max(3, (ax.px1 - ax.px0) // (45 * s)))
    label_left = ax.px1 - text_width(x_label, s)
    for x, v in zip(ax.to_px(x_ticks), x_ticks):
        xi = int(round(x))
        _fill(img, xi, ax.py0, xi + 1, ax.py1 + 1, GRID)
        _fill(img, xi, ax.py1 + 1, xi + 1, ax.py1 + 1 + 3 * s, FRAME)
        label = _format(v, x_step)
        if xi + text_width(label, s) // 2 < label_left - 6 * s:  # never over the axis name
            draw_text(img, xi, ax.py1 + 6 * s, label, MUTED, s, "center")
    draw_text(img, ax.px1, ax.py1 + 6 * s, x_label, MUTED, s, "right")


def _legend_width(series: list[Series], s: int) -> int:
    return sum(23 * s + text_width(sr.label, s) for sr in series if sr.label) - 10 * s


def _draw_legend(img: np.ndarray, series: list[Series], x: int, y: int, s: int) -> None:
    for sr in series:
        if not sr.label:
            continue
        if sr.kind == "points":
            _fill(img, x + 3 * s, y + 2 * s, x + 6 * s + 1, y + 5 * s + 1, sr.color)
        else:
            _fill(img, x, y + 3 * s, x + 10 * s, y + 4 * s + (s > 1), sr.color)
        draw_text(img, x + 13 * s, y, sr.label, MUTED, s)
        x += 23 * s + text_width(sr.label, s)


def _draw_panel(img: np.ndarray, panel: Panel, box: tuple[int, int, int, int], s: int) -> None:
    """Draw ``panel`` into ``box`` = (x0, y0, x1, y1) with text scale ``s``."""
    bx0, by0, bx1, by1 = box
    _fill(img, bx0, by0, bx1, by1, WHITE)
    draw_text(img, bx0 + 4 * s, by0 + 3 * s, panel.title, INK, s)
    if panel.text_lines is not None:  # (heading, value) line pairs, in as many columns as the height needs
        lines = panel.text_lines
        rows = max(2, (by1 - by0 - 24 * s) // (12 * s) // 2 * 2)
        col_w = max(text_width(t, s) for t in lines) + 24 * s if lines else 0
        for i, line in enumerate(lines):
            col, row = divmod(i, rows)
            draw_text(img, bx0 + 8 * s + col * col_w, by0 + (20 + 12 * row) * s, line, INK if i % 2 == 0 else MUTED,
                      s)
        return
    series = [sr for sr in panel.series if len(sr.xs)]
    legend_x, legend_y, top = bx1 - 8 * s - _legend_width(series, s), by0 + 3 * s, by0 + 17 * s
    if legend_x < bx0 + 4 * s + text_width(panel.title, s) + 12 * s:  # no room beside the title: a row of its own
        legend_y, top = by0 + 15 * s, by0 + 29 * s
    px0, py0, px1, py1 = bx0 + 44 * s, top, bx1 - 8 * s, by1 - 22 * s
    ranges = _ranges(panel, series)
    if ranges is None:
        _fill(img, px0, py0, px1 + 1, py1 + 1, (248, 249, 251))
        draw_text(img, (px0 + px1) // 2, (py0 + py1) // 2 - 3 * s, panel.empty_text, MUTED, s, "center")
        return
    ax = _Axes(px0, py0, px1, py1, *ranges)
    _draw_grid(img, ax, panel.x_label, s)
    clip = (px0, py0, px1 + 1, py1 + 1)
    for sr in series:
        xs, ys = ax.to_px(sr.xs), ax.to_py(sr.ys)
        if sr.kind == "band":
            _band(img, xs, ys, sr.color, clip)
        elif sr.kind == "points":
            _stamp(img, np.rint(xs).astype(int), np.rint(ys).astype(int), sr.color, 3 * s + 1, clip)
        else:
            polyline(img, xs, ys, sr.color, sr.width + s - 1, clip)
    _fill(img, px0, py0, px0 + 1, py1 + 1, FRAME)  # left and bottom axes
    _fill(img, px0, py1, px1 + 1, py1 + 1, FRAME)
    _draw_legend(img, series, legend_x, legend_y, s)


def _band(img: np.ndarray, xs: np.ndarray, ys: np.ndarray, color: Sequence[float],
          clip: tuple[int, int, int, int]) -> None:
    """Per pixel column, a vertical bar from the min to the max of the values falling in it."""
    ok = np.isfinite(xs) & np.isfinite(ys)
    cols = np.rint(xs[ok]).astype(int)
    ys = ys[ok]
    if len(cols) == 0:
        return
    order = np.argsort(cols, kind="stable")
    cols, ys = cols[order], ys[order]
    uniq, start = np.unique(cols, return_index=True)
    y_min = np.minimum.reduceat(ys, start)
    y_max = np.maximum.reduceat(ys, start)
    # Join neighbouring columns so the band has no gaps.
    y_min = np.minimum(y_min, np.append(y_min[1:], y_min[-1]))
    y_max = np.maximum(y_max, np.append(y_max[1:], y_max[-1]))
    x0, y0, x1, y1 = clip
    for c, a, b in zip(uniq, np.rint(y_min).astype(int), np.rint(y_max).astype(int)):
        if x0 <= c < x1:
            img[max(a, y0):min(b + 1, y1), c] = color




def render_panels(panels: list[Panel], title: str = "DRLA", width: int = 1200) -> np.ndarray:
    """Panels (``Panel``/``Series``) two per row under ``title``, as an ``(H, W, 3)`` uint8 RGB array."""
    s = max(1, min(4, round(width / 600)))
    cols = 2
    rows = math.ceil(len(panels) / cols)
    gap, head = 6 * s, 22 * s
    panel_w = (width - gap * (cols + 1)) // cols
    panel_h = int(panel_w * 0.62)
    # A text panel left alone on the last row spans the width, as tall as its lines need.
    wide_text = len(panels) % cols == 1 and len(panels) > 1 and panels[-1].text_lines is not None
    last_h = panel_h
    if wide_text:
        lines = panels[-1].text_lines or []
        per_col = max(1, (width - 2 * gap - 8 * s) // max(1, max(text_width(t, s) for t in lines) + 24 * s))
        last_h = min(panel_h, (26 + 12 * math.ceil(len(lines) / 2 / per_col) * 2) * s)
    height = head + (rows - 1) * (panel_h + gap) + last_h + 2 * gap
    img = np.empty((height, width, 3), dtype=np.uint8)
    img[...] = (242, 244, 247)
    draw_text(img, gap + 4 * s, 6 * s, title, INK, s + 1)
    for i, panel in enumerate(panels):
        r, c = divmod(i, cols)
        x0 = gap + c * (panel_w + gap)
        y0 = head + r * (panel_h + gap)
        if wide_text and i == len(panels) - 1:
            _draw_panel(img, panel, (x0, y0, width - gap, y0 + last_h), s)
        else:
            _draw_panel(img, panel, (x0, y0, x0 + panel_w, y0 + panel_h), s)
    return img




def render_curve(values: Sequence[float] | np.ndarray, width: int = 240, height: int = 80, *,
                 color: Sequence[float] = (0.35, 0.65, 1.0, 1.0), background: Sequence[float] = (0.0, 0.0, 0.0, 0.0),
                 smooth: int = 0, y_range: tuple[float, float] | None = None, line_width: int = 2,
                 bottom_up: bool = False) -> np.ndarray:
    """A small single-line plot (no axes) for a live learning curve, as float32 RGBA in [0, 1].

    Args:
        values: the series, drawn left to right over the full width (NaNs are skipped).
        width, height: size in pixels.
        color, background: RGBA in [0, 1]; the default background is transparent.
        smooth: trailing moving-average window (0 or 1: none).
        y_range: fixed (low, high); by default the data's own range.
        line_width: line thickness in pixels.
        bottom_up: put row 0 at the bottom, as Blender's image and GPU texture buffers expect.

    Returns:
        ``(height, width, 4)`` float32 array.
    """
    img = np.empty((height, width, 4), dtype=np.float32)
    img[...] = np.asarray(background, dtype=np.float32)
    v = np.asarray(values, dtype=np.float64).ravel()
    if smooth and smooth > 1:
        v = moving_average(v, smooth)
    finite = v[np.isfinite(v)]
    if len(finite):
        lo, hi = y_range if y_range is not None else (float(finite.min()), float(finite.max()))
        if hi <= lo:
            lo, hi = lo - 1.0, hi + 1.0
        pad = (line_width + 1) / 2
        xs = np.linspace(pad, width - 1 - pad, len(v)) if len(v) > 1 else np.array([width / 2])
        ys = (height - 1 - pad) - (v - lo) / (hi - lo) * (height - 1 - 2 * pad)
        polyline(img, xs, ys, tuple(color), line_width, (0, 0, width, height))
    return img[::-1].copy() if bottom_up else img
