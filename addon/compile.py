"""Compile a DRLA node tree into plain data, validate it, and build the env / agent / run.

``compile_tree(tree)`` reads the node tree once into dataclasses holding only str / int /
float / tuples / lists (object *names*, never bpy pointers), checking it as it goes:
links between different socket types, cycles, unlinked required inputs, missing objects,
bones, cameras and properties, empty action sets. Every problem is stored on the node it
concerns (``node.drla_error``, drawn in red) and returned as ``(node_name, message)``;
``CompileError`` carries the list. Compiling reads the scene and never changes it.

``build_env(compiled, scene)`` -> ``SceneEnv``; ``build_agent(compiled, env)`` -> ``DQNAgent``;
``build_run(compiled, env, agent)`` -> ``TrainingRun``; ``train_tree(tree, scene)`` does it all
inside ``scene_session`` so the scene is restored afterwards.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

import bpy

from .node_tree import TREE_ID, linked_nodes

# --------------------------------------------------------------------------- compiled data


@dataclass
class SensorSpec:
    """One sensor reading. ``kind``: camera, transform, bones, property, distance, ray."""
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

    @property
    def size(self) -> int:
        return sum(s.size for s in self.sensors)


@dataclass
class ActionSpec:
    """One discrete action. ``kind``: MOVE, ROTATE, BONE_ROTATE, SET_PROPERTY, ADD_PROPERTY, WAIT, FIRE."""
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
    continuous: ContinuousSpec | None = None
    rewards: list[RewardSpec] = field(default_factory=list)
    dones: list[DoneSpec] = field(default_factory=list)
    frames_per_step: int = 1
    max_steps: int = 200
    random_objects: list[str] = field(default_factory=list)
    random_min: tuple[float, float, float] = (0.0, 0.0, 0.0)
    random_max: tuple[float, float, float] = (0.0, 0.0, 0.0)
    random_grid: float = 0.0

    @property
    def action_names(self) -> list[str]:
        return [a.name for a in self.actions]

    @property
    def has_fire(self) -> bool:
        return any(a.kind == "FIRE" for a in self.actions)


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


@dataclass
class CompiledTree:
    """``env`` is None for a Learned IK tree (``agent.kind == "ik"``): it trains on the armature's
    forward kinematics, not in an environment."""
    tree: str
    env: EnvSpec | None
    agent: AgentSpec | None = None
    trainer: TrainerSpec | None = None

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


def _a(word: str) -> str:
    """``word`` with its indefinite article: "a camera", "an armature", "an empty"."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


# --------------------------------------------------------------------------- the compiler


class _Ctx:
    """Reads nodes into specs and collects errors per node."""

    def __init__(self, tree, scene):
        self.tree, self.scene = tree, scene
        self.errors: list[tuple[str, str]] = []

    def error(self, node, message: str) -> None:
        self.errors.append((node.name if node is not None else "", message))

    def input(self, node, name: str, required: bool = True, label: str | None = None):
        """The single node linked into ``node.inputs[name]`` (None, with an error if required)."""
        found = linked_nodes(node.inputs[name])
        if not found:
            if required:
                self.error(node, f"nothing is linked to its {label or name} input")
            return None
        return found[0]

    def obj(self, node, prop: str, kind: str | None = None, required: bool = True) -> str:
        ob = getattr(node, prop)
        label = node.bl_rna.properties[prop].name
        if ob is None:
            if required:
                what = "object" if kind is None else kind.lower()
                self.error(node, f"choose {_a(what)}" if label.lower() == what else f"choose {_a(what)} for {label}")
            return ""
        if self.scene is not None and self.scene.objects.get(ob.name) is None:
            self.error(node, f"{label} '{ob.name}' is not in the scene '{self.scene.name}'")
        if kind is not None and ob.type != kind:
            self.error(node, f"{label} '{ob.name}' is not {_a(kind.lower())} (it is {_a(ob.type.lower())})")
        return ob.name

    def bones(self, node, armature_name: str, text: str) -> list[str]:
        names = [b.strip() for b in text.split(",") if b.strip()]
        ob = bpy.data.objects.get(armature_name) if armature_name else None
        if ob is None or ob.type != 'ARMATURE':
            return names
        if not names:
            return [b.name for b in ob.pose.bones]
        for name in names:
            if ob.pose.bones.get(name) is None:
                self.error(node, f"armature '{ob.name}' has no bone '{name}'")
        return names

    def prop_path(self, node, owner_name: str, text: str, source: str = "OBJECT") -> str:
        """A readable RNA path for a custom property name or RNA path; checks that it resolves to a number."""
        text = text.strip()
        if not text:
            self.error(node, "type the name of a property")
            return ""
        path = text if any(c in text for c in '.["') else f'["{text}"]'
        owner = self.scene if source == 'SCENE' else bpy.data.objects.get(owner_name) if owner_name else None
        if owner is None:
            return path
        try:
            value = owner.path_resolve(path)
        except (ValueError, KeyError, TypeError):
            self.error(node, f"'{owner.name}' has no property '{text}'")
            return path
        try:
            [float(v) for v in value] if hasattr(value, "__len__") else float(value)
        except (TypeError, ValueError):
            self.error(node, f"property '{text}' of '{owner.name}' is not a number")
        return path


