"""A drawing of a network as plain data: 3D points for the units, coloured segments for the connections.

Layers are columns along x; a layer's units stand in a square grid in the y-z plane (a column of
points; a layer of 256 is a 16 x 16 block). Connections are coloured by |weight| in an infrared
palette (black, red, orange, yellow, white), relative to the strongest in their layer; the sign is
the hue: negative weights take the cold palette (black, blue, cyan, white). Large layers are
summarised: only the ``max_lines`` strongest connections of each layer pair are drawn. Units are
coloured by their activation for ``obs`` (the infrared palette again), grey without one.

The same data feeds the Blender overlay (``addon/ui/net_overlay.py``, the ``gpu`` module) and
``render_png`` here (numpy only: the report and ``drla show``), so both show the same picture.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..io.plot import _apply_activation, polyline
from ..nn.graph_net import graph_levels

__all__ = ["INFRARED", "COLD", "palette", "NetDrawing", "network_drawing", "graph_drawing", "strongest", "project",
           "render_png_array"]

INFRARED = np.array([[0, 0, 0], [0.85, 0.05, 0.02], [1.0, 0.5, 0.0], [1.0, 0.92, 0.1], [1, 1, 1]], dtype=np.float32)
"""Black, red, orange, yellow, white: positive weights and activations, by magnitude."""
COLD = np.array([[0, 0, 0], [0.1, 0.15, 0.8], [0.1, 0.6, 1.0], [0.55, 0.95, 1.0], [1, 1, 1]], dtype=np.float32)
"""Black, blue, cyan, white: negative weights."""
UNIT_GREY = (0.7, 0.7, 0.72, 1.0)


def palette(t: np.ndarray, colours: np.ndarray = INFRARED) -> np.ndarray:
    """RGBA (n, 4) float32 for values ``t`` in [0, 1] (clipped), interpolated along the palette's stops."""
    t = np.clip(np.asarray(t, dtype=np.float64).ravel(), 0.0, 1.0) * (len(colours) - 1)
    i = np.minimum(t.astype(int), len(colours) - 2)
    f = (t - i)[:, None]
    rgb = colours[i] * (1 - f) + colours[i + 1] * f
    return np.concatenate([rgb, np.ones((len(rgb), 1))], axis=1).astype(np.float32)


@dataclass
class NetDrawing:
    """``points`` (N, 3) and ``point_colors`` (N, 4): the units, input layer first; ``lines`` (2M, 3) and
    ``line_colors`` (2M, 4): segment end points in pairs, weakest first (drawn last = on top: the strongest);
    ``layer_sizes``; ``shown`` / ``total`` connections per layer pair."""

    points: np.ndarray
    point_colors: np.ndarray
    lines: np.ndarray
    line_colors: np.ndarray
    layer_sizes: list[int]
    shown: list[int]
    total: list[int]


