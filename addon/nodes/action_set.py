import bpy

from ..specs import MotorsSpec
from ..tree.node_tree import DRLANode, linked_nodes


class DRLA_ActionSetNode(DRLANode, bpy.types.Node):
    """The discrete actions the agent chooses from, numbered in link order; or continuous actions, one
    value in [-1, 1] each: Motor actions and Actions with Amount (a continuous action space, for a SAC,
    PPO or Evolution agent).
    Triggers: actions discrete action space continuous motors"""

    bl_idname = "DRLA_ActionSetNode"
    bl_label = "Action Set"
    menu_order = 90  # its place in its Add submenu (lower first)
    drla_category = "action"
    role = "action_set"
    menu_category = "Actions"
    inputs_spec = (("DRLA_ActionSocket", "Actions", True),)
    outputs_spec = (("DRLA_ActionSetSocket", "Actions"),)

    def draw(self, layout):
        col = layout.column(align=True)
        for i, node in enumerate(linked_nodes(self.inputs[0])):
            col.label(text=f"{i}: {getattr(node, 'action_name', node.name)}")

    def summary(self):
        return f"{len(linked_nodes(self.inputs[0]))} actions"

    def compile(self, ctx):
        """The discrete actions linked into it, each named once."""
        item_nodes = linked_nodes(self.inputs["Actions"])
        if not item_nodes:
            ctx.error(self, "the action set is empty: link Action nodes into it")
        actions, seen = [], set()
        for node in item_nodes:
            found = ctx.compile_linked([node], "action", "action")
            if not found:
                continue
            action = found[0]
            if not action.name:
                ctx.error(node, "the action needs a name")
            elif action.name in seen:
                ctx.error(node, f"two actions are named '{action.name}'")
            seen.add(action.name)
            actions.append(action)
        continuous = [a for a in actions if a.kind == "MOTOR" or a.options.get("amount")]
        if continuous and len(continuous) < len(actions):
            discrete = next(a.name for a in actions if a not in continuous)
            ctx.error(self, f"Motor actions and actions with Amount are continuous, and '{discrete}' is discrete: "
                            "an Action Set holds either kind, not both")
        if continuous:
            return MotorsSpec(self.name, continuous)
        return actions
