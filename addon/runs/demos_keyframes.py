"""Record a demonstration from keyframes: step through the scene's frame range as the tree's environment would
(``frames_per_step`` frames a step), read the observations, rewards and endings as in training, and infer each
step's action from what the keyframed objects (and bones) did between two steps.

The inference compares effects. At the step's first frame the touched objects' state (location, rotation, scale,
custom properties, bone rotations and every RNA path the actions write) is one vector; the keyframes move it to
another by the step's last frame: the keyframed change ``D``. Each action is then tried once on the scene at the
step's first frame, as the environment would do it, its change ``E_a`` read, and the scene put back:

* discrete actions: the action whose change is nearest to ``D``; the step is *explained* when the distance is
  within ``tolerance`` (absolute, plus ``tolerance`` times the size of ``D``). Equal changes (a Fire and a Wait
  both move nothing) go to the first of them.
* continuous actions: each dimension's change at amount 1 is a column of ``E``; the amounts are the least-squares
  solution of ``E u = D``, clipped to [-1, 1]; explained when the residual is within the tolerance.

A shot (Fire) moves nothing, so it cannot be seen: keyframe the scene's ``drla_action`` custom property (an integer,
constant interpolation) to an action's number (1 = the first) on the steps it should be taken, 0 elsewhere.

The animation is what moves the objects here; for training, mute it (the agent's actions should move them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...drla_core.base.spaces import Discrete
from ...drla_core.io.demos import Demonstration, save_demo
from ..scene.actuators import NO_EVENT
from ..scene.snapshot import ObjectState, capture_path, restore_path
from ..specs import MotorsSpec
from ..tree.compiler import compile_tree
from . import build

#: A scene custom property (keyframed, constant) naming the action to take at a frame (1 = the first; 0: infer).
ACTION_PROPERTY = "drla_action"

__all__ = ["ACTION_PROPERTY", "KeyframeResult", "record_keyframes", "record_keyframes_to_file", "default_demo_path"]


@dataclass
class KeyframeResult:
    """The recorded demonstration and how well the keyframes are explained by the tree's actions."""

    demo: Demonstration
    explained: float
    """Fraction of steps whose keyframed change an action explains within the tolerance."""
    errors: list[float] = field(default_factory=list)
    """Per step: the distance between the keyframed change and the chosen action's change."""


def _numbers(value: Any) -> list[float]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    if isinstance(value, (tuple, list)):
        return [float(v) for v in value if isinstance(v, (int, float))]
    try:
        return [float(v) for v in value]
    except TypeError:
        return []


def _state_vector(env) -> np.ndarray:
    """What the actions can change, as one vector (the objects' transforms, numeric custom properties, bone
    rotations, written RNA paths)."""
    out: list[float] = []
    for ob, _ in env.initial:
        out += list(ob.location) + list(ob.rotation_euler) + list(ob.scale)
        for key in sorted(k for k in ob.keys() if not k.startswith("_")):
            out += _numbers(ob[key])
        if ob.pose is not None:
            for bone in ob.pose.bones:
                out += list(bone.rotation_euler) + list(bone.rotation_quaternion) + list(bone.location)
    for ob, path, _ in env.initial_paths:
        out += _numbers(capture_path(ob, path))
    return np.asarray(out, dtype=np.float64)


def _try_action(env, action: Any, base: np.ndarray) -> np.ndarray:
    """The change ``action`` makes to the state vector at the current frame; the scene is put back afterwards."""
    saved = [(ob, ObjectState(ob)) for ob, _ in env.initial]
    paths = [(ob, path, capture_path(ob, path)) for ob, path, _ in env.initial_paths]
    scene_props = {k: env.scene[k] for k in env.scene.keys() if isinstance(env.scene[k], (int, float))}
    try:
        if isinstance(env.action_space, Discrete) and env.actuator.items[int(action)].kind == "FIRE":
            return np.zeros_like(base)  # a shot moves nothing the keyframes could show
        env.actuator.apply(action, env.np_random)
        return _state_vector(env) - base
    finally:
        for ob, state in saved:
            state.restore(ob)
        for ob, path, value in paths:
            restore_path(ob, path, value)
        for k, v in scene_props.items():
            env.scene[k] = v


def _infer(env, change: np.ndarray, base: np.ndarray, tolerance: float) -> tuple[Any, float, bool]:
    """The action explaining ``change`` best, its distance, and whether that is within the tolerance."""
    limit = tolerance + tolerance * float(np.linalg.norm(change))
    if isinstance(env.action_space, Discrete):
        dists = [float(np.linalg.norm(change - _try_action(env, a, base))) for a in range(env.action_space.n)]
        best = int(np.argmin(dists))  # (the first of equals)
        return best, dists[best], dists[best] <= limit
    dims = int(np.prod(env.action_space.shape))
    zero = _try_action(env, np.zeros(dims, dtype=np.float32), base)
    columns = []
    for j in range(dims):
        unit = np.zeros(dims, dtype=np.float32)
        unit[j] = 1.0
        columns.append(_try_action(env, unit, base) - zero)
    effects = np.stack(columns, axis=1)
    amounts, *_ = np.linalg.lstsq(effects, change - zero, rcond=None)
    amounts = np.clip(amounts, -1.0, 1.0).astype(np.float32)
    err = float(np.linalg.norm(change - zero - effects @ amounts))
    return amounts, err, err <= limit


