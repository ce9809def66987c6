from bpy.props import BoolProperty, EnumProperty
import bpy

from ..specs import SensorSpec
from ._common import object_pointer
from ._sensor import SensorNode


class DRLA_VelocitySensorNode(SensorNode, bpy.types.Node):
    """Linear velocity (m/s) and angular velocity (rad/s) of an object, measured from its motion
    between two steps (Blender stores no velocity, not even for rigid bodies). The first reading of
    an episode is zero. World axes, or the object's own axes (forward speed of a walker).
    Triggers: velocity speed angular spin motion rigid body"""

    bl_idname = "DRLA_VelocitySensorNode"
    bl_label = "Velocity Sensor"
    menu_order = 45  # its place in its Add submenu (lower first): after the Transform Sensor
    drla_category = "sensor"
    bl_width_default = 220

    object: object_pointer("Object")
    use_linear: BoolProperty(name="Linear", default=True, description="Velocity of the origin, m/s (3 values)")
    use_angular: BoolProperty(name="Angular", default=False,
                              description="Spin about each axis, rad/s (3 values)")
    space: EnumProperty(name="Axes", default='WORLD', items=[
        ('WORLD', "World", "Along the world's X, Y, Z"),
        ('LOCAL', "Local", "Along the object's own X, Y, Z (as it is turned now)")])
    draw_props = ("object", "use_linear", "use_angular", "space")

    def reading_size(self):
        return 3 * self.use_linear + 3 * self.use_angular

    def compile(self, ctx):
        if not (self.use_linear or self.use_angular):
            ctx.error(self, "choose Linear and/or Angular")
        return SensorSpec("velocity", self.name, self.reading_size(), obj=ctx.obj(self, "object"), scale=self.scale,
                          options={"linear": self.use_linear, "angular": self.use_angular, "space": self.space})