def _vec(v) -> tuple[float, ...]:
    return tuple(float(x) for x in v)


# One compiler per node idname: (node, ctx) -> spec. Colleagues add theirs here.
SENSORS: dict[str, Callable] = {}
ACTIONS: dict[str, Callable] = {}
REWARDS: dict[str, Callable] = {}
DONES: dict[str, Callable] = {}


def _register(table: dict, idname: str):
    def deco(fn):
        table[idname] = fn
        return fn
    return deco


@_register(SENSORS, "DRLA_CameraSensorNode")
def _camera(node, ctx):
    cam = ctx.obj(node, "camera", kind='CAMERA')
    opts = {"width": node.width, "height": node.height, "mode": node.mode, "threshold": node.threshold,
            "max_depth": node.max_depth, "method": node.method.lower()}
    return SensorSpec("camera", node.name, node.reading_size(), obj=cam, scale=node.scale, options=opts)


@_register(SENSORS, "DRLA_TransformSensorNode")
def _transform(node, ctx):
    if not (node.use_location or node.use_rotation):
        ctx.error(node, "choose Location and/or Rotation")
    return SensorSpec("transform", node.name, node.reading_size(), obj=ctx.obj(node, "object"),
                      other=ctx.obj(node, "relative_to", required=False), scale=node.scale,
                      options={"location": node.use_location, "rotation": node.use_rotation,
                               "rotation_format": node.rotation_format})


@_register(SENSORS, "DRLA_BoneRotationsSensorNode")
def _bones(node, ctx):
    arm = ctx.obj(node, "armature", kind='ARMATURE')
    bones = ctx.bones(node, arm, node.bones)
    if arm and not bones:
        ctx.error(node, "the armature has no bones")
    return SensorSpec("bones", node.name, 4 * len(bones), obj=arm, bones=bones, scale=node.scale)


@_register(SENSORS, "DRLA_PropertySensorNode")
def _property(node, ctx):
    owner = ctx.obj(node, "object") if node.source == 'OBJECT' else ""
    path = ctx.prop_path(node, owner, node.property, node.source)
    return SensorSpec("property", node.name, 1, obj=owner, path=path, scale=node.scale,
                      options={"source": node.source})


@_register(SENSORS, "DRLA_DistanceSensorNode")
def _distance(node, ctx):
    return SensorSpec("distance", node.name, 1, obj=ctx.obj(node, "object_a"), other=ctx.obj(node, "object_b"),
                      scale=node.scale)


@_register(SENSORS, "DRLA_RaySensorNode")
def _ray(node, ctx):
    return SensorSpec("ray", node.name, node.rays, obj=ctx.obj(node, "object"), scale=node.scale,
                      options={"axis": node.axis, "rays": node.rays, "spread": node.spread,
                               "max_distance": node.max_distance})


