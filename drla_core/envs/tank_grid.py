"""TankGrid: the tank game of the original DRLA, reduced to a grid a DQN learns in minutes."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.env import Env
from ..base.spaces import Box, Discrete

__all__ = ["TankGrid", "TANK_ACTIONS"]

#: The action names of the original tank example, in its order. Never reorder: models store indices.
TANK_ACTIONS = ("move_right", "move_left", "move_front", "move_back", "wait", "canon_up", "canon_down", "fire")
MOVE_RIGHT, MOVE_LEFT, MOVE_FRONT, MOVE_BACK, WAIT, CANON_UP, CANON_DOWN, FIRE = range(8)
#: (dx, dy) of each move action; "front" is +y, the direction the barrel points.
MOVES = {MOVE_RIGHT: (1, 0), MOVE_LEFT: (-1, 0), MOVE_FRONT: (0, 1), MOVE_BACK: (0, -1)}


class TankGrid(Env):
    """One tank must hit another with its cannon.

    ## Description
    An arena of ``width x depth`` cells holds the agent tank and a target tank. The agent's
    barrel always points to the front (+y). The cannon has ``elevations`` levels; at level
    ``e`` (0-based) a shell lands exactly ``e + 1`` cells ahead. A shot hits when the target
    stands in the agent's column, in front of it, at the distance the elevation sets. After a
    hit the score goes up and the target moves to a random free cell. To score, the agent has
    to line up behind the target, set the elevation for the gap, and fire.

    ## Action Space
    ``Discrete(8)`` with the original names: ``move_right``, ``move_left``, ``move_front``,
    ``move_back``, ``wait``, ``canon_up``, ``canon_down``, ``fire``. Moves into the arena edge
    or into the target leave the tank in place; the elevation is clamped to its levels.

    ## Observation Space
    What the tank's camera sees, as a black/white picture, followed by the score:
    ``Box(0, 1, (picture_size + 1,), float32)``.

    * ``camera="tank"`` (default): a top-down camera riding on the tank. The picture has
      ``(2*depth - 1) + 1`` rows and ``2*width - 1`` columns; one pixel per cell, centred on the
      agent, so the target's pixel gives its offset from the agent (front is the top row).
      The last row is the cannon gauge: ``e + 1`` pixels lit from the left.
    * ``camera="top"``: a fixed camera above the arena, 2x2 pixels per cell, ``depth*2 + 1``
      rows by ``width*2`` columns: the agent is a full 2x2 block, the target a diagonal, the
      last row the cannon gauge. Harder to learn (absolute positions).

    The last element is the score (hits this episode) divided by ``score_scale`` (10), capped at 1.

    ## Rewards
    ``+1`` for a hit, ``-1`` for a missed shot, ``0`` for moving, waiting and aiming.

    ## Starting State
    The agent at a random cell, elevation 0, score 0; the target at a random free cell that is
    not in the back row (so a firing position always exists). All draws use ``self.np_random``.

    ## Episode End
    * Termination: none (the game goes on, like the original).
    * Truncation: after ``max_steps`` (200) steps.

    ``info["hit"]`` is ``1`` or ``0`` on every ``fire`` step and absent otherwise, so the task
    metric (``task_metric = "hit"``) is the hit rate per shot. ``info["score"]`` is always present.
    """

    metadata = {"render_modes": ["ansi"]}
    task_metric = "hit"
    ACTION_NAMES = TANK_ACTIONS

    episode_attrs = ("agent", "target", "elevation", "score", "steps")

    def __init__(self, width: int = 6, depth: int = 6, elevations: int = 3, max_steps: int = 200,
                 camera: str = "tank", score_scale: float = 10.0) -> None:
        if width < 1 or depth < 2:
            raise ValueError("TankGrid: the arena needs width >= 1 and depth >= 2")
        if not 1 <= elevations < depth:
            raise ValueError("TankGrid: elevations must be between 1 and depth - 1")
        if camera not in ("tank", "top"):
            raise ValueError(f"TankGrid: camera must be 'tank' or 'top', not {camera!r}")
        if max_steps <= 0 or score_scale <= 0:
            raise ValueError("TankGrid: max_steps and score_scale must be positive")
        self.width, self.depth, self.elevations = int(width), int(depth), int(elevations)
        self.max_steps, self.camera, self.score_scale = int(max_steps), camera, float(score_scale)
        if camera == "tank":
            self.picture_shape = (2 * self.depth, max(2 * self.width - 1, self.elevations))
        else:
            self.picture_shape = (2 * self.depth + 1, max(2 * self.width, self.elevations))
        size = self.picture_shape[0] * self.picture_shape[1] + 1
        self.observation_space = Box(0.0, 1.0, (size,), np.float32)
        self.action_space = Discrete(8, TANK_ACTIONS)
        self.agent = (0, 0)
        self.target = (0, 1)
        self.elevation = 0
        self.score = 0
        self.steps = 0

    # -- game rules -------------------------------------------------------------------------
    def shot_lands_at(self) -> tuple[int, int]:
        """The cell a shell fired now lands on (may lie outside the arena)."""
        return self.agent[0], self.agent[1] + self.elevation + 1

    def _free_cell(self, min_y: int = 0, avoid: tuple[int, int] | None = None) -> tuple[int, int]:
        cells = [(x, y) for y in range(min_y, self.depth) for x in range(self.width) if (x, y) != avoid]
        x, y = cells[self.np_random.integers(len(cells))]
        return x, y

    def picture(self) -> np.ndarray:
        """The camera picture, float32 0/1 of ``self.picture_shape``."""
        pic = np.zeros(self.picture_shape, dtype=np.float32)
        (ax, ay), (tx, ty) = self.agent, self.target
        if self.camera == "tank":
            # Row 0 is the farthest cell in front; the agent sits at row depth-1, column width-1.
            pic[self.depth - 1 - (ty - ay), self.width - 1 + (tx - ax)] = 1.0
        else:
            top = 2 * (self.depth - 1)
            pic[top - 2 * ay: top - 2 * ay + 2, 2 * ax: 2 * ax + 2] = 1.0
            pic[top - 2 * ty, 2 * tx] = pic[top - 2 * ty + 1, 2 * tx + 1] = 1.0
        pic[-1, : self.elevation + 1] = 1.0
        return pic

    def _obs(self) -> np.ndarray:
        score = min(self.score / self.score_scale, 1.0)
        return np.append(self.picture().ravel(), np.float32(score)).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.agent = self._free_cell()
        self.target = self._free_cell(min_y=1, avoid=self.agent)
        self.elevation = 0
        self.score = 0
        self.steps = 0
        return self._obs(), {"score": 0}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if not self.action_space.contains(action):
            raise ValueError(f"TankGrid: invalid action {action!r} for {self.action_space}")
        action = int(action)
        reward = 0.0
        info: dict[str, Any] = {}
        if action in MOVES:
            dx, dy = MOVES[action]
            x, y = self.agent[0] + dx, self.agent[1] + dy
            if 0 <= x < self.width and 0 <= y < self.depth and (x, y) != self.target:
                self.agent = (x, y)
        elif action == CANON_UP:
            self.elevation = min(self.elevation + 1, self.elevations - 1)
        elif action == CANON_DOWN:
            self.elevation = max(self.elevation - 1, 0)
        elif action == FIRE:
            hit = self.shot_lands_at() == self.target
            info["hit"] = int(hit)
            if hit:
                reward = 1.0
                self.score += 1
                self.target = self._free_cell(min_y=1, avoid=self.agent)
            else:
                reward = -1.0
        self.steps += 1
        info["score"] = self.score
        truncated = self.steps >= self.max_steps
        return self._obs(), reward, False, truncated, info

    def render(self) -> str:
        """The arena as text, front row first: ``A`` agent, ``T`` target, ``*`` where a shot would land."""
        lines = []
        land = self.shot_lands_at()
        for y in reversed(range(self.depth)):
            row = ""
            for x in range(self.width):
                row += "A" if (x, y) == self.agent else "T" if (x, y) == self.target else "*" if (x, y) == land else "."
            lines.append(row)
        return "\n".join(lines) + f"\nelevation {self.elevation}  score {self.score}"
