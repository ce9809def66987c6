from bpy.props import EnumProperty, FloatProperty, StringProperty
import bpy

from ..tree.node_tree import DRLANode
from ..specs import ContinuousSpec
from ._common import object_pointer
from .sensor_bones import bone_names


class DRLA_BoneActionsNode(DRLANode, bpy.types.Node):
    """Continuous actions: 3 values in [-1, 1] per bone, Euler angles scaled by Max Angle,
    set as the bone's rotation (Absolute) or added to it (Delta). Used by IK agents.
    Triggers: continuous bones rotation ik joints box"""

    bl_idname = "DRLA_BoneActionsNode"
    bl_label = "Bone Rotation Actions"
    menu_order = 120  # its place in its Add submenu (lower first)
    drla_category = "action"
    role = "action_set"
    menu_category = "Actions"
    outputs_spec = (("DRLA_ActionSetSocket", "Actions"),)

    armature: object_pointer("Armature", kind='ARMATURE')
    bones: StringProperty(name="Bones", description="Comma-separated bone names; empty = all bones")
    mode: EnumProperty(name="Mode", default='ABSOLUTE', items=[('ABSOLUTE', "Absolute", ""), ('DELTA', "Delta", "")])
    max_angle: FloatProperty(name="Max Angle", default=3.14159, min=0.0, max=6.2832, subtype='ANGLE')
    draw_props = ("armature", "bones", "mode", "max_angle")

    def summary(self):
        names = bone_names(self.bones)
        n = len(names) if names else (len(self.armature.pose.bones) if self.armature else 0)
        return f"{3 * n} continuous values"

    def compile(self, ctx):
        arm = ctx.obj(self, "armature", kind='ARMATURE')
        return ContinuousSpec(self.name, arm, ctx.bones(self, arm, self.bones), self.mode, self.max_angle)
