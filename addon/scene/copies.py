"""Scene copies: the objects that make up a tree's environment, duplicated N-1 times on a grid so N
episodes run side by side in one scene, stepped by one frame advance.

What is copied: the collection the Environment node names, or else every object the compiled
environment names together with its whole family (top parent and every descendant: a tank's turret,
cannon, muzzle and camera come along). Copies are ``Object.copy()``: object data (meshes, cameras,
armatures, materials) is shared, not duplicated. Inside a copy, parents and constraint targets point
to the copy's own objects; its top-level objects hang under one empty per copy that holds the copy's
offset, so every local value (location, animation, custom properties) reads as in the original.
A camera of a copy draws only that copy's objects: what it should see must be part of the
environment (name the arena's collection on the Environment node).

Physics: when the environment holds a rigid body, every object of the scene's rigid-body world (bodies
and constraints: the rail, the ground, the hinges) belongs to it too, and each copy's bodies and
constraints join that one world (constraints point to the copy's own bodies). Rigid bodies are not
parented to the copy's empty (a simulated body ignores its parent); they stand at the original's place
plus the copy's offset. One world restarts only as a whole, at the start frame: physics copies restart
together (``SceneVectorEnv.restarts_together``), which an evolution's evaluation can use and a DQN run,
whose copies restart one by one, cannot (``physics_ok``).

``SceneCopies.remove()`` deletes every object, empty and collection it made: the user's scene has
exactly the data-blocks it had before.
"""

from __future__ import annotations

import math

import bpy
from mathutils import Matrix, Vector

from ..specs import EnvSpec, env_for_copy, objects_of
from .probes import COPY_HOLDER, view_layer_of
from .snapshot import free_rigid_body_cache

#: Name of the collection holding the copies while a run lasts.
COLLECTION_NAME = "DRLA Copies"


class CopyError(ValueError):
    """The environment cannot be copied (the message says why and what to do)."""


def _family(ob) -> list:
    """``ob``'s top parent and every descendant of it."""
    top = ob
    while top.parent is not None:
        top = top.parent
    return [top, *top.children_recursive]


def environment_objects(scene, env: EnvSpec) -> list:
    """The objects one copy of the environment consists of, parents before children."""
    if env.copy_collection:
        collection = bpy.data.collections.get(env.copy_collection)
        if collection is None:
            raise CopyError(f"the collection '{env.copy_collection}' to copy is gone")
        found = list(collection.all_objects)
        missing = [n for n in objects_of(env) if scene.objects.get(n) is not None
                   and scene.objects[n] not in found and not _inside(scene.objects[n], found)]
        if missing:
            raise CopyError(f"'{missing[0]}' is used by the tree but is not in the collection "
                            f"'{env.copy_collection}' that is the environment")
    else:
        found = []
        for name in objects_of(env):
            ob = scene.objects.get(name)
            if ob is not None:
                found += _family(ob)
        if any(_is_rigid(ob) for ob in found):
            for ob in physics_world_objects(scene):
                found += _family(ob)
    unique = list(dict.fromkeys(found))
    return sorted(unique, key=_depth)


def _is_rigid(ob) -> bool:
    return ob.rigid_body is not None or ob.rigid_body_constraint is not None


def physics_world_objects(scene) -> list:
    """Every body and constraint of ``scene``'s rigid-body world that is in the scene."""
    rbw = scene.rigidbody_world
    if rbw is None:
        return []
    members = [*(rbw.collection.objects if rbw.collection else []),
               *(rbw.constraints.objects if rbw.constraints else [])]
    return [ob for ob in members if scene.objects.get(ob.name) == ob]


def _inside(ob, objects: list) -> bool:
    return ob.parent is not None and (ob.parent in objects or _inside(ob.parent, objects))


def _depth(ob) -> int:
    depth = 0
    while ob.parent is not None:
        ob, depth = ob.parent, depth + 1
    return depth


def _extent(objects: list) -> float:
    """The widest horizontal size of the objects' bounding boxes together (world space)."""
    points = [ob.matrix_world @ Vector(corner) for ob in objects for corner in ob.bound_box]
    if not points:
        return 1.0
    xs, ys = [p.x for p in points], [p.y for p in points]
    return max(max(xs) - min(xs), max(ys) - min(ys), 1.0)


def _sight(objects: list, env: EnvSpec) -> float:
    """How far anything in one copy can see: cameras' clip end, rays' and shots' reach."""
    reach = [ob.data.clip_end for ob in objects if ob.type == 'CAMERA']
    reach += [float(s.options.get("max_distance", 0.0)) for s in env.state.sensors]
    reach += [float(a.options.get("range", 0.0)) for a in env.actions]
    return max(reach, default=0.0)


