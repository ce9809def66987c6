from bpy.props import EnumProperty, IntProperty
import bpy

from ..tree.node_tree import DRLANode

ACTIVATIONS = [(a.upper(), a.replace("_", " ").title(), "") for a in
               ("relu", "tanh", "leaky_relu", "linear", "sigmoid")]


class DRLA_HiddenLayerNode(DRLANode, bpy.types.Node):
    """One hidden layer: Size neurons and an activation. Chain layers from the input side:
    each layer's Previous input takes the layer before it; the last one feeds a Network.
    Triggers: hidden layer neurons dense fully connected"""

    bl_idname = "DRLA_HiddenLayerNode"
    bl_label = "Hidden Layer"
    menu_order = 250  # its place in its Add submenu (lower first)
    drla_category = "network"
    menu_category = "Network"
    bl_width_default = 200
    inputs_spec = (("DRLA_LayerSocket", "Previous"),)
    outputs_spec = (("DRLA_LayerSocket", "Layer"),)

    size: IntProperty(name="Size", default=64, min=1, max=4096, soft_max=512, description="Neurons in this layer")
    activation: EnumProperty(name="Activation", items=ACTIVATIONS, default='RELU')
    draw_props = ("size", "activation")
