from bpy.props import EnumProperty, FloatProperty, StringProperty
import bpy

from ..tree.node_tree import DRLANode
from ..specs import RewardSpec
from ._common import object_pointer


class DRLA_PropertyChangeRewardNode(DRLANode, bpy.types.Node):
    """Reward when a property changes during a step: Increase when it went up
    (the score rose), Decrease when it went down.
    Triggers: reward score property change points"""

    bl_idname = "DRLA_PropertyChangeRewardNode"
    bl_label = "Property Change Reward"
    menu_order = 140  # its place in its Add submenu (lower first)
    drla_category = "reward"
    role = "reward"
    menu_category = "Rewards"
    bl_width_default = 200
    outputs_spec = (("DRLA_RewardSocket", "Reward"),)

    source: EnumProperty(name="Source", default='OBJECT', items=[('OBJECT', "Object", ""), ('SCENE', "Scene", "")])
    object: object_pointer("Object")
    property: StringProperty(name="Property", default="score")
    increase: FloatProperty(name="Increase", default=1.0)
    decrease: FloatProperty(name="Decrease", default=0.0)
    draw_props = ("source", "object", "property", "increase", "decrease")

    def compile(self, ctx):
        owner = ctx.obj(self, "object") if self.source == 'OBJECT' else ""
        return RewardSpec("property_change", self.name, obj=owner,
                          path=ctx.prop_path(self, owner, self.property, self.source),
                          options={"source": self.source, "increase": self.increase, "decrease": self.decrease})
