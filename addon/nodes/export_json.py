from bpy.props import StringProperty
import bpy

from ..tree.node_tree import DRLANode


class DRLA_ExportJSONNode(DRLANode, bpy.types.Node):
    """Writes the trained model to a JSON file (the DRLA model format) when training ends.
    Triggers: export json save model weights file"""

    bl_idname = "DRLA_ExportJSONNode"
    bl_label = "Export JSON"
    menu_order = 270  # its place in its Add submenu (lower first)
    drla_category = "output"
    role = "export"
    menu_category = "Output"
    bl_width_default = 210
    bl_icon = 'EXPORT'
    inputs_spec = (("DRLA_ModelSocket", "Model"),)

    filepath: StringProperty(name="File", default="//model.json", subtype='FILE_PATH',
                              options={'PATH_SUPPORTS_BLEND_RELATIVE'})
    draw_props = ("filepath",)
