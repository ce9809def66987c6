"""Training pictures with numpy only: a tiny bitmap font, line plots and a report (PNG files: ``png.py``).

Blender ships numpy but not matplotlib, so the report picture at the end of a run (and the live
learning curve in the sidebar) are drawn here by hand: axes with "nice" ticks, a 5x7 pixel font,
polylines and min/max bands for long noisy series.

Pictures are ``(H, W, 3)`` uint8 arrays with row 0 at the top, like any image file.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .metrics import METRIC_WORDS, ONCE_PER_EPISODE
from .png import write_png

__all__ = ["render_report", "save_report", "render_agents_report", "save_agents_report", "render_curve", "draw_text",
           "text_width", "moving_average", "normalise_history", "polyline"]

# ---------------------------------------------------------------------------------------------
# A 5x7 bitmap font
# ---------------------------------------------------------------------------------------------

_GLYPHS = {
    "0": "01110 10001 10011 10101 11001 10001 01110", "1": "00100 01100 00100 00100 00100 00100 01110",
    "2": "01110 10001 00001 00010 00100 01000 11111", "3": "11111 00010 00100 00010 00001 10001 01110",
    "4": "00010 00110 01010 10010 11111 00010 00010", "5": "11111 10000 11110 00001 00001 10001 01110",
    "6": "00110 01000 10000 11110 10001 10001 01110", "7": "11111 00001 00010 00100 01000 01000 01000",
    "8": "01110 10001 10001 01110 10001 10001 01110", "9": "01110 10001 10001 01111 00001 00010 01100",
    "A": "01110 10001 10001 10001 11111 10001 10001", "B": "11110 10001 10001 11110 10001 10001 11110",
    "C": "01110 10001 10000 10000 10000 10001 01110", "D": "11100 10010 10001 10001 10001 10010 11100",
    "E": "11111 10000 10000 11110 10000 10000 11111", "F": "11111 10000 10000 11110 10000 10000 10000",
    "G": "01110 10001 10000 10111 10001 10001 01111", "H": "10001 10001 10001 11111 10001 10001 10001",
    "I": "01110 00100 00100 00100 00100 00100 01110", "J": "00111 00010 00010 00010 00010 10010 01100",
    "K": "10001 10010 10100 11000 10100 10010 10001", "L": "10000 10000 10000 10000 10000 10000 11111",
    "M": "10001 11011 10101 10101 10001 10001 10001", "N": "10001 10001 11001 10101 10011 10001 10001",
    "O": "01110 10001 10001 10001 10001 10001 01110", "P": "11110 10001 10001 11110 10000 10000 10000",
    "Q": "01110 10001 10001 10001 10101 10010 01101", "R": "11110 10001 10001 11110 10100 10010 10001",
    "S": "01111 10000 10000 01110 00001 00001 11110", "T": "11111 00100 00100 00100 00100 00100 00100",
    "U": "10001 10001 10001 10001 10001 10001 01110", "V": "10001 10001 10001 10001 10001 01010 00100",
    "W": "10001 10001 10001 10101 10101 10101 01010", "X": "10001 10001 01010 00100 01010 10001 10001",
    "Y": "10001 10001 10001 01010 00100 00100 00100", "Z": "11111 00001 00010 00100 01000 10000 11111",
    "a": "00000 00000 01110 00001 01111 10001 01111", "b": "10000 10000 10110 11001 10001 10001 11110",
    "c": "00000 00000 01110 10000 10000 10001 01110", "d": "00001 00001 01101 10011 10001 10001 01111",
    "e": "00000 00000 01110 10001 11111 10000 01110", "f": "00110 01001 01000 11100 01000 01000 01000",
    "g": "00000 00000 01111 10001 10001 10001 01111 00001 01110", "h": "10000 10000 10110 11001 10001 10001 10001",
    "i": "00100 00000 01100 00100 00100 00100 01110", "j": "00010 00000 00110 00010 00010 00010 00010 10010 01100",
    "k": "10000 10000 10010 10100 11000 10100 10010", "l": "01100 00100 00100 00100 00100 00100 01110",
    "m": "00000 00000 11010 10101 10101 10001 10001", "n": "00000 00000 10110 11001 10001 10001 10001",
    "o": "00000 00000 01110 10001 10001 10001 01110", "p": "00000 00000 11110 10001 10001 10001 11110 10000 10000",
    "q": "00000 00000 01111 10001 10001 10001 01111 00001 00001", "r": "00000 00000 10110 11001 10000 10000 10000",
    "s": "00000 00000 01110 10000 01110 00001 11110", "t": "01000 01000 11100 01000 01000 01001 00110",
    "u": "00000 00000 10001 10001 10001 10011 01101", "v": "00000 00000 10001 10001 10001 01010 00100",
    "w": "00000 00000 10001 10001 10101 10101 01010", "x": "00000 00000 10001 01010 00100 01010 10001",
    "y": "00000 00000 10001 10001 10001 10001 01111 00001 01110", "z": "00000 00000 11111 00010 00100 01000 11111",
    " ": "00000 00000 00000 00000 00000 00000 00000", ".": "00000 00000 00000 00000 00000 01100 01100",
    ",": "00000 00000 00000 00000 00000 01100 01100 00100 01000", ":": "00000 01100 01100 00000 01100 01100 00000",
    ";": "00000 00000 01100 01100 00000 01100 01100 00100 01000", "-": "00000 00000 00000 11111 00000 00000 00000",
    "+": "00000 00100 00100 11111 00100 00100 00000", "_": "00000 00000 00000 00000 00000 00000 11111",
    "/": "00000 00001 00010 00100 01000 10000 00000", "(": "00010 00100 01000 01000 01000 00100 00010",
    ")": "01000 00100 00010 00010 00010 00100 01000", "%": "11000 11001 00010 00100 01000 10011 00011",
    "=": "00000 00000 11111 00000 11111 00000 00000", "!": "00100 00100 00100 00100 00100 00000 00100",
    "?": "01110 10001 00001 00010 00100 00000 00100", "'": "01100 00100 01000 00000 00000 00000 00000",
    '"': "01010 01010 01010 00000 00000 00000 00000", "[": "01110 01000 01000 01000 01000 01000 01110",
    "]": "01110 00010 00010 00010 00010 00010 01110", "<": "00010 00100 01000 10000 01000 00100 00010",
    ">": "01000 00100 00010 00001 00010 00100 01000", "#": "01010 01010 11111 01010 11111 01010 01010",
    "*": "00000 00100 10101 01110 10101 00100 00000", "|": "00100 00100 00100 00100 00100 00100 00100",
    "~": "00000 00000 01000 10101 00010 00000 00000", "@": "01110 10001 10111 10101 10111 10000 01110",
    "&": "01100 10010 10100 01000 10101 10010 01101", "^": "00100 01010 10001 00000 00000 00000 00000",
}
GLYPH_W, GLYPH_H = 5, 9  # 7 rows above the baseline, 2 for descenders (g, j, p, q, y, comma)


def _glyph(rows: str) -> np.ndarray:
    bits = [[c == "1" for c in row] for row in rows.split()]
    bits += [[False] * GLYPH_W] * (GLYPH_H - len(bits))
    return np.array(bits, dtype=bool)


_FONT = {ch: _glyph(rows) for ch, rows in _GLYPHS.items()}
_BOX = _glyph("11111 10001 10001 10001 10001 10001 11111")


def text_width(text: str, scale: int = 1) -> int:
    """Width in pixels of ``text`` drawn at ``scale`` (one pixel column between glyphs)."""
    return max(0, len(text) * (GLYPH_W + 1) * scale - scale)


def _text_mask(text: str, scale: int) -> np.ndarray:
    mask = np.zeros((GLYPH_H, max(1, len(text) * (GLYPH_W + 1) - 1)), dtype=bool)
    for i, ch in enumerate(text):
        mask[:, i * (GLYPH_W + 1): i * (GLYPH_W + 1) + GLYPH_W] = _FONT.get(ch, _BOX)
    return np.kron(mask, np.ones((scale, scale), dtype=bool)) if scale > 1 else mask


def _paste(img: np.ndarray, mask: np.ndarray, x: int, y: int, color: Sequence[float]) -> None:
    h, w = mask.shape
    x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + w, img.shape[1]), min(y + h, img.shape[0])
    if x0 < x1 and y0 < y1:
        img[y0:y1, x0:x1][mask[y0 - y:y1 - y, x0 - x:x1 - x]] = color


def draw_text(img: np.ndarray, x: int, y: int, text: str, color: Sequence[float], scale: int = 1,
              anchor: str = "left", vertical: bool = False) -> None:
    """Draw ``text`` with its top at ``y``; ``anchor`` is where ``x`` is: left, center or right.

    ``vertical=True`` draws it rotated a quarter turn (reading bottom to top), centred on ``y``.
    """
    mask = _text_mask(text, scale)
    if vertical:
        mask = np.rot90(mask)
        _paste(img, mask, x, y - mask.shape[0] // 2, color)
        return
    w = mask.shape[1]
    x = x - w // 2 if anchor == "center" else x - w if anchor == "right" else x
    _paste(img, mask, x, y, color)


# ---------------------------------------------------------------------------------------------
# Drawing primitives
# ---------------------------------------------------------------------------------------------


def _fill(img: np.ndarray, x0: int, y0: int, x1: int, y1: int, color: Sequence[float]) -> None:
    img[max(y0, 0):max(y1, 0), max(x0, 0):max(x1, 0)] = color


def _stamp(img: np.ndarray, px: np.ndarray, py: np.ndarray, color: Sequence[float], width: int,
           clip: tuple[int, int, int, int]) -> None:
    """Set the pixels at (px, py), each widened to a ``width`` x ``width`` square, inside ``clip``."""
    x0, y0, x1, y1 = clip
    r = np.arange(width) - (width - 1) // 2
    xs = (px[:, None, None] + r[None, None, :]).repeat(width, axis=1).ravel()
    ys = (py[:, None, None] + r[None, :, None]).repeat(width, axis=2).ravel()
    keep = (xs >= x0) & (xs < x1) & (ys >= y0) & (ys < y1)
    img[ys[keep], xs[keep]] = color


def polyline(img: np.ndarray, xs: np.ndarray, ys: np.ndarray, color: Sequence[float], width: int = 1,
             clip: tuple[int, int, int, int] | None = None) -> None:
    """Connect the points (pixel coordinates, floats; NaNs skipped) with straight segments, all at once in numpy.

    ``clip`` is ``(x0, y0, x1, y1)``; by default the whole image.
    """
    if clip is None:
        clip = (0, 0, img.shape[1], img.shape[0])
    xs, ys = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    ok = np.isfinite(xs) & np.isfinite(ys)
    xs, ys = xs[ok], ys[ok]
    if len(xs) == 0:
        return
    if len(xs) == 1:
        _stamp(img, np.rint(xs).astype(int), np.rint(ys).astype(int), color, width, clip)
        return
    dx, dy = np.diff(xs), np.diff(ys)
    steps = np.maximum(np.ceil(np.maximum(np.abs(dx), np.abs(dy))).astype(int), 1)
    seg = np.repeat(np.arange(len(dx)), steps)
    t = (np.arange(steps.sum()) - np.repeat(np.cumsum(steps) - steps, steps)) / steps[seg]
    px = np.append(xs[seg] + t * dx[seg], xs[-1])
    py = np.append(ys[seg] + t * dy[seg], ys[-1])
    _stamp(img, np.rint(px).astype(int), np.rint(py).astype(int), color, width, clip)


def moving_average(values: Sequence[float] | np.ndarray, window: int, centered: bool = False) -> np.ndarray:
    """Mean over a window of ``window`` values, same length as ``values`` (shorter windows at the ends).

    Trailing (the last ``window`` values) by default; ``centered=True`` puts the window around each
    value (cut at the ends), which does not lag behind the data (for finished runs). NaNs (episodes
    without a value) are left out of each mean; a window holding only NaNs gives NaN.
    """
    v = np.asarray(values, dtype=np.float64)
    if len(v) == 0 or window <= 1:
        return v.copy()
    finite = np.isfinite(v)
    c = np.cumsum(np.insert(np.where(finite, v, 0.0), 0, 0.0))
    n = np.cumsum(np.insert(finite, 0, False))
    idx = np.arange(1, len(v) + 1)
    if centered:  # symmetric windows, narrower near the ends so the curve follows the data there
        i = idx - 1
        lo, hi = np.maximum(i - window // 2, 0), np.minimum(i + window // 2 + 1, len(v))
    else:
        hi, lo = idx, np.maximum(idx - window, 0)
    count = n[hi] - n[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, (c[hi] - c[lo]) / np.maximum(count, 1), np.nan)


def _nice_step(span: float, target: int) -> float:
    raw = span / max(target, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 5.0, 10.0):
        if raw <= m * mag:
            return m * mag
    return 10.0 * mag


def _ticks(lo: float, hi: float, target: int = 5) -> tuple[np.ndarray, float]:
    step = _nice_step(hi - lo, target)
    start = math.ceil(lo / step - 1e-9) * step
    ticks = np.arange(start, hi + step * 1e-6, step)
    return ticks, step


def _format(v: float, step: float) -> str:
    if abs(v) < step * 1e-6:
        return "0"
    a = abs(v)
    if a >= 1e6 and step >= 1e5:
        return f"{v / 1e6:.{max(0, -math.floor(math.log10(step / 1e6)))}f}M".replace(".0M", "M")
    if a >= 1e3 and step >= 500:
        return f"{v / 1e3:.{max(0, -math.floor(math.log10(step / 1e3)))}f}k".replace(".0k", "k")
    if step >= 1:
        return f"{v:.0f}"
    if step < 1e-3:
        return f"{v:.0e}".replace("e-0", "e-")
    decimals = -math.floor(math.log10(step) + 1e-9)
    return f"{v:.{decimals}f}"


def _format_power(p: int) -> str:
    return f"{10.0 ** p:.{max(0, -p)}f}" if -3 <= p <= 4 else f"1e{p}"


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
    if len(eps):
        panels.append(Panel("Exploration (epsilon)", [Series(eps[:, 0], eps[:, 1], GREEN, "epsilon", "line", 2)],
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


def save_report(path: str | os.PathLike[str], history: Mapping[str, Any] | Any, title: str = "DRLA training",
                width: int = 1200, network: Any = None, states: np.ndarray | None = None) -> Path:
    """``render_report`` written as a PNG; returns the path."""
    return write_png(path, render_report(history, title, width, network, states))


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
