"""Chase: a hero learns to catch a target that runs away (godot-ai's example), as a ``ParallelEnv``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.parallel_env import ParallelEnv
from ..base.spaces import Box, Discrete, Space

__all__ = ["ChaseEnv", "CHASE_ACTIONS"]

CHASE_ACTIONS = ("stay", "up", "down", "left", "right")
#: (dx, dy) of each action; "up" is +y.
MOVES = ((0, 0), (0, 1), (0, -1), (-1, 0), (1, 0))


class ChaseEnv(ParallelEnv):
    """A hero and a target on a ``size x size`` grid; the hero must step onto the target's cell.

    ## Agents
    ``target="scripted"`` (default): one agent, ``"hero"``; the target flees by a fixed rule: with
    probability ``target_speed`` it takes the move that puts it farthest (Manhattan) from the hero,
    ties drawn at random, otherwise it stays. ``target="agent"``: two agents, ``"hero"`` and
    ``"target"``, the target choosing its own moves (it learns, or plays a frozen model).

    ## Action Space (each agent)
    ``Discrete(5)``: ``stay``, ``up``, ``down``, ``left``, ``right``. Moves off the grid leave the mover
    in place; the target cannot step onto the hero.

    ## Observation Space (each agent)
    ``Box(-1, 1, (4,), float32)``: the agent's own cell ``(x, y)`` and the other's offset ``(dx, dy)``,
    all divided by ``size - 1``.

    ## Rewards
    Hero: ``+1`` when it catches the target, ``-step_cost`` (0.02) on every other step, plus
    ``closing * (distance before - distance after)`` (Manhattan distance between the two at the start
    and at the end of the step, ``closing`` 0.05) so that getting nearer pays at once. Target: the
    negative (zero-sum).

    ## Order within a step
    The hero moves first; if it lands on the target the episode ends (caught). Otherwise the target moves.

    ## Starting State
    Hero and target on two different random cells at least 2 steps apart (``self.np_random``).

    ## Episode End
    * Termination (every agent): the hero caught the target.
    * Truncation (every agent): ``max_steps`` (30) steps.

    ``info["caught"]`` (0/1) is set for every agent on the last step: the task metric, once per episode.
    """

    metadata = {"render_modes": ["ansi"]}
    task_metric = "caught"

    def __init__(self, size: int = 5, max_steps: int = 30, target: str = "scripted", target_speed: float = 0.5,
                 step_cost: float = 0.02, closing: float = 0.05) -> None:
        if size < 3:
            raise ValueError("ChaseEnv: size must be at least 3")
        if target not in ("scripted", "agent"):
            raise ValueError(f"ChaseEnv: target must be 'scripted' or 'agent', not {target!r}")
        if max_steps <= 0 or not 0.0 <= target_speed <= 1.0:
            raise ValueError("ChaseEnv: max_steps must be positive and target_speed in [0, 1]")
        self.size, self.max_steps, self.target_mode = int(size), int(max_steps), target
        self.target_speed, self.step_cost, self.closing = float(target_speed), float(step_cost), float(closing)
        self.possible_agents = ["hero"] if target == "scripted" else ["hero", "target"]
        self.agents = []
        self._obs_space = Box(-1.0, 1.0, (4,), np.float32)
        self._act_space = Discrete(5, CHASE_ACTIONS)
        self.hero = (0, 0)
        self.target = (1, 1)
        self.steps = 0

    def observation_space(self, agent: str) -> Space:
        return self._obs_space

    def action_space(self, agent: str) -> Space:
        return self._act_space

    def _moved(self, pos: tuple[int, int], action: Any) -> tuple[int, int]:
        if not self._act_space.contains(action):
            raise ValueError(f"ChaseEnv: invalid action {action!r} for {self._act_space}")
        dx, dy = MOVES[int(action)]
        x, y = pos[0] + dx, pos[1] + dy
        return (x, y) if 0 <= x < self.size and 0 <= y < self.size else pos

    def _observe(self, me: tuple[int, int], other: tuple[int, int]) -> np.ndarray:
        scale = float(self.size - 1)
        return np.array([me[0], me[1], other[0] - me[0], other[1] - me[1]], dtype=np.float32) / np.float32(scale)

    def _observations(self) -> dict[str, np.ndarray]:
        obs = {"hero": self._observe(self.hero, self.target)}
        if "target" in self.possible_agents:
            obs["target"] = self._observe(self.target, self.hero)
        return {a: obs[a] for a in self.agents}

    def distance(self) -> int:
        """Manhattan distance between hero and target (0: caught)."""
        return abs(self.hero[0] - self.target[0]) + abs(self.hero[1] - self.target[1])

    def _flee(self) -> int:
        """The scripted target's move: farthest from the hero with probability ``target_speed``, else stay."""
        if self.np_random.random() >= self.target_speed:
            return 0
        hx, hy = self.hero
        dist = [abs(x - hx) + abs(y - hy) if (x, y) != self.hero else -1
                for x, y in (self._moved(self.target, a) for a in range(5))]
        best = np.flatnonzero(np.array(dist) == max(dist))
        return int(best[self.np_random.integers(len(best))])

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        cells = [(x, y) for x in range(self.size) for y in range(self.size)]
        self.hero = cells[int(self.np_random.integers(len(cells)))]
        far = [c for c in cells if abs(c[0] - self.hero[0]) + abs(c[1] - self.hero[1]) >= 2]
        self.target = far[int(self.np_random.integers(len(far)))]
        self.steps = 0
        self.agents = list(self.possible_agents)
        return self._observations(), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if not self.agents:
            raise RuntimeError("ChaseEnv: the episode is over; call reset()")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"ChaseEnv: no action for {missing}")
        before = self.distance()
        self.hero = self._moved(self.hero, actions["hero"])
        caught = self.hero == self.target
        if not caught:
            move = self._flee() if self.target_mode == "scripted" else actions["target"]
            moved = self._moved(self.target, move)
            if moved != self.hero:
                self.target = moved
        self.steps += 1
        hero_reward = (1.0 if caught else -self.step_cost) + self.closing * (before - self.distance())
        rewards = {"hero": hero_reward, "target": -hero_reward}
        truncated = not caught and self.steps >= self.max_steps
        live = list(self.agents)
        obs = self._observations()
        infos: dict[str, dict[str, Any]] = {a: {} for a in live}
        if caught or truncated:
            for a in live:
                infos[a]["caught"] = int(caught)
            self.agents = []
        return (obs, {a: rewards[a] for a in live}, {a: caught for a in live}, {a: truncated for a in live}, infos)

    def render(self) -> str:
        """The grid as text, top row first: ``H`` hero, ``T`` target."""
        rows = []
        for y in reversed(range(self.size)):
            rows.append("".join("H" if (x, y) == self.hero else "T" if (x, y) == self.target else "."
                                for x in range(self.size)))
        return "\n".join(rows)
