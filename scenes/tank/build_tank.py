"""Build the tank game example scene, ``scenes/tank/tank.blend``, reproducibly.

Run from the repository root::

    make setup-bpy45 && .venv-bpy45/bin/python scenes/tank/build_tank.py --out scenes/tank/tank.blend

(saved by the oldest Blender the manifest admits, 4.5: newer ones open its files, not the reverse)

Layout (Blender units, Z up, +Y is "front"):

- ``Ground``: a 10 x 10 plane centred on the origin (the arena, x and y in [-5, 5]).
- ``TankA`` (the agent): a hull box at (-2.5, -2.5), facing +Y, with ``TankA["score"] = 0``.
  Children: ``Turret`` (box on the hull) -> ``Cannon`` (its origin is the pivot at the turret's
  front; it pitches about its local X axis and its local +Y is the barrel) -> ``Muzzle``
  (an empty at the barrel tip, local (0, 1, 0) of the cannon).
- ``TankB`` (the target): one mesh (hull + turret + barrel) at (2.5, 2.5), facing -Y. Its hull
  is ``TARGET_WIDTH`` (1.3) wide, a bit more than TankA's 0.5 moves: with the cannon level, a
  shot hits from TankB's column and the two beside it (|dx| <= 0.5).
- ``Camera``: orthographic, straight down from z = 10, ``ortho_scale`` 10, so a square image
  sees the whole arena; image row 0 is the +Y edge. For people (F12).
- ``TankCamera``: the agent's eyes, a child of ``TankA``: orthographic, straight down, one unit
  per pixel at 19 x 11 (``ortho_scale`` 19): TankA's column in the middle, from 1.5 behind it to
  9.5 in front (image up is TankA's front). It moves with the tank, so TankB's blob lies in the
  middle column exactly when a level shot hits, wherever the tanks are.
- ``Sun``: a light, only for people who render the scene with EEVEE or Cycles.

Every object has a distinct object colour (``ob.color``) and a material with the same viewport
colour, so Workbench (and DRLA's camera sensor) shows the same picture with either colour
source. The scene renders with Workbench, FLAT light, object colours, no anti-aliasing, view
transform Standard, at 64 x 64: pressing F12 shows the arena from above (the agent sees the same
colours through ``TankCamera``). In that picture's gray
levels the ground is dark (about 0.2) and every tank part is bright (above 0.6), so a ``'BW'``
camera at threshold 0.5 sees both tanks.

The RL node tree "Tank" comes from ``drla_ext.addon.examples.build_tank_tree(scene)``.

``dump(scene)`` returns a canonical, JSON-friendly description of the scene (objects, meshes,
camera, settings, node trees); the tests compare the dump of a fresh build with the committed
file's, since the .blend bytes themselves are not reproducible.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bpy  # noqa: E402

TREE_NAME = "Tank"
ARENA = 10.0
FRAME_START, FRAME_END = 1, 1000

#: TankB's hull width: wider than one 0.5 move, so the shot hits from 3 columns (|dx| <= 0.5)
#: and, seen at one pixel per unit, the blob covers TankA's own column exactly when it does.
TARGET_WIDTH = 1.3
#: TankCamera's picture (the agent's eyes): columns x rows, one unit per pixel, centred on
#: TankA's column; rows run from 1.5 behind TankA to 9.5 in front (centre 4.0 in front).
TANK_CAMERA_COLUMNS, TANK_CAMERA_ROWS = 19, 11
TANK_CAMERA_CENTER_Y = 4.0

COLORS = {  # scene-linear RGBA
    "Ground": (0.045, 0.05, 0.045, 1.0),
    "TankA": (0.2, 0.8, 0.2, 1.0),
    "Turret": (0.1, 0.5, 0.1, 1.0),
    "Cannon": (0.7, 0.7, 0.2, 1.0),
    "TankB": (1.0, 0.35, 0.2, 1.0),
}


def _box(cx: float, cy: float, cz: float, sx: float, sy: float, sz: float, base: int = 0):
    """Vertices and quads of an axis-aligned box centred at (cx, cy, cz) with size (sx, sy, sz)."""
    hx, hy, hz = sx / 2, sy / 2, sz / 2
    verts = [
        (cx + x * hx, cy + y * hy, cz + z * hz)
        for z in (-1, 1)
        for y in (-1, 1)
        for x in (-1, 1)
    ]
    faces = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    return verts, [tuple(base + i for i in f) for f in faces]


def _mesh_object(scene: Any, name: str, parts: list[tuple[float, ...]]) -> Any:
    verts: list[tuple[float, float, float]] = []
    faces: list[tuple[int, ...]] = []
    for part in parts:
        v, f = _box(*part, base=len(verts))
        verts += v
        faces += f
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    mesh.validate()
    mesh.update()
    ob = bpy.data.objects.new(name, mesh)
    scene.collection.objects.link(ob)
    _colour(ob, COLORS[name])
    return ob


def _plane(scene: Any, name: str, size: float) -> Any:
    h = size / 2
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([(-h, -h, 0.0), (h, -h, 0.0), (h, h, 0.0), (-h, h, 0.0)], [], [(0, 1, 2, 3)])
    mesh.update()
    ob = bpy.data.objects.new(name, mesh)
    scene.collection.objects.link(ob)
    _colour(ob, COLORS[name])
    return ob


def _colour(ob: Any, rgba: tuple[float, float, float, float]) -> None:
    ob.color = rgba
    mat = bpy.data.materials.new(ob.name)
    mat.diffuse_color = rgba
    ob.data.materials.append(mat)


def build_scene() -> Any:
    """Reset to an empty factory file and build the tank arena; returns the scene."""
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    scene.name = "Tank"

    _plane(scene, "Ground", ARENA)

    tank_a = _mesh_object(scene, "TankA", [(0.0, 0.0, 0.25, 1.0, 1.4, 0.5)])
    tank_a.location = (-2.5, -2.5, 0.0)
    tank_a["score"] = 0

    turret = _mesh_object(scene, "Turret", [(0.0, 0.0, 0.15, 0.7, 0.7, 0.3)])
    turret.parent = tank_a
    turret.location = (0.0, 0.0, 0.5)

    cannon = _mesh_object(scene, "Cannon", [(0.0, 0.5, 0.0, 0.3, 1.0, 0.2)])  # barrel along local +Y
    cannon.parent = turret
    cannon.location = (0.0, 0.3, 0.15)  # pivot at the turret's front face
    cannon.rotation_mode = 'XYZ'
    cannon.rotation_euler = (0.0, 0.0, 0.0)  # pitch = rotation_euler.x

    muzzle = bpy.data.objects.new("Muzzle", None)
    scene.collection.objects.link(muzzle)
    muzzle.empty_display_type = 'SPHERE'
    muzzle.empty_display_size = 0.1
    muzzle.parent = cannon
    muzzle.location = (0.0, 1.0, 0.0)

    tank_b = _mesh_object(
        scene,
        "TankB",
        [
            (0.0, 0.0, 0.25, TARGET_WIDTH, 1.4, 0.5),  # hull
            (0.0, 0.0, 0.65, TARGET_WIDTH - 0.2, 0.8, 0.3),  # turret
            (0.0, 0.8, 0.65, 0.3, 1.0, 0.2),  # barrel
        ],
    )
    tank_b.location = (2.5, 2.5, 0.0)
    tank_b.rotation_euler = (0.0, 0.0, 3.141592653589793)  # faces -Y, towards TankA's side

    cam_data = bpy.data.cameras.new("Camera")
    cam_data.type = 'ORTHO'
    cam_data.ortho_scale = ARENA
    cam_data.clip_start = 0.1
    cam_data.clip_end = 20.0
    cam = bpy.data.objects.new("Camera", cam_data)
    scene.collection.objects.link(cam)
    cam.location = (0.0, 0.0, 10.0)
    cam.rotation_euler = (0.0, 0.0, 0.0)  # looks down -Z; image up is +Y
    scene.camera = cam

    # The agent's own camera rides on TankA: straight down, one pixel per unit, the tank's
    # column in the middle; what it sees only depends on where TankB is relative to TankA.
    tcam_data = bpy.data.cameras.new("TankCamera")
    tcam_data.type = 'ORTHO'
    tcam_data.ortho_scale = float(TANK_CAMERA_COLUMNS)  # the wider side: one unit per column
    tcam_data.clip_start = 0.1
    tcam_data.clip_end = 20.0
    tcam = bpy.data.objects.new("TankCamera", tcam_data)
    scene.collection.objects.link(tcam)
    tcam.parent = tank_a
    tcam.location = (0.0, TANK_CAMERA_CENTER_Y, 10.0)
    tcam.rotation_euler = (0.0, 0.0, 0.0)  # looks down -Z; image up is TankA's front (+Y)

    sun_data = bpy.data.lights.new("Sun", 'SUN')
    sun_data.energy = 3.0
    sun = bpy.data.objects.new("Sun", sun_data)
    scene.collection.objects.link(sun)
    sun.location = (0.0, 0.0, 8.0)
    sun.rotation_euler = (0.5, 0.2, 0.0)

    world = bpy.data.worlds.new("World")
    world.color = (0.0, 0.0, 0.0)
    scene.world = world

    scene.frame_start, scene.frame_end, scene.frame_current = FRAME_START, FRAME_END, FRAME_START
    scene.render.fps = 24
    scene.render.engine = 'BLENDER_WORKBENCH'
    scene.render.resolution_x = scene.render.resolution_y = 64
    scene.render.resolution_percentage = 100
    scene.render.dither_intensity = 0.0
    scene.display.render_aa = 'OFF'
    scene.display.shading.light = 'FLAT'
    scene.display.shading.color_type = 'OBJECT'
    scene.view_settings.view_transform = 'Standard'

    bpy.context.view_layer.update()
    return scene


def add_node_tree(scene: Any) -> bool:
    """Add the RL node tree via the add-on's example builder; False if it is not available yet."""
    from drla.extension import register_extension

    register_extension()
    try:
        from drla_ext.addon.ui.examples import build_tank_tree
    except ImportError as exc:
        print(f"build_tank: no node tree added ({exc}); the scene is built without it", file=sys.stderr)
        return False
    tree = build_tank_tree(scene)
    if tree is not None and tree.name != TREE_NAME:
        tree.name = TREE_NAME
    if tree is not None:
        scene.drla.tree = tree  # the file opens with its tree chosen in the DRLA sidebar
    return True


