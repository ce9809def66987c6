"""The DRLA sidebar: tab "DRLA" in the 3D viewport and in the DRLA node editor (same content).

Main panel: the RL tree, the error box, Train / Stop / Resume with progress. Sub-panels: the
learning curve, and the trained model (Play, Export, Import, Bake). Operators whose ``poll``
fails are drawn greyed out by Blender with the reason as their tooltip, so the panel draws every
button a state allows and lets ``poll`` explain the rest.
"""

from __future__ import annotations

import bpy

from ...drla_core.rl.train import history_metric_text
from ..preferences import checkpoint_dir
from ..properties import TREE_IDNAME, settings
from ..runs import demos_use, kinds, model_store, outputs, sessions, switcher
from ..words import format_duration
from . import demo_operators, live_curve, net_overlay
from .wrap import (  # noqa: F401  (the names net_panels and the tests use from here)
    FALLBACK_REGION_PX,
    SIDEBAR_MARGIN_PX,
    label_wrapped,
    labels_in_columns,
    text_measure,
    text_space,
    ui_scale,
    wrap,
)


# --------------------------------------------------------------------------- main panel
def draw_error(layout, s, context=None) -> None:
    if not s.error:
        return
    box = layout.box()
    col = box.column(align=True)
    col.alert = True
    label_wrapped(col, context, s.error, 'ERROR', box=True)
    box.operator("drla.clear_error", icon='X')


def draw_progress(layout, s, state: str, context=None) -> None:
    """The progress bar, then the run's own figures (``TrainingJob.status()``, mirrored in
    ``scene.drla.status``) two to a row, the time left and the task's counts."""
    text = f"{s.steps_done} / {s.steps_total} {kinds.of_tree(s.tree).unit}s"
    if state == "STOPPED":
        text += "  (stopped)"
    layout.progress(factor=s.progress, type='BAR', text=text)
    figures = [line.split("\t", 1) for line in s.status.splitlines() if "\t" in line]
    cells = [f"{label} {value}" for label, value in figures]
    if state == "TRAINING":
        cells.append(f"Left {format_duration(s.seconds_left)}")
    labels_in_columns(layout, context, cells)
    metric = task_metric_text(context.scene.name if context is not None else "")
    if metric:
        label_wrapped(layout, context, metric)


def task_metric_text(key: str) -> str:
    """The task's counts over the last episodes ('Hits 0.05/ep, shots 0.05/ep (100 %)'), or ''."""
    history = live_curve.info(key).get("history")
    if history is None:
        return ""
    try:
        return history_metric_text(history, 20, short=True) or ""
    except Exception:
        return ""


def draw_main(layout, context) -> None:
    scene = context.scene
    s = settings(scene)
    layout.prop(s, "tree")
    draw_error(layout, s, context)
    demo_operators.draw_recording(layout, context)  # while recording: the keys, where they are seen at once
    state = sessions.ui_state(scene)
    if state == "NO_TREE":
        label_wrapped(layout, context, "Pick an RL tree above, or add an example tree and its scene with "
                                       "Add > DRLA Examples in the 3D viewport", 'INFO')
        return

    if state in {"TRAINING", "STOPPED"}:
        draw_progress(layout, s, state, context)
        draw_grow(layout, scene, context)

    row = layout.row(align=True)
    row.scale_y = 1.4
    if state == "TRAINING":
        row.operator("drla.stop", text="Stop Training", icon='PAUSE')
    elif state == "PLAYING":
        row.operator("drla.stop", text="Stop Playing", icon='SNAP_FACE')
    else:
        row.operator("drla.train", text="Train" if state != "TRAINED" else "Train Again", icon='PLAY')
        row.operator("drla.resume", text="Resume", icon='FORWARD')

    col = layout.column(align=True)
    col.enabled = state not in {"TRAINING", "PLAYING"}
    col.prop(s, "total_steps")
    col.prop(s, "workers")
    col.prop(s, "output_dir", text="")
    if not s.output_dir:  # where the files go, named (the field's own text is empty)
        label_wrapped(col, context, f"Output: {outputs.folder_words(checkpoint_dir(create=False))}", 'FILE_FOLDER')

    if s.message and state != "TRAINING":
        label_wrapped(layout, context, s.message, 'CHECKMARK' if state in {"TRAINED", "STOPPED"} else 'INFO')
    learnt = demonstration_text(scene)
    if learnt:  # the run began by learning from the Trainer's Demonstration
        label_wrapped(layout, context, learnt, 'USER')


def demonstration_text(scene) -> str:
    """What the scene's run (of the tree shown) learnt from its Trainer's Demonstration first, or ''."""
    sess = sessions.get(scene)
    tree = settings(scene).tree
    if sess is None or tree is None or getattr(sess, "tree_name", None) != tree.name:
        return ""
    return demos_use.learnt_text(getattr(getattr(sess, "job", None), "agent", None))


def draw_grow(layout, scene, context=None) -> None:
    """The Grow buttons and the network's hidden layers, while a DQN run trains (or is stopped)."""
    sess = sessions.get(scene)
    text = sess.network_text() if sess is not None and callable(getattr(sess, "network_text", None)) else ""
    if not text:
        return
    row = layout.row(align=True)
    row.operator("drla.grow", text="Grow: Widen", icon='ADD').how = 'WIDEN'
    row.operator("drla.grow", text="Deepen", icon='NODETREE').how = 'DEEPEN'
    label_wrapped(layout, context, text, 'NETWORK_DRIVE')


