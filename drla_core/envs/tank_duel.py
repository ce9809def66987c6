"""TankDuel: two tanks on one grid, each learning to hit the other (the tank game for two), as a ``ParallelEnv``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.parallel_env import ParallelEnv
from ..base.spaces import Box, Discrete, Space
from .tank_grid import CANON_DOWN, CANON_UP, FIRE, MOVES, TANK_ACTIONS

__all__ = ["TankDuel"]


class TankDuel(ParallelEnv):
    """Red and blue tanks face each other across a river; each scores by hitting the other.

    ## Description
    An arena of ``width x depth`` cells; red keeps to the rows ``0 .. depth//2 - 1`` with its barrel
    pointing to +y, blue to the other rows with its barrel pointing to -y (a river between the halves).
    Each tank sees and acts in its own frame, so the game is the same from both sides: ``front`` is
    towards the enemy and ``right`` is right as seen from the tank (blue's right is -x). As in
    ``TankGrid``, at elevation ``e`` a shell lands ``e + 1`` cells ahead (``elevations = depth - 1``).

    ## Action Space (each tank)
    ``Discrete(8)``, ``TankGrid``'s names: ``move_right``, ``move_left``, ``move_front``, ``move_back``,
    ``wait``, ``canon_up``, ``canon_down``, ``fire``. Moves out of the tank's half leave it in place.

    ## Observation Space (each tank, its own frame)
    ``Box(-1, 1, (5,), float32)``: the enemy's offset (right, ahead) divided by ``(width - 1, depth - 1)``,
    the tank's own column and row from its back wall divided by ``(width - 1, half - 1)``, and its
    elevation divided by ``elevations - 1``.

    ## Rewards
    A hit: ``+1`` to the shooter, ``-1`` to the tank hit, which then respawns on a random cell of its
    half. A miss: ``-miss_penalty`` (0.1) to the shooter. Everything else 0.

    ## Order within a step
    Both tanks move (or aim) first, then both shots are resolved at once on the new positions, so two
    tanks can hit each other in the same step; respawns come last.

    ## Starting State
    Each tank on a random cell of its half at elevation 0 (``self.np_random``).

    ## Episode End
    Truncation only: after ``max_steps`` (100) steps. ``info["hit"]`` (0/1) is set on every fire step of
    the tank that fired (the task metric: hits per shot).
    """

    metadata = {"render_modes": ["ansi"]}
    task_metric = "hit"
    possible_agents = ["red", "blue"]

    def __init__(self, width: int = 5, depth: int = 6, max_steps: int = 100, miss_penalty: float = 0.1) -> None:
        if width < 1 or depth < 4 or depth % 2:
            raise ValueError("TankDuel: needs width >= 1 and an even depth >= 4")
        if max_steps <= 0 or miss_penalty < 0:
            raise ValueError("TankDuel: max_steps must be positive and miss_penalty >= 0")
        self.width, self.depth, self.half = int(width), int(depth), int(depth) // 2
        self.elevations = self.depth - 1
        self.max_steps, self.miss_penalty = int(max_steps), float(miss_penalty)
        self.possible_agents = ["red", "blue"]
        self.agents = []
        self._obs_space = Box(-1.0, 1.0, (5,), np.float32)
        self._act_space = Discrete(8, TANK_ACTIONS)
        self.pos = {"red": (0, 0), "blue": (0, self.depth - 1)}
        self.elevation = {"red": 0, "blue": 0}
        self.steps = 0

    def observation_space(self, agent: str) -> Space:
        return self._obs_space

    def action_space(self, agent: str) -> Space:
        return self._act_space

    # -- frames: red's is the world's; blue's is turned half a circle ---------------------------------
    def _sign(self, agent: str) -> int:
        return 1 if agent == "red" else -1

    def _other(self, agent: str) -> str:
        return "blue" if agent == "red" else "red"

    def _in_half(self, agent: str, cell: tuple[int, int]) -> bool:
        x, y = cell
        rows = range(0, self.half) if agent == "red" else range(self.half, self.depth)
        return 0 <= x < self.width and y in rows

    def _random_cell(self, agent: str) -> tuple[int, int]:
        x = int(self.np_random.integers(self.width))
        y = int(self.np_random.integers(self.half)) + (0 if agent == "red" else self.half)
        return x, y

    def shot_lands_at(self, agent: str) -> tuple[int, int]:
        """The cell a shell fired now by ``agent`` lands on."""
        x, y = self.pos[agent]
        return x, y + self._sign(agent) * (self.elevation[agent] + 1)

    def _observe(self, agent: str) -> np.ndarray:
        s = self._sign(agent)
        (x, y), (ex, ey) = self.pos[agent], self.pos[self._other(agent)]
        own_x = x if s > 0 else self.width - 1 - x
        own_row = y if s > 0 else self.depth - 1 - y
        return np.array([s * (ex - x) / max(self.width - 1, 1), s * (ey - y) / (self.depth - 1),
                         own_x / max(self.width - 1, 1), own_row / max(self.half - 1, 1),
                         self.elevation[agent] / max(self.elevations - 1, 1)], dtype=np.float32)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.pos = {a: self._random_cell(a) for a in self.possible_agents}
        self.elevation = {a: 0 for a in self.possible_agents}
        self.steps = 0
        self.agents = list(self.possible_agents)
        return {a: self._observe(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if not self.agents:
            raise RuntimeError("TankDuel: the episode is over; call reset()")
        for a in self.agents:
            if a not in actions or not self._act_space.contains(actions[a]):
                raise ValueError(f"TankDuel: {a!r} needs an action of {self._act_space}, got {actions.get(a)!r}")
        rewards = {a: 0.0 for a in self.agents}
        infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        for a in self.agents:  # 1. moves and aiming
            action, s = int(actions[a]), self._sign(a)
            if action in MOVES:
                dx, dy = MOVES[action]
                cell = (self.pos[a][0] + s * dx, self.pos[a][1] + s * dy)
                if self._in_half(a, cell):
                    self.pos[a] = cell
            elif action == CANON_UP:
                self.elevation[a] = min(self.elevation[a] + 1, self.elevations - 1)
            elif action == CANON_DOWN:
                self.elevation[a] = max(self.elevation[a] - 1, 0)
        hit_tanks = []
        for a in self.agents:  # 2. every shot at once, on the new positions
            if int(actions[a]) == FIRE:
                hit = self.shot_lands_at(a) == self.pos[self._other(a)]
                infos[a]["hit"] = int(hit)
                rewards[a] += 1.0 if hit else -self.miss_penalty
                if hit:
                    rewards[self._other(a)] -= 1.0
                    hit_tanks.append(self._other(a))
        for a in hit_tanks:  # 3. respawns
            self.pos[a] = self._random_cell(a)
        self.steps += 1
        truncated = self.steps >= self.max_steps
        live = list(self.agents)
        obs = {a: self._observe(a) for a in live}
        if truncated:
            self.agents = []
        return obs, rewards, {a: False for a in live}, {a: truncated for a in live}, infos

    def render(self) -> str:
        """The arena, top row first: ``R`` red, ``B`` blue, ``~`` the river between the halves."""
        rows = []
        for y in reversed(range(self.depth)):
            rows.append("".join("R" if (x, y) == self.pos["red"] else "B" if (x, y) == self.pos["blue"] else "."
                                for x in range(self.width)))
            if y == self.half:
                rows.append("~" * self.width)
        return "\n".join(rows)
