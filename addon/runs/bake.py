"""Bake: a trained agent's behaviour becomes keyframes, so an animator keeps the result.

* ``bake(scene, tree)``: one greedy episode is played on a snapshot of the scene, recording after
  every step the transforms of every object (location, rotation in its rotation mode) and pose bone;
  an active rigid body's are where the simulation put it (its world matrix: physics never writes its
  channels). Its keys play back once the body is no longer simulated (Kinematic, or Rigid Body off).
  Whatever the agent changed becomes F-curves of a new action per object ("DRLA Bake: ..."),
  written after the scene has been restored: only the new actions remain.
* ``bake_target(ob, target, solver, ...)``: Learned IK keys the joint rotations that make the tip
  follow the target's animation over a frame range, in a new action.

An object's previous action is kept (fake user), never deleted.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np

from ...drla_core import kinematics as kin
from ...drla_core.io.model_io import check_fits
from ..scene.armature import capture_pose, restore_pose
from ..scene.keyframes import fcurves_for, rotation_path, rotation_values, write_channel
from ..scene.masks import greedy_action
from ..scene.snapshot import restored_scene
from ..tree.compiler import compile_tree
from . import model_store
from .build import build_env
from .play import check_team_fits

#: (object name, bone name or "", property) -> one recorded vector per frame
Key = tuple[str, str, str]


@dataclass
class Recording:
    """What a greedy episode did: per-step transform samples and the rewards."""

    samples: list[dict[Key, tuple[float, ...]]] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    #: A multi-agent tree's return per agent (``rewards`` holds their sum per step)
    returns: dict[str, float] = field(default_factory=dict)

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
    returns: dict[str, float] = field(default_factory=dict)  # per agent, for a multi-agent tree

    def summary(self) -> str:
        if not self.keys:
            return f"Baked {len(self.frames)} frames, but the agent moved nothing ({self._return_text()})"
        targets = sorted({f"{o}:{b}" if b else o for o, b, _ in self.keys})
        text = (f"Baked {len(self.frames)} frames (frames {self.frames[0]}-{self.frames[-1]}) onto "
                f"{', '.join(targets)}; " + self._return_text())
        if self.kept_actions:
            text += f"; previous actions kept: {', '.join(self.kept_actions)}"
        return text

    def _return_text(self) -> str:
        if self.returns:
            return "returns " + ", ".join(f"{name} {value:.2f}" for name, value in self.returns.items())
        return f"return {self.episode_return:.2f}"


# --------------------------------------------------------------------------- recording
def _simulated(ob) -> bool:
    """An active, unparented rigid body: the simulation, not its channels, places it."""
    rb = ob.rigid_body
    return rb is not None and rb.type == 'ACTIVE' and not rb.kinematic and ob.parent is None


def _rotation_in_mode(ob, q) -> tuple[float, ...]:
    """Quaternion ``q`` as the values of ``ob``'s rotation mode (an Euler near its current one)."""
    if ob.rotation_mode == 'QUATERNION':
        return tuple(q)
    if ob.rotation_mode == 'AXIS_ANGLE':
        axis, angle = q.to_axis_angle()
        return (angle, *axis)
    return tuple(q.to_euler(ob.rotation_mode, ob.rotation_euler))


def capture(scene) -> dict[Key, tuple[float, ...]]:
    """The transform channels of every object and pose bone in ``scene``."""
    out: dict[Key, tuple[float, ...]] = {}
    for ob in scene.objects:
        rot = rotation_path(ob.rotation_mode)
        if _simulated(ob):  # physics moves only its matrix_world: key where the simulation put it
            loc, q, _scale = ob.matrix_world.decompose()
            out[(ob.name, "", "location")] = tuple(loc)
            out[(ob.name, "", rot)] = _rotation_in_mode(ob, q)
        else:
            out[(ob.name, "", "location")] = tuple(ob.location)
            out[(ob.name, "", rot)] = tuple(getattr(ob, rot))
        if ob.pose is not None:
            for pb in ob.pose.bones:
                out[(ob.name, pb.name, "location")] = tuple(pb.location)
                rot = rotation_path(pb.rotation_mode)
                out[(ob.name, pb.name, rot)] = tuple(getattr(pb, rot))
    return out


