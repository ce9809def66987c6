"""DRLA operators: Train / Stop / Resume / Play / Export / Import / Bake.

Every operator runs headless (``bpy.ops.drla.train()`` trains synchronously: ``execute`` is the
blocking path). Invoked from the UI, Train, Resume and Play become modal: a window timer calls
``session.tick(TICK_BUDGET_S)`` so Blender stays responsive; Esc or the Stop button end them.
Buttons that cannot act are greyed out, their reason shown as the tooltip (``poll_message_set``).

Undo: the tick work never pushes undo steps (no 'UNDO' flag on Train/Resume/Play/Stop); a
finished run pushes exactly one ("DRLA Training"). Import and Bake are ordinary undoable steps.
"""

from __future__ import annotations

import contextlib
import os
import time

import bpy
from bpy.props import EnumProperty, IntProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ...drla_core.io.model_io import ModelFormatError
from ..properties import settings
from ..runs import demos_record, kinds, model_store, outputs, sessions, switcher
from ..runs.play import PlaySession
from ..runs.train import TrainSession
from ..words import describe_error

MODES = (
    ('AUTO', "Auto", "Modal (Blender stays responsive) from the UI; blocking from scripts and headless"),
    ('MODAL', "Modal", "Train in short slices from a timer; Esc stops"),
    ('BLOCKING', "Blocking", "Train to the end before returning (scripts, command line, tests)"),
)


# --------------------------------------------------------------------------- shared polls
def _why_not_idle(context) -> str:
    """The reason the scene cannot start something now, or '' when it can."""
    scene = context.scene
    if scene is None or not hasattr(scene, "drla"):
        return "No scene"
    s = settings(scene)
    if s.tree is None:
        return "Pick an RL tree in the DRLA panel first"
    if demos_record.active(scene) is not None:
        return "Recording a demonstration: press Esc in the 3D viewport to stop it first"
    running = sessions.active(scene)
    if running is not None:
        return "Training is running: stop it first" if running.kind == "TRAIN" else "Playing: stop it first"
    return ""


def _why_no_model(context) -> str:
    reason = _why_not_idle(context)
    if reason:
        return reason
    tree = settings(context.scene).tree
    if not model_store.has_model(tree):
        return f"No trained model for '{tree.name}' yet: train it or import one"
    return ""


def _poll(cls, reason: str) -> bool:
    if reason:
        cls.poll_message_set(reason)
        return False
    return True


def _report_failure(op, context, exc: Exception) -> set[str]:
    message = describe_error(exc)
    settings(context.scene).error = message
    op.report({'ERROR'}, message)
    redraw_ui()  # the other sidebar (3D viewport / node editor) shows it too, not only this one
    return {'CANCELLED'}


def redraw_ui() -> None:
    """Ask every sidebar and node editor to redraw (no-op headless)."""
    wm = bpy.context.window_manager
    if wm is None:
        return
    for window in wm.windows:
        for area in window.screen.areas:
            if area.type in {'VIEW_3D', 'NODE_EDITOR'}:
                area.tag_redraw()


def _use_modal(op, context) -> bool:
    if op.mode == 'BLOCKING' or bpy.app.background:
        return False
    return context.window is not None


def _clear_status(context) -> None:
    workspace = getattr(context, "workspace", None)
    if workspace is not None:
        workspace.status_text_set(None)


def _undo_push(message: str) -> None:
    """One undo step for a finished run (GUI only: headless has no undo history to speak of)."""
    if bpy.app.background:
        return
    try:
        bpy.ops.ed.undo_push(message=message)
    except RuntimeError:
        pass


#: What the modal operator does with one event (see ``modal_step``).
PASS, TICKED, UNDO_BLOCKED, STOPPED_BY_ESC = "PASS", "TICKED", "UNDO_BLOCKED", "STOPPED_BY_ESC"


