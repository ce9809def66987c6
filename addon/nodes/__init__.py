# ruff: noqa: F401  (the imports are the registry: _collect() gathers them)
"""Every DRLA node class, one node per file. To add a node: write nodes/<name>.py (its properties,
``draw``, ``compile(ctx)``, ``drla_category`` for its colour and header icon, ``menu_category`` for
its Add submenu) and add one import line here. The Add menu lists the nodes in this order."""

from ._common import apply_categories
from .env_environment import DRLA_EnvironmentNode
from .state import DRLA_StateNode
from .sensor_camera import DRLA_CameraSensorNode
from .sensor_transform import DRLA_TransformSensorNode
from .sensor_bones import DRLA_BoneRotationsSensorNode
from .sensor_property import DRLA_PropertySensorNode
from .sensor_distance import DRLA_DistanceSensorNode
from .sensor_ray import DRLA_RaySensorNode
from .action_set import DRLA_ActionSetNode
from .action_item import DRLA_ActionNode
from .action_fire import DRLA_FireActionNode
from .action_bones import DRLA_BoneActionsNode
from .reward_distance import DRLA_DistanceRewardNode
from .reward_property import DRLA_PropertyChangeRewardNode
from .reward_hit import DRLA_HitRewardNode
from .reward_step import DRLA_StepCostNode
from .done_bounds import DRLA_OutOfBoundsNode
from .done_distance import DRLA_WithinDistanceNode
from .done_property import DRLA_PropertyConditionNode
from .agent_dqn import DRLA_DQNAgentNode
from .agent_epsilon import DRLA_EpsilonNode
from .agent_replay import DRLA_ReplayMemoryNode
from .agent_ik import DRLA_IKAgentNode
from .net_network import DRLA_NetworkNode
from .net_hidden_layer import DRLA_HiddenLayerNode
from .trainer import DRLA_TrainerNode
from .export_json import DRLA_ExportJSONNode


def _collect() -> tuple:
    """Every ``bpy.types.Node`` subclass imported above (so one import line adds a node)."""
    import bpy

    return tuple(v for k, v in globals().items()
                 if k.startswith("DRLA_") and isinstance(v, type) and issubclass(v, bpy.types.Node))


classes = _collect()
apply_categories(classes)