def build(out: str | Path) -> Path:
    """Build the scene (with its node tree when available) and save it uncompressed to ``out``."""
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    scene = build_scene()
    add_node_tree(scene)
    bpy.ops.wm.save_as_mainfile(filepath=str(out), compress=False, relative_remap=False, check_existing=False)
    return out


# -- canonical dump ----------------------------------------------------------------------------
_SKIP_PROPS = {"rna_type", "name_full", "session_uid", "is_evaluated", "original", "users", "tag", "is_runtime_data",
               "dimensions", "select", "is_active_output", "internal_links", "width_hidden", "location_absolute"}


def _value(v: Any) -> Any:
    if isinstance(v, float):
        return round(v, 5) + 0.0  # + 0.0 turns -0.0 into 0.0
    if isinstance(v, bpy.types.ID):
        return f"<{type(v).__name__} {v.name}>"
    if isinstance(v, str | int | bool) or v is None:
        return v
    if hasattr(v, "to_list"):  # IDPropertyArray / IDPropertyGroup
        return _value(v.to_list())
    if hasattr(v, "to_dict"):
        return {k: _value(x) for k, x in sorted(v.to_dict().items())}
    if isinstance(v, set | frozenset):
        return sorted(v)
    try:
        return [_value(x) for x in v]
    except TypeError:
        return repr(v)


