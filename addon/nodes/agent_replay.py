from bpy.props import IntProperty
import bpy

from ..tree.node_tree import DRLANode


class DRLA_ReplayMemoryNode(DRLANode, bpy.types.Node):
    """Replay memory: the last Capacity transitions, sampled in batches to learn from.
    Learning starts once Learning Starts transitions are stored.
    Triggers: replay memory buffer batch experience"""

    bl_idname = "DRLA_ReplayMemoryNode"
    bl_label = "Replay Memory"
    menu_order = 220  # its place in its Add submenu (lower first)
    drla_category = "agent"
    menu_category = "Agent"
    bl_width_default = 200
    outputs_spec = (("DRLA_ReplaySocket", "Replay"),)

    capacity: IntProperty(name="Capacity", default=100000, min=1, max=100_000_000, soft_max=1_000_000,
                           description="Transitions kept; the oldest are dropped first")
    batch_size: IntProperty(name="Batch Size", default=64, min=1, max=65_536, soft_max=1024,
                             description="Transitions per gradient step")
    learning_starts: IntProperty(name="Learning Starts", default=1000, min=0, soft_max=100_000,
                                  description="Steps of pure collection before the first gradient step")
    draw_props = ("capacity", "batch_size", "learning_starts")