def tick_budget(idle_s: float) -> float:
    """Seconds of work for the next tick, given how long Blender took between two ticks.

    On a fast GPU a redraw takes a few ms and the budget stays ``TICK_BUDGET_S``; where a redraw
    is slow (software GL, a huge window), matching the tick to it keeps training at about half the
    wall time instead of starving it, while the UI still answers within a few frames.
    """
    return min(max(idle_s - sessions.TIMER_INTERVAL_S, sessions.TICK_BUDGET_S), MAX_TICK_BUDGET_S)


#: The longest tick the adaptive budget allows (the UI answers within this).
MAX_TICK_BUDGET_S = 0.2


def modal_step(sess, event_type: str, event_value: str, ctrl: bool,
               budget_s: float = sessions.TICK_BUDGET_S) -> tuple[str, str]:
    """Act on one modal event given as plain values; returns ``(outcome, message to report)``.

    The operator's ``modal`` reads only ``event.type``, ``event.value``, ``event.ctrl`` and
    ``event.oskey`` (real ``bpy.types.Event`` properties: a test checks every ``event.X`` in the
    add-on against Blender's RNA) and hands them here, so this logic is tested on a real session
    without any stand-in event. Every ``'TIMER'`` event ticks: ``bpy.types.Event`` cannot tell
    one window timer from another, and a tick is time-boxed, so an extra one costs nothing.
    """
    if event_type == 'ESC' and event_value == 'PRESS':
        try:
            sess.stop()
        except Exception as exc:  # e.g. the tree was renamed mid-run: report, never a traceback
            if not isinstance(exc, sessions.SessionError) and sess.state == sessions.RUNNING:
                with contextlib.suppress(Exception):
                    exc = sess._fail(exc)  # restore the scene, store the message, state ERROR
            if sess.state == sessions.RUNNING:
                with contextlib.suppress(Exception):
                    sess.close()
            return STOPPED_BY_ESC, str(exc) or describe_error(exc)
        return STOPPED_BY_ESC, ""
    if sess.state != sessions.RUNNING:
        return PASS, ""
    if event_type in {'Z', 'Y'} and ctrl:
        return UNDO_BLOCKED, "Undo is off while DRLA runs: stop it first"
    if event_type == 'TIMER':
        try:
            sess.tick(budget_s)
        except sessions.SessionError as exc:
            return TICKED, str(exc)
        return TICKED, ""
    return PASS, ""


class _ModalSession:
    """The modal wrapper around a session: a window timer calls ``session.tick``; Esc stops."""

    _timer = None
    _session = None
    _last_tick_end = 0.0

    def _begin_modal(self, context, sess) -> set[str]:
        self._session = sess
        self._last_tick_end = time.perf_counter()
        wm = context.window_manager
        self._timer = wm.event_timer_add(sessions.TIMER_INTERVAL_S, window=context.window)
        wm.modal_handler_add(self)
        context.workspace.status_text_set(sess.status_line())
        redraw_ui()
        return {'RUNNING_MODAL'}

    def _end_modal(self, context) -> None:
        if self._timer is not None:
            context.window_manager.event_timer_remove(self._timer)
            self._timer = None
        _clear_status(context)
        redraw_ui()

    def modal(self, context, event):
        sess = self._session
        budget = tick_budget(time.perf_counter() - self._last_tick_end)
        outcome, message = modal_step(sess, event.type, event.value, event.ctrl or event.oskey, budget)
        if outcome == TICKED:
            self._last_tick_end = time.perf_counter()
        if message:
            self.report({'ERROR'} if outcome != UNDO_BLOCKED else {'WARNING'}, message)
        if outcome == UNDO_BLOCKED:
            return {'RUNNING_MODAL'}
        if sess.state != sessions.RUNNING:
            self._end_modal(context)
            self._finished(context, sess)
            return {'CANCELLED'} if sess.state == sessions.ERROR else {'FINISHED'}
        if outcome == TICKED:
            context.workspace.status_text_set(sess.status_line())
            redraw_ui()
        return {'PASS_THROUGH'}

    def _finished(self, context, sess) -> None:
        pass


