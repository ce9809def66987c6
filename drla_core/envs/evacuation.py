"""EvacuationGrid: the "fireman" example, find the way out of a burning building."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base.env import Env
from ..base.spaces import Box, Discrete

__all__ = ["EvacuationGrid", "DEFAULT_BUILDING"]

#: The default building, one string per row, top row first.
#: ``#`` wall, ``.`` floor, ``F`` fire, ``E`` exit (a door in the outer wall).
DEFAULT_BUILDING: tuple[str, ...] = (
    "#####E##",
    "#......#",
    "#.F##..#",
    "#..#F..#",
    "#.....F#",
    "#F.##..#",
    "#......E",
    "########",
)

WALL, FLOOR, FIRE, EXIT = "#", ".", "F", "E"
#: (row, column) offsets of the four moves, in action order.
MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))


class EvacuationGrid(Env):
    """Walk out of a building on fire: reach an exit without stepping into a fire.

    ## Description
    The agent (a fireman, or someone he rescues) stands on a random floor cell of a small
    building seen from above. Walls block movement, fire cells kill, exit cells (doors in
    the outer wall) end the episode with a success. The map is fixed per environment
    (``building=`` takes any map drawn with ``# . F E``), only the start cell is random.

    ## Action Space
    ``Discrete(4)`` named ``up``, ``down``, ``left``, ``right`` (``up`` is towards the top row of the map).
    Moving into a wall leaves the agent where it is.

    ## Observation Space
    ``Box(0, 1, (rows * cols + 27,), float32)``:

    | slice | meaning |
    |---|---|
    | ``[0, rows*cols)`` | one-hot of the agent's cell (row-major) |
    | ``[rows*cols, +9)`` | walls in the 3x3 neighbourhood (row-major; outside the map counts as wall) |
    | ``[+9, +18)`` | fire in the 3x3 neighbourhood |
    | ``[+18, +27)`` | exits in the 3x3 neighbourhood |

    ## Rewards
    ``+1`` for reaching an exit, ``-1`` for stepping into fire, ``-step_cost`` (0.01) for every other step.

    ## Starting State
    A floor cell drawn uniformly from ``self.np_random`` (never a wall, fire or exit cell).

    ## Episode End
    * Termination: the agent reaches an exit (``info["escaped"] = 1``) or steps into fire (``info["escaped"] = 0``).
    * Truncation: ``max_steps`` (100) steps have passed (``info["escaped"] = 0``).

    ``info["escaped"]`` is set on the last step of every episode only: the task metric is the escape rate.
    """

    metadata = {"render_modes": ["ansi"]}
    task_metric = "escaped"
    ACTION_NAMES = ("up", "down", "left", "right")

    episode_attrs = ("pos", "steps")

    def __init__(self, building: Sequence[str] = DEFAULT_BUILDING, max_steps: int = 100,
                 step_cost: float = 0.01) -> None:
        rows = [str(r) for r in building]
        if not rows or any(len(r) != len(rows[0]) for r in rows):
            raise ValueError("EvacuationGrid: building rows must all have the same length")
        bad = set("".join(rows)) - {WALL, FLOOR, FIRE, EXIT}
        if bad:
            raise ValueError(f"EvacuationGrid: unknown map characters {sorted(bad)} (use '# . F E')")
        self.grid = np.array([list(r) for r in rows])
        self.n_rows, self.n_cols = self.grid.shape
        self.start_cells = np.argwhere(self.grid == FLOOR)
        if len(self.start_cells) == 0 or not np.any(self.grid == EXIT):
            raise ValueError("EvacuationGrid: the building needs at least one floor cell and one exit")
        if max_steps <= 0:
            raise ValueError("EvacuationGrid: max_steps must be positive")
        self.max_steps = int(max_steps)
        self.step_cost = float(step_cost)
        # Padded masks (outside the map counts as wall) make the 3x3 neighbourhood a plain slice.
        padded = np.pad(self.grid, 1, constant_values=WALL)
        self._walls = (padded == WALL).astype(np.float32)
        self._fire = (padded == FIRE).astype(np.float32)
        self._exits = (padded == EXIT).astype(np.float32)
        self.observation_space = Box(0.0, 1.0, (self.n_rows * self.n_cols + 27,), np.float32)
        self.action_space = Discrete(4, self.ACTION_NAMES)
        self.pos = (0, 0)
        self.steps = 0

    def _obs(self) -> np.ndarray:
        r, c = self.pos
        obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        obs[r * self.n_cols + c] = 1.0
        k = self.n_rows * self.n_cols
        for i, mask in enumerate((self._walls, self._fire, self._exits)):
            obs[k + 9 * i: k + 9 * (i + 1)] = mask[r: r + 3, c: c + 3].ravel()  # padded: cell (r, c) is at (r+1, c+1)
        return obs

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        r, c = self.start_cells[self.np_random.integers(len(self.start_cells))]
        self.pos = (int(r), int(c))
        self.steps = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if not self.action_space.contains(action):
            raise ValueError(f"EvacuationGrid: invalid action {action!r} for {self.action_space}")
        dr, dc = MOVES[int(action)]
        r, c = self.pos[0] + dr, self.pos[1] + dc
        if 0 <= r < self.n_rows and 0 <= c < self.n_cols and self.grid[r, c] != WALL:
            self.pos = (r, c)
        self.steps += 1
        cell = self.grid[self.pos]
        info: dict[str, Any] = {}
        reward, terminated = -self.step_cost, False
        if cell == EXIT:
            reward, terminated = 1.0, True
        elif cell == FIRE:
            reward, terminated = -1.0, True
        truncated = not terminated and self.steps >= self.max_steps
        if terminated or truncated:
            info["escaped"] = int(cell == EXIT)
        return self._obs(), float(reward), terminated, truncated, info

    def render(self) -> str:
        """The map as text with the agent drawn as ``A``."""
        rows = ["".join(row) for row in self.grid]
        r, c = self.pos
        rows[r] = rows[r][:c] + "A" + rows[r][c + 1:]
        return "\n".join(rows)
