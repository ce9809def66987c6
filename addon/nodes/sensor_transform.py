from bpy.props import BoolProperty, EnumProperty
import bpy

from ..specs import SensorSpec
from ._common import object_pointer
from ._sensor import SensorNode


class DRLA_TransformSensorNode(SensorNode, bpy.types.Node):
    """Location and rotation of an object, in world space or relative to another object.
    Rotation is Euler XYZ in radians (3 values) or a quaternion (4 values).
    Triggers: location rotation position orientation matrix"""

    bl_idname = "DRLA_TransformSensorNode"
    bl_label = "Transform Sensor"
    menu_order = 40  # its place in its Add submenu (lower first)
    drla_category = "sensor"
    bl_width_default = 220

    object: object_pointer("Object")
    relative_to: object_pointer("Relative To", "Read the transform in this object's space (empty = world)")
    use_location: BoolProperty(name="Location", default=True)
    use_rotation: BoolProperty(name="Rotation", default=False)
    rotation_format: EnumProperty(name="Rotation As", default='EULER', items=[
        ('EULER', "Euler", "XYZ angles in radians"), ('QUATERNION', "Quaternion", "w, x, y, z")])
    draw_props = ("object", "relative_to", "use_location", "use_rotation", "rotation_format")

    def reading_size(self):
        return 3 * self.use_location + (4 if self.rotation_format == 'QUATERNION' else 3) * self.use_rotation

    def compile(self, ctx):
        if not (self.use_location or self.use_rotation):
            ctx.error(self, "choose Location and/or Rotation")
        return SensorSpec("transform", self.name, self.reading_size(), obj=ctx.obj(self, "object"),
                          other=ctx.obj(self, "relative_to", required=False), scale=self.scale,
                          options={"location": self.use_location, "rotation": self.use_rotation,
                                   "rotation_format": self.rotation_format})
