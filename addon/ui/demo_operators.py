"""Demonstrations in the sidebar: Record Demonstration (the person plays the agent from the keyboard in the 3D
viewport: a modal operator feeding ``runs.demos_record.KeyboardRecorder``) and Record from Keyframes
(``runs.demos_keyframes``). Both write a demonstration file beside the .blend; the Trainer node's
Demonstration setting (or ``drla train --demo``) trains from it.

While recording, the keys are where the person looks: a legend drawn over the 3D viewport's top left corner
(a ``SpaceView3D`` draw handler with ``blf`` text: nothing is added to the scene), the last key pressed
lit; the status bar lists them too, and the sidebar shows them at the top of its main panel.
"""

from __future__ import annotations

from typing import Any

import bpy

from ..properties import settings
from ..runs import demos_keyframes, demos_record, sessions
from .operators import _poll, _report_failure, _why_not_idle, redraw_ui
from .wrap import label_wrapped


def _why_not_record(context) -> str:
    reason = _why_not_idle(context)
    if not reason and demos_record.active(context.scene) is not None:
        reason = "Recording: press Esc in the 3D viewport to stop it"
    return reason


class DRLA_OT_record_demonstration(bpy.types.Operator):
    """Drive the agent from the keyboard (each action on the key shown in the panel); the scene steps as in
    training. Esc stops, saves the demonstration beside the .blend and puts the scene back"""

    bl_idname = "drla.record_demonstration"
    bl_label = "Record Demonstration"
    bl_options = {'REGISTER'}

    _recorder = None

    @classmethod
    def poll(cls, context):
        return _poll(cls, _why_not_record(context))

    def invoke(self, context, event):
        s = settings(context.scene)
        try:
            self._recorder = demos_record.KeyboardRecorder(context.scene, s.tree, bpy.data.filepath).start()
        except Exception as exc:  # a tree that does not compile, too many actions for the keyboard
            return _report_failure(self, context, exc)
        context.window_manager.modal_handler_add(self)
        show_legend(True)
        context.workspace.status_text_set(self._status())
        redraw_ui()
        return {'RUNNING_MODAL'}

    def _status(self) -> str:
        rec = self._recorder
        return f"{rec.status_line()}   |   {rec.keys_line()}"

    def modal(self, context, event):
        rec = self._recorder
        if demos_record.active(context.scene) is not rec:  # stopped by a file save or load: already saved
            return self._finish(context)
        if event.type == 'ESC' and event.value == 'PRESS':
            return self._finish(context)
        if event.value == 'PRESS' and event.type in rec.keymap:
            try:
                rec.press(event.type)
            except Exception as exc:
                rec.stop(save=False)
                context.workspace.status_text_set(None)
                show_legend(False)
                return _report_failure(self, context, exc)
            if rec.steps >= demos_record.MAX_RECORDED_STEPS:
                return self._finish(context)
            context.workspace.status_text_set(self._status())
            redraw_ui()
            return {'RUNNING_MODAL'}
        return {'PASS_THROUGH'}  # the viewport's own keys and mouse still work

    def _finish(self, context):
        rec = self._recorder
        steps, episodes = rec.steps, rec.episodes
        try:
            path = rec.stop(save=True)
        except Exception as exc:
            context.workspace.status_text_set(None)
            show_legend(False)
            return _report_failure(self, context, exc)
        context.workspace.status_text_set(None)
        show_legend(False)
        message = f"Demonstration: {steps} steps ({episodes} episodes done) saved to {path}" if path else \
            "Nothing recorded: no step was taken"
        settings(context.scene).message = message
        self.report({'INFO'}, message)
        redraw_ui()
        return {'FINISHED'}


class DRLA_OT_record_keyframes(bpy.types.Operator):
    """Make a demonstration from the scene's keyframed animation: step its frame range as the tree's environment
    would and read each step's action from what the keyframed objects did; saved beside the .blend"""

    bl_idname = "drla.record_keyframes"
    bl_label = "Record from Keyframes"
    bl_options = {'REGISTER'}

    tolerance: bpy.props.FloatProperty(name="Tolerance", default=0.05, min=0.0, options={'SKIP_SAVE'},
                                       description="A step is explained when an action's change is within this "
                                                   "(plus this times the keyframed change)")

    @classmethod
    def poll(cls, context):
        return _poll(cls, _why_not_record(context))

    def execute(self, context):
        s = settings(context.scene)
        try:
            path, result = demos_keyframes.record_keyframes_to_file(s.tree, context.scene, None, bpy.data.filepath,
                                                                   tolerance=self.tolerance)
        except Exception as exc:
            return _report_failure(self, context, exc)
        message = (f"Demonstration from keyframes: {len(result.demo)} steps, {result.explained:.0%} explained by "
                   f"an action; saved to {path}")
        s.message = message
        self.report({'INFO'} if result.explained >= 0.9 else {'WARNING'}, message)
        redraw_ui()
        return {'FINISHED'}


