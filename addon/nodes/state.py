from bpy.props import FloatProperty, IntProperty
import bpy

from ..specs import StateSpec
from ..tree.node_tree import DRLANode, linked_nodes


class DRLA_StateNode(DRLANode, bpy.types.Node):
    """Gathers sensor readings, in link order, into one observation vector.
    Each sensor's Scale multiplies its values; Clip (when above 0) bounds every value to [-Clip, Clip].
    Frames above 1 stack the last readings (oldest first) into one observation, so an agent sees motion.
    Triggers: observation state vector"""

    bl_idname = "DRLA_StateNode"
    bl_label = "State"
    menu_order = 20  # its place in its Add submenu (lower first)
    drla_category = "state"
    role = "state"
    menu_category = "Environment"
    inputs_spec = (("DRLA_SensorSocket", "Sensors", True),)
    outputs_spec = (("DRLA_StateSocket", "State"),)

    clip: FloatProperty(name="Clip", default=0.0, min=0.0, soft_max=100.0,
                        description="Bound values to [-Clip, Clip]; 0 = off")
    frames: IntProperty(name="Frames", default=1, min=1, max=16,
                        description="Stack the last readings (oldest first) into one observation, so the agent "
                                    "sees motion: speeds, directions. 1 = the current reading only")
    draw_props = ("clip", "frames")

    def summary(self):
        sizes = [getattr(n, "reading_size", lambda: 0)() for n in linked_nodes(self.inputs[0])]
        if self.frames > 1:
            return f"observation size {sum(sizes) * self.frames} ({self.frames} x {sum(sizes)})"
        return f"observation size {sum(sizes)}"

    def compile(self, ctx):
        sensor_nodes = linked_nodes(self.inputs["Sensors"])
        if not sensor_nodes:
            ctx.error(self, "no sensor is linked to it")
        return StateSpec(self.name, ctx.compile_linked(sensor_nodes, "sensor", "sensor"), self.clip, self.frames)
