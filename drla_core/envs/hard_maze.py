"""Lehman and Stanley's maze navigation domain (novelty search's medium and hard maps), as their code defines it.

Source of every number here: Joel Lehman's Novelty Search C++ v1.0 (github.com/jal278/novelty-search-cpp, the
code that ran the experiments of Lehman and Stanley, "Exploiting Open-Endedness to Solve Problems Through the
Search for Novelty", ALife XI, 2008, and "Abandoning Objectives: Evolution through the Search for Novelty Alone",
Evolutionary Computation 19(2):189-223, 2011):

* ``medium_maze.txt`` / ``hard_maze.txt``: the number of walls, the start (x, y), the start heading (0 degrees),
  the goal (x, y), then one wall segment ``x0 y0 x1 y1`` a line (``MAPS`` below, copied number for number).
* ``maze.h``, class ``Character``: radius 8, rangefinder range 100, six rangefinders at -90, -45, 0, 45, 90 and
  -180 degrees from the heading, four radar pie slices [315, 405), [45, 135), [135, 225), [225, 315) degrees;
  heading, speed and angular velocity start at 0.
* ``maze.h``, ``Environment::interpret_outputs``: ``ang_vel += (o1 - 0.5)``, ``speed += (o2 - 0.5)``, each
  clamped to [-3, 3] (outputs o in [0, 1], sigmoid units).
* ``maze.h``, ``Environment::Update``: velocity from the old heading and the speed, ``heading += ang_vel``
  (wrapped once into [0, 360]), then the move, cancelled when the new position is closer than the radius to any
  wall (``collide_lines``, point-to-segment distance); nothing moves once the goal is reached. Angles go to
  radians with the code's constant 3.1415926.
* ``maze.h``, ``update_rangefinders``: the ray of length 100 rotated by the heading, cut at the nearest wall it
  crosses strictly inside both segments (``Line::intersection``); ``update_radar``: the goal rotated by minus
  the heading around the robot, its angle from ``Point::angle`` (atan(y / x) in degrees, +180 when x < 0; 90
  or 270 when x = 0).
* ``maze.h``, ``distance_to_target``: reached when closer than 5 to the goal (the paper, Section 6: "within five
  units of the goal counts as a solution").
* ``maze.h``, ``generate_neural_inputs``: input 0 is the bias (1.0), then each rangefinder / 100, then the radar.
* ``noveltyexp.cpp``, ``mazesim``: 400 time steps; fitness ``300 - distance to the goal`` at the end (at least
  0.1), the paper's ``f = b_f - d_g`` (Section 5); the behaviour is the final (x, y) position (Section 5).

Two departures:

* ``generate_neural_inputs`` writes the radar from index ``i + j`` with ``i`` left at 6 by the rangefinder loop,
  so the C++ network sees radar 0 in place of the sixth (rear) rangefinder and an input 10 never written. The
  default (``inputs="paper"``) gives the sensors the paper describes (Figure 1: bias, six rangefinders, four
  radar); ``inputs="code"`` gives what the C++ network saw (input 10 as 0). (``mazesimIni`` also activates the
  network 10 times on the first inputs before the first step: nothing for a feed-forward network.)
* The C++ holds the state in single precision; here it is float64 (the step order and constants are the code's).

The actions are the two outputs rescaled to the symmetric box Gymnasium asks for: ``a = 2 o - 1`` in [-1, 1], so
``o - 0.5 = a / 2`` (``ang_vel += a[0] / 2``, ``speed += a[1] / 2``). ``HardMazeBatch`` steps many robots at once
(a population's episodes in one numpy step); ``HardMaze`` is one robot on the same code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.env import Env
from ..base.spaces import Box

__all__ = ["HardMaze", "HardMazeBatch", "MAPS", "MazeMap", "RANGEFINDER_ANGLES", "RADAR_SLICES"]

#: The C++ code's pi (maze.h: every degree -> radian conversion divides by 180 and multiplies by this).
PI = 3.1415926
RADIUS = 8.0
RANGE = 100.0
GOAL_RADIUS = 5.0
MAX_SPEED = 3.0
FITNESS_BIAS = 300.0
RANGEFINDER_ANGLES = (-90.0, -45.0, 0.0, 45.0, 90.0, -180.0)
RADAR_SLICES = ((315.0, 405.0), (45.0, 135.0), (135.0, 225.0), (225.0, 315.0))


class MazeMap:
    """One map file: start (x, y), start heading (degrees), goal (x, y), walls ``(W, 4)`` as ``x0 y0 x1 y1``."""

    def __init__(self, text: str) -> None:
        v = [float(t) for t in text.split()]
        n = int(v[0])
        self.start = (v[1], v[2])
        self.heading = v[3]
        self.goal = (v[4], v[5])
        if len(v) != 6 + 4 * n:
            raise ValueError(f"a maze file with {n} walls has {len(v) - 6} numbers after its header, not {4 * n}")
        self.walls = np.array(v[6:], dtype=np.float64).reshape(n, 4)


#: novelty-search-cpp's medium_maze.txt and hard_maze.txt, as the files have them.
MAPS: dict[str, MazeMap] = {
    "medium": MazeMap("""11