def _rna_props(struct: Any) -> dict[str, Any]:
    """Plain (non-collection, non-struct) RNA properties, and ID pointers by name."""
    out: dict[str, Any] = {}
    for prop in struct.bl_rna.properties:
        key = prop.identifier
        if key in _SKIP_PROPS or key.startswith("bl_") or prop.type == 'COLLECTION':  # bl_*: class data
            continue
        if prop.type == 'POINTER':
            target = getattr(struct, key, None)
            if isinstance(target, bpy.types.ID) or target is None:
                out[key] = _value(target)
            continue
        try:
            out[key] = _value(getattr(struct, key))
        except (AttributeError, RuntimeError, ValueError):
            continue
    return out


def _custom_props(idblock: Any) -> dict[str, Any]:
    return {k: _value(idblock[k]) for k in sorted(idblock.keys())}


def _dump_node_tree(tree: Any) -> dict[str, Any]:
    nodes = {}
    for node in sorted(tree.nodes, key=lambda n: n.name):
        nodes[node.name] = {
            "bl_idname": node.bl_idname,
            "props": _rna_props(node),
            "inputs": [(s.identifier, s.bl_idname, _value(getattr(s, "default_value", None))) for s in node.inputs],
            "outputs": [(s.identifier, s.bl_idname) for s in node.outputs],
        }
    links = sorted(
        (lk.from_node.name, lk.from_socket.identifier, lk.to_node.name, lk.to_socket.identifier) for lk in tree.links
    )
    return {"bl_idname": tree.bl_idname, "fake_user": tree.use_fake_user, "nodes": nodes, "links": links}