def grid_offsets(n: int, spacing: float) -> list[tuple[float, float, float]]:
    """``n`` offsets on a square grid in the XY plane, copy 0 (the original) at the origin."""
    columns = math.ceil(math.sqrt(n))
    return [(float((i % columns) * spacing), float((i // columns) * spacing), 0.0) for i in range(n)]


class SceneCopies:
    """N-1 copies of the environment's objects in ``scene``; ``specs[i]`` is copy i's environment
    (copy 0 is the original scene). Call ``remove()`` when the run ends."""

    def __init__(self, scene, env: EnvSpec, n: int, physics_ok: bool = False) -> None:
        self.scene, self.n = scene, int(n)
        self.objects: list = []
        self.empties: list = []
        self.collection = None
        originals = environment_objects(scene, env)
        rigid = [ob.name for ob in originals if _is_rigid(ob)]
        self.physics = bool(rigid) and self.n > 1
        if self.physics:
            if not physics_ok:
                raise CopyError(f"'{rigid[0]}' is a rigid body: copies of a physics scene restart together at the "
                                "start frame, which only an Evolution Agent can use (set Copies to 1)")
            rbw = scene.rigidbody_world
            if rbw is None or any(ob.rigid_body is not None and ob not in rbw.collection.objects[:]
                                  for ob in originals):
                raise CopyError(f"'{rigid[0]}' is a rigid body outside the scene's rigid-body world")
            if rbw.point_cache is not None and rbw.point_cache.is_baked:
                raise CopyError("the rigid-body cache is baked: copies need live physics "
                                "(free the bake, or set Copies to 1)")
        if not env.copy_spacing:  # the extent reads world matrices: objects placed by a script since the last
            scene.view_layers[0].update()  # evaluation would still be at the origin (and copies overlap)
        spacing = env.copy_spacing or (_extent(originals) + _sight(originals, env) + 1.0)
        self.spacing = spacing
        self.offsets = grid_offsets(self.n, spacing)
        if self.n == 1:
            self.specs = [env]
            return
        self.specs = [env_for_copy(env, {}, (0.0, 0.0, 0.0), [ob.name for ob in originals], (0, self.n))]
        try:
            self.collection = bpy.data.collections.new(COLLECTION_NAME)
            scene.collection.children.link(self.collection)
            for i in range(1, self.n):
                names = self._copy(originals, i)
                self.specs.append(env_for_copy(env, names, self.offsets[i], list(names.values()), (i, self.n)))
            view_layer = bpy.context.view_layer if bpy.context.scene == scene else scene.view_layers[0]
            view_layer.update()
        except BaseException:
            self.remove()
            raise

    def _copy(self, originals: list, i: int) -> dict[str, str]:
        """Copy ``i`` of every object; returns original name -> copy name."""
        holder = bpy.data.objects.new(f"DRLA copy {i}", None)
        holder.location = self.offsets[i]
        holder.empty_display_size = 0.5
        holder[COPY_HOLDER] = i
        self.collection.objects.link(holder)
        self.empties.append(holder)
        made = {}
        for ob in originals:
            dup = ob.copy()
            dup.name = f"{ob.name} [{i}]"
            self.collection.objects.link(dup)
            self.objects.append(dup)
            made[ob] = dup
        rbw = self.scene.rigidbody_world
        for ob, dup in made.items():
            if ob.parent in made:
                dup.parent = made[ob.parent]  # same parent type and inverse matrix as the original's
            elif _is_rigid(ob):  # a simulated body ignores its parent: the offset goes into its own place
                dup.parent = None
                dup.matrix_world = Matrix.Translation(self.offsets[i]) @ (
                    ob.matrix_basis if ob.parent is None else ob.matrix_world)
            else:
                dup.parent = holder
                dup.matrix_parent_inverse.identity()
                if ob.parent is not None:  # parented outside the environment: keep where it is in the world
                    dup.matrix_basis = ob.matrix_world.copy()
            for con in dup.constraints:
                target = getattr(con, "target", None)
                if target in made:
                    con.target = made[target]
            if self.physics:
                self._join_physics(rbw, ob, dup, made)
        return {ob.name: dup.name for ob, dup in made.items()}

    @staticmethod
    def _join_physics(rbw, ob, dup, made: dict) -> None:
        """Put copy ``dup`` of ``ob`` into the rigid-body world, its constraint between the copy's bodies."""
        if ob.rigid_body is not None and dup.name not in rbw.collection.objects:  # Object.copy() may link it
            rbw.collection.objects.link(dup)
        constraint = dup.rigid_body_constraint
        if ob.rigid_body_constraint is not None and constraint is not None:
            for end in ("object1", "object2"):
                body = getattr(constraint, end)
                if body in made:
                    setattr(constraint, end, made[body])
            if rbw.constraints is not None and dup.name not in rbw.constraints.objects:
                rbw.constraints.objects.link(dup)

    def _leave_physics(self) -> None:
        """Take the copies out of the rigid-body world and let it rebuild before they are deleted: deleting
        a body the world still simulates (or a constraint's body) one object at a time can crash Blender."""
        rbw = self.scene.rigidbody_world
        if rbw is None:
            return
        for dup in self.objects:
            try:
                constraint = dup.rigid_body_constraint
                if constraint is not None:
                    constraint.object1 = constraint.object2 = None
                    if rbw.constraints is not None and dup.name in rbw.constraints.objects:
                        rbw.constraints.objects.unlink(dup)
                if dup.rigid_body is not None and rbw.collection is not None and dup.name in rbw.collection.objects:
                    rbw.collection.objects.unlink(dup)
            except ReferenceError:
                pass
        free_rigid_body_cache(self.scene)
        view_layer_of(self.scene).update()

    def remove(self) -> None:
        """Delete everything the copies made (objects, empties, the collection)."""
        if self.physics:
            self._leave_physics()
        for ob in [*self.objects, *self.empties]:
            try:
                bpy.data.objects.remove(ob, do_unlink=True)
            except ReferenceError:  # already gone (the user deleted it, or undo)
                pass
        self.objects, self.empties = [], []
        if self.collection is not None:
            try:
                bpy.data.collections.remove(self.collection)
            except ReferenceError:
                pass
            self.collection = None