def _layer_positions(n: int, x: float, spacing: float) -> np.ndarray:
    side = math.ceil(math.sqrt(n))
    rows = math.ceil(n / side)
    k = np.arange(n)
    y = (k % side - (side - 1) / 2) * spacing
    z = (k // side - (rows - 1) / 2) * spacing
    return np.stack([np.full(n, x), y, z], axis=1).astype(np.float32)


def strongest(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``values``, smallest first: exactly ``np.argsort(values, kind="stable")[-k:]``
    (ties broken by index the same way), found with ``argpartition`` in linear time, so a 256 x 256 layer costs
    a partition and a sort of ``k`` values rather than a sort of 65536."""
    n = values.size
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if n <= k or n <= 4 * k:
        return np.argsort(values, kind="stable")[-k:]
    threshold = values[np.argpartition(values, n - k)[n - k]]  # the k-th largest value
    above = np.flatnonzero(values > threshold)
    ties = np.flatnonzero(values == threshold)  # the stable sort keeps the last of the ties
    chosen = np.concatenate([above, ties[len(ties) - (k - len(above)):]])
    chosen.sort()
    return chosen[np.argsort(values[chosen], kind="stable")]


def _step_levels(n: int, n_in: int, connections: list[tuple[int, int]]) -> list[int]:
    """A recurrent graph's columns: each node's fewest connections from an input (1 when none reaches it)."""
    succ: list[list[int]] = [[] for _ in range(n)]
    for s, d in connections:
        succ[s].append(d)
    level = [0] * n_in + [-1] * (n - n_in)
    frontier = list(range(n_in))
    while frontier:
        nxt = []
        for s in frontier:
            for d in succ[s]:
                if level[d] < 0:
                    level[d] = level[s] + 1
                    nxt.append(d)
        frontier = nxt
    return [lv if lv >= 0 else 1 for lv in level]


def graph_drawing(network: Any, obs: Any = None, max_lines: int = 300, layer_gap: float = 1.0,
                  height: float = 1.0) -> NetDrawing:
    """The drawing of a ``GraphNetwork`` (NEAT): a column per level (inputs first, the outputs last), a line per
    connection (the ``max_lines`` strongest), units coloured by their value for ``obs``."""
    n_in, n_out, n = network.input_size, network.output_size, network.n_nodes
    recurrent = bool(getattr(network, "recurrent", False))
    level = _step_levels(n, n_in, network.connections) if recurrent else graph_levels(n, n_in, network.connections)
    last = max(level[n_in:n_in + n_out] + [max(level) if n > n_in else 1])
    column = [level[i] if not n_in <= i < n_in + n_out else last for i in range(n)]
    members = [[i for i in range(n) if column[i] == c] for c in range(last + 1)]
    members = [m for m in members if m]
    sizes = [len(m) for m in members]
    widest = max(math.ceil(math.sqrt(k)) for k in sizes)
    spacing = height / max(widest - 1, 1)
    where = np.zeros((n, 3), np.float32)
    for c, m in enumerate(members):
        where[m] = _layer_positions(len(m), c * layer_gap, spacing)
    if obs is not None and recurrent:  # one step from a reset state
        network.reset()
        network.step(np.asarray(obs, dtype=np.float32).reshape(-1)[:n_in])
        values = np.asarray(network.values[0], np.float64)
        point_colors = [palette(0.15 + 0.85 * np.abs(values[m]) / (float(np.abs(values[m]).max()) or 1.0))
                        for m in members]
    elif obs is not None:
        values = np.zeros(n, np.float64)
        values[:n_in] = np.asarray(obs, dtype=np.float64).reshape(-1)[:n_in]
        incoming: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        for (s, d), w in zip(network.connections, network.weights):
            incoming[d].append((s, float(w)))
        for i in sorted(range(n_in, n), key=lambda i: level[i]):
            z = float(network.biases[i - n_in]) + sum(values[s] * w for s, w in incoming[i])
            values[i] = float(_apply_activation(network.activations[i - n_in], np.array([z]))[0])
        point_colors = [palette(0.15 + 0.85 * np.abs(values[m]) / (float(np.abs(values[m]).max()) or 1.0))
                        for m in members]
    else:
        point_colors = [np.tile(np.asarray(UNIT_GREY, np.float32), (k, 1)) for k in sizes]
    weights = np.asarray(network.weights, np.float64)
    flat = np.abs(weights)
    keep = strongest(flat, max_lines)
    pairs = np.asarray(network.connections, np.int64).reshape(-1, 2)[keep]
    strength = flat[keep] / (flat.max() if flat.size and flat.max() else 1.0)
    colour = np.where((weights[keep] >= 0)[:, None], palette(strength, INFRARED), palette(strength, COLD))
    seg = np.empty((2 * len(keep), 3), dtype=np.float32)
    seg[0::2], seg[1::2] = where[pairs[:, 0]], where[pairs[:, 1]]
    order = np.concatenate(members)
    return NetDrawing(where[order], np.concatenate(point_colors).astype(np.float32), seg,
                      np.repeat(colour, 2, axis=0).astype(np.float32), sizes, [len(keep)], [len(weights)])


def network_drawing(network: Any, obs: Any = None, max_lines: int = 300, layer_gap: float = 1.0,
                    height: float = 1.0) -> NetDrawing:
    """The drawing of an ``MLP`` (``weights[i]`` of shape (in, out)), or of a graph network (``graph_drawing``);
    ``obs`` adds the activations."""
    if hasattr(network, "connections"):
        return graph_drawing(network, obs, max_lines, layer_gap, height)
    sizes = [network.weights[0].shape[0]] + [w.shape[1] for w in network.weights]
    widest = max(math.ceil(math.sqrt(n)) for n in sizes)
    spacing = height / max(widest - 1, 1)
    layers = [_layer_positions(n, i * layer_gap, spacing) for i, n in enumerate(sizes)]
    point_colors = []
    if obs is not None:
        h = np.asarray(obs, dtype=np.float32).reshape(-1)
        acts = [h]
        for w, b, act in zip(network.weights, network.biases, network.activations):
            h = _apply_activation(act, h @ w + b)
            acts.append(h)
        for a in acts:
            scale = float(np.abs(a).max()) or 1.0
            point_colors.append(palette(0.15 + 0.85 * np.abs(a) / scale))
    else:
        point_colors = [np.tile(np.asarray(UNIT_GREY, np.float32), (n, 1)) for n in sizes]
    segs, cols, shown, total = [], [], [], []
    for i, w in enumerate(network.weights):
        flat = np.abs(w).ravel()
        total.append(flat.size)
        keep = strongest(flat, max_lines)
        shown.append(len(keep))
        src, dst = np.unravel_index(keep, w.shape)
        strength = flat[keep] / (flat.max() or 1.0)
        signs = w.ravel()[keep] >= 0
        colour = np.where(signs[:, None], palette(strength, INFRARED), palette(strength, COLD))
        seg = np.empty((2 * len(keep), 3), dtype=np.float32)
        seg[0::2], seg[1::2] = layers[i][src], layers[i + 1][dst]
        segs.append(seg)
        cols.append(np.repeat(colour, 2, axis=0))
    return NetDrawing(np.concatenate(layers), np.concatenate(point_colors).astype(np.float32),
                      np.concatenate(segs) if segs else np.zeros((0, 3), np.float32),
                      np.concatenate(cols) if cols else np.zeros((0, 4), np.float32), sizes, shown, total)


def project(points: np.ndarray, width: int, height: int, yaw: float = 0.5, pitch: float = 0.25,
            margin: float = 0.08) -> np.ndarray:
    """Pixel coordinates (n, 2) of 3D points seen from a camera turned by ``yaw`` and ``pitch`` (orthographic),
    the drawing fitted into ``width`` x ``height`` (row 0 at the top)."""
    p = np.asarray(points, dtype=np.float64)
    centre = (p.max(axis=0) + p.min(axis=0)) / 2 if len(p) else np.zeros(3)
    p = p - centre
    cy, sy, cp, sp = math.cos(yaw), math.sin(yaw), math.cos(pitch), math.sin(pitch)
    x = p[:, 0] * cy - p[:, 2] * sy  # turn about the vertical (y) axis
    depth = p[:, 0] * sy + p[:, 2] * cy
    y = p[:, 1] * cp - depth * sp  # then tilt
    span = max(float(np.ptp(x)) if len(x) else 1.0, float(np.ptp(y)) * width / height if len(y) else 1.0, 1e-9)
    scale = (1 - 2 * margin) * width / span
    return np.stack([width / 2 + x * scale, height / 2 - y * scale], axis=1)


def render_png_array(drawing: NetDrawing, width: int = 800, height: int = 500,
                     background: tuple[int, int, int] = (12, 12, 14)) -> np.ndarray:
    """The drawing rasterised with numpy: (height, width, 3) uint8, strongest connections on top."""
    img = np.empty((height, width, 3), dtype=np.uint8)
    img[...] = background
    both = project(np.concatenate([drawing.points, drawing.lines]) if len(drawing.lines) else drawing.points,
                   width, height)
    pts, segs = both[:len(drawing.points)], both[len(drawing.points):]
    line_rgb = np.rint(drawing.line_colors[0::2, :3] * 255).astype(int)
    for k in range(len(segs) // 2):
        a, b = segs[2 * k], segs[2 * k + 1]
        polyline(img, np.array([a[0], b[0]]), np.array([a[1], b[1]]), tuple(line_rgb[k]), 1)
    point_rgb = np.rint(drawing.point_colors[:, :3] * 255).astype(int)
    r = max(1, min(4, int(300 / max(drawing.layer_sizes))))
    for (x, y), c in zip(pts, point_rgb):
        xi, yi = int(round(x)), int(round(y))
        img[max(yi - r, 0):max(yi + r + 1, 0), max(xi - r, 0):max(xi + r + 1, 0)] = c
    return img
