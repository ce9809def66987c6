"""Scalar reads of the live scene: probes, ray casts, axes (what sensors, rewards, endings and
actions share). ``cast_ray`` is the one ray query (the Ray sensor and the Fire action).
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

import bpy
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


#: The custom property that marks a scene copy's holder empty (``scene.copies``): a copy's objects
#: hang under it, but it is not part of any body, so a top parent is found below it.
COPY_HOLDER = "drla_copy_holder"


def top_parent(ob):
    """The root of ``ob``'s hierarchy (a tank for its turret), stopping below a scene copy's holder."""
    while ob.parent is not None and COPY_HOLDER not in ob.parent:
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
        if ignore_root is None or top_parent(ob.original if hasattr(ob, "original") else ob) != ignore_root:
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
