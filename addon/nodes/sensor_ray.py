from bpy.props import FloatProperty, IntProperty
import bpy

from ..specs import SensorSpec
from ._common import axis_enum, object_pointer
from ._sensor import SensorNode


class DRLA_RaySensorNode(SensorNode, bpy.types.Node):
    """A fan of rays cast from an object: for each ray, the hit distance / Max Distance
    (1 = nothing hit). The fan spreads around the axis, in the object's local plane of axis and its neighbour.
    Triggers: ray cast lidar range finder whiskers"""

    bl_idname = "DRLA_RaySensorNode"
    bl_label = "Ray Sensor"
    menu_order = 80  # its place in its Add submenu (lower first)
    drla_category = "sensor"

    object: object_pointer("Object", "Rays start at this object's origin")
    axis: axis_enum()
    rays: IntProperty(name="Rays", default=5, min=1, max=256)
    spread: FloatProperty(name="Spread", default=1.5708, min=0.0, max=6.2832, subtype='ANGLE')
    max_distance: FloatProperty(name="Max Distance", default=20.0, min=0.001, soft_max=1000.0)
    draw_props = ("object", "axis", "rays", "spread", "max_distance")

    def reading_size(self):
        return self.rays

    def compile(self, ctx):
        return SensorSpec("ray", self.name, self.rays, obj=ctx.obj(self, "object"), scale=self.scale,
                          options={"axis": self.axis, "rays": self.rays, "spread": self.spread,
                                   "max_distance": self.max_distance})