# --------------------------------------------------------------------------- train / resume / stop
class _TrainBase(_ModalSession):
    bl_options = {'REGISTER'}  # no UNDO: one undo step is pushed when the run ends

    mode: EnumProperty(name="Mode", items=MODES, default='AUTO', options={'SKIP_SAVE'})
    steps: IntProperty(name="Steps", default=0, min=0, options={'SKIP_SAVE'},
                       description="Training steps; 0 uses the scene setting, then the tree's")

    def _finished(self, context, sess) -> None:
        if sess.state in (sessions.DONE, sessions.STOPPED):
            self.report({'INFO'}, sess.message)
            _undo_push("DRLA Training")

    def _running_session(self, context):
        """The session to run, started (Train) or resumed (Resume); raises SessionError."""
        raise NotImplementedError

    def execute(self, context):
        try:
            sess = self._running_session(context)
            sess.run_blocking()
        except sessions.SessionError as exc:
            return _report_failure(self, context, exc)
        self._finished(context, sess)
        return {'FINISHED'}

    def invoke(self, context, event):
        if not _use_modal(self, context):
            return self.execute(context)
        try:
            sess = self._running_session(context)
        except sessions.SessionError as exc:
            return _report_failure(self, context, exc)
        return self._begin_modal(context, sess)


class DRLA_OT_train(_TrainBase, bpy.types.Operator):
    """Train the agent of the selected RL tree in this scene. The scene is put back exactly as it was afterwards"""

    bl_idname = "drla.train"
    bl_label = "Train"

    @classmethod
    def poll(cls, context):
        return _poll(cls, _why_not_idle(context))

    def _running_session(self, context):
        s = settings(context.scene)
        return TrainSession(context.scene, s.tree, total_steps=self.steps or s.total_steps,
                            output_dir=s.output_dir).start()


class DRLA_OT_resume(_TrainBase, bpy.types.Operator):
    """Continue the stopped training run where it stopped (same network, replay memory and schedule)"""

    bl_idname = "drla.resume"
    bl_label = "Resume"

    @classmethod
    def poll(cls, context):
        reason = _why_not_idle(context)
        if not reason and _stopped_session(context) is None and not _saved_state(context):
            reason = "No stopped run to resume: press Train"
        return _poll(cls, reason)

    def _running_session(self, context):
        sess = _stopped_session(context)
        if sess is None:  # stopped in an earlier Blender session: the tree remembers its training state
            s = settings(context.scene)
            return TrainSession.from_checkpoint(context.scene, s.tree, total_steps=self.steps,
                                                output_dir=s.output_dir)
        if self.steps:
            sess.total_steps = sess.steps + self.steps
        return sess.resume()


def _stopped_session(context):
    """This Blender session's stopped run of the chosen tree, or None."""
    sess = sessions.get(context.scene)
    tree = settings(context.scene).tree
    if sess is None or sess.kind != "TRAIN" or sess.state != sessions.STOPPED or tree is None \
            or sess.tree_name != tree.name:
        return None
    return sess


def _saved_state(context) -> bool:
    """Whether the chosen tree remembers a training state written when a run of it stopped."""
    tree = settings(context.scene).tree
    path = getattr(tree, "drla_last_checkpoint", "") if tree is not None else ""
    return bool(path) and os.path.isfile(path)


class DRLA_OT_stop(bpy.types.Operator):
    """Stop training (keeps the model so far; Resume continues) or playing. The scene is restored exactly"""

    bl_idname = "drla.stop"
    bl_label = "Stop"
    bl_options = {'REGISTER'}

    @classmethod
    def poll(cls, context):
        scene = context.scene
        return _poll(cls, "" if scene is not None and sessions.active(scene) else "Nothing is running")

    def execute(self, context):
        try:
            sessions.stop(context.scene)
        except sessions.SessionError as exc:
            return _report_failure(self, context, exc)
        redraw_ui()
        return {'FINISHED'}


