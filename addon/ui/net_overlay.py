"""The network overlay: the training agent's network drawn over the 3D viewport with the ``gpu`` module.

A draw handler (``SpaceView3D.draw_handler_add``, POST_PIXEL): nothing is added to the scene or the
.blend, and turning it off removes the handler. The picture is ``drla_core.netview``'s drawing
(the same one ``drla show`` writes as a PNG): layers as columns of points, the strongest
connections coloured by weight (infrared), units by their activation for the current observation.
The geometry is rebuilt at most every ``REBUILD_S`` (4 Hz) while training; between rebuilds a
redraw only submits two prepared batches, so the viewport stays responsive and training is not
slowed down. Toggled from the Learning Curve panel (``drla.network_overlay``).
"""

from __future__ import annotations

import time
from typing import Any

import bpy
import gpu
import numpy as np
from mathutils import Matrix
from gpu_extras.batch import batch_for_shader

from ...drla_core.netview import network_drawing, project
from ..runs import sessions
from ..scene.camera import ensure_gpu_context

REBUILD_S = 0.25
MAX_LINES = 200  # per layer pair: large layers show their strongest connections only
BOX = (360, 220)  # overlay size in pixels (at UI scale 1), in the viewport's lower right corner
BACKDROP = (0.03, 0.03, 0.04, 0.75)

_handler: Any = None
_cache: dict[str, Any] = {"built": 0.0, "key": None, "batches": None}


def enabled() -> bool:
    return _handler is not None


def current_network(scene: Any) -> tuple[Any, Any]:
    """(network, observation) of the scene's training run, or (None, None) when there is none to show."""
    sess = sessions.get(scene) if scene is not None else None
    job = getattr(sess, "job", None)
    agent = getattr(job, "agent", None)
    network = getattr(agent, "q_network", None) or getattr(agent, "network", None)
    if network is None or not hasattr(network, "weights"):
        return None, None
    obs = getattr(job, "_obs", None)
    if obs is not None and np.size(obs) != network.weights[0].shape[0]:
        obs = None  # a vector run's batch of observations: show the weights only
    return network, obs


def _shader(name: str) -> Any:
    return gpu.shader.from_builtin(name)


def build_batches(network: Any, obs: Any, x0: float, y0: float, width: float, height: float) -> dict[str, Any]:
    """The prepared GPU batches (backdrop, lines, points) for a network drawn in the pixel box at (x0, y0)."""
    drawing = network_drawing(network, obs, max_lines=MAX_LINES)
    pts = np.concatenate([drawing.points, drawing.lines]) if len(drawing.lines) else drawing.points
    px = project(pts, int(width), int(height))
    px[:, 0] += x0
    px[:, 1] = y0 + (height - px[:, 1])  # Blender's pixel space grows upwards
    n = len(drawing.points)
    shader = _shader('SMOOTH_COLOR')
    uniform = _shader('UNIFORM_COLOR')
    corners = [(x0, y0), (x0 + width, y0), (x0 + width, y0 + height), (x0, y0 + height)]
    return {
        "shader": shader, "uniform": uniform,
        "backdrop": batch_for_shader(uniform, 'TRIS', {"pos": corners}, indices=((0, 1, 2), (0, 2, 3))),
        "lines": batch_for_shader(shader, 'LINES', {"pos": px[n:].astype(np.float32).tolist(),
                                                    "color": drawing.line_colors.tolist()}),
        "points": batch_for_shader(shader, 'POINTS', {"pos": px[:n].astype(np.float32).tolist(),
                                                      "color": drawing.point_colors.tolist()}),
        "shown": sum(drawing.shown), "total": sum(drawing.total),
    }


