"""The Merge node at work: its model files merged into one (``drla_core.nets.merge``), written to its Output.

Distillation records each teacher's states by playing it (greedy, a little exploration) where it was
trained: the tree its file names (``meta["tree"]``) when this .blend holds it, else its built-in
environment (``meta["env"]``), else the tree the Merge node is in. Every scene is restored after.
"""

from __future__ import annotations

import os
from typing import Any

import bpy

from ...drla_core.envs import ENV_NAMES, make
from ...drla_core.nets.merge import MergeError, average, check_average, distill, record_states
from ...drla_core.io.model_io import Model, ModelFormatError, check_fits, load_model, save_model
from ..preferences import resolve_output_path
from ..tree.compiler import compile_tree
from ..tree.node_tree import TREE_ID
from ..specs import CompileError
from . import build


class MergeFailure(ValueError):
    """A merge that cannot be done; the message says which file and why."""


def load_sources(node) -> tuple[list[Model], list[str]]:
    """The node's model files, each checked as any model file (never executed)."""
    models, names = [], []
    for i, typed in enumerate(node.model_paths(), 1):
        if not typed.strip():
            raise MergeFailure(f"Model {i} is empty: choose a model file (.json)")
        path = bpy.path.abspath(typed)
        try:
            models.append(load_model(path))
        except (ModelFormatError, OSError) as exc:
            raise MergeFailure(f"Model {i} ({os.path.basename(path)}): {exc}") from exc
        names.append(os.path.basename(path))
    return models, names


def _teacher_tree(model: Model, fallback) -> Any:
    """The DRLA tree of this file a teacher was trained on, else ``fallback`` (the Merge node's own tree)."""
    name = model.meta.get("tree")
    tree = bpy.data.node_groups.get(name) if isinstance(name, str) else None
    return tree if tree is not None and tree.bl_idname == TREE_ID else fallback


def record_teacher_states(model: Model, name: str, fallback_tree, scene, n_states: int,
                          seed: int) -> tuple[Any, str]:
    """``n_states`` observations the teacher visits where it was trained, and where that was (in words): the tree
    its file names when this .blend has it, else its built-in environment, else ``fallback_tree``."""
    env_name = model.meta.get("env")
    tree = _teacher_tree(model, fallback_tree)
    if tree is None:
        raise MergeFailure(f"{name} names no tree of this file to record its states in")
    if model.meta.get("tree") not in bpy.data.node_groups and env_name in ENV_NAMES:
        env = make(env_name)
        try:
            check_fits(model, env.observation_space, env.action_space)
        except ModelFormatError as exc:
            raise MergeFailure(f"{name} does not fit its environment {env_name}: {exc}") from exc
        return record_states(model, env, n_states, seed=seed), env_name
    try:
        compiled = compile_tree(tree, scene)
    except CompileError as exc:
        raise MergeFailure(f"recording {name}'s states in tree '{tree.name}': {exc}") from exc
    if compiled.env is None:
        raise MergeFailure(f"tree '{tree.name}' has no environment to record {name}'s states in")
    with build.one_scene_env(compiled, scene) as env:
        try:
            check_fits(model, env.observation_space, env.action_space)
            states = record_states(model, env, n_states, seed=seed)
        except ModelFormatError as exc:
            raise MergeFailure(f"{name} does not fit tree '{tree.name}' (its states are recorded there): "
                               f"{exc}") from exc
    return states, f"tree '{tree.name}'"


def merge(node, scene) -> str:
    """Merge the node's models by its Mode into its Output file; the result in words (also on the node).
    Raises ``MergeFailure`` with the reason (also in the node's error)."""
    try:
        text = _merge(node, scene)
    except MergeFailure as exc:
        node.drla_error, node.result = str(exc), ""
        raise
    node.drla_error, node.result = "", text
    return text


def _merge(node, scene) -> str:
    models, names = load_sources(node)
    out = resolve_output_path(node.output_path)
    if not out.lower().endswith(".json"):
        raise MergeFailure("the Output file must end in .json")
    method, note = node.mode.lower(), ""
    if method == "auto":
        try:
            check_average(models, names)
            method = "average"
        except MergeError as exc:
            method, note = "distill", f"not averaged: {exc}"
    try:
        if method == "average":
            merged = average(models, names=names)
            lines = [f"Averaged {len(models)} networks into {os.path.basename(out)}"]
        else:
            states, places = [], []
            for i, (model, name) in enumerate(zip(models, names)):
                s, where = record_teacher_states(model, name, node.id_data, scene, int(node.states),
                                                 int(node.seed) + i)
                states.append(s)
                places.append(where)
            merged, info = distill(models, states, epochs=int(node.epochs), seed=int(node.seed), names=names)
            merged.meta["merge"]["recorded_in"] = places
            lines = [f"Distilled {len(models)} networks into {os.path.basename(out)}"]
            lines += [f"{name}: same action on {100 * share:.1f} % of its states ({where})"
                      for name, share, where in zip(names, info["agreement"], places)]
    except MergeError as exc:
        raise MergeFailure(str(exc)) from exc
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    save_model(out, merged)
    if note:
        lines.append(note)
    return "\n".join(lines)
