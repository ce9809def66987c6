"""IdentityEnv: the smallest learnable task, for fast learning tests (after SB3's ``IdentityEnv``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.env import Env
from ..base.spaces import Box, Discrete

__all__ = ["IdentityEnv"]


class IdentityEnv(Env):
    """Say which of ``n`` lights is on.

    ## Description
    Each step shows one of ``n`` lights (a one-hot vector); the agent is rewarded for naming it.
    The next light is independent of the action, so the optimal policy is the identity map and a
    working DQN reaches the maximum return within a few hundred steps.

    ## Action Space
    ``Discrete(n)`` (default ``n = 4``), named ``light_0`` ... ``light_{n-1}``.

    ## Observation Space
    ``Box(0, 1, (n,), float32)``: the one-hot of the current target.

    ## Rewards
    ``1`` when the action equals the target, ``0`` otherwise.

    ## Starting State
    A target drawn uniformly from ``self.np_random``; a new one after every step.

    ## Episode End
    * Termination: none.
    * Truncation: after ``ep_length`` (100) steps, so the best return is ``ep_length``.

    ``info["correct"]`` (0/1) is set on every step; it is the task metric.
    """

    task_metric = "correct"

    episode_attrs = ("target", "steps")

    def __init__(self, n: int = 4, ep_length: int = 100) -> None:
        if n < 2 or ep_length < 1:
            raise ValueError("IdentityEnv: needs n >= 2 and ep_length >= 1")
        self.n, self.ep_length = int(n), int(ep_length)
        self.observation_space = Box(0.0, 1.0, (self.n,), np.float32)
        self.action_space = Discrete(self.n, [f"light_{i}" for i in range(self.n)])
        self.target = 0
        self.steps = 0

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.n, dtype=np.float32)
        obs[self.target] = 1.0
        return obs

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.target = int(self.np_random.integers(self.n))
        self.steps = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if not self.action_space.contains(action):
            raise ValueError(f"IdentityEnv: invalid action {action!r} for {self.action_space}")
        correct = int(action) == self.target
        self.target = int(self.np_random.integers(self.n))
        self.steps += 1
        return self._obs(), float(correct), False, self.steps >= self.ep_length, {"correct": int(correct)}
