"""Capture the user's scene before training and put it back exactly afterwards.

``SceneSnapshot.capture(scene)`` records, for every object in the scene: location, every
rotation representation and the rotation mode, scale, delta transforms, hide states,
selection, custom (ID) properties, and the same for pose bones; for the scene: the current
frame, the active object, custom properties and the rigid-body point cache range. Registered
RNA properties (``scene.drla``, ``cycles``: listed by ``keys()`` before Blender 5.0) are not
custom properties and are never captured or deleted. RNA paths the environment writes
(``data.energy``, ``color[0]``) are added with ``track`` (``SceneEnv`` does it for every active
snapshot of its scene). ``restore()`` writes them back, marks an unbaked rigid-body cache outdated
(a baked cache, and every other cache, is left alone) and re-evaluates the frame, so
``matrix_world`` is recomputed from the restored values. ``restored_scene(scene)`` wraps a
training run and restores on any exit: done, stopped, or an exception.

``ObjectState`` is also what ``SceneEnv`` uses to put the objects its actions touch back into
their initial state on every ``reset``.
"""

from __future__ import annotations

import contextlib
from typing import Any

import bpy

from .actuators import property_setter
from .probes import view_layer_of

_TRANSFORM = ("location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale")
_OBJECT_EXTRA = ("delta_location", "delta_rotation_euler", "delta_rotation_quaternion", "delta_scale")
_RIGID_BODY_HORIZON = 1_000_000


