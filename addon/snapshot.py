"""Capture the user's scene before training and put it back exactly afterwards.

``SceneSnapshot.capture(scene)`` records, for every object in the scene: location, every
rotation representation and the rotation mode, scale, delta transforms, hide states,
selection, custom (ID) properties, and the same for pose bones; for the scene: the current
frame, the active object, custom properties and the rigid-body point cache range.
``restore()`` writes them back, frees the rigid-body cache and re-evaluates the frame, so
``matrix_world`` is recomputed from the restored values. ``scene_session(scene)`` wraps a
training run and restores on any exit: done, stopped, or an exception.

``ObjectState`` is also what ``SceneEnv`` uses to put the objects its actions touch back into
their initial state on every ``reset``.
"""

from __future__ import annotations

import contextlib
from typing import Any

import bpy

from .sensors import view_layer_of

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


def _get_props(owner) -> dict[str, Any]:
    return {k: _plain(owner[k]) for k in owner.keys()}


def _set_props(owner, props: dict[str, Any]) -> None:
    for k in list(owner.keys()):
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


class SceneSnapshot:
    """Everything training may change in a scene, captured so it can be restored bit for bit."""

    def __init__(self, scene):
        self.scene = scene
        self.scene_name = scene.name
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

    def restore(self) -> None:
        """Put the scene back as captured (objects deleted meanwhile are skipped)."""
        scene = self.scene
        view_layer = scene.view_layers.get(self.view_layer_name) or view_layer_of(scene)
        for name, state in self.objects.items():
            ob = scene.objects.get(name)
            if ob is not None:
                state.restore(ob)
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
        view_layer.objects.active = scene.objects.get(self.active) if self.active else None
        _set_props(scene, self.scene_props)
        rbw = scene.rigidbody_world
        if rbw is not None and rbw.point_cache is not None:
            # Re-simulate from the start, frame by frame, as playing the scene to this frame did.
            free_rigid_body_cache(scene)
            if self.rigid_body is not None:
                rbw.point_cache.frame_start, rbw.point_cache.frame_end = self.rigid_body
            for frame in range(scene.frame_start, self.frame):
                scene.frame_set(frame)
        scene.frame_set(self.frame, subframe=self.subframe)
        view_layer.update()


def free_rigid_body_cache(scene) -> None:
    """Free the rigid-body point cache so the simulation is recomputed from the restored state."""
    rbw = scene.rigidbody_world
    if rbw is None or rbw.point_cache is None:
        return
    try:
        with bpy.context.temp_override(scene=scene, point_cache=rbw.point_cache):
            bpy.ops.ptcache.free_bake_all()
    except Exception:  # no operator context: changing a cache setting also marks it outdated
        end = rbw.point_cache.frame_end
        rbw.point_cache.frame_end = end + 1
        rbw.point_cache.frame_end = end


def prepare_for_training(scene) -> None:
    """Let rigid bodies simulate past the default 250-frame cache (blender-notes §5)."""
    rbw = scene.rigidbody_world
    if rbw is not None and rbw.point_cache is not None and rbw.point_cache.frame_end < _RIGID_BODY_HORIZON:
        rbw.point_cache.frame_end = _RIGID_BODY_HORIZON


@contextlib.contextmanager
def scene_session(scene):
    """Capture ``scene``, yield the snapshot, and restore the scene however the block ends."""
    snap = SceneSnapshot.capture(scene)
    try:
        prepare_for_training(scene)
        yield snap
    finally:
        snap.restore()
