from bpy.props import FloatProperty
import bpy

from ..specs import SensorSpec
from ._sensor import SensorNode


class DRLA_ClockSensorNode(SensorNode, bpy.types.Node):
    """A clock: sin and cos of the scene time (seconds since the start frame) at a frequency. A purely
    reactive network has no sense of time; with a clock it can beat a rhythm (a gait: a walker's legs
    swinging in turn, a central pattern generator's phase given from outside).
    Triggers: clock phase time rhythm gait oscillator sine cycle walk"""

    bl_idname = "DRLA_ClockSensorNode"
    bl_label = "Clock Sensor"
    menu_order = 50  # its place in its Add submenu (lower first): after the Contact Sensor
    drla_category = "sensor"

    frequency: FloatProperty(name="Frequency", default=1.0, min=0.0, soft_max=10.0, unit='NONE',
                             description="Cycles per second of scene time (Hz)")
    draw_props = ("frequency",)

    def reading_size(self):
        return 2

    def compile(self, ctx):
        return SensorSpec("clock", self.name, 2, scale=self.scale, options={"frequency": float(self.frequency)})
