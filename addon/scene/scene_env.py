"""``SceneEnv``: a Gymnasium-exact environment over the live Blender scene.

One step: apply the action (``actuators``), advance the scene ``frames_per_step`` frames
with ``scene.frame_set`` (animation, drivers and rigid-body physics are evaluated), read the
state (``sensors``), sum the reward terms, and check the endings. ``reset`` puts every object
the actions touch back into the state it had when the env was built (with every RNA property
path the actions write, such as ``data.energy``), jumps to the scene's
start frame, and places the randomised objects with ``self.np_random``.

Observation: ``Box(low, high, (state size,))``, each value's range as its sensor knows it (pixels and
rays in 0..1, distances from 0, quaternions in -1..1, the rest unbounded) times its Scale, within the
State's Clip; action: ``Discrete(n, names)``, ``Box(-1, 1, (3 x bones,))`` for continuous bone
rotations or ``Box(-1, 1, (items,))`` for continuous Action Sets: rigid-body motors (a reset then restarts
the simulation from the start frame: bit-identical episodes) and Actions with Amount. With a Fire action,
``info["hit"]`` is 1/0 on every shot and ``task_metric == "hit"``.

The env changes the scene while it runs; wrap it in ``snapshot.restored_scene(scene)`` (as
``runs`` do) to get the user's scene back afterwards.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...drla_core.base.env import Env
from ...drla_core.base.spaces import Box, Discrete
from . import actuators, masks, sensors
from .rewards import DONES, REWARDS
from ..specs import MotorsSpec
from .snapshot import (ObjectState, active_snapshots, capture_path, free_rigid_body_cache, prepare_for_training,
                       restore_path)


# --------------------------------------------------------------------------- the environment

class SceneEnv(Env):
    """The compiled tree's environment over ``scene`` (see the module docstring)."""

    metadata = {"render_modes": []}

    def __init__(self, spec, scene, shared: dict | None = None):
        self.spec, self.scene = spec, scene
        self.state = sensors.StateReader(spec.state, scene, shared)
        self.observation_space = Box(self.state.low, self.state.high, (self.state.size,))
        self.motors = isinstance(spec.continuous, MotorsSpec)
        if self.motors:
            self.actuator = actuators.MotorActuator(spec.continuous, scene)
            self.action_space = Box(-1.0, 1.0, (spec.continuous.size,))
        elif spec.continuous is not None:
            self.actuator = actuators.BoneActuator(spec.continuous, scene)
            self.action_space = Box(-1.0, 1.0, (spec.continuous.size,))
        else:
            self.actuator = actuators.DiscreteActuator(spec.actions, scene)
            self.action_space = Discrete(len(spec.actions), spec.action_names)
        # Action nodes with a condition: info["action_mask"] on reset and every step (None: no mask)
        self.mask = None if self.motors or spec.continuous is not None else masks.action_mask(spec.actions, scene)
        self.task_metric = "hit" if spec.has_fire else None
        self.rewards = [REWARDS[r.kind](r, scene) for r in spec.rewards]
        self.dones = [DONES[d.kind](d, scene) for d in spec.dones]
        self.random_objects = [scene.objects[n] for n in spec.random_objects]
        self.frames_per_step = int(spec.frames_per_step)
        self.max_steps = int(spec.max_steps)
        self.frame_start = scene.frame_start
        self.initial = [(scene.objects[n], ObjectState(scene.objects[n])) for n in self._touched_objects()]
        self.initial_scene_props = {k: scene[k] for k in scene.keys() if isinstance(scene[k], (int, float))}
        # RNA paths the actions write (``data.energy``, ``color[0]``): custom properties of the
        # touched objects are in ``self.initial`` already; these are put back on every reset, and
        # handed to the open scene snapshots so the user's scene gets them back after the run.
        self.initial_paths = [(scene.objects[n], p, capture_path(scene.objects[n], p))
                              for n, p in self._written_paths()]
        for snap in active_snapshots(scene):
            for ob, path, value in self.initial_paths:
                snap.track(ob.name, path, value)
        prepare_for_training(scene)
        self._frame = self.frame_start
        self._steps = 0
        self._needs_reset = True
        self._log: tuple[dict, list] | None = None  # this episode's start and actions (``episode_log``)

    def _touched_objects(self) -> list[str]:
        names: list[str] = list(self.spec.random_objects)
        for a in self.spec.actions:
            names += [a.obj, a.options.get("target", ""), a.options.get("score_obj", "")]
        for r in self.spec.rewards:  # a reward that changes objects (Collect's items)
            names += r.options.get("touches", [])
        if self.motors:
            names += [m.obj for m in self.spec.continuous.motors]
        elif self.spec.continuous is not None:
            names.append(self.spec.continuous.armature)
        return [n for n in dict.fromkeys(names) if n]

    def _written_paths(self) -> list[tuple[str, str]]:
        """(object, RNA path) of every property the actions write, other than an object's own
        custom properties."""
        out = []
        for a in self.spec.actions:
            if a.kind in {'SET_PROPERTY', 'ADD_PROPERTY'} and a.obj and a.path:
                out.append((a.obj, a.path))
            elif a.kind == 'FIRE' and a.options.get("score_obj") and a.options.get("score_path"):
                out.append((a.options["score_obj"], a.options["score_path"]))
        if isinstance(self.spec.continuous, MotorsSpec):
            out += [(m.obj, m.path) for m in self.spec.continuous.motors if m.obj and m.path]
        return [(n, p) for n, p in dict.fromkeys(out) if not (p.startswith('["') and p.count('"') == 2)]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        return self._restart(), self.mask_info({})

    def _restart(self):
        self._log = (self.np_random.bit_generator.state, [])
        self.restart_objects()
        self._frame = self.frame_start
        self.scene.frame_set(self._frame)
        return self.begin_episode()

    # A scene cannot be saved mid-episode, but a reset restarts it bit for bit (the objects as built, the
    # simulation from the start frame): a checkpoint keeps how the episode began and its actions, and a resumed
    # run plays them again (``drla_core.rl.checkpoint``).
    def episode_log(self) -> tuple[dict, list] | None:
        """The generator's state when the current episode began (after ``reset``'s seeding) and the actions taken
        since (None before the first reset)."""
        return self._log

    def replay_episode(self, rng_state: dict, actions: Any):
        """Begin an episode from ``rng_state`` and take ``actions``: the episode ``episode_log`` logged, played
        again; returns its last observation."""
        self.np_random.bit_generator.state = rng_state
        obs = self._restart()
        for action in actions:
            obs = self.step(action)[0]
        return obs

    def mask_info(self, info: dict) -> dict:
        """``info`` with ``"action_mask"`` (the enabled actions now) when an action has a condition."""
        if self.mask is not None:
            info["action_mask"] = self.mask()
        return info

    # The parts of reset and step, for scene copies stepped together (``SceneVectorEnv``): each copy
    # acts, the scene advances once for all, each copy observes; a copy that ended restarts its own
    # objects while the scene's frame runs on.
    def restart_objects(self) -> None:
        """Put the objects back as they were when the env was built and place the random ones."""
        for ob, state in self.initial:
            state.restore(ob)
        for ob, path, value in self.initial_paths:
            restore_path(ob, path, value)
        for k, v in self.initial_scene_props.items():
            self.scene[k] = v
        if self.motors:  # the simulation restarts from the start frame with the motors' new velocities
            free_rigid_body_cache(self.scene)
        if self.random_objects:
            actuators.randomize_locations(self.random_objects, self.np_random, self.spec.random_min,
                                          self.spec.random_max, self.spec.random_grid)

    def begin_episode(self):
        """After ``restart_objects`` and a scene evaluation: reset the reward terms, read the first state."""
        self._steps = 0
        self._needs_reset = False
        for term in self.rewards:
            term.reset()
        for done in self.dones:
            done.reset()
        self.state.begin()
        return self.state.read()

    def step(self, action):
        events = self.act(action)
        for _ in range(self.frames_per_step):
            self._frame += 1
            self.scene.frame_set(self._frame)
        return self.observe(events)

    def act(self, action) -> dict:
        """Apply ``action`` to the scene (nothing is evaluated yet); returns what it did (shots, hits)."""
        if self._needs_reset:
            raise RuntimeError("SceneEnv.step() called before reset() or after the episode ended")
        if self._log is not None:
            self._log[1].append(np.array(action, copy=True))
        return self.actuator.apply(action, self.np_random)

    def observe(self, events: dict):
        """After the scene advanced: the state, the reward and whether the episode ended (a step's 5-tuple)."""
        obs = self.state.read()
        values = [term(events) for term in self.rewards]
        reward = float(sum(values))
        if not math.isfinite(reward):
            node = next((r.node for r, v in zip(self.spec.rewards, values) if not math.isfinite(v)), "?")
            raise sensors.NonFiniteError(f"Reward node '{node}' gave a value that is not a finite number: "
                                         "check the property or objects it reads")
        terminated = False
        for done in self.dones:
            if done():
                terminated = True
                reward += done.reward
        self._steps += 1
        truncated = not terminated and self._steps >= self.max_steps
        self._needs_reset = terminated or truncated
        info = {"hit": int(events["hit"])} if events["fired"] else {}
        return obs, float(reward), terminated, truncated, self.mask_info(info)

    def close(self) -> None:
        self.state.close()