def dump(scene: Any = None) -> dict[str, Any]:
    """A canonical description of ``scene`` (default: the current one) and the file's node trees."""
    scene = scene or bpy.context.scene
    objects = {}
    for ob in sorted(scene.objects, key=lambda o: o.name):
        d: dict[str, Any] = {
            "type": ob.type,
            "parent": ob.parent.name if ob.parent else None,
            "parent_type": ob.parent_type,
            "matrix_parent_inverse": _value([list(r) for r in ob.matrix_parent_inverse]),
            "location": _value(ob.location),
            "rotation_mode": ob.rotation_mode,
            "rotation_euler": _value(ob.rotation_euler),
            "scale": _value(ob.scale),
            "matrix_world": _value([list(r) for r in ob.matrix_world]),
            "color": _value(ob.color),
            "hide_render": ob.hide_render,
            "collections": sorted(c.name for c in ob.users_collection),
            "custom": _custom_props(ob),
            "materials": [s.material.name if s.material else None for s in ob.material_slots],
        }
        data = ob.data
        if ob.type == 'MESH':
            d["mesh"] = {
                "vertices": [_value(v.co) for v in data.vertices],
                "polygons": [list(p.vertices) for p in data.polygons],
                "materials": [(m.name, _value(m.diffuse_color)) if m else None for m in data.materials],
            }
        elif ob.type == 'CAMERA':
            d["camera"] = {k: _value(getattr(data, k)) for k in (
                "type", "lens", "ortho_scale", "clip_start", "clip_end", "sensor_fit", "sensor_width",
                "shift_x", "shift_y")}
        elif ob.type == 'LIGHT':
            d["light"] = {"type": data.type, "energy": _value(data.energy), "color": _value(data.color)}
        elif ob.type == 'EMPTY':
            d["empty"] = {"display_type": ob.empty_display_type, "size": _value(ob.empty_display_size)}
        objects[ob.name] = d
    r = scene.render
    settings = {
        "frame_range": (scene.frame_start, scene.frame_end, scene.frame_current),
        "fps": r.fps,
        "engine": r.engine,
        "resolution": (r.resolution_x, r.resolution_y, r.resolution_percentage),
        "camera": scene.camera.name if scene.camera else None,
        "world_color": _value(scene.world.color) if scene.world else None,
        "render_aa": scene.display.render_aa,
        "shading": (scene.display.shading.light, scene.display.shading.color_type),
        "view_transform": scene.view_settings.view_transform,
        "custom": _custom_props(scene),
        "drla_tree": scene.drla.tree.name if getattr(scene, "drla", None) and scene.drla.tree else None,
    }
    trees = {t.name: _dump_node_tree(t) for t in sorted(bpy.data.node_groups, key=lambda t: t.name)}
    return {"scene": scene.name, "objects": objects, "settings": settings, "node_trees": trees}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).with_name("tank.blend")), help="where to save the .blend")
    parser.add_argument("--dump", action="store_true", help="print the canonical dump of the built scene as JSON")
    args = parser.parse_args(argv)
    out = build(args.out)
    print(f"build_tank: saved {out}")
    if args.dump:
        print(json.dumps(dump(), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
