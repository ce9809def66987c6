"""``SceneVectorEnv``: N copies of a tree's environment in one scene, stepped together.

Gymnasium's vector semantics with autoreset in the same step (``drla_core.base.vector_env``): every copy
acts, the scene advances ``frames_per_step`` frames once for all of them (one depsgraph evaluation),
every copy observes; a copy whose episode ended restarts its own objects at once, its last
observation kept in ``infos["final_obs"]`` (where ``infos["_final_obs"]`` is True) for bootstrapping.
Copy ``i`` reset with seed ``s`` is seeded ``s + i``, so it observes exactly what a single
``SceneEnv`` reset with ``s + i`` observes: the copies are independent episodes.

The scene's frame runs on across the copies' episodes (a copy cannot send the others back to the
start frame), so a copy's episode does not start at the scene's start frame: animation that depends on
the frame is not restarted per copy. Physics is the exception (``restarts_together``): the copies of a
rigid-body scene share one rigid-body world, which restarts only as a whole at the start frame, so a
copy whose episode ended is not restarted (it waits, still simulated, its steps not counted) until
``restart`` sends every copy back to the start frame together; only ``physics_ok`` callers (an
evolution's evaluation, which plays rounds of episodes) get such copies. ``close()`` removes every copy.

With two copies or more a step is batched across them wherever it can be (``_Batched``): one read of
every world matrix the sensors, rewards and endings need (``batch.ObjectArrays``); numpy over all copies
for the Transform (location) and Distance sensors, the distance, step-cost and hit rewards and the
Within Distance and Out of Bounds endings; the cameras' shared picture (``camera.CameraAtlas``) drawn,
read back as bytes and converted once for all copies; world-space Move actions computed together. The
rest (rays, properties, velocities, rotations, shots, other actions) goes copy by copy. Every copy's
values are bit-identical to what its own ``SceneEnv`` computes (``tests/blender/test_scene_batch.py``).

What still costs per copy (measured on the 2-core box, see ``bench/copies.py``): Blender's evaluation of
the moved objects on the frame advance (about 6 us per moved object, plus about 100 us per evaluation
with 200 objects in the scene), writing each moved object's location (about 1.6 us: only an RNA write
tells Blender to evaluate it again), restarting the copies that ended (``ObjectState.restore``, and a
second evaluation), and for cameras one draw call per copy (all of a copy's objects at once: about 15 us each
on llvmpipe), llvmpipe's rasterising of the shared picture and the pixels' conversion to the observation.
"""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np

from ...drla_core.base.vector_env import VectorEnv, add_info, copy_seeds
from ..specs import EnvSpec
from . import actuators as _actuators
from .batch import ObjectArrays, world_matrices
from .copies import SceneCopies
from .scene_env import SceneEnv
from .sensors import NonFiniteError, StateBatch
from .snapshot import free_rigid_body_cache

#: The scene's frame goes back to the start frame after this many frames (Blender's frames end at
#: 1,048,574); each copy's episode is unaffected, only frame-driven animation sees the jump.
FRAME_WRAP = 500_000


