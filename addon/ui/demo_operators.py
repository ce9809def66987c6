"""Demonstrations in the sidebar: Record Demonstration (the person plays the agent from the keyboard in the 3D
viewport: a modal operator feeding ``runs.demos_record.KeyboardRecorder``) and Record from Keyframes
(``runs.demos_keyframes``). Both write a demonstration file beside the .blend; the Trainer node's
Demonstration setting (or ``drla train --demo``) trains from it."""

from __future__ import annotations

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
        context.workspace.status_text_set(self._recorder.status_line())
        redraw_ui()
        return {'RUNNING_MODAL'}

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
                return _report_failure(self, context, exc)
            if rec.steps >= demos_record.MAX_RECORDED_STEPS:
                return self._finish(context)
            context.workspace.status_text_set(rec.status_line())
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
            return _report_failure(self, context, exc)
        context.workspace.status_text_set(None)
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
    """The sidebar's Demonstration rows: the two Record buttons, and the keys while recording."""
    scene = context.scene
    rec = demos_record.active(scene)
    col = layout.column(align=True)
    if rec is None:
        row = col.row(align=True)
        row.operator("drla.record_demonstration", text="Record Demonstration", icon='REC')
        row.operator("drla.record_keyframes", text="From Keyframes", icon='KEYFRAME')
        return
    label_wrapped(col, context, rec.status_line(), 'REC')
    box = col.box()
    for key, name in rec.labels:
        row = box.row()
        row.label(text=key)
        row.label(text=name)
    if sessions.active(scene) is not None:  # (cannot happen: Train and Play wait for the recording)
        label_wrapped(col, context, "A run is active", 'ERROR')


@bpy.app.handlers.persistent
def _stop_recordings(*_args) -> None:
    """Saving or opening a file stops a recording first (saved beside the .blend), its scene put back."""
    demos_record.stop_all()


def register() -> None:
    bpy.app.handlers.load_pre.append(_stop_recordings)
    bpy.app.handlers.save_pre.append(_stop_recordings)


def unregister() -> None:
    for handlers in (bpy.app.handlers.load_pre, bpy.app.handlers.save_pre):
        if _stop_recordings in handlers:
            handlers.remove(_stop_recordings)
    demos_record.stop_all()


classes = (DRLA_OT_record_demonstration, DRLA_OT_record_keyframes)