@_register(ACTIONS, "DRLA_ActionNode")
def _action(node, ctx):
    kind = node.kind
    spec = ActionSpec(kind, node.action_name.strip(), node.name, vector=_vec(node.vector), space=node.space,
                      value=float(node.value))
    if kind == 'WAIT':
        return spec
    if kind == 'BONE_ROTATE':
        spec.obj = ctx.obj(node, "object", kind='ARMATURE')
        if not node.bone.strip():
            ctx.error(node, "type the name of a bone")
        else:
            spec.bone = ctx.bones(node, spec.obj, node.bone)[0]
    else:
        spec.obj = ctx.obj(node, "object")
    if kind in {'SET_PROPERTY', 'ADD_PROPERTY'}:
        spec.path = ctx.prop_path(node, spec.obj, node.property)
    if node.use_limits:
        spec.limits = (_vec(node.limit_min), _vec(node.limit_max))
        if kind in {'SET_PROPERTY', 'ADD_PROPERTY'}:
            if node.limit_min[0] > node.limit_max[0]:
                ctx.error(node, f"the Min limit ({node.limit_min[0]:g}) is above the Max limit ({node.limit_max[0]:g})")
        else:
            _check_min_max(ctx, node, "limit_min", "limit_max")
    return spec


@_register(ACTIONS, "DRLA_FireActionNode")
def _fire(node, ctx):
    spec = ActionSpec("FIRE", node.action_name.strip(), node.name, obj=ctx.obj(node, "origin"))
    score = ctx.obj(node, "score_object", required=False)
    spec.options = {
        "axis": node.axis, "axis_obj": ctx.obj(node, "axis_object", required=False),
        "target": ctx.obj(node, "target"), "range": node.max_distance,
        "score_obj": score, "score_path": ctx.prop_path(node, score, node.score_property) if score else "",
        "add": node.add, "respawn": node.respawn, "respawn_min": _vec(node.respawn_min),
        "respawn_max": _vec(node.respawn_max), "respawn_grid": node.respawn_grid}
    if node.respawn:
        _check_min_max(ctx, node, "respawn_min", "respawn_max")
    return spec


@_register(REWARDS, "DRLA_DistanceRewardNode")
def _r_distance(node, ctx):
    return RewardSpec("distance", node.name, obj=ctx.obj(node, "object_a"), other=ctx.obj(node, "object_b"),
                      options={"mode": node.mode, "weight": node.weight})


@_register(REWARDS, "DRLA_PropertyChangeRewardNode")
def _r_property(node, ctx):
    owner = ctx.obj(node, "object") if node.source == 'OBJECT' else ""
    return RewardSpec("property_change", node.name, obj=owner, path=ctx.prop_path(node, owner, node.property,
                                                                                  node.source),
                      options={"source": node.source, "increase": node.increase, "decrease": node.decrease})


@_register(REWARDS, "DRLA_HitRewardNode")
def _r_hit(node, ctx):
    return RewardSpec("hit", node.name, options={"hit": node.hit, "miss": node.miss})


@_register(REWARDS, "DRLA_StepCostNode")
def _r_step(node, ctx):
    return RewardSpec("step_cost", node.name, options={"cost": node.cost})


@_register(DONES, "DRLA_OutOfBoundsNode")
def _d_bounds(node, ctx):
    spec = DoneSpec("out_of_bounds", node.name, obj=ctx.obj(node, "object"), reward=node.reward)
    if node.bounds == 'OBJECT':
        spec.other = ctx.obj(node, "bounds_object")
    else:
        spec.options = {"min": _vec(node.box_min), "max": _vec(node.box_max)}
        _check_min_max(ctx, node, "box_min", "box_max")
    return spec


@_register(DONES, "DRLA_WithinDistanceNode")
def _d_distance(node, ctx):
    return DoneSpec("within_distance", node.name, obj=ctx.obj(node, "object_a"), other=ctx.obj(node, "object_b"),
                    reward=node.reward, options={"distance": node.distance})


