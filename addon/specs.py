"""The compiled tree as plain data: what a DRLA node tree means, with no Blender in it.

``tree.compiler.compile_tree`` reads a node tree into these dataclasses (object *names*, never bpy
pointers; str / int / float / tuples / lists only), so the runs, the CLI and the tests work on data
that cannot dangle. Each node's ``compile(ctx)`` returns one of them.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any



@dataclass
class SensorSpec:
    """One sensor reading. ``kind``: a key of ``scene.sensors.READERS`` (camera, transform, velocity, ...)."""
    kind: str
    node: str
    size: int
    obj: str = ""
    other: str = ""
    path: str = ""
    bones: list[str] = field(default_factory=list)
    scale: float = 1.0
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class StateSpec:
    node: str
    sensors: list[SensorSpec]
    clip: float = 0.0
    #: the last ``frames`` readings, oldest first, make one observation (a frame stack; 1 = the reading alone)
    frames: int = 1

    @property
    def frame_size(self) -> int:
        return sum(s.size for s in self.sensors)

    @property
    def size(self) -> int:
        return self.frame_size * max(1, int(self.frames))


@dataclass
class ConditionSpec:
    """When a discrete action is enabled (its entry of the env's ``info["action_mask"]``): ``kind`` "property"
    (``path`` on object ``obj``, or on the scene when ``source`` is SCENE, compared with ``value``) or "distance"
    (between ``obj`` and ``other``, compared with ``value``); ``compare``: GE, LE, GT, LT, EQ, NE."""
    kind: str
    node: str
    obj: str = ""
    other: str = ""
    path: str = ""
    source: str = "OBJECT"
    compare: str = "GE"
    value: float = 1.0


@dataclass
class ActionSpec:
    """One discrete action. ``kind``: MOVE, ROTATE, BONE_ROTATE, SET_PROPERTY, ADD_PROPERTY, WAIT, FIRE; or
    MOTOR, one continuous value (``path``: the motor velocity it writes, ``value``: Max Velocity), gathered
    into a ``MotorsSpec`` by the Action Set."""
    kind: str
    name: str
    node: str
    obj: str = ""
    bone: str = ""
    vector: tuple[float, float, float] = (0.0, 0.0, 0.0)
    space: str = "WORLD"
    path: str = ""
    value: float = 0.0
    limits: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    options: dict[str, Any] = field(default_factory=dict)  # FIRE: axis, axis_obj, target, range, score..., respawn
    condition: ConditionSpec | None = None  # enabled only while it holds (an action mask); None: always


@dataclass
class ContinuousSpec:
    """Continuous bone rotations: 3 values in [-1, 1] per bone."""
    node: str
    armature: str
    bones: list[str]
    mode: str = "ABSOLUTE"
    max_angle: float = math.pi

    @property
    def size(self) -> int:
        return 3 * len(self.bones)


@dataclass
class MotorsSpec:
    """Continuous actions: one value in [-1, 1] per item. A Motor action (``ActionSpec`` of kind MOTOR): times
    its Max Velocity, set as the motor's target velocity; an Action with Amount (``options["amount"]``): its
    move, rotation or property change times the value."""
    node: str
    motors: list[ActionSpec]

    @property
    def size(self) -> int:
        return len(self.motors)


@dataclass
class RewardSpec:
    """``kind``: distance, property_change, hit, step_cost."""
    kind: str
    node: str
    obj: str = ""
    other: str = ""
    path: str = ""
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class DoneSpec:
    """``kind``: out_of_bounds, within_distance, property. ``reward`` is added when it fires."""
    kind: str
    node: str
    obj: str = ""
    other: str = ""
    path: str = ""
    reward: float = 0.0
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class EnvSpec:
    node: str
    state: StateSpec
    actions: list[ActionSpec]
    continuous: ContinuousSpec | MotorsSpec | None = None
    rewards: list[RewardSpec] = field(default_factory=list)
    dones: list[DoneSpec] = field(default_factory=list)
    frames_per_step: int = 1
    max_steps: int = 200
    random_objects: list[str] = field(default_factory=list)
    random_min: tuple[float, float, float] = (0.0, 0.0, 0.0)
    random_max: tuple[float, float, float] = (0.0, 0.0, 0.0)
    random_grid: float = 0.0
    #: Scene copies trained at once (1: the scene itself), their spacing (0: found from the objects) and
    #: the collection that is the environment ('' : the objects the tree names, with their families)
    copies: int = 1
    copy_spacing: float = 0.0
    copy_collection: str = ""

    @property
    def action_names(self) -> list[str]:
        return [a.name for a in self.actions]

    @property
    def has_fire(self) -> bool:
        return any(a.kind == "FIRE" for a in self.actions)


#: Where a compiled environment names objects (besides ``obj``/``other`` fields): option keys.
_OBJECT_OPTIONS = ("target", "score_obj", "axis_obj")
#: Option keys that name lists of objects (a Move's walls, a Collect Reward's items).
_OBJECT_LIST_OPTIONS = ("blocked_by", "items", "touches")


def _renamed(spec: Any, names: dict[str, str]) -> Any:
    """A copy of one sensor/action/reward/ending spec with its objects renamed by ``names``."""
    changes: dict[str, Any] = {}
    for attr in ("obj", "other", "armature"):
        value = getattr(spec, attr, "")
        if value in names:
            changes[attr] = names[value]
    if getattr(spec, "condition", None) is not None:  # an action's condition names objects too
        changes["condition"] = _renamed(spec.condition, names)
    options = getattr(spec, "options", None)
    if options:
        changes["options"] = {k: names.get(v, v) if k in _OBJECT_OPTIONS and isinstance(v, str) else
                              [names.get(n, n) for n in v] if k in _OBJECT_LIST_OPTIONS else v
                              for k, v in options.items()}
    return dataclasses.replace(spec, **changes)


def objects_of(env: EnvSpec) -> list[str]:
    """Every object name the compiled environment reads or writes, in order, once."""
    found: list[str] = []
    parts = [*env.state.sensors, *env.actions, *env.rewards, *env.dones,
             *(a.condition for a in env.actions if a.condition is not None)]
    if env.continuous is not None:
        parts.append(env.continuous)
        parts += getattr(env.continuous, "motors", [])
    for part in parts:
        found += [getattr(part, a, "") for a in ("obj", "other", "armature")]
        options = getattr(part, "options", None) or {}
        found += [v for k, v in options.items() if k in _OBJECT_OPTIONS]
        found += [n for k in _OBJECT_LIST_OPTIONS for n in options.get(k, ())]
    found += env.random_objects
    return [n for n in dict.fromkeys(found) if isinstance(n, str) and n]


def env_for_copy(env: EnvSpec, names: dict[str, str], origin: tuple[float, float, float],
                 members: list[str] | None = None, tile: tuple[int, int] | None = None) -> EnvSpec:
    """The environment of one scene copy: its objects renamed by ``names``, and world positions read
    relative to the copy's ``origin`` (a Transform sensor without Relative To, an Out of Bounds box),
    so that every copy observes what the original observes. With ``members`` (the copy's objects) a
    camera sees only those: no other copy, whatever the spacing; with ``tile`` (copy index, copies) the
    copies' cameras draw into one shared picture (``scene.camera.CameraAtlas``)."""
    def shifted(spec: Any) -> Any:
        spec = _renamed(spec, names)
        if (spec.kind == "transform" and not spec.other) or (spec.kind == "out_of_bounds" and not spec.other):
            spec = dataclasses.replace(spec, options={**spec.options, "origin": tuple(origin)})
        if spec.kind == "camera" and members is not None:
            spec = dataclasses.replace(spec, options={**spec.options, "objects": list(members)})
        if spec.kind == "camera" and tile is not None:
            spec = dataclasses.replace(spec, options={**spec.options, "tile": tuple(tile)})
        return spec

    state = dataclasses.replace(env.state, sensors=[shifted(s) for s in env.state.sensors])
    return dataclasses.replace(
        env, state=state, actions=[_renamed(a, names) for a in env.actions],
        continuous=_renamed_continuous(env.continuous, names),
        rewards=[_renamed(r, names) for r in env.rewards], dones=[shifted(d) for d in env.dones],
        random_objects=[names.get(n, n) for n in env.random_objects], copies=1)


def _renamed_continuous(spec: Any, names: dict[str, str]) -> Any:
    if spec is None:
        return None
    if isinstance(spec, MotorsSpec):
        return dataclasses.replace(spec, motors=[_renamed(m, names) for m in spec.motors])
    return _renamed(spec, names)


@dataclass
class AgentSpec:
    node: str
    kind: str = "dqn"
    config: dict[str, Any] = field(default_factory=dict)  # DQNConfig-like values by our names
    hidden: list[tuple[int, str]] = field(default_factory=lambda: [(64, "relu"), (64, "relu")])
    output_activation: str = "linear"


@dataclass
class TrainerSpec:
    node: str
    total_steps: int = 20000
    seed: int = 0
    checkpoint_interval: int = 0
    output_path: str = ""
    exports: list[str] = field(default_factory=list)
    eval_interval: int = 0
    eval_episodes: int = 5
    demonstration: str = ""  # a demonstration file (absolute) the agent learns from first; "" none


@dataclass
class MemberSpec:
    """One named agent of a multi-agent tree: its own environment (observation, actions, rewards and
    endings in the shared scene), its agent, and whether it learns (``train``) or acts greedily from
    ``model_path`` or what it has learnt so far (``frozen``)."""
    node: str
    name: str
    mode: str
    env: EnvSpec
    agent: AgentSpec
    model_path: str = ""


@dataclass
class CompiledTree:
    """``env`` is None for a Learned IK tree (``agent.kind == "ik"``): it trains on the armature's
    forward kinematics, not in an environment; and for a multi-agent tree (``agent.kind == "team"``),
    whose agents each have their own in ``team``."""
    tree: str
    env: EnvSpec | None
    agent: AgentSpec | None = None
    trainer: TrainerSpec | None = None
    team: list[MemberSpec] = field(default_factory=list)

    @property
    def is_ik(self) -> bool:
        return self.agent is not None and self.agent.kind == "ik"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class CompileError(Exception):
    """The tree cannot run; ``errors`` lists ``(node_name, message)``."""

    def __init__(self, errors: list[tuple[str, str]]):
        self.errors = list(errors)
        super().__init__("; ".join(f"{n}: {m}" if n else m for n, m in self.errors))
