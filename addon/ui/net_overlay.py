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
from ..runs import model_store, sessions
from ..scene.camera import ensure_gpu_context
from .wrap import wrap

REBUILD_S = 0.25
MAX_LINES = 200  # per layer pair: large layers show their strongest connections only
BOX = (360, 220)  # overlay size in pixels (at UI scale 1), in the viewport's lower right corner
BACKDROP = (0.03, 0.03, 0.04, 0.75)
GAP = 6  # pixels between two networks' boxes (a team's agents)

_handler: Any = None


# --------------------------------------------------------------------------- what the overlay shows
#: Seconds between two looks at a stored model's text (reading a large model's text costs milliseconds)
STORED_CHECK_S = 1.0
_stored: dict[str, tuple[Any, Any]] = {}  # text name -> (hash of its text, loaded Model or the error's words)
_stored_checked: dict[str, float] = {}


def network_of(holder: Any) -> Any:
    """The network of an agent (``q_network``; SAC's and PPO's: ``policy_network()``, what their model file
    holds), of a loaded model or solver (``network``), or the network itself."""
    for name in ("q_network", "network"):
        net = getattr(holder, name, None)
        if net is not None:
            return net
    if callable(getattr(holder, "policy_network", None)):
        return holder.policy_network()
    return holder if hasattr(holder, "weights") else None


def drawable(network: Any) -> bool:
    """Whether ``network`` is drawn as layers (an MLP: one (in, out) weight matrix per layer)."""
    weights = getattr(network, "weights", None)
    return isinstance(weights, (list, tuple)) and len(weights) > 0 and all(np.ndim(w) == 2 for w in weights)


def _obs_for(network: Any, obs: Any) -> Any:
    """``obs`` when it is one observation for ``network``'s input (a vector run's batch: the weights only)."""
    if obs is None or not drawable(network):
        return None
    try:
        return obs if np.size(obs) == network.weights[0].shape[0] else None
    except (TypeError, ValueError):  # a dict or image observation: the weights only
        return None


def _job_networks(job: Any) -> tuple[list[tuple[str, Any, Any]], str]:
    """The networks a training job has now: every agent of a team, both sides of a co-evolution, the
    champion of an evolution run, the IK solver's, the DQN agent's; or why there is none yet."""
    obs = getattr(job, "_obs", None)
    slots = getattr(job, "slots", None)
    if isinstance(slots, dict):  # several named agents (a Multi-Agent Trainer)
        own = obs if isinstance(obs, dict) else {}
        return [(name, network_of(slot.agent), own.get(name)) for name, slot in slots.items()], ""
    champions = getattr(job, "champions", None)
    if isinstance(champions, dict) and hasattr(job, "jobs"):  # co-evolution: each side's champion
        return [(f"{name} champion", job.jobs[name].method.genome_network(champions[name]), None)
                for name in job.names], ""
    if callable(getattr(job, "champion_network", None)):  # evolution
        if getattr(job, "champion", None) is None:
            return [], "No champion yet: the first generation is being evaluated"
        return [("champion", job.champion_network(), None)], ""
    solver = getattr(job, "solver", None)
    if solver is not None:  # Learned IK
        return [("Learned IK", network_of(solver), None)], ""
    agent = getattr(job, "agent", None)
    return ([("", network_of(agent), obs)] if agent is not None else []), ""


def _play_networks(sess: Any) -> list[tuple[str, Any, Any]]:
    obs = getattr(sess, "obs", None)
    models = getattr(sess, "models", None) or {}
    if models:
        own = obs if isinstance(obs, dict) else {}
        return [(name, network_of(m), own.get(name)) for name, m in models.items()]
    model = getattr(sess, "model", None)
    experts = getattr(model, "experts", None)
    if experts is not None:  # an Expert Switcher: each expert, the acting one named
        acting = getattr(model, "last_choice", -1)
        return [(f"expert {name}" + (" (acting)" if i == acting else ""), network_of(e), obs)
                for i, (name, e) in enumerate(zip(model.names, experts))]
    return [("", network_of(model), obs)] if model is not None else []


def _stored_model(text: Any, now: float) -> Any:
    """The model in a stored model's text (parsed again only when its text changed), or a string: why not."""
    from ...drla_core.io import model_io

    name = text.name
    if name in _stored and now - _stored_checked.get(name, -1e9) < STORED_CHECK_S:
        return _stored[name][1]
    _stored_checked[name] = now
    body = text.as_string()
    key = hash(body)
    if name in _stored and _stored[name][0] == key:
        return _stored[name][1]
    try:
        loaded: Any = model_io.model_from_dict(model_io.parse_model_json(body))
    except model_io.ModelFormatError as exc:
        loaded = f"The stored model '{name}' is damaged: {exc}"
    _stored[name] = (key, loaded)
    return loaded


