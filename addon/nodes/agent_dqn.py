from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty
import bpy

from ..specs import AgentSpec
from ..tree.node_tree import DRLANode


class DRLA_DQNAgentNode(DRLANode, bpy.types.Node):
    """A Deep Q-Network agent: learns the value of each discrete action,
    Q(s, a) = r + gamma max Q(s', a'), and picks the best (epsilon-greedy while training).
    Its settings are here; the Epsilon, Replay and Network inputs set exploration, the replay
    memory and the network.
    Triggers: agent dqn q-learning deep q network"""

    bl_idname = "DRLA_DQNAgentNode"
    bl_label = "DQN Agent"
    menu_order = 200  # its place in its Add submenu (lower first)
    drla_category = "agent"
    role = "agent"
    menu_category = "Agent"
    agent_kind = "dqn"
    needs_environment = True
    bl_width_default = 220
    inputs_spec = (("DRLA_NetworkSocket", "Network"), ("DRLA_EpsilonSocket", "Epsilon"),
                   ("DRLA_ReplaySocket", "Replay"))
    outputs_spec = (("DRLA_AgentSocket", "Agent"),)

    learning_rate: FloatProperty(name="Learning Rate", default=2.3e-3, min=1e-8, max=1.0, soft_min=1e-5, soft_max=0.1,
                                 precision=5,
                                 description="Adam step size")
    gamma: FloatProperty(name="Gamma", default=0.99, min=0.0, max=1.0, soft_min=0.8,
                         description="Discount factor of future rewards")
    train_freq: IntProperty(name="Train Every", default=256, min=1, max=1_000_000, soft_max=10_000,
                            description="Env steps between training phases")
    gradient_steps: IntProperty(name="Gradient Steps", default=128, min=1, max=100_000, soft_max=1000,
                                description="Gradient steps per training phase")
    target_update_interval: IntProperty(name="Target Update", default=10, min=1, max=10_000_000, soft_max=100_000,
                                        description="Env steps between target network updates")
    tau: FloatProperty(name="Tau", default=1.0, min=0.001, max=1.0, description="Target update rate (1 = copy)")
    double_dqn: BoolProperty(name="Double DQN", default=True)
    max_grad_norm: FloatProperty(name="Max Grad Norm", default=10.0, min=1e-3, soft_max=100.0,
                                 description="Gradients are scaled down to at most this length")
    loss: EnumProperty(name="Loss", default='HUBER', items=[('HUBER', "Huber", ""), ('MSE', "MSE", "")])
    keep_best: BoolProperty(name="Keep Best", default=True,
                            description="Restore the parameters with the best evaluation when training ends")
    draw_props = ("learning_rate", "gamma", "train_freq", "gradient_steps", "target_update_interval", "tau",
                  "double_dqn", "max_grad_norm", "loss", "keep_best")

    def compile(self, ctx):
        """The hyper-parameters by the node's names (``runs.build.dqn_config`` maps them), with the
        Network, Epsilon Schedule and Replay Memory linked into it."""
        if ctx.env is not None and ctx.env.continuous is not None:
            ctx.error(self, "a DQN agent needs a discrete Action Set, not continuous actions")
        config = {p: getattr(self, p) for p in self.draw_props}
        net = ctx.input(self, "Network", required=False)
        spec = AgentSpec(self.name, self.agent_kind, config)
        if net is not None:
            spec.hidden = net.hidden_layers()
            spec.output_activation = net.output_activation.lower()
            growth = net.growth_rule(ctx)  # Grow on Plateau (runs.build turns it into a GrowthRule)
            if growth is not None:
                config["growth"] = dict(growth, node=net.name)
            if spec.output_activation != "linear":
                ctx.error(net, "a DQN agent needs a Linear output (Q-values are unbounded)")
        eps = ctx.input(self, "Epsilon", required=False)
        if eps is not None:
            config.update(epsilon_start=eps.start, epsilon_end=eps.end, epsilon_fraction=eps.fraction)
        rep = ctx.input(self, "Replay", required=False)
        if rep is not None:
            config.update(buffer_size=rep.capacity, batch_size=rep.batch_size, learning_starts=rep.learning_starts)
        return spec
