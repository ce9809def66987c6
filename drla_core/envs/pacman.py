"""Pac-man against a ghost in a small maze, as a ``ParallelEnv`` with agents ``"pacman"`` and ``"ghost"``.

The co-evolution game of issue 12 (``coevolution.CoevolutionJob`` evolves both sides): pac-man eats pellets
and runs, the ghost hunts. Zero-sum, so each side's progress is the other's loss.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.parallel_env import ParallelEnv
from ..base.spaces import Box, Discrete, Space

__all__ = ["PacmanEnv", "PACMAN_ACTIONS", "MAZE"]

PACMAN_ACTIONS = ("up", "down", "left", "right")
#: (dx, dy) per action; "up" is +y (row 0 of ``MAZE`` is the top, y grows upward).
MOVES = ((0, 1), (0, -1), (-1, 0), (1, 0))
#: The default maze, top row first: ``#`` wall, ``.`` corridor (every corridor cell starts with a pellet).
MAZE = (
    "###########",
    "#....#....#",
    "#.##.#.##.#",
    "#.........#",
    "#.##.#.##.#",
    "#....#....#",
    "###########",
)

_DISTANCES: dict[tuple[str, ...], np.ndarray] = {}


class PacmanEnv(ParallelEnv):
    """Pac-man and one ghost in a walled maze (``MAZE``); pac-man eats pellets, the ghost catches pac-man.

    ## Action Space (each agent)
    ``Discrete(4)``: ``up``, ``down``, ``left``, ``right``; a move into a wall leaves the mover in place.

    ## Observation Space
    Positions are cells ``(x, y)`` divided by the maze's larger side; maze distances (shortest paths along
    the corridors) by the longest one. ``pacman``: ``Box(-1, 1, (17,))``: its cell, the ghost's offset,
    walls on its 4 sides (1 = wall, order up/down/left/right), for each of the 4 moves the change of the
    maze distance to the ghost (-1, 0 or +1) and to the nearest pellet, the maze distance to the ghost.
    ``ghost``: ``Box(-1, 1, (13,))``: its cell, pac-man's offset, walls on its 4 sides, for each move the
    change of the maze distance to pac-man, the maze distance to pac-man. (The distance changes are the
    features of the classic evolved pac-man controllers: a reactive network can follow a corridor with them.)

    ## Rewards (zero-sum)
    Pac-man: ``+1`` per pellet eaten, ``-caught_penalty`` (5) when caught, ``+clear_bonus`` (10) for the
    last pellet. Ghost: the negative.

    ## Order within a step
    Both move at once. Pac-man is caught when the two share a cell after the moves, or swapped cells
    (they met in a corridor); a pellet on the cell where pac-man is caught is not eaten.

    ## Starting State
    Pac-man and the ghost on two random corridor cells at least ``min_start_distance`` (6, Manhattan)
    apart (``self.np_random``); a pellet on every other corridor cell.

    ## Episode End
    * Termination (both): pac-man caught, or no pellet left.
    * Truncation (both): ``max_steps`` (80) steps.

    ``info["caught"]`` (0/1) and ``info["pellets"]`` (eaten) are set for both on the last step.
    """

    metadata = {"render_modes": ["ansi"]}
    task_metric = "caught"

    def __init__(self, maze: tuple[str, ...] | list[str] = MAZE, max_steps: int = 80, caught_penalty: float = 5.0,
                 clear_bonus: float = 10.0, min_start_distance: int = 6) -> None:
        rows = [str(r) for r in maze]
        if len(rows) < 3 or len({len(r) for r in rows}) != 1:
            raise ValueError("PacmanEnv: the maze must be at least 3 rows of equal length")
        if set("".join(rows)) - {"#", "."}:
            raise ValueError("PacmanEnv: the maze may hold only '#' (wall) and '.' (corridor)")
        if max_steps <= 0:
            raise ValueError("PacmanEnv: max_steps must be positive")
        self.height, self.width = len(rows), len(rows[0])
        # wall[x, y] with y upward: row 0 of the text is the top.
        self.wall = np.array([[rows[self.height - 1 - y][x] == "#" for y in range(self.height)]
                              for x in range(self.width)], dtype=bool)
        self.cells = [(x, y) for x in range(self.width) for y in range(self.height) if not self.wall[x, y]]
        far = [(a, b) for a in self.cells for b in self.cells
               if abs(a[0] - b[0]) + abs(a[1] - b[1]) >= min_start_distance]
        if not far:
            raise ValueError("PacmanEnv: no two corridor cells are min_start_distance apart")
        self._starts = far
        self._index = {c: i for i, c in enumerate(self.cells)}
        self._cx, self._cy = np.array([c[0] for c in self.cells]), np.array([c[1] for c in self.cells])
        key = tuple(rows)
        if key not in _DISTANCES:  # the same maze in every env of a population: compute once
            _DISTANCES[key] = self._maze_distances()
        self.distance = _DISTANCES[key]
        self._longest = np.float32(max(1, int(self.distance[np.isfinite(self.distance)].max())))
        #: Per cell and move: the cell index after the move (itself against a wall); -1 marks a wall.
        self._next = np.array([[-1 if self.wall[x + dx, y + dy] else self._index[(x + dx, y + dy)] for dx, dy in MOVES]
                               for x, y in self.cells])
        self._next_list = self._next.tolist()
        self.max_steps = int(max_steps)
        self.caught_penalty, self.clear_bonus = float(caught_penalty), float(clear_bonus)
        self.possible_agents = ["pacman", "ghost"]
        self.agents = []
        self._spaces = {"pacman": Box(-1.0, 1.0, (17,), np.float32), "ghost": Box(-1.0, 1.0, (13,), np.float32)}
        self._act_space = Discrete(4, PACMAN_ACTIONS)
        self._scale = np.float32(max(self.width, self.height))
        self.pacman = self.ghost = self.cells[0]
        self.pellets = np.zeros_like(self.wall)
        self.eaten = 0
        self.steps = 0

    def _maze_distances(self) -> np.ndarray:
        """Shortest corridor path lengths between every two corridor cells (breadth-first; inf: unreachable)."""
        n = len(self.cells)
        dist = np.full((n, n), np.inf)
        for i, start in enumerate(self.cells):
            dist[i, i] = 0
            frontier = [start]
            while frontier:
                nxt = []
                for x, y in frontier:
                    for dx, dy in MOVES:
                        c = (x + dx, y + dy)
                        j = self._index.get(c)
                        if j is not None and not np.isfinite(dist[i, j]):
                            dist[i, j] = dist[i, self._index[(x, y)]] + 1
                            nxt.append(c)
                frontier = nxt
        return dist

    def _gradient(self, me: int, to_target: np.ndarray) -> list[float]:
        """Per move: the change of the maze distance from cell ``me`` (index) to a target, ``to_target`` being
        every cell's distance to it (0 for a move into a wall)."""
        here = float(to_target[me])
        if here == np.inf:
            return [0.0] * 4
        return [0.0 if j < 0 else max(-1.0, min(1.0, float(to_target[j]) - here)) for j in self._next_list[me]]

    def observation_space(self, agent: str) -> Space:
        return self._spaces[agent]

    def action_space(self, agent: str) -> Space:
        return self._act_space

    def _moved(self, pos: tuple[int, int], action: Any) -> tuple[int, int]:
        if not self._act_space.contains(action):
            raise ValueError(f"PacmanEnv: invalid action {action!r} for {self._act_space}")
        dx, dy = MOVES[int(action)]
        x, y = pos[0] + dx, pos[1] + dy
        return pos if self.wall[x, y] else (x, y)

    def _walls(self, cell: int) -> list[float]:
        return [float(j < 0) for j in self._next_list[cell]]

    def _observations(self) -> dict[str, np.ndarray]:
        s, p, g = self._scale, self.pacman, self.ghost
        ig, ip = self._index[g], self._index[p]
        left = self.pellets[self._cx, self._cy]
        to_pellet = self.distance[:, left].min(axis=1) if left.any() else np.full(len(self.cells), np.inf)
        apart = float(self.distance[ip, ig]) / self._longest
        pac = [p[0] / s, p[1] / s, (g[0] - p[0]) / s, (g[1] - p[1]) / s, *self._walls(ip),
               *self._gradient(ip, self.distance[:, ig]), *self._gradient(ip, to_pellet), apart]
        gho = [g[0] / s, g[1] / s, (p[0] - g[0]) / s, (p[1] - g[1]) / s, *self._walls(ig),
               *self._gradient(ig, self.distance[:, ip]), apart]
        obs = {"pacman": np.array(pac, dtype=np.float32), "ghost": np.array(gho, dtype=np.float32)}
        return {a: obs[a] for a in self.agents}

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.pacman, self.ghost = self._starts[int(self.np_random.integers(len(self._starts)))]
        self.pellets = ~self.wall
        self.pellets[self.pacman] = False
        self.eaten = 0
        self.steps = 0
        self.agents = list(self.possible_agents)
        return self._observations(), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if not self.agents:
            raise RuntimeError("PacmanEnv: the episode is over; call reset()")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"PacmanEnv: no action for {missing}")
        before_p, before_g = self.pacman, self.ghost
        self.pacman = self._moved(self.pacman, actions["pacman"])
        self.ghost = self._moved(self.ghost, actions["ghost"])
        caught = self.pacman == self.ghost or (self.pacman == before_g and self.ghost == before_p)
        reward = 0.0
        if caught:
            reward -= self.caught_penalty
        elif self.pellets[self.pacman]:
            self.pellets[self.pacman] = False
            self.eaten += 1
            reward += 1.0
        cleared = not caught and not self.pellets.any()
        if cleared:
            reward += self.clear_bonus
        self.steps += 1
        terminated = caught or cleared
        truncated = not terminated and self.steps >= self.max_steps
        live = list(self.agents)
        obs = self._observations()
        infos: dict[str, dict[str, Any]] = {a: {} for a in live}
        if terminated or truncated:
            for a in live:
                infos[a].update(caught=int(caught), pellets=self.eaten)
            self.agents = []
        rewards = {"pacman": reward, "ghost": -reward}
        return (obs, {a: rewards[a] for a in live}, {a: terminated for a in live}, {a: truncated for a in live},
                infos)

    def render(self) -> str:
        """The maze as text, top row first: ``P`` pac-man, ``G`` ghost, ``o`` pellet, ``#`` wall."""
        rows = []
        for y in reversed(range(self.height)):
            rows.append("".join("P" if (x, y) == self.pacman else "G" if (x, y) == self.ghost else
                                "#" if self.wall[x, y] else "o" if self.pellets[x, y] else " "
                                for x in range(self.width)))
        return "\n".join(rows)
