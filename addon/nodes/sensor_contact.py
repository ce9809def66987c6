from bpy.props import FloatProperty
import bpy

from ..specs import SensorSpec
from ._common import object_pointer
from ._sensor import SensorNode


class DRLA_ContactSensorNode(SensorNode, bpy.types.Node):
    """Whether a body touches the ground: 1 when a ray cast straight down from its origin hits the
    Ground object within Distance, else 0 (a foot of a walker). The body's own hierarchy is passed through.
    Triggers: contact ground touch foot feet standing rigid body"""

    bl_idname = "DRLA_ContactSensorNode"
    bl_label = "Contact Sensor"
    menu_order = 49  # its place in its Add submenu (lower first)
    drla_category = "sensor"
    bl_width_default = 210

    object: object_pointer("Object", "The body (e.g. a foot)")
    ground: object_pointer("Ground", "The object that counts as the ground")
    distance: FloatProperty(name="Distance", default=0.1, min=1e-6, soft_max=10.0, unit='LENGTH',
                            description="Contact when the ground is at most this far below the origin")
    draw_props = ("object", "ground", "distance")

    def reading_size(self):
        return 1

    def compile(self, ctx):
        return SensorSpec("contact", self.name, 1, obj=ctx.obj(self, "object"), other=ctx.obj(self, "ground"),
                          scale=self.scale, options={"distance": self.distance})
