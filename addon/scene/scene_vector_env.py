"""``SceneVectorEnv``: N copies of a tree's environment in one scene, stepped together.

Gymnasium's vector semantics with autoreset in the same step (``drla_core.vector_env``): every copy
acts, the scene advances ``frames_per_step`` frames once for all of them (one depsgraph evaluation),
every copy observes; a copy whose episode ended restarts its own objects at once, its last
observation kept in ``infos["final_obs"]`` (where ``infos["_final_obs"]`` is True) for bootstrapping.
Copy ``i`` reset with seed ``s`` is seeded ``s + i``, so it observes exactly what a single
``SceneEnv`` reset with ``s + i`` observes: the copies are independent episodes.

The scene's frame runs on across the copies' episodes (a copy cannot send the others back to the
start frame), so a copy's episode does not start at the scene's start frame: animation and physics
that depend on the frame are not restarted per copy (``SceneCopies`` refuses rigid bodies).
``close()`` removes every copy.
"""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np

from ...drla_core.spaces import Box
from ..specs import EnvSpec
from .copies import SceneCopies
from .scene_env import SceneEnv

#: The scene's frame goes back to the start frame after this many frames (Blender's frames end at
#: 1,048,574); each copy's episode is unaffected, only frame-driven animation sees the jump.
FRAME_WRAP = 500_000


class SceneVectorEnv:
    """``num_envs`` copies of ``spec``'s environment in ``scene`` (see the module docstring)."""

    metadata = {"render_modes": [], "autoreset_mode": "same_step"}

    def __init__(self, spec: EnvSpec, scene, num_envs: int | None = None) -> None:
        self.scene = scene
        self.num_envs = int(num_envs or spec.copies)
        self.copies = SceneCopies(scene, spec, self.num_envs)
        try:
            self.envs = [SceneEnv(copy_spec, scene) for copy_spec in self.copies.specs]
        except BaseException:
            self.copies.remove()
            raise
        first = self.envs[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        space = first.observation_space
        self.observation_space = Box(np.broadcast_to(space.low, (self.num_envs, *space.shape)),
                                     np.broadcast_to(space.high, (self.num_envs, *space.shape)),
                                     (self.num_envs, *space.shape))
        self.action_space = first.action_space  # one per copy: ``step`` takes an array of num_envs of them
        self.task_metric = first.task_metric
        self.frames_per_step = first.frames_per_step
        self.max_steps = first.max_steps
        self.spacing = self.copies.spacing
        self._frame = scene.frame_start
        self._view_layer = bpy.context.view_layer if bpy.context.scene == scene else scene.view_layers[0]

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        seeds = seed if isinstance(seed, (list, tuple)) else [
            None if seed is None else int(seed) + i for i in range(self.num_envs)]
        for env, s in zip(self.envs, seeds):
            super(SceneEnv, env).reset(seed=s)  # seeds the copy's np_random (drla_core.env.Env.reset)
            env.restart_objects()
        self._frame = self.scene.frame_start
        self.scene.frame_set(self._frame)
        obs = np.stack([env.begin_episode() for env in self.envs])
        return obs, {}

    def step(self, actions):
        actions = np.asarray(actions)
        events = [env.act(a) for env, a in zip(self.envs, actions)]
        for _ in range(self.frames_per_step):
            self._frame += 1
            if self._frame > self.scene.frame_start + FRAME_WRAP:
                self._frame = self.scene.frame_start
            self.scene.frame_set(self._frame)
        results = [env.observe(ev) for env, ev in zip(self.envs, events)]
        obs = np.stack([r[0] for r in results])
        rewards = np.array([r[1] for r in results], dtype=np.float64)
        terminated = np.array([r[2] for r in results], dtype=bool)
        truncated = np.array([r[3] for r in results], dtype=bool)
        infos: dict[str, Any] = {}
        hits = [r[4].get("hit") for r in results]
        if any(h is not None for h in hits):
            infos["hit"] = np.array([0 if h is None else h for h in hits], dtype=np.int64)
            infos["_hit"] = np.array([h is not None for h in hits], dtype=bool)
        ended = np.flatnonzero(terminated | truncated)
        if ended.size:
            infos["final_obs"] = obs.copy()
            infos["_final_obs"] = terminated | truncated
            infos["final_info"] = [results[i][4] for i in range(self.num_envs)]
            for i in ended:
                self.envs[i].restart_objects()
            self._view_layer.update()
            for i in ended:
                obs[i] = self.envs[i].begin_episode()
        return obs, rewards, terminated, truncated, infos

    def close(self) -> None:
        try:
            for env in self.envs:
                env.close()
        finally:
            self.copies.remove()
