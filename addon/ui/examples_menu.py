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
from bpy.props import EnumProperty, StringProperty
from mathutils import Vector

from ..properties import TREE_IDNAME
from ..runs import sessions
from .examples import (
    build_arm3_tree,
    build_arm6_tree,
    build_chase_tree,
    build_reach_sac_tree,
    build_tank_duel_tree,
    build_tank_tree,
    build_transform_tree,
)
from .examples_evolution import build_cartpole_rb_tree, build_pacman_tree, build_walker_tree

#: Menu label -> builder ``(scene) -> tree``, in menu order.
EXAMPLES: dict[str, Callable[[Any], Any]] = {
    "Tank": build_tank_tree,
    "Reach (transform)": build_transform_tree,
    "Reach (SAC, continuous)": build_reach_sac_tree,
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


def load_example_objects(name: str, fresh: bool = False) -> tuple[list[str], list]:
    """``(names, appended)``: the names of the objects in example ``name``'s bundled scene, and those of them
    this file lacked (``fresh``: all of them, a copy of one whose name is taken named 'TankB.001'), appended
    into ``bpy.data`` (not yet in any scene), in the order of ``names`` (None for one not appended)."""
    rel = EXAMPLE_SCENES.get(name)
    path = os.path.join(_ROOT, rel) if rel else ""
    if not path or not os.path.isfile(path):
        return [], []
    with bpy.data.libraries.load(path, link=False) as (source, loaded):
        names = list(source.objects)
        wanted = [n for n in names if fresh or n not in bpy.data.objects]
        loaded.objects = list(wanted)  # (filled in place with the objects once loaded)
    got = dict(zip(wanted, loaded.objects))
    return names, [got.get(n) for n in names]


def example_object_names(name: str) -> list[str]:
    """The names of the objects in example ``name``'s bundled scene (nothing is loaded)."""
    rel = EXAMPLE_SCENES.get(name)
    path = os.path.join(_ROOT, rel) if rel else ""
    if not path or not os.path.isfile(path):
        return []
    with bpy.data.libraries.load(path, link=False) as (source, _):
        return list(source.objects)


class _Named:
    """A scene's objects as an example's builder looks them up: by the example's own names (``renamed``: the
    example's name -> the name its fresh copy got, where the file had the name already)."""

    def __init__(self, objects, renamed: dict[str, str]) -> None:
        self._objects, self._renamed = objects, renamed

    def __getitem__(self, name: str):
        return self._objects[self._renamed.get(name, name)]

    def get(self, name: str, default=None):
        return self._objects.get(self._renamed.get(name, name), default)

    def __contains__(self, name: str) -> bool:
        return self._renamed.get(name, name) in self._objects

    def __iter__(self):
        return iter(self._objects)

    def __len__(self) -> int:
        return len(self._objects)


class ExampleScene:
    """``scene`` for an example's builder, its objects found under the example's names (``_Named``)."""

    def __init__(self, scene, renamed: dict[str, str]) -> None:
        self._scene = scene
        self.objects = _Named(scene.objects, renamed)

    def __getattr__(self, name: str):
        return getattr(self._scene, name)


def link_example_objects(scene, objects) -> list[str]:
    """Put appended example objects into ``scene`` (rigid bodies into its rigid-body world); their names."""
    objects = [ob for ob in objects if ob is not None and ob.name not in scene.objects]
    for ob in objects:
        scene.collection.objects.link(ob)
    adopt_rigid_bodies(scene, objects)
    return [ob.name for ob in objects]


# --------------------------------------------------------------------------- where an example goes
#: Object types a person sees as solid things (what can hide an example, or be hidden by it)
GEOMETRY = {'MESH', 'CURVE', 'SURFACE', 'META', 'FONT', 'VOLUME', 'CURVES', 'POINTCLOUD', 'GREASEPENCIL', 'GPENCIL'}
#: Room the examples that make their objects take, (min, max) corners, about the origin: the Reach
#: example's agent and goal inside its Out of Bounds box, the Pac-Man maze and its walls
BUILT_EXTENTS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "Reach (transform)": ((-5.0, -5.0, -5.0), (5.0, 5.0, 5.0)),
    "Reach (SAC, continuous)": ((-5.0, -5.0, -5.0), (5.0, 5.0, 5.0)),
}


def _pacman_extent() -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    from .examples_evolution import PACMAN_MAZE

    w, h = len(PACMAN_MAZE[0]) / 2, len(PACMAN_MAZE) / 2
    return (-w, -h, 0.0), (w, h, 1.0)


def world_box(ob, kinds=GEOMETRY) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """The world-space box around ``ob``'s geometry, or None for an object of none of ``kinds`` (a camera, a
    light, an empty)."""
    if ob.type not in kinds:
        return None
    corners = [ob.matrix_world @ Vector(c) for c in ob.bound_box]
    return (tuple(min(c[i] for c in corners) for i in range(3)), tuple(max(c[i] for c in corners) for i in range(3)))


def _overlap(a, b, margin: float = 0.05) -> bool:
    return all(a[0][i] - margin < b[1][i] and b[0][i] - margin < a[1][i] for i in range(3))


