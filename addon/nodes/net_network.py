from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty
import bpy

from ..tree.node_tree import DRLANode, draw_prop
from .net_hidden_layer import ACTIVATIONS

GROW_HOW = [
    ('WIDEN', "Widen", "Each hidden layer gets Factor times its units, up to Max Width (Net2Net: the grown network "
                       "computes the same function, training carries on)"),
    ('DEEPEN', "Deepen", "An identity layer is inserted after the last hidden layer, up to Max Layers (exact after "
                         "a ReLU or Linear layer)"),
]


class DRLA_NetworkNode(DRLANode, bpy.types.Node):
    """The network factory: input size from the state, the linked chain of hidden layers,
    one output per action. With no layers linked, the network is linear.
    Grow on Plateau: while a DQN agent trains, the network grows (widens or deepens, keeping what it
    computes and the optimiser's state) when the evaluation return has not improved for Patience
    evaluations (the Trainer must evaluate).
    Triggers: network neural net mlp factory architecture grow growth widen deepen net2net"""

    bl_idname = "DRLA_NetworkNode"
    bl_label = "Network"
    menu_order = 240  # its place in its Add submenu (lower first)
    drla_category = "network"
    menu_category = "Network"
    bl_width_default = 210
    inputs_spec = (("DRLA_LayerSocket", "Layers"),)
    outputs_spec = (("DRLA_NetworkSocket", "Network"),)

    output_activation: EnumProperty(name="Output", items=ACTIVATIONS, default='LINEAR')
    grow: BoolProperty(name="Grow on Plateau", default=False,
                       description="Grow the network while it trains when the evaluation return stops improving "
                                   "(DQN; the Trainer's Evaluate Every must be set)")
    grow_patience: IntProperty(name="Patience", default=3, min=1, max=1000,
                               description="Evaluations without a better return before the network grows")
    grow_how: EnumProperty(name="How", items=GROW_HOW, default='WIDEN')
    grow_factor: IntProperty(name="Factor", default=2, min=2, max=16,
                             description="Widen: each hidden layer's units are multiplied by this")
    grow_max_width: IntProperty(name="Max Width", default=256, min=1, max=4096,
                                description="Widen: no hidden layer grows beyond this many units")
    grow_max_layers: IntProperty(name="Max Layers", default=4, min=1, max=32,
                                 description="Deepen: no more hidden layers than this")
    grow_max_times: IntProperty(name="Max Growths", default=3, min=1, max=100,
                                description="The network grows at most this many times in a run")
    grow_min_delta: FloatProperty(name="Min Gain", default=0.0, min=0.0, soft_max=100.0,
                                  description="An evaluation counts as better when it beats the best so far by more "
                                              "than this")
    draw_props = ("output_activation", "grow")
    grow_props = ("grow_patience", "grow_how", "grow_factor", "grow_max_width", "grow_max_layers", "grow_max_times",
                  "grow_min_delta")

    def draw(self, layout) -> None:
        draw_prop(layout, self, "output_activation")
        layout.prop(self, "grow")
        if self.grow:
            col = layout.column(align=True)
            for name in ("grow_patience", "grow_how", "grow_max_times"):
                draw_prop(col, self, name)
            if self.grow_how == 'WIDEN':
                draw_prop(col, self, "grow_factor")
                draw_prop(col, self, "grow_max_width")
            else:
                draw_prop(col, self, "grow_max_layers")
            draw_prop(col, self, "grow_min_delta")

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

    def growth_rule(self, ctx) -> dict | None:
        """Grow on Plateau as plain data (``drla_core.nets.growth.GrowthRule``'s arguments), or None when off;
        problems are reported on this node through ``ctx``."""
        if not self.grow:
            return None
        hidden = self.hidden_layers()
        if not hidden:
            ctx.error(self, "Grow on Plateau needs at least one Hidden Layer linked (a linear network cannot grow)")
        elif self.grow_how == 'DEEPEN' and hidden[-1][1] not in ("relu", "linear"):
            ctx.error(self, f"Deepen inserts an identity layer, exact only after a ReLU or Linear layer; the last "
                            f"hidden layer is {hidden[-1][1]}: use Widen, or a ReLU last layer")
        elif self.grow_how == 'WIDEN' and all(size >= self.grow_max_width for size, _ in hidden):
            ctx.error(self, f"every hidden layer already has Max Width ({self.grow_max_width}) units or more: "
                            "raise Max Width to let it grow")
        elif self.grow_how == 'DEEPEN' and len(hidden) >= self.grow_max_layers:
            ctx.error(self, f"the network already has {len(hidden)} hidden layers (Max Layers "
                            f"{self.grow_max_layers}): raise Max Layers to let it grow")
        return {"patience": int(self.grow_patience), "how": self.grow_how.lower(), "factor": int(self.grow_factor),
                "max_size": int(self.grow_max_width), "max_layers": int(self.grow_max_layers),
                "max_grows": int(self.grow_max_times), "min_delta": float(self.grow_min_delta)}
