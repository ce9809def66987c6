"""The Add menu of the DRLA node editor, built from the node classes' own ``menu_category``.

Works on every supported Blender: one submenu per category appended to ``NODE_MT_add``, each
item the plain ``node.add_node`` operator labelled with the node's own label (what
``bl_ui.node_add_menu.add_node_type`` did; 5.2 removed that helper, and a fallback to the
idname once showed users "DRLA_CameraSensorNode"). Items come in ``nodes.classes`` order.
"""

from __future__ import annotations

import bpy

from .. import nodes
from ..tree.node_tree import TREE_ID


def node_ids(category: str) -> list[str]:
    """The idnames of the nodes whose ``menu_category`` is ``category``, in ``nodes.classes`` order."""
    return [c.bl_idname for c in nodes.classes if c.menu_category == category]


def label_of(idname: str) -> str:
    """The label a person reads for a node type: its ``bl_label`` (never the idname)."""
    cls = bpy.types.Node.bl_rna_get_subclass_py(idname) or next(
        (c for c in nodes.classes if c.bl_idname == idname), None)
    return getattr(cls, "bl_label", "") or idname.removeprefix("DRLA_").removesuffix("Node")


class _AddMenu:
    """One submenu: every node of ``bl_label``'s category."""

    def draw(self, context):
        for idname in node_ids(self.bl_label):
            props = self.layout.operator("node.add_node", text=label_of(idname))
            props.type = idname
            props.use_transform = True  # the new node follows the mouse, as Blender's own Add menu does


class DRLA_MT_add_environment(_AddMenu, bpy.types.Menu):
    """Add a DRLA environment node"""
    bl_idname = "DRLA_MT_add_environment"
    bl_label = "Environment"


class DRLA_MT_add_sensors(_AddMenu, bpy.types.Menu):
    """Add a DRLA sensors node"""
    bl_idname = "DRLA_MT_add_sensors"
    bl_label = "Sensors"


class DRLA_MT_add_actions(_AddMenu, bpy.types.Menu):
    """Add a DRLA actions node"""
    bl_idname = "DRLA_MT_add_actions"
    bl_label = "Actions"


class DRLA_MT_add_rewards(_AddMenu, bpy.types.Menu):
    """Add a DRLA rewards node"""
    bl_idname = "DRLA_MT_add_rewards"
    bl_label = "Rewards"


class DRLA_MT_add_agent(_AddMenu, bpy.types.Menu):
    """Add a DRLA agent node"""
    bl_idname = "DRLA_MT_add_agent"
    bl_label = "Agent"


class DRLA_MT_add_network(_AddMenu, bpy.types.Menu):
    """Add a DRLA network node"""
    bl_idname = "DRLA_MT_add_network"
    bl_label = "Network"


class DRLA_MT_add_output(_AddMenu, bpy.types.Menu):
    """Add a DRLA output node"""
    bl_idname = "DRLA_MT_add_output"
    bl_label = "Output"


class DRLA_MT_add_other(_AddMenu, bpy.types.Menu):
    """Add a DRLA node of no other category"""
    bl_idname = "DRLA_MT_add_other"
    bl_label = "Other"


MENUS = (DRLA_MT_add_environment, DRLA_MT_add_sensors, DRLA_MT_add_actions, DRLA_MT_add_rewards,
         DRLA_MT_add_agent, DRLA_MT_add_network, DRLA_MT_add_output, DRLA_MT_add_other)


def draw_add_menu(self, context):
    space = getattr(context, "space_data", None)
    if getattr(space, "tree_type", None) != TREE_ID:
        return
    for menu in MENUS:
        if node_ids(menu.bl_label):
            self.layout.menu(menu.bl_idname)


classes = MENUS


def register() -> None:
    bpy.types.NODE_MT_add.append(draw_add_menu)


def unregister() -> None:
    bpy.types.NODE_MT_add.remove(draw_add_menu)
