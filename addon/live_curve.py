"""The learning curve drawn in the sidebar while training.

The curve is rasterised with numpy (this file: no matplotlib, no GPU drawing) into the pixels of
an icon preview from ``bpy.utils.previews``, drawn with ``layout.template_icon``. A preview is
not a datablock, so nothing is written into the user's .blend. Updates are throttled (4 Hz).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..drla_core.plot import moving_average, polyline

WIDTH, HEIGHT = 256, 128
THROTTLE_S = 0.25
BACKGROUND = (0.09, 0.09, 0.10, 1.0)
GRID = (0.22, 0.22, 0.24, 1.0)
COLOURS = {
    'RETURN': (0.35, 0.75, 1.0, 1.0),
    'LOSS': (1.0, 0.55, 0.25, 1.0),
    'EPSILON': (0.65, 0.9, 0.35, 1.0),
    'METRIC': (1.0, 0.85, 0.3, 1.0),
}

_previews: Any = None
_state: dict[str, dict[str, Any]] = {}


# --------------------------------------------------------------------------- data
def _field(history: Any, name: str) -> list:
    if history is None:
        return []
    value = history.get(name, []) if isinstance(history, dict) else getattr(history, name, [])
    return list(value) if value is not None else []


def series(history: Any, metric: str) -> tuple[np.ndarray, np.ndarray | None]:
    """``(raw values, smoothed values or None)`` of ``metric`` from a training history."""
    if metric == 'RETURN':
        raw = np.asarray(_field(history, "episode_returns"), dtype=np.float64)
    elif metric == 'LOSS':
        raw = np.asarray([v for v in _field(history, "losses") if v is not None], dtype=np.float64)
    elif metric == 'EPSILON':
        raw = np.asarray(_field(history, "epsilons"), dtype=np.float64)
        return raw, None
    else:
        raw = np.asarray([np.nan if v is None else v for v in _field(history, "episode_metrics")], dtype=np.float64)
    return raw, moving_average(raw, max(1, len(raw) // 20))  # trailing: the live end must not lag


def _metric_name(history: Any) -> str:
    name = history.get("task_metric") if isinstance(history, dict) else getattr(history, "task_metric", None)
    return name if isinstance(name, str) else ""


def summary(history: Any, metric: str) -> str:
    raw, _ = series(history, metric)
    raw = raw[np.isfinite(raw)]
    if raw.size == 0:
        return "no data yet" if metric != 'METRIC' or _metric_name(history) else "this task has no metric"
    prefix = f"{_metric_name(history)}: " if metric == 'METRIC' else ""
    return f"{prefix}last {raw[-1]:.3g}   min {raw.min():.3g}   max {raw.max():.3g}"


# --------------------------------------------------------------------------- pixels
def _columns(values: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-column (x, mean, min, max) of ``values`` binned into at most ``width`` columns."""
    n = len(values)
    if n <= width:
        x = np.linspace(0, width - 1, n) if n > 1 else np.array([0.0])
        return x, values, values
    edges = np.linspace(0, n, width + 1).astype(int)
    sums = np.add.reduceat(values, edges[:-1])
    counts = np.diff(edges)
    return np.arange(width, dtype=float), sums / counts, (np.minimum.reduceat(values, edges[:-1]),
                                                          np.maximum.reduceat(values, edges[:-1]))