@_register(DONES, "DRLA_PropertyConditionNode")
def _d_property(node, ctx):
    owner = ctx.obj(node, "object") if node.source == 'OBJECT' else ""
    return DoneSpec("property", node.name, obj=owner, path=ctx.prop_path(node, owner, node.property, node.source),
                    reward=node.reward, options={"source": node.source, "compare": node.compare,
                                                 "value": node.value})


def _dispatch(table: dict, node, ctx, what: str):
    fn = table.get(node.bl_idname)
    if fn is None:
        ctx.error(node, f"'{node.bl_label}' is not {_a(what)}: link it elsewhere")
        return None
    return fn(node, ctx)


def _compile_env(env_node, ctx) -> EnvSpec:
    state_node = ctx.input(env_node, "State")
    sensors: list[SensorSpec] = []
    clip = 0.0
    if state_node is not None:
        clip = state_node.clip
        sensor_nodes = linked_nodes(state_node.inputs["Sensors"])
        if not sensor_nodes:
            ctx.error(state_node, "no sensor is linked to it")
        sensors = [s for s in (_dispatch(SENSORS, n, ctx, "sensor") for n in sensor_nodes) if s is not None]
    actions: list[ActionSpec] = []
    continuous = None
    set_node = ctx.input(env_node, "Actions")
    if set_node is not None and set_node.bl_idname == "DRLA_BoneActionsNode":
        arm = ctx.obj(set_node, "armature", kind='ARMATURE')
        bones = ctx.bones(set_node, arm, set_node.bones)
        continuous = ContinuousSpec(set_node.name, arm, bones, set_node.mode, set_node.max_angle)
    elif set_node is not None:
        item_nodes = linked_nodes(set_node.inputs["Actions"])
        if not item_nodes:
            ctx.error(set_node, "the action set is empty: link Action nodes into it")
        actions = [a for a in (_dispatch(ACTIONS, n, ctx, "action") for n in item_nodes) if a is not None]
        seen: set[str] = set()
        for a, n in zip(actions, item_nodes):
            if not a.name:
                ctx.error(n, "the action needs a name")
            elif a.name in seen:
                ctx.error(n, f"two actions are named '{a.name}'")
            seen.add(a.name)
    rewards = [r for r in (_dispatch(REWARDS, n, ctx, "reward") for n in linked_nodes(env_node.inputs["Rewards"]))
               if r is not None]
    dones = [d for d in (_dispatch(DONES, n, ctx, "episode ending") for n in linked_nodes(env_node.inputs["Done"]))
             if d is not None]
    if any(r.kind == "hit" for r in rewards) and not any(a.kind == "FIRE" for a in actions):
        hit_node = next(n for n in linked_nodes(env_node.inputs["Rewards"]) if n.bl_idname == "DRLA_HitRewardNode")
        ctx.error(hit_node, "there is no Fire action in the Action Set to reward")
    randoms: list[str] = []
    if env_node.random_collection is not None:
        randoms += [ob.name for ob in env_node.random_collection.all_objects]
    for i in (1, 2, 3):
        name = ctx.obj(env_node, f"random_object_{i}", required=False)
        if name and name not in randoms:
            randoms.append(name)
    if randoms:
        _check_min_max(ctx, env_node, "random_min", "random_max")
    return EnvSpec(env_node.name, StateSpec(state_node.name if state_node else "", sensors, clip), actions,
                   continuous, rewards, dones, env_node.frames_per_step, env_node.max_steps, randoms,
                   _vec(env_node.random_min), _vec(env_node.random_max), env_node.random_grid)


def _hidden_layers(net) -> list[tuple[int, str]]:
    """The Hidden Layer chain linked into a Network node, input side first."""
    hidden, sock, seen = [], net.inputs["Layers"], set()
    while sock.is_linked:
        layer = linked_nodes(sock)[0]
        if layer.name in seen or layer.bl_idname != "DRLA_HiddenLayerNode":
            break
        seen.add(layer.name)
        hidden.append((layer.size, layer.activation.lower()))
        sock = layer.inputs["Previous"]
    return hidden[::-1]


IK_AGENT = "DRLA_IKAgentNode"
#: The network of a Learned IK agent without a Network node (``drla_core.ik.IKSolver``'s default).
IK_HIDDEN = [(128, "tanh"), (128, "tanh")]


