"""The learning curve drawn in the sidebar while training.

The curve is rasterised with numpy (``drla_core.io.plot``'s line and 5x7 font helpers: no
matplotlib, no GPU drawing) into the pixels of an icon preview from ``bpy.utils.previews``,
drawn with ``layout.template_icon``. A preview is not a datablock, so nothing is written into
the user's .blend. Updates are throttled (4 Hz).

Blender draws a preview icon into a square, so the picture is a square as wide as the sidebar
(its region's real width, rendered pixel for pixel at the UI scale): the metric's name on top,
the curve with its minimum and maximum on the y axis, and the steps (or episodes, or updates)
on the x axis.

The tabs above the picture are the curves that apply to the run's agent kind (``tabs``): epsilon only for
DQN, SAC's entropy temperature (alpha) in its place, none for PPO unless its history records an
exploration figure; a Learned IK run has its tip error only, an evolution run its best and mean fitness.
"""

from __future__ import annotations

import time
from typing import Any

import bpy.utils.previews
import numpy as np

from ...drla_core.io.plot import GLYPH_H, draw_text, moving_average, polyline, text_width
from ...drla_core.rl.train import METRIC_WORDS, ONCE_PER_EPISODE
from ..runs import sessions
from .wrap import label_wrapped

SIZE = 240  # the picture's side in pixels until a sidebar asks for its own
WIDTH, HEIGHT = SIZE, SIZE
THROTTLE_S = 0.25
RECENT_S = 10.0  # a picture size no sidebar drew for this long is no longer kept up to date
#: Blender keeps this many pixels free around a preview inside its icon button (``PREVIEW_PAD``).
PREVIEW_PAD = 4
#: Pixels of the sidebar's width the picture's button leaves free (tabs and panel margins), at UI
#: scale 1 (Blender 5.2: a 292 px sidebar lays out 239 px; a wider button would be squeezed).
SIDEBAR_MARGIN_PX = 56
BACKGROUND = (0.09, 0.09, 0.10, 1.0)
GRID = (0.22, 0.22, 0.24, 1.0)
FRAME = (0.30, 0.30, 0.33, 1.0)
TEXT = (0.86, 0.86, 0.88, 1.0)
MUTED = (0.58, 0.58, 0.62, 1.0)
COLOURS = {
    'RETURN': (0.35, 0.75, 1.0, 1.0),
    'LOSS': (1.0, 0.55, 0.25, 1.0),
    'EPSILON': (0.65, 0.9, 0.35, 1.0),
    'METRIC': (1.0, 0.85, 0.3, 1.0),
}

#: Which curves (the scene setting ``curve``'s items) each agent kind's runs record, and their tab's words:
#: ``(curve, tab text)``. A kind not named here (a new one) gets ``DEFAULT_TABS``.
DEFAULT_TABS = (('RETURN', "Return"), ('LOSS', "Loss"), ('EPSILON', "Epsilon"), ('METRIC', "Task"))
KIND_TABS: dict[str, tuple[tuple[str, str], ...]] = {
    "dqn": DEFAULT_TABS,
    "team": DEFAULT_TABS,
    "sac": (('RETURN', "Return"), ('LOSS', "Loss"), ('EPSILON', "Alpha"), ('METRIC', "Task")),
    "ppo": (('RETURN', "Return"), ('LOSS', "Loss"), ('METRIC', "Task")),
    "ik": (('LOSS', "Tip Error"),),
    "evolution": (('RETURN', "Best"), ('LOSS', "Mean")),
    "coevolution": (('RETURN', "Return"), ('LOSS', "Loss")),
}
#: The EPSILON curve's picture title by what the run records there (an agent's ``exploration_label``).
EXPLORATION_TITLES = {"": "Epsilon (random actions)", "epsilon": "Epsilon (random actions)",
                      "temperature": "Temperature (alpha)", "entropy": "Policy entropy"}
#: The exploration figure each kind records in ``History.epsilons`` (where the agent names none itself).
KIND_EXPLORATION = {"sac": "temperature"}

_previews: Any = None
_state: dict[str, dict[str, Any]] = {}


# --------------------------------------------------------------------------- data
def _field(history: Any, name: str) -> list:
    if history is None:
        return []
    value = history.get(name, []) if isinstance(history, dict) else getattr(history, name, [])
    return list(value) if value is not None else []