def rasterise(raw: np.ndarray, smooth: np.ndarray | None = None, *, width: int = WIDTH, height: int = HEIGHT,
              colour=(0.35, 0.75, 1.0, 1.0)) -> np.ndarray:
    """An RGBA float32 picture (height, width, 4), top row first, of ``raw`` (faint) and ``smooth`` (bright)."""
    img = np.empty((height, width, 4), dtype=np.float32)
    img[:] = BACKGROUND
    pad = 4
    for frac in (0.25, 0.5, 0.75):
        img[int(pad + frac * (height - 2 * pad)), :] = GRID
    raw = np.asarray(raw, dtype=np.float64)
    finite = raw[np.isfinite(raw)]
    if finite.size == 0:
        return img
    lo, hi = float(finite.min()), float(finite.max())
    if hi - lo < 1e-12:
        lo, hi = lo - 0.5, hi + 0.5

    def to_y(v: np.ndarray) -> np.ndarray:
        return pad + (hi - v) / (hi - lo) * (height - 1 - 2 * pad)

    clean = np.where(np.isfinite(raw), raw, np.nanmean(finite))
    x, mean, extent = _columns(clean, width)
    faint = tuple(0.35 * c + 0.65 * b for c, b in zip(colour[:3], BACKGROUND[:3])) + (1.0,)
    if isinstance(extent, tuple):  # binned: draw the min..max band
        top, bottom = to_y(extent[1]), to_y(extent[0])
        for xi, a, b in zip(x.astype(int), np.rint(top).astype(int), np.rint(bottom).astype(int)):
            img[a:b + 1, xi] = faint
    else:
        polyline(img, x, to_y(mean), faint)
    line = mean if smooth is None else _columns(np.where(np.isfinite(smooth), smooth, np.nan), width)[1]
    polyline(img, x, to_y(np.asarray(line, dtype=np.float64)), colour)
    return img


# --------------------------------------------------------------------------- preview icon
def _collection():
    global _previews
    if _previews is None:
        import bpy.utils.previews

        _previews = bpy.utils.previews.new()
    return _previews


def update(key: str, history: Any, metric: str = 'RETURN', *, force: bool = False, now: float | None = None) -> bool:
    """Redraw the curve for ``key`` (a scene name) unless it was drawn less than THROTTLE_S ago; True if drawn."""
    now = time.monotonic() if now is None else now
    state = _state.setdefault(key, {"t": -1e9})
    if not force and now - state["t"] < THROTTLE_S and state.get("metric") == metric:
        return False
    raw, smooth = series(history, metric)
    img = rasterise(raw, smooth, colour=COLOURS.get(metric, COLOURS['RETURN']))
    state.update(t=now, metric=metric, pixels=img, count=int(raw.size), summary=summary(history, metric))
    # A fresh preview (new icon id) per redraw: the UI is sure to show the new pixels, whereas an
    # edited preview may keep showing its cached icon texture.
    collection = _collection()
    if key in collection:
        del collection[key]
    preview = collection.new(key)
    preview.image_size = (WIDTH, HEIGHT)
    preview.image_pixels_float.foreach_set(np.ascontiguousarray(img[::-1]).ravel())
    state["icon_id"] = preview.icon_id
    return True


def pixels(key: str) -> np.ndarray | None:
    """The last picture drawn for ``key`` (top row first), for tests."""
    return _state.get(key, {}).get("pixels")


def info(key: str) -> dict[str, Any]:
    return _state.get(key, {})


def forget(key: str) -> None:
    _state.pop(key, None)


def forget_all() -> None:
    _state.clear()


def draw(layout, key: str, settings) -> None:
    """The curve block of the panel: metric switch, picture (or a hint), one line of numbers."""
    layout.row().prop(settings, "curve", expand=True)
    state = _state.get(key)
    if not state:
        layout.label(text="The curve appears when training starts", icon='GRAPH')
        return
    if state.get("metric") != settings.curve and "history" in state:
        update(key, state["history"], settings.curve, force=True)
    icon_id = state.get("icon_id", 0)
    if icon_id:
        layout.template_icon(icon_value=icon_id, scale=8.0)
    layout.label(text=state.get("summary", ""))


def remember_history(key: str, history: Any) -> None:
    """Keep the run's history so switching the metric redraws after the run ended."""
    _state.setdefault(key, {"t": -1e9})["history"] = history


def unregister() -> None:
    global _previews
    if _previews is not None:
        import bpy.utils.previews

        bpy.utils.previews.remove(_previews)
        _previews = None
    _state.clear()
