"""``drla train <built-in env> --agent ga|neat|es|cmaes|novelty|coevolution``: training jobs other than DQN on the pure
environments (``coevolution`` on a two-agent game such as ``pacman``).

``AGENTS`` maps an agent name to a builder ``(env_name, args) -> PureJob`` (a ``TrainingJob`` plus how to
draw its report); ``train`` runs any of them with one loop over the ``TrainingJob`` surface (advance in
slices, status, done, to_model), so a new agent kind is one more entry, not one more branch.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from drla_core.rl.base import TrainingJob
from drla_core.evolve.coevolution import COEVOLUTION_FORMAT, CoevolutionJob, save_coevolution_report
from drla_core.envs import PARALLEL_ENV_NAMES
from drla_core.evolve.evolution import (
    CHECKPOINT_FORMAT,
    EvolutionConfig,
    EvolutionJob,
    GAConfig,
    NoveltyConfig,
    save_evolution_report,
)
from drla_core.io.model_io import save_model
from drla_core.evolve.neat import NEATConfig
from drla_core.evolve.es import ESConfig
from drla_core.evolve.cmaes import CMAESConfig

from .common import CLIError, CtrlC, drla_command, out_paths, refuse_model_file, shown_path
from .gym_adapter import make_target as make  # a built-in environment's name, or gym:ID (drla train --gym-id)

#: Seconds per ``advance`` slice: how often the progress line and Ctrl-C are looked at. Nothing a run saves or
#: measures depends on it (tests/test_slices.py sets it to 0 and to an hour).
SLICE_S = float(os.environ.get("DRLA_SLICE_S", "0.25"))


@dataclass
class PureJob:
    """A job to run, what its report is called, and how to write the report and the run's own state."""

    job: TrainingJob
    title: str
    report: Callable[[Path, str, list[str]], Any]
    #: ``(path, settings)``: write the run's state with the CLI's settings (target, agent, out) for ``--resume``
    save_state: Callable[[Path, dict[str, Any]], Any] | None = None
    unit: str = "generation"


#: Per environment: the evolution budget and the champion check that ends a run early.
EVOLUTION_DEFAULTS: dict[str, dict[str, Any]] = {
    "cartpole": {"generations": 50, "target_return": 475.0},
    "deceptive_maze": {"generations": 80, "target_return": 1.0, "solve_episodes": 1,
                       "ga": {"mutation_rate": 0.2, "mutation_sigma": 0.2}},
    # without velocities a feed-forward network cannot tell how the poles move: recurrent NEAT. Solved: a
    # 1000-step damping episode scoring 0.1 (0.0001 a step balanced, then the damping part; the paper's
    # 100,000-step and generalisation tests are evolve.neat_tasks.run_task's)
    "double_pole_nv": {"generations": 100, "target_return": 0.1, "solve_episodes": 1, "neat": {"recurrent": True}},
    "hard_maze": {"generations": 100, "target_return": 295.0, "solve_episodes": 1,  # 300 - d: within 5 of the goal
                  "novelty": {"k": 15, "threshold": 6.0, "distance": "mean_abs", "admit": "nearest", "lower_after": 10,
                              "threshold_floor": 0.25}},  # Lehman and Stanley's archive (bench/novelty_maze.py)
    "pacman": {"generations": 40, "episodes": 2,
               "ga": {"population_size": 32, "hidden": [(8, "tanh")], "mutation_rate": 0.2, "mutation_sigma": 0.5}},
}


def _evolution_config(env_name: str, method: str, novelty: bool, args: argparse.Namespace) -> EvolutionConfig:
    defaults = dict(EVOLUTION_DEFAULTS.get(env_name, {"generations": 50}))
    ga = GAConfig(**defaults.pop("ga", {}))
    novelty_settings = defaults.pop("novelty", {})
    neat = NEATConfig(**defaults.pop("neat", {}))
    es, cmaes = (ESConfig(), None) if method == "es" else (None, CMAESConfig()) if method == "cmaes" else (None, None)
    if args.population is not None:
        ga.population_size = neat.population_size = args.population
        for settings in (es, cmaes):
            if settings is not None:
                settings.population_size = args.population
    if args.steps is not None:
        defaults["generations"] = args.steps
    return EvolutionConfig(method=method, ga=ga, neat=neat, es=es, cmaes=cmaes,
                           novelty=NoveltyConfig(**novelty_settings) if novelty else None, **defaults)


#: Each evolution method's name in a report's title.
METHOD_NAMES = {"ga": "GA", "neat": "NEAT", "es": "OpenAI-ES", "cmaes": "CMA-ES"}


