"""XOR as the NEAT paper scores it (Stanley & Miikkulainen 2002, section 4.1; NEAT C++'s ``xor_evaluate``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.env import Env
from ..base.spaces import Box

__all__ = ["XOR", "XOR_INPUTS", "XOR_TARGETS", "xor_fitness", "xor_solved"]

#: The four patterns in the order NEAT C++ presents them, and their targets.
XOR_INPUTS = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], dtype=np.float32)
XOR_TARGETS = np.array([0.0, 1.0, 1.0, 0.0])


def xor_fitness(outputs: np.ndarray) -> np.ndarray:
    """``(4 - sum |output - target|)^2`` of each row of ``outputs`` (n, 4), outputs in [0, 1]."""
    err = np.abs(np.asarray(outputs, dtype=np.float64) - XOR_TARGETS).sum(axis=-1)
    return (4.0 - err) ** 2


def xor_solved(outputs: np.ndarray) -> np.ndarray:
    """Whether every output of a row is on the right side of 0.5 (NEAT C++: ``< 0.5`` for 0, ``>= 0.5`` for 1)."""
    out = np.asarray(outputs)
    return ((out >= 0.5) == (XOR_TARGETS == 1.0)).all(axis=-1)


class XOR(Env):
    """Compute exclusive or: the four patterns, one per step.

    ## Action Space
    ``Box(0, 1, (1,), float32)``: the answer to the pattern shown.

    ## Observation Space
    ``Box(0, 1, (2,), float32)``: the two bits (00, 01, 10, 11 in that order). The paper's third input,
    a constant bias, is each node's own bias in DRLA.

    ## Rewards
    0 on the first three steps; on the fourth, the paper's fitness ``(4 - sum of |answer - target|)^2``
    over the four answers (16 is perfect), so an episode's return is that fitness.

    ## Starting State
    The pattern 00 (deterministic).

    ## Episode End
    * Termination: after the fourth answer.

    ``info["solved"]`` on the last step is 1 when every answer is on the right side of 0.5 (the paper's
    criterion); it is the task metric.
    """

    task_metric = "solved"
    episode_attrs = ("answers",)

    def __init__(self) -> None:
        self.observation_space = Box(0.0, 1.0, (2,), np.float32)
        self.action_space = Box(0.0, 1.0, (1,), np.float32)
        self.answers: list[float] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.answers = []
        return XOR_INPUTS[0].copy(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if len(self.answers) >= 4:
            raise RuntimeError("XOR: step after the episode ended; call reset()")
        self.answers.append(float(np.clip(np.asarray(action, dtype=np.float64).reshape(-1)[0], 0.0, 1.0)))
        if len(self.answers) < 4:
            return XOR_INPUTS[len(self.answers)].copy(), 0.0, False, False, {}
        out = np.array([self.answers])
        return (XOR_INPUTS[0].copy(), float(xor_fitness(out)[0]), True, False,
                {"solved": int(xor_solved(out)[0])})