def _stored_networks(tree: Any, now: float) -> tuple[list[tuple[str, Any, Any]], str]:
    """The models stored in the file for ``tree``: its own, or one per named agent ("DRLA model: T [name]")."""
    own = model_store.text_name(tree)
    texts = [t for t in bpy.data.texts if t.name == own or (t.name.startswith(own + " [") and t.name.endswith("]"))]
    if any(t.name != own for t in texts):  # a team: its agents (the tree's own text repeats the first)
        texts = [t for t in texts if t.name != own]
    out, why = [], ""
    for text in sorted(texts, key=lambda t: t.name):
        if not any(line.body.strip() for line in text.lines[:2]):
            continue  # an empty text
        model = _stored_model(text, now)
        if isinstance(model, str):
            why = model
            continue
        out.append((text.name[len(own) + 2:-1] if text.name != own else "", model.network, None))
    return out, why


def networks(scene: Any, now: float | None = None) -> tuple[list[tuple[str, Any, Any]], str, str]:
    """What Show Network draws for ``scene``: ``(entries, source, why_not)``.

    ``entries`` are ``(title, network, observation or None)``: the running or stopped training run's networks
    (every agent of a team, the champion of an evolution run, the IK solver's), else those Play runs, else the
    models stored in the file for the scene's RL tree (what Train, Stop, Import leave there). ``source`` says
    which in words; ``why_not`` says, when nothing can be drawn, why.
    """
    now = time.perf_counter() if now is None else now
    if scene is None or not hasattr(scene, "drla"):
        return [], "", "No scene"
    tree = scene.drla.tree
    sess = sessions.get(scene)
    entries: list[tuple[str, Any, Any]] = []
    source, why = "", ""
    if sess is not None and (tree is None or getattr(sess, "tree_name", tree.name) == tree.name):
        job = getattr(sess, "job", None)
        if job is not None:
            entries, why = _job_networks(job)
            state = getattr(sess, "state", "")
            source = {sessions.RUNNING: "training run", sessions.STOPPED: "stopped run"}.get(state, "trained run")
        elif getattr(sess, "state", "") == sessions.RUNNING:
            entries, source = _play_networks(sess), "model playing"
    if not entries and not why:
        if tree is None:
            return [], "", "No RL tree picked: pick one in the DRLA panel"
        entries, why = _stored_networks(tree, now)
        source = "stored model"
        if not entries and not why:
            why = f"No network yet for '{tree.name}': Train, or Import a model"
    entries = [(t, n, _obs_for(n, o)) for t, n, o in entries if n is not None]
    shown = [e for e in entries if drawable(e[1])]
    if entries and not shown:
        why = "This tree's networks are NEAT graphs: only layered networks can be drawn yet"
    return shown, source, "" if shown else why


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
        self.titles: list[str] = []
        self.box_width = 0
        #: What the sidebar says under Show Network: what is drawn, or why nothing is
        self.status = ""
        self.why_not = ""

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
        self.rebuild_many([("", network, obs)], width, height, fingerprint)

    def rebuild_many(self, entries: list[tuple[str, Any, Any]], box_width: int, height: int,
                     fingerprint: Any = None) -> None:
        """Draw ``entries`` (title, network, observation) into the cached texture, one ``box_width`` x ``height``
        box each, side by side (the first on the left), ``GAP`` pixels apart."""
        self.built = time.perf_counter()  # (the start: the 4 Hz timer then finds the next rebuild due on time)
        n = max(len(entries), 1)
        width = n * box_width + (n - 1) * GAP
        if self.offscreen is None or self.size != (width, height):
            if self.offscreen is not None:
                self.offscreen.free()
            self.offscreen = gpu.types.GPUOffScreen(width, height)
            self.size = (width, height)
            self.quad = None
        boxes = [build_batches(network, obs, k * (box_width + GAP), 0, box_width, height)
                 for k, (_, network, obs) in enumerate(entries)]
        with self.offscreen.bind():
            gpu.state.active_framebuffer_get().clear(color=(0.0, 0.0, 0.0, 0.0))
            with gpu.matrix.push_pop():
                _pixel_projection(width, height)
                for batches in boxes:
                    draw_batches(batches)  # into a transparent texture: colours premultiplied by alpha
        self.fingerprint = fingerprint
        self.titles = [title for title, _, _ in entries]
        self.box_width = box_width
        self.shown, self.total = sum(b["shown"] for b in boxes), sum(b["total"] for b in boxes)

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
    """(network, observation) of the first network Show Network draws for ``scene``, or (None, None)."""
    shown, _, _ = networks(scene)
    return (shown[0][1], shown[0][2]) if shown else (None, None)


def fingerprint(network: Any, obs: Any) -> tuple[Any, ...]:
    """What the picture depends on, cheaply compared: the network's weights and biases (their shapes and
    bytes: a few hundred KB for a 2x256 network, hashed only when a rebuild is due) and the observation. Not
    the network object: an evolution run's champion is a new object for the same genome."""
    arrays = [np.ascontiguousarray(a) for a in (*network.weights, *getattr(network, "biases", ()))]
    return (tuple(a.shape for a in arrays), hash(b"".join(a.tobytes() for a in arrays)),
            None if obs is None else np.asarray(obs, np.float32).tobytes())


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


