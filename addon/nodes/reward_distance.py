from bpy.props import EnumProperty, FloatProperty
import bpy

from ..tree.node_tree import DRLANode
from ..specs import RewardSpec
from ._common import object_pointer


class DRLA_DistanceRewardNode(DRLANode, bpy.types.Node):
    """Shaped reward from the distance between two objects.
    Progress: Weight x (previous distance - distance), positive when getting closer.
    Negative: -Weight x distance every step.
    Triggers: reward distance shaping approach reach"""

    bl_idname = "DRLA_DistanceRewardNode"
    bl_label = "Distance Reward"
    menu_order = 130  # its place in its Add submenu (lower first)
    drla_category = "reward"
    role = "reward"
    menu_category = "Rewards"
    outputs_spec = (("DRLA_RewardSocket", "Reward"),)

    object_a: object_pointer("From")
    object_b: object_pointer("To")
    mode: EnumProperty(name="Mode", default='PROGRESS', items=[
        ('PROGRESS', "Progress", "Reward getting closer"), ('NEGATIVE', "Negative", "Penalise the distance")])
    weight: FloatProperty(name="Weight", default=1.0)
    draw_props = ("object_a", "object_b", "mode", "weight")

    def compile(self, ctx):
        return RewardSpec("distance", self.name, obj=ctx.obj(self, "object_a"), other=ctx.obj(self, "object_b"),
                          options={"mode": self.mode, "weight": self.weight})
