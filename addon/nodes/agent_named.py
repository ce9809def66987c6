from bpy.props import EnumProperty, StringProperty
import bpy

from ..specs import MemberSpec
from ..tree.node_tree import DRLANode


class DRLA_NamedAgentNode(DRLANode, bpy.types.Node):
    """One agent of several trained together (a hero and a target, two tanks): its own Environment
    (what it sees, does and is rewarded for, in the shared scene) and its Agent, under a name.
    Train: it learns. Frozen: it acts greedily and always the same way, from Model (a DRLA JSON file)
    or, without one, from the network it has (untrained, or what a Resume carries on from).
    With an Evolution Agent it is one side of a co-evolution: two Named Agents, each a population
    scored against the other side's current champion (pac-man and the ghosts).
    Link it into a Multi-Agent Trainer.
    Triggers: multi agent named team player opponent frozen self play coevolution co-evolution"""

    bl_idname = "DRLA_NamedAgentNode"
    bl_label = "Named Agent"
    menu_order = 250  # its place in its Add submenu (lower first)
    drla_category = "agent"
    role = "member"
    menu_category = "Agent"
    bl_width_default = 220
    inputs_spec = (("DRLA_EnvironmentSocket", "Environment"), ("DRLA_AgentSocket", "Agent"))
    outputs_spec = (("DRLA_TeamMemberSocket", "Named Agent"),)

    agent_name: StringProperty(name="Name", default="agent", description="The agent's name (its model file's too)")
    mode: EnumProperty(name="Mode", default='TRAIN', items=[
        ('TRAIN', "Train", "Learns while the others act"),
        ('FROZEN', "Frozen", "Acts greedily and deterministically, never learns")])
    model_path: StringProperty(name="Model", subtype='FILE_PATH', options={'PATH_SUPPORTS_BLEND_RELATIVE'},
                               description="A frozen agent's model file (empty: its own untrained network)")
    draw_props = ("agent_name", "mode", "model_path")

    def draw(self, layout):
        layout.prop(self, "agent_name")
        layout.prop(self, "mode", expand=True)
        if self.mode == 'FROZEN':
            layout.prop(self, "model_path", text="")

    def compile(self, ctx):
        """Its Environment, then its Agent with that environment in view (an agent checks its actions)."""
        name = self.agent_name.strip()
        if not name:
            ctx.error(self, "give the agent a name")
        env_node = ctx.input(self, "Environment")
        agent_node = ctx.input(self, "Agent")
        env = env_node.compile(ctx) if env_node is not None else None
        ctx.env = env
        agent = agent_node.compile(ctx) if agent_node is not None else None
        kind = getattr(agent_node, "agent_kind", "") if agent_node is not None else ""
        if agent_node is not None and kind not in ("dqn", "evolution"):
            ctx.error(agent_node, "a Named Agent takes a DQN Agent or an Evolution Agent")
        if kind == "evolution" and self.mode == 'FROZEN':
            ctx.error(self, "an Evolution Agent co-evolves with the other side: set Mode to Train")
        if kind == "evolution" and agent is not None and agent.config.get("novelty"):
            ctx.error(agent_node, "a co-evolution scores each side against the other: unlink the Novelty node")
        if env is None or agent is None:
            return None
        if env.copies > 1:
            ctx.error(env_node, "copies of a multi-agent scene are not supported yet: set Copies to 1")
        path = ""
        if self.mode == 'FROZEN' and self.model_path:
            path = bpy.path.abspath(self.model_path)
        return MemberSpec(self.name, name, self.mode.lower(), env, agent, path)