def _plain(value: Any) -> Any:
    """A deep, plain-Python copy of an ID property value."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "to_list"):
        return value.to_list()
    return value


def _custom_keys(owner) -> list[str]:
    """The owner's custom property keys, without registered RNA properties (``bpy.props``, which
    ``keys()`` lists before Blender 5.0: deleting them would wipe e.g. ``scene.drla``)."""
    try:
        registered = owner.bl_rna.properties
    except AttributeError:
        registered = ()
    return [k for k in owner.keys() if k not in registered]


def _get_props(owner) -> dict[str, Any]:
    return {k: _plain(owner[k]) for k in _custom_keys(owner)}


def _set_props(owner, props: dict[str, Any]) -> None:
    for k in _custom_keys(owner):
        if k not in props:
            del owner[k]
    for k, v in props.items():
        try:
            current = _plain(owner[k]) if k in owner else None
        except Exception:
            current = None
        if current != v or type(current) is not type(v):
            owner[k] = v


class ObjectState:
    """Transform (all rotation modes), custom properties and pose of one object."""

    __slots__ = ("name", "rotation_mode", "values", "props", "bones")

    def __init__(self, ob, extra: bool = True):
        self.name = ob.name
        self.rotation_mode = ob.rotation_mode
        attrs = _TRANSFORM + (_OBJECT_EXTRA if extra else ())
        self.values = [(a, tuple(getattr(ob, a))) for a in attrs]
        self.props = _get_props(ob)
        self.bones = None
        if ob.pose is not None:
            self.bones = [(pb.name, pb.rotation_mode, [(a, tuple(getattr(pb, a))) for a in _TRANSFORM],
                           _get_props(pb)) for pb in ob.pose.bones]

    def restore(self, ob) -> None:
        ob.rotation_mode = self.rotation_mode
        for attr, value in self.values:
            setattr(ob, attr, value)
        _set_props(ob, self.props)
        if self.bones is not None and ob.pose is not None:
            for name, mode, values, props in self.bones:
                pb = ob.pose.bones.get(name)
                if pb is None:
                    continue
                pb.rotation_mode = mode
                for attr, value in values:
                    setattr(pb, attr, value)
                _set_props(pb, props)


def capture_path(ob, path: str) -> Any:
    """The value of RNA ``path`` on ``ob`` as plain Python (a tuple for arrays)."""
    value = ob.path_resolve(path)
    return tuple(value) if hasattr(value, "__len__") else value


def restore_path(ob, path: str, value: Any) -> None:
    """Write ``value`` back to RNA ``path`` of ``ob`` (only if it differs)."""
    try:
        if capture_path(ob, path) == value:
            return
    except (ValueError, KeyError, TypeError, AttributeError):
        return  # the path no longer resolves (object data replaced, property removed)
    property_setter(ob, path)(value)


class SceneSnapshot:
    """Everything training may change in a scene, captured so it can be restored bit for bit."""

    def __init__(self, scene):
        self.scene = scene
        self.scene_name = scene.name
        self.scene_pointer = scene.as_pointer()
        self.paths: dict[tuple[str, str], Any] = {}
        view_layer = view_layer_of(scene)
        self.view_layer_name = view_layer.name
        self.frame = scene.frame_current
        self.subframe = scene.frame_subframe
        self.scene_props = _get_props(scene)
        self.objects: dict[str, ObjectState] = {}
        self.visibility: dict[str, tuple] = {}
        for ob in scene.objects:
            self.objects[ob.name] = ObjectState(ob)
            self.visibility[ob.name] = (ob.hide_viewport, ob.hide_render, ob.hide_select,
                                        ob.hide_get(view_layer=view_layer), ob.select_get(view_layer=view_layer))
        active = view_layer.objects.active
        self.active = active.name if active is not None else None
        rbw = scene.rigidbody_world
        self.rigid_body = None
        if rbw is not None and rbw.point_cache is not None:
            self.rigid_body = (rbw.point_cache.frame_start, rbw.point_cache.frame_end)

    @classmethod
    def capture(cls, scene) -> SceneSnapshot:
        return cls(scene)

    def track(self, object_name: str, path: str, value: Any) -> None:
        """Also restore RNA ``path`` of object ``object_name`` to ``value`` (the first value tracked wins)."""
        self.paths.setdefault((object_name, path), value)

    def _resolve_scene(self):
        """The captured scene, looked up by name (stored pointers can dangle after undo), else by address."""
        scene = bpy.data.scenes.get(self.scene_name)
        if scene is None:
            scene = next((s for s in bpy.data.scenes if s.as_pointer() == self.scene_pointer), None)
        return scene

    def _restore_visibility(self, scene, view_layer) -> None:
        """Hide, render, select and view-layer visibility and selection, as captured."""
        for name, (hv, hr, hs, hidden, selected) in self.visibility.items():
            ob = scene.objects.get(name)
            if ob is None:
                continue
            if ob.hide_viewport != hv:
                ob.hide_viewport = hv
            if ob.hide_render != hr:
                ob.hide_render = hr
            if ob.hide_select != hs:
                ob.hide_select = hs
            with contextlib.suppress(RuntimeError):
                if ob.hide_get(view_layer=view_layer) != hidden:
                    ob.hide_set(hidden, view_layer=view_layer)
                if ob.select_get(view_layer=view_layer) != selected:
                    ob.select_set(selected, view_layer=view_layer)

    def restore(self) -> None:
        """Put the scene back as captured (objects deleted meanwhile are skipped)."""
        scene = self._resolve_scene()
        if scene is None:  # the scene itself was deleted
            return
        view_layer = scene.view_layers.get(self.view_layer_name) or view_layer_of(scene)
        for name, state in self.objects.items():
            ob = scene.objects.get(name)
            if ob is not None:
                state.restore(ob)
        for (name, path), value in self.paths.items():
            ob = scene.objects.get(name)
            if ob is not None:
                restore_path(ob, path, value)
        self._restore_visibility(scene, view_layer)
        view_layer.objects.active = scene.objects.get(self.active) if self.active else None
        _set_props(scene, self.scene_props)
        rbw = scene.rigidbody_world
        if rbw is not None and rbw.point_cache is not None and not rbw.point_cache.is_baked:
            # Re-simulate from the start, frame by frame, as playing the scene to this frame did.
            # A baked cache was never touched: the bake is the user's, and it plays back as it was.
            cache = rbw.point_cache
            if self.rigid_body is not None and (cache.frame_start, cache.frame_end) != self.rigid_body:
                cache.frame_start, cache.frame_end = self.rigid_body  # also marks the cache outdated
            else:
                free_rigid_body_cache(scene)
            for frame in range(scene.frame_start, self.frame):
                scene.frame_set(frame)
        scene.frame_set(self.frame, subframe=self.subframe)
        view_layer.update()


def free_rigid_body_cache(scene) -> None:
    """Mark the rigid-body point cache outdated so the simulation is recomputed from the restored
    state. Only that cache: never ``ptcache.free_bake_all`` (it frees every bake of every object),
    and never a baked cache (the user's bake)."""
    rbw = scene.rigidbody_world
    if rbw is None or rbw.point_cache is None or rbw.point_cache.is_baked:
        return
    end = rbw.point_cache.frame_end  # changing a cache setting marks it outdated
    rbw.point_cache.frame_end = end + 1
    rbw.point_cache.frame_end = end


def prepare_for_training(scene) -> None:
    """Let rigid bodies simulate past the default 250-frame cache (blender-notes §5); a baked
    cache is left as it is (changing it would free the user's bake)."""
    rbw = scene.rigidbody_world
    if (rbw is not None and rbw.point_cache is not None and not rbw.point_cache.is_baked
            and rbw.point_cache.frame_end < _RIGID_BODY_HORIZON):
        rbw.point_cache.frame_end = _RIGID_BODY_HORIZON


_ACTIVE: list[SceneSnapshot] = []


def active_snapshots(scene) -> list[SceneSnapshot]:
    """The snapshots of open ``restored_scene`` blocks on ``scene`` (innermost last)."""
    return [s for s in _ACTIVE if s.scene_name == scene.name]


@contextlib.contextmanager
def restored_scene(scene):
    """Capture ``scene``, yield the snapshot, and restore the scene however the block ends."""
    snap = SceneSnapshot.capture(scene)
    _ACTIVE.append(snap)
    try:
        prepare_for_training(scene)
        yield snap
    finally:
        try:
            snap.restore()
        finally:
            with contextlib.suppress(ValueError):
                _ACTIVE.remove(snap)
