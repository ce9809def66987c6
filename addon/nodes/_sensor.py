"""Base for sensor nodes: one Sensor output, a Scale, and the reading size drawn on the node."""

from bpy.props import FloatProperty

from ..tree.node_tree import DRLANode, draw_prop


class SensorNode(DRLANode):
    role = "sensor"
    menu_category = "Sensors"
    outputs_spec = (("DRLA_SensorSocket", "Sensor"),)
    scale: FloatProperty(name="Scale", default=1.0, soft_min=-100.0, soft_max=100.0,
                         description="Multiplies the reading (normalisation)")

    def reading_size(self) -> int:
        return 0

    def draw(self, layout):
        for name in self.draw_props:
            draw_prop(layout, self, name)
        layout.prop(self, "scale")

    def summary(self):
        return f"size {self.reading_size()}"