def _text(x: float, y: float, text: str, size: float, colour=(0.9, 0.9, 0.92, 1.0)) -> None:
    import blf

    blf.size(0, size)
    blf.color(0, *colour)
    blf.position(0, x, y, 0)
    blf.draw(0, text)


def _draw() -> None:
    """The draw handler: the cached picture (each network titled) in the viewport's lower right corner, or a
    box that says why there is nothing to draw."""
    context = bpy.context
    w, h, scale = _box(context)
    right = context.region.width - _sidebar_width(context)  # region overlap: the sidebar covers the right
    x0, y0 = max(right - w - 20 * scale, 0), 20 * scale
    if _cache.offscreen is not None:
        x0 = max(right - _cache.size[0] - 20 * scale, 0)  # a team's boxes side by side, the last one at the right
        _cache.draw(x0, y0)
        top = y0 + _cache.size[1]
        for k, title in enumerate(_cache.titles):
            if title:
                _text(x0 + k * (_cache.box_width + GAP) + 8 * scale, top - 18 * scale, title, 12 * scale)
        return
    if not _cache.why_not:
        return
    import blf

    blf.size(0, 12 * scale)
    lines = wrap_pixels(_cache.why_not, w - 16 * scale, lambda t: blf.dimensions(0, t)[0])
    line_h = 18 * scale
    box_h = line_h * len(lines) + 16 * scale
    shader = _shader('UNIFORM_COLOR')
    corners = [(x0, y0), (x0 + w, y0), (x0 + w, y0 + box_h), (x0, y0 + box_h)]
    gpu.state.blend_set('ALPHA')
    shader.bind()
    shader.uniform_float("color", BACKDROP)
    batch_for_shader(shader, 'TRIS', {"pos": corners}, indices=((0, 1, 2), (0, 2, 3))).draw(shader)
    gpu.state.blend_set('NONE')
    for k, line in enumerate(lines):
        _text(x0 + 8 * scale, y0 + box_h - 8 * scale - (k + 1) * line_h + 5 * scale, line, 12 * scale)


def wrap_pixels(text: str, width: float, measure) -> list[str]:
    """``text`` in lines at most ``width`` wide by ``measure`` (the sidebar's wrapping, ``wrap.wrap``)."""
    return wrap(text, width, measure)


def describe(entries: list[tuple[str, Any, Any]], source: str) -> str:
    """What the sidebar says the overlay draws: 'tank_a, tank_b (stored model): 8x64x5 ...'."""
    shapes = []
    for title, network, _ in entries:
        sizes = [network.weights[0].shape[0]] + [w.shape[1] for w in network.weights]
        shapes.append((f"{title} " if title else "") + "x".join(str(n) for n in sizes))
    return f"Showing the {source}: " + ", ".join(shapes)


def _refresh() -> float | None:
    """The timer: rebuild the cached picture when the networks, their observations or the box changed; redraw
    the viewports when it did. Returns the next interval (None, which ends the timer, once the overlay is off)."""
    if _handler is None:
        return None
    try:
        context = bpy.context
        now = time.perf_counter()
        entries, source, why = networks(context.scene, now)
        if not entries:
            changed = _cache.offscreen is not None or _cache.why_not != why
            if _cache.offscreen is not None:
                _cache.free()
            _cache.why_not, _cache.status = why, why
            if changed:
                _tag_viewports()
            return REBUILD_S
        w, h, _ = _box(context)
        key = (tuple(title for title, _, _ in entries),
               tuple(fingerprint(network, obs) for _, network, obs in entries))
        _cache.why_not = ""
        _cache.status = describe(entries, source)
        if _cache.stale(key, (len(entries) * (w + GAP) - GAP, h), now):
            _cache.rebuild_many(entries, w, h, key)
            _tag_viewports()
    except Exception as exc:  # a timer that raises is dropped silently: say why and keep going
        _cache.status = _cache.why_not = f"The network cannot be drawn: {exc}"
        print(f"DRLA network overlay: {exc}")
    return REBUILD_S


def status() -> str:
    """What the sidebar shows under the Show Network button while the overlay is on."""
    return _cache.status if enabled() else ""


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
        _stored.clear()
        _stored_checked.clear()
    _tag_viewports()
    return enabled()


class DRLA_OT_network_overlay(bpy.types.Operator):
    """Show or hide the training network over the 3D viewport (units, strongest weights, activations)"""

    bl_idname = "drla.network_overlay"
    bl_label = "Network Overlay"
    bl_options = {'INTERNAL'}

    def execute(self, context):
        if toggle():
            _refresh()  # at once: the sidebar says what is shown, or why nothing is
        return {'FINISHED'}


classes = (DRLA_OT_network_overlay,)


def register() -> None:
    pass


def unregister() -> None:
    if _handler is not None:
        toggle()