def _compile_ik_agent(node, ctx) -> AgentSpec:
    """A Learned IK agent: the armature's chain (read like ``ik_runtime.arm_description``), the target."""
    arm = ctx.obj(node, "armature", kind='ARMATURE')
    target = ctx.obj(node, "target")
    bones: list[str] = []
    ob = bpy.data.objects.get(arm) if arm else None
    if ob is not None and ob.type == 'ARMATURE':
        from .ik_runtime import arm_description

        try:
            description = arm_description(ob)
        except ValueError as exc:
            ctx.error(node, str(exc).replace("arm_description: ", ""))
        else:
            bones = list(description.bones)
    if target and target == arm:
        ctx.error(node, "the Target must be another object than the Armature")
    config = {"armature": arm, "target": target, "bones": bones, "method": node.method,
              "train_steps": int(node.train_steps), "train_seconds": float(node.train_seconds),
              "refine_iters": int(node.refine_iters), "follow": bool(node.follow),
              "model_path": output_path(node.model_path) if node.model_path else "",
              "output_path": output_path(node.output_path) if node.output_path else ""}
    spec = AgentSpec(node.name, "ik", config, [tuple(h) for h in IK_HIDDEN], "linear")
    net = ctx.input(node, "Network", required=False)
    if net is not None:
        spec.hidden = _hidden_layers(net) or spec.hidden
        if net.output_activation.lower() != "linear":
            ctx.error(net, "a Learned IK agent needs a Linear output (its outputs are joint angles)")
    return spec


def _compile_ik(tree, ctx, agent_node, trainer_node) -> CompiledTree:
    """IK Agent [-> Trainer [-> Export JSON]]: no Environment, State or Actions."""
    agent = _compile_ik_agent(agent_node, ctx)
    trainer = None
    if trainer_node is not None:
        if trainer_node.inputs["Environment"].is_linked:
            ctx.error(trainer_node, "a Learned IK agent trains on the armature itself: unlink the Environment")
        trainer = TrainerSpec(trainer_node.name, trainer_node.total_steps, trainer_node.seed, 0,
                              output_path(trainer_node.output_path), _exports(tree))
    return CompiledTree(tree.name, None, agent, trainer)


def _exports(tree) -> list[str]:
    return [output_path(n.filepath) for n in tree.nodes
            if n.bl_idname == "DRLA_ExportJSONNode" and n.inputs["Model"].is_linked]


def _compile_agent(agent_node, ctx, env: EnvSpec) -> AgentSpec:
    if agent_node.bl_idname != "DRLA_DQNAgentNode":
        ctx.error(agent_node, f"'{agent_node.bl_label}' is not an agent")
        return AgentSpec(agent_node.name)
    if env.continuous is not None:
        ctx.error(agent_node, "a DQN agent needs a discrete Action Set, not continuous actions")
    config = {p: getattr(agent_node, p) for p in agent_node.draw_props}
    net = ctx.input(agent_node, "Network", required=False)
    spec = AgentSpec(agent_node.name, "dqn", config)
    if net is not None:
        spec.hidden = _hidden_layers(net)
        spec.output_activation = net.output_activation.lower()
        if spec.output_activation != "linear":
            ctx.error(net, "a DQN agent needs a Linear output (Q-values are unbounded)")
    eps = ctx.input(agent_node, "Epsilon", required=False)
    if eps is not None:
        config.update(epsilon_start=eps.start, epsilon_end=eps.end, epsilon_fraction=eps.fraction)
    rep = ctx.input(agent_node, "Replay", required=False)
    if rep is not None:
        config.update(buffer_size=rep.capacity, batch_size=rep.batch_size, learning_starts=rep.learning_starts)
    return spec


def _check_links(tree, ctx) -> None:
    for link in tree.links:
        a, b = link.from_socket, link.to_socket
        if a.bl_idname != b.bl_idname:
            ctx.error(link.to_node, f"its {b.name} input takes {_a(b.bl_label or b.bl_idname)}, but "
                                    f"'{link.from_node.name}' gives {_a(a.bl_label or a.bl_idname)}")


