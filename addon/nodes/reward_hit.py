from bpy.props import FloatProperty
import bpy

from ..specs import RewardSpec
from ..tree.node_tree import DRLANode


class DRLA_HitRewardNode(DRLANode, bpy.types.Node):
    """Reward for Fire actions: Hit when the shot hits its target, Miss otherwise.
    Triggers: reward hit miss shot fire"""

    bl_idname = "DRLA_HitRewardNode"
    bl_label = "Hit / Miss Reward"
    menu_order = 150  # its place in its Add submenu (lower first)
    drla_category = "reward"
    role = "reward"
    menu_category = "Rewards"
    outputs_spec = (("DRLA_RewardSocket", "Reward"),)

    hit: FloatProperty(name="Hit", default=1.0)
    miss: FloatProperty(name="Miss", default=-1.0)
    draw_props = ("hit", "miss")

    def compile(self, ctx):
        return RewardSpec("hit", self.name, options={"hit": self.hit, "miss": self.miss})
