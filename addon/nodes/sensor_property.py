from bpy.props import EnumProperty, FloatProperty, StringProperty
import bpy

from ..specs import SensorSpec
from ._common import object_pointer
from ..tree.node_tree import draw_prop
from ._sensor import SensorNode


class DRLA_PropertySensorNode(SensorNode, bpy.types.Node):
    """A number read from an object or the scene: a custom property name (score)
    or an RNA path (location.z, ["score"]).
    Triggers: custom property score rna path value"""

    bl_idname = "DRLA_PropertySensorNode"
    bl_label = "Property Sensor"
    menu_order = 60  # its place in its Add submenu (lower first)
    drla_category = "sensor"

    source: EnumProperty(name="Source", default='OBJECT', items=[('OBJECT', "Object", ""), ('SCENE', "Scene", "")])
    object: object_pointer("Object")
    property: StringProperty(name="Property", default="score", description="Custom property name or RNA path")
    # The reading's range (before Scale): the observation space's bounds; a value outside is clipped to it.
    # The defaults hold what the example scenes read (a score, an angle), and a file saved before these
    # existed gets them.
    value_min: FloatProperty(name="Min", default=-1000.0, min=-1e9, max=1e9,
                             description="The smallest value the property takes (lower ones read as this); the "
                                         "observation space's lower bound, before Scale")
    value_max: FloatProperty(name="Max", default=1000.0, min=-1e9, max=1e9,
                             description="The largest value the property takes (higher ones read as this); the "
                                         "observation space's upper bound, before Scale")
    draw_props = ("source", "object", "property")  # Min and Max: in the sidebar (draw_buttons_ext)

    def draw(self, layout):
        layout.prop(self, "source", expand=True)
        if self.source == 'OBJECT':
            draw_prop(layout, self, "object")
        draw_prop(layout, self, "property")
        layout.prop(self, "scale")

    def draw_buttons_ext(self, context, layout):
        """The sidebar (N > Node): everything, and the range (the node itself shows it in its summary line)."""
        self.draw(layout)
        row = layout.row(align=True)
        row.prop(self, "value_min")
        row.prop(self, "value_max")

    def summary(self):
        return f"size 1, range {self.value_min:g} to {self.value_max:g} (sidebar)"

    def reading_size(self):
        return 1

    def compile(self, ctx):
        owner = ctx.obj(self, "object") if self.source == 'OBJECT' else ""
        path = ctx.prop_path(self, owner, self.property, self.source)
        if not self.value_min < self.value_max:
            ctx.error(self, f"Min ({self.value_min:g}) must be below Max ({self.value_max:g})")
        return SensorSpec("property", self.name, 1, obj=owner, path=path, scale=self.scale,
                          options={"source": self.source, "min": self.value_min, "max": self.value_max})
