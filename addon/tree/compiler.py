"""Compile a DRLA node tree into plain data (``specs``), checking it as it goes.

``compile_tree(tree, scene)`` checks the links (socket types, loops) and the number fields, walks
Trainer -> Environment / Agent, and asks each node for its own spec (``node.compile(ctx)``: a node
owns its meaning). Every problem is stored on the node it concerns (``node.drla_error``, drawn in
red) and returned as ``(node_name, message)`` in a ``CompileError``. Compiling reads the scene and
never changes it.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import bpy

from ..preferences import resolve_output_path
from ..specs import CompiledTree, CompileError, EnvSpec
from ..words import article
from .node_tree import TREE_ID, linked_nodes


class CompileContext:
    """What a node's ``compile(ctx)`` reads the scene with; collects the errors per node."""

    def __init__(self, tree, scene):
        self.tree, self.scene = tree, scene
        self.errors: list[tuple[str, str]] = []
        self.env: EnvSpec | None = None  # the environment compiled so far (an agent checks its actions)

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

    def compile_linked(self, nodes, role: str, what: str) -> list:
        """The specs of ``nodes`` (linked into one input), each of which must play ``role``."""
        specs = []
        for node in nodes:
            if getattr(node, "role", "") != role:
                self.error(node, f"'{node.bl_label}' is not {article(what)}: link it elsewhere")
                continue
            spec = node.compile(self)
            if spec is not None:
                specs.append(spec)
        return specs

    def obj(self, node, prop: str, kind: str | None = None, required: bool = True) -> str:
        """The name of the object in ``node.<prop>``, checked: set, in the scene, of ``kind``."""
        ob = getattr(node, prop)
        label = node.bl_rna.properties[prop].name
        if ob is None:
            if required:
                what = "object" if kind is None else kind.lower()
                self.error(node, f"choose {article(what)}" if label.lower() == what
                           else f"choose {article(what)} for {label}")
            return ""
        if self.scene is not None and self.scene.objects.get(ob.name) is None:
            self.error(node, f"{label} '{ob.name}' is not in the scene '{self.scene.name}'")
        if kind is not None and ob.type != kind:
            self.error(node, f"{label} '{ob.name}' is not {article(kind.lower())} (it is {article(ob.type.lower())})")
        return ob.name

    def bones(self, node, armature_name: str, text: str) -> list[str]:
        """Comma-separated bone names, checked against the armature (empty: all its bones)."""
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

    def min_max(self, node, low: str, high: str) -> None:
        """Each axis of the ``low`` vector at most the ``high`` one's (a box, limits, a respawn area)."""
        lo, hi = getattr(node, low), getattr(node, high)
        names = (node.bl_rna.properties[low].name, node.bl_rna.properties[high].name)
        for axis, a, b in zip("XYZ", lo, hi):
            if a > b:
                self.error(node, f"{names[0]} {axis} ({a:g}) is above {names[1]} {axis} ({b:g})")

    def exports(self) -> list[str]:
        """The files of the tree's Export nodes that are linked (absolute paths)."""
        return [resolve_output_path(n.filepath) for n in self.tree.nodes
                if getattr(n, "role", "") == "export" and n.inputs["Model"].is_linked]


def vec(v) -> tuple[float, ...]:
    return tuple(float(x) for x in v)


def compile_tree(tree, scene=None) -> CompiledTree:
    """Validate ``tree`` and return its plain-data form; raise ``CompileError`` on problems.

    Errors are also stored per node (``drla_error``). ``scene`` (default: the context scene) is
    where objects must live. Nothing in the scene changes.
    """
    if getattr(tree, "bl_idname", None) != TREE_ID:
        raise CompileError([("", f"'{getattr(tree, 'name', tree)}' is not a DRLA node tree")])
    scene = scene if scene is not None else bpy.context.scene
    ctx = CompileContext(tree, scene)
    try:
        compiled = _walk(tree, ctx)
    except Exception as exc:  # a bug must still end as a message, never a half-written tree
        ctx.error(None, f"internal error while compiling: {type(exc).__name__}: {exc}")
        compiled = None
    _store_errors(tree, ctx.errors)
    if ctx.errors or compiled is None:
        raise CompileError(ctx.errors)
    return compiled