30 22
0
270 100
293 7 289 130
289 130 6 134
6 134 8 5
8 5 292 7
241 130 58 65
114 7 73 42
130 91 107 46
196 8 139 51
219 122 182 63
267 9 214 63
271 129 237 88"""),
    "hard": MazeMap("""13
36 184
0
31 20
41 5 3 8
3 8 4 49
4 49 57 53
4 49 7 202
7 202 195 198
195 198 186 8
186 8 39 5
56 54 56 157
57 106 158 162
77 201 108 164
6 80 33 121
192 146 87 91
56 55 133 30"""),
}


def _maze(name: str) -> MazeMap:
    if name not in MAPS:
        raise ValueError(f"unknown maze map {name!r}; choose {' or '.join(MAPS)}")
    return MAPS[name]


def wall_distance(walls: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``(N, W)``: each point's distance to each wall segment (``Line::distance``: to the foot of the
    perpendicular when it falls on the segment, else to the nearer end, which is the end the foot passed)."""
    return np.sqrt(_Walls(walls).distance2(x, y)).T


_RAY_X = np.cos(np.array(RANGEFINDER_ANGLES) / 180.0 * PI) * RANGE  # each ray before the heading's rotation
_RAY_Y = np.sin(np.array(RANGEFINDER_ANGLES) / 180.0 * PI) * RANGE
_SLICE_LO = np.array([lo for lo, _ in RADAR_SLICES])
_SLICE_HI = np.array([hi for _, hi in RADAR_SLICES])