class SceneVectorEnv(VectorEnv):
    """``num_envs`` copies of ``spec``'s environment in ``scene`` (see the module docstring). With
    ``eval_copy`` one more copy stands aside as ``eval_env``, a plain ``SceneEnv`` that greedy
    evaluations step while the training copies wait."""

    metadata = {"render_modes": [], "autoreset_mode": "same_step"}

    def __init__(self, spec: EnvSpec, scene, num_envs: int | None = None, eval_copy: bool = False,
                 physics_ok: bool = False) -> None:
        self.scene = scene
        self.num_envs = int(num_envs or spec.copies)
        self.copies = SceneCopies(scene, spec, self.num_envs + int(eval_copy), physics_ok=physics_ok)
        #: Rigid-body copies: no copy restarts on its own; ``restart`` restarts them all at the start frame.
        self.restarts_together = self.copies.physics
        try:
            shared: dict = {}  # the training copies' cameras draw one picture (scene.camera.CameraAtlas);
            # the spare copy steps alone while they wait: its camera draws its own picture, not all of theirs
            envs = [SceneEnv(copy_spec, scene, shared if i < self.num_envs else None)
                    for i, copy_spec in enumerate(self.copies.specs)]
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
        self._batched = _Batched(self.envs) if self.num_envs > 1 else None  # one copy: SceneEnv's own step
        self._started = False

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        for env, s in zip(self.envs, copy_seeds(seed, self.num_envs)):
            super(SceneEnv, env).reset(seed=s)  # seeds the copy's np_random (drla_core.base.env.Env.reset)
            env.restart_objects()
        self._to_start_frame()
        self._started = True
        obs = np.stack([env.begin_episode() for env in self.envs])
        if self._batched is not None:
            self._batched.begin(range(self.num_envs))
        return obs, self._mask_infos({})

    def _mask_infos(self, infos: dict[str, Any], final: dict[str, Any] | None = None,
                    ended: Any = ()) -> dict[str, Any]:
        """Each copy's action mask (Action nodes with a condition) into ``infos``, read after the step (and the
        ended copies' restarts); ``final`` gets the ended copies' masks of their last state, read before those."""
        if self.envs[0].mask is None:
            return infos
        if final is not None:
            for i in ended:
                add_info(final, {"action_mask": self.envs[i].mask()}, int(i), self.num_envs)
            return infos
        for i, env in enumerate(self.envs):
            add_info(infos, {"action_mask": env.mask()}, i, self.num_envs)
        return infos

    def restart(self, copies, seeds) -> np.ndarray:
        """Restart ``copies`` (indices) with their own ``seeds`` while the others go on with their episodes: an
        evolution's evaluation plays one individual's episode per copy, each episode with its own seed (a copy
        restarted with seed ``s`` observes what a single ``SceneEnv`` reset with ``s`` observes). Their first
        observations, one row per copy. ``step`` still autoresets a copy whose episode ended; restarting it
        here afterwards replaces that episode."""
        copies = [int(i) for i in copies]
        if self.restarts_together:  # one rigid-body world: every copy restarts, the others play along
            chosen = dict(zip(copies, seeds))
            for i, env in enumerate(self.envs):
                if i in chosen:
                    super(SceneEnv, env).reset(seed=int(chosen[i]))
                env.restart_objects()
            self._to_start_frame()
            self._started = True
            everyone = [env.begin_episode() for env in self.envs]
            if self._batched is not None:
                self._batched.begin(range(self.num_envs))
            return np.stack([everyone[i] for i in copies])
        if not self._started:  # every copy begins (one not restarted here plays along), the frame at the start
            self.reset(seed=0)
        for i, s in zip(copies, seeds):
            super(SceneEnv, self.envs[i]).reset(seed=int(s))
            self.envs[i].restart_objects()
        self._view_layer.update()
        obs = np.stack([self.envs[i].begin_episode() for i in copies])
        if self._batched is not None:
            self._batched.begin(copies)
        return obs

    def _to_start_frame(self) -> None:
        """Every copy at the scene's start frame (the rigid-body world restarts from its objects' places)."""
        if self.restarts_together:
            free_rigid_body_cache(self.scene)
        self._frame = self.scene.frame_start
        self.scene.frame_set(self._frame)

    def _advance(self) -> None:
        for _ in range(self.frames_per_step):
            self._frame += 1
            if self._frame > self.scene.frame_start + FRAME_WRAP:
                self._frame = self.scene.frame_start
            self.scene.frame_set(self._frame)

    def step(self, actions):
        actions = np.asarray(actions)
        if self._batched is None:
            return self._step_each(actions)
        batched = self._batched
        events = batched.act(actions)
        self._advance()
        obs, rewards, terminated = batched.observe(events)
        batched.steps += 1
        truncated = ~terminated & (batched.steps >= self.max_steps)
        done = terminated | truncated
        infos: dict[str, Any] = {}
        for i in batched.fired_copies(events):
            if not done[i]:
                add_info(infos, {"hit": int(events[i]["hit"])}, i, self.num_envs)
        ended = np.flatnonzero(done)
        if ended.size:
            final: dict[str, Any] = {}
            for i in ended:
                if events[i]["fired"]:
                    add_info(final, {"hit": int(events[i]["hit"])}, i, self.num_envs)
            self._mask_infos(infos, final, ended)
            self._autoreset(obs, done, ended, infos, final)
        return obs, rewards, terminated, truncated, self._mask_infos(infos)

    def _step_each(self, actions):
        """``step`` copy by copy with ``SceneEnv.act`` and ``observe`` (one copy: numpy's per-call costs
        outweigh what batching saves)."""
        events = [env.act(a) for env, a in zip(self.envs, actions)]
        self._advance()
        results = [env.observe(ev) for env, ev in zip(self.envs, events)]
        obs = np.stack([r[0] for r in results])
        rewards = np.array([r[1] for r in results], dtype=np.float64)
        terminated = np.array([r[2] for r in results], dtype=bool)
        truncated = np.array([r[3] for r in results], dtype=bool)
        infos: dict[str, Any] = {}
        done = terminated | truncated
        for i, r in enumerate(results):
            if r[4] and not done[i]:
                add_info(infos, {k: v for k, v in r[4].items() if k != "action_mask"}, i, self.num_envs)
        ended = np.flatnonzero(done)
        if ended.size:
            final: dict[str, Any] = {}
            for i in ended:
                add_info(final, results[i][4], i, self.num_envs)  # (its action_mask: of its last state)
            self._autoreset(obs, done, ended, infos, final)
        return obs, rewards, terminated, truncated, self._mask_infos(infos)

    def _autoreset(self, obs: np.ndarray, done: np.ndarray, ended: np.ndarray, infos: dict[str, Any],
                   final: dict[str, Any]) -> None:
        """The ``ended`` copies' last observations and ``final`` infos into ``infos``; then, unless the copies
        restart together (they wait for ``restart``), each restarts at once, its first observation in ``obs``."""
        infos["final_obs"] = np.where(done[:, None], obs, 0).astype(obs.dtype)
        infos["_final_obs"] = done
        infos["final_info"], infos["_final_info"] = final, done.copy()
        if self.restarts_together:
            return
        for i in ended:
            self.envs[i].restart_objects()
        self._view_layer.update()
        for i in ended:
            obs[i] = self.envs[i].begin_episode()
        if self._batched is not None:
            self._batched.begin(ended.tolist())

    def close(self) -> None:
        try:
            for env in [*self.envs, *([self.eval_env] if self.eval_env is not None else [])]:
                env.close()
        finally:
            self.copies.remove()


