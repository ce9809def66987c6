"""Drawing on ``(H, W, 3)`` uint8 pictures with numpy only: a 5x9 bitmap font, filled boxes, polylines, a
moving average and "nice" axis ticks (Blender ships numpy, not matplotlib)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np



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


