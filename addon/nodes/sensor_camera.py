from bpy.props import EnumProperty, FloatProperty, IntProperty
import bpy

from ..specs import SensorSpec
from ._common import object_pointer
from ..tree.node_tree import draw_prop
from ._sensor import SensorNode


class DRLA_CameraSensorNode(SensorNode, bpy.types.Node):
    """What a camera sees, as a small picture flattened into the state.
    Modes: gray, RGB, black and white (gray above Threshold is 1), depth (distance / Max Depth).
    Triggers: camera pixels image vision render"""

    bl_idname = "DRLA_CameraSensorNode"
    bl_label = "Camera Sensor"
    menu_order = 30  # its place in its Add submenu (lower first)
    drla_category = "sensor"

    camera: object_pointer("Camera", "The camera to read", kind='CAMERA')
    width: IntProperty(name="Width", default=16, min=1, max=512, soft_max=128, description="Pixels across")
    height: IntProperty(name="Height", default=16, min=1, max=512, soft_max=128, description="Pixels down")
    mode: EnumProperty(name="Mode", default='GRAY', items=[
        ('GRAY', "Gray", "Luminance 0..1"), ('RGB', "RGB", "Three values per pixel"),
        ('BW', "Black / White", "1 where the gray value is above Threshold"), ('DEPTH', "Depth", "Distance")])
    threshold: FloatProperty(name="Threshold", default=0.5, min=0.0, max=1.0)
    max_depth: FloatProperty(name="Max Depth", default=50.0, min=0.001, soft_max=1000.0)
    method: EnumProperty(name="Method", default='GPU', items=[
        ('GPU', "GPU (fast)", "Draw the meshes with the gpu module"), ('WORKBENCH', "Workbench", "Render")])
    draw_props = ("camera", "width", "height", "mode", "threshold", "max_depth", "method")

    def draw(self, layout):
        draw_prop(layout, self, "camera")
        row = layout.row(align=True)
        row.prop(self, "width")
        row.prop(self, "height")
        draw_prop(layout, self, "mode")
        if self.mode == 'BW':
            layout.prop(self, "threshold")
        if self.mode == 'DEPTH':
            layout.prop(self, "max_depth")
        draw_prop(layout, self, "method")
        layout.prop(self, "scale")

    def reading_size(self):
        return self.width * self.height * (3 if self.mode == 'RGB' else 1)

    def compile(self, ctx):
        camera = ctx.obj(self, "camera", kind='CAMERA')
        options = {"width": self.width, "height": self.height, "mode": self.mode, "threshold": self.threshold,
                   "max_depth": self.max_depth, "method": self.method.lower()}
        return SensorSpec("camera", self.name, self.reading_size(), obj=camera, scale=self.scale, options=options)
