from bpy.props import FloatProperty
import bpy

from ..node_tree import DRLANode
from ._common import object_pointer


class DRLA_WithinDistanceNode(DRLANode, bpy.types.Node):
    """Ends the episode (terminated) when two objects are closer than Distance; Reward is added then.
    Triggers: done goal reached distance success"""

    bl_idname = "DRLA_WithinDistanceNode"
    bl_label = "Within Distance"
    drla_category = "ending"
    outputs_spec = (("DRLA_DoneSocket", "Done"),)

    object_a: object_pointer("From")
    object_b: object_pointer("To")
    distance: FloatProperty(name="Distance", default=0.5, min=0.0, soft_max=100.0)
    reward: FloatProperty(name="Reward", default=1.0)
    draw_props = ("object_a", "object_b", "distance", "reward")