def draw_demonstrations(layout, context) -> None:
    """The Trained Model panel's Demonstration rows: the two Record buttons; while recording, one line (the keys
    are at the top of the main panel, ``draw_recording``, and over the viewport)."""
    scene = context.scene
    rec = demos_record.active(scene)
    col = layout.column(align=True)
    if rec is None:
        row = col.row(align=True)
        row.operator("drla.record_demonstration", text="Record Demonstration", icon='REC')
        row.operator("drla.record_keyframes", text="From Keyframes", icon='KEYFRAME')
        return
    label_wrapped(col, context, "Recording: the keys are listed at the top of the DRLA panel", 'REC')


def draw_recording(layout, context) -> bool:
    """While a recording runs in the scene: its progress and every key with its action, compactly (two keys a
    row), for the top of the sidebar's main panel where it is seen without scrolling. False when none runs."""
    rec = demos_record.active(context.scene)
    if rec is None:
        return False
    box = layout.box()
    col = box.column(align=True)
    col.alert = True
    col.label(text="Recording a demonstration", icon='REC')
    label_wrapped(box.column(align=True), context, rec.progress_line())
    grid = box.grid_flow(row_major=True, columns=2, even_columns=True, align=True)
    for key, name in rec.labels:
        grid.label(text=f"{key}   {name}")
    box.label(text="Esc   stop and save")
    if sessions.active(context.scene) is not None:  # (cannot happen: Train and Play wait for the recording)
        label_wrapped(box, context, "A run is active", 'ERROR')
    return True


# --------------------------------------------------------------------------- the viewport legend
LEGEND_FONT_PX = 13  # at UI scale 1
LEGEND_BACKDROP = (0.03, 0.03, 0.04, 0.8)
LEGEND_TEXT = (0.92, 0.92, 0.94, 1.0)
LEGEND_MUTED = (0.66, 0.66, 0.70, 1.0)
LEGEND_KEY = (0.24, 0.24, 0.27, 1.0)
LEGEND_LIT = (0.80, 0.22, 0.20, 1.0)  # the last key pressed, in the record button's red
#: Pixels at scale 1 below the top of the viewport's drawing space (under its headers): the view's name and the
#: collection's, Blender's own two lines of text in the top left corner, stay readable above the legend.
LEGEND_TOP_PX = 56
_legend_handler: Any = None


def legend_rows(rec) -> list[tuple[str, str, bool]]:
    """The legend's key rows ``(key, action, lit)``: each action's key (the last pressed lit), then Esc."""
    return [(key, name, key == rec.last_key) for key, name in rec.labels] + [("Esc", "stop and save", False)]


def legend_size(rec, scale: float, measure) -> tuple[float, float, float]:
    """``(width, height, key column width)`` in pixels of ``rec``'s legend; ``measure(text)`` is a text's width."""
    pad, line_h = 10 * scale, 20 * scale
    rows = legend_rows(rec)
    key_w = max(measure(key) for key, _, _ in rows) + 12 * scale
    width = max(key_w + 10 * scale + max(measure(name) for _, name, _ in rows),
                measure("Recording a demonstration") + 22 * scale, measure(rec.progress_line()))
    return width + 2 * pad, (len(rows) + 2) * line_h + 2 * pad, key_w