# --------------------------------------------------------------------------- play
class DRLA_OT_play(_ModalSession, bpy.types.Operator):
    """Let the trained agent act in the viewport (greedy: its best action every step). Stop puts the scene back"""

    bl_idname = "drla.play"
    bl_label = "Play"
    bl_options = {'REGISTER'}

    mode: EnumProperty(name="Mode", items=MODES, default='AUTO', options={'SKIP_SAVE'})
    steps: IntProperty(name="Steps", default=0, min=0, options={'SKIP_SAVE'},
                       description="Blocking mode: steps to play (0: one episode), then restore the scene")

    @classmethod
    def poll(cls, context):
        reason = _why_not_idle(context)
        if not reason and switcher.play_node(settings(context.scene).tree) is None:  # a switcher needs no model
            reason = _why_no_model(context) or kinds.missing_models_text(settings(context.scene).tree)
        kind = kinds.of_tree(settings(context.scene).tree) if not reason else None
        if kind is not None and not kind.can_play:
            reason = kind.no_play_reason
        return _poll(cls, reason)

    def _make_session(self, context):
        s = settings(context.scene)
        return PlaySession(context.scene, s.tree, fps=s.play_fps)

    def execute(self, context):
        try:
            sess = self._make_session(context).start()
            if self.steps:
                sess.run_steps(self.steps)
            else:
                sess.run_episode()
            sess.stop()
        except sessions.SessionError as exc:
            return _report_failure(self, context, exc)
        self.report({'INFO'}, settings(context.scene).message)
        return {'FINISHED'}

    def invoke(self, context, event):
        if not _use_modal(self, context):
            return self.execute(context)
        try:
            sess = self._make_session(context).start()
        except sessions.SessionError as exc:
            return _report_failure(self, context, exc)
        return self._begin_modal(context, sess)


# --------------------------------------------------------------------------- model files
class DRLA_OT_export_model(bpy.types.Operator, ExportHelper):
    """Write the trained network to a JSON file (DRLA model format v1) to use in a game, a web page or a robot"""

    bl_idname = "drla.export_model"
    bl_label = "Export Model"
    bl_options = {'REGISTER'}

    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={'HIDDEN'})

    @classmethod
    def poll(cls, context):
        scene = context.scene
        tree = settings(scene).tree if scene is not None and hasattr(scene, "drla") else None
        if tree is None:
            return _poll(cls, "Pick an RL tree in the DRLA panel first")
        # exporting is read-only, so it is allowed while something runs (it writes the stored model)
        return _poll(cls, "" if model_store.has_model(tree) else
                     f"No trained model for '{tree.name}' yet: train it or import one")

    @classmethod
    def description(cls, context, properties):
        tree = settings(context.scene).tree if context.scene is not None and hasattr(context.scene, "drla") else None
        what = kinds.export_what(tree) if tree is not None else "the trained network"
        return f"Write {what} (DRLA model format v1) to use in a game, a web page or a robot"

    def invoke(self, context, event):
        tree = settings(context.scene).tree
        if not self.filepath:
            self.filepath = outputs.safe_name(tree.name) + self.filename_ext
        return ExportHelper.invoke(self, context, event)

    def execute(self, context):
        tree = settings(context.scene).tree
        names = kinds.team_names(tree)  # a multi-agent tree: every agent's model in one team file
        try:
            if names:
                model_store.export_team(tree, names, self.filepath)
            else:
                model_store.export_model(tree, self.filepath)
        except (ModelFormatError, OSError) as exc:
            return _report_failure(self, context, exc)
        settings(context.scene).message = (f"Exported '{tree.name}' ({kinds.export_what(tree)}) to {self.filepath}"
                                           if names else f"Exported '{tree.name}' to {self.filepath}")
        self.report({'INFO'}, settings(context.scene).message)
        return {'FINISHED'}


