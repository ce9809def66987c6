"""Reward terms and episode endings of a scene environment: one class per kind of node.

Each is built from its spec (``addon.specs.RewardSpec`` / ``DoneSpec``) over the scene, resolving
objects and properties once; ``REWARDS`` and ``DONES`` map a spec's ``kind`` to its class.
"""

from __future__ import annotations

import operator

import numpy as np

from . import probes


class _DistanceReward:
    def __init__(self, spec, scene):
        self.get = probes.distance_probe(scene.objects[spec.obj], scene.objects[spec.other])
        self.progress = spec.options["mode"] == 'PROGRESS'
        self.weight = float(spec.options["weight"])

    def reset(self):
        self.prev = self.get()

    def __call__(self, events):
        d = self.get()
        r = self.weight * (self.prev - d) if self.progress else -self.weight * d
        self.prev = d
        return r


class _PropertyChangeReward:
    def __init__(self, spec, scene):
        owner = scene if spec.options["source"] == 'SCENE' else scene.objects[spec.obj]
        self.get = probes.property_probe(owner, spec.path)
        self.up, self.down = float(spec.options["increase"]), float(spec.options["decrease"])

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

    def reset(self):
        pass

    def __call__(self, events):
        if not events["fired"]:
            return 0.0
        return self.hit if events["hit"] else self.miss


class _StepCost:
    def __init__(self, spec, scene):
        self.cost = float(spec.options["cost"])

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


REWARDS = {"distance": _DistanceReward, "property_change": _PropertyChangeReward, "hit": _HitReward,
           "step_cost": _StepCost, "collect": _CollectReward}


class _OutOfBounds:
    def __init__(self, spec, scene):
        self.loc = probes.location_probe(scene.objects[spec.obj])
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


class _WithinDistance:
    def __init__(self, spec, scene):
        self.get = probes.distance_probe(scene.objects[spec.obj], scene.objects[spec.other])
        self.distance, self.reward = float(spec.options["distance"]), spec.reward

    def reset(self):
        pass

    def __call__(self):
        return self.get() <= self.distance


_COMPARE = {'GE': operator.ge, 'LE': operator.le, 'GT': operator.gt, 'LT': operator.lt, 'EQ': operator.eq}


class _PropertyCondition:
    def __init__(self, spec, scene):
        owner = scene if spec.options["source"] == 'SCENE' else scene.objects[spec.obj]
        self.get = probes.property_probe(owner, spec.path)
        self.op, self.value = _COMPARE[spec.options["compare"]], float(spec.options["value"])
        self.reward = spec.reward

    def reset(self):
        pass

    def __call__(self):
        return self.op(float(self.get()), self.value)


DONES = {"out_of_bounds": _OutOfBounds, "within_distance": _WithinDistance, "property": _PropertyCondition}
