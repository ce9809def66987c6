"""Reward terms and episode endings of a scene environment: one class per kind of node.

Each is built from its spec (``addon.specs.RewardSpec`` / ``DoneSpec``) over the scene, resolving
objects and properties once; ``REWARDS`` and ``DONES`` map a spec's ``kind`` to its class.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from . import probes
from .batch import distance, distances

# A term or ending whose ``batch`` is set is computed for many scene copies at once (``SceneVectorEnv``):
# ``objects()`` are the objects whose world matrices it needs; ``batch(terms)`` (the copies' terms) is
# called with those matrices (one (N, 4, 4) float64 array per object) and, for rewards, the copies'
# ``fired`` and ``hit`` arrays; ``begin(i)`` takes copy i's state after its ``reset()``. It gives exactly
# what the copies' own ``__call__`` give, with the same float operations in the same order.


class _DistanceReward:
    def __init__(self, spec, scene):
        self.a, self.b = scene.objects[spec.obj], scene.objects[spec.other]
        self.get = lambda: distance(self.a, self.b)
        self.progress = spec.options["mode"] == 'PROGRESS'
        self.weight = float(spec.options["weight"])
        self.batch = _DistanceRewardBatch

    def objects(self) -> list:
        return [self.a, self.b]

    def reset(self):
        self.prev = self.get()

    def __call__(self, events):
        d = self.get()
        r = self.weight * (self.prev - d) if self.progress else -self.weight * d
        self.prev = d
        return r


class _DistanceRewardBatch:
    def __init__(self, terms) -> None:
        self.terms = terms
        self.progress, self.weight = terms[0].progress, terms[0].weight
        self.prev = np.zeros(len(terms))

    def begin(self, i: int) -> None:
        self.prev[i] = self.terms[i].prev

    def __call__(self, mats, fired, hit) -> np.ndarray:
        d = distances(mats[0][:, :3, 3], mats[1][:, :3, 3])
        r = self.weight * (self.prev - d) if self.progress else -self.weight * d
        self.prev = d
        return r


class _PropertyChangeReward:
    def __init__(self, spec, scene):
        owner = scene if spec.options["source"] == 'SCENE' else scene.objects[spec.obj]
        self.get = probes.property_probe(owner, spec.path)
        self.up, self.down = float(spec.options["increase"]), float(spec.options["decrease"])
        self.batch = None

    def reset(self):
        self.prev = float(self.get())

    def __call__(self, events):
        v = float(self.get())
        r = self.up if v > self.prev else self.down if v < self.prev else 0.0
        self.prev = v
        return r


class _HitReward:
    def __init__(self, spec, scene):
        self.hit, self.miss = float(spec.options["hit"]), float(spec.options["miss"])
        self.batch = _HitRewardBatch

    def objects(self) -> list:
        return []

    def reset(self):
        pass

    def __call__(self, events):
        if not events["fired"]:
            return 0.0
        return self.hit if events["hit"] else self.miss


class _HitRewardBatch:
    def __init__(self, terms) -> None:
        self.hit, self.miss = terms[0].hit, terms[0].miss

    def begin(self, i: int) -> None:
        pass

    def __call__(self, mats, fired, hit) -> np.ndarray:
        return np.where(fired, np.where(hit, self.hit, self.miss), 0.0)


class _StepCost:
    def __init__(self, spec, scene):
        self.cost = float(spec.options["cost"])
        self.batch = _StepCostBatch

    def objects(self) -> list:
        return []

    def reset(self):
        pass

    def __call__(self, events):
        return -self.cost


class _CollectReward:
    """Items within the radius of the collector are collected (scaled to zero: gone for the episode); the
    environment puts them back at reset (they are among the objects it restores: ``options["touches"]``)."""

    def __init__(self, spec, scene):
        self.collector = scene.objects[spec.obj]
        self.items = [scene.objects[n] for n in spec.options["items"]]
        self.radius, self.reward = float(spec.options["radius"]), float(spec.options["reward"])
        self.key = spec.path[2:-2] if spec.path else ""

    def reset(self):
        self.where = np.array([tuple(ob.matrix_world.translation) for ob in self.items], np.float64).reshape(-1, 3)
        self.left = np.ones(len(self.items), dtype=bool)

    def __call__(self, events):
        p = np.asarray(self.collector.matrix_world.translation, np.float64)
        near = self.left & (np.einsum("ij,ij->i", self.where - p, self.where - p) <= self.radius ** 2)
        if not near.any():
            return 0.0
        for i in np.flatnonzero(near).tolist():
            self.items[i].scale = (0.0, 0.0, 0.0)
        self.left &= ~near
        n = int(near.sum())
        if self.key:
            self.collector[self.key] = type(self.collector[self.key])(self.collector[self.key] + n)
        return self.reward * n


class _StepCostBatch:
    def __init__(self, terms) -> None:
        self.value = -terms[0].cost
        self.n = len(terms)

    def begin(self, i: int) -> None:
        pass

    def __call__(self, mats, fired, hit) -> np.ndarray:
        return np.full(self.n, self.value)


REWARDS = {"distance": _DistanceReward, "property_change": _PropertyChangeReward, "hit": _HitReward,
           "step_cost": _StepCost, "collect": _CollectReward}


class _OutOfBounds:
    def __init__(self, spec, scene):
        self.ob = scene.objects[spec.obj]
        self.loc = probes.location_probe(self.ob)
        self.batch = _OutOfBoundsBatch
        self.bounds_ob = scene.objects[spec.other] if spec.other else None
        self.box = (spec.options.get("min"), spec.options.get("max"))
        self.origin = np.asarray(spec.options.get("origin", (0.0, 0.0, 0.0)), np.float64)  # a scene copy's place
        self.reward = spec.reward

    def reset(self):
        if self.bounds_ob is not None:
            x0, x1, y0, y1 = probes.xy_extent(self.bounds_ob)
            self.box = ((x0, y0, -np.inf), (x1, y1, np.inf))

    def __call__(self):
        p, (lo, hi) = np.asarray(self.loc(), np.float64) - self.origin, self.box
        return not (lo[0] <= p[0] <= hi[0] and lo[1] <= p[1] <= hi[1] and lo[2] <= p[2] <= hi[2])

    def objects(self) -> list:
        return [self.ob]


class _OutOfBoundsBatch:
    def __init__(self, dones) -> None:
        self.dones = dones
        self.origins = np.array([d.origin for d in dones], np.float64)
        self.lo = np.zeros((len(dones), 3))
        self.hi = np.zeros((len(dones), 3))
        for i in range(len(dones)):
            self.begin(i)

    def begin(self, i: int) -> None:
        lo, hi = self.dones[i].box
        self.lo[i] = [-math.inf if v is None else v for v in lo] if lo is not None else -math.inf
        self.hi[i] = [math.inf if v is None else v for v in hi] if hi is not None else math.inf

    def __call__(self, mats) -> np.ndarray:
        p = mats[0][:, :3, 3] - self.origins
        return ~((self.lo <= p) & (p <= self.hi)).all(axis=1)


class _WithinDistance:
    def __init__(self, spec, scene):
        self.a, self.b = scene.objects[spec.obj], scene.objects[spec.other]
        self.get = lambda: distance(self.a, self.b)
        self.distance, self.reward = float(spec.options["distance"]), spec.reward
        self.batch = _WithinDistanceBatch

    def objects(self) -> list:
        return [self.a, self.b]

    def reset(self):
        pass

    def __call__(self):
        return self.get() <= self.distance


class _WithinDistanceBatch:
    def __init__(self, dones) -> None:
        self.distance = dones[0].distance

    def begin(self, i: int) -> None:
        pass

    def __call__(self, mats) -> np.ndarray:
        return distances(mats[0][:, :3, 3], mats[1][:, :3, 3]) <= self.distance


_COMPARE = {'GE': operator.ge, 'LE': operator.le, 'GT': operator.gt, 'LT': operator.lt, 'EQ': operator.eq}


class _PropertyCondition:
    def __init__(self, spec, scene):
        owner = scene if spec.options["source"] == 'SCENE' else scene.objects[spec.obj]
        self.get = probes.property_probe(owner, spec.path)
        self.op, self.value = _COMPARE[spec.options["compare"]], float(spec.options["value"])
        self.reward = spec.reward
        self.batch = None

    def reset(self):
        pass

    def __call__(self):
        return self.op(float(self.get()), self.value)


DONES = {"out_of_bounds": _OutOfBounds, "within_distance": _WithinDistance, "property": _PropertyCondition}