def record_episode(scene, tree, model=None, *, seed: int | None = None, max_steps: int = 0) -> Recording:
    """Play the greedy policy for one episode (or ``max_steps``) on a snapshot of ``scene``; restore it.

    A multi-agent tree plays every named agent at once, each from its stored model (or from ``model``: a
    dict name -> model); the rewards recorded are their sum per step, the actions a dict per step."""
    compiled = compile_tree(tree, scene)
    if compiled.team:
        if model is None:
            model = {m.name: model_store.load_stored_model(tree, m.name) for m in compiled.team}
    elif model is None:
        model = model_store.load_stored_model(tree)
    if seed is None:
        seed = compiled.trainer.seed if compiled.trainer is not None else 0
    rec = Recording()
    limit = max_steps if max_steps > 0 else 100_000
    with restored_scene(scene):
        env = build_env(compiled, scene)
        try:
            if compiled.team:
                check_team_fits(model, env)
            else:
                check_fits(model, env.observation_space, env.action_space)
            obs, info = env.reset(seed=seed)
            if not compiled.team:
                getattr(model, "reset", lambda: None)()  # (a recurrent network starts afresh)
            rec.samples.append(capture(scene))
            for _ in range(limit):
                if compiled.team:
                    if not env.agents:  # an episode ended and max_steps asks for more: the next one
                        obs, _ = env.reset()
                    action = {name: model[name].act(obs[name]) for name in env.agents}
                    obs, rewards, _terms, _truncs, _info = env.step(action)
                    reward, ended = sum(float(r) for r in rewards.values()), not env.agents
                    for name, r in rewards.items():
                        rec.returns[name] = rec.returns.get(name, 0.0) + float(r)
                else:
                    action = greedy_action(model, obs, info)  # among the enabled actions (an action mask)
                    obs, reward, terminated, truncated, info = env.step(action)
                    ended = terminated or truncated
                rec.actions.append(action)
                rec.rewards.append(float(reward))
                rec.samples.append(capture(scene))
                if max_steps <= 0 and ended:
                    break
        finally:
            with contextlib.suppress(Exception):
                env.close()
    return rec


# --------------------------------------------------------------------------- writing keyframes
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
        fcurves = fcurves_for(ob, action)
        for key in ob_keys:
            _, bone, prop = key
            write_channel(fcurves, bone, prop, frames, [s[key] for s in rec.samples], bone or "Object Transforms")
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
    return BakeResult(frames=frames, keys=keys, actions=actions, episode_return=sum(rec.rewards), kept_actions=kept,
                      returns=rec.returns)


# --------------------------------------------------------------------------- Learned IK
def bake_target(ob: bpy.types.Object, target: bpy.types.Object, solver: Any, frame_start: int, frame_end: int,
                iters: int = 3, scene: bpy.types.Scene | None = None, tree_name: str = "") -> int:
    """Key the chain's rotations so the tip follows ``target`` over the frame range, in a NEW action.

    The target's (and armature's) world placement is read frame by frame, then all frames are
    solved in one batch and written as F-curves of a new action "DRLA Bake: <tree>: <armature>"
    assigned to ``ob``, each bone keyed in its own rotation mode (modes are left as they are). The
    previous action stays (fake user) so the user can switch back. The scene's frame and the pose
    are restored whatever happens; on an error the new action is removed and the old one reassigned.
    Returns the number of frames keyed.
    """
    scene = scene if scene is not None else bpy.context.scene
    was_frame, was_sub = scene.frame_current, scene.frame_subframe
    pose = capture_pose(ob)
    ad_existed = ob.animation_data is not None
    old_action = ob.animation_data.action if ad_existed else None
    old_slot = getattr(ob.animation_data, "action_slot", None) if ad_existed else None
    old_fake = old_action.use_fake_user if old_action is not None else False
    new_action = None
    ok = False
    try:
        frames = list(range(int(frame_start), int(frame_end) + 1))
        if not frames:
            raise ValueError(f"bake: empty frame range {frame_start}-{frame_end}")
        local = []
        for f in frames:
            scene.frame_set(f)
            where = np.append(np.array(target.matrix_world.translation, dtype=np.float64), 1.0)
            local.append((np.linalg.inv(np.array(ob.matrix_world, dtype=np.float64)) @ where)[:3])
        arm = solver.arm
        angles = solver.solve_refined(np.asarray(local), iters=iters)
        quats = kin.angles_to_quaternions(arm, angles)  # (F, bones, 4)
        name = f"DRLA Bake: {tree_name}: {ob.name}" if tree_name else f"DRLA Bake: {ob.name}"
        new_action = bpy.data.actions.new(name)
        ad = ob.animation_data or ob.animation_data_create()
        if old_action is not None:
            old_action.use_fake_user = True  # kept for the user to switch back to
        ad.action = new_action
        fcurves = fcurves_for(ob, new_action)
        for b, bone in enumerate(arm.bones):
            pb = ob.pose.bones[bone]
            mode = pb.rotation_mode
            start = (tuple(pb.rotation_quaternion), tuple(pb.rotation_euler))
            write_channel(fcurves, bone, rotation_path(mode), frames, rotation_values(quats[:, b], mode, start), bone)
        ok = True
    finally:
        if not ok:
            if new_action is not None:
                if ob.animation_data is not None:
                    ob.animation_data.action = old_action
                    if old_action is not None and old_slot is not None and hasattr(ob.animation_data, "action_slot"):
                        with contextlib.suppress(Exception):
                            ob.animation_data.action_slot = old_slot
                bpy.data.actions.remove(new_action)
            if old_action is not None:
                old_action.use_fake_user = old_fake
            if not ad_existed and ob.animation_data is not None:
                ob.animation_data_clear()
            scene.frame_set(was_frame, subframe=was_sub)
            restore_pose(ob, pose)  # exactly the pose it had, unkeyed tweaks included
        else:
            restore_pose(ob, pose)
            scene.frame_set(was_frame, subframe=was_sub)  # the new action now drives the bones
    return len(frames)
