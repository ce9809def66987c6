"""``drla train``'s network flags, shared by the built-in environments (``cli``) and .blend trees (``scene``):
``--metrics`` and ``--tensorboard`` (dashboards) and ``--grow`` (a growth rule), and what a resumed run keeps of them.
"""

from __future__ import annotations

import argparse
from typing import Any

from drla_core.nets.growth import GrowthRule

from .common import CLIError, int_range
from .dashboards import MetricsWriter, open_tensorboard


def add_train_flags(p: argparse.ArgumentParser) -> None:
    """``drla train``'s dashboard and growth flags (DQN, on a built-in environment or a scene's tree)."""
    p.add_argument("--metrics", metavar="FILE.jsonl", help="append every metric to this file as JSON lines "
                   "(episode, train, eval, growth, end events)")
    p.add_argument("--tensorboard", metavar="DIR", help="write TensorBoard event files here (needs tensorboardX: "
                   "pip install 'drla[tensorboard]')")
    p.add_argument("--grow", type=int_range(1, 1000), metavar="K",
                   help="grow the network when the evaluation return has not improved for K evaluations: each "
                   "hidden layer x4, up to 256 units, 4 times at most (a .blend tree whose Network node grows "
                   "keeps its own rule, with patience K)")


def train_callbacks(args: argparse.Namespace, resumed: Any = None) -> list[Any]:
    """The callbacks those flags ask for (a DQN run). A run resumed (``resumed``: its checkpoint) that grew by a
    rule keeps growing by it, counters included, without ``--grow`` given again."""
    out: list[Any] = []
    if getattr(args, "grow", None):
        if args.grow < 1:
            raise CLIError("--grow: give a number of evaluations, 1 or more")
        out.append(GrowthRule(patience=args.grow, max_grows=4, max_size=256, factor=4))
    else:
        saved = saved_growth_rule(resumed)
        if saved is not None:
            out.append(GrowthRule.from_state(saved))
    return out + dashboard_callbacks(args)


def check_resume_hidden(args: argparse.Namespace, ckpt: Any) -> None:
    """A run whose network grew resumes at its grown size: ``--hidden`` given again (the run's first command
    repeated) is refused with that reason rather than as "the network differs"."""
    meta = getattr(ckpt, "meta", None)
    grown = isinstance(meta, dict) and (meta.get("agent") or {}).get("growth")
    if grown and getattr(args, "hidden", None):
        sizes = ", ".join(f"{h['size']} {h['activation']}" if isinstance(h, dict) else str(h)
                          for h in (meta.get("agent") or {}).get("architecture", {}).get("hidden", []))
        raise CLIError(f"--hidden: the network of {ckpt.path} grew during training (to {sizes}); a resumed run keeps "
                       "its grown network: drop --hidden")


def saved_growth_rule(ckpt: Any) -> dict[str, Any] | None:
    """The growth rule's state a DQN checkpoint holds (``checkpoint.callback_states``), or None."""
    meta = getattr(ckpt, "meta", None)
    saved = (meta.get("callbacks") or {}).get(GrowthRule.checkpoint_key) if isinstance(meta, dict) else None
    return saved if isinstance(saved, dict) and isinstance(saved.get("settings"), dict) else None


def dashboard_callbacks(args: argparse.Namespace) -> list[Any]:
    """``--metrics`` and ``--tensorboard``: one ``MetricsWriter`` (none when neither is given)."""
    out: list[Any] = []
    if getattr(args, "metrics", None) or getattr(args, "tensorboard", None):
        tb = None
        if args.tensorboard:
            try:
                tb = open_tensorboard(args.tensorboard)
            except ImportError as exc:
                raise CLIError(str(exc)) from exc
        out.append(MetricsWriter(args.metrics, tb))
    return out
