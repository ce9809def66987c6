from bpy.props import FloatProperty
import bpy

from ..specs import RewardSpec
from ..tree.node_tree import DRLANode


class DRLA_StepCostNode(DRLANode, bpy.types.Node):
    """A constant cost (negative reward) paid every step: hurry up.
    Triggers: reward step cost time penalty"""

    bl_idname = "DRLA_StepCostNode"
    bl_label = "Step Cost"
    menu_order = 160  # its place in its Add submenu (lower first)
    drla_category = "reward"
    role = "reward"
    menu_category = "Rewards"
    outputs_spec = (("DRLA_RewardSocket", "Reward"),)

    cost: FloatProperty(name="Cost", default=0.01)
    draw_props = ("cost",)

    def compile(self, ctx):
        return RewardSpec("step_cost", self.name, options={"cost": self.cost})
