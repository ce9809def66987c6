"""The network overlay: the training agent's network drawn over the 3D viewport with the ``gpu`` module.

A draw handler (``SpaceView3D.draw_handler_add``, POST_PIXEL): nothing is added to the scene or the
.blend, and turning it off removes the handler. The picture is ``drla_core.nets.netview``'s drawing
(the same one ``drla show`` writes as a PNG): layers as columns of points, the strongest
connections coloured by weight (infrared), units by their activation for the current observation.

Two costs, kept apart: a *rebuild* makes the drawing (strongest connections by ``argpartition``), its
batches, and renders them once into a cached ``GPUOffScreen`` texture; a *redraw* (every time Blender
redraws the viewport) only draws that texture as one quad. Rebuilds run from a timer every ``REBUILD_S``
(4 Hz) while the overlay is on, and only when the box size or a fingerprint of the weights and the
observation changed: while training at most 4 a second, a paused or finished run never. (Not in the draw
handler: binding an offscreen framebuffer there does not give the viewport's back reliably.) So the
viewport stays responsive and training is not slowed down. Toggled from the Learning Curve panel
(``drla.network_overlay``).
"""

from __future__ import annotations

import time
from typing import Any

import bpy
import gpu
import numpy as np
from mathutils import Matrix
from gpu_extras.batch import batch_for_shader

from ...drla_core.nets.netview import network_drawing, project
from ..runs import sessions
from ..scene.camera import ensure_gpu_context

REBUILD_S = 0.25
MAX_LINES = 200  # per layer pair: large layers show their strongest connections only
BOX = (360, 220)  # overlay size in pixels (at UI scale 1), in the viewport's lower right corner
BACKDROP = (0.03, 0.03, 0.04, 0.75)

_handler: Any = None


class OverlayCache:
    """The overlay rendered once into an offscreen texture (``rebuild``) and drawn from it (``draw``)."""

    def __init__(self) -> None:
        self.offscreen: Any = None
        self.size: tuple[int, int] = (0, 0)
        self.fingerprint: Any = None
        self.built = -float("inf")
        self.quad: Any = None
        self.quad_at: tuple[float, float] | None = None
        self.shown = self.total = 0

    def free(self) -> None:
        if self.offscreen is not None:
            self.offscreen.free()
        self.__init__()  # type: ignore[misc]

    def stale(self, fingerprint: Any, size: tuple[int, int], now: float) -> bool:
        """Whether to rebuild: no picture yet, another size, or new weights/observation (checked at 4 Hz)."""
        if self.offscreen is None or size != self.size:
            return True
        return now - self.built >= REBUILD_S and fingerprint != self.fingerprint

    def rebuild(self, network: Any, obs: Any, width: int, height: int, fingerprint: Any = None) -> None:
        """Draw the network into the cached texture (``width`` x ``height`` pixels)."""
        self.built = time.perf_counter()  # (the start: the 4 Hz timer then finds the next rebuild due on time)
        if self.offscreen is None or self.size != (width, height):
            if self.offscreen is not None:
                self.offscreen.free()
            self.offscreen = gpu.types.GPUOffScreen(width, height)
            self.size = (width, height)
        batches = build_batches(network, obs, 0, 0, width, height)
        with self.offscreen.bind():
            gpu.state.active_framebuffer_get().clear(color=(0.0, 0.0, 0.0, 0.0))
            with gpu.matrix.push_pop():
                _pixel_projection(width, height)
                draw_batches(batches)  # into a transparent texture: colours premultiplied by alpha
        self.fingerprint = fingerprint
        self.shown, self.total = batches["shown"], batches["total"]

    def draw(self, x0: float, y0: float) -> None:
        """One redraw: the cached picture as one textured quad at (x0, y0), composited as the batches were."""
        shader = _shader('IMAGE')
        if self.quad is None or self.quad_at != (x0, y0):
            w, h = self.size
            self.quad = batch_for_shader(shader, 'TRI_FAN', {
                "pos": ((x0, y0), (x0 + w, y0), (x0 + w, y0 + h), (x0, y0 + h)),
                "texCoord": ((0, 0), (1, 0), (1, 1), (0, 1))})
            self.quad_at = (x0, y0)
        gpu.state.blend_set('ALPHA_PREMULT')
        shader.bind()
        shader.uniform_sampler("image", self.offscreen.texture_color)
        self.quad.draw(shader)
        gpu.state.blend_set('NONE')


_cache = OverlayCache()


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


