"""Render ``docs/images/robot_arm.png``: Arm6 posed by the learned IK for three targets (Workbench).

    .venv/bin/python scenes/robot_arm/render_picture.py [--out PATH] [--model scenes/robot_arm/arm6_ik.json]

Each panel: the arm's bones as cylinders (armatures do not render), the target as a red sphere,
the tip error in the caption. The scene file is only read.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils import Matrix, Vector  # noqa: E402

from drla.extension import register_extension  # noqa: E402
from drla_core.io import plot, png  # noqa: E402
from drla_core.io.model_io import load_model  # noqa: E402

#: Joint poses (degrees) whose tips place the three targets (reachable by construction).
TARGET_POSES = ((30, 40, 60, 0, 30, 0), (-50, 10, 110, 0, 40, 0), (100, -20, 45, 0, -20, 0))


def _mesh_object(name: str, kind: str, color) -> bpy.types.Object:
    if kind == "cyl":
        bpy.ops.mesh.primitive_cylinder_add(vertices=24, radius=1.0, depth=1.0, location=(0, 0, 0.5))
        ob = bpy.context.active_object
        ob.data.transform(Matrix.Translation((0, 0, 0.5)))  # base at the origin, along +Z
        ob.location = (0, 0, 0)
    elif kind == "sphere":
        bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0, segments=24, ring_count=12)
        ob = bpy.context.active_object
    else:
        bpy.ops.mesh.primitive_plane_add(size=1.0)
        ob = bpy.context.active_object
    ob.name = name
    ob.color = (*color, 1.0)
    for poly in ob.data.polygons:
        poly.use_smooth = kind != "plane"
    return ob


def _segment(ob: bpy.types.Object, a: np.ndarray, b: np.ndarray, radius: float) -> None:
    d = Vector((b - a).tolist())
    rot = Vector((0, 0, 1)).rotation_difference(d.normalized()).to_matrix().to_4x4()
    ob.matrix_world = Matrix.Translation(Vector(a.tolist())) @ rot @ Matrix.Diagonal((radius, radius, d.length, 1.0))


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "robot_arm.png")
    parser.add_argument("--model", type=Path, default=HERE / "arm6_ik.json")
    parser.add_argument("--width", type=int, default=320)
    parser.add_argument("--height", type=int, default=400)
    args = parser.parse_args(argv)

    register_extension()
    from drla_ext.addon.runs import ik as ik_runs
    from drla_ext.addon.scene import armature

    bpy.ops.wm.open_mainfile(filepath=str(HERE / "robot_arm.blend"))
    scene = bpy.context.scene
    for name in ("Arm3", "Arm3Target"):
        scene.objects[name].hide_render = True
    ob, target = scene.objects["Arm6"], scene.objects["Arm6Target"]
    solver = ik_runs.solver_for(ob, load_model(args.model))
    arm = solver.arm

    floor = _mesh_object("Floor", "plane", (0.93, 0.94, 0.95))
    floor.scale = (4, 4, 1)
    pedestal = _mesh_object("Pedestal", "cyl", (0.25, 0.27, 0.3))
    _segment(pedestal, np.array([0, 0, 0.0]), np.array([0, 0, 0.02]), 0.12)
    links = [_mesh_object(f"Link{i}", "cyl", (1.0, 0.55, 0.1) if i % 2 == 0 else (0.2, 0.45, 0.85))
             for i in range(arm.n_bones)]
    joints = [_mesh_object(f"Joint{i}", "sphere", (0.15, 0.15, 0.17)) for i in range(arm.n_bones)]
    ball = _mesh_object("TargetBall", "sphere", (0.9, 0.1, 0.1))
    ball.scale = (0.035,) * 3

    cam_data = bpy.data.cameras.new("PicCam")
    cam_data.lens = 40
    cam = bpy.data.objects.new("PicCam", cam_data)
    scene.collection.objects.link(cam)
    cam.location = (1.75, -1.55, 1.1)
    direction = Vector((0.0, 0.0, 0.33)) - cam.location
    cam.rotation_euler = direction.to_track_quat('-Z', 'Y').to_euler()
    scene.camera = cam

    scene.render.engine = 'BLENDER_WORKBENCH'
    shading = scene.display.shading
    shading.light = 'STUDIO'
    shading.color_type = 'OBJECT'
    shading.show_shadows = True
    shading.show_cavity = True
    scene.display.shadow_focus = 0.8
    scene.render.resolution_x, scene.render.resolution_y = args.width, args.height
    scene.render.resolution_percentage = 100
    scene.render.film_transparent = False
    scene.render.image_settings.file_format = 'PNG'
    world = scene.world or bpy.data.worlds.new("World")
    scene.world = world
    world.color = (0.95, 0.96, 0.97)

    panels = []
    view_layer = bpy.context.view_layer
    with tempfile.TemporaryDirectory() as tmp:
        from drla_core import kinematics as kin

        for i, pose in enumerate(TARGET_POSES):
            local = kin.forward_kinematics(arm, arm.clip(np.radians(np.array(pose, float)))[None])[0]
            where = arm.local_to_world(local)
            armature.move_target(target, where)
            ball.location = where.tolist()
            armature.apply_angles(ob, arm, armature.solve_for_target(ob, solver, where, 3))
            view_layer.update()
            for k, name in enumerate(arm.bones):
                pb = ob.pose.bones[name]
                head = np.array(ob.matrix_world @ pb.head)
                tail = np.array(ob.matrix_world @ pb.tail)
                if np.linalg.norm(tail - head) > 1e-6:
                    _segment(links[k], head, tail, 0.045 - 0.004 * k)
                    links[k].hide_render = False
                else:
                    links[k].hide_render = True
                joints[k].location = head.tolist()
                joints[k].scale = (0.055 - 0.004 * k,) * 3
            err_mm = 1000 * np.linalg.norm(armature.tip_world(ob, arm) - where)
            path = Path(tmp) / f"p{i}.png"
            scene.render.filepath = str(path)
            bpy.ops.render.render(write_still=True)
            img = png.read_png(path)[..., :3].copy()
            plot.draw_text(img, 8, 8, f"target {i + 1}: tip error {err_mm:.3f} mm", (40, 40, 40), 1)
            panels.append(img)
    gap = np.full((args.height, 4, 3), 255, np.uint8)
    strip = np.concatenate([panels[0], gap, panels[1], gap, panels[2]], axis=1)
    head = np.full((26, strip.shape[1], 3), 255, np.uint8)
    plot.draw_text(head, 8, 6, "DRLA learned IK: Arm6 (6 joints) reaching for the red target, "
                   "network + 3 refinement steps", (30, 30, 30), 1)
    out = np.concatenate([head, strip], axis=0)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    png.write_png(args.out, out)
    print(f"render_picture: wrote {args.out} ({out.shape[1]}x{out.shape[0]})")
    return args.out


if __name__ == "__main__":
    main()