def _evolution(method: str, novelty: bool) -> Callable[[str, argparse.Namespace], PureJob]:
    def build(env_name: str, args: argparse.Namespace) -> PureJob:
        if env_name in PARALLEL_ENV_NAMES:
            raise CLIError(f"{env_name} is a two-agent game: train it with --agent coevolution")
        saved = getattr(args, "resumed_state", None)
        try:
            if saved is None:
                job = EvolutionJob(lambda: make(env_name), _evolution_config(env_name, method, novelty, args),
                                   seed=args.seed)
            else:  # the saved settings, with --steps as the new number of generations
                config = EvolutionConfig.from_dict(saved["config"])
                if args.steps is not None:
                    config = replace(config, generations=args.steps)
                job = EvolutionJob(lambda: make(env_name), config, seed=args.seed)
                job.continue_from(saved)
        except (KeyError, TypeError, ValueError) as exc:
            raise CLIError(_resume_error(exc) if saved is not None else str(exc)) from exc
        name = METHOD_NAMES[method] + (" + novelty search" if novelty else "")
        return PureJob(job, f"{name} on {env_name}",
                       lambda path, title, lines: save_evolution_report(path, job.history, title, lines),
                       lambda path, settings: job.save_checkpoint(path, settings))
    return build


def _coevolution(env_name: str, args: argparse.Namespace) -> PureJob:
    if env_name not in PARALLEL_ENV_NAMES:
        raise CLIError(f"--agent coevolution needs a two-agent game ({', '.join(PARALLEL_ENV_NAMES)}), "
                       f"not {env_name}")
    saved = getattr(args, "resumed_state", None)
    try:
        if saved is None:
            job = CoevolutionJob(lambda: make(env_name), _evolution_config(env_name, "ga", False, args),
                                 seed=args.seed)
        else:
            job = CoevolutionJob.from_checkpoint(saved, lambda: make(env_name))
            if args.steps is not None:
                job.set_total_steps(args.steps)
    except (KeyError, TypeError, ValueError) as exc:
        raise CLIError(_resume_error(exc) if saved is not None else str(exc)) from exc
    return PureJob(job, f"co-evolution on {env_name} ({' vs '.join(job.names)})",
                   lambda path, title, lines: save_coevolution_report(path, job.history, job.names, title, lines),
                   lambda path, settings: job.save_checkpoint(path, settings))


#: Agent name -> builder. DQN keeps its own path in ``cli.cmd_train`` (evaluations, step checkpoints).
AGENTS: dict[str, Callable[[str, argparse.Namespace], PureJob]] = {
    "ga": _evolution("ga", novelty=False),
    "neat": _evolution("neat", novelty=False),
    "es": _evolution("es", novelty=False),
    "cmaes": _evolution("cmaes", novelty=False),
    "novelty": _evolution("ga", novelty=True),
    "coevolution": _coevolution,
}


def _resume_error(exc: Exception) -> str:
    what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
    return f"--resume: a broken population file: {what}"


