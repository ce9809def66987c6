from bpy.props import EnumProperty, FloatProperty, StringProperty
import bpy

from ..tree.node_tree import DRLANode
from ..specs import DoneSpec
from ._common import object_pointer


class DRLA_PropertyConditionNode(DRLANode, bpy.types.Node):
    """Ends the episode (terminated) when a property compares true with Value (score >= 10).
    Triggers: done property condition score threshold"""

    bl_idname = "DRLA_PropertyConditionNode"
    bl_label = "Property Condition"
    menu_order = 190  # its place in its Add submenu (lower first)
    drla_category = "ending"
    role = "ending"
    menu_category = "Rewards"
    outputs_spec = (("DRLA_DoneSocket", "Done"),)

    source: EnumProperty(name="Source", default='OBJECT', items=[('OBJECT', "Object", ""), ('SCENE', "Scene", "")])
    object: object_pointer("Object")
    property: StringProperty(name="Property", default="score")
    compare: EnumProperty(name="Compare", default='GE', items=[
        ('GE', ">=", ""), ('LE', "<=", ""), ('GT', ">", ""), ('LT', "<", ""), ('EQ', "==", "")])
    value: FloatProperty(name="Value", default=10.0)
    reward: FloatProperty(name="Reward", default=0.0)
    draw_props = ("source", "object", "property", "compare", "value", "reward")

    def compile(self, ctx):
        owner = ctx.obj(self, "object") if self.source == 'OBJECT' else ""
        return DoneSpec("property", self.name, obj=owner, path=ctx.prop_path(self, owner, self.property, self.source),
                        reward=self.reward, options={"source": self.source, "compare": self.compare,
                                                     "value": self.value})
