"""TrapCorridor: a corridor with a trap door everywhere but at its end; the action mask removes the trap."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.env import Env
from ..base.spaces import Box, Discrete

__all__ = ["TrapCorridor"]


class TrapCorridor(Env):
    """Walk to the end of a corridor and open the door there.

    ## Description
    The agent stands in one of ``length`` cells. It can step ``left``, step ``right`` or ``open`` the door in
    front of it. Only the last cell has the exit door; everywhere else ``open`` drops the agent through a trap
    (the episode ends with a penalty). With ``masked`` (the default) ``info["action_mask"]`` disables ``open``
    (and ``left`` in the first cell, ``right`` in the last) wherever it is not allowed, as Gymnasium's action
    masks do: an agent that honours the mask never falls, and only has to learn to walk right and open.

    ## Action Space
    ``Discrete(3)``: ``left``, ``right``, ``open``.

    ## Observation Space
    ``Box(0, 1, (length,), float32)``: the one-hot of the agent's cell.

    ## Rewards
    ``-0.01`` per step; ``+1`` for opening the exit door; ``-1`` for falling through a trap.

    ## Starting State
    A cell drawn uniformly among the first half of the corridor (``self.np_random``).

    ## Episode End
    * Termination: the exit door opened or a trap fell through.
    * Truncation: after ``max_steps`` (``4 * length``) steps.

    ``info["action_mask"]`` (int8, one per action; with ``masked``) on reset and every step;
    ``info["escaped"]`` (0/1) on the last step, the task metric.
    """

    task_metric = "escaped"

    episode_attrs = ("cell", "steps")

    def __init__(self, length: int = 8, masked: bool = True, max_steps: int | None = None) -> None:
        if length < 2:
            raise ValueError("TrapCorridor: needs length >= 2")
        self.length, self.masked = int(length), bool(masked)
        self.max_steps = int(max_steps) if max_steps is not None else 4 * self.length
        self.observation_space = Box(0.0, 1.0, (self.length,), np.float32)
        self.action_space = Discrete(3, ["left", "right", "open"])
        self.cell = 0
        self.steps = 0

    def action_mask(self) -> np.ndarray:
        """The actions allowed in the current cell: int8, one per action."""
        last = self.length - 1
        return np.array([self.cell > 0, self.cell < last, self.cell == last], dtype=np.int8)

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.length, dtype=np.float32)
        obs[self.cell] = 1.0
        return obs

    def _info(self, **extra: Any) -> dict[str, Any]:
        return {"action_mask": self.action_mask(), **extra} if self.masked else dict(extra)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.cell = int(self.np_random.integers(max(self.length // 2, 1)))
        self.steps = 0
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if not self.action_space.contains(action):
            raise ValueError(f"TrapCorridor: invalid action {action!r} for {self.action_space}")
        a, last = int(action), self.length - 1
        self.steps += 1
        reward, terminated, extra = -0.01, False, {}
        if a == 2:
            terminated = True
            escaped = self.cell == last
            reward = 1.0 if escaped else -1.0
            extra = {"escaped": int(escaped), "fell": int(not escaped)}
        else:
            self.cell = min(max(self.cell + (1 if a == 1 else -1), 0), last)
        truncated = not terminated and self.steps >= self.max_steps
        if truncated:
            extra = {"escaped": 0, "fell": 0}
        return self._obs(), reward, terminated, truncated, self._info(**extra)