class _Batched:
    """What ``SceneEnv.act`` and ``SceneEnv.observe`` do, for all the copies at once (see the module
    docstring); ``begin(copies)`` after those copies' ``begin_episode``."""

    def __init__(self, envs: list[SceneEnv]) -> None:
        self.envs = envs
        n = self.n = len(envs)
        first = envs[0]
        self.steps = np.zeros(n, np.int64)
        self.state = StateBatch([env.state for env in envs])
        objects = list(self.state.objects)
        self.rewards = []  # (batch or None, first matrix row, object slots, the copies' terms, node)
        for k, (term, spec) in enumerate(zip(first.rewards, first.spec.rewards)):
            terms = [env.rewards[k] for env in envs]
            objects, part = self._part(objects, term, terms)
            self.rewards.append((*part, spec.node))
        self.dones = []  # (batch or None, first matrix row, object slots, the copies' endings, reward)
        for k, done in enumerate(first.dones):
            dones = [env.dones[k] for env in envs]
            objects, part = self._part(objects, done, dones)
            self.dones.append((*part, done.reward))
        self.arrays = ObjectArrays(objects) if objects else None
        self.moves = None
        if isinstance(first.actuator, _actuators.DiscreteActuator):
            self.moves = _actuators.MoveBatch([env.actuator for env in envs])
            self.batched_actions = np.asarray(self.moves.batched, bool)
            self.fires = [item.kind == 'FIRE' for item in first.actuator.items]

    def _part(self, objects: list, first, items: list) -> tuple[list, tuple]:
        if getattr(first, "batch", None) is None:
            return objects, (None, 0, 0, items)
        start, slots = len(objects), len(first.objects())
        for k in range(slots):
            objects = objects + [item.objects()[k] for item in items]
        return objects, (first.batch(items), start, slots, items)

    def begin(self, copies) -> None:
        for i in copies:
            self.steps[i] = 0
            for batch, *_ in (*self.rewards, *self.dones):
                if batch is not None:
                    batch.begin(i)

    def act(self, actions: np.ndarray) -> list[dict]:
        events = [_actuators.NO_EVENT] * self.n
        if self.moves is None:
            return [env.act(a) for env, a in zip(self.envs, actions)]
        actions = actions.astype(np.intp, copy=False)
        here = self.batched_actions[actions]
        # shots first: a ray cast evaluates the scene when anything changed since the last evaluation, so
        # shooting before any copy moves spares an evaluation per shot (a copy's shot sees only its own copy)
        for i in sorted(np.flatnonzero(~here).tolist(), key=lambda i: not self.fires[actions[i]]):
            events[i] = self.envs[i].act(actions[i])
        copies = np.flatnonzero(here)
        self.moves.apply(actions[copies], copies)
        return events

    @staticmethod
    def fired_copies(events: list[dict]) -> list[int]:
        return [i for i, ev in enumerate(events) if ev["fired"]]

    def observe(self, events: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = self.n
        mats = world_matrices(self.arrays.read()) if self.arrays is not None else None

        def slots(start, count):
            return [mats[start + k * n:start + (k + 1) * n] for k in range(count)]

        obs = self.state.read(mats)
        fired = np.zeros(n, bool)
        hit = np.zeros(n, bool)
        for i in self.fired_copies(events):
            fired[i], hit[i] = True, events[i]["hit"]
        reward = np.zeros(n)
        for batch, start, count, terms, node in self.rewards:
            if batch is not None:
                values = batch(slots(start, count), fired, hit)
            else:
                values = np.array([float(term(ev)) for term, ev in zip(terms, events)])
            reward = reward + values
            if not np.isfinite(values).all():
                raise NonFiniteError(f"Reward node '{node}' gave a value that is not a finite number: "
                                     "check the property or objects it reads")
        terminated = np.zeros(n, bool)
        for batch, start, count, dones, value in self.dones:
            if batch is not None:
                cond = batch(slots(start, count))
            else:
                cond = np.array([bool(done()) for done in dones])
            terminated |= cond
            reward = np.where(cond, reward + value, reward)
        return obs, reward, terminated
