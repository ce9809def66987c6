"""A Trainer node's Demonstration: the agent learns from the file before training (``drla_core.rl.bc``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...drla_core.io.demos import DemoFormatError, load_demo
from ...drla_core.rl import bc

#: The attribute a run's agent keeps what it learnt from a demonstration in (``learnt_text`` reads it)
LEARNT = "drla_demonstration"


def learn_from(agent: Any, path: str, seed: int = 0) -> dict[str, float]:
    """Load ``path`` and learn from it (DQN: pre-training and its replay; PPO: cloning and the decaying BC term);
    raises ``ValueError`` naming the file and the problem. The agent remembers what it learnt (``learnt_text``)."""
    try:
        demo = load_demo(path)
        figures = bc.imitation(agent, demo, seed=seed)
    except (DemoFormatError, ValueError, TypeError) as exc:
        raise ValueError(f"Demonstration {Path(path).name}: {exc}") from None
    try:
        setattr(agent, LEARNT, {"file": Path(path).name, "steps": len(demo), "episodes": demo.n_episodes,
                                "recorded_by": demo.recorded_by, **figures})
    except AttributeError:  # (an agent with __slots__: nothing to show, the learning happened)
        pass
    return figures


def learnt_text(agent: Any) -> str:
    """What ``agent`` learnt from its Trainer's Demonstration before training, in words ('' : none): the file,
    its steps, and how far the pre-training got (the share of demonstrated actions the policy then takes)."""
    learnt = getattr(agent, LEARNT, None)
    if not isinstance(learnt, dict):
        return ""
    text = f"Learnt from the demonstration {learnt['file']} ({learnt['steps']} steps) first"
    if "agreement" in learnt:
        text += f": behavioural cloning, {learnt['agreement']:.0%} of its actions matched"
    elif "mean_abs_error" in learnt:
        text += f": behavioural cloning, mean action error {learnt['mean_abs_error']:.3g}"
    if learnt.get("replay"):
        text += f"; {int(learnt['replay'])} transitions in the replay"
    return text
