"""The Expert Switcher node at work: its experts loaded and checked against the tree, its rule read
from the live scene at each step, the learned selector trained, and the policy Play runs.

A rule reads the scene by object *name* each step (a stored RNA pointer can dangle); every problem
is a ``SwitcherError`` whose message the node shows.
"""

from __future__ import annotations

import os
from typing import Any

import bpy
import numpy as np

from ...drla_core.nets.expert_library import ExpertLibrary, LibraryError
from ...drla_core.nets.experts import ExpertError, ExpertSwitcher, ThresholdRule, check_experts, train_selector
from ...drla_core.io.model_io import Model, ModelFormatError, check_fits, load_model, save_model
from ...drla_core.base.spaces import Discrete
from ...drla_core.rl.train import evaluate, metric_text
from ..preferences import resolve_output_path
from ..tree.compiler import compile_tree
from . import build

NODE_ID = "DRLA_ExpertSwitcherNode"
#: The sidebar's Expert Library folder when neither the node nor the scene names one.
DEFAULT_LIBRARY = "//experts"


class SwitcherError(ValueError):
    """An Expert Switcher that cannot act; the message says which expert or setting and why."""


def play_node(tree) -> Any:
    """The tree's Expert Switcher with Use for Play on (the first), or None."""
    if tree is None:
        return None
    return next((n for n in tree.nodes if n.bl_idname == NODE_ID and n.use_for_play and not n.mute), None)


def library_folder(node, scene) -> str:
    """The expert library a name in an expert slot is looked up in (absolute)."""
    folder = node.library or getattr(scene, "drla_expert_library", "") or DEFAULT_LIBRARY
    return resolve_output_path(folder)


def load_experts(node, scene) -> tuple[list[Model], list[str]]:
    """The experts of the node's slots (model files or library names), their spaces checked against each other."""
    models, names = [], []
    library = None
    for i, ref in enumerate(node.expert_refs(), 1):
        ref = ref.strip()
        if not ref:
            raise SwitcherError(f"Expert {i} is empty: choose a model file (.json) or type a library expert's name")
        if ref.lower().endswith(".json"):
            path = bpy.path.abspath(ref)
            try:
                models.append(load_model(path))
            except (ModelFormatError, OSError) as exc:
                raise SwitcherError(f"Expert {i} ({os.path.basename(path)}): {exc}") from exc
            names.append(os.path.splitext(os.path.basename(path))[0])
        else:
            library = library or ExpertLibrary(library_folder(node, scene))
            try:
                models.append(library.load(ref))
            except LibraryError as exc:
                raise SwitcherError(f"Expert {i}: {exc}") from exc
            names.append(ref)
    if len(set(names)) != len(names):
        names = [f"{i}:{n}" for i, n in enumerate(names, 1)]
    try:
        check_experts(models, names)
    except ExpertError as exc:
        raise SwitcherError(f"these experts cannot be combined: {exc}") from exc
    return models, names


def _prop_path(text: str) -> str:
    return text if any(c in text for c in '.["') else f'["{text}"]'


def _object(name: str, what: str):
    ob = bpy.data.objects.get(name) if name else None
    if ob is None:
        raise SwitcherError(f"the rule's {what} is {'not set' if not name else f'missing (no object {name!r})'}")
    return ob


def make_rule(data: dict[str, Any], n_experts: int):
    """The rule (``obs -> expert index``) the node's plain data describes; checked now, read from the scene later."""
    kind = data["rule"]
    for side in ("above", "below"):
        if not (kind == "property" and data["value_is_expert"]) and not 0 <= data[side] < n_experts:
            raise SwitcherError(f"the rule's {side.title()} is expert {data[side] + 1}, but there are {n_experts}")
    if kind == "observation":
        return ThresholdRule(data["obs_index"], data["threshold"], data["above"], data["below"])
    if kind == "property":
        if not data["property"]:
            raise SwitcherError("the rule reads a property: type its name (a custom property, or a path such as "
                                "location.x)")
        name, path = data["object"], _prop_path(data["property"])

        def value() -> float:
            ob = _object(name, "object")
            try:
                return float(ob.path_resolve(path))
            except (ValueError, KeyError, TypeError) as exc:
                raise SwitcherError(f"'{ob.name}' has no number property '{data['property']}'") from exc

        value()  # checked now: a missing object or property is said before anything moves
        if data["value_is_expert"]:
            return lambda obs: int(round(value())) - 1
        threshold, above, below = data["threshold"], data["above"], data["below"]
        return lambda obs: above if value() > threshold else below
    if kind == "distance":
        a_name, b_name = data["object"], data["object_b"]
        _object(a_name, "object")
        _object(b_name, "To object")
        threshold, above, below = data["threshold"], data["above"], data["below"]

        def by_distance(obs: Any) -> int:
            a, b = _object(a_name, "object"), _object(b_name, "To object")
            gap = (a.matrix_world.translation - b.matrix_world.translation).length
            return above if gap > threshold else below
        return by_distance
    raise SwitcherError(f"unknown rule {kind!r}")


