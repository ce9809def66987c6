from bpy.props import EnumProperty
import bpy

from ..node_tree import DRLANode
from .net_hidden_layer import ACTIVATIONS


class DRLA_NetworkNode(DRLANode, bpy.types.Node):
    """The network factory: input size from the state, the linked chain of hidden layers,
    one output per action. With no layers linked, the network is linear.
    Triggers: network neural net mlp factory architecture"""

    bl_idname = "DRLA_NetworkNode"
    bl_label = "Network"
    drla_category = "network"
    inputs_spec = (("DRLA_LayerSocket", "Layers"),)
    outputs_spec = (("DRLA_NetworkSocket", "Network"),)

    output_activation: EnumProperty(name="Output", items=ACTIVATIONS, default='LINEAR')
    draw_props = ("output_activation",)

    def summary(self):
        sizes, sock = [], self.inputs[0]
        for _ in range(64):
            if not sock.is_linked:
                break
            node = sock.links[0].from_node
            sizes.append(str(getattr(node, "size", "?")))
            if not node.inputs:
                break
            sock = node.inputs[0]
        return "in > " + " > ".join(reversed(sizes)) + (" > " if sizes else "") + "out"
