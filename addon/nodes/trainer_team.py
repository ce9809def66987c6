import bpy
from bpy.props import IntProperty

from ..specs import AgentSpec
from ..tree.node_tree import linked_nodes
from .trainer import TrainerSettings


def _member_agent_kinds(trainer) -> list[str]:
    """The agent kind of each Named Agent linked into ``trainer`` ('' where no agent is linked)."""
    kinds = []
    for member in linked_nodes(trainer.inputs["Agents"]):
        agents = linked_nodes(member.inputs["Agent"]) if "Agent" in member.inputs else []
        kinds.append(getattr(agents[0], "agent_kind", "") if agents else "")
    return kinds


class DRLA_MultiAgentTrainerNode(TrainerSettings, bpy.types.Node):
    """The director of several agents: trains every Named Agent linked in, all acting at once in the
    same scene each step, for Total Steps (seeded). An episode ends for all of them when one of their
    endings fires or Max Steps is reached. Self-Play Turn N > 0: one Train agent learns at a time, for N
    steps, while the others act from a frozen snapshot of their network (for symmetric games such as the
    tank duel). Each agent that trains is exported as its own model file (<Output>/<tree>_<name>.json);
    Export writes every agent into one team file.
    Two Named Agents with Evolution Agents co-evolve instead: each generation, every individual of one
    side plays the other side's champion of the generation before, for the Evolution Agents'
    Generations (the same on both); each side's champion is exported.
    Triggers: multi agent team trainer self play duel coevolution co-evolution"""

    bl_idname = "DRLA_MultiAgentTrainerNode"
    bl_label = "Multi-Agent Trainer"
    menu_order = 270  # its place in its Add submenu (lower first)
    team = True
    inputs_spec = (("DRLA_TeamMemberSocket", "Agents", True),)

    swap_every: IntProperty(name="Self-Play Turn", default=0, min=0, soft_max=1_000_000,
                            description="0: every Train agent learns at every step. N: self-play, one Train agent "
                                        "learns at a time, for N steps, while the others act greedily from a frozen "
                                        "snapshot of their network; then the next one (DQN agents only)")
    draw_props = TrainerSettings.draw_props + ("swap_every",)

    @property
    def agent_kind(self) -> str:
        """What ``runs.kinds`` knows the tree by while the panel draws: "coevolution" when its agents
        evolve, else "team"."""
        kinds = _member_agent_kinds(self)
        return "coevolution" if kinds and all(k == "evolution" for k in kinds) else "team"

    def team_agent(self, ctx, members) -> AgentSpec:
        """The compiled tree's agent: "team" (DQN agents learning together) or "coevolution" (two
        Evolution Agents); a mix, or a co-evolution of other than two sides, is an error on the node."""
        evolving = [m for m in members if m.agent.kind == "evolution"]
        if not evolving:
            return AgentSpec(self.name, "team", {"swap_every": int(self.swap_every)})
        if len(evolving) != len(members):
            ctx.error(self, "its Named Agents mix Evolution and DQN Agents: co-evolution needs an Evolution "
                            "Agent on every side, multi-agent DQN a DQN Agent on every one")
        elif len(members) != 2:
            ctx.error(self, f"co-evolution has two sides: link two Named Agents with Evolution Agents, not "
                            f"{len(members)}")
        generations = {m.agent.config.get("train_steps", 0) for m in evolving}
        if len(generations) > 1:
            ctx.error(self, "both sides of a co-evolution evolve for the same Generations: "
                      + ", ".join(f"{m.name} {m.agent.config.get('train_steps', 0)}" for m in evolving))
        episodes = max(int(m.agent.config.get("episodes", 1)) for m in evolving)
        return AgentSpec(self.name, "coevolution", {"train_steps": max(generations), "episodes": episodes},
                         hidden=[])
