from bpy.props import EnumProperty, FloatProperty, FloatVectorProperty
import bpy

from ..tree.node_tree import DRLANode, draw_prop
from ..specs import DoneSpec
from ..tree.compiler import vec
from ._common import object_pointer


class DRLA_OutOfBoundsNode(DRLANode, bpy.types.Node):
    """Ends the episode (terminated) when Object leaves the bounds: a box from Min to Max,
    or the X/Y extent of another object (e.g. the ground). Reward is added on that step.
    Triggers: done end out of bounds fall off ground terminate"""

    bl_idname = "DRLA_OutOfBoundsNode"
    bl_label = "Out of Bounds"
    menu_order = 170  # its place in its Add submenu (lower first)
    drla_category = "ending"
    role = "ending"
    menu_category = "Rewards"
    bl_width_default = 210
    outputs_spec = (("DRLA_DoneSocket", "Done"),)

    object: object_pointer("Object")
    bounds: EnumProperty(name="Bounds", default='OBJECT', items=[
        ('OBJECT', "Object", "The X/Y extent of the Within object"), ('BOX', "Box", "From Min to Max")])
    bounds_object: object_pointer("Within", "Object must stay within this object's X/Y extent (e.g. the ground)")
    box_min: FloatVectorProperty(name="Min", subtype='XYZ', default=(-10.0, -10.0, -10.0))
    box_max: FloatVectorProperty(name="Max", subtype='XYZ', default=(10.0, 10.0, 10.0))
    reward: FloatProperty(name="Reward", default=0.0)
    draw_props = ("object", "bounds", "bounds_object", "box_min", "box_max", "reward")

    def draw(self, layout):
        draw_prop(layout, self, "object")
        layout.prop(self, "bounds", expand=True)
        if self.bounds == 'OBJECT':
            draw_prop(layout, self, "bounds_object")
        else:
            row = layout.row()
            row.column().prop(self, "box_min")
            row.column().prop(self, "box_max")
        layout.prop(self, "reward")

    def compile(self, ctx):
        spec = DoneSpec("out_of_bounds", self.name, obj=ctx.obj(self, "object"), reward=self.reward)
        if self.bounds == 'OBJECT':
            spec.other = ctx.obj(self, "bounds_object")
        else:
            spec.options = {"min": vec(self.box_min), "max": vec(self.box_max)}
            ctx.min_max(self, "box_min", "box_max")
        return spec
