import bpy

from ..node_tree import DRLANode, linked_nodes


class DRLA_ActionSetNode(DRLANode, bpy.types.Node):
    """The discrete actions the agent chooses from, numbered in link order.
    Triggers: actions discrete action space"""

    bl_idname = "DRLA_ActionSetNode"
    bl_label = "Action Set"
    drla_category = "action"
    inputs_spec = (("DRLA_ActionSocket", "Actions", True),)
    outputs_spec = (("DRLA_ActionSetSocket", "Actions"),)

    def draw(self, layout):
        col = layout.column(align=True)
        for i, node in enumerate(linked_nodes(self.inputs[0])):
            col.label(text=f"{i}: {getattr(node, 'action_name', node.name)}")

    def summary(self):
        return f"{len(linked_nodes(self.inputs[0]))} actions"
