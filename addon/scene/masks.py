"""The action mask of a scene environment: which discrete actions are enabled now.

An Action node with a condition (``specs.ConditionSpec``) is enabled only while it holds: a property compared
with a value (a flag is a bool or int custom property: ``>= 1``), or the distance between two objects compared
with a value. ``ActionMask(actions, scene)()`` reads the scene as it is (after the frame's evaluation) and gives
Gymnasium's ``info["action_mask"]``: int8, one 0/1 per action, 1 for an action without a condition.
"""

from __future__ import annotations

import inspect
import math
import operator
from collections.abc import Callable, Sequence

import numpy as np

from . import probes

COMPARE: dict[str, Callable[[float, float], bool]] = {
    'GE': operator.ge, 'LE': operator.le, 'GT': operator.gt, 'LT': operator.lt, 'EQ': operator.eq,
    'NE': operator.ne}


class ConditionError(RuntimeError):
    """A condition that cannot be read while the scene runs (its property is gone or not a number)."""


def _condition(spec, scene) -> Callable[[], bool]:
    op, value = COMPARE[spec.compare], float(spec.value)
    if spec.kind == "distance":
        get = probes.distance_probe(scene.objects[spec.obj], scene.objects[spec.other])
        return lambda: op(get(), value)
    owner = scene if spec.source == 'SCENE' else scene.objects[spec.obj]
    read = probes.property_probe(owner, spec.path)
    where = f"'{scene.name}'" if spec.source == 'SCENE' else f"'{spec.obj}'"

    def check() -> bool:
        try:
            v = float(read())
        except (KeyError, ValueError, TypeError) as exc:
            raise ConditionError(f"Action node '{spec.node}': its condition reads {spec.path} of {where}, which "
                                 f"is gone or not a number ({type(exc).__name__}: {exc})") from None
        return op(v, value) if math.isfinite(v) else False

    return check


class ActionMask:
    """The enabled actions of ``actions`` (``ActionSpec`` s, in the Action Set's order) in ``scene``."""

    def __init__(self, actions: Sequence, scene) -> None:
        self.n = len(actions)
        self.conditions = [(i, _condition(a.condition, scene)) for i, a in enumerate(actions)
                           if a.condition is not None]

    def __bool__(self) -> bool:
        return bool(self.conditions)

    def __call__(self) -> np.ndarray:
        mask = np.ones(self.n, dtype=np.int8)
        for i, holds in self.conditions:
            if not holds():
                mask[i] = 0
        return mask


def action_mask(actions: Sequence, scene) -> ActionMask | None:
    """An ``ActionMask`` when one of ``actions`` has a condition, else ``None`` (the env gives no mask)."""
    mask = ActionMask(actions, scene)
    return mask if mask else None


def greedy_action(model, obs, info):
    """``model``'s greedy action for ``obs``, among the actions ``info["action_mask"]`` enables when the env gives
    one and the model's ``act`` takes a mask (a stored ``Model``, an agent's ``act``); Play and Bake use it."""
    mask = info.get("action_mask") if isinstance(info, dict) else None
    if mask is not None and _takes_mask(model.act):
        return model.act(obs, mask=mask)
    return model.act(obs)


def _takes_mask(fn) -> bool:
    try:
        return "mask" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
