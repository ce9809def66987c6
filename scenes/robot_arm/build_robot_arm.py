"""Build ``scenes/robot_arm/robot_arm.blend`` reproducibly (headless, with the ``bpy`` wheel).

    make setup-bpy45 && .venv-bpy45/bin/python scenes/robot_arm/build_robot_arm.py [--out PATH]

(saved by the oldest Blender the manifest admits, 4.5: newer ones open its files, not the reverse)

The scene holds two armatures made from the bone specs in ``drla_core.kinematics`` (so the
numpy description and the Blender rig cannot drift apart):

* ``Arm6``: a 6-joint industrial-style arm (base yaw, shoulder/elbow pitch, wrist
  roll/pitch, flange roll), 1.0 m from base to flange, at the origin;
* ``Arm3``: a simple 3-bone arm (yaw, pitch, pitch), 1.0 m long, at (2, 0, 0) turned 30°.

Each pose bone uses quaternion rotation; its degrees of freedom and limits are its IK
settings (``lock_ik_*`` on the other axes, ``use_ik_limit_*`` + ``ik_min_*``/``ik_max_*``),
which ``addon/scene/armature.py`` reads back into an ``ArmDescription``. Each arm has a target
empty (``Arm6Target``/``Arm3Target``) and a *muted* Blender IK constraint ``BlenderIK`` on its
last bone aimed at it (the baseline that ``bench/ik.py`` un-mutes). The RL node trees named
after the arms come from ``addon/examples.py`` (hook ``build_robot_arm_trees``) when present.

``canonical_dump()`` describes the scene as plain data; the test
``tests/blender/test_robot_arm.py`` rebuilds the file and compares dumps with the committed one.
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils import Matrix, Vector  # noqa: E402

from drla_core import kinematics as kin  # noqa: E402

OUT = HERE / "robot_arm.blend"
ARMS = {"Arm6": (kin.arm6_specs, kin.ARM6_BASE), "Arm3": (kin.arm3_specs, kin.ARM3_BASE)}
#: Initial target poses (joint angles, degrees) whose tips place the target empties.
TARGET_POSES = {"Arm6": (30, 40, 60, 0, 30, 0), "Arm3": (-20, 45, 70)}


def build_arm(name: str, specs: list[kin.BoneSpec], base: np.ndarray) -> bpy.types.Object:
    """Create the armature object ``name`` with one connected bone chain and IK settings."""
    scene = bpy.context.scene
    data = bpy.data.armatures.new(name)
    ob = bpy.data.objects.new(name, data)
    scene.collection.objects.link(ob)
    ob.matrix_world = Matrix(base.tolist())
    view_layer = bpy.context.view_layer
    view_layer.objects.active = ob
    ob.select_set(True)
    bpy.ops.object.mode_set(mode='EDIT')
    parent = None
    for spec in specs:
        eb = data.edit_bones.new(spec.name)
        eb.head = Vector(spec.head)
        eb.tail = Vector(spec.tail)
        eb.roll = spec.roll
        if parent is not None:
            eb.parent = parent
            eb.use_connect = (Vector(spec.head) - parent.tail).length < 1e-9
        parent = eb
    bpy.ops.object.mode_set(mode='OBJECT')
    ob.select_set(False)
    for spec in specs:
        pb = ob.pose.bones[spec.name]
        pb.rotation_mode = 'QUATERNION'
        free = {axis: (lo, hi) for axis, lo, hi in spec.dofs}
        for axis in kin.AXES:
            a = axis.lower()
            setattr(pb, f"lock_ik_{a}", axis not in free)
            if axis in free:
                lo, hi = free[axis]
                setattr(pb, f"use_ik_limit_{a}", True)
                setattr(pb, f"ik_min_{a}", lo)
                setattr(pb, f"ik_max_{a}", hi)
    return ob


def build_target(arm_ob: bpy.types.Object, arm: kin.ArmDescription, pose_deg: tuple[float, ...]) -> bpy.types.Object:
    scene = bpy.context.scene
    target = bpy.data.objects.new(f"{arm_ob.name}Target", None)
    target.empty_display_type = 'SPHERE'
    target.empty_display_size = 0.04
    scene.collection.objects.link(target)
    tip = kin.forward_kinematics(arm, np.radians(pose_deg))
    target.location = Vector(arm.local_to_world(tip).tolist())
    ik = arm_ob.pose.bones[arm.bones[-1]].constraints.new('IK')
    ik.name = "BlenderIK"
    ik.target = target
    ik.chain_count = arm.n_bones
    ik.use_tail = True
    ik.mute = True
    return target


def add_rl_node_trees(scene: bpy.types.Scene) -> bool:
    """Hook: ``addon.examples.build_robot_arm_trees(scene)`` adds the "Arm6"/"Arm3" RL node trees.

    Returns False (and says so) while that builder does not exist yet."""
    try:
        from drla.extension import register_extension

        ext = register_extension()
        examples = importlib.import_module(f"{ext.__name__}.addon.ui.examples")
        builder = examples.build_robot_arm_trees
    except (ImportError, AttributeError) as exc:
        print(f"build_robot_arm: RL node trees not added (addon.examples.build_robot_arm_trees unavailable: {exc})")
        return False
    trees = builder(scene)
    if trees:  # the file opens with the small arm's tree chosen in the DRLA sidebar (it trains in seconds)
        scene.drla.tree = next((t for t in trees if t.name == "Arm3"), trees[0])
    return True


def build_scene() -> bpy.types.Scene:
    """Build everything into a fresh empty file and return the scene."""
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    scene.name = "RobotArm"
    scene.unit_settings.system = 'METRIC'
    for name, (specs_fn, base) in ARMS.items():
        specs = specs_fn()
        arm = kin.ArmDescription.from_bone_specs(name, specs, base)
        ob = build_arm(name, specs, base)
        build_target(ob, arm, TARGET_POSES[name])
    bpy.context.view_layer.update()
    add_rl_node_trees(scene)
    return scene


def _r(values: Any, nd: int = 6) -> Any:
    return np.round(np.asarray(values, dtype=np.float64), nd).tolist()


def canonical_dump() -> dict[str, Any]:
    """The current file as plain, rounded data: objects, bones, IK settings, constraints, node trees."""
    out: dict[str, Any] = {"scenes": sorted(s.name for s in bpy.data.scenes), "objects": {}, "node_groups": {}}
    for ob in sorted(bpy.data.objects, key=lambda o: o.name):
        d: dict[str, Any] = {"type": ob.type, "parent": ob.parent.name if ob.parent else None,
                             "matrix_world": _r(ob.matrix_world)}
        if ob.type == 'EMPTY':
            d["empty"] = [ob.empty_display_type, round(ob.empty_display_size, 6)]
        if ob.type == 'ARMATURE':
            d["bones"] = [
                {"name": b.name, "parent": b.parent.name if b.parent else None, "connect": b.use_connect,
                 "head": _r(b.head_local), "tail": _r(b.tail_local), "matrix_local": _r(b.matrix_local)}
                for b in ob.data.bones
            ]
            d["pose"] = []
            for pb in ob.pose.bones:
                p: dict[str, Any] = {"name": pb.name, "rotation_mode": pb.rotation_mode}
                for a in "xyz":
                    p[a] = [getattr(pb, f"lock_ik_{a}"), getattr(pb, f"use_ik_limit_{a}"),
                            round(math.degrees(getattr(pb, f"ik_min_{a}")), 4),
                            round(math.degrees(getattr(pb, f"ik_max_{a}")), 4)]
                p["constraints"] = [
                    {"type": c.type, "name": c.name, "mute": c.mute, "target": c.target.name if c.target else None,
                     "chain_count": getattr(c, "chain_count", None), "use_tail": getattr(c, "use_tail", None)}
                    for c in pb.constraints
                ]
                d["pose"].append(p)
        out["objects"][ob.name] = d
    for tree in sorted(bpy.data.node_groups, key=lambda t: t.name):
        out["node_groups"][tree.name] = {"type": tree.bl_idname, "nodes": sorted(n.bl_idname for n in tree.nodes),
                                         "links": len(tree.links)}
    scene = bpy.context.scene
    out["drla_tree"] = scene.drla.tree.name if getattr(scene, "drla", None) and scene.drla.tree else None
    return out


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    build_scene()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(args.out.resolve()), compress=False)
    print(f"build_robot_arm: wrote {args.out}")
    return args.out


if __name__ == "__main__":
    main()