def draw_legend(rec, x0: float, top: float, scale: float = 1.0) -> tuple[float, float]:
    """Draw ``rec``'s legend with its top left corner at (``x0``, ``top``), pixels of the current framebuffer
    (origin lower left); returns its (width, height)."""
    import blf
    import gpu
    from gpu_extras.batch import batch_for_shader

    font = 0
    blf.size(font, LEGEND_FONT_PX * scale)

    def measure(text: str) -> float:
        return blf.dimensions(font, text)[0]

    width, height, key_w = legend_size(rec, scale, measure)
    pad, line_h = 10 * scale, 20 * scale
    shader = gpu.shader.from_builtin('UNIFORM_COLOR')

    def rect(x: float, y: float, w: float, h: float, colour) -> None:
        corners = [(x, y), (x + w, y), (x + w, y + h), (x, y + h)]
        shader.uniform_float("color", colour)
        batch_for_shader(shader, 'TRIS', {"pos": corners}, indices=((0, 1, 2), (0, 2, 3))).draw(shader)

    def text(x: float, y: float, words: str, colour) -> None:
        blf.color(font, *colour)
        blf.position(font, x, y, 0)
        blf.draw(font, words)

    y0 = top - height
    gpu.state.blend_set('ALPHA')
    shader.bind()
    rect(x0, y0, width, height, LEGEND_BACKDROP)
    baseline = top - pad - line_h + 6 * scale
    rect(x0 + pad, baseline, 10 * scale, 10 * scale, LEGEND_LIT)  # the record light
    rows = legend_rows(rec)
    for k, (_key, _, lit) in enumerate(rows):
        y = baseline - (k + 2) * line_h
        rect(x0 + pad, y - 4 * scale, key_w, line_h - 3 * scale, LEGEND_LIT if lit else LEGEND_KEY)
    gpu.state.blend_set('NONE')
    text(x0 + pad + 18 * scale, baseline, "Recording a demonstration", LEGEND_TEXT)
    text(x0 + pad, baseline - line_h, rec.progress_line(), LEGEND_MUTED)
    for k, (key, name, _) in enumerate(rows):
        y = baseline - (k + 2) * line_h
        text(x0 + pad + (key_w - measure(key)) / 2, y, key, LEGEND_TEXT)
        text(x0 + pad + key_w + 10 * scale, y, name, LEGEND_TEXT)
    return width, height


def _left_tools_width(context) -> float:
    """How much of the viewport's left side the toolbar covers (Region Overlap on), else 0."""
    area = context.area
    if area is None or not context.preferences.system.use_region_overlap:
        return 0.0
    return float(sum(r.width for r in area.regions if r.type == 'TOOLS' and r.width > 1))


def _top_headers_height(context) -> float:
    """How much of the viewport's top its headers cover: the header and tool header drawn over it (transparent
    headers: the drawing region spans the whole area), else 0."""
    area, region = context.area, context.region
    if area is None or region is None or region.height < area.height - 2:
        return 0.0
    return float(sum(r.height for r in area.regions if r.type in {'HEADER', 'TOOL_HEADER'} and r.height > 1
                     and r.y >= region.y + region.height // 2))


def _draw_legend_handler() -> None:
    context = bpy.context
    rec = demos_record.active(context.scene)
    region = context.region
    if rec is None or region is None:
        return
    scale = context.preferences.system.ui_scale or 1.0
    top = region.height - _top_headers_height(context) - LEGEND_TOP_PX * scale
    draw_legend(rec, _left_tools_width(context) + 16 * scale, top, scale)


def show_legend(on: bool) -> None:
    """Add the viewport legend's draw handler (``on``), or remove it once no recording runs."""
    global _legend_handler
    if on and _legend_handler is None:
        _legend_handler = bpy.types.SpaceView3D.draw_handler_add(_draw_legend_handler, (), 'WINDOW', 'POST_PIXEL')
    elif not on and _legend_handler is not None and not demos_record.any_active():
        bpy.types.SpaceView3D.draw_handler_remove(_legend_handler, 'WINDOW')
        _legend_handler = None
    redraw_ui()


def legend_shown() -> bool:
    return _legend_handler is not None


@bpy.app.handlers.persistent
def _stop_recordings(*_args) -> None:
    """Saving or opening a file stops a recording first (saved beside the .blend), its scene put back."""
    demos_record.stop_all()
    show_legend(False)


def register() -> None:
    bpy.app.handlers.load_pre.append(_stop_recordings)
    bpy.app.handlers.save_pre.append(_stop_recordings)


def unregister() -> None:
    for handlers in (bpy.app.handlers.load_pre, bpy.app.handlers.save_pre):
        if _stop_recordings in handlers:
            handlers.remove(_stop_recordings)
    demos_record.stop_all()
    show_legend(False)


classes = (DRLA_OT_record_demonstration, DRLA_OT_record_keyframes)
