import bpy

from ..specs import SensorSpec
from ._common import object_pointer
from ._sensor import SensorNode


class DRLA_DistanceSensorNode(SensorNode, bpy.types.Node):
    """World-space distance between two objects' origins (1 value).
    Triggers: distance range proximity"""

    bl_idname = "DRLA_DistanceSensorNode"
    bl_label = "Distance Sensor"
    menu_order = 70  # its place in its Add submenu (lower first)
    drla_category = "sensor"

    object_a: object_pointer("From")
    object_b: object_pointer("To")
    draw_props = ("object_a", "object_b")

    def reading_size(self):
        return 1

    def compile(self, ctx):
        return SensorSpec("distance", self.name, 1, obj=ctx.obj(self, "object_a"), other=ctx.obj(self, "object_b"),
                          scale=self.scale)
