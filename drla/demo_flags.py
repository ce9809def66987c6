"""``drla train ... --demo FILE``: learn from a demonstration (``drla_core.rl.bc.imitation``), for both a built-in
environment and a scene's tree."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection
from typing import Any

from drla_core.io.demos import DemoFormatError, load_demo

from .common import CLIError, float_range


def add_demo_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--demo", metavar="FILE.npz",
                   help="learn from a demonstration (drla record-keyframes, the Record Demonstration mode): DQN is "
                        "pre-trained on it (DQfD's margin and TD losses) and keeps it in its replay; PPO clones it, "
                        "then keeps a behavioural-cloning term whose strength falls to 0 over the run "
                        "(docs/demonstrations.md)")
    p.add_argument("--demo-strength", type=float_range(0.0, 100.0), default=1.0, metavar="S",
                   help="PPO: the starting strength of the behavioural-cloning term (0: pre-training only; default 1)")


def apply_demo(args: argparse.Namespace, agent: Any, resumed: bool) -> None:
    """Load ``args.demo`` (if given), check it fits ``agent``, and learn from it; says what it did on stderr."""
    path = getattr(args, "demo", None)
    if not path:
        return
    from drla_core.rl import bc  # (imports the agents: only when a demonstration is given)

    strength = float(getattr(args, "demo_strength", 1.0))
    try:
        demo = load_demo(path)
        figures = bc.imitation(agent, demo, seed=int(args.seed or 0), pretrain=not resumed, bc_strength=strength)
    except (DemoFormatError, ValueError, TypeError) as exc:
        raise CLIError(f"--demo: {exc}") from None
    shown = ", ".join(f"{k} {v:.3g}" for k, v in figures.items())
    print(f"demonstration {path}: {len(demo)} steps, {demo.n_episodes} episodes" + (f"; {shown}" if shown else ""),
          file=sys.stderr)


def check_agent(args: argparse.Namespace, evolution: Collection[str]) -> None:
    """``--demo`` with an evolution ``--agent``: refused (only DQN and PPO learn from demonstrations)."""
    if getattr(args, "demo", None) and args.agent in evolution:
        raise CLIError(f"--demo: --agent {args.agent} does not learn from demonstrations (dqn and ppo do)")


def check_workers(args: argparse.Namespace, workers: int) -> None:
    if workers and getattr(args, "demo", None):
        raise CLIError("--demo: not with --workers (the demonstration is learnt in this process)")


def replace_tree_demo(args: argparse.Namespace, compiled: Any, resumed: bool = False) -> None:
    """``--demo`` is learnt instead of the Trainer node's Demonstration (not both); a resumed run's checkpoint
    holds what the Demonstration taught (it is not learnt again)."""
    if (getattr(args, "demo", None) or resumed) and compiled.trainer is not None:
        compiled.trainer.demonstration = ""


def apply_demo_to_job(args: argparse.Namespace, job: Any, what: str, resumed: bool) -> None:
    """A scene's training job: its agent learns from ``args.demo`` (a job without one refuses it)."""
    if not getattr(args, "demo", None):
        return
    if getattr(job, "agent", None) is None:
        raise CLIError(f"--demo: {what}, which does not learn from demonstrations (DQN and PPO agents do)")
    apply_demo(args, job.agent, resumed)
