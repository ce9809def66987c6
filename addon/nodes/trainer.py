from bpy.props import IntProperty, StringProperty
import bpy

from ..preferences import resolve_output_path
from ..specs import TrainerSpec
from ..tree.node_tree import DRLANode


class TrainerSettings(DRLANode):
    """What every trainer node sets: steps, seed, evaluations, checkpoints, the output folder."""

    drla_category = "output"
    role = "trainer"
    menu_category = "Output"
    bl_width_default = 210
    outputs_spec = (("DRLA_ModelSocket", "Model"),)

    total_steps: IntProperty(name="Total Steps", default=20000, min=1, soft_max=10_000_000)
    seed: IntProperty(name="Seed", default=0, min=0)
    checkpoint_interval: IntProperty(name="Checkpoint Every", default=0, min=0, soft_max=1_000_000,
                                      description="Save a checkpoint every this many steps (0: never)")
    eval_interval: IntProperty(name="Evaluate Every", default=0, min=0, soft_max=1_000_000,
                               description="Greedy evaluation every this many steps (0: never). The DQN agent's "
                                           "Keep Best keeps the network of the best evaluation")
    eval_episodes: IntProperty(name="Eval Episodes", default=5, min=1, max=100_000, soft_max=100,
                               description="Episodes per evaluation")
    output_path: StringProperty(name="Output", default="//drla_out", subtype='DIR_PATH',
                                options={'PATH_SUPPORTS_BLEND_RELATIVE'})
    draw_props = ("total_steps", "seed", "eval_interval", "eval_episodes", "checkpoint_interval", "output_path")

    def compile(self, ctx):
        return TrainerSpec(self.name, self.total_steps, self.seed, self.checkpoint_interval,
                           resolve_output_path(self.output_path), ctx.exports(), self.eval_interval, self.eval_episodes)


class DRLA_TrainerNode(TrainerSettings, bpy.types.Node):
    """The director: trains Agent in Environment for Total Steps (seeded), evaluating the greedy
    policy every Evaluate Every steps (0 = never; the agent's Keep Best needs evaluations) and
    saving a checkpoint every Checkpoint Interval steps (0 = never) into Output.
    Triggers: train trainer director run start"""

    bl_idname = "DRLA_TrainerNode"
    bl_label = "Trainer"
    menu_order = 260  # its place in its Add submenu (lower first)
    inputs_spec = (("DRLA_EnvironmentSocket", "Environment"), ("DRLA_AgentSocket", "Agent"))

    demonstration: StringProperty(name="Demo", default="", subtype='FILE_PATH',
                                  options={'PATH_SUPPORTS_BLEND_RELATIVE'},
                                  description="A demonstration file (.npz: recorded by keyboard or from keyframes) the "
                                              "agent learns from first: DQN is pre-trained on it and keeps it in its "
                                              "replay; empty: none")
    draw_props = TrainerSettings.draw_props + ("demonstration",)

    def compile(self, ctx):
        spec = super().compile(ctx)
        spec.demonstration = bpy.path.abspath(self.demonstration) if self.demonstration else ""
        return spec
