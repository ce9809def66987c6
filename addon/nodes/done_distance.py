from bpy.props import FloatProperty
import bpy

from ..tree.node_tree import DRLANode
from ..specs import DoneSpec
from ._common import object_pointer


class DRLA_WithinDistanceNode(DRLANode, bpy.types.Node):
    """Ends the episode (terminated) when two objects are closer than Distance; Reward is added then.
    Triggers: done goal reached distance success"""

    bl_idname = "DRLA_WithinDistanceNode"
    bl_label = "Within Distance"
    menu_order = 180  # its place in its Add submenu (lower first)
    drla_category = "ending"
    role = "ending"
    menu_category = "Rewards"
    outputs_spec = (("DRLA_DoneSocket", "Done"),)

    object_a: object_pointer("From")
    object_b: object_pointer("To")
    distance: FloatProperty(name="Distance", default=0.5, min=0.0, soft_max=100.0)
    reward: FloatProperty(name="Reward", default=1.0)
    draw_props = ("object_a", "object_b", "distance", "reward")

    def compile(self, ctx):
        return DoneSpec("within_distance", self.name, obj=ctx.obj(self, "object_a"), other=ctx.obj(self, "object_b"),
                        reward=self.reward, options={"distance": self.distance})
