"""Build the tank duel example scene, ``scenes/tank_duel/tank_duel.blend``, reproducibly.

Run from the repository root::

    make setup-bpy45 && .venv-bpy45/bin/python scenes/tank_duel/build_tank_duel.py

(saved by the oldest Blender the manifest admits, 4.5: newer ones open its files, not the reverse)

The tank game's arena (``scenes/tank/build_tank.py``) where TankB fights back. TankA takes TankB's hull
and turret widths (each tank is the other's target: both hit from three columns). TankB gets what TankA
has, as children in its own frame (it faces -Y): ``CannonB`` (an empty at its barrel's pivot, local
+Y is the barrel, pitched about local X), ``MuzzleB`` (the barrel tip) and ``TankBCamera`` (straight
down, one unit per pixel, 19 x 11, its own column in the middle, image up is TankB's front), and a
``score`` of its own. The RL node tree "Duel" (``addon.ui.examples.build_tank_duel_tree``) trains
both tanks at once, each a Named Agent with its own environment, camera and network.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bpy  # noqa: E402

_spec = importlib.util.spec_from_file_location("build_tank", ROOT / "scenes" / "tank" / "build_tank.py")
tank = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tank)  # type: ignore[union-attr]

TREE_NAME = "Duel"


def _reshape(ob: Any, parts: list[tuple[float, ...]]) -> None:
    """Replace ``ob``'s mesh geometry with the boxes ``parts`` (as ``build_tank._mesh_object`` makes them)."""
    verts: list[tuple[float, float, float]] = []
    faces: list[tuple[int, ...]] = []
    for part in parts:
        v, f = tank._box(*part, base=len(verts))
        verts += v
        faces += f
    ob.data.clear_geometry()
    ob.data.from_pydata(verts, [], faces)
    ob.data.validate()
    ob.data.update()


def build_scene() -> Any:
    """The tank arena with TankB armed and given eyes; returns the scene."""
    scene = tank.build_scene()
    scene.name = "Tank Duel"
    # Each tank is the other's target: TankA gets TankB's hull and turret widths, so both shots (at the
    # turrets' height) hit from three columns and each camera sees the other as the same blob. (With the
    # tank game's narrower TankA, TankB could hit only from one column and never learnt to.)
    _reshape(scene.objects["TankA"], [(0.0, 0.0, 0.25, tank.TARGET_WIDTH, 1.4, 0.5)])
    _reshape(scene.objects["Turret"], [(0.0, 0.0, 0.15, tank.TARGET_WIDTH - 0.2, 0.8, 0.3)])
    tank_b = scene.objects["TankB"]
    tank_b["score"] = 0
    cannon = bpy.data.objects.new("CannonB", None)
    scene.collection.objects.link(cannon)
    cannon.empty_display_type = 'SINGLE_ARROW'
    cannon.empty_display_size = 0.3
    cannon.parent = tank_b
    cannon.location = (0.0, 0.3, 0.65)  # the barrel's root on TankB's turret (TankB's frame: +Y is its front)
    cannon.rotation_mode = 'XYZ'
    cannon.rotation_euler = (0.0, 0.0, 0.0)  # pitch = rotation_euler.x, 0 = level
    muzzle = bpy.data.objects.new("MuzzleB", None)
    scene.collection.objects.link(muzzle)
    muzzle.empty_display_type = 'SPHERE'
    muzzle.empty_display_size = 0.1
    muzzle.parent = cannon
    muzzle.location = (0.0, 1.0, 0.0)
    cam_data = bpy.data.cameras.new("TankBCamera")
    cam_data.type = 'ORTHO'
    cam_data.ortho_scale = float(tank.TANK_CAMERA_COLUMNS)
    cam_data.clip_start = 0.1
    cam_data.clip_end = 20.0
    cam = bpy.data.objects.new("TankBCamera", cam_data)
    scene.collection.objects.link(cam)
    cam.parent = tank_b
    cam.location = (0.0, tank.TANK_CAMERA_CENTER_Y, 10.0)  # like TankCamera on TankA, in TankB's frame
    bpy.context.view_layer.update()
    return scene


def add_node_tree(scene: Any) -> bool:
    from drla.extension import register_extension

    register_extension()
    from drla_ext.addon.ui.examples import build_tank_duel_tree

    tree = build_tank_duel_tree(scene)
    tree.name = TREE_NAME
    scene.drla.tree = tree
    return True


def build(out: str | Path) -> Path:
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    scene = build_scene()
    add_node_tree(scene)
    bpy.ops.wm.save_as_mainfile(filepath=str(out), compress=False, relative_remap=False, check_existing=False)
    return out


dump = tank.dump  # the same canonical description: objects, meshes, cameras, settings, node trees


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).with_name("tank_duel.blend")))
    parser.add_argument("--dump", action="store_true", help="print the canonical dump of the built scene as JSON")
    args = parser.parse_args(argv)
    out = build(args.out)
    print(f"build_tank_duel: saved {out}")
    if args.dump:
        print(json.dumps(dump(), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
