"""Everything that writes numbers into the live scene (the ONLY numpy -> bpy code).

``DiscreteActuator.apply(index, rng)`` performs one named action (move, rotate, rotate a
bone, set or add to a property, wait, fire) and returns what happened (``fired``, ``hit``);
``BoneActuator.apply(vector)`` sets continuous bone rotations; ``MotorActuator.apply(vector)`` sets
rigid-body motor velocities and does the Actions with Amount; ``randomize_locations`` places
objects at random start locations. Objects are looked up once, when built.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
from mathutils import Euler, Quaternion, Vector

from . import probes
from .batch import ObjectArrays

NO_EVENT: dict[str, bool] = {"fired": False, "hit": False}


_LAST = re.compile(r'(?P<base>.*?)(?:\[(?P<index>\d+)\]|\["(?P<key>[^"]+)"\]|\.?(?P<attr>\w+))')


def property_setter(owner, path: str):
    """A setter for a custom property (``["score"]``, ``data["score"]``) or an RNA path
    (``location.z``, ``location[2]``, ``data.energy``)."""
    m = _LAST.fullmatch(path)
    if m is None:
        raise ValueError(f"cannot write property path '{path}'")
    base, index, key, attr = m.group("base"), m.group("index"), m.group("key"), m.group("attr")
    target = owner.path_resolve(base) if base else owner
    if key is not None:

        def set_custom(v):
            cur = target[key]
            target[key] = type(cur)(v) if isinstance(cur, (int, float)) else v
        return set_custom
    if index is not None:
        return lambda v: target.__setitem__(int(index), v)
    return lambda v: setattr(target, attr, v)


def _clamp(values, limits):
    lo, hi = limits
    return [min(max(v, lo[i]), hi[i]) for i, v in enumerate(values)]


def _clamp_quaternion(q, limits):
    """``q`` with its XYZ Euler angles clamped to ``limits`` (degrees)."""
    if limits is None:
        return q
    lo, hi = limits
    e = _clamp(q.to_euler('XYZ'), ([math.radians(v) for v in lo], [math.radians(v) for v in hi]))
    return Euler(e, 'XYZ').to_quaternion()


def _rotate(owner, degrees, limits) -> None:
    """Rotate an object or pose bone by Euler degrees, clamped per axis in degrees (in quaternion
    and axis-angle modes, the result's XYZ Euler angles are clamped: pose bones default to quaternions)."""
    delta = Euler([math.radians(d) for d in degrees])
    if owner.rotation_mode == 'QUATERNION':
        owner.rotation_quaternion = _clamp_quaternion(owner.rotation_quaternion @ delta.to_quaternion(), limits)
    elif owner.rotation_mode == 'AXIS_ANGLE':
        w, x, y, z = owner.rotation_axis_angle
        q = _clamp_quaternion(Quaternion((x, y, z), w) @ delta.to_quaternion(), limits)
        axis, angle = q.to_axis_angle()
        owner.rotation_axis_angle = (angle, *axis)
    else:
        e = owner.rotation_euler
        new = [e[0] + delta[0], e[1] + delta[1], e[2] + delta[2]]
        if limits is not None:
            lo, hi = limits
            new = _clamp(new, ([math.radians(v) for v in lo], [math.radians(v) for v in hi]))
        owner.rotation_euler = new


class _Item:
    """One compiled discrete action bound to live objects."""

    def __init__(self, spec, scene):
        self.spec, self.kind = spec, spec.kind
        self.ob = scene.objects[spec.obj] if spec.obj else None
        if self.kind == 'BONE_ROTATE':
            self.owner = self.ob.pose.bones[spec.bone]
        if self.kind == 'MOVE':
            self.blockers = blocker_boxes([scene.objects[n] for n in spec.options.get("blocked_by", ())])
        if self.kind in {'SET_PROPERTY', 'ADD_PROPERTY'}:
            self.get = probes.property_probe(self.ob, spec.path)
            self.set = property_setter(self.ob, spec.path)
        if self.kind == 'FIRE':
            o = spec.options
            self.scene = scene
            self.axis_ob = scene.objects[o["axis_obj"]] if o["axis_obj"] else self.ob
            self.target = scene.objects[o["target"]]
            self.root = probes.top_parent(self.ob)
            score_ob = scene.objects[o["score_obj"]] if o["score_obj"] else None
            if score_ob is not None:
                self.get_score = probes.property_probe(score_ob, o["score_path"])
                self.set_score = property_setter(score_ob, o["score_path"])
            else:
                self.get_score = None

    def apply(self, rng, amount: float | None = None) -> dict[str, bool]:
        """Do the action; ``amount`` (an Action with Amount) scales its Vector or Value."""
        kind, spec = self.kind, self.spec
        if kind == 'WAIT':
            return NO_EVENT
        if amount is not None:
            return self._apply_amount(amount)
        if kind == 'MOVE':
            step = Vector(spec.vector)
            if spec.space == 'LOCAL':
                step = self.ob.matrix_basis.to_3x3().normalized() @ step
            new = self.ob.location + step
            new = _clamp(new, spec.limits) if spec.limits else new
            if self.blockers is None or not self.blockers.blocks(self._world(new)):
                self.ob.location = new
        elif kind == 'ROTATE':
            _rotate(self.ob, spec.vector, spec.limits)
        elif kind == 'BONE_ROTATE':
            _rotate(self.owner, spec.vector, spec.limits)
        elif kind in {'SET_PROPERTY', 'ADD_PROPERTY'}:
            value = spec.value if kind == 'SET_PROPERTY' else float(self.get()) + spec.value
            if spec.limits:
                value = min(max(value, spec.limits[0][0]), spec.limits[1][0])
            self.set(value)
        elif kind == 'FIRE':
            return self.fire(rng)
        return NO_EVENT

    def _apply_amount(self, amount: float) -> dict[str, bool]:
        spec = self.spec
        if self.kind in {'SET_PROPERTY', 'ADD_PROPERTY'}:
            value = spec.value * amount + (float(self.get()) if self.kind == 'ADD_PROPERTY' else 0.0)
            if spec.limits:
                value = min(max(value, spec.limits[0][0]), spec.limits[1][0])
            self.set(value)
            return NO_EVENT
        vector = [v * amount for v in spec.vector]
        if self.kind == 'ROTATE':
            _rotate(self.ob, vector, spec.limits)
        elif self.kind == 'BONE_ROTATE':
            _rotate(self.owner, vector, spec.limits)
        elif self.kind == 'MOVE':
            step = Vector(vector)
            if spec.space == 'LOCAL':
                step = self.ob.matrix_basis.to_3x3().normalized() @ step
            new = self.ob.location + step
            new = _clamp(new, spec.limits) if spec.limits else new
            if self.blockers is None or not self.blockers.blocks(self._world(new)):
                self.ob.location = new
        return NO_EVENT

    def _world(self, location) -> Vector:
        """Where the object's origin would be in the world with ``location``."""
        if self.ob.parent is None:
            return Vector(location)
        return self.ob.parent.matrix_world @ self.ob.matrix_parent_inverse @ Vector(location)

    def fire(self, rng) -> dict[str, bool]:
        o = self.spec.options
        origin = self.ob.matrix_world.translation
        hit_ob, _dist = probes.cast_ray(self.scene, origin, probes.world_axis(self.axis_ob, o["axis"]),
                                         o["range"], self.root)
        hit = hit_ob is not None and (hit_ob == self.target or probes.top_parent(hit_ob) == self.target
                                      or self.target in _ancestors(hit_ob))
        if hit:
            if self.get_score is not None:
                self.set_score(float(self.get_score()) + o["add"])
            if o["respawn"]:
                randomize_locations([self.target], rng, o["respawn_min"], o["respawn_max"], o["respawn_grid"])
        return {"fired": True, "hit": bool(hit)}


class BlockerBoxes:
    """The world bounding boxes of still objects (a maze's walls), as arrays: ``blocks(point)`` tells
    whether a point lies strictly inside one of them."""

    def __init__(self, lo: np.ndarray, hi: np.ndarray) -> None:
        self.lo, self.hi = lo, hi

    def blocks(self, point) -> bool:
        p = np.asarray(point, np.float64)
        return bool(np.any(np.all((self.lo < p) & (p < self.hi), axis=1)))


def blocker_boxes(objects) -> BlockerBoxes | None:
    """The boxes of ``objects`` as they stand now (None for none); a box is shrunk by 1e-6 so that a point
    on a face (a neighbouring cell's edge) is outside."""
    if not objects:
        return None
    lo, hi = [], []
    for ob in objects:
        # an unparented object's own transform: its matrix_world may not be evaluated yet (a script's new object)
        m = ob.matrix_basis if ob.parent is None else ob.matrix_world
        corners = np.array([tuple(m @ Vector(c)) for c in ob.bound_box], np.float64)
        lo.append(corners.min(axis=0) + 1e-6)
        hi.append(corners.max(axis=0) - 1e-6)
    return BlockerBoxes(np.array(lo), np.array(hi))


def _ancestors(ob) -> list[Any]:
    out = []
    while ob.parent is not None:
        ob = ob.parent
        out.append(ob)
    return out


class DiscreteActuator:
    """Performs discrete action ``index`` of a compiled action list."""

    def __init__(self, action_specs, scene):
        self.items = [_Item(spec, scene) for spec in action_specs]

    def apply(self, index: int, rng: np.random.Generator) -> dict[str, bool]:
        return self.items[int(index)].apply(rng)


def batch_moves(items: list[_Item]) -> bool:
    """Whether ``MoveBatch`` can apply these items (the copies' versions of one action): world-space moves that
    no wall blocks (a Blocked By move checks its own copy's walls one copy at a time)."""
    return items[0].kind == 'MOVE' and items[0].spec.space != 'LOCAL' and all(
        item.blockers is None for item in items)


class MoveBatch:
    """World-space Move actions of many scene copies in one pass: every moved object's location read at
    once (``batch.ObjectArrays``), the new locations computed in numpy with the float32 addition and the
    clamping ``_Item.apply`` does (bit-identical), then written object by object (a location written
    from Python is what tells Blender to evaluate the object again).

    ``actuators``: the copies' ``DiscreteActuator`` s; ``batched[a]`` says whether action ``a`` is done here."""

    def __init__(self, actuators: list[DiscreteActuator]) -> None:
        n_actions = len(actuators[0].items)
        self.batched = [batch_moves([act.items[a] for act in actuators]) for a in range(n_actions)]
        objects: list = []
        self.rows: dict[int, np.ndarray] = {}  # action -> row of each copy's moved object in the read
        for a in range(n_actions):
            if not self.batched[a]:
                continue
            rows = []
            for act in actuators:
                ob = act.items[a].ob
                if ob not in objects:
                    objects.append(ob)
                rows.append(objects.index(ob))
            self.rows[a] = np.asarray(rows, np.intp)
        self.objects = objects
        self.arrays = ObjectArrays(objects, "location", 3) if objects else None
        self.actuators = actuators
        self.steps = {a: np.asarray(actuators[0].items[a].spec.vector, np.float32) for a in self.rows}
        self.limits = {}
        for a in self.rows:
            limits = actuators[0].items[a].spec.limits
            self.limits[a] = (np.asarray(limits[0], np.float64), np.asarray(limits[1], np.float64)) if limits else None

    def apply(self, actions: np.ndarray, copies: np.ndarray) -> None:
        """Apply ``actions[i]`` (all batched) to copy ``copies[i]``."""
        if self.arrays is None or not len(copies):
            return
        locations = self.arrays.read()
        for a in np.unique(actions).tolist():
            chosen = copies[actions == a]
            new = locations[self.rows[a][chosen]] + self.steps[a]
            if self.limits[a] is not None:
                new = np.minimum(np.maximum(new.astype(np.float64), self.limits[a][0]), self.limits[a][1])
            for i, row in zip(chosen.tolist(), new.tolist()):
                self.actuators[i].items[a].ob.location = row


class BoneActuator:
    """Continuous actions: 3 values in [-1, 1] per bone, Euler angles times ``max_angle``."""

    def __init__(self, spec, scene):
        arm = scene.objects[spec.armature]
        self.bones = [arm.pose.bones[name] for name in spec.bones]
        self.delta = spec.mode == 'DELTA'
        self.max_angle = float(spec.max_angle)

    def apply(self, action, rng=None) -> dict[str, bool]:
        a = np.clip(np.asarray(action, np.float64).reshape(-1, 3), -1.0, 1.0) * self.max_angle
        for pb, e in zip(self.bones, a):
            q = Euler(e.tolist()).to_quaternion()
            if self.delta:
                q = (pb.rotation_quaternion if pb.rotation_mode == 'QUATERNION'
                     else pb.matrix_basis.to_quaternion()) @ q
            if pb.rotation_mode == 'QUATERNION':
                pb.rotation_quaternion = q
            else:
                pb.rotation_euler = q.to_euler(pb.rotation_mode if len(pb.rotation_mode) == 3 else 'XYZ')
        return NO_EVENT


class MotorActuator:
    """Continuous actions, each value clipped to [-1, 1]: a rigid-body motor's value times its Max Velocity
    becomes its constraint's target velocity (taking effect on the next simulated frame); an Action with
    Amount moves, rotates or changes its property by the value times its Vector or Value."""

    def __init__(self, spec, scene):
        motor = [m.kind == 'MOTOR' for m in spec.motors]
        self.setters = [property_setter(scene.objects[m.obj], m.path) if is_motor else _Item(m, scene)
                        for m, is_motor in zip(spec.motors, motor)]
        self.motor = motor
        self.scales = np.asarray([m.value if is_motor else 1.0 for m, is_motor in zip(spec.motors, motor)],
                                 np.float64)

    def apply(self, action, rng=None) -> dict[str, bool]:
        values = np.clip(np.asarray(action, np.float64).reshape(-1), -1.0, 1.0) * self.scales
        for setter, is_motor, v in zip(self.setters, self.motor, values.tolist()):
            if is_motor:
                setter(v)
            else:
                setter.apply(rng, v)
        return NO_EVENT


def random_location(rng: np.random.Generator, low, high, grid: float = 0.0) -> list[float]:
    """Uniform between ``low`` and ``high``; with ``grid``, a uniform pick among the multiples of ``grid`` inside."""
    if grid <= 0:  # what rng.uniform(low, high) draws (low + (high - low) * u), without its slow argument checks
        lo = np.asarray(low, np.float64)
        return (lo + (np.asarray(high, np.float64) - lo) * rng.random(lo.shape)).tolist()
    lo = np.ceil(np.asarray(low, np.float64) / grid - 1e-9)
    hi = np.floor(np.asarray(high, np.float64) / grid + 1e-9)
    return (rng.integers(lo, np.maximum(hi, lo) + 1) * grid).tolist()


def randomize_locations(objects, rng: np.random.Generator, low, high, grid: float = 0.0) -> None:
    """Place each object at a random location between ``low`` and ``high`` (world, unparented)."""
    for ob in objects:
        ob.location = random_location(rng, low, high, grid)