def _check_cycles(tree, ctx) -> bool:
    succ: dict[str, list[str]] = {n.name: [] for n in tree.nodes}
    for link in tree.links:
        succ[link.from_node.name].append(link.to_node.name)
    state: dict[str, int] = {}
    in_cycle: set[str] = set()

    def visit(name: str, stack: list[str]) -> None:
        state[name] = 1
        stack.append(name)
        for nxt in succ[name]:
            if state.get(nxt) == 1:
                in_cycle.update(stack[stack.index(nxt):])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[name] = 2

    for name in succ:
        if name not in state:
            visit(name, [])
    for name in sorted(in_cycle):
        ctx.error(tree.nodes[name], "it is part of a loop of links: links must flow one way")
    return bool(in_cycle)


def compile_tree(tree, scene=None) -> CompiledTree:
    """Validate ``tree`` and return its plain-data form; raise ``CompileError`` on problems.

    Errors are also stored per node (``drla_error``). ``scene`` (default: the context scene) is
    where objects must live. Nothing in the scene changes.
    """
    if getattr(tree, "bl_idname", None) != TREE_ID:
        raise CompileError([("", f"'{getattr(tree, 'name', tree)}' is not a DRLA node tree")])
    scene = scene if scene is not None else bpy.context.scene
    ctx = _Ctx(tree, scene)
    try:
        compiled = _compile(tree, ctx)
    except Exception as exc:  # a bug must still end as a message, never a half-written tree
        ctx.error(None, f"internal error while compiling: {type(exc).__name__}: {exc}")
        compiled = None
    _store_errors(tree, ctx.errors)
    if ctx.errors or compiled is None:
        raise CompileError(ctx.errors)
    return compiled


#: A bound at least this far from zero means "none" (Blender's default float range is +-3.4e38).
_NO_BOUND = 1e30


def _number_text(prop, value: float) -> str:
    if prop.subtype == 'ANGLE':
        return f"{math.degrees(value):g}°"
    if prop.type == 'INT':
        return f"{int(value):,}".replace(",", " ") if abs(value) >= 10_000 else str(int(value))
    return f"{value:g}"


def _range_text(prop) -> str:
    """'at least 1', 'above 0', 'between 0 and 1': the values a number field of a node accepts."""
    lo, hi = prop.hard_min, prop.hard_max
    has_lo = abs(lo) < _NO_BOUND and not (prop.type == 'INT' and lo <= -2**31)
    has_hi = abs(hi) < _NO_BOUND and not (prop.type == 'INT' and hi >= 2**31 - 1)
    low = "above 0" if prop.type == 'FLOAT' and 0 < lo < 1e-6 else f"at least {_number_text(prop, lo)}"
    if has_lo and has_hi:
        if low == "above 0":
            return f"above 0 and at most {_number_text(prop, hi)}"
        return f"between {_number_text(prop, lo)} and {_number_text(prop, hi)}"
    if has_lo:
        return low
    return f"at most {_number_text(prop, hi)}" if has_hi else "a number"


def _own_annotations(klass) -> dict[str, Any]:
    """A class's own annotations: its bpy properties. Python 3.14 (Blender 5.1+) evaluates annotations
    lazily, so they are no longer in the class's ``__dict__``; ``inspect`` finds them on every version."""
    try:
        return inspect.get_annotations(klass)
    except Exception:  # a C type, or an annotation that cannot be evaluated: none of ours
        return {}


