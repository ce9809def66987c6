"""Bake: record one greedy episode of the trained agent as keyframes, so an animator keeps the result.

The episode runs inside a scene snapshot, recording after every step the transforms of every
object (location, rotation in its rotation mode) and pose bone (location, rotation). Whatever the
agent changed during the episode becomes F-curves of a new action per object ("DRLA Bake: ..."),
written after the scene has been restored: the live scene is as it was, only the new actions
remain. An object's previous action is kept (fake user), not deleted.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import bpy

from . import model_store

#: (object name, bone name or "", property) -> one recorded vector per frame
Key = tuple[str, str, str]


@dataclass
class Recording:
    """What a greedy episode did: per-step transform samples and the rewards."""

    samples: list[dict[Key, tuple[float, ...]]] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)

    def changed_keys(self) -> list[Key]:
        """The channels that moved at some step (what the agent acts on)."""
        if not self.samples:
            return []
        first = self.samples[0]
        return sorted(k for k in first if any(s[k] != first[k] for s in self.samples[1:]))


@dataclass
class BakeResult:
    frames: list[int]
    keys: list[Key]
    actions: list[str]
    episode_return: float
    kept_actions: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if not self.keys:
            return f"Baked {len(self.frames)} frames, but the agent moved nothing (return {self.episode_return:.2f})"
        targets = sorted({f"{o}:{b}" if b else o for o, b, _ in self.keys})
        text = (f"Baked {len(self.frames)} frames (frames {self.frames[0]}-{self.frames[-1]}) onto "
                f"{', '.join(targets)}; return {self.episode_return:.2f}")
        if self.kept_actions:
            text += f"; previous actions kept: {', '.join(self.kept_actions)}"
        return text


# --------------------------------------------------------------------------- recording
def _rotation_path(owner) -> str:
    mode = owner.rotation_mode
    if mode == 'QUATERNION':
        return "rotation_quaternion"
    if mode == 'AXIS_ANGLE':
        return "rotation_axis_angle"
    return "rotation_euler"


def capture(scene) -> dict[Key, tuple[float, ...]]:
    """The transform channels of every object and pose bone in ``scene``."""
    out: dict[Key, tuple[float, ...]] = {}
    for ob in scene.objects:
        out[(ob.name, "", "location")] = tuple(ob.location)
        rot = _rotation_path(ob)
        out[(ob.name, "", rot)] = tuple(getattr(ob, rot))
        if ob.pose is not None:
            for pb in ob.pose.bones:
                out[(ob.name, pb.name, "location")] = tuple(pb.location)
                rot = _rotation_path(pb)
                out[(ob.name, pb.name, rot)] = tuple(getattr(pb, rot))
    return out


def record_episode(scene, tree, model=None, *, seed: int | None = None, max_steps: int = 0) -> Recording:
    """Play the greedy policy for one episode (or ``max_steps``) on a snapshot of ``scene``; restore it."""
    from . import compile as compile_mod
    from . import snapshot
    from .session import check_model_fits

    model = model if model is not None else model_store.load_stored_model(tree)
    compiled = compile_mod.compile_tree(tree, scene)
    if seed is None:
        seed = compiled.trainer.seed if compiled.trainer is not None else 0
    rec = Recording()
    limit = max_steps if max_steps > 0 else 100_000
    with snapshot.scene_session(scene):
        env = compile_mod.build_env(compiled, scene)
        try:
            check_model_fits(model, env)
            obs, _ = env.reset(seed=seed)
            rec.samples.append(capture(scene))
            for _ in range(limit):
                action = model.act(obs)
                obs, reward, terminated, truncated, _info = env.step(action)
                rec.actions.append(action)
                rec.rewards.append(float(reward))
                rec.samples.append(capture(scene))
                if max_steps <= 0 and (terminated or truncated):
                    break
        finally:
            with contextlib.suppress(Exception):
                env.close()
    return rec


# --------------------------------------------------------------------------- writing keyframes
def _fcurves(ob, action):
    """The F-curve collection ``ob`` animates through ``action`` (slotted actions on 4.4+, legacy before)."""
    if hasattr(action, "slots"):
        from bpy_extras import anim_utils

        slot = ob.animation_data.action_slot
        if slot is None:
            slot = action.slots.new(id_type='OBJECT', name=ob.name)
            ob.animation_data.action_slot = slot
        if hasattr(anim_utils, "action_ensure_channelbag_for_slot"):
            return anim_utils.action_ensure_channelbag_for_slot(action, slot).fcurves
        # 4.5 has no such helper (its Action.fcurves would key a slot the object does not use): the same by hand
        layer = action.layers[0] if action.layers else action.layers.new("Layer")
        strip = layer.strips[0] if layer.strips else layer.strips.new(type='KEYFRAME')
        return strip.channelbag(slot, ensure=True).fcurves
    return action.fcurves


def new_fcurve(fcurves, path: str, index: int, group: str):
    """``fcurves.new`` in the F-curve group ``group`` (5.0 takes ``group_name``; a 4.5 channelbag takes no group)."""
    if "group_name" in fcurves.bl_rna.functions["new"].parameters:
        return fcurves.new(path, index=index, group_name=group)
    fc = fcurves.new(path, index=index)
    bag = fcurves.data  # the channelbag
    fc.group = bag.groups.get(group) or bag.groups.new(group)
    return fc


def data_path(bone: str, prop: str) -> str:
    return f'pose.bones["{bpy.utils.escape_identifier(bone)}"].{prop}' if bone else prop


def write_keyframes(scene, rec: Recording, keys: list[Key], frames: list[int], action_prefix: str):
    """One new action per object holding LINEAR keyframes of ``keys`` at ``frames``."""
    actions, kept = [], []
    by_object: dict[str, list[Key]] = {}
    for key in keys:
        by_object.setdefault(key[0], []).append(key)
    for ob_name, ob_keys in by_object.items():
        ob = scene.objects[ob_name]
        ad = ob.animation_data or ob.animation_data_create()
        if ad.action is not None:
            ad.action.use_fake_user = True
            kept.append(ad.action.name)
        action = bpy.data.actions.new(f"{action_prefix}{ob_name}")
        ad.action = action
        fcurves = _fcurves(ob, action)
        for key in ob_keys:
            _, bone, prop = key
            values = [s[key] for s in rec.samples]
            group = bone or "Object Transforms"
            for index in range(len(values[0])):
                fc = new_fcurve(fcurves, data_path(bone, prop), index, group)
                fc.keyframe_points.add(len(frames))
                co = [c for f, v in zip(frames, values) for c in (float(f), float(v[index]))]
                fc.keyframe_points.foreach_set("co", co)
                for kp in fc.keyframe_points:
                    kp.interpolation = 'LINEAR'
                fc.update()
        actions.append(action.name)
    return actions, kept


def bake(scene, tree, *, seed: int | None = None, max_steps: int = 0, frame_start: int | None = None,
         frame_step: int = 1) -> BakeResult:
    """Record a greedy episode and key what moved; the live scene is restored, only the actions remain."""
    rec = record_episode(scene, tree, seed=seed, max_steps=max_steps)
    start = scene.frame_start if frame_start is None else frame_start
    frames = [start + i * frame_step for i in range(len(rec.samples))]
    keys = rec.changed_keys()
    actions, kept = write_keyframes(scene, rec, keys, frames, f"DRLA Bake: {tree.name}: ")
    return BakeResult(frames=frames, keys=keys, actions=actions, episode_return=sum(rec.rewards), kept_actions=kept)
