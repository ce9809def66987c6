"""A batched CartPole as a ``gymnasium.vector.VectorEnv`` (``gymnasium.make_vec("drla/CartPole-v0", num_envs=N,
vectorization_mode="vector_entry_point")``): N CartPoles stepped by one set of numpy calls.

Each copy follows the scalar ``drla/CartPole-v0`` (and Gymnasium's ``CartPole-v1``) bit for bit: the same
float64 arithmetic in the same order, with ``cos``, ``sin`` and ``x**2`` through CartPole's exact-math path
(numpy's where it matches C's libm, a per-element fallback where not, as on AVX-512 CPUs). Seeding and
autoreset are ``SyncVectorEnv``'s: ``reset(seed=s)`` seeds copy ``i`` with ``s + i``, and a copy whose episode
ended is reset on its next step (``AutoresetMode.NEXT_STEP``: reward 0, the action ignored), so a run equals
``SyncVectorEnv`` over N scalar envs step for step (``tests/test_gym.py``).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from drla_core.envs import cartpole as cp

from .gym import to_gym_space

__all__ = ["CartPoleVectorEnv"]


class CartPoleVectorEnv(VectorEnv):
    """``num_envs`` CartPoles with one step for all (see the module docstring)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 8, max_episode_steps: int = 500, render_mode: str | None = None,
                 name: str = "cartpole") -> None:
        if name != "cartpole":  # (the registered id's kwargs name the env)
            raise ValueError(f"CartPoleVectorEnv steps CartPole only, not {name!r}")
        if render_mode is not None:
            raise ValueError(f"render_mode {render_mode!r}: the vector CartPole does not render")
        self.num_envs = int(num_envs)
        if self.num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self._env = cp.CartPole(max_episode_steps)  # its constants and spaces; never stepped
        self.single_observation_space = to_gym_space(self._env.observation_space)
        self.single_action_space = to_gym_space(self._env.action_space)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.render_mode = None
        n = self.num_envs
        self._state = np.zeros((4, n))  # x, x_dot, theta, theta_dot (float64, as the scalar env's floats)
        self._elapsed = np.zeros(n, np.int64)
        self._needs_reset = np.zeros(n, bool)
        self._rngs = [np.random.default_rng() for _ in range(n)]
        self._two = np.full(n, 2.0)  # the exponent and the libm functions' outputs, kept between steps
        self._cos, self._sin, self._sq_dot, self._sq_cos = (np.empty(n) for _ in range(4))

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict]:
        if isinstance(seed, int) or seed is None:
            seeds: list[int | None] = [None if seed is None else seed + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"reset: {len(seeds)} seeds for {self.num_envs} copies")
        if seed is not None:
            self._np_random, self._np_random_seed = gymnasium.utils.seeding.np_random(
                seed if isinstance(seed, int) else None)
        for i, s in enumerate(seeds):
            if s is not None:
                self._rngs[i] = np.random.default_rng(s)
            self._start(i, options)
        self._needs_reset[:] = False
        return self._obs(), {}

    def _start(self, i: int, options: dict[str, Any] | None = None) -> None:
        low, high = -0.05, 0.05
        if options:
            low, high = float(options.get("low", low)), float(options.get("high", high))
        self._state[:, i] = self._rngs[i].uniform(low, high, size=(4,))
        self._elapsed[i] = 0

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or not np.isin(actions, (0, 1)).all():
            raise ValueError(f"step: actions must be {self.num_envs} zeros and ones, got {actions!r}")
        e = self._env
        resetting = self._needs_reset.copy()
        x, x_dot, theta, theta_dot = self._state
        force = np.where(actions == 1, e.force_mag, -e.force_mag)
        costheta = cp._COS(theta, self._cos)
        sintheta = cp._SIN(theta, self._sin)
        temp = (force + e.polemass_length * cp._SQUARE(theta_dot, self._two, self._sq_dot) * sintheta) / e.total_mass
        thetaacc = (e.gravity * sintheta - costheta * temp) / (
            e.length * (4.0 / 3.0 - e.masspole * cp._SQUARE(costheta, self._two, self._sq_cos) / e.total_mass))
        xacc = temp - e.polemass_length * thetaacc * costheta / e.total_mass
        new = np.stack([x + e.tau * x_dot, x_dot + e.tau * xacc, theta + e.tau * theta_dot,
                        theta_dot + e.tau * thetaacc])
        keep = ~resetting
        self._state[:, keep] = new[:, keep]
        self._elapsed[keep] += 1
        x, theta = self._state[0], self._state[2]
        terminated = ((x < -e.x_threshold) | (x > e.x_threshold) | (theta < -e.theta_threshold_radians)
                      | (theta > e.theta_threshold_radians)) & keep
        truncated = (self._elapsed >= e.max_episode_steps) & keep  # (as the scalar env: both may be True)
        rewards = keep.astype(np.float64)
        for i in np.flatnonzero(resetting):
            self._start(int(i))
        self._needs_reset = terminated | truncated
        return self._obs(), rewards, terminated, truncated, {}

    def _obs(self) -> np.ndarray:
        return self._state.T.astype(np.float32)
