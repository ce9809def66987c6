from bpy.props import EnumProperty, StringProperty
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
    draw_props = ("source", "object", "property")

    def draw(self, layout):
        layout.prop(self, "source", expand=True)
        if self.source == 'OBJECT':
            draw_prop(layout, self, "object")
        draw_prop(layout, self, "property")
        layout.prop(self, "scale")

    def reading_size(self):
        return 1

    def compile(self, ctx):
        owner = ctx.obj(self, "object") if self.source == 'OBJECT' else ""
        path = ctx.prop_path(self, owner, self.property, self.source)
        return SensorSpec("property", self.name, 1, obj=owner, path=path, scale=self.scale,
                          options={"source": self.source})