def example_extent(name: str, objects) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """The room example ``name`` takes: around its objects' geometry, or its declared extent."""
    if name == "Pac-Man (co-evolution)":
        return _pacman_extent()
    if name in BUILT_EXTENTS:
        return BUILT_EXTENTS[name]
    boxes = [b for b in (world_box(ob, GEOMETRY | {'ARMATURE'}) for ob in objects) if b is not None]
    if not boxes:
        return None
    return (tuple(min(b[0][i] for b in boxes) for i in range(3)), tuple(max(b[1][i] for b in boxes) for i in range(3)))


def in_the_way(scene, extent, own: set[str]) -> list:
    """The visible solid objects of ``scene`` (not the example's own, ``own``) inside ``extent``."""
    if extent is None:
        return []
    out = []
    for ob in scene.objects:
        if ob.name in own or ob.type not in GEOMETRY or ob.hide_viewport or ob.hide_get():
            continue
        box = world_box(ob)
        if box is not None and _overlap(box, extent):
            out.append(ob)
    return sorted(out, key=lambda o: o.name)


def new_example_scene(context, name: str):
    """A new, empty scene for example ``name`` (the window shows it), with the current scene's frame range and
    units: nothing of the user's is in the example's way."""
    old = context.scene
    scene = bpy.data.scenes.new(name.split(" (")[0])
    scene.frame_start, scene.frame_end, scene.render.fps = old.frame_start, old.frame_end, old.render.fps
    scene.unit_settings.system, scene.unit_settings.scale_length = old.unit_settings.system, \
        old.unit_settings.scale_length
    if context.window is not None:
        context.window.scene = scene
    return scene


def _names(objects) -> str:
    names = [f"'{ob.name}'" for ob in objects[:4]]
    return ", ".join(names) + (f" and {len(objects) - 4} more" if len(objects) > 4 else "")


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
    """An example's name as the menu and the messages show it (already in words: 'Robot Arm 6 (Learned IK)')."""
    return name.replace("_", " ")


class DRLA_OT_add_example(bpy.types.Operator):
    """Add a DRLA example: its objects and a ready-to-train RL tree"""

    bl_idname = "drla.add_example"
    bl_label = "Add DRLA Example"
    bl_options = {'REGISTER', 'UNDO'}

    name: StringProperty(name="Example", default="", options={'SKIP_SAVE'})
    place: EnumProperty(
        name="Place",
        description="Where the example's objects go",
        items=(('AUTO', "Where There Is Room",
                "In this scene when nothing of yours is where the example's objects go, else in a new scene"),
               ('NEW_SCENE', "New Scene", "Always in a new scene of its own, next to this one"),
               ('HERE', "This Scene",
                "In this scene; your objects that would hide the example are hidden (Alt H shows them again)")),
        default='AUTO')

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
        scene = context.scene
        try:
            names = example_object_names(self.name)
            renamed: dict[str, str] = {}
            where = ""
            if self.place != 'NEW_SCENE' and names and all(n in scene.objects for n in names):
                # the example's own scene (its .blend opened): its objects are used, what is missing appended
                _, loaded = load_example_objects(self.name)
            else:
                # a copy of every object of the example (one of the same name elsewhere in the file may differ:
                # the Tank's TankB has no score, the Tank Duel's has), put where nothing hides it
                _, loaded = load_example_objects(self.name, fresh=True)
                renamed = {n: ob.name for n, ob in zip(names, loaded) if ob is not None and ob.name != n}
                loaded = [ob for ob in loaded if ob is not None]
                blocking = in_the_way(scene, example_extent(self.name, loaded), {ob.name for ob in loaded})
                if self.place == 'NEW_SCENE' or (self.place == 'AUTO' and blocking):
                    scene = new_example_scene(context, self.name)
                    where = f" in a new scene '{scene.name}'" + (f" ({_names(blocking)} in the way)"
                                                                 if blocking else "")
                elif blocking:  # This Scene: what would hide the example is hidden, and named
                    for ob in blocking:
                        ob.hide_set(True)
                    where = f"; hid {_names(blocking)}, in its way (Alt H shows it)"
            added = link_example_objects(scene, [ob for ob in loaded if ob is not None])
            tree = builder(ExampleScene(scene, renamed) if renamed else scene)
        except KeyError as exc:  # the example's objects are missing from this scene
            found = re.search(r'key "([^"]+)"', str(exc))
            missing = found.group(1) if found else str(exc.args[0] if exc.args else exc)
            self.report({'ERROR'}, f"The {label(self.name)} example needs the object '{missing}' in this scene: "
                                   f"open the example's .blend first (scenes/ in DRLA's repository)")
            return {'CANCELLED'}
        except Exception as exc:  # never a traceback for the user
            self.report({'ERROR'}, f"Building the {label(self.name)} example failed: {exc}")
            return {'CANCELLED'}
        scene.drla.tree = tree
        scene.drla.error = ""
        scene.drla.message = f"Added the {label(self.name)} example{where}: press Train"
        if added:
            scene.drla.message += f" (added {len(added)} objects: {', '.join(sorted(added)[:6])})"
        self.report({'INFO'}, scene.drla.message)
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
