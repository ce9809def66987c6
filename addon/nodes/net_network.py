from bpy.props import EnumProperty
import bpy

from ..tree.node_tree import DRLANode
from .net_hidden_layer import ACTIVATIONS


class DRLA_NetworkNode(DRLANode, bpy.types.Node):
    """The network factory: input size from the state, the linked chain of hidden layers,
    one output per action. With no layers linked, the network is linear.
    Triggers: network neural net mlp factory architecture"""

    bl_idname = "DRLA_NetworkNode"
    bl_label = "Network"
    menu_order = 240  # its place in its Add submenu (lower first)
    drla_category = "network"
    menu_category = "Network"
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

    def hidden_layers(self) -> list[tuple[int, str]]:
        """The Hidden Layer chain linked into it, input side first: ``[(size, activation), ...]``."""
        hidden, sock, seen = [], self.inputs["Layers"], set()
        while sock.is_linked:
            layer = sock.links[0].from_node
            if layer.name in seen or layer.bl_idname != "DRLA_HiddenLayerNode":
                break
            seen.add(layer.name)
            hidden.append((layer.size, layer.activation.lower()))
            sock = layer.inputs["Previous"]
        return hidden[::-1]
