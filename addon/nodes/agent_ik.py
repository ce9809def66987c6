from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty
import bpy

from ..tree.node_tree import DRLANode
from ..preferences import resolve_output_path
from ..scene.armature import arm_description
from ..specs import AgentSpec
from ._common import object_pointer

#: The network of a Learned IK agent without a Network node (``drla_core`` IKSolver's default).
DEFAULT_HIDDEN = [(128, "tanh"), (128, "tanh")]


class DRLA_IKAgentNode(DRLANode, bpy.types.Node):
    """Learned inverse kinematics for an armature chain: a network maps the target's position
    to joint angles within the bones' IK limits, then a few damped-least-squares steps polish
    the answer.
    Self-supervised training samples poses through the forward kinematics (fast); Reward
    training learns from the end effector's distance to the target only (random angles first,
    then more and more the network's own).
    Triggers: ik inverse kinematics arm reach robot armature learned"""

    bl_idname = "DRLA_IKAgentNode"
    bl_label = "Learned IK Agent"
    menu_order = 230  # its place in its Add submenu (lower first)
    drla_category = "agent"
    role = "agent"
    menu_category = "Agent"
    agent_kind = "ik"
    needs_environment = False  # it trains on the armature's own kinematics
    unlink_environment_message = "a Learned IK agent trains on the armature itself: unlink the Environment"
    several_message = "several Learned IK agents but no Trainer: add a Trainer to choose"
    bl_width_default = 220
    inputs_spec = (("DRLA_NetworkSocket", "Network"),)
    outputs_spec = (("DRLA_AgentSocket", "Agent"),)

    armature: object_pointer("Armature", "The arm: one bone chain, limits from the bones' IK settings",
                             kind='ARMATURE')
    target: object_pointer("Target", "The object whose position the end effector reaches for")
    method: EnumProperty(name="Training", default='SELF_SUPERVISED', items=[
        ('SELF_SUPERVISED', "Self-supervised", "Differentiable forward-kinematics loss on sampled poses (fast)"),
        ('REWARD', "Reward", "Reward-weighted regression from the distance reward, random-to-network mixing"),
    ])
    train_steps: IntProperty(name="Train Steps", default=16000, min=1, soft_max=1_000_000,
                             description="Gradient steps (the learning rate decays over them)")
    train_seconds: FloatProperty(name="Train Seconds", default=60.0, min=1.0, soft_max=3600.0,
                                  description="Training time bound")
    refine_iters: IntProperty(name="Refine Steps", default=3, min=0, max=50,
                              description="Damped-least-squares steps after the network's answer")
    follow: BoolProperty(name="Follow Target", default=False,
                         description="After training, re-solve whenever the target moves (Learned IK follow mode)")
    model_path: StringProperty(name="Model", subtype='FILE_PATH',
                               description="Optional trained IK model file (kind 'ik') to start from")
    output_path: StringProperty(name="Save To", subtype='FILE_PATH', default="",
                                options={'PATH_SUPPORTS_BLEND_RELATIVE'},
                                description="Write the trained IK model (JSON, with the arm description) here; "
                                            "empty: only stored in the .blend")
    draw_props = ("armature", "target", "method", "train_steps", "train_seconds", "refine_iters", "follow",
                  "model_path", "output_path")

    def summary(self) -> str:
        ob = self.armature
        if ob is None or ob.type != 'ARMATURE':
            return "needs an armature"
        return f"{len(ob.data.bones)} bones"

    def compile(self, ctx):
        """The armature's chain (read as ``scene.armature.arm_description`` reads it), the target, the settings."""
        arm = ctx.obj(self, "armature", kind='ARMATURE')
        target = ctx.obj(self, "target")
        bones: list[str] = []
        ob = bpy.data.objects.get(arm) if arm else None
        if ob is not None and ob.type == 'ARMATURE':
            try:
                bones = list(arm_description(ob).bones)
            except ValueError as exc:
                ctx.error(self, str(exc).replace("arm_description: ", ""))
        if target and target == arm:
            ctx.error(self, "the Target must be another object than the Armature")
        config = {"armature": arm, "target": target, "bones": bones, "method": self.method,
                  "train_steps": int(self.train_steps), "train_seconds": float(self.train_seconds),
                  "refine_iters": int(self.refine_iters), "follow": bool(self.follow),
                  "model_path": resolve_output_path(self.model_path) if self.model_path else "",
                  "output_path": resolve_output_path(self.output_path) if self.output_path else ""}
        spec = AgentSpec(self.name, self.agent_kind, config, [tuple(h) for h in DEFAULT_HIDDEN], "linear")
        net = ctx.input(self, "Network", required=False)
        if net is not None:
            spec.hidden = net.hidden_layers() or spec.hidden
            if net.output_activation.lower() != "linear":
                ctx.error(net, "a Learned IK agent needs a Linear output (its outputs are joint angles)")
        return spec