def _forced_action(scene, env) -> int | None:
    """The scene's ``drla_action`` custom property at the current frame: an action's number (1 = the first, as
    the recording keys list them) to take instead of inferring one; 0 or absent: infer."""
    value = scene.get(ACTION_PROPERTY)
    if not isinstance(env.action_space, Discrete) or not isinstance(value, (int, float)) or value < 1:
        return None
    number = int(round(value))
    if number > env.action_space.n:
        raise ValueError(f"the scene's {ACTION_PROPERTY} is {number} at frame {scene.frame_current}, but the tree has "
                         f"{env.action_space.n} actions")
    return number - 1


def record_keyframes(tree, scene, *, tolerance: float = 0.05, frame_start: int | None = None,
                     frame_end: int | None = None, source: dict[str, str] | None = None) -> KeyframeResult:
    """Step the keyframed ``scene`` through its frame range (or ``frame_start`` .. ``frame_end``) as ``tree``'s
    environment would and infer the actions (see the module docstring). The scene is restored afterwards.

    One episode: it ends where the tree's endings end it, at its step limit, or at the last frame (truncated).
    """
    compiled = compile_tree(tree, scene)
    if compiled.env is None or compiled.team:
        raise ValueError(f"tree {tree.name!r} has no one-agent environment to record a demonstration in")
    start = scene.frame_start if frame_start is None else int(frame_start)
    end = scene.frame_end if frame_end is None else int(frame_end)
    if isinstance(compiled.env.continuous, MotorsSpec) and any(
            m.kind == 'MOTOR' for m in compiled.env.continuous.motors):
        raise ValueError("rigid-body motors cannot be read from keyframes (their effect is the simulation's)")
    with build.one_scene_env(compiled, scene) as env:
        if env.random_objects:  # the keyframed scene is the episode: nothing is placed at random
            env.random_objects = []
        env.frame_start = start
        obs, _ = env.reset(seed=0)
        rows: dict[str, list] = {k: [] for k in ("obs", "actions", "rewards", "terminated", "truncated")}
        errors: list[float] = []
        explained = 0
        frame = start
        while frame + env.frames_per_step <= end:
            scene.frame_set(frame)
            base = _state_vector(env)
            scene.frame_set(frame + env.frames_per_step)
            change = _state_vector(env) - base
            scene.frame_set(frame)
            forced = _forced_action(scene, env)
            if forced is not None:  # the scene's keyframed drla_action names it (a shot, which moves nothing)
                action, err, ok = forced, 0.0, True
            else:
                action, err, ok = _infer(env, change, base, tolerance)
            for _ in range(env.frames_per_step):  # the keyframes move the objects, not the action
                frame += 1
                env._frame = frame
                scene.frame_set(frame)
            next_obs, reward, terminated, truncated, _ = env.observe(dict(NO_EVENT))
            last = frame + env.frames_per_step > end
            for k, v in zip(rows, (obs, action, reward, terminated, truncated or (last and not terminated))):
                rows[k].append(v)
            errors.append(err)
            explained += ok
            obs = next_obs
            if terminated or truncated:
                break
        if not rows["obs"]:
            raise ValueError(f"frames {start}..{end} hold no step of {env.frames_per_step} frames")
        demo = Demonstration(env.observation_space, env.action_space, np.asarray(rows["obs"]), rows["actions"],
                             rows["rewards"], rows["terminated"], rows["truncated"], source=dict(source or {}),
                             recorded_by="keyframes",
                             meta={"explained": explained / len(errors), "tolerance": tolerance,
                                   "frames": [start, frame], "frames_per_step": env.frames_per_step})
    return KeyframeResult(demo, explained / len(errors), errors)


def default_demo_path(blend_path: str, tree_name: str, kind: str) -> Path:
    """``<blend>_<tree>_<kind>.npz`` beside the .blend (``kind``: keyframes or keyboard)."""
    blend = Path(blend_path) if blend_path else Path.cwd() / "untitled.blend"
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in tree_name)
    return blend.with_name(f"{blend.stem}_{safe}_{kind}.npz")


def record_keyframes_to_file(tree, scene, out: str | Path | None = None, blend_path: str = "",
                             tolerance: float = 0.05) -> tuple[Path, KeyframeResult]:
    """``record_keyframes`` and save the demonstration (default: beside the .blend); returns the path too."""
    source = {"blend": Path(blend_path).name if blend_path else "", "tree": tree.name}
    result = record_keyframes(tree, scene, tolerance=tolerance, source=source)
    path = Path(out) if out else default_demo_path(blend_path, tree.name, "keyframes")
    return save_demo(path, result.demo), result