class _GreedySelector:
    """A selector model file as ``ExpertSwitcher``'s selector: its greedy choice."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.action_space = model.action_space

    def predict(self, obs: Any) -> int:
        return int(self.model.act(obs))


def make_switcher(node, scene) -> ExpertSwitcher:
    """The node's experts and rule (or learned selector) as an ``ExpertSwitcher``."""
    models, names = load_experts(node, scene)
    data = node.rule_data()
    try:
        if data["rule"] == "learned":
            path = resolve_output_path(data["selector_path"])
            try:
                selector = load_model(path)
            except (ModelFormatError, OSError) as exc:
                raise SwitcherError(f"the selector {os.path.basename(path)} cannot be used ({exc}): press Train "
                                    "Selector") from exc
            if not isinstance(selector.action_space, Discrete) or selector.action_space.n != len(models):
                raise SwitcherError(f"the selector chooses among {getattr(selector.action_space, 'n', '?')} experts, "
                                    f"the node has {len(models)}: press Train Selector again")
            if selector.network.input_size != int(np.prod(models[0].observation_space.shape)):
                raise SwitcherError("the selector reads other observations than the experts: train it again")
            return ExpertSwitcher(models, names=names, selector=_GreedySelector(selector))
        return ExpertSwitcher(models, rule=make_rule(data, len(models)), names=names)
    except ExpertError as exc:
        raise SwitcherError(str(exc)) from exc


def check_fits_env(switcher: ExpertSwitcher, env, tree_name: str) -> None:
    """Every expert must read the tree's observations and choose among its actions."""
    for name, model in zip(switcher.names, switcher.experts):
        try:
            check_fits(model, env.observation_space, env.action_space)
        except ModelFormatError as exc:
            raise SwitcherError(f"expert {name} does not fit tree '{tree_name}': {exc}") from exc


def check(node, scene, tree) -> str:
    """Load, combine and fit the experts to ``tree``'s environment; the result in words (stored on the node,
    or the reason in its error). The scene is restored."""
    try:
        switcher = make_switcher(node, scene)
        compiled = compile_tree(tree, scene)
        if compiled.env is None:
            raise SwitcherError(f"tree '{tree.name}' has no environment for the experts to act in")
        with build.one_scene_env(compiled, scene) as env:
            check_fits_env(switcher, env, tree.name)
    except Exception as exc:
        node.drla_error = str(exc)
        node.result = ""
        raise
    node.drla_error = ""
    n_in = int(np.prod(switcher.observation_space.shape))
    node.result = (f"{len(switcher.experts)} experts fit '{tree.name}': {n_in} inputs -> "
                   f"{getattr(switcher.action_space, 'n', '?')} actions")
    return node.result


def train_selector_for(node, scene, tree, seed: int = 0) -> str:
    """Train the Learned rule's selector (DQN over the experts) in ``tree``'s scene, write it to the node's
    Selector file; the result in words. The scene is restored."""
    models, names = load_experts(node, scene)
    compiled = compile_tree(tree, scene)
    if compiled.env is None:
        raise SwitcherError(f"tree '{tree.name}' has no environment to train a selector in")
    path = resolve_output_path(node.selector_path)
    if not path.lower().endswith(".json"):
        raise SwitcherError("the Selector file must end in .json")
    with build.one_scene_env(compiled, scene) as env:
        for name, model in zip(names, models):
            try:
                check_fits(model, env.observation_space, env.action_space)
            except ModelFormatError as exc:
                raise SwitcherError(f"expert {name} does not fit tree '{tree.name}': {exc}") from exc
        try:
            switcher, run = train_selector(env, models, int(node.selector_steps), seed=seed, names=names)
        except ExpertError as exc:
            raise SwitcherError(str(exc)) from exc
    model = switcher.selector.to_model({"tree": tree.name, "selector_for": names, "steps": int(run.steps)})
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    save_model(path, model)
    returns = run.history.episode_returns[-20:]
    mean = float(np.mean(returns)) if returns else float("nan")
    node.drla_error = ""
    node.result = (f"Selector trained {run.steps} steps (last episodes' mean return {mean:.2f}); "
                   f"saved {os.path.basename(path)}")
    return node.result


def find_node(tree, name: str = "") -> Any:
    """The Expert Switcher named ``name`` in ``tree`` (or, unnamed, the one Play uses, else the only one)."""
    nodes = [n for n in tree.nodes if n.bl_idname == NODE_ID]
    if name:
        found = [n for n in nodes if n.name == name]
        if not found:
            raise SwitcherError(f"tree '{tree.name}' has no Expert Switcher named {name!r}"
                                + (f"; it has: {', '.join(n.name for n in nodes)}" if nodes else ""))
        return found[0]
    node = play_node(tree) or (nodes[0] if len(nodes) == 1 else None)
    if node is None:
        raise SwitcherError(f"tree '{tree.name}' has no Expert Switcher" if not nodes else
                            f"tree '{tree.name}' has several Expert Switchers: name one "
                            f"({', '.join(n.name for n in nodes)})")
    return node


def evaluate_switcher(scene, tree, node, episodes: int, seed: int) -> str:
    """Play ``episodes`` episodes of the switcher in ``tree``'s scene (restored afterwards); the result in words,
    with the steps each expert acted (the CLI's ``drla play --switcher``)."""
    sw = make_switcher(node, scene)
    compiled = compile_tree(tree, scene)
    if compiled.env is None:
        raise SwitcherError(f"tree '{tree.name}' has no environment for the experts to act in")
    with build.one_scene_env(compiled, scene) as env:
        check_fits_env(sw, env, tree.name)
        result = evaluate(env, sw, episodes, seed)
    text = f"{tree.name} with '{node.name}': mean return {result.mean_return:.2f} over {episodes} episode(s)"
    if env.task_metric:
        text += f"; {metric_text(env.task_metric, result.metric_sum, result.metric_count, len(result.returns))}"
    return text + "\nsteps per expert: " + ", ".join(f"{n} {int(c)}" for n, c in zip(sw.names, sw.counts))
