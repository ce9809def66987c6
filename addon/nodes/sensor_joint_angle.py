from bpy.props import EnumProperty
import bpy

from ..specs import SensorSpec
from ._common import axis_enum, object_pointer
from ._sensor import SensorNode


class DRLA_JointAngleSensorNode(SensorNode, bpy.types.Node):
    """The angle (radians, -pi..pi) by which body B is turned relative to body A about an axis: A's own
    axis (Objects), or a Hinge rigid-body constraint's axis between its two bodies (Hinge). Zero when
    both bodies are turned alike about the axis (their rest pose when both were built unrotated).
    Triggers: joint angle hinge rigid body pole relative rotation"""

    bl_idname = "DRLA_JointAngleSensorNode"
    bl_label = "Joint Angle Sensor"
    menu_order = 47  # its place in its Add submenu (lower first): after the Velocity Sensor
    drla_category = "sensor"
    bl_width_default = 220

    source: EnumProperty(name="Joint", default='OBJECTS', items=[
        ('OBJECTS', "Objects", "Body B relative to body A about A's Axis"),
        ('HINGE', "Hinge", "The two bodies of a Hinge constraint, about its axis (the constraint's local Z)")])
    object_a: object_pointer("A", "The body the angle is measured from (empty: the world)")
    object_b: object_pointer("B", "The body whose angle is measured")
    axis: axis_enum("Axis", 'POS_Y', "A's local axis the angle turns about")
    hinge: object_pointer("Hinge", "The object holding the Hinge rigid-body constraint")
    draw_props = ("source", "object_a", "object_b", "axis", "hinge")

    def reading_size(self):
        return 1

    def compile(self, ctx):
        if self.source == 'HINGE':
            name = ctx.obj(self, "hinge")
            rbc = getattr(self.hinge, "rigid_body_constraint", None) if self.hinge is not None else None
            if self.hinge is not None and (rbc is None or rbc.type != 'HINGE'):
                ctx.error(self, f"'{self.hinge.name}' holds no Hinge rigid-body constraint")
            elif rbc is not None and rbc.object2 is None:
                ctx.error(self, f"the hinge of '{self.hinge.name}' joins no second body")
            a = rbc.object1.name if rbc is not None and rbc.object1 is not None else ""
            b = rbc.object2.name if rbc is not None and rbc.object2 is not None else ""
            return SensorSpec("joint_angle", self.name, 1, obj=b, other=a, scale=self.scale,
                              options={"hinge": name})
        return SensorSpec("joint_angle", self.name, 1, obj=ctx.obj(self, "object_b"),
                          other=ctx.obj(self, "object_a", required=False), scale=self.scale,
                          options={"axis": self.axis})
