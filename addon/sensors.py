"""Everything that reads the live scene into numbers (the ONLY bpy -> numpy code).

``StateReader(state_spec, scene)`` resolves every object, bone and property once and then
``read()`` fills one float32 observation vector. The probe functions (``distance_probe``,
``property_probe``, ...) are the scalar reads that rewards and endings use, and
``cast_ray`` is the one ray query (used by the Ray sensor and the Fire action).
"""

from __future__ import annotations

import math
from typing import Any
from collections.abc import Callable

import bpy
import numpy as np
from mathutils import Vector

AXIS_VECTORS = {'POS_X': (1, 0, 0), 'NEG_X': (-1, 0, 0), 'POS_Y': (0, 1, 0), 'NEG_Y': (0, -1, 0),
                'POS_Z': (0, 0, 1), 'NEG_Z': (0, 0, -1)}


def depsgraph_of(scene):
    ctx_scene = getattr(bpy.context, "scene", None)
    if ctx_scene is not None and ctx_scene == scene:
        return bpy.context.evaluated_depsgraph_get()
    return scene.view_layers[0].depsgraph


def view_layer_of(scene):
    ctx_scene = getattr(bpy.context, "scene", None)
    if ctx_scene is not None and ctx_scene == scene:
        return bpy.context.view_layer
    return scene.view_layers[0]


def _top(ob):
    while ob.parent is not None:
        ob = ob.parent
    return ob


def cast_ray(scene, origin, direction, distance: float, ignore_root=None):
    """First object hit along a world-space ray: ``(object, distance)`` or ``(None, distance)``.

    Hits on ``ignore_root``'s hierarchy (the shooter's own body) are passed through.
    """
    dg = depsgraph_of(scene)
    origin, direction = Vector(origin), Vector(direction).normalized()
    travelled = 0.0
    for _ in range(8):
        hit, loc, _n, _i, ob, _m = scene.ray_cast(dg, origin, direction, distance=distance - travelled)
        if not hit:
            return None, distance
        step = (loc - origin).length
        travelled += step
        if ignore_root is None or _top(ob.original if hasattr(ob, "original") else ob) != ignore_root:
            return (ob.original if hasattr(ob, "original") else ob), travelled
        origin = loc + direction * 1e-4
        travelled += 1e-4
    return None, distance


def world_axis(ob, axis: str) -> Vector:
    """``ob``'s local axis in world space (unit length)."""
    return (ob.matrix_world.to_3x3() @ Vector(AXIS_VECTORS[axis])).normalized()


def property_probe(owner, path: str) -> Callable[[], Any]:
    """A fast getter for a custom property (``["score"]``) or any RNA path on ``owner``."""
    if path.startswith('["') and path.endswith('"]') and path.count('"') == 2:
        key = path[2:-2]
        return lambda: owner[key]
    return lambda: owner.path_resolve(path)


def location_probe(ob) -> Callable[[], Vector]:
    return lambda: ob.matrix_world.translation


def distance_probe(a, b) -> Callable[[], float]:
    return lambda: (a.matrix_world.translation - b.matrix_world.translation).length


def xy_extent(ob) -> tuple[float, float, float, float]:
    """World-space X/Y extent of an object's bounding box: (xmin, xmax, ymin, ymax)."""
    mw = ob.matrix_world
    pts = [mw @ Vector(c) for c in ob.bound_box]
    xs, ys = [p.x for p in pts], [p.y for p in pts]
    return min(xs), max(xs), min(ys), max(ys)


def as_floats(value) -> list[float]:
    if hasattr(value, "__len__") and not isinstance(value, str):
        return [float(v) for v in value]
    return [float(value)]


# --------------------------------------------------------------------------- sensor readers
# Each reader: ``size`` and ``read(out)`` writing ``size`` float32 values into ``out``.


class TransformReader:
    def __init__(self, spec, scene):
        self.ob = scene.objects[spec.obj]
        self.ref = scene.objects[spec.other] if spec.other else None
        self.loc = spec.options["location"]
        self.rot = spec.options["rotation"]
        self.quat = spec.options["rotation_format"] == 'QUATERNION'
        self.size = spec.size

    def read(self, out):
        mw = self.ob.matrix_world
        if self.ref is not None:
            mw = self.ref.matrix_world.inverted_safe() @ mw
        i = 0
        if self.loc:
            out[0:3] = mw.translation
            i = 3
        if self.rot:
            if self.quat:
                out[i:i + 4] = mw.to_quaternion()
            else:
                out[i:i + 3] = mw.to_euler()


