"""The Add menu of the DRLA node editor, as data: category -> node idnames.

Works on every supported Blender: one submenu per category appended to ``NODE_MT_add``, each
item the plain ``node.add_node`` operator labelled with the node's own label (what
``bl_ui.node_add_menu.add_node_type`` did; 5.2 removed that helper, and a fallback to the
idname once showed users "DRLA_CameraSensorNode"). Node classes not in a category appear in "Other".
"""

from __future__ import annotations

import bpy

from . import nodes
from .node_tree import TREE_ID

CATEGORIES: dict[str, list[str]] = {
    "Environment": ["DRLA_EnvironmentNode", "DRLA_StateNode"],
    "Sensors": ["DRLA_CameraSensorNode", "DRLA_TransformSensorNode", "DRLA_BoneRotationsSensorNode",
                "DRLA_PropertySensorNode", "DRLA_DistanceSensorNode", "DRLA_RaySensorNode"],
    "Actions": ["DRLA_ActionSetNode", "DRLA_ActionNode", "DRLA_FireActionNode", "DRLA_BoneActionsNode"],
    "Rewards": ["DRLA_DistanceRewardNode", "DRLA_PropertyChangeRewardNode", "DRLA_HitRewardNode",
                "DRLA_StepCostNode", "DRLA_OutOfBoundsNode", "DRLA_WithinDistanceNode",
                "DRLA_PropertyConditionNode"],
    "Agent": ["DRLA_DQNAgentNode", "DRLA_EpsilonNode", "DRLA_ReplayMemoryNode", "DRLA_IKAgentNode"],
    "Network": ["DRLA_NetworkNode", "DRLA_HiddenLayerNode"],
    "Output": ["DRLA_TrainerNode", "DRLA_ExportJSONNode"],
}


def _other() -> list[str]:
    listed = {i for ids in CATEGORIES.values() for i in ids}
    return [c.bl_idname for c in nodes.classes if c.bl_idname not in listed]


def label_of(idname: str) -> str:
    """The label a person reads for a node type: its ``bl_label`` (never the idname)."""
    cls = bpy.types.Node.bl_rna_get_subclass_py(idname) or next(
        (c for c in nodes.classes if c.bl_idname == idname), None)
    return getattr(cls, "bl_label", "") or idname.removeprefix("DRLA_").removesuffix("Node")


def _add_item(layout, idname: str) -> None:
    props = layout.operator("node.add_node", text=label_of(idname))
    props.type = idname
    props.use_transform = True  # the new node follows the mouse, as Blender's own Add menu does


def _menu_class(category: str) -> type:
    ident = "DRLA_MT_add_" + category.lower()

    def draw(self, context):
        for idname in (CATEGORIES[category] if category in CATEGORIES else _other()):
            _add_item(self.layout, idname)

    return type(ident, (bpy.types.Menu,), {"bl_idname": ident, "bl_label": category, "draw": draw,
                                           "__doc__": f"Add a DRLA {category.lower()} node"})


MENUS = [_menu_class(c) for c in [*CATEGORIES, "Other"]]


def draw_add_menu(self, context):
    space = getattr(context, "space_data", None)
    if getattr(space, "tree_type", None) != TREE_ID:
        return
    for menu in MENUS:
        if menu.bl_label != "Other" or _other():
            self.layout.menu(menu.bl_idname)


classes = tuple(MENUS)


def register() -> None:
    bpy.types.NODE_MT_add.append(draw_add_menu)


def unregister() -> None:
    bpy.types.NODE_MT_add.remove(draw_add_menu)
