from bpy.props import BoolProperty, FloatProperty, IntProperty
import bpy

from ..specs import AgentSpec
from ..tree.node_tree import DRLANode


class DRLA_PPOAgentNode(DRLANode, bpy.types.Node):
    """A PPO agent (Proximal Policy Optimization): a policy and a value network learnt from rollouts of
    Rollout Steps per copy, several epochs of clipped updates each. It takes a set of actions (a softmax over
    them, masked by the actions' Conditions) or continuous ones (Motor Action, Bone Rotation, an Amount: a
    Gaussian around the policy's mean). Hidden layers from the Network input (the same for the policy and
    the value); the Trainer's Demonstration is cloned first.
    Its defaults (rl-zoo's CartPole settings, with observations normalised) balance the rigid-body cart-pole
    (scenes/cartpole_rb/cartpole_rb_ppo.blend) in 20 000 steps.
    Triggers: agent ppo proximal policy optimization actor critic on-policy continuous discrete"""

    bl_idname = "DRLA_PPOAgentNode"
    bl_label = "PPO Agent"
    menu_order = 204  # its place in its Add submenu (lower first): after the DQN Agent, before SAC
    drla_category = "agent"
    role = "agent"
    menu_category = "Agent"
    agent_kind = "ppo"
    needs_environment = True
    bl_width_default = 220
    inputs_spec = (("DRLA_NetworkSocket", "Network"),)
    outputs_spec = (("DRLA_AgentSocket", "Agent"),)

    learning_rate: FloatProperty(name="Learning Rate", default=1e-3, min=1e-8, max=1.0, soft_min=1e-5, soft_max=0.1,
                                 precision=5, description="Adam step size of the policy and the value network")
    n_steps: IntProperty(name="Rollout Steps", default=64, min=1, max=1_000_000, soft_max=8192,
                         description="Steps of each copy between updates: a rollout holds this many times the "
                                     "copies transitions")
    batch_size: IntProperty(name="Batch Size", default=64, min=1, max=1_000_000, soft_max=4096,
                            description="Transitions per minibatch")
    n_epochs: IntProperty(name="Epochs", default=20, min=1, max=1000, soft_max=50,
                          description="Passes over each rollout")
    gamma: FloatProperty(name="Gamma", default=0.98, min=0.0, max=1.0, soft_min=0.8,
                         description="Discount factor of future rewards")
    gae_lambda: FloatProperty(name="GAE Lambda", default=0.8, min=0.0, max=1.0,
                              description="1: Monte-Carlo returns; 0: one-step TD")
    clip_range: FloatProperty(name="Clip Range", default=0.2, min=0.001, max=10.0, soft_max=1.0,
                              description="How far the probability ratio may move from 1 in one update")
    ent_coef: FloatProperty(name="Entropy Bonus", default=0.0, min=0.0, max=100.0, soft_max=0.1, precision=4,
                            description="Weight of the entropy bonus (more keeps the policy exploring)")
    normalize_obs: BoolProperty(name="Normalize Observations", default=True,
                                description="Feed the networks the observations scaled by their running mean and "
                                            "standard deviation (kept in the model file)")
    draw_props = ("learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range",
                  "ent_coef", "normalize_obs")

    def compile(self, ctx):
        """The hyper-parameters by ``PPOConfig``'s names (``runs.build.ppo_config_of`` reads them), with the
        Network's hidden layers."""
        config = {p: getattr(self, p) for p in self.draw_props}
        spec = AgentSpec(self.name, self.agent_kind, config, hidden=[(64, "tanh"), (64, "tanh")])
        net = ctx.input(self, "Network", required=False)
        if net is not None:
            if getattr(net, "grow", False):
                ctx.error(net, "Grow on Plateau grows a DQN Agent's network; a PPO Agent's networks keep their "
                               "layers: turn Grow on Plateau off")
            spec.hidden = net.hidden_layers()
        return spec