def fingerprint(network: Any, obs: Any) -> tuple[Any, ...]:
    """What the picture depends on, cheaply compared: the network object, its weights and biases, the
    observation (bytes: a few hundred KB for a 2x256 network, hashed only when a rebuild is due)."""
    parts = [np.ascontiguousarray(a).tobytes() for a in (*network.weights, *getattr(network, "biases", ()))]
    return (id(network), hash(b"".join(parts)), None if obs is None else np.asarray(obs, np.float32).tobytes())


def _shader(name: str) -> Any:
    return gpu.shader.from_builtin(name)


def _pixel_projection(width: float, height: float) -> None:
    """Matrices for drawing in pixels of a ``width`` x ``height`` framebuffer (origin lower left)."""
    gpu.matrix.load_identity()
    proj = np.eye(4)
    proj[0, 0], proj[1, 1], proj[0, 3], proj[1, 3] = 2.0 / width, 2.0 / height, -1.0, -1.0
    gpu.matrix.load_projection_matrix(Matrix(proj.tolist()))


def build_batches(network: Any, obs: Any, x0: float, y0: float, width: float, height: float) -> dict[str, Any]:
    """The GPU batches (backdrop, lines, points) for a network drawn in the pixel box at (x0, y0)."""
    drawing = network_drawing(network, obs, max_lines=MAX_LINES)
    pts = np.concatenate([drawing.points, drawing.lines]) if len(drawing.lines) else drawing.points
    px = project(pts, int(width), int(height))
    px[:, 0] += x0
    px[:, 1] = y0 + (height - px[:, 1])  # Blender's pixel space grows upwards
    px = px.astype(np.float32)
    n = len(drawing.points)
    shader = _shader('SMOOTH_COLOR')
    points = _shader('POINT_FLAT_COLOR')
    uniform = _shader('UNIFORM_COLOR')
    corners = [(x0, y0), (x0 + width, y0), (x0 + width, y0 + height), (x0, y0 + height)]
    return {
        "shader": shader, "uniform": uniform, "point_shader": points,
        "backdrop": batch_for_shader(uniform, 'TRIS', {"pos": corners}, indices=((0, 1, 2), (0, 2, 3))),
        "lines": batch_for_shader(shader, 'LINES', {"pos": px[n:], "color": drawing.line_colors}),
        "points": batch_for_shader(points, 'POINTS', {"pos": px[:n], "color": drawing.point_colors}),
        "shown": sum(drawing.shown), "total": sum(drawing.total),
    }


def draw_batches(batches: dict[str, Any]) -> None:
    """Submit the batches (what a rebuild renders into the cached texture)."""
    gpu.state.blend_set('ALPHA')
    batches["uniform"].bind()
    batches["uniform"].uniform_float("color", BACKDROP)
    batches["backdrop"].draw(batches["uniform"])
    batches["lines"].draw(batches["shader"])
    gpu.state.point_size_set(4.0)
    batches["points"].draw(batches["point_shader"])
    gpu.state.point_size_set(1.0)
    gpu.state.blend_set('NONE')


def _sidebar_width(context: Any) -> float:
    """How much of the viewport's right side the sidebar hides (Region Overlap on), else 0."""
    area = context.area
    if area is None or not context.preferences.system.use_region_overlap:
        return 0.0
    return float(sum(r.width for r in area.regions if r.type == 'UI' and r.width > 1))


def _box(context: Any) -> tuple[int, int, float]:
    """The overlay's size in pixels and the UI scale."""
    scale = context.preferences.system.ui_scale or 1.0
    return int(BOX[0] * scale), int(BOX[1] * scale), scale


def _draw() -> None:
    """The draw handler: the cached picture, if there is one, in the viewport's lower right corner."""
    context = bpy.context
    if _cache.offscreen is None or current_network(context.scene)[0] is None:
        return
    w, h, scale = _box(context)
    right = context.region.width - _sidebar_width(context)  # region overlap: the sidebar covers the right
    _cache.draw(max(right - w - 20 * scale, 0), 20 * scale)


def _refresh() -> float | None:
    """The timer: rebuild the cached picture when the network, its observation or the box changed; redraw the
    viewports when it did. Returns the next interval (None, which ends the timer, once the overlay is off)."""
    if _handler is None:
        return None
    try:
        context = bpy.context
        network, obs = current_network(context.scene)
        if network is None:
            if _cache.offscreen is not None:
                _cache.free()
                _tag_viewports()
            return REBUILD_S
        w, h, _ = _box(context)
        key = fingerprint(network, obs)
        if _cache.stale(key, (w, h), time.perf_counter()):
            _cache.rebuild(network, obs, w, h, key)
            _tag_viewports()
    except Exception as exc:  # a timer that raises is dropped silently: say why and keep going
        print(f"DRLA network overlay: {exc}")
    return REBUILD_S