def read_state(args: argparse.Namespace) -> None:
    """``--resume STATE``: read a population file this command wrote (``<out>_population.json``) into
    ``args.resumed_state``; the run continues with its saved agent, seed and settings (``--steps``: the new number
    of generations). A file of another target or agent, or a broken one, is refused with the reason."""
    path = Path(args.resume)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CLIError(f"--resume: cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CLIError(f"--resume: {path} is not a JSON population file: {exc}") from None
    refuse_model_file(path, data)
    if not isinstance(data, dict) or data.get("format") not in (CHECKPOINT_FORMAT, COEVOLUTION_FORMAT):
        raise CLIError(f"--resume: {path} is not a population file of `drla train --agent "
                       f"{'|'.join(AGENTS)}`")
    cli = data.get("settings") if isinstance(data.get("settings"), dict) else {}
    target, agent = cli.get("target"), cli.get("agent")
    if target is not None and target != args.target:
        raise CLIError(f"--resume: {path} is a run on {target!r}, not on {args.target!r}")
    if agent in AGENTS and args.agent not in (None, agent):
        raise CLIError(f"--resume: {path} is a run of --agent {agent}, not {args.agent}")
    if agent in AGENTS:
        args.agent = agent
    elif args.agent in (None, "dqn"):
        args.agent = "coevolution" if data.get("format") == COEVOLUTION_FORMAT else "ga"
    seed = data.get("seed")
    if args.seed is not None and args.seed != seed:
        raise CLIError(f"--seed: a resumed run keeps its seed ({seed}); drop --seed")
    args.seed = seed if isinstance(seed, int) else 0
    if args.out is None and isinstance(cli.get("out"), str):
        args.out = cli["out"]
    args.resumed_state = data


def _status_line(job: TrainingJob, unit: str, wall: float) -> str:
    figures = " | ".join(f"{k} {v}" for k, v in job.status().items())
    return f"[{job.steps}/{job.total_steps} {unit}s] {figures} | {wall:.1f} s"


#: ``drla train`` flags of a DQN run that these jobs do not read: refused (never silently ignored).
DQN_ONLY = ("copies", "eval_interval", "eval_episodes", "grow", "metrics", "tensorboard")


def check_flags(args: argparse.Namespace, dqn_fields: tuple[str, ...] = (), ppo_fields: tuple[str, ...] = ()) -> None:
    """Refuse the DQN and PPO flags given to an evolution run (``dqn_fields``: DQNConfig's, ``ppo_fields``: the
    PPO-only ones, one flag each)."""
    given = [name for name in (*DQN_ONLY, *dqn_fields, *ppo_fields) if getattr(args, name, None) is not None]
    if given:
        flag = "--" + given[0].replace("_", "-")
        who = "PPO" if given[0] in ppo_fields else "DQN"
        raise CLIError(f"{flag}: a {who} setting; --agent {args.agent} does not use it (drop {flag})")


def train(args: argparse.Namespace, dqn_fields: tuple[str, ...] = (), ppo_fields: tuple[str, ...] = ()) -> int:
    """Build the ``--agent`` job for ``args.target`` and run it to the end (or Ctrl-C); write the champion
    model, the report and the job's state (an evolution run's population) beside ``--out``."""
    if args.resume:
        read_state(args)
    if args.agent not in AGENTS:
        raise CLIError(f"--agent {args.agent}: {args.resume} is a population file of an evolution run")
    check_flags(args, dqn_fields, ppo_fields)
    args.seed = 0 if args.seed is None else args.seed
    built = AGENTS[args.agent](args.target, args)
    job = built.job
    model_path, report_path = out_paths(args.out, f"{args.target}_{args.agent}")
    state_path = model_path.with_name(model_path.stem + "_population.json")
    settings = {"target": args.target, "agent": args.agent, "out": str(model_path)}
    interval = args.checkpoint_interval or 0
    if args.resume:
        print(f"resuming {args.resume} at {built.unit} {job.steps} of {job.total_steps}", file=sys.stderr)
    stopped = False

    def save_state() -> None:
        if built.save_state is not None:
            built.save_state(state_path, settings)

    def stop() -> None:
        nonlocal stopped
        stopped = True

    t0 = time.perf_counter()
    last_print = saved_at = job.steps  # a line and a save per generation reached from here
    with CtrlC().installed() as ctrl_c:
        ctrl_c.stop = stop
        while not job.done and not stopped:
            # a slice never runs past a generation: its status line and checkpoint come at it, however fast the machine
            job.advance(max_steps=1, max_seconds=SLICE_S)
            if interval and job.steps % interval == 0 and job.steps != saved_at and not job.done:
                save_state()  # every N generations, for --resume
                saved_at = job.steps
            if job.steps != last_print:
                last_print = job.steps
                if not args.quiet:
                    print(_status_line(job, built.unit, time.perf_counter() - t0), file=sys.stderr, flush=True)
        ctrl_c.saving = True
        wall = time.perf_counter() - t0
        if job.steps == 0:
            print(f"stopped before the first {built.unit} ended: nothing to save")
            return 130
        note = f"stopped at {job.steps} of {job.total_steps}" if stopped else f"{job.steps}"
        title = f"{built.title} - seed {args.seed}, {note} {built.unit}s"
        meta = {"env": args.target, "agent": args.agent}
        # A job with several champions (co-evolution: one per side) offers to_models: one file per name.
        to_models = getattr(job, "to_models", None)
        models = {model_path: job.to_model(meta)} if to_models is None else {
            model_path.with_name(f"{model_path.stem}_{name}.json"): m for name, m in to_models(meta).items()}
        for path, model in models.items():
            save_model(path, model)
        summary = [f"{k}: {v}" for k, v in job.status().items()]
        built.report(report_path, title, summary)
        lines = ["", f"trained {job.steps} {built.unit}s in {wall:.1f} s", *summary,
                 *(f"model:  {path}" for path in models), f"report: {report_path}"]
        if built.save_state is not None:
            save_state()
            lines.append(f"state:  {state_path}")
            if stopped:
                lines.append(f"continue with: {drla_command()} train {args.target} --resume "
                             f"{shlex.quote(shown_path(state_path))}")
            else:
                lines.append(f"(train it further: {drla_command()} train {args.target} --resume "
                             f"{shlex.quote(shown_path(state_path))} --steps N, N the new total, above {job.steps})")
        print("\n".join(lines))
    return 130 if stopped else 0
