from bpy.props import FloatProperty
import bpy

from ..tree.node_tree import DRLANode


class DRLA_EpsilonNode(DRLANode, bpy.types.Node):
    """Exploration schedule: the chance of a random action falls linearly from Start to End
    over the first Fraction of training.
    Triggers: epsilon exploration greedy schedule random"""

    bl_idname = "DRLA_EpsilonNode"
    bl_label = "Epsilon Schedule"
    menu_order = 210  # its place in its Add submenu (lower first)
    drla_category = "agent"
    menu_category = "Agent"
    outputs_spec = (("DRLA_EpsilonSocket", "Epsilon"),)

    start: FloatProperty(name="Start", default=1.0, min=0.0, max=1.0)
    end: FloatProperty(name="End", default=0.04, min=0.0, max=1.0)
    fraction: FloatProperty(name="Fraction", default=0.16, min=0.0, max=1.0)
    draw_props = ("start", "end", "fraction")