class BonesReader:
    def __init__(self, spec, scene):
        arm = scene.objects[spec.obj]
        self.bones = [arm.pose.bones[name] for name in spec.bones]
        self.size = spec.size

    def read(self, out):
        for i, pb in enumerate(self.bones):
            out[4 * i:4 * i + 4] = (pb.rotation_quaternion if pb.rotation_mode == 'QUATERNION'
                                    else pb.matrix_basis.to_quaternion())


class PropertyReader:
    def __init__(self, spec, scene):
        owner = scene if spec.options.get("source") == 'SCENE' else scene.objects[spec.obj]
        self.get = property_probe(owner, spec.path)
        self.size = spec.size

    def read(self, out):
        out[0] = float(self.get())


class DistanceReader:
    def __init__(self, spec, scene):
        self.get = distance_probe(scene.objects[spec.obj], scene.objects[spec.other])
        self.size = 1

    def read(self, out):
        out[0] = self.get()


class RayReader:
    def __init__(self, spec, scene):
        self.scene, self.ob = scene, scene.objects[spec.obj]
        o = spec.options
        self.max = float(o["max_distance"])
        axis = Vector(AXIS_VECTORS[o["axis"]])
        perp = Vector((0, 1, 0)) if abs(axis.x) > 0.5 else Vector((1, 0, 0))
        n = int(o["rays"])
        angles = [0.0] if n == 1 else np.linspace(-o["spread"] / 2, o["spread"] / 2, n)
        self.dirs = [axis * math.cos(a) + perp * math.sin(a) for a in angles]
        self.size = n
        self.root = _top(self.ob)

    def read(self, out):
        m3 = self.ob.matrix_world.to_3x3()
        origin = self.ob.matrix_world.translation
        for i, d in enumerate(self.dirs):
            _ob, dist = cast_ray(self.scene, origin, m3 @ d, self.max, self.root)
            out[i] = dist / self.max


class CameraReader:
    def __init__(self, spec, scene):
        from .camera import CameraRenderer

        o = spec.options
        self.depth = o["mode"] == 'DEPTH'
        self.max_depth = float(o["max_depth"])
        self.renderer = CameraRenderer(scene, scene.objects[spec.obj], o["width"], o["height"], o["mode"],
                                       method=o["method"], threshold=o["threshold"], normalize_depth=False)
        self.size = spec.size

    def read(self, out):
        img = self.renderer.read()
        if self.depth:
            img = np.minimum(img / self.max_depth, 1.0)
        out[:] = img.reshape(-1)

    def close(self):
        self.renderer.close()


READERS: dict[str, type] = {"transform": TransformReader, "bones": BonesReader, "property": PropertyReader,
                            "distance": DistanceReader, "ray": RayReader, "camera": CameraReader}


class NonFiniteError(ValueError):
    """A sensor or reward produced NaN or infinity; the message names the node."""


class StateReader:
    """Reads a compiled ``StateSpec`` into one float32 vector (object lookups cached here)."""

    def __init__(self, state_spec, scene):
        self.readers, self.slices, self.scales = [], [], []
        offset = 0
        for spec in state_spec.sensors:
            self.readers.append(READERS[spec.kind](spec, scene))
            self.slices.append(slice(offset, offset + spec.size))
            self.scales.append(float(spec.scale))
            offset += spec.size
        self.size = offset
        self.clip = float(state_spec.clip)
        self._pairs = list(zip(self.readers, self.slices, self.scales))
        self._nodes = [spec.node for spec in state_spec.sensors]

    def read(self) -> np.ndarray:
        obs = np.empty(self.size, np.float32)
        for reader, sl, scale in self._pairs:
            view = obs[sl]
            reader.read(view)
            if scale != 1.0:
                view *= scale
        if self.clip > 0:
            np.clip(obs, -self.clip, self.clip, out=obs)
        if not np.isfinite(obs).all():  # NaN from a property or a degenerate transform poisons training
            self._raise_non_finite(obs)
        return obs

    def _raise_non_finite(self, obs: np.ndarray) -> None:
        for node, sl in zip(self._nodes, self.slices):
            bad = obs[sl][~np.isfinite(obs[sl])]
            if bad.size:
                raise NonFiniteError(f"Sensor '{node}' read {bad[0]} (not a finite number): "
                                     "check the property or object it reads")

    def close(self):
        for reader in self.readers:
            if hasattr(reader, "close"):
                reader.close()
