"""A deceptive maze: the classic test where following fitness (closeness to the goal) leads into a dead end.

After Lehman & Stanley, "Abandoning Objectives: Evolution through the Search for Novelty Alone" (2011):
a point robot in a unit square starts below a cup-shaped trap (a wall across its way to the goal with
two side walls hanging down). Heading for the goal ends inside the cup, 0.4 from the goal; the way
round goes sideways and down first, which fitness punishes. The behaviour for novelty search is the
final position (``info["behavior"]``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base.env import Env
from ..base.spaces import Box

__all__ = ["DeceptiveMaze"]

#: Wall segments ((x0, y0), (x1, y1)), axis-aligned: the cup's top and its two sides.
WALLS: tuple[tuple[tuple[float, float], tuple[float, float]], ...] = (
    ((0.15, 0.55), (0.85, 0.55)),
    ((0.15, 0.15), (0.15, 0.55)),
    ((0.85, 0.15), (0.85, 0.55)),
)


class DeceptiveMaze(Env):
    """Steer a point robot to the goal around a trap that fitness leads into.

    ## Action Space
    ``Box(-1, 1, (2,))``: the velocity (x, y), scaled by ``speed`` (0.03 per step).

    ## Observation Space
    ``Box(0, 1, (2,))``: the robot's position.

    ## Rewards
    ``0`` until the last step; then ``1 - distance_to_goal / sqrt(2)`` (``1`` when the goal is reached).

    ## Starting State
    (0.5, 0.25), inside the cup below its top wall (deterministic; ``reset(seed)`` only seeds ``np_random``).

    ## Episode End
    Termination: within ``goal_radius`` (0.06) of the goal (0.5, 0.9). Truncation: after ``max_episode_steps``
    (120). A move that would cross a wall or leave the square is cancelled along that axis (the robot slides).
    """

    metadata = {"render_fps": 30}

    def __init__(self, max_episode_steps: int = 120, speed: float = 0.03) -> None:
        self.max_episode_steps = int(max_episode_steps)
        self.speed = float(speed)
        self.start = np.array([0.5, 0.25])
        self.goal = np.array([0.5, 0.9])
        self.goal_radius = 0.06
        self.observation_space = Box(0.0, 1.0, (2,), dtype=np.float32)
        self.action_space = Box(-1.0, 1.0, (2,), dtype=np.float32)
        self.pos = self.start.copy()
        self.elapsed_steps = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.pos = self.start.copy()
        self.elapsed_steps = 0
        return self.pos.astype(np.float32), {"behavior": self.pos.copy()}

    @staticmethod
    def _blocked(x0: float, y0: float, x1: float, y1: float) -> bool:
        """Whether the axis-aligned move (x0, y0) -> (x1, y1) crosses a wall."""
        for (ax, ay), (bx, by) in WALLS:
            if ay == by:  # horizontal wall at y = ay, x in [ax, bx]
                if x0 == x1 and ax <= x0 <= bx and min(y0, y1) <= ay <= max(y0, y1):
                    return True
            elif y0 == y1 and ay <= y0 <= by and min(x0, x1) <= ax <= max(x0, x1):  # vertical wall
                return True
        return False

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        ax, ay = (float(v) for v in np.ravel(action)[:2])
        speed = self.speed
        x, y = float(self.pos[0]), float(self.pos[1])
        nx = min(1.0, max(0.0, x + min(1.0, max(-1.0, ax)) * speed))  # plain floats: a step is a few microseconds
        if not self._blocked(x, y, nx, y):
            x = nx
        ny = min(1.0, max(0.0, y + min(1.0, max(-1.0, ay)) * speed))
        if not self._blocked(x, y, x, ny):
            y = ny
        self.pos = np.array([x, y])
        self.elapsed_steps += 1
        distance = math.hypot(x - float(self.goal[0]), y - float(self.goal[1]))
        terminated = distance <= self.goal_radius
        truncated = self.elapsed_steps >= self.max_episode_steps
        reward = 0.0
        if terminated:
            reward = 1.0
        elif truncated:
            reward = 1.0 - distance / math.sqrt(2.0)
        info = {"behavior": self.pos.copy(), "distance": distance}
        return self.pos.astype(np.float32), reward, terminated, truncated, info
