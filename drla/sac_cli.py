"""``drla train <built-in env> --agent sac``: Soft Actor-Critic on an environment with continuous actions (pendulum).

``cli.cmd_train`` runs it as it runs DQN and PPO (a ``TrainingRun``: evaluations, step checkpoints, Ctrl-C,
``--resume`` of an ``_ckpt.npz``, ``--copies``); here are its flags and its agent. The hyper-parameters are
``SACConfig``'s: the flags it shares with DQN (learning rate, gamma, batch, buffer, learning starts, train frequency,
gradient steps, tau, hidden layers, Adam's epsilon, keep-best) plus its own group (``add_flags``). A DQN-only flag
given to SAC, or a SAC-only one to another agent, is refused.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import numpy as np

from drla_core.base.spaces import Box
from drla_core.envs import ENV_NAMES, make
from drla_core.rl.sac import SACAgent, SACConfig

from . import demo_flags, train_flags
from .common import CLIError, check_replay_memory, float_range, parse_hidden

#: SACConfig fields that only SAC reads, with their argparse types (every one a ``Range``).
SAC_TYPES: dict[str, Any] = {
    "init_temperature": float_range(0.0, 1e6, low_open=True),
    "target_entropy": float_range(-1e6, 1e6),
}
SAC_ONLY = (*SAC_TYPES, "learn_temperature")
#: DQNConfig fields SAC does not have: refused with --agent sac.
DQN_ONLY = ("target_update_interval", "double_dqn", "exploration_fraction", "exploration_initial_eps",
            "exploration_final_eps", "max_grad_norm", "loss", "grow")
#: Per environment: the steps of a run when --steps is not given.
DEFAULT_STEPS = {"pendulum": 20_000}


def add_flags(parser: argparse.ArgumentParser) -> None:
    """The SAC-only flags of ``drla train``."""
    group = parser.add_argument_group("SAC hyper-parameters (--agent sac; it also reads the DQN group's "
                                      "--learning-rate, --gamma, --batch-size, --buffer-size, --learning-starts, "
                                      "--train-freq, --gradient-steps, --tau, --hidden, --adam-eps, --keep-best; "
                                      "its defaults: SACConfig's)")
    group.add_argument("--init-temperature", type=SAC_TYPES["init_temperature"], metavar="FLOAT_RANGE",
                       help="the entropy temperature alpha at the start (default 1)")
    group.add_argument("--learn-temperature", action=argparse.BooleanOptionalAction, default=None,
                       help="learn alpha so that the policy's entropy tends to --target-entropy (default: on)")
    group.add_argument("--target-entropy", type=SAC_TYPES["target_entropy"], metavar="FLOAT_RANGE",
                       help="the entropy alpha steers the policy to (default: minus the number of action values)")


def refuse_sac_flags(args: argparse.Namespace) -> None:
    """A SAC-only flag given to another agent: refused with the reason."""
    for name in SAC_ONLY:
        if getattr(args, name, None) is not None:
            flag = "--" + name.replace("_", "-")
            raise CLIError(f"{flag}: a SAC setting; --agent {args.agent or 'dqn'} does not use it (drop {flag})")


def wanted(args: argparse.Namespace, ckpt: Any) -> bool:
    """Whether ``drla train`` runs SAC: ``--agent sac``, or no ``--agent`` and a SAC checkpoint to resume (another
    agent is then refused the SAC-only flags)."""
    if args.agent == "sac" or (args.agent is None and ckpt is not None and ckpt.meta.get("kind") == "sac"):
        return True
    refuse_sac_flags(args)
    return False


def _refuse_dqn_flags(args: argparse.Namespace) -> None:
    for name in (*DQN_ONLY, "population"):
        if getattr(args, name, None) is not None:
            flag = "--" + name.replace("_", "-")
            raise CLIError(f"{flag}: not a SAC setting; --agent sac does not use it (drop {flag})")


def check(args: argparse.Namespace, ckpt: Any) -> None:
    """Before a SAC run is built: ``--agent sac`` set, the other agents' flags (and ``--demo``) refused, a checkpoint
    of another agent refused."""
    args.agent = "sac"
    demo_flags.check_agent(args, ("sac",))
    _refuse_dqn_flags(args)
    train_flags.check_agent_flags(args)  # PPO's flags
    if ckpt is not None and ckpt.meta.get("kind") != "sac":
        raise CLIError(f"--resume: {ckpt.path} is a {ckpt.meta.get('kind')} run, not a SAC one: drop --agent sac")


def _config(base: dict[str, Any] | None, args: argparse.Namespace, steps: int) -> SACConfig:
    fields = dict(base or {})
    for f in dataclasses.fields(SACConfig):
        value = getattr(args, f.name, None)
        if value is not None and f.name != "total_timesteps":
            fields[f.name] = parse_hidden(value) if f.name == "hidden" else value
    fields["total_timesteps"] = steps
    try:
        return SACConfig(**fields)
    except (TypeError, ValueError) as exc:
        raise CLIError(f"--resume: a SAC configuration this DRLA cannot use: {exc}" if base else str(exc)) from exc


def sac_agent(args: argparse.Namespace, env: Any, ckpt: Any, steps: int) -> SACAgent:
    """The SAC agent of ``drla train TARGET --agent sac``: the resumed run's config, then the flags given now; an
    environment with a set of actions is refused."""
    if not isinstance(env.action_space, Box):
        continuous = [n for n in ENV_NAMES if isinstance(make(n).action_space, Box)]
        raise CLIError(f"--agent sac needs continuous actions; {args.target} has a set of actions "
                       f"({env.action_space}): train it with --agent dqn or --agent ppo (SAC trains "
                       f"{', '.join(continuous)})")
    check_replay_memory(args.buffer_size, int(np.prod(env.observation_space.shape)))
    train_flags.check_resume_hidden(args, ckpt)
    config = _config(ckpt.config if ckpt is not None else None, args, steps)
    try:
        return SACAgent(env.observation_space, env.action_space, config, seed=args.seed)
    except (TypeError, ValueError) as exc:
        raise CLIError(f"--agent sac: {exc}") from exc
