"""Build the pac-man example scene, ``scenes/pacman/pacman.blend``, reproducibly (issue 12's co-evolution).

Run from the repository root::

    make setup-bpy45 && .venv-bpy45/bin/python scenes/pacman/build_pacman.py

The maze of ``drla_core.envs.pacman.MAZE`` as objects (a cube per wall in collection "Walls", a small cube
per pellet in "Pellets", the yellow ``PacMan`` and the red ``Ghost`` in opposite corners, a floor), a
top-down camera, and the RL node tree "PacMan" (``addon.ui.examples_evolution.build_pacman_tree``): two Named Agents
whose Evolution Agents co-evolve, each side scored against the other's current champion. Transform-only:
no physics.
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

TREE_NAME = "PacMan"
dump = tank.dump


def build_scene() -> Any:
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    scene.name = "PacMan"
    cam_data = bpy.data.cameras.new("Camera")
    cam_data.type = 'ORTHO'
    cam_data.ortho_scale = 12.0
    cam = bpy.data.objects.new("Camera", cam_data)
    scene.collection.objects.link(cam)
    cam.location = (0.0, 0.0, 12.0)
    scene.camera = cam
    scene.render.engine = 'BLENDER_WORKBENCH'
    scene.render.resolution_x, scene.render.resolution_y = 660, 420
    scene.display.shading.light = 'FLAT'
    scene.display.shading.color_type = 'OBJECT'
    scene.frame_start, scene.frame_end, scene.frame_current = 1, 250, 1
    for screen in bpy.data.screens:  # the viewport shows the objects' colours, from the camera above the maze
        for area in screen.areas:
            if area.type == 'VIEW_3D':
                space = area.spaces.active
                space.shading.color_type = 'OBJECT'
                space.region_3d.view_perspective = 'CAMERA'
    return scene


def build(out: str | Path) -> Path:
    from drla.extension import register_extension

    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    scene = build_scene()
    register_extension()
    from drla_ext.addon.ui.examples_evolution import build_pacman_tree

    tree = build_pacman_tree(scene)
    tree.name = TREE_NAME
    scene.drla.tree = tree
    bpy.ops.wm.save_as_mainfile(filepath=str(out), compress=False, relative_remap=False, check_existing=False)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).with_name("pacman.blend")))
    parser.add_argument("--dump", action="store_true", help="print the canonical dump of the built scene as JSON")
    args = parser.parse_args(argv)
    print(f"build_pacman: saved {build(args.out)}")
    if args.dump:
        print(json.dumps(dump(), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