def _tag_viewports() -> None:
    for window in getattr(bpy.context.window_manager, "windows", []):
        for area in window.screen.areas:
            if area.type == 'VIEW_3D':
                area.tag_redraw()


def _sync(fb: Any = None) -> None:
    """Wait for the GPU (llvmpipe: for the drawing itself) by reading one pixel of ``fb`` (the one drawn into)."""
    (fb or gpu.state.active_framebuffer_get()).read_color(0, 0, 1, 1, 4, 0, 'FLOAT')


def render_offscreen(network: Any, obs: Any = None, width: int = 360, height: int = 220) -> tuple[np.ndarray, float]:
    """The overlay drawn headless into a ``GPUOffScreen``: (RGBA float pixels (h, w, 4), redraw milliseconds).

    Needs a GPU context (headless Blender: after one render). The milliseconds are those of one redraw
    (the cached picture drawn, and the GPU waited for), what the viewport pays between rebuilds.
    """
    ensure_gpu_context()
    cache = OverlayCache()
    off = gpu.types.GPUOffScreen(width, height)
    try:
        cache.rebuild(network, obs, width, height)
        with off.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=(0.0, 0.0, 0.0, 0.0))
            with gpu.matrix.push_pop():
                _pixel_projection(width, height)
                _sync(fb)
                t0 = time.perf_counter()
                cache.draw(0, 0)
                _sync(fb)
                ms = 1e3 * (time.perf_counter() - t0)
            pixels = np.array(fb.read_color(0, 0, width, height, 4, 0, 'FLOAT').to_list(), dtype=np.float32)
    finally:
        off.free()
        cache.free()
    return pixels.reshape(height, width, 4), ms


def overlay_timings(network: Any, obs: Any = None, width: int = 360, height: int = 220,
                    repeats: int = 20) -> dict[str, float]:
    """Median milliseconds, headless (llvmpipe where there is no GPU, so drawing costs CPU time):
    ``draw_ms``: one redraw, the cached picture drawn and the GPU waited for; ``draw_submit_ms``: the same
    without waiting (the main thread's share where a GPU draws); ``rebuild_ms``: one rebuild (drawing,
    batches, rendered into the cached texture, waited for); ``batches_draw_ms``: for comparison, the batches
    themselves drawn and waited for (what every redraw cost before the texture cache)."""
    import statistics

    ensure_gpu_context()
    cache = OverlayCache()
    off = gpu.types.GPUOffScreen(width, height)
    times: dict[str, list[float]] = {"draw_ms": [], "draw_submit_ms": [], "rebuild_ms": [], "batches_draw_ms": []}
    try:
        for _ in range(repeats):
            t0 = time.perf_counter()
            cache.rebuild(network, obs, width, height)
            with cache.offscreen.bind():
                _sync()
            times["rebuild_ms"].append(1e3 * (time.perf_counter() - t0))
        batches = build_batches(network, obs, 0, 0, width, height)
        with off.bind():
            fb = gpu.state.active_framebuffer_get()
            with gpu.matrix.push_pop():
                _pixel_projection(width, height)
                for name, draw, wait in (("draw_ms", lambda: cache.draw(0, 0), True),
                                         ("draw_submit_ms", lambda: cache.draw(0, 0), False),
                                         ("batches_draw_ms", lambda: draw_batches(batches), True)):
                    draw()
                    for _ in range(repeats):
                        _sync(fb)
                        t0 = time.perf_counter()
                        draw()
                        if wait:
                            _sync(fb)
                        times[name].append(1e3 * (time.perf_counter() - t0))
                _sync(fb)
    finally:
        off.free()
        cache.free()
    return {k: statistics.median(v) for k, v in times.items()}


def toggle() -> bool:
    """Turn the overlay on or off; returns whether it is on."""
    global _handler
    if _handler is None:
        _handler = bpy.types.SpaceView3D.draw_handler_add(_draw, (), 'WINDOW', 'POST_PIXEL')
        if not bpy.app.timers.is_registered(_refresh):
            bpy.app.timers.register(_refresh, first_interval=0.0, persistent=True)  # across file loads
    else:
        bpy.types.SpaceView3D.draw_handler_remove(_handler, 'WINDOW')
        _handler = None
        if bpy.app.timers.is_registered(_refresh):
            bpy.app.timers.unregister(_refresh)
        _cache.free()
    _tag_viewports()
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
