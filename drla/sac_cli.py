"""``drla train <built-in env> --agent sac``: Soft Actor-Critic on an environment with continuous actions (pendulum).

The run is a ``TrainingRun`` like DQN's (evaluations, step checkpoints, Ctrl-C, ``--resume`` of an ``_ckpt.npz``,
``--copies``); the hyper-parameters are ``SACConfig``'s: the flags it shares with DQN (learning rate, gamma, batch,
buffer, learning starts, train frequency, gradient steps, tau, hidden layers, Adam's epsilon, keep-best) plus its
own group (``add_flags``). A DQN-only flag given to SAC, or a SAC-only one to another agent, is refused.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

import numpy as np

from drla_core.base.spaces import Box
from drla_core.base.vector_env import SyncVectorEnv
from drla_core.envs import ENV_NAMES, PARALLEL_ENV_NAMES, make
from drla_core.rl.sac import SACAgent, SACConfig
from drla_core.rl.train import TrainingRun
from drla_core.rl.vector_train import VectorTrainingRun

from . import demo_flags, train_flags
from .common import (
    CLIError,
    CtrlC,
    check_replay_memory,
    checkpoint_saver,
    finish_training,
    float_range,
    out_paths,
    parse_hidden,
    read_resume,
    report_title,
    resume,
)
from .gym_adapter import make_target
from .progress import ProgressBar

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


resume_config = train_flags.sac_resume_config


def _given(value: Any, saved: Any, default: Any) -> Any:
    return value if value is not None else saved if saved is not None else default


def train(args: argparse.Namespace, ckpt: Any = None) -> int:
    """Train SAC on ``args.target`` (a built-in environment) to the end or Ctrl-C; write the deterministic policy,
    the report and, with --checkpoint-interval or on Ctrl-C, the full state for --resume."""
    args.agent = "sac"
    demo_flags.check_agent(args, ("sac",))
    _refuse_dqn_flags(args)
    train_flags.check_agent_flags(args)  # PPO's flags
    if ckpt is None and args.resume:
        ckpt = read_resume(args.resume)
    saved = ckpt.settings if ckpt is not None else {}
    if ckpt is not None and ckpt.meta.get("kind") != "sac":
        raise CLIError(f"--resume: {ckpt.path} is a {ckpt.meta.get('kind')} run, not a SAC one: drop --agent sac")
    if ckpt is not None and saved.get("target") != args.target:
        raise CLIError(f"--resume: {ckpt.path} is a run on {saved.get('target')!r}, not on {args.target!r}")
    if args.target in PARALLEL_ENV_NAMES:
        raise CLIError(f"{args.target} is a two-agent game: train it with --agent coevolution")
    env, eval_env = make_target(args.target), make_target(args.target)
    if not isinstance(env.action_space, Box):
        continuous = [n for n in ENV_NAMES if isinstance(make(n).action_space, Box)]
        raise CLIError(f"--agent sac needs continuous actions; {args.target} has a set of actions "
                       f"({env.action_space}): train it with --agent dqn or --agent ppo (SAC trains "
                       f"{', '.join(continuous)})")
    saved_run = ckpt.meta["run"] if ckpt is not None else {}
    steps = args.steps or saved_run.get("total_steps") or DEFAULT_STEPS.get(args.target, 20_000)
    if ckpt is not None and args.seed is not None and args.seed != saved_run["seed"]:
        raise CLIError(f"--seed: a resumed run keeps its seed ({saved_run['seed']}); drop --seed")
    args.seed = saved_run.get("seed", 0) if args.seed is None else args.seed
    check_replay_memory(args.buffer_size, int(np.prod(env.observation_space.shape)))
    train_flags.check_resume_hidden(args, ckpt)
    config = _config(ckpt.config if ckpt is not None else None, args, steps)
    try:
        agent = SACAgent(env.observation_space, env.action_space, config, seed=args.seed)
    except (TypeError, ValueError) as exc:
        raise CLIError(f"--agent sac: {exc}") from exc
    model_path, report_path = out_paths(args.out or saved.get("out"), f"{args.target}_sac")
    meta: dict[str, Any] = {"env": args.target, "seed": args.seed}
    callbacks: list[Any] = ([] if args.quiet else [ProgressBar(steps)]) + train_flags.dashboard_callbacks(args)
    interval = args.checkpoint_interval if args.checkpoint_interval is not None else saved_run.get(
        "checkpoint_interval", 0)
    options = dict(seed=args.seed, eval_env=eval_env,
                   eval_interval=_given(args.eval_interval, saved_run.get("eval_interval"), 2000),
                   eval_episodes=_given(args.eval_episodes, saved_run.get("eval_episodes"), 10),
                   callbacks=callbacks, checkpoint_interval=interval,
                   checkpoint_path=str(model_path.with_name(model_path.stem + "_step{step}.json")),
                   save_fn=checkpoint_saver(model_path, {"target": args.target, "agent": "sac",
                                                         "out": str(model_path)}))
    copies = getattr(args, "copies", None) or saved_run.get("num_envs") or 1
    if copies > 1:  # N copies stepped together, one actor call for all; steps count env steps of every copy
        meta["copies"] = copies
        venv = SyncVectorEnv([lambda: make_target(args.target)] * copies)
        run: TrainingRun = VectorTrainingRun(venv, agent, steps, **options)
    else:
        run = TrainingRun(env, agent, steps, **options)
    if ckpt is not None:
        resume(run, ckpt)
    with CtrlC().installed() as ctrl_c:
        ctrl_c.run = run
        t0 = time.perf_counter()
        run.run()
        wall = time.perf_counter() - t0
        meta.update(training_steps=run.steps, episodes=run.episodes)
        if run.history.interrupted:
            meta["interrupted"] = True
        return finish_training(run, run.to_model(meta), model_path, report_path,
                               report_title(f"SAC on {args.target}", run, args.seed), wall, ctrl_c)
