from bpy.props import EnumProperty, FloatProperty, StringProperty
import bpy

from ..node_tree import DRLANode
from ._common import object_pointer


class DRLA_PropertyConditionNode(DRLANode, bpy.types.Node):
    """Ends the episode (terminated) when a property compares true with Value (score >= 10).
    Triggers: done property condition score threshold"""

    bl_idname = "DRLA_PropertyConditionNode"
    bl_label = "Property Condition"
    drla_category = "ending"
    outputs_spec = (("DRLA_DoneSocket", "Done"),)

    source: EnumProperty(name="Source", default='OBJECT', items=[('OBJECT', "Object", ""), ('SCENE', "Scene", "")])
    object: object_pointer("Object")
    property: StringProperty(name="Property", default="score")
    compare: EnumProperty(name="Compare", default='GE', items=[
        ('GE', ">=", ""), ('LE', "<=", ""), ('GT', ">", ""), ('LT', "<", ""), ('EQ', "==", "")])
    value: FloatProperty(name="Value", default=10.0)
    reward: FloatProperty(name="Reward", default=0.0)
    draw_props = ("source", "object", "property", "compare", "value", "reward")
