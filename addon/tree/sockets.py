"""Socket types of the DRLA tree: one class per kind of thing flowing along a link.

Links only declare structure (which sensor feeds which state, which reward belongs to which
environment); the compiler checks that both ends of a link have the same socket type.
Socket idnames are stored in .blend files: never rename them.
"""

from __future__ import annotations

from bpy.types import NodeSocket


class DRLASocket:
    color = (0.6, 0.6, 0.6, 1.0)

    def draw(self, context, layout, node, text):
        layout.label(text=text)

    @classmethod
    def draw_color_simple(cls):
        return cls.color


class DRLA_SensorSocket(DRLASocket, NodeSocket):
    """Sensor reading (part of the state)"""
    bl_idname = "DRLA_SensorSocket"
    bl_label = "Sensor"
    color = (0.95, 0.75, 0.2, 1.0)


class DRLA_StateSocket(DRLASocket, NodeSocket):
    """The observation vector"""
    bl_idname = "DRLA_StateSocket"
    bl_label = "State"
    color = (0.2, 0.7, 1.0, 1.0)


class DRLA_ActionSocket(DRLASocket, NodeSocket):
    """One discrete action"""
    bl_idname = "DRLA_ActionSocket"
    bl_label = "Action"
    color = (1.0, 0.5, 0.1, 1.0)


class DRLA_ActionSetSocket(DRLASocket, NodeSocket):
    """The action space"""
    bl_idname = "DRLA_ActionSetSocket"
    bl_label = "Actions"
    color = (0.9, 0.3, 0.1, 1.0)


class DRLA_RewardSocket(DRLASocket, NodeSocket):
    """A reward term"""
    bl_idname = "DRLA_RewardSocket"
    bl_label = "Reward"
    color = (0.3, 0.9, 0.3, 1.0)


class DRLA_DoneSocket(DRLASocket, NodeSocket):
    """An episode-ending condition"""
    bl_idname = "DRLA_DoneSocket"
    bl_label = "Done"
    color = (0.9, 0.2, 0.4, 1.0)


class DRLA_EnvironmentSocket(DRLASocket, NodeSocket):
    """The environment"""
    bl_idname = "DRLA_EnvironmentSocket"
    bl_label = "Environment"
    color = (0.55, 0.55, 0.95, 1.0)


class DRLA_LayerSocket(DRLASocket, NodeSocket):
    """A chain of hidden layers"""
    bl_idname = "DRLA_LayerSocket"
    bl_label = "Layer"
    color = (0.8, 0.5, 0.9, 1.0)


class DRLA_NetworkSocket(DRLASocket, NodeSocket):
    """A network architecture"""
    bl_idname = "DRLA_NetworkSocket"
    bl_label = "Network"
    color = (0.7, 0.3, 0.9, 1.0)


class DRLA_EpsilonSocket(DRLASocket, NodeSocket):
    """An exploration schedule"""
    bl_idname = "DRLA_EpsilonSocket"
    bl_label = "Epsilon"
    color = (0.5, 0.8, 0.8, 1.0)


class DRLA_ReplaySocket(DRLASocket, NodeSocket):
    """A replay memory"""
    bl_idname = "DRLA_ReplaySocket"
    bl_label = "Replay"
    color = (0.4, 0.6, 0.6, 1.0)


class DRLA_AgentSocket(DRLASocket, NodeSocket):
    """A learning agent"""
    bl_idname = "DRLA_AgentSocket"
    bl_label = "Agent"
    color = (1.0, 0.85, 0.4, 1.0)


class DRLA_ModelSocket(DRLASocket, NodeSocket):
    """A trained model"""
    bl_idname = "DRLA_ModelSocket"
    bl_label = "Model"
    color = (0.95, 0.95, 0.95, 1.0)




class DRLA_TeamMemberSocket(DRLASocket, NodeSocket):
    """A named agent with its environment, one of several trained together"""
    bl_idname = "DRLA_TeamMemberSocket"
    bl_label = "Named Agent"
    color = (0.85, 0.45, 0.85, 1.0)


class DRLA_NoveltySocket(DRLASocket, NodeSocket):
    """Novelty search settings for an Evolution agent"""
    bl_idname = "DRLA_NoveltySocket"
    bl_label = "Novelty"
    color = (0.95, 0.55, 0.75, 1.0)


classes = (DRLA_SensorSocket, DRLA_StateSocket, DRLA_ActionSocket, DRLA_ActionSetSocket, DRLA_RewardSocket,
           DRLA_DoneSocket, DRLA_EnvironmentSocket, DRLA_LayerSocket, DRLA_NetworkSocket, DRLA_EpsilonSocket,
           DRLA_ReplaySocket, DRLA_AgentSocket, DRLA_ModelSocket, DRLA_TeamMemberSocket,
           DRLA_NoveltySocket)
