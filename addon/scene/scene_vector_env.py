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

from ...drla_core.vector_env import VectorEnv, add_info, copy_seeds
from ..specs import EnvSpec
from .copies import SceneCopies
from .scene_env import SceneEnv

#: The scene's frame goes back to the start frame after this many frames (Blender's frames end at
#: 1,048,574); each copy's episode is unaffected, only frame-driven animation sees the jump.
FRAME_WRAP = 500_000


class SceneVectorEnv(VectorEnv):
    """``num_envs`` copies of ``spec``'s environment in ``scene`` (see the module docstring). With
    ``eval_copy`` one more copy stands aside as ``eval_env``, a plain ``SceneEnv`` that greedy
    evaluations step while the training copies wait."""

    metadata = {"render_modes": [], "autoreset_mode": "same_step"}

    def __init__(self, spec: EnvSpec, scene, num_envs: int | None = None, eval_copy: bool = False) -> None:
        self.scene = scene
        self.num_envs = int(num_envs or spec.copies)
        self.copies = SceneCopies(scene, spec, self.num_envs + int(eval_copy))
        try:
            shared: dict = {}  # the copies' cameras draw one picture (scene.camera.CameraAtlas)
            envs = [SceneEnv(copy_spec, scene, shared) for copy_spec in self.copies.specs]
        except BaseException:
            self.copies.remove()
            raise
        self.envs = envs[:self.num_envs]
        self.eval_env = envs[-1] if eval_copy else None
        first = self.envs[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self._set_spaces()
        self.task_metric = first.task_metric
        self.frames_per_step = first.frames_per_step
        self.max_steps = first.max_steps
        self.spacing = self.copies.spacing
        self._frame = scene.frame_start
        self._view_layer = bpy.context.view_layer if bpy.context.scene == scene else scene.view_layers[0]

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        for env, s in zip(self.envs, copy_seeds(seed, self.num_envs)):
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
        ended = np.flatnonzero(terminated | truncated)
        for i, r in enumerate(results):
            if r[4] and not (terminated[i] or truncated[i]):
                add_info(infos, r[4], i, self.num_envs)
        if ended.size:
            infos["final_obs"] = np.where((terminated | truncated)[:, None], obs, 0).astype(obs.dtype)
            infos["_final_obs"] = terminated | truncated
            final: dict[str, Any] = {}
            for i in ended:
                add_info(final, results[i][4], i, self.num_envs)
            infos["final_info"], infos["_final_info"] = final, terminated | truncated
            for i in ended:
                self.envs[i].restart_objects()
            self._view_layer.update()
            for i in ended:
                obs[i] = self.envs[i].begin_episode()
        return obs, rewards, terminated, truncated, infos

    def close(self) -> None:
        try:
            for env in [*self.envs, *([self.eval_env] if self.eval_env is not None else [])]:
                env.close()
        finally:
            self.copies.remove()