def _metric_name(history: Any) -> str:
    name = history.get("task_metric") if isinstance(history, dict) else getattr(history, "task_metric", None)
    return name if isinstance(name, str) else ""


def _metric_counts(history: Any) -> bool:
    """True when the task metric is better read as a count per episode (hits) than as a rate."""
    name = _metric_name(history)
    sums, returns = _field(history, "episode_metric_sums"), _field(history, "episode_returns")
    return bool(name) and name not in ONCE_PER_EPISODE and len(sums) == len(returns) and len(sums) > 0


def series(history: Any, metric: str) -> tuple[np.ndarray, np.ndarray | None]:
    """``(raw values, smoothed values or None)`` of ``metric`` from a training history."""
    if metric == 'RETURN':
        raw = np.asarray(_field(history, "episode_returns"), dtype=np.float64)
    elif metric == 'LOSS':
        raw = np.asarray([v for v in _field(history, "losses") if v is not None], dtype=np.float64)
    elif metric == 'EPSILON':
        raw = np.asarray(_field(history, "epsilons"), dtype=np.float64)
        return raw, None
    elif _metric_counts(history):  # hits per episode: one lucky shot is not a 100 % rate
        raw = np.asarray(_field(history, "episode_metric_sums"), dtype=np.float64)
    else:
        raw = np.asarray([np.nan if v is None else v for v in _field(history, "episode_metrics")], dtype=np.float64)
    return raw, moving_average(raw, max(1, len(raw) // 20))  # trailing: the live end must not lag


def x_values(history: Any, metric: str, n: int) -> tuple[np.ndarray, str]:
    """Where the ``n`` values of ``metric`` lie on the x axis, and the axis' name: the training step
    each episode ended (or each update happened) at when the history says, else their count."""
    steps = _field(history, "loss_steps" if metric == 'LOSS' else "episode_end_steps")
    if len(steps) == n and n:
        try:
            x = np.asarray(steps, dtype=np.float64)
        except (TypeError, ValueError):
            x = None
        if x is not None and x.ndim == 1 and np.all(np.isfinite(x)):
            return x, _own_words(history, "x_label") or "steps"
    return np.arange(1, n + 1, dtype=np.float64), ("updates" if metric == 'LOSS' else "episodes")


def _own_words(history: Any, key: str, metric: str = "") -> str:
    """A history's own name for a curve or its x axis (``curve_titles[metric]``, ``x_label``): a job
    whose numbers are not per episode (generations of an evolution run) says what they are."""
    value = history.get(key) if isinstance(history, dict) else getattr(history, key, None)
    if metric:
        value = value.get(metric) if isinstance(value, dict) else None
    return value if isinstance(value, str) else ""


def _records_exploration(history: Any) -> bool:
    """Whether ``history`` holds an exploration figure other than zero (PPO explores by sampling: it records 0)."""
    values = np.asarray([v for v in _field(history, "epsilons") if v is not None], dtype=np.float64)
    return bool(values.size and np.any(np.isfinite(values) & (values != 0)))


def exploration_of(kind: str, history: Any = None, agent_label: str = "") -> str:
    """What a run's EPSILON curve holds: the agent's own ``exploration_label``, the history's, or the kind's."""
    return agent_label or _own_words(history, "exploration_label") or KIND_EXPLORATION.get(kind, "")


def tabs(kind: str, history: Any = None, exploration: str = "") -> list[tuple[str, str]]:
    """The curve tabs ``(curve, text)`` for a run of agent kind ``kind`` (``kinds.AgentKind.name``): only the
    curves it records. A PPO run gets an exploration tab only when ``history`` records one (``exploration``:
    what it is, e.g. "entropy"); a coevolution run's tabs are named after its two sides."""
    out = list(KIND_TABS.get(kind, DEFAULT_TABS))
    if kind == "ppo" and _records_exploration(history):
        out.insert(2, ('EPSILON', (exploration or "Exploration").capitalize()))
    if kind == "coevolution":  # "pacman: best fitness per generation": the side's name
        for i, (curve, _text) in enumerate(out):
            side = _own_words(history, "curve_titles", curve).split(":", 1)
            if len(side) == 2 and side[0].strip():
                out[i] = (curve, side[0].strip().capitalize())
    return out


def shown_curve(chosen: str, tab_list: list[tuple[str, str]]) -> str:
    """The curve the panel shows: the person's choice where it applies to the run, else its first tab."""
    ids = [curve for curve, _ in tab_list]
    return chosen if chosen in ids or not ids else ids[0]


def title(history: Any, metric: str, exploration: str = "") -> str:
    """The metric's name as the picture's title (``exploration``: what the EPSILON curve holds)."""
    own = _own_words(history, "curve_titles", metric)
    if own:
        return own
    if metric == 'RETURN':
        return "Return per episode"
    if metric == 'LOSS':
        name = history.get("loss_name") if isinstance(history, dict) else None
        return name if isinstance(name, str) and name else "Loss per update"
    if metric == 'EPSILON':
        what = exploration or _own_words(history, "exploration_label")
        return EXPLORATION_TITLES.get(what, what.capitalize())
    name = _metric_name(history)
    if not name:
        return "Task metric"
    (_, ones), _ = METRIC_WORDS.get(name, ((name, name), ("", "")))
    return f"{ones.capitalize()} per episode" if _metric_counts(history) else f"{name.capitalize()} rate"


def summary(history: Any, metric: str) -> str:
    raw, _ = series(history, metric)
    raw = raw[np.isfinite(raw)]
    if raw.size == 0:
        return "no data yet" if metric != 'METRIC' or _metric_name(history) else "this task has no metric"
    prefix = f"{_metric_name(history)}: " if metric == 'METRIC' and not _metric_counts(history) else ""
    return f"{prefix}last {raw[-1]:.3g}   min {raw.min():.3g}   max {raw.max():.3g}"


def short_number(v: float) -> str:
    """A tick label of at most about 5 characters: ``-17``, ``0.052``, ``11.6k``, ``2M``."""
    a = abs(v)
    if a >= 1e6:
        text = f"{v / 1e6:.3g}M"
    elif a >= 1e4:
        text = f"{v / 1e3:.3g}k"
    elif a >= 100 or float(v).is_integer():
        text = f"{v:.0f}"
    elif a >= 0.01:
        text = f"{v:.3g}"
    else:
        text = f"{v:.1e}".replace("e-0", "e-")
    return text


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


def _faint(colour) -> tuple:
    return tuple(0.35 * c + 0.65 * b for c, b in zip(colour[:3], BACKGROUND[:3])) + (1.0,)


def rasterise(raw: np.ndarray, smooth: np.ndarray | None = None, *, width: int = WIDTH, height: int = HEIGHT,
              colour=(0.35, 0.75, 1.0, 1.0)) -> np.ndarray:
    """An RGBA float32 picture (height, width, 4), top row first, of ``raw`` (faint) and ``smooth`` (bright),
    filling the whole picture (no axes)."""
    img = np.empty((height, width, 4), dtype=np.float32)
    img[:] = BACKGROUND
    pad = 4
    for frac in (0.25, 0.5, 0.75):
        img[int(pad + frac * (height - 2 * pad)), :] = GRID
    _plot(img, np.arange(len(raw), dtype=np.float64), np.asarray(raw, dtype=np.float64), smooth,
          (0, pad, width, height - pad), colour)
    return img


def _plot(img: np.ndarray, x: np.ndarray, raw: np.ndarray, smooth: np.ndarray | None,
          box: tuple[int, int, int, int], colour, y_range: tuple[float, float] | None = None,
          x_range: tuple[float, float] | None = None, line_width: int = 1) -> None:
    """Draw ``raw`` (faint; a min..max band where many values share a pixel column) and ``smooth``
    (bright) against ``x`` inside ``box`` = (x0, y0, x1, y1), pixels, y down."""
    x0, y0, x1, y1 = box
    finite = raw[np.isfinite(raw)]
    if finite.size == 0 or x1 - x0 < 2 or y1 - y0 < 2:
        return
    lo, hi = y_range if y_range is not None else _value_range(finite)
    xmin, xmax = x_range if x_range is not None else (float(x.min()), float(x.max()))
    span = (xmax - xmin) or 1.0

    def to_px(xv: np.ndarray) -> np.ndarray:
        if x_range is None and len(xv) < 2:
            return np.full(len(xv), (x0 + x1) / 2)
        return x0 + (xv - xmin) / span * (x1 - 1 - x0)

    def to_py(v: np.ndarray) -> np.ndarray:
        return y0 + (hi - v) / (hi - lo) * (y1 - 1 - y0)

    px = to_px(x)
    clean = np.where(np.isfinite(raw), raw, np.nan)
    col = np.clip(np.rint(px).astype(int), x0, x1 - 1)
    faint = _faint(colour)
    clip = (x0, y0, x1, y1)
    if len(raw) > (x1 - x0):  # many values per column: the band of each column's min..max
        ok = np.isfinite(clean)
        top = np.full(img.shape[1], np.inf)
        bottom = np.full(img.shape[1], -np.inf)
        np.minimum.at(top, col[ok], to_py(clean[ok]))
        np.maximum.at(bottom, col[ok], to_py(clean[ok]))
        for c in np.nonzero(np.isfinite(top))[0]:
            img[int(np.rint(top[c])):int(np.rint(bottom[c])) + 1, c] = faint
    else:
        polyline(img, px, to_py(clean), faint, clip=clip)
    if smooth is not None:
        line = np.asarray(smooth, dtype=np.float64)
        if len(line) > (x1 - x0):  # one point per column: the mean of the column
            ok = np.isfinite(line)
            sums, counts = np.zeros(img.shape[1]), np.zeros(img.shape[1])
            np.add.at(sums, col[ok], line[ok])
            np.add.at(counts, col[ok], 1)
            keep = counts > 0
            polyline(img, np.nonzero(keep)[0].astype(float), to_py(sums[keep] / counts[keep]), colour,
                     line_width, clip)
        else:
            polyline(img, px, to_py(line), colour, line_width, clip)
    elif len(raw) <= (x1 - x0):
        polyline(img, px, to_py(clean), colour, line_width, clip)


def _value_range(finite: np.ndarray) -> tuple[float, float]:
    lo, hi = float(finite.min()), float(finite.max())
    if hi - lo < 1e-12:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def render(history: Any, metric: str = 'RETURN', size: int = SIZE, scale: int = 1,
           exploration: str = "") -> np.ndarray:
    """The sidebar's picture: a ``size`` x ``size`` RGBA float32 array, top row first.

    The metric's name on top; the curve (faint: every value, bright: the moving average) with its
    minimum and maximum on the y axis; the x axis from 0 to the last step (or episode, or update)
    and its name. ``scale`` is the font's pixel size (2 at a UI scale of 2).
    """
    size, s = int(size), max(1, int(scale))
    img = np.empty((size, size, 4), dtype=np.float32)
    img[:] = BACKGROUND
    colour = COLOURS.get(metric, COLOURS['RETURN'])
    raw, smooth = series(history, metric)
    x, x_label = x_values(history, metric, len(raw))
    pad, line_h = 4 * s, GLYPH_H * s
    draw_text(img, pad, pad, title(history, metric, exploration), TEXT, s)
    finite = raw[np.isfinite(raw)]
    top, bottom, right = pad + line_h + 7 * s, size - pad - 2 * line_h - 2 * s, size - pad
    if finite.size == 0:
        empty = "this task has no metric" if metric == 'METRIC' and not _metric_name(history) else "no data yet"
        draw_text(img, size // 2, (top + bottom) // 2, empty, MUTED, s, anchor="center")
        return img
    lo, hi = _value_range(finite)
    hi_text, lo_text = short_number(hi), short_number(lo)
    left = pad + max(text_width(hi_text, s), text_width(lo_text, s)) + 4 * s
    if right - left < 20 or bottom - top < 20:  # too small for axes: the bare curve
        _plot(img, x, raw, smooth, (0, top, size, size), colour)
        return img
    # the frame, the min / max lines and zero, and their labels
    img[top:bottom + 1, left - 1] = FRAME
    img[bottom + 1, left - 1:right] = FRAME
    img[top, left:right] = GRID
    img[bottom, left:right] = GRID
    if lo < 0 < hi:
        y_zero = int(round(top + hi / (hi - lo) * (bottom - top)))
        img[y_zero, left:right] = GRID
        if min(y_zero - top, bottom - y_zero) > line_h * 1.5:  # a "0" that does not crowd min or max
            draw_text(img, left - 3 * s, y_zero - line_h // 3, "0", MUTED, s, anchor="right")
    draw_text(img, left - 3 * s, top - line_h // 3, hi_text, MUTED, s, anchor="right")
    draw_text(img, left - 3 * s, bottom - line_h // 2, lo_text, MUTED, s, anchor="right")
    x_first = 0.0 if x_label == "steps" else 1.0
    x_last = max(float(x.max()), x_first + 1.0)
    _plot(img, x, raw, smooth, (left, top, right, bottom + 1), colour, (lo, hi), (x_first, x_last), s)
    x_text_y = bottom + 3 * s
    draw_text(img, left, x_text_y, short_number(x_first), MUTED, s)
    draw_text(img, right, x_text_y, short_number(x_last), MUTED, s, anchor="right")
    draw_text(img, (left + right) // 2, x_text_y + line_h + s, x_label, MUTED, s, anchor="center")
    return img


# --------------------------------------------------------------------------- preview icon
def _collection():
    global _previews
    if _previews is None:
        _previews = bpy.utils.previews.new()
    return _previews


def picture_size(context) -> tuple[int, int, float]:
    """``(pixels, font scale, icon scale)`` of the picture for the sidebar drawn in ``context``: as
    wide as the region leaves room for, rendered pixel for pixel at the UI scale."""
    prefs = getattr(context, "preferences", None)
    ui = float(getattr(getattr(prefs, "system", None), "ui_scale", 0.0) or 0.0) or 1.0
    region = getattr(context, "region", None)
    width = getattr(region, "width", 0) or 0
    button = int(width - SIDEBAR_MARGIN_PX * ui) if width else int(SIZE * ui) + 2 * PREVIEW_PAD
    button = max(int(96 * ui), min(button, int(1024 * ui)))
    unit = 20.0 * ui  # UI_UNIT_X: the icon button is icon_scale units wide and high
    # Blender draws the preview into the button less PREVIEW_PAD on each side: a picture of exactly
    # that size is shown pixel for pixel (sharp text)
    return button - 2 * PREVIEW_PAD, max(1, int(round(ui))), button / unit


def _draw_picture(key: str, state: dict[str, Any], size: int, scale: int) -> None:
    """Render ``state``'s history at ``size`` into its own preview (a fresh icon id: the UI is sure to
    show the new pixels, whereas an edited preview may keep showing its cached icon texture)."""
    img = render(state.get("history"), state.get("metric", 'RETURN'), size, scale, state.get("exploration", ""))
    pictures = state.setdefault("pictures", {})
    used = pictures.get((size, scale), {}).get("used", time.monotonic())
    pictures[(size, scale)] = {"version": state.get("version", 0), "pixels": img, "used": used}
    state["pixels"] = img
    try:
        collection = _collection()
    except Exception:  # no previews (a stripped-down Blender): the numbers still show
        return
    name = f"{key}@{size}x{scale}"
    if name in collection:
        del collection[name]
    preview = collection.new(name)
    preview.image_size = (size, size)
    preview.image_pixels_float.foreach_set(np.ascontiguousarray(img[::-1]).ravel())
    pictures[(size, scale)]["icon_id"] = preview.icon_id
    state["icon_id"] = preview.icon_id


def update(key: str, history: Any, metric: str = 'RETURN', *, force: bool = False, now: float | None = None) -> bool:
    """Redraw the curve for ``key`` (a scene name) unless it was drawn less than THROTTLE_S ago; True if drawn."""
    now = time.monotonic() if now is None else now
    state = _state.setdefault(key, {"t": -1e9})
    if not force and now - state["t"] < THROTTLE_S and state.get("metric") == metric:
        return False
    raw, _ = series(history, metric)
    state.update(t=now, metric=metric, history=history, count=int(raw.size), summary=summary(history, metric),
                 title=title(history, metric, state.get("exploration", "")), version=state.get("version", 0) + 1)
    old = state.get("pictures", {})
    recent = [size for size, p in old.items() if now - p.get("used", now) < RECENT_S] or [(SIZE, 1)]
    for size in set(old) - set(recent):  # a sidebar that was resized or closed
        _drop_preview(f"{key}@{size[0]}x{size[1]}")
    state["pictures"] = {size: {"used": old.get(size, {}).get("used", now)} for size in recent}
    for size, scale in recent:  # every sidebar that shows the curve gets its new picture now
        _draw_picture(key, state, size, scale)
    return True


def pixels(key: str) -> np.ndarray | None:
    """The last picture drawn for ``key`` (top row first), for tests."""
    return _state.get(key, {}).get("pixels")


def info(key: str) -> dict[str, Any]:
    return _state.get(key, {})


def _drop_preview(name: str) -> None:
    if _previews is not None and name in _previews:
        del _previews[name]


def forget(key: str) -> None:
    for size, scale in _state.pop(key, {}).get("pictures", {}):
        _drop_preview(f"{key}@{size}x{scale}")


def forget_all() -> None:
    for key in list(_state):
        forget(key)


def curve_tabs(key: str, kind: str) -> tuple[list[tuple[str, str]], str]:
    """``(tabs, what the EPSILON curve holds)`` for the curve of ``key`` under a run of agent kind ``kind``."""
    state = _state.get(key, {})
    exploration = state.get("exploration", "") or exploration_of(kind, state.get("history"))
    return tabs(kind, state.get("history"), exploration), exploration


def draw(layout, key: str, settings, context=None, kind: str = "dqn") -> None:
    """The curve block of the panel: the tabs of the curves a ``kind`` run records, the picture (or a hint),
    one line of numbers."""
    tab_list, _ = curve_tabs(key, kind)
    metric = shown_curve(settings.curve, tab_list)
    if len(tab_list) > 1:  # (one curve: its title in the picture says what it is)
        row = layout.row(align=True)
        for curve, text in tab_list:
            row.prop_enum(settings, "curve", curve, text=text)
    if metric != settings.curve:
        _choose_later(settings, metric)
    state = _state.get(key)
    if not state:
        label_wrapped(layout, context, "The curve appears when training starts", 'GRAPH')
        return
    if state.get("metric") != metric and "history" in state:
        update(key, state["history"], metric, force=True)
    size, scale, icon_scale = picture_size(context)
    picture = state.get("pictures", {}).get((size, scale))
    if picture is None or picture.get("version") != state.get("version", 0) or "pixels" not in picture:
        _draw_picture(key, state, size, scale)
        picture = state["pictures"][(size, scale)]
    picture["used"] = time.monotonic()
    icon_id = picture.get("icon_id", 0)
    if icon_id:
        layout.template_icon(icon_value=icon_id, scale=icon_scale)
    text = state.get("summary", "")
    if text:
        label_wrapped(layout, context, text)


_pending: set[str] = set()


def _choose_later(settings, curve: str) -> None:
    """Make the shown curve the chosen one (its tab highlighted), just after this redraw: a panel cannot write
    a property while it draws. (Headless ``bpy`` never runs timers: there the choice stays as it was.)"""
    scene = getattr(settings, "id_data", None)
    name = getattr(scene, "name", None)
    if not isinstance(name, str) or name in _pending:
        return
    _pending.add(name)

    def choose() -> None:
        _pending.discard(name)
        target = bpy.data.scenes.get(name)
        drla = getattr(target, "drla", None)
        if drla is not None and drla.curve != curve:
            drla.curve = curve

    try:
        bpy.app.timers.register(choose, first_interval=0.0)
    except Exception:
        _pending.discard(name)


def remember_history(key: str, history: Any) -> None:
    """Keep the run's history so switching the metric redraws after the run ended."""
    _state.setdefault(key, {"t": -1e9})["history"] = history


def register() -> None:
    sessions.on_forget.append(forget_all)  # opening another file forgets every curve


def unregister() -> None:
    global _previews
    if forget_all in sessions.on_forget:
        sessions.on_forget.remove(forget_all)
    if _previews is not None:
        bpy.utils.previews.remove(_previews)
        _previews = None
    _state.clear()


def follow(key: str, history: Any, metric: str, running: bool, kind: str = "dqn", exploration: str = "") -> None:
    """Keep the curve of a run current: redrawn at most every THROTTLE_S while it runs, and exactly
    once more when it has stopped or finished (the panel calls this as it draws). ``metric``: the person's
    choice, shown where it applies to a ``kind`` run (``tabs``); ``exploration``: what the agent records as
    its exploration (its ``exploration_label``; '' : the kind's)."""
    remember_history(key, history)
    state = _state[key]
    state["exploration"] = exploration_of(kind, history, exploration)
    metric = shown_curve(metric, tabs(kind, history, state["exploration"]))
    if running:
        update(key, history, metric)
        return
    if state.get("metric") != metric or state.get("count") != series(history, metric)[0].size:
        update(key, history, metric, force=True)
