"""The DRLA node tree and the node base mixin every DRLA node uses.

A node file declares its sockets and properties as class attributes, at most a short ``draw``,
and ``compile(ctx)``, which turns the node into its plain-data spec (``addon.specs``); the mixin
turns the declarations into Blender's ``init`` / ``draw_buttons`` callbacks (the Animation Nodes
shape). ``menu_category`` places the node in the Add menu. Errors found by
``tree.compiler.compile_tree`` are stored in ``node.drla_error`` and drawn in red on the node;
nothing here ever raises into Blender.
"""

from __future__ import annotations

from bpy.props import StringProperty
from bpy.types import NodeTree

TREE_ID = "DRLA_NodeTree"


class DRLA_NodeTree(NodeTree):
    """Deep reinforcement learning: describe what an agent sees, does and is rewarded for"""

    bl_idname = TREE_ID
    bl_label = "DRLA"
    bl_icon = 'OUTLINER_OB_ARMATURE'

    #: The full training state written when a run of this tree last stopped (``runs.train``): saved with
    #: the .blend, so Resume continues after the file is closed and opened again.
    drla_last_checkpoint: StringProperty(name="Last Checkpoint", subtype='FILE_PATH', options={'HIDDEN'},
                                         description="Where the stopped run's training state was written")


class DRLANode:
    """Mixin for every DRLA node.

    Class attributes:
        inputs_spec: ``(socket_idname, name)`` or ``(socket_idname, name, multi)`` tuples.
        outputs_spec: ``(socket_idname, name)`` tuples.
        draw_props: property names drawn on the node (and read by the compiler).
        drla_category: its look (body tint, header icon): sensor, state, action, reward, ending,
            network, agent or output (``nodes._common.CATEGORIES``).
        role: what the compiler may link it as: sensor, action, action_set, reward, ending,
            environment, agent, trainer, export ('' for parts another node reads itself).
        menu_category: its submenu of the Add menu ("Sensors", "Actions", ...).
        menu_order: its place in that submenu (lower first; ties by label).
    """

    bl_width_default = 190
    drla_category = ""
    role = ""
    menu_category = "Other"
    menu_order = 1000
    inputs_spec: tuple = ()
    outputs_spec: tuple = ()
    draw_props: tuple[str, ...] = ()

    drla_error: StringProperty(name="Error", description="Problem found when the tree was compiled")

    @classmethod
    def poll(cls, ntree):
        return ntree.bl_idname == TREE_ID

    def init(self, context):
        for spec in self.inputs_spec:
            socket = self.inputs.new(spec[0], spec[1], use_multi_input=len(spec) > 2 and bool(spec[2]))
            if len(spec) > 2 and spec[2]:
                socket.link_limit = 4095
        for idname, name in self.outputs_spec:
            self.outputs.new(idname, name)
        color = getattr(self, "drla_color", None)  # the category's tint (nodes/_common.CATEGORIES)
        if color is not None:
            self.use_custom_color = True
            self.color = color

    def draw_buttons(self, context, layout):
        try:
            if self.drla_error:
                col = layout.column(align=True)
                col.alert = True
                for i, line in enumerate(self.drla_error.splitlines()):
                    col.label(text=line, icon='ERROR' if i == 0 else 'BLANK1')
            self.draw(layout)
            summary = self.summary()
            if summary:
                layout.label(text=summary, icon='INFO')
        except Exception as exc:  # never raise into Blender's UI
            layout.label(text=f"draw failed: {exc}", icon='ERROR')

    def draw(self, layout) -> None:
        """Draw the properties; override for conditional layouts."""
        for name in self.draw_props:
            draw_prop(layout, self, name)

    def summary(self) -> str:
        """A one-line fact shown under the properties (e.g. an observation size)."""
        return ""

    def compile(self, ctx):
        """This node as plain data (a spec from ``addon.specs``), errors reported through ``ctx``
        (``tree.compiler.CompileContext``). Nodes another node reads (a Hidden Layer, an Epsilon
        Schedule) compile nothing of their own."""
        return None

    def update(self):  # Blender calls this on link changes: nothing to do, never raise
        pass


#: The share of a node's width its labels get (object, menu and text fields).
LABEL_FACTOR = 0.38


def draw_prop(layout, node, name: str, text: str | None = None) -> None:
    """``layout.prop``, but an object, menu or text field gets its label in a column of its own,
    LABEL_FACTOR of the node's width: Blender's own row gives a label only what its text asks
    for against the field's, and cuts "Relative To" or "Property" to "Relati…" and "Prop…"."""
    prop = node.bl_rna.properties.get(name)
    label = (prop.name if prop is not None else name) if text is None else text
    if prop is None or not label or prop.type not in {'POINTER', 'ENUM', 'STRING'} \
            or getattr(prop, "is_enum_flag", False):
        if text is None:
            layout.prop(node, name)
        else:
            layout.prop(node, name, text=text)
        return
    split = layout.split(factor=LABEL_FACTOR, align=True)
    split.label(text=f"{label}:")
    split.prop(node, name, text="")


def linked_nodes(socket) -> list:
    """Nodes feeding ``socket``, in the order drawn on a multi-input socket."""
    links = sorted((lk for lk in socket.links if not lk.is_muted),
                   key=lambda lk: getattr(lk, "multi_input_sort_id", 0))
    return [lk.from_node for lk in links]


classes = (DRLA_NodeTree,)