def _check_ranges(tree, ctx) -> None:
    """Every number on a DRLA node within its field's limits. The fields refuse other values, but a
    file saved by an earlier DRLA (or written by a script) may hold them: say which, and where."""
    for node in tree.nodes:
        if not hasattr(node, "drla_error"):
            continue
        ours = {n for klass in type(node).__mro__ for n in _own_annotations(klass)}
        props = {p.identifier: p for p in node.bl_rna.properties}  # ours come last: they win
        for name in sorted(ours):
            prop = props.get(name)
            if prop is None or prop.type not in {'INT', 'FLOAT'} or prop.is_readonly:
                continue
            raw = getattr(node, name)
            values = list(raw) if getattr(prop, "is_array", False) else [raw]
            for value in values:
                if isinstance(value, float) and not math.isfinite(value):
                    ctx.error(node, f"{prop.name} is not a number ({value}): type a number")
                    break
                if value < prop.hard_min or value > prop.hard_max:
                    ctx.error(node, f"{prop.name} is {_number_text(prop, value)}; it must be {_range_text(prop)}")
                    break


def _check_min_max(ctx, node, low: str, high: str) -> None:
    """Each axis of the ``low`` vector at most the ``high`` one's (a box, limits, a respawn area)."""
    lo, hi = getattr(node, low), getattr(node, high)
    names = (node.bl_rna.properties[low].name, node.bl_rna.properties[high].name)
    for axis, a, b in zip("XYZ", lo, hi):
        if a > b:
            ctx.error(node, f"{names[0]} {axis} ({a:g}) is above {names[1]} {axis} ({b:g})")


def _compile(tree, ctx) -> CompiledTree | None:
    _check_links(tree, ctx)
    if _check_cycles(tree, ctx) or ctx.errors:
        return None
    _check_ranges(tree, ctx)
    trainers = [n for n in tree.nodes if n.bl_idname == "DRLA_TrainerNode"]
    for extra in trainers[1:]:
        ctx.error(extra, "a tree has one Trainer: remove this one")
    trainer_node = trainers[0] if trainers else None
    agent_node = None
    if trainer_node is not None:
        agent = ctx.input(trainer_node, "Agent", required=False)
        if agent is not None and agent.bl_idname == IK_AGENT:
            return _compile_ik(tree, ctx, agent, trainer_node)
    else:
        iks = [n for n in tree.nodes if n.bl_idname == IK_AGENT]
        envs = [n for n in tree.nodes if n.bl_idname == "DRLA_EnvironmentNode"]
        if iks and not envs:
            for extra in iks[1:]:
                ctx.error(extra, "several Learned IK agents but no Trainer: add a Trainer to choose")
            return _compile_ik(tree, ctx, iks[0], None)
    if trainer_node is not None:
        env_node = ctx.input(trainer_node, "Environment")
        agent_node = ctx.input(trainer_node, "Agent")
    else:
        envs = [n for n in tree.nodes if n.bl_idname == "DRLA_EnvironmentNode"]
        if not envs:
            ctx.error(None, "the tree has no Environment node")
        for extra in envs[1:]:
            ctx.error(extra, "several Environments but no Trainer: add a Trainer to choose")
        env_node = envs[0] if envs else None
        agents = [n for n in tree.nodes if n.bl_idname == "DRLA_DQNAgentNode"]
        agent_node = agents[0] if len(agents) == 1 else None
    if env_node is None:
        return None
    env = _compile_env(env_node, ctx)
    agent = _compile_agent(agent_node, ctx, env) if agent_node is not None else None
    trainer = None
    if trainer_node is not None:
        trainer = TrainerSpec(trainer_node.name, trainer_node.total_steps, trainer_node.seed,
                              trainer_node.checkpoint_interval, output_path(trainer_node.output_path),
                              _exports(tree), trainer_node.eval_interval, trainer_node.eval_episodes)
    return CompiledTree(tree.name, env, agent, trainer)


def output_path(path: str) -> str:
    """An absolute path for a file DRLA writes.

    ``//`` means "next to the .blend"; in a file never saved there is no such folder, and
    ``bpy.path.abspath`` would silently write into the current directory, so those go to the
    checkpoint folder of the preferences (never the extension's own folder).
    """
    if not path:
        return ""
    if path.startswith("//") and not bpy.data.filepath:
        from .preferences import checkpoint_dir

        return os.path.join(checkpoint_dir(), path[2:])
    return bpy.path.abspath(path)


