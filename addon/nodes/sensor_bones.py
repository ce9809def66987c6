from bpy.props import StringProperty
import bpy

from ..specs import SensorSpec
from ._common import object_pointer
from ._sensor import SensorNode


def bone_names(text: str) -> list[str]:
    return [b.strip() for b in text.split(",") if b.strip()]


class DRLA_BoneRotationsSensorNode(SensorNode, bpy.types.Node):
    """Pose-bone rotations of an armature as quaternions (4 values per bone, w x y z).
    Bones: comma-separated names; empty means every bone.
    Triggers: armature bones quaternion pose joints rig"""

    bl_idname = "DRLA_BoneRotationsSensorNode"
    bl_label = "Bone Rotations Sensor"
    menu_order = 50  # its place in its Add submenu (lower first)
    drla_category = "sensor"

    armature: object_pointer("Armature", kind='ARMATURE')
    bones: StringProperty(name="Bones", description="Comma-separated bone names; empty = all bones")
    draw_props = ("armature", "bones")

    def reading_size(self):
        names = bone_names(self.bones)
        if not names and self.armature is not None:
            return 4 * len(self.armature.pose.bones)
        return 4 * len(names)

    def compile(self, ctx):
        arm = ctx.obj(self, "armature", kind='ARMATURE')
        bones = ctx.bones(self, arm, self.bones)
        if arm and not bones:
            ctx.error(self, "the armature has no bones")
        return SensorSpec("bones", self.name, 4 * len(bones), obj=arm, bones=bones, scale=self.scale)
