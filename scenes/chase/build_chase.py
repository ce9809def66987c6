"""Build the chase example scene, ``scenes/chase/chase.blend``, reproducibly (godot-ai's case).

Run from the repository root::

    make setup-bpy45 && .venv-bpy45/bin/python scenes/chase/build_chase.py

A 12 x 12 ground, the blue cube ``Hero`` and the orange cube ``Target``, a top-down camera, and the RL
node tree "Chase" (``addon.ui.examples.build_chase_tree``): the hero learns to catch the target, which
moves away, frozen (its own fixed network) or learning too.
"""

from __future__ import annotations

import argparse
import importlib.util
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

TREE_NAME = "Chase"
dump = tank.dump


def build_scene() -> Any:
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    scene.name = "Chase"
    tank._plane(scene, "Ground", 12.0)
    cam_data = bpy.data.cameras.new("Camera")
    cam_data.type = 'ORTHO'
    cam_data.ortho_scale = 12.0
    cam = bpy.data.objects.new("Camera", cam_data)
    scene.collection.objects.link(cam)
    cam.location = (0.0, 0.0, 10.0)
    scene.camera = cam
    scene.render.engine = 'BLENDER_WORKBENCH'
    scene.display.shading.light = 'FLAT'
    scene.display.shading.color_type = 'OBJECT'
    scene.frame_start, scene.frame_end, scene.frame_current = 1, 1000, 1
    return scene


def build(out: str | Path) -> Path:
    from drla.extension import register_extension

    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    scene = build_scene()
    register_extension()
    from drla_ext.addon.ui.examples import build_chase_tree

    tree = build_chase_tree(scene)
    tree.name = TREE_NAME
    scene.drla.tree = tree
    bpy.ops.wm.save_as_mainfile(filepath=str(out), compress=False, relative_remap=False, check_existing=False)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).with_name("chase.blend")))
    args = parser.parse_args(argv)
    print(f"build_chase: saved {build(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
