from bpy.props import EnumProperty, FloatProperty, StringProperty
import bpy

from ..specs import ActionSpec
from ..tree.node_tree import DRLANode
from ._common import object_pointer

#: Motion -> the constraint's switch and the property the action writes.
MOTOR_PATHS = {'LINEAR': ("use_motor_lin", "rigid_body_constraint.motor_lin_target_velocity"),
               'ANGULAR': ("use_motor_ang", "rigid_body_constraint.motor_ang_target_velocity")}


class DRLA_MotorActionNode(DRLANode, bpy.types.Node):
    """A continuous action for rigid-body physics: drives the motor of a Motor rigid-body constraint
    (Blender's motors are their own constraint type, beside the Hinge or Slider that guides the bodies).
    Each step the agent's value in [-1, 1] times Max Velocity is the motor's target velocity (m/s or
    rad/s). Link Motor actions into an Action Set: together they are a continuous action space.
    Triggers: motor continuous physics rigid body constraint hinge slider torque drive"""

    bl_idname = "DRLA_MotorActionNode"
    bl_label = "Motor Action"
    menu_order = 110  # its place in its Add submenu (lower first): after the Action
    drla_category = "action"
    role = "action"
    menu_category = "Actions"
    bl_width_default = 210
    outputs_spec = (("DRLA_ActionSocket", "Action"),)

    action_name: StringProperty(name="Name", default="motor")
    constraint: object_pointer("Constraint", "The object holding the Motor rigid-body constraint")
    motion: EnumProperty(name="Motion", default='ANGULAR', items=[
        ('ANGULAR', "Angular", "The motor's angular velocity (rad/s): turns a hinge"),
        ('LINEAR', "Linear", "The motor's linear velocity (m/s): pushes along a slider")])
    max_velocity: FloatProperty(name="Max Velocity", default=2.0, min=0.0, soft_max=100.0,
                                description="Target velocity at an action of 1 (m/s or rad/s)")
    draw_props = ("action_name", "constraint", "motion", "max_velocity")

    def summary(self):
        return f"{self.motion.lower()} x {self.max_velocity:g}"

    def compile(self, ctx):
        """A ``MOTOR`` action: the constraint object, the velocity path it writes and Max Velocity."""
        name = ctx.obj(self, "constraint")
        switch, path = MOTOR_PATHS[self.motion]
        ob = self.constraint
        rbc = getattr(ob, "rigid_body_constraint", None) if ob is not None else None
        if ob is not None and rbc is None:
            ctx.error(self, f"'{ob.name}' has no rigid-body constraint: add a Motor constraint to it")
        elif rbc is not None and rbc.type != 'MOTOR':
            ctx.error(self, f"the constraint of '{ob.name}' is {rbc.type.title()}, not Motor: motors are their own "
                            "constraint type in Blender (add a Motor constraint between the same two bodies)")
        elif rbc is not None and not getattr(rbc, switch):
            ctx.error(self, f"the {self.motion.title()} motor of '{ob.name}' is off: turn it on in its constraint")
        return ActionSpec("MOTOR", self.action_name.strip(), self.name, obj=name, path=path,
                          value=self.max_velocity, options={"motion": self.motion})
