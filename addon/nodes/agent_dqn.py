from bpy.props import BoolProperty, FloatProperty, IntProperty
import bpy

from ..node_tree import DRLANode


class DRLA_DQNAgentNode(DRLANode, bpy.types.Node):
    """A Deep Q-Network agent: learns the value of each discrete action,
    Q(s, a) = r + gamma max Q(s', a'), and picks the best (epsilon-greedy while training).
    Properties mirror drla_core.dqn.DQNConfig.
    Triggers: agent dqn q-learning deep q network"""

    bl_idname = "DRLA_DQNAgentNode"
    bl_label = "DQN Agent"
    inputs_spec = (("DRLA_NetworkSocket", "Network"), ("DRLA_EpsilonSocket", "Epsilon"),
                   ("DRLA_ReplaySocket", "Replay"))
    outputs_spec = (("DRLA_AgentSocket", "Agent"),)

    learning_rate: FloatProperty(name="Learning Rate", default=1e-3, min=0.0, precision=5)
    gamma: FloatProperty(name="Gamma", default=0.99, min=0.0, max=1.0, description="Discount factor")
    train_frequency: IntProperty(name="Train Every", default=1, min=1, description="Env steps per update")
    target_update_interval: IntProperty(name="Target Update", default=500, min=1,
                                        description="Env steps between target network updates")
    tau: FloatProperty(name="Tau", default=1.0, min=0.0, max=1.0, description="Target update rate (1 = copy)")
    double_dqn: BoolProperty(name="Double DQN", default=True)
    max_grad_norm: FloatProperty(name="Max Grad Norm", default=10.0, min=0.0)
    draw_props = ("learning_rate", "gamma", "train_frequency", "target_update_interval", "tau", "double_dqn",
                  "max_grad_norm")
