import bpy

from .trainer import TrainerSettings


class DRLA_MultiAgentTrainerNode(TrainerSettings, bpy.types.Node):
    """The director of several agents: trains every Named Agent linked in, all acting at once in the
    same scene each step, for Total Steps (seeded). An episode ends for all of them when one of their
    endings fires or Max Steps is reached. Each agent that trains is exported as its own model file
    (<Output>/<tree>_<name>.json).
    Triggers: multi agent team trainer self play duel"""

    bl_idname = "DRLA_MultiAgentTrainerNode"
    bl_label = "Multi-Agent Trainer"
    menu_order = 270  # its place in its Add submenu (lower first)
    team = True
    agent_kind = "team"  # what runs.kinds knows it by while the panel draws
    inputs_spec = (("DRLA_TeamMemberSocket", "Agents", True),)
