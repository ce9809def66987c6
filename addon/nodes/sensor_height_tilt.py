from bpy.props import BoolProperty
import bpy

from ..specs import SensorSpec
from ._common import object_pointer
from ._sensor import SensorNode


class DRLA_HeightTiltSensorNode(SensorNode, bpy.types.Node):
    """How high a body is and how far it leans: Height is the world Z of its origin (m), Tilt the angle
    between its own up axis (local +Z) and the world's up (radians, 0 upright, pi upside down).
    Triggers: height tilt lean upright fall balance rigid body walker"""

    bl_idname = "DRLA_HeightTiltSensorNode"
    bl_label = "Height and Tilt Sensor"
    menu_order = 48  # its place in its Add submenu (lower first)
    drla_category = "sensor"
    bl_width_default = 220

    object: object_pointer("Object")
    use_height: BoolProperty(name="Height", default=True, description="World Z of the origin (1 value)")
    use_tilt: BoolProperty(name="Tilt", default=True, description="Angle of the local up axis from world up")
    draw_props = ("object", "use_height", "use_tilt")

    def reading_size(self):
        return int(self.use_height) + int(self.use_tilt)

    def compile(self, ctx):
        if not (self.use_height or self.use_tilt):
            ctx.error(self, "choose Height and/or Tilt")
        return SensorSpec("height_tilt", self.name, self.reading_size(), obj=ctx.obj(self, "object"),
                          scale=self.scale, options={"height": self.use_height, "tilt": self.use_tilt})
