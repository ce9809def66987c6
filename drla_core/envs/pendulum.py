"""Pendulum: the classic swing-up with a continuous torque (Gymnasium's ``Pendulum-v1``, step for step)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.env import Env
from ..base.spaces import Box

__all__ = ["Pendulum", "angle_normalize"]


def angle_normalize(x: Any) -> Any:
    """An angle in [-pi, pi)."""
    return ((x + np.pi) % (2 * np.pi)) - np.pi


class Pendulum(Env):
    """Swing a pendulum up and hold it upright with a limited torque.

    The continuous-control benchmark of SAC and PPO papers, written with Gymnasium's own operations in the
    same order so that an episode equals ``gymnasium.make("Pendulum-v1")``'s for the same seed when that is
    given the torques ``2 * action`` (``tests/test_pendulum.py`` checks it).

    ## Action Space
    ``Box(-1, 1, (1,), float32)``: the torque at the pivot as a fraction of the largest (2). Normalised, as
    Gymnasium's checker asks of a Box action space; doubling a float is exact, so nothing else changes.

    ## Observation Space
    ``Box([-1, -1, -8], [1, 1, 8], float32)``: cos(theta), sin(theta) and the angular velocity.

    ## Rewards
    ``-(theta^2 + 0.1 thetadot^2 + 0.001 torque^2)`` with theta in [-pi, pi): 0 is upright and still; about
    -16.3 is the worst step.

    ## Starting State
    theta uniform in [-pi, pi], thetadot uniform in [-1, 1] (from ``self.np_random``).

    ## Episode End
    * Termination: never.
    * Truncation: after ``max_steps`` (200) steps, as Gymnasium's registered ``TimeLimit``.
    """

    metadata: dict[str, Any] = {"render_modes": []}
    episode_attrs = ("state", "last_u", "steps")

    def __init__(self, g: float = 10.0, max_steps: int = 200) -> None:
        self.max_speed = 8.0
        self.max_torque = 2.0
        self.dt = 0.05
        self.g = float(g)
        self.m = 1.0
        self.l = 1.0
        self.max_steps = int(max_steps)
        high = np.array([1.0, 1.0, self.max_speed], dtype=np.float32)
        self.action_space = Box(-1.0, 1.0, (1,), dtype=np.float32)
        self.observation_space = Box(-high, high, dtype=np.float32)
        self.state = np.zeros(2)
        self.last_u: Any = None
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        high = np.array([np.pi, 1.0])
        self.state = self.np_random.uniform(low=-high, high=high)
        self.last_u = None
        self.steps = 0
        return self._get_obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        th, thdot = self.state
        g, m, length, dt = self.g, self.m, self.l, self.dt
        torque = np.asarray(action, dtype=np.float32).reshape(1) * np.float32(self.max_torque)
        u = np.clip(torque, -self.max_torque, self.max_torque)[0]
        self.last_u = u
        costs = angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * (u**2)
        newthdot = thdot + (3 * g / (2 * length) * np.sin(th) + 3.0 / (m * length**2) * u) * dt
        newthdot = np.clip(newthdot, -self.max_speed, self.max_speed)
        newth = th + newthdot * dt
        self.state = np.array([newth, newthdot])
        self.steps += 1
        return self._get_obs(), float(-costs), False, self.steps >= self.max_steps, {}

    def _get_obs(self) -> np.ndarray:
        theta, thetadot = self.state
        return np.array([np.cos(theta), np.sin(theta), thetadot], dtype=np.float32)
