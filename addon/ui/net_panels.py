"""The sidebar's Expert Library sub-panel: the library folder, its experts (name, task, score) and
Add / Remove. The Grow buttons are in the main panel (``panels.draw_grow``)."""

from __future__ import annotations

import bpy

from ...drla_core.nets.expert_library import LibraryError
from .net_operators import library
from .panels import _Sidebar, label_wrapped


def draw_library(layout, context) -> None:
    scene = context.scene
    layout.prop(scene, "drla_expert_library", text="")
    lib = library(context)
    try:
        entries = lib.entries()
    except LibraryError as exc:
        col = layout.column()
        col.alert = True
        label_wrapped(col, context, str(exc), 'ERROR')
        entries = []
    if not entries:
        label_wrapped(layout, context, "No experts yet: train a tree, then Add Trained Model", 'INFO')
    col = layout.column(align=True)
    for e in entries:
        row = col.row(align=True)
        score = "-" if e["score"] is None else f"{e['score']:.3g}"
        row.label(text=f"{e['name']}  ({e['task'] or '-'}, score {score})", icon='USER')
        row.operator("drla.expert_remove", text="", icon='X').name = e["name"]
    layout.operator("drla.expert_add", icon='ADD')


class _Library(_Sidebar):
    bl_label = "Expert Library"
    bl_options = {'DEFAULT_CLOSED'}

    def draw(self, context):
        draw_library(self.layout, context)


class DRLA_PT_view3d_experts(_Library, bpy.types.Panel):
    bl_space_type = 'VIEW_3D'
    bl_idname = "DRLA_PT_view3d_experts"
    bl_parent_id = "DRLA_PT_view3d"


class DRLA_PT_node_experts(_Library, bpy.types.Panel):
    bl_space_type = 'NODE_EDITOR'
    bl_idname = "DRLA_PT_node_experts"
    bl_parent_id = "DRLA_PT_node"


classes = (DRLA_PT_view3d_experts, DRLA_PT_node_experts)