def draw_model(layout, context) -> None:
    scene = context.scene
    s = settings(scene)
    state = sessions.ui_state(scene)
    tree = s.tree
    expert_switcher = switcher.play_node(tree)
    if expert_switcher is not None:
        label_wrapped(layout, context, f"Play runs the Expert Switcher '{expert_switcher.name}'", 'USER')
    if tree is not None and model_store.has_model(tree):
        label_wrapped(layout, context, model_store.text_name(tree), 'TEXT')
    elif tree is not None:
        label_wrapped(layout, context, "No trained model yet", 'INFO')

    kind = kinds.of_tree(tree)
    if kind.can_play:
        row = layout.row(align=True)
        if state == "PLAYING":
            row.operator("drla.stop", text="Stop", icon='SNAP_FACE')
        else:
            row.operator("drla.play", text="Play", icon='PLAY')
        row.prop(s, "play_fps", text="Speed")
    if kind.can_follow:
        on, _ = kinds.follow_state(tree)
        row = layout.row(align=True)
        row.scale_y = 1.2
        row.operator("drla.ik_follow", text="Learned IK: On" if on else "Learned IK", icon='CON_KINEMATIC',
                     depress=on)

    row = layout.row(align=True)
    row.operator("drla.export_model", text="Export JSON", icon='EXPORT')
    row.operator("drla.import_model", text="Import JSON", icon='IMPORT')

    col = layout.column(align=True)
    col.operator("drla.bake", text=kind.bake_label, icon='KEYINGSET')
    if kind.bake_settings:
        sub = col.row(align=True)
        for name, label in kind.bake_settings:
            sub.prop(s, name, text=label)
    hint = kind.bake_hint(scene)
    if hint:
        label_wrapped(col, context, hint)
    if kind.can_play:  # a tree with an environment: demonstrations to learn from
        demo_operators.draw_demonstrations(layout.column(), context)


def draw_curve(layout, context) -> None:
    scene = context.scene
    s = settings(scene)
    sess = sessions.get(scene)
    history = getattr(sess, "history", None)
    kind = curve_kind(s, sess)
    if history is not None:  # the curve follows the run as the panel redraws (the operator asks it to)
        agent = getattr(getattr(sess, "job", None), "agent", None)
        live_curve.follow(scene.name, history, s.curve, running=sess.state == sessions.RUNNING, kind=kind,
                          exploration=str(getattr(agent, "exploration_label", "") or ""))
    layout.operator("drla.network_overlay", icon='NETWORK_DRIVE', depress=net_overlay.enabled(),
                    text="Hide Network" if net_overlay.enabled() else "Show Network")
    shown = net_overlay.status()
    if shown:  # what the overlay draws, or why nothing (right under its button, whatever the curve's size)
        label_wrapped(layout, context, shown, 'INFO' if shown.startswith("Showing") else 'ERROR')
    live_curve.draw(layout, scene.name, s, context, kind=kind)
    if s.report_path and sessions.ui_state(scene) != "TRAINING":
        label_wrapped(layout, context, f"Report: {outputs.files_words([s.report_path])}", 'IMAGE_DATA')


def curve_kind(s, sess) -> str:
    """The agent kind whose curves the panel offers: the run's (of the tree shown), else the tree's."""
    run_kind = getattr(getattr(sess, "agent_kind", None), "name", "")
    if run_kind and s.tree is not None and getattr(sess, "tree_name", None) == s.tree.name:
        return run_kind
    return kinds.of_tree(s.tree).name


# --------------------------------------------------------------------------- panel classes
class _Sidebar:
    bl_region_type = 'UI'
    bl_category = "DRLA"

    @classmethod
    def poll(cls, context):
        if not hasattr(context.scene, "drla"):
            return False
        if cls.bl_space_type == 'NODE_EDITOR':
            return getattr(context.space_data, "tree_type", "") == TREE_IDNAME
        return True


class _Main(_Sidebar):
    bl_label = "DRLA Training"

    def draw(self, context):
        draw_main(self.layout, context)


class _Curve(_Sidebar):
    bl_label = "Learning Curve"

    def draw(self, context):
        draw_curve(self.layout, context)


class _Model(_Sidebar):
    bl_label = "Trained Model"

    def draw(self, context):
        draw_model(self.layout, context)


class DRLA_PT_view3d(_Main, bpy.types.Panel):
    bl_space_type = 'VIEW_3D'
    bl_idname = "DRLA_PT_view3d"


class DRLA_PT_view3d_curve(_Curve, bpy.types.Panel):
    bl_space_type = 'VIEW_3D'
    bl_idname = "DRLA_PT_view3d_curve"
    bl_parent_id = "DRLA_PT_view3d"


class DRLA_PT_view3d_model(_Model, bpy.types.Panel):
    bl_space_type = 'VIEW_3D'
    bl_idname = "DRLA_PT_view3d_model"
    bl_parent_id = "DRLA_PT_view3d"


class DRLA_PT_node(_Main, bpy.types.Panel):
    bl_space_type = 'NODE_EDITOR'
    bl_idname = "DRLA_PT_node"


class DRLA_PT_node_curve(_Curve, bpy.types.Panel):
    bl_space_type = 'NODE_EDITOR'
    bl_idname = "DRLA_PT_node_curve"
    bl_parent_id = "DRLA_PT_node"


class DRLA_PT_node_model(_Model, bpy.types.Panel):
    bl_space_type = 'NODE_EDITOR'
    bl_idname = "DRLA_PT_node_model"
    bl_parent_id = "DRLA_PT_node"


classes = (DRLA_PT_view3d, DRLA_PT_view3d_curve, DRLA_PT_view3d_model,
           DRLA_PT_node, DRLA_PT_node_curve, DRLA_PT_node_model)