class _Walls:
    """A map's walls as columns ``(W, 1)`` and work arrays for ``n`` robots. Every array is laid out robots
    last (``(6, W, n)`` for the rays against the walls): numpy's inner loops then run over the robots, not over
    13 walls, about twice as fast; each element still gets the same operations in the same order, so the
    results are the same bits as the plain broadcast."""

    def __init__(self, walls: np.ndarray, n: int = 0) -> None:
        w = np.asarray(walls, dtype=np.float64)
        self.ax, self.ay = w[:, 0, None].copy(), w[:, 1, None].copy()
        self.ex, self.ey = (w[:, 2] - w[:, 0])[:, None].copy(), (w[:, 3] - w[:, 1])[:, None].copy()
        self.ee = self.ex * self.ex + self.ey * self.ey
        self.rx, self.ry = _RAY_X[:, None].copy(), _RAY_Y[:, None].copy()
        self.n = -1
        self._size(n)

    def _size(self, n: int) -> None:
        if n != self.n:
            self.n, shape = n, (len(RANGEFINDER_ANGLES), len(self.ax), n)
            self.bot, self.r, self.tmp = np.empty(shape), np.empty(shape), np.empty(shape)
            self.hit, self.ok = np.empty(shape, dtype=bool), np.empty(shape, dtype=bool)

    def distance2(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``(W, N)``: squared distance from each point to each wall (the foot of the perpendicular, clamped)."""
        px, py = x - self.ax, y - self.ay
        u = np.clip((px * self.ex + py * self.ey) / self.ee, 0.0, 1.0)
        fx, fy = px - u * self.ex, py - u * self.ey
        return fx * fx + fy * fy

    def rangefinders(self, x: np.ndarray, y: np.ndarray, heading: np.ndarray) -> np.ndarray:
        """``(6, N)``: each ray's distance to the nearest wall it crosses (see ``rangefinders``)."""
        self._size(len(x))
        h = heading / 180.0 * PI
        ch, sh = np.cos(h), np.sin(h)
        dx = (ch * self.rx - sh * self.ry)[:, None, :]  # (6, 1, N): D - C
        dy = (sh * self.rx + ch * self.ry)[:, None, :]
        acx, acy = self.ax - x, self.ay - y  # (W, N): A - C
        s_top = acy * self.ex - acx * self.ey
        bot, r, tmp, hit, ok = self.bot, self.r, self.tmp, self.hit, self.ok
        np.multiply(self.ex, dy, out=bot)
        bot -= np.multiply(self.ey, dx, out=tmp)
        np.multiply(acy, dx, out=r)
        r -= np.multiply(acx, dy, out=tmp)
        with np.errstate(divide="ignore", invalid="ignore"):  # (a ray parallel to a wall: bot 0, no crossing)
            np.divide(r, bot, out=r)
            s = np.divide(s_top, bot, out=bot)
        np.greater(r, 0.0, out=hit)
        hit &= np.less(r, 1.0, out=ok)
        hit &= np.greater(s, 0.0, out=ok)  # (s >= 1 is past the ray's end: the minimum with 1 drops it)
        return np.minimum(np.where(hit, s, 1.0).min(axis=1), 1.0) * RANGE  # (a masked reduce: 5x slower)


def rangefinders(walls: np.ndarray, x: np.ndarray, y: np.ndarray, heading: np.ndarray) -> np.ndarray:
    """``(N, 6)``: each rangefinder's distance to the nearest wall it crosses, at most ``RANGE``
    (``update_rangefinders`` with ``Line::intersection``: both segment parameters strictly inside (0, 1); the
    distance from the robot to the crossing is the ray's parameter times its length)."""
    return _Walls(walls, len(x)).rangefinders(x, y, heading).T


def radar(goal: tuple[float, float], x: np.ndarray, y: np.ndarray, heading: np.ndarray) -> np.ndarray:
    """``(N, 4)``: 1 in the pie slice the goal lies in, seen from the robot's heading (``update_radar``)."""
    h = -heading / 180.0 * PI
    gx, gy = goal[0] - x, goal[1] - y
    c, s = np.cos(h), np.sin(h)
    tx, ty = c * gx - s * gy, s * gx + c * gy
    with np.errstate(divide="ignore", invalid="ignore"):
        ang = np.arctan(ty / tx) / PI * 180.0
    ang[tx < 0] += 180.0
    zero = tx == 0
    if zero.any():
        ang[zero] = np.where(ty[zero] > 0, 90.0, 270.0)
    ang = ang[:, None]
    up = ang + 360.0
    inside = (ang >= _SLICE_LO) & (ang < _SLICE_HI)
    inside |= (up >= _SLICE_LO) & (up < _SLICE_HI)
    return inside.astype(np.float64)


class HardMazeBatch:
    """``n`` robots in one maze, stepped together (numpy over the robots). State columns: x, y, heading,
    speed, angular velocity; ``reached``: within 5 of the goal (frozen from then on, as ``Update`` returns)."""

    def __init__(self, n: int, map: str = "hard", inputs: str = "paper") -> None:  # noqa: A002 - the maze's name
        if inputs not in ("paper", "code"):
            raise ValueError(f"unknown inputs {inputs!r}; choose paper or code")
        self.maze = _maze(map)
        self.inputs = inputs
        self.n = int(n)
        self._walls = _Walls(self.maze.walls, self.n)
        self.reset()

    def reset(self) -> np.ndarray:
        m = self.maze
        self.state = np.tile(np.array([m.start[0], m.start[1], m.heading, 0.0, 0.0]), (self.n, 1))
        self.reached = np.zeros(self.n, dtype=bool)
        return self.observe()

    @property
    def position(self) -> np.ndarray:
        return self.state[:, :2].copy()

    def distance(self) -> np.ndarray:
        g = self.maze.goal
        return np.hypot(self.state[:, 0] - g[0], self.state[:, 1] - g[1])

    def fitness(self) -> np.ndarray:
        """``300 - distance to the goal``, at least 0.1 (``mazesim``)."""
        return np.maximum(FITNESS_BIAS - self.distance(), 0.1)

    def observe(self) -> np.ndarray:
        """``(n, 11)`` float32: bias, six rangefinders / 100, four radar (``inputs="code"``: as the C++ wrote them)."""
        x, y, h = self.state[:, 0], self.state[:, 1], self.state[:, 2]
        ranges = self._walls.rangefinders(x, y, h).T / RANGE
        slices = radar(self.maze.goal, x, y, h)
        out = np.empty((self.n, 11), dtype=np.float32)
        out[:, 0] = 1.0
        if self.inputs == "paper":
            out[:, 1:7], out[:, 7:11] = ranges, slices
        else:  # radar j written at 6 + j: over the sixth rangefinder; input 10 never written
            out[:, 1:6], out[:, 6:10], out[:, 10] = ranges[:, :5], slices, 0.0
        return out

    def step(self, actions: Any) -> np.ndarray:
        """One time step for every robot (``interpret_outputs`` then ``Update``); returns the new observations.
        ``actions`` ``(n, 2)`` in [-1, 1]: rotation and forward speed (``o - 0.5 = a / 2``)."""
        a = np.asarray(actions, dtype=np.float64).reshape(self.n, 2)
        a = np.minimum(np.maximum(a, -1.0), 1.0)  # (np.clip's bits, without its Python overhead)
        s = self.state
        s[:, 4] = np.minimum(np.maximum(s[:, 4] + a[:, 0] * 0.5, -MAX_SPEED), MAX_SPEED)
        s[:, 3] = np.minimum(np.maximum(s[:, 3] + a[:, 1] * 0.5, -MAX_SPEED), MAX_SPEED)
        move = ~self.reached
        h = s[:, 2] / 180.0 * PI
        vx, vy = np.cos(h) * s[:, 3], np.sin(h) * s[:, 3]  # from the heading before this step's turn
        heading = s[:, 2] + s[:, 4]
        heading[heading > 360] -= 360
        heading[heading < 0] += 360
        s[move, 2] = heading[move]
        nx, ny = s[:, 0] + vx, s[:, 1] + vy
        free = move & ~(self._walls.distance2(nx, ny) < RADIUS * RADIUS).any(axis=0)
        s[free, 0] = nx[free]
        s[free, 1] = ny[free]
        self.reached |= self.distance() < GOAL_RADIUS
        return self.observe()


class HardMaze(Env):
    """Lehman and Stanley's maze: steer a wheeled robot with rangefinders and a goal radar through a deceptive maze.

    ``map``: ``"hard"`` (default) or ``"medium"`` (novelty search's two maps); ``inputs``: ``"paper"`` or
    ``"code"`` (see the module's docstring, which also cites where every number comes from).

    ## Action Space
    ``Box(-1, 1, (2,), float32)``: turning and forward acceleration; each adds half of itself to the angular
    velocity (degrees a step) and the speed (units a step), both held in [-3, 3].

    ## Observation Space
    ``Box(0, 1, (11,), float32)``: the bias (1), six rangefinders (distance to the nearest wall / 100, at -90,
    -45, 0, 45, 90, 180 degrees from the heading), four radar slices (1 in the 90-degree slice, centred on 0, 90,
    180 or 270 degrees from the heading, that holds the goal).

    ## Rewards
    0 until the last step; then the paper's fitness ``300 - distance to the goal`` (at least 0.1).

    ## Starting State
    The map's start, heading 0, at rest (deterministic; ``reset(seed)`` only seeds ``np_random``).

    ## Episode End
    Termination: within 5 units of the goal. Truncation: after ``max_episode_steps`` (400). A move that would
    bring the robot closer than its radius (8) to a wall is cancelled (the robot keeps its speed and may turn).
    ``info["behavior"]`` is the position (x, y): the final one is the paper's behaviour characterisation.
    """

    metadata: dict[str, Any] = {"render_modes": []}
    episode_attrs = ("state", "reached", "steps")

    def __init__(self, map: str = "hard", max_episode_steps: int = 400,  # noqa: A002 - the maze's name
                 inputs: str = "paper") -> None:
        self._robots = HardMazeBatch(1, map, inputs)
        self.map_name = map
        self.maze = self._robots.maze
        self.max_episode_steps = int(max_episode_steps)
        self.observation_space = Box(0.0, 1.0, (11,), dtype=np.float32)
        self.action_space = Box(-1.0, 1.0, (2,), dtype=np.float32)
        self.steps = 0

    @property
    def state(self) -> np.ndarray:
        return self._robots.state

    @state.setter
    def state(self, value: Any) -> None:
        self._robots.state = np.asarray(value, dtype=np.float64).reshape(1, 5).copy()

    @property
    def reached(self) -> np.ndarray:
        return self._robots.reached

    @reached.setter
    def reached(self, value: Any) -> None:
        self._robots.reached = np.asarray(value, dtype=bool).reshape(1).copy()

    def _info(self) -> dict[str, Any]:
        d = float(self._robots.distance()[0])
        return {"behavior": self._robots.position[0], "distance": d, "solved": bool(self._robots.reached[0])}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.steps = 0
        return self._robots.reset()[0], self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs = self._robots.step(np.asarray(action, dtype=np.float64).reshape(1, 2))[0]
        self.steps += 1
        terminated = bool(self._robots.reached[0])
        truncated = not terminated and self.steps >= self.max_episode_steps
        reward = float(self._robots.fitness()[0]) if terminated or truncated else 0.0
        return obs, reward, terminated, truncated, self._info()
