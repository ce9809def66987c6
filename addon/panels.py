"""The DRLA sidebar: tab "DRLA" in the 3D viewport and in the DRLA node editor (same content).

Main panel: the RL tree, the error box, Train / Stop / Resume with progress. Sub-panels: the
learning curve, and the trained model (Play, Export, Import, Bake). Operators whose ``poll``
fails are drawn greyed out by Blender with the reason as their tooltip, so the panel draws every
button a state allows and lets ``poll`` explain the rest.
"""

from __future__ import annotations

import bpy

from . import live_curve, model_store, session
from .properties import TREE_IDNAME, settings


def draw_error(layout, s) -> None:
    if not s.error:
        return
    box = layout.box()
    col = box.column(align=True)
    col.alert = True
    words, line, lines = s.error.split(), "", []
    for word in words:  # wrap: the sidebar is narrow and labels don't wrap
        if len(line) + len(word) > 38 and line:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    for i, text in enumerate(lines):
        col.label(text=text, icon='ERROR' if i == 0 else 'BLANK1')
    box.operator("drla.clear_error", icon='X')


def draw_progress(layout, s, state: str) -> None:
    text = f"{s.steps_done} / {s.steps_total} steps"
    if state == "STOPPED":
        text += "  (stopped)"
    layout.progress(factor=s.progress, type='BAR', text=text)
    grid = layout.grid_flow(columns=2, align=True)
    if session.is_ik_tree(s.tree):
        grid.label(text=f"Median error {s.mean_return:.1f} mm")
        grid.label(text=f"Left {session.format_duration(s.seconds_left)}" if state == "TRAINING" else "")
        return
    grid.label(text=f"Episodes {s.episodes}")
    grid.label(text=f"Epsilon {s.epsilon:.2f}")
    grid.label(text=f"Return {s.mean_return:.2f}")
    grid.label(text=f"Left {session.format_duration(s.seconds_left)}" if state == "TRAINING" else "")


def draw_main(layout, context) -> None:
    scene = context.scene
    s = settings(scene)
    layout.prop(s, "tree")
    draw_error(layout, s)
    state = session.ui_state(scene)
    if state == "NO_TREE":
        layout.label(text="Pick an RL tree, or add one:", icon='INFO')
        layout.label(text="Add > DRLA Examples in the 3D viewport")
        return

    if state in {"TRAINING", "STOPPED"}:
        draw_progress(layout, s, state)

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
    col.prop(s, "output_dir", text="")

    if s.message and state != "TRAINING":
        layout.label(text=s.message, icon='CHECKMARK' if state in {"TRAINED", "STOPPED"} else 'INFO')


def draw_model(layout, context) -> None:
    scene = context.scene
    s = settings(scene)
    state = session.ui_state(scene)
    tree = s.tree
    if tree is not None and model_store.has_model(tree):
        layout.label(text=model_store.text_name(tree), icon='TEXT')
    elif tree is not None:
        layout.label(text="No trained model yet", icon='INFO')

    if session.is_ik_tree(tree):
        draw_ik_model(layout, context)
        return

    row = layout.row(align=True)
    if state == "PLAYING":
        row.operator("drla.stop", text="Stop", icon='SNAP_FACE')
    else:
        row.operator("drla.play", text="Play", icon='PLAY')
    row.prop(s, "play_fps", text="Speed")

    row = layout.row(align=True)
    row.operator("drla.export_model", text="Export JSON", icon='EXPORT')
    row.operator("drla.import_model", text="Import JSON", icon='IMPORT')

    col = layout.column(align=True)
    col.operator("drla.bake", text="Bake to Keyframes", icon='KEYINGSET')
    sub = col.row(align=True)
    sub.prop(s, "bake_steps", text="Steps")
    sub.prop(s, "bake_frame_step", text="Frames/Step")


def draw_ik_model(layout, context) -> None:
    """Learned IK trees: the follow toggle, export / import, and baking the target's animation."""
    from .operators import ik_follow_state

    scene = context.scene
    on, ob = ik_follow_state(scene)
    row = layout.row(align=True)
    row.scale_y = 1.2
    row.operator("drla.ik_follow", text="Learned IK: On" if on else "Learned IK", icon='CON_KINEMATIC',
                 depress=on)
    row = layout.row(align=True)
    row.operator("drla.export_model", text="Export JSON", icon='EXPORT')
    row.operator("drla.import_model", text="Import JSON", icon='IMPORT')
    col = layout.column(align=True)
    col.operator("drla.bake", text="Bake Target Animation", icon='KEYINGSET')
    col.label(text=f"Frames {scene.frame_start}-{scene.frame_end} (scene range)")


def draw_curve(layout, context) -> None:
    scene = context.scene
    live_curve.draw(layout, scene.name, settings(scene))
    s = settings(scene)
    if s.report_path and session.ui_state(scene) != "TRAINING":
        layout.label(text=f"Report: {bpy.path.basename(s.report_path)}", icon='IMAGE_DATA')


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


def _panels(space: str, prefix: str) -> tuple[type, ...]:
    main_id = f"DRLA_PT_{prefix}"

    class Main(_Sidebar, bpy.types.Panel):
        bl_space_type = space
        bl_idname = main_id
        bl_label = "DRLA Training"

        def draw(self, context):
            draw_main(self.layout, context)

    class Curve(_Sidebar, bpy.types.Panel):
        bl_space_type = space
        bl_idname = f"DRLA_PT_{prefix}_curve"
        bl_label = "Learning Curve"
        bl_parent_id = main_id

        def draw(self, context):
            draw_curve(self.layout, context)

    class Model(_Sidebar, bpy.types.Panel):
        bl_space_type = space
        bl_idname = f"DRLA_PT_{prefix}_model"
        bl_label = "Trained Model"
        bl_parent_id = main_id

        def draw(self, context):
            draw_model(self.layout, context)

    for cls, suffix in ((Main, ""), (Curve, "_curve"), (Model, "_model")):
        cls.__name__ = cls.__qualname__ = f"DRLA_PT_{prefix}{suffix}"
    return Main, Curve, Model


DRLA_PT_view3d, DRLA_PT_view3d_curve, DRLA_PT_view3d_model = _panels('VIEW_3D', "view3d")
DRLA_PT_node, DRLA_PT_node_curve, DRLA_PT_node_model = _panels('NODE_EDITOR', "node")

classes = (DRLA_PT_view3d, DRLA_PT_view3d_curve, DRLA_PT_view3d_model,
           DRLA_PT_node, DRLA_PT_node_curve, DRLA_PT_node_model)
