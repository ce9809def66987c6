from bpy.props import BoolProperty, FloatProperty, IntProperty
import bpy

from ..specs import AgentSpec
from ..tree.node_tree import DRLANode


class DRLA_SACAgentNode(DRLANode, bpy.types.Node):
    """A Soft Actor-Critic agent for continuous actions (Motor Action, Bone Rotation): a Gaussian policy
    squashed into [-1, 1], two critics valuing it, and an entropy temperature learnt so that it keeps
    exploring as much as it needs. Replay memory as DQN's (the Replay input), hidden layers from the Network
    input (the same layers for the policy and each critic).
    Triggers: agent sac soft actor critic continuous motor actor-critic"""

    bl_idname = "DRLA_SACAgentNode"
    bl_label = "SAC Agent"
    menu_order = 205  # its place in its Add submenu (lower first): after the DQN Agent
    drla_category = "agent"
    role = "agent"
    menu_category = "Agent"
    agent_kind = "sac"
    needs_environment = True
    bl_width_default = 220
    inputs_spec = (("DRLA_NetworkSocket", "Network"), ("DRLA_ReplaySocket", "Replay"))
    outputs_spec = (("DRLA_AgentSocket", "Agent"),)

    learning_rate: FloatProperty(name="Learning Rate", default=1e-3, min=1e-8, max=1.0, soft_min=1e-5, soft_max=0.1,
                                 precision=5, description="Adam step size of the policy, the critics and the "
                                                          "temperature")
    gamma: FloatProperty(name="Gamma", default=0.99, min=0.0, max=1.0, soft_min=0.8,
                         description="Discount factor of future rewards")
    train_freq: IntProperty(name="Train Every", default=1, min=1, max=1_000_000, soft_max=1000,
                            description="Env steps between training phases")
    gradient_steps: IntProperty(name="Gradient Steps", default=1, min=1, max=100_000, soft_max=1000,
                                description="Gradient steps per training phase")
    tau: FloatProperty(name="Tau", default=0.005, min=0.0001, max=1.0, precision=4,
                       description="Rate at which the target critics follow the critics after each gradient step")
    init_temperature: FloatProperty(name="Temperature", default=1.0, min=1e-6, max=1e6, soft_max=10.0,
                                    description="The entropy temperature alpha at the start")
    learn_temperature: BoolProperty(name="Learn Temperature", default=True,
                                    description="Learn alpha so the policy's entropy tends to minus the number of "
                                                "action values")
    keep_best: BoolProperty(name="Keep Best", default=True,
                            description="Restore the policy with the best evaluation when training ends")
    draw_props = ("learning_rate", "gamma", "train_freq", "gradient_steps", "tau", "init_temperature",
                  "learn_temperature", "keep_best")

    def compile(self, ctx):
        """The hyper-parameters by ``SACConfig``'s names (``runs.build.sac_config_of`` reads them), with the
        Network's hidden layers and the Replay Memory's settings."""
        if ctx.env is not None and ctx.env.continuous is None:
            ctx.error(self, "a SAC agent needs continuous actions (a Motor Action or Bone Rotation node), not an "
                            "Action Set: use a DQN Agent for a set of actions")
        config = {p: getattr(self, p) for p in self.draw_props}
        spec = AgentSpec(self.name, self.agent_kind, config, hidden=[(64, "relu"), (64, "relu")])
        net = ctx.input(self, "Network", required=False)
        if net is not None:
            if getattr(net, "grow", False):
                ctx.error(net, "Grow on Plateau grows a DQN Agent's network; a SAC Agent's networks keep their "
                               "layers: turn Grow on Plateau off")
            spec.hidden = net.hidden_layers()
        rep = ctx.input(self, "Replay", required=False)
        if rep is not None:
            config.update(buffer_size=rep.capacity, batch_size=rep.batch_size, learning_starts=rep.learning_starts)
        return spec
