"""The DRLA command line.

    python -m drla train cartpole --steps 50000 --seed 0 --out model.json
    python -m drla train scenes/tank/tank.blend --tree Tank --steps 20000 --out tank.json
    python -m drla eval model.json --env cartpole --episodes 20
    python -m drla play scenes/tank/tank.blend --model tank.json --episodes 20
    python -m drla inspect model.json
    python -m drla envs
    python -m drla demo

Built-in environments are pure numpy; ``.blend`` files need ``bpy`` (``pip install bpy==5.0.1``).
The DQN hyper-parameters are the fields of ``drla_core.dqn.DQNConfig``, one flag each.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from drla_core.dqn import DQNAgent, DQNConfig
from drla_core.envs import ENV_NAMES, make
from drla_core.model_io import ModelFormatError, load_model, save_model
from drla_core.plot import save_report
from drla_core.train import TrainingRun, evaluate

from .progress import ProgressBar

DEFAULT_OUT_DIR = Path("out")


class CLIError(Exception):
    """A problem the user can fix; printed as ``error: ...`` with exit status 2, no traceback."""


# ---- DQNConfig as flags (CleanRL: the config dataclass doubles as the CLI) -------------------------------


def _field_docs(cls: type) -> dict[str, str]:
    """Docstrings written under dataclass fields (``x: int = 1`` then ``\"\"\"doc\"\"\"``)."""
    try:
        tree = ast.parse(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    docs: dict[str, str] = {}
    body = tree.body[0].body  # type: ignore[attr-defined]
    for stmt, nxt in zip(body, body[1:]):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            docs[stmt.target.id] = " ".join(nxt.value.value.split())
    return docs


_SKIP_FIELDS = {"total_timesteps"}  # set from --steps

#: Tuned defaults per built-in environment (rl-zoo style); CartPole uses DQNConfig's own defaults.
ENV_DEFAULTS: dict[str, dict[str, Any]] = {
    "tank_grid": {"learning_rate": 1e-3, "train_freq": 4, "gradient_steps": 1, "target_update_interval": 500,
                  "exploration_fraction": 0.3, "exploration_final_eps": 0.02, "learning_starts": 1000},
    "evacuation": {"learning_rate": 1e-3, "train_freq": 4, "gradient_steps": 1, "target_update_interval": 250,
                   "exploration_fraction": 0.3, "learning_starts": 500},
    "identity": {"learning_rate": 1e-3, "train_freq": 4, "gradient_steps": 1, "learning_starts": 100},
}


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("DQN hyper-parameters (defaults: rl-zoo CartPole; a scene's Agent node wins)")
    docs = _field_docs(DQNConfig)
    for f in dataclasses.fields(DQNConfig):
        if f.name in _SKIP_FIELDS:
            continue
        flag = "--" + f.name.replace("_", "-")
        help_text = docs.get(f.name, "")
        if f.name == "hidden":
            group.add_argument(flag, metavar="SIZE[:ACT],...", default=None,
                               help=help_text + " Example: 64:relu,64:tanh (default 64:relu,64:relu).")
        elif f.type in (bool, "bool"):
            group.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        else:
            kind = {"int": int, "float": float, "str": str}.get(str(f.type), str)
            group.add_argument(flag, type=kind, default=None, metavar=kind.__name__.upper(), help=help_text)


def parse_hidden(text: str) -> list[tuple[int, str]]:
    """``"64:relu,32:tanh"`` -> ``[(64, "relu"), (32, "tanh")]``; activation defaults to relu."""
    layers = []
    for part in text.split(","):
        size, _, act = part.strip().partition(":")
        if not size.isdigit() or int(size) <= 0:
            raise CLIError(f"--hidden: {part!r} is not SIZE[:ACTIVATION] with a positive SIZE")
        layers.append((int(size), act or "relu"))
    return layers


def config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The DQNConfig fields given on the command line."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(DQNConfig):
        value = getattr(args, f.name, None)
        if value is not None:
            out[f.name] = parse_hidden(value) if f.name == "hidden" else value
    return out


def make_config(base: DQNConfig | None, overrides: dict[str, Any], steps: int) -> DQNConfig:
    fields = dataclasses.asdict(base) if base is not None else {}
    fields.update(overrides)
    fields["total_timesteps"] = steps
    try:
        return DQNConfig(**fields)
    except (TypeError, ValueError) as exc:
        raise CLIError(str(exc)) from exc


# ---- shared helpers ---------------------------------------------------------------------------------------


def _out_paths(out: str | None, default_stem: str) -> tuple[Path, Path]:
    model_path = Path(out) if out else DEFAULT_OUT_DIR / f"{default_stem}.json"
    if model_path.suffix.lower() != ".json":
        raise CLIError(f"--out must name a .json file, got {model_path}")
    model_path.parent.mkdir(parents=True, exist_ok=True)
    return model_path, model_path.with_name(model_path.stem + "_report.png")


def _summary(run: TrainingRun, model_path: Path, report_path: Path, wall: float) -> str:
    h = run.history
    last = h.episode_returns[-20:]
    lines = [
        "",
        f"trained {run.steps} steps, {run.episodes} episodes in {wall:.1f} s "
        f"({run.steps / max(run.train_seconds, 1e-9):,.0f} steps/s training)",
        f"mean return of the last {len(last)} episodes: {np.mean(last):.2f}" if last else "no episode finished",
    ]
    if h.final_eval is not None:
        _, mean_return, metric = h.final_eval
        text = f"greedy evaluation: mean return {mean_return:.2f}"
        if metric is not None and h.task_metric:
            text += f", {h.task_metric} rate {metric:.1%}"
        lines.append(text)
    lines += [f"model:  {model_path}", f"report: {report_path}"]
    return "\n".join(lines)


# ---- commands ---------------------------------------------------------------------------------------------


def cmd_envs(args: argparse.Namespace) -> int:
    from drla_core.envs import env_class

    for name in ENV_NAMES:
        doc = (env_class(name).__doc__ or "").strip().splitlines()
        print(f"{name:12s} {doc[0] if doc else ''}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    if args.target.lower().endswith(".blend"):
        from .scene_cli import train_scene

        return train_scene(args)
    if args.target not in ENV_NAMES:
        raise CLIError(f"unknown environment {args.target!r}: give a .blend file or one of {', '.join(ENV_NAMES)}")
    steps = args.steps or 50_000
    args.seed = 0 if args.seed is None else args.seed
    env, eval_env = make(args.target), make(args.target)
    config = make_config(None, {**ENV_DEFAULTS.get(args.target, {}), **config_overrides(args)}, steps)
    agent = DQNAgent(env.observation_space, env.action_space, config, seed=args.seed)
    model_path, report_path = _out_paths(args.out, args.target)
    meta = {"env": args.target, "seed": args.seed}
    callbacks: list[Any] = [] if args.quiet else [ProgressBar(steps)]
    run = TrainingRun(env, agent, steps, seed=args.seed, eval_env=eval_env,
                      eval_interval=2000 if args.eval_interval is None else args.eval_interval,
                      eval_episodes=args.eval_episodes or 10, callbacks=callbacks,
                      checkpoint_interval=args.checkpoint_interval,
                      checkpoint_path=str(model_path.with_name(model_path.stem + "_step{step}.json")))
    t0 = time.perf_counter()
    run.run()
    wall = time.perf_counter() - t0
    save_model(model_path, agent.to_model({**meta, "training_steps": run.steps, "episodes": run.episodes}))
    save_report(report_path, run.history, f"DQN on {args.target} - seed {args.seed}")
    print(_summary(run, model_path, report_path, wall))
    return 0


def _load(path: str) -> Any:
    try:
        return load_model(path)
    except FileNotFoundError as exc:
        raise CLIError(f"no such model file: {path}") from exc
    except ModelFormatError as exc:
        raise CLIError(f"{path}: {exc}") from exc


def cmd_eval(args: argparse.Namespace) -> int:
    model = _load(args.model)
    env_name = args.env or model.meta.get("env")
    if env_name not in ENV_NAMES:
        raise CLIError("which environment? pass --env (one of " + ", ".join(ENV_NAMES) + ")")
    env = make(env_name)
    if env.observation_space.shape != model.observation_space.shape or env.action_space != model.action_space:
        raise CLIError(f"the model's spaces do not match environment {env_name!r}")
    result = evaluate(env, model.act, args.episodes, args.seed)
    text = f"{env_name}: mean return {result.mean_return:.2f} over {args.episodes} episodes " \
           f"(min {min(result.returns):.2f}, max {max(result.returns):.2f})"
    if result.metric is not None:
        text += f", {env.task_metric} rate {result.metric:.1%}"
    print(text)
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    model = _load(args.model)
    arch = model.network.architecture()
    layers = " -> ".join([str(arch["input_size"])] + [f"{h['size']} {h['activation']}" for h in arch["hidden"]]
                         + [f"{arch['output_size']} {arch['output_activation']}"])
    print(f"{args.model}: valid DRLA model (kind {model.kind})")
    print(f"  network:      {layers} ({model.network.params.size:,} parameters)")
    print(f"  observations: {model.observation_space}")
    names = getattr(model.action_space, "names", None)
    print(f"  actions:      {model.action_space}" + (f" {names}" if names else ""))
    print(f"  meta:         {json.dumps(model.meta, sort_keys=True)}")
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    from .scene_cli import play_scene

    return play_scene(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from .scene_cli import demo

    return demo(args)


# ---- parser -----------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m drla",
        description="DRLA: train reinforcement-learning agents on built-in environments or on a Blender scene's "
                    "DRLA node tree, headless, and save them as JSON model files.",
        epilog="Start with: python -m drla demo   |   more: python -m drla COMMAND --help",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("train", help="train an agent and save it as a JSON model plus a report picture",
                       description="Train a DQN agent. TARGET is a built-in environment (see 'envs') or a .blend "
                                   "file whose DRLA node tree describes the problem.")
    p.add_argument("target", metavar="TARGET", help=f"{' | '.join(ENV_NAMES)} | path/to/scene.blend")
    p.add_argument("--tree", help="DRLA node tree in the .blend (default: the only one)")
    p.add_argument("--steps", type=int, help="environment steps (default: 50000, or the scene's Trainer node)")
    p.add_argument("--seed", type=int, help="random seed; the same seed gives the same run "
                                            "(default 0, or the scene's Trainer node)")
    p.add_argument("--out", help="model file to write (default: out/<name>.json); the report PNG goes beside it")
    p.add_argument("--eval-interval", type=int, help="greedy evaluation every N steps, 0: never (default 2000, or the "
                                                     "scene's Trainer node)")
    p.add_argument("--eval-episodes", type=int,
                   help="episodes per evaluation (default 10, or the scene's Trainer node)")
    p.add_argument("--checkpoint-interval", type=int, default=0, help="save a checkpoint every N steps (0: never)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_config_flags(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("eval", help="evaluate a model file on a built-in environment (greedy policy)")
    p.add_argument("model", help="model .json file")
    p.add_argument("--env", help="environment (default: the one recorded in the model)")
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--seed", type=int, default=1000)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("play", help="run a model's greedy policy in a Blender scene and report its return",
                       description="Play a trained model in a .blend scene (headless). The scene file is not changed.")
    p.add_argument("scene", help="path/to/scene.blend")
    p.add_argument("--model", required=True, help="model .json file")
    p.add_argument("--tree", help="DRLA node tree in the .blend (default: the only one)")
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--frames", metavar="DIR", help="also write the camera's rendered frames of the first episode")
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("inspect", help="validate a model file and show its architecture")
    p.add_argument("model")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("envs", help="list the built-in environments")
    p.set_defaults(func=cmd_envs)

    p = sub.add_parser("demo", help="train the tank example headless; write the model and a report picture")
    p.add_argument("--out", default=str(DEFAULT_OUT_DIR), help="output folder (default: out)")
    p.add_argument("--steps", type=int, help="training steps (default: the scene's Trainer node)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CLIError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