def _of_role(tree, role: str) -> list:
    return [n for n in tree.nodes if getattr(n, "role", "") == role]


def _walk(tree, ctx) -> CompiledTree | None:
    """Trainer -> (Environment, Agent); an agent that needs no environment (Learned IK) trains alone."""
    _check_links(tree, ctx)
    if _check_cycles(tree, ctx) or ctx.errors:
        return None
    _check_ranges(tree, ctx)
    trainers = _of_role(tree, "trainer")
    for extra in trainers[1:]:
        ctx.error(extra, "a tree has one Trainer: remove this one")
    trainer_node = trainers[0] if trainers else None
    if getattr(trainer_node, "team", False):
        return _walk_team(tree, ctx, trainer_node)
    envs = _of_role(tree, "environment")
    if trainer_node is not None:
        agent_node = ctx.input(trainer_node, "Agent", required=False)
        alone = agent_node is not None and not getattr(agent_node, "needs_environment", True)
        env_node = None if alone else ctx.input(trainer_node, "Environment")
        if agent_node is None and not alone:
            ctx.input(trainer_node, "Agent")  # the error
        if alone and trainer_node.inputs["Environment"].is_linked:
            ctx.error(trainer_node, agent_node.unlink_environment_message)
    else:
        agents = _of_role(tree, "agent")
        lone = [n for n in agents if not getattr(n, "needs_environment", True)]
        alone = bool(lone) and not envs
        if alone:
            for extra in lone[1:]:
                ctx.error(extra, extra.several_message)
            agent_node, env_node = lone[0], None
        else:
            if not envs:
                ctx.error(None, "the tree has no Environment node")
            for extra in envs[1:]:
                ctx.error(extra, "several Environments but no Trainer: add a Trainer to choose")
            env_node = envs[0] if envs else None
            with_env = [n for n in agents if getattr(n, "needs_environment", True)]
            agent_node = with_env[0] if len(with_env) == 1 else None
    if not alone and env_node is None:
        return None
    env = env_node.compile(ctx) if env_node is not None else None
    ctx.env = env
    agent = agent_node.compile(ctx) if agent_node is not None else None
    trainer = trainer_node.compile(ctx) if trainer_node is not None else None
    return CompiledTree(tree.name, env, agent, trainer)


def _walk_team(tree, ctx, trainer_node) -> CompiledTree | None:
    """Multi-Agent Trainer -> Named Agents, each with its own Environment and Agent."""
    members = []
    for node in linked_nodes(trainer_node.inputs["Agents"]):
        member = node.compile(ctx)
        if member is not None:
            members.append(member)
    if not trainer_node.inputs["Agents"].is_linked:
        ctx.error(trainer_node, "link a Named Agent (or several) into its Agents input")
    seen: dict[str, str] = {}
    for m in members:
        if m.name in seen:
            ctx.error(tree.nodes[m.node], f"another Named Agent ('{seen[m.name]}') is called '{m.name}' too")
        seen.setdefault(m.name, m.node)
    if members and not any(m.mode == "train" for m in members):
        ctx.error(trainer_node, "every Named Agent is Frozen: set one to Train")
    trainer = trainer_node.compile(ctx)
    return CompiledTree(tree.name, None, trainer_node.team_agent(ctx, members), trainer, members)


def _check_links(tree, ctx) -> None:
    for link in tree.links:
        a, b = link.from_socket, link.to_socket
        if a.bl_idname != b.bl_idname:
            ctx.error(link.to_node, f"its {b.name} input takes {article(b.bl_label or b.bl_idname)}, but "
                                    f"'{link.from_node.name}' gives {article(a.bl_label or a.bl_idname)}")


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


def _store_errors(tree, errors: list[tuple[str, str]]) -> None:
    by_node: dict[str, list[str]] = {}
    for name, message in errors:
        by_node.setdefault(name, []).append(message)
    for node in tree.nodes:
        if hasattr(node, "drla_error"):
            text = "\n".join(by_node.get(node.name, []))
            if node.drla_error != text:
                node.drla_error = text
