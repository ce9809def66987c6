"""A Trainer node's Demonstration: the agent learns from the file before training (``drla_core.rl.bc``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...drla_core.io.demos import DemoFormatError, load_demo
from ...drla_core.rl import bc


def learn_from(agent: Any, path: str, seed: int = 0) -> dict[str, float]:
    """Load ``path`` and learn from it (DQN: pre-training and its replay; PPO: cloning and the decaying BC term);
    raises ``ValueError`` naming the file and the problem."""
    try:
        demo = load_demo(path)
        return bc.imitation(agent, demo, seed=seed)
    except (DemoFormatError, ValueError, TypeError) as exc:
        raise ValueError(f"Demonstration {Path(path).name}: {exc}") from None
