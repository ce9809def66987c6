from bpy.props import FloatProperty
import bpy

from ..node_tree import DRLANode


class DRLA_HitRewardNode(DRLANode, bpy.types.Node):
    """Reward for Fire actions: Hit when the shot hits its target, Miss otherwise.
    Triggers: reward hit miss shot fire"""

    bl_idname = "DRLA_HitRewardNode"
    bl_label = "Hit / Miss Reward"
    drla_category = "reward"
    outputs_spec = (("DRLA_RewardSocket", "Reward"),)

    hit: FloatProperty(name="Hit", default=1.0)
    miss: FloatProperty(name="Miss", default=-1.0)
    draw_props = ("hit", "miss")