def _store_errors(tree, errors: list[tuple[str, str]]) -> None:
    by_node: dict[str, list[str]] = {}
    for name, message in errors:
        by_node.setdefault(name, []).append(message)
    for node in tree.nodes:
        if hasattr(node, "drla_error"):
            text = "\n".join(by_node.get(node.name, []))
            if node.drla_error != text:
                node.drla_error = text


# --------------------------------------------------------------------------- building


def build_env(compiled: CompiledTree, scene):
    """A ``SceneEnv`` over ``scene`` for the compiled tree (object lookups cached now)."""
    from .scene_env import SceneEnv

    return SceneEnv(compiled.env, scene)


# Our property names -> DQNConfig field names (the agent node mirrors DQNConfig by name).
_ALIASES = {
    "buffer_size": ("buffer_size",),
    "epsilon_start": ("exploration_initial_eps",),
    "epsilon_end": ("exploration_final_eps",),
    "epsilon_fraction": ("exploration_fraction",),
}


def dqn_config(compiled: CompiledTree, total_steps: int | None = None):
    """The ``drla_core.dqn.DQNConfig`` the agent node describes."""
    from ..drla_core import dqn

    spec = compiled.agent or AgentSpec("")
    fields = {f.name for f in dataclasses.fields(dqn.DQNConfig)}
    values: dict[str, Any] = {}
    for ours, value in spec.config.items():
        for name in _ALIASES.get(ours, (ours,)):
            if name in fields:
                values[name] = value
                break
    if isinstance(values.get("loss"), str):
        values["loss"] = values["loss"].lower()
    values["hidden"] = [tuple(h) for h in spec.hidden]
    steps = total_steps or (compiled.trainer.total_steps if compiled.trainer else None)
    if steps and "total_timesteps" in fields:
        values["total_timesteps"] = int(steps)
    return dqn.DQNConfig(**values)


def build_agent(compiled: CompiledTree, env, seed: int | None = None, total_steps: int | None = None):
    """A ``DQNAgent`` with the tree's hyper-parameters and network for ``env``'s spaces."""
    from ..drla_core import dqn

    if seed is None:
        seed = compiled.trainer.seed if compiled.trainer else 0
    return dqn.DQNAgent(env.observation_space, env.action_space, dqn_config(compiled, total_steps), seed)


def build_run(compiled: CompiledTree, env, agent, total_steps: int | None = None, **kw):
    """A ``drla_core.train.TrainingRun`` following the Trainer node."""
    from ..drla_core import train

    t = compiled.trainer or TrainerSpec("")
    steps = int(total_steps or t.total_steps)
    ckpt = t.checkpoint_interval
    kw.setdefault("seed", t.seed)
    kw.setdefault("eval_interval", t.eval_interval)
    kw.setdefault("eval_episodes", t.eval_episodes)
    if ckpt and t.output_path:
        kw.setdefault("checkpoint_interval", ckpt)
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", compiled.tree).strip("_") or "tree"
        kw.setdefault("checkpoint_path", os.path.join(t.output_path, f"{name}_checkpoint.json"))
    return train.TrainingRun(env, agent, steps, **kw)


def export_models(compiled: CompiledTree, agent, env) -> list[str]:
    """Write the trained model to every Export JSON node's file; returns the paths written."""
    from ..drla_core import model_io

    paths = list(compiled.trainer.exports) if compiled.trainer else []
    for path in paths:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        model_io.save_model(path, agent.to_model({"tree": compiled.tree, "actions": env.action_space.names}))
    return paths


def train_tree(tree, scene=None, total_steps: int | None = None, **kw):
    """Compile, build and train ``tree`` in ``scene``; the scene is restored afterwards.

    Returns ``(run, agent, compiled)``; Export JSON nodes are written at the end.
    """
    from .snapshot import scene_session

    scene = scene if scene is not None else bpy.context.scene
    compiled = compile_tree(tree, scene)
    with scene_session(scene):
        env = build_env(compiled, scene)
        try:
            agent = build_agent(compiled, env, total_steps=total_steps)
            run = build_run(compiled, env, agent, total_steps, **kw).run()
        finally:
            env.close()
    export_models(compiled, agent, env)
    return run, agent, compiled
