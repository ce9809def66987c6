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


def add_record_parser(sub: Any) -> None:
    """``drla record-keyframes BLEND``."""
    p = sub.add_parser("record-keyframes", help="make a demonstration from a scene's keyframed animation",
                       description="Step a .blend's frame range as its tree's environment would, read the observations "
                                   "and rewards, and infer each step's action from what the keyframed objects did "
                                   "(the nearest action; continuous: the amounts). Prints the fraction of steps "
                                   "explained. The scene file is not changed.")
    p.add_argument("scene", help="path/to/scene.blend")
    p.add_argument("--tree", help="DRLA node tree in the .blend (default: the only one)")
    p.add_argument("--out", metavar="FILE.npz", help="the demonstration (default: <scene>_<tree>_keyframes.npz beside "
                                                     "the .blend)")
    p.add_argument("--tolerance", type=float_range(0.0, 1000.0), default=0.05, metavar="T",
                   help="a step is explained when its action's change is within T plus T times the keyframed change "
                        "(default 0.05)")
    p.set_defaults(func=cmd_record_keyframes)


def cmd_record_keyframes(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .scene import addon_module, compile_or_explain, open_scene

    if args.out and not args.out.lower().endswith(".npz"):
        raise CLIError(f"--out: a demonstration is an .npz file, got {args.out}")
    _bpy, ext, tree, scene = open_scene(args.scene, args.tree)
    compile_or_explain(ext, tree, scene)
    recorder = addon_module("runs.demos_keyframes")
    try:
        path, result = recorder.record_keyframes_to_file(tree, scene, args.out, str(Path(args.scene).resolve()),
                                                         tolerance=args.tolerance)
    except (ValueError, DemoFormatError) as exc:
        raise CLIError(str(exc)) from None
    demo = result.demo
    print(f"{len(demo)} steps recorded from frames {demo.meta['frames'][0]}..{demo.meta['frames'][1]}; "
          f"{result.explained:.0%} explained by an action within the tolerance; return {demo.rewards.sum():.3g}")
    print(f"demonstration written to {path}")
    return 0