def draw_batches(batches: dict[str, Any]) -> None:
    """Submit the prepared batches (what each redraw costs)."""
    gpu.state.blend_set('ALPHA')
    batches["uniform"].bind()
    batches["uniform"].uniform_float("color", BACKDROP)
    batches["backdrop"].draw(batches["uniform"])
    batches["lines"].draw(batches["shader"])
    gpu.state.point_size_set(4.0)
    batches["points"].draw(batches["shader"])
    gpu.state.point_size_set(1.0)
    gpu.state.blend_set('NONE')


def _sidebar_width(context: Any) -> float:
    """How much of the viewport's right side the sidebar hides (Region Overlap on), else 0."""
    area = context.area
    if area is None or not context.preferences.system.use_region_overlap:
        return 0.0
    return float(sum(r.width for r in area.regions if r.type == 'UI' and r.width > 1))


def _draw() -> None:
    context = bpy.context
    network, obs = current_network(context.scene)
    if network is None:
        return
    region = context.region
    scale = context.preferences.system.ui_scale or 1.0
    w, h = BOX[0] * scale, BOX[1] * scale
    right = region.width - _sidebar_width(context)  # with region overlap the sidebar covers the viewport's right
    x0, y0 = max(right - w - 20 * scale, 0), 20 * scale
    key = (id(network), x0, y0, w, h)
    now = time.perf_counter()
    if _cache["batches"] is None or _cache["key"] != key or now - _cache["built"] > REBUILD_S:
        _cache.update(batches=build_batches(network, obs, x0, y0, w, h), key=key, built=now)
    draw_batches(_cache["batches"])


def render_offscreen(network: Any, obs: Any = None, width: int = 360, height: int = 220) -> tuple[np.ndarray, float]:
    """The overlay drawn headless into a ``GPUOffScreen``: (RGBA float pixels (h, w, 4), draw milliseconds).

    Needs a GPU context (headless Blender: after one render). The milliseconds are those of
    ``draw_batches`` alone, what a viewport redraw costs between rebuilds.
    """
    ensure_gpu_context()
    off = gpu.types.GPUOffScreen(width, height)
    try:
        with off.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=(0.0, 0.0, 0.0, 0.0))
            with gpu.matrix.push_pop():
                gpu.matrix.load_identity()
                proj = np.eye(4)
                proj[0, 0], proj[1, 1], proj[0, 3], proj[1, 3] = 2.0 / width, 2.0 / height, -1.0, -1.0
                gpu.matrix.load_projection_matrix(Matrix(proj.tolist()))
                batches = build_batches(network, obs, 0, 0, width, height)
                t0 = time.perf_counter()
                draw_batches(batches)
                gpu.state.active_framebuffer_get().read_color(0, 0, 1, 1, 4, 0, 'FLOAT')  # wait for the GPU
                ms = 1e3 * (time.perf_counter() - t0)
            pixels = np.array(fb.read_color(0, 0, width, height, 4, 0, 'FLOAT').to_list(), dtype=np.float32)
    finally:
        off.free()
    return pixels.reshape(height, width, 4), ms


def toggle() -> bool:
    """Turn the overlay on or off; returns whether it is on."""
    global _handler
    if _handler is None:
        _handler = bpy.types.SpaceView3D.draw_handler_add(_draw, (), 'WINDOW', 'POST_PIXEL')
    else:
        bpy.types.SpaceView3D.draw_handler_remove(_handler, 'WINDOW')
        _handler = None
        _cache.update(batches=None, key=None)
    for window in getattr(bpy.context.window_manager, "windows", []):
        for area in window.screen.areas:
            if area.type == 'VIEW_3D':
                area.tag_redraw()
    return enabled()


class DRLA_OT_network_overlay(bpy.types.Operator):
    """Show or hide the training network over the 3D viewport (units, strongest weights, activations)"""

    bl_idname = "drla.network_overlay"
    bl_label = "Network Overlay"
    bl_options = {'INTERNAL'}

    def execute(self, context):
        toggle()
        return {'FINISHED'}


classes = (DRLA_OT_network_overlay,)


def register() -> None:
    pass


def unregister() -> None:
    if _handler is not None:
        toggle()