class DRLA_OT_import_model(bpy.types.Operator, ImportHelper):
    """Load a trained network from a DRLA JSON model file into the selected RL tree (checked before anything changes)"""

    bl_idname = "drla.import_model"
    bl_label = "Import Model"
    bl_options = {'REGISTER', 'UNDO'}

    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={'HIDDEN'})

    @classmethod
    def poll(cls, context):
        return _poll(cls, _why_not_idle(context))

    def execute(self, context):
        s = settings(context.scene)
        path = bpy.path.abspath(self.filepath)
        if not os.path.isfile(path):
            return _report_failure(self, context, ModelFormatError(f"No such file: {path}"))
        names = kinds.team_names(s.tree)
        try:
            if names:  # a multi-agent tree: a team file (every agent), or one agent's model file
                imported = model_store.import_models(s.tree, path, names)
            else:
                model_store.import_model(s.tree, path)
        except ModelFormatError as exc:
            return _report_failure(self, context, ModelFormatError(f"{os.path.basename(path)}: {exc}"))
        s.error = ""
        s.message = f"Imported {os.path.basename(path)} into '{s.tree.name}'"
        if names:
            s.message += f" (agents {', '.join(imported)})"
        self.report({'INFO'}, s.message)
        return {'FINISHED'}


# --------------------------------------------------------------------------- bake
class DRLA_OT_bake(bpy.types.Operator):
    """Record one greedy episode of the trained agent as keyframes on the objects and bones it moves"""

    bl_idname = "drla.bake"
    bl_label = "Bake to Keyframes"
    bl_options = {'REGISTER', 'UNDO'}

    steps: IntProperty(name="Steps", default=0, min=0, options={'SKIP_SAVE'},
                       description="Steps to record; 0 uses the scene setting (0 there: one episode)")

    @classmethod
    def poll(cls, context):
        reason = _why_no_model(context)
        if not reason:
            reason = kinds.missing_models_text(settings(context.scene).tree)
        return _poll(cls, reason)

    def execute(self, context):
        s = settings(context.scene)
        try:  # a bake restores the scene (frame, pose, actions) itself before raising
            s.message = kinds.of_tree(s.tree).bake(context.scene, s.tree, s, self.steps)
        except Exception as exc:
            return _report_failure(self, context, exc)
        s.error = ""
        self.report({'INFO'}, s.message)
        return {'FINISHED'}


class DRLA_OT_ik_follow(bpy.types.Operator):
    """Learned IK: the armature's tip follows its target live (network + refinement); click again to stop.

    Stopping puts the pose back exactly as it was before following (every bone's rotation mode and
    rotation values): following never changes the user's pose for good. Bake to keep a result."""

    bl_idname = "drla.ik_follow"
    bl_description = ("Learned IK: the armature's tip follows its target live (network + refinement). "
                      "Click again to stop: the pose (rotation modes and values) is put back as it was")
    bl_label = "Learned IK"
    bl_options = {'REGISTER'}

    @classmethod
    def poll(cls, context):
        scene = context.scene
        if scene is None or not hasattr(scene, "drla"):
            return _poll(cls, "No scene")
        tree = settings(scene).tree
        on, _ = kinds.follow_state(tree)
        if on:
            return True
        reason = _why_no_model(context)
        if not reason and not kinds.of_tree(tree).can_follow:
            reason = "The RL tree has no Learned IK Agent"
        return _poll(cls, reason)

    def execute(self, context):
        s = settings(context.scene)
        try:
            s.message = kinds.toggle_follow(context.scene, s.tree)
        except Exception as exc:
            return _report_failure(self, context, exc)
        s.error = ""
        self.report({'INFO'}, s.message)
        redraw_ui()
        return {'FINISHED'}


class DRLA_OT_clear_error(bpy.types.Operator):
    """Dismiss the error message"""

    bl_idname = "drla.clear_error"
    bl_label = "Dismiss"
    bl_options = {'INTERNAL'}

    def execute(self, context):
        settings(context.scene).error = ""
        return {'FINISHED'}


classes = (
    DRLA_OT_train,
    DRLA_OT_resume,
    DRLA_OT_stop,
    DRLA_OT_play,
    DRLA_OT_export_model,
    DRLA_OT_import_model,
    DRLA_OT_bake,
    DRLA_OT_ik_follow,
    DRLA_OT_clear_error,
)
