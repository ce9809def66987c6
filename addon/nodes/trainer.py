from bpy.props import IntProperty, StringProperty
import bpy

from ..node_tree import DRLANode


class DRLA_TrainerNode(DRLANode, bpy.types.Node):
    """The director: trains Agent in Environment for Total Steps (seeded), saving a checkpoint
    every Checkpoint Interval steps (0 = never) into Output.
    Triggers: train trainer director run start"""

    bl_idname = "DRLA_TrainerNode"
    bl_label = "Trainer"
    inputs_spec = (("DRLA_EnvironmentSocket", "Environment"), ("DRLA_AgentSocket", "Agent"))
    outputs_spec = (("DRLA_ModelSocket", "Model"),)

    total_steps: IntProperty(name="Total Steps", default=20000, min=1)
    seed: IntProperty(name="Seed", default=0, min=0)
    checkpoint_interval: IntProperty(name="Checkpoint Every", default=0, min=0)
    output_path: StringProperty(name="Output", default="//drla_out", subtype='DIR_PATH',
                                options={'PATH_SUPPORTS_BLEND_RELATIVE'})
    draw_props = ("total_steps", "seed", "checkpoint_interval", "output_path")
