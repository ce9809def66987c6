"""Add > DRLA Examples: build an example scene and its RL tree (from ``EXAMPLES``) in one click.

The entries are in the 3D viewport's Add menu and in the DRLA node editor's Add menu. The new
tree becomes the scene's RL tree, so the DRLA panel is ready to Train.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import bpy
from bpy.props import StringProperty

from ..properties import TREE_IDNAME
from ..runs import sessions
from .examples import (
    build_arm3_tree,
    build_arm6_tree,
    build_chase_tree,
    build_tank_duel_tree,
    build_tank_tree,
    build_transform_tree,
)
from .examples_evolution import build_cartpole_rb_tree, build_pacman_tree, build_walker_tree

#: Menu label -> builder ``(scene) -> tree``, in menu order.
EXAMPLES: dict[str, Callable[[Any], Any]] = {
    "Tank": build_tank_tree,
    "Reach (transform)": build_transform_tree,
    "Robot Arm 6 (Learned IK)": build_arm6_tree,
    "Robot Arm 3 (Learned IK)": build_arm3_tree,
    "Chase (two agents)": build_chase_tree,
    "Tank Duel (two agents)": build_tank_duel_tree,
    "Cart-Pole (rigid body)": build_cartpole_rb_tree,
    "Walker": build_walker_tree,
    "Pac-Man (co-evolution)": build_pacman_tree,
}


def _examples() -> dict:
    return EXAMPLES


#: Example -> the scene shipped inside the extension whose objects it needs (``scenes/`` is in the zip).
EXAMPLE_SCENES: dict[str, str] = {
    "Tank": os.path.join("scenes", "tank", "tank.blend"),
    "Robot Arm 6 (Learned IK)": os.path.join("scenes", "robot_arm", "robot_arm.blend"),
    "Robot Arm 3 (Learned IK)": os.path.join("scenes", "robot_arm", "robot_arm.blend"),
    "Tank Duel (two agents)": os.path.join("scenes", "tank_duel", "tank_duel.blend"),
    "Chase (two agents)": os.path.join("scenes", "chase", "chase.blend"),
    "Cart-Pole (rigid body)": os.path.join("scenes", "cartpole_rb", "cartpole_rb.blend"),
    "Walker": os.path.join("scenes", "walker", "walker.blend"),
}
#: Frames a rigid-body example's episodes need cached (the walker: 240 steps from the start frame).
RIGID_BODY_FRAMES = 250
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the extension root


def append_example_objects(scene, name: str) -> list[str]:
    """Append the objects of example ``name``'s bundled scene that ``scene`` lacks; returns their names.

    Objects keep their parents, materials and custom properties. Objects the user already has
    under the same names are left alone (the example then uses the user's).
    """
    rel = EXAMPLE_SCENES.get(name)
    path = os.path.join(_ROOT, rel) if rel else ""
    if not path or not os.path.isfile(path):
        return []
    with bpy.data.libraries.load(path, link=False) as (source, loaded):
        loaded.objects = [ob for ob in source.objects if ob not in bpy.data.objects]
    added = []
    for ob in loaded.objects:
        if ob is not None:
            scene.collection.objects.link(ob)
            added.append(ob.name)
    adopt_rigid_bodies(scene, [ob for ob in loaded.objects if ob is not None])
    return added


def adopt_rigid_bodies(scene, objects) -> None:
    """Appended rigid bodies and constraints simulate only inside the scene's rigid-body world: make one if the
    scene has none (its cache over at least ``RIGID_BODY_FRAMES`` from the start frame) and put them in it."""
    bodies = [ob for ob in objects if ob.rigid_body is not None]
    constraints = [ob for ob in objects if ob.rigid_body_constraint is not None]
    if not bodies and not constraints:
        return
    rbw = scene.rigidbody_world
    if rbw is None:
        with bpy.context.temp_override(scene=scene):
            bpy.ops.rigidbody.world_add()
        rbw = scene.rigidbody_world
        cache = rbw.point_cache
        cache.frame_start = scene.frame_start
        cache.frame_end = max(scene.frame_end, scene.frame_start + RIGID_BODY_FRAMES - 1)
    if rbw.collection is None:
        rbw.collection = bpy.data.collections.new("RigidBodyWorld")
    if constraints and rbw.constraints is None:
        rbw.constraints = bpy.data.collections.new("RigidBodyConstraints")
    for ob in bodies:
        if ob.name not in rbw.collection.objects:
            rbw.collection.objects.link(ob)
    for ob in constraints:
        if ob.name not in rbw.constraints.objects:
            rbw.constraints.objects.link(ob)


def label(name: str) -> str:
    return name.replace("_", " ").title()


class DRLA_OT_add_example(bpy.types.Operator):
    """Add a DRLA example: its objects and a ready-to-train RL tree"""

    bl_idname = "drla.add_example"
    bl_label = "Add DRLA Example"
    bl_options = {'REGISTER', 'UNDO'}

    name: StringProperty(name="Example", default="", options={'SKIP_SAVE'})

    @classmethod
    def description(cls, context, properties):
        builder = _examples().get(properties.name)
        doc = (builder.__doc__ or "").strip().splitlines() if builder is not None else []
        return doc[0] if doc else cls.__doc__

    @classmethod
    def poll(cls, context):
        if context.scene is not None and sessions.active(context.scene) is not None:
            cls.poll_message_set("DRLA is running in this scene: stop it first")
            return False
        return context.scene is not None

    def execute(self, context):
        examples = _examples()
        builder = examples.get(self.name)
        if builder is None:
            self.report({'ERROR'}, f"Unknown example '{self.name}': one of {', '.join(sorted(examples))}")
            return {'CANCELLED'}
        try:
            added = append_example_objects(context.scene, self.name)
            tree = builder(context.scene)
        except KeyError as exc:  # the example's objects are missing from this scene
            found = re.search(r'key "([^"]+)"', str(exc))
            missing = found.group(1) if found else str(exc.args[0] if exc.args else exc)
            self.report({'ERROR'}, f"The {label(self.name)} example needs the object '{missing}' in this scene: "
                                   f"open the example's .blend first (scenes/ in DRLA's repository)")
            return {'CANCELLED'}
        except Exception as exc:  # never a traceback for the user
            self.report({'ERROR'}, f"Building the {label(self.name)} example failed: {exc}")
            return {'CANCELLED'}
        context.scene.drla.tree = tree
        context.scene.drla.error = ""
        context.scene.drla.message = f"Added the {label(self.name)} example: press Train"
        if added:
            context.scene.drla.message += f" (added {len(added)} objects: {', '.join(sorted(added)[:6])})"
        self.report({'INFO'}, context.scene.drla.message)
        return {'FINISHED'}


class DRLA_MT_examples(bpy.types.Menu):
    """Ready-made DRLA scenes to learn from"""

    bl_idname = "DRLA_MT_examples"
    bl_label = "DRLA Examples"

    def draw(self, context):
        for name in _examples():
            self.layout.operator(DRLA_OT_add_example.bl_idname, text=label(name)).name = name


def draw_view3d_add(self, context):
    self.layout.separator()
    self.layout.menu(DRLA_MT_examples.bl_idname, icon='OUTLINER_OB_ARMATURE')


def draw_node_add(self, context):
    if getattr(context.space_data, "tree_type", "") == TREE_IDNAME:
        self.layout.separator()
        self.layout.menu(DRLA_MT_examples.bl_idname, icon='OUTLINER_OB_ARMATURE')


classes = (DRLA_OT_add_example, DRLA_MT_examples)


def register() -> None:
    bpy.types.VIEW3D_MT_add.append(draw_view3d_add)
    bpy.types.NODE_MT_add.append(draw_node_add)


def unregister() -> None:
    bpy.types.NODE_MT_add.remove(draw_node_add)
    bpy.types.VIEW3D_MT_add.remove(draw_view3d_add)
