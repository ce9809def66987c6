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


def _socket(idname: str, label: str, color: tuple, doc: str) -> type:
    return type(idname, (DRLASocket, NodeSocket), {
        "__doc__": doc, "bl_idname": idname, "bl_label": label, "color": color})


SensorSocket = _socket("DRLA_SensorSocket", "Sensor", (0.95, 0.75, 0.2, 1.0), "Sensor reading (part of the state)")
StateSocket = _socket("DRLA_StateSocket", "State", (0.2, 0.7, 1.0, 1.0), "The observation vector")
ActionSocket = _socket("DRLA_ActionSocket", "Action", (1.0, 0.5, 0.1, 1.0), "One discrete action")
ActionSetSocket = _socket("DRLA_ActionSetSocket", "Actions", (0.9, 0.3, 0.1, 1.0), "The action space")
RewardSocket = _socket("DRLA_RewardSocket", "Reward", (0.3, 0.9, 0.3, 1.0), "A reward term")
DoneSocket = _socket("DRLA_DoneSocket", "Done", (0.9, 0.2, 0.4, 1.0), "An episode-ending condition")
EnvironmentSocket = _socket("DRLA_EnvironmentSocket", "Environment", (0.55, 0.55, 0.95, 1.0), "The environment")
LayerSocket = _socket("DRLA_LayerSocket", "Layer", (0.8, 0.5, 0.9, 1.0), "A chain of hidden layers")
NetworkSocket = _socket("DRLA_NetworkSocket", "Network", (0.7, 0.3, 0.9, 1.0), "A network architecture")
EpsilonSocket = _socket("DRLA_EpsilonSocket", "Epsilon", (0.5, 0.8, 0.8, 1.0), "An exploration schedule")
ReplaySocket = _socket("DRLA_ReplaySocket", "Replay", (0.4, 0.6, 0.6, 1.0), "A replay memory")
AgentSocket = _socket("DRLA_AgentSocket", "Agent", (1.0, 0.85, 0.4, 1.0), "A learning agent")
ModelSocket = _socket("DRLA_ModelSocket", "Model", (0.95, 0.95, 0.95, 1.0), "A trained model")

classes = (SensorSocket, StateSocket, ActionSocket, ActionSetSocket, RewardSocket, DoneSocket, EnvironmentSocket,
           LayerSocket, NetworkSocket, EpsilonSocket, ReplaySocket, AgentSocket, ModelSocket)
