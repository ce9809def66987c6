"""The DRLA command line (``drla``, installed by ``make setup`` as ``.venv/bin/drla``; or ``python -m drla``).

    drla train cartpole --steps 50000 --seed 0 --out model.json
    drla train scenes/tank/tank.blend --tree Tank --steps 20000 --out tank.json
    drla eval model.json --env cartpole --episodes 20
    drla play scenes/tank/tank.blend --model tank.json --episodes 20
    drla inspect model.json
    drla envs
    drla demo

Built-in environments are pure numpy; ``.blend`` files need ``bpy`` (``pip install bpy==5.0.1``).
The DQN hyper-parameters are the fields of ``drla_core.agents.dqn.DQNConfig``, one flag each. Every number
is checked when the command line is read (argparse's ``error:`` line, exit status 2).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import json
import math
import os
import re
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from drla_core.agents.dqn import DQNAgent, DQNConfig
from drla_core.envs import ENV_NAMES, make
from drla_core.mlp import ACTIVATIONS
from drla_core.model_io import Model, ModelFormatError, load_model, save_model
from drla_core.plot import save_report
from drla_core.train import TrainingRun, evaluate, history_metric_text, metric_text

from .progress import ProgressBar

DEFAULT_OUT_DIR = Path("out")


class CLIError(Exception):
    """A problem the user can fix; printed as ``error: ...`` with exit status 2, no traceback."""


# ---- numbers the user types: checked by argparse (``drla train: error: argument --steps: ...``, exit 2) ------


def _int_type(low: int, what: str = "") -> Callable[[str], int]:
    """An argparse ``type`` for whole numbers >= ``low``."""
    need = what or ("a positive whole number" if low == 1 else f"a whole number >= {low}")

    def parse(text: str) -> int:
        try:
            value = int(text.strip().replace("_", ""))
        except ValueError:
            try:  # 5e4 is a whole number too
                number = float(text)
            except ValueError:
                number = math.nan
            if not (math.isfinite(number) and number.is_integer()):
                raise argparse.ArgumentTypeError(f"needs {need}, got {text!r}") from None
            value = int(number)
        if value < low:
            raise argparse.ArgumentTypeError(f"needs {need}, got {value}")
        return value

    parse.__name__ = "int"  # argparse names the type in some messages
    return parse


def _float_type(low: float, high: float = math.inf, *, low_open: bool = False, high_open: bool = False,
                what: str = "") -> Callable[[str], float]:
    """An argparse ``type`` for finite numbers in ``[low, high]`` (ends excluded where ``*_open``)."""
    if what:
        need = what
    elif high == math.inf:
        need = "a number > 0" if (low == 0 and low_open) else f"a number >= {low:g}"
    else:
        need = f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"needs {need}, got {text!r}") from None
        if not math.isfinite(value) or value < low or value > high or (low_open and value == low) or (
                high_open and value == high):
            raise argparse.ArgumentTypeError(f"needs {need}, got {text}")
        return value

    parse.__name__ = "float"
    return parse


POSITIVE_INT = _int_type(1)
COUNT = _int_type(0, "a whole number >= 0 (0: never)")
SEED = _int_type(0, "a whole number >= 0")
PROBABILITY = _float_type(0.0, 1.0)
POSITIVE_FLOAT = _float_type(0.0, low_open=True)

#: The argparse type of each DQNConfig field given as a flag (every field a user can type must be here).
CONFIG_TYPES: dict[str, Callable[[str], Any]] = {
    "learning_rate": POSITIVE_FLOAT,
    "gamma": PROBABILITY,
    "batch_size": POSITIVE_INT,
    "buffer_size": POSITIVE_INT,
    "learning_starts": _int_type(0),
    "train_freq": POSITIVE_INT,
    "gradient_steps": POSITIVE_INT,
    "target_update_interval": POSITIVE_INT,
    "tau": _float_type(0.0, 1.0, low_open=True),
    "exploration_fraction": PROBABILITY,
    "exploration_initial_eps": PROBABILITY,
    "exploration_final_eps": PROBABILITY,
    "max_grad_norm": POSITIVE_FLOAT,
    "adam_eps": POSITIVE_FLOAT,
}
CONFIG_CHOICES: dict[str, tuple[str, ...]] = {"loss": ("huber", "mse")}
#: Help where the field's docstring reads badly on its own (it continues the one before).
CONFIG_HELP = {
    "train_freq": "Train every N environment steps (--gradient-steps gradient steps each time).",
    "gradient_steps": "Gradient steps each time training runs (every --train-freq environment steps).",
}


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
    group = parser.add_argument_group(
        "DQN hyper-parameters",
        "Defaults: the scene's Agent node, else values tuned per built-in environment (rl-zoo's CartPole "
        "settings for cartpole); a flag given here overrides both.")
    docs = _field_docs(DQNConfig)
    defaults = DQNConfig()
    names = {f.name for f in dataclasses.fields(DQNConfig)}

    def as_flag(match: re.Match[str]) -> str:  # ``train_freq`` -> --train-freq; other ``x`` -> x
        word = match.group(1)
        return "--" + word.replace("_", "-") if word in names else word

    for f in dataclasses.fields(DQNConfig):
        if f.name in _SKIP_FIELDS:
            continue
        flag = "--" + f.name.replace("_", "-")
        help_text = CONFIG_HELP.get(f.name) or re.sub(r"``([^`]*)``", as_flag, docs.get(f.name, "")) or f.name
        tuned = sorted(env for env, values in ENV_DEFAULTS.items() if f.name in values)
        default_text = "cartpole default" if tuned else "default"
        if f.name == "hidden":
            group.add_argument(flag, metavar="SIZE[:ACT],...", default=None,
                               help=help_text + " Example: 64:relu,64:tanh (default 64:relu,64:relu; activations: "
                                    + ", ".join(ACTIVATIONS) + ").")
        elif f.type in (bool, "bool"):
            group.add_argument(flag, action=argparse.BooleanOptionalAction, default=None,
                               help=f"{help_text} (default: {'on' if getattr(defaults, f.name) else 'off'})")
        elif f.name in CONFIG_CHOICES:
            group.add_argument(flag, choices=CONFIG_CHOICES[f.name], default=None,
                               help=f"{help_text} ({default_text} {getattr(defaults, f.name)})")
        else:
            kind = CONFIG_TYPES[f.name]  # a KeyError here: a new DQNConfig field needs its range in CONFIG_TYPES
            if tuned:
                default_text = f"default {getattr(defaults, f.name):g}; " + ", ".join(
                    f"{env} {ENV_DEFAULTS[env][f.name]:g}" for env in tuned)
            else:
                default_text = f"default {getattr(defaults, f.name):g}"
            group.add_argument(flag, type=kind, default=None, metavar=kind.__name__.upper(),
                               help=f"{help_text} ({default_text})")


def parse_hidden(text: str) -> list[tuple[int, str]]:
    """``"64:relu,32:tanh"`` -> ``[(64, "relu"), (32, "tanh")]``; activation defaults to relu."""
    layers = []
    for part in text.split(","):
        size, _, act = part.strip().partition(":")
        if not size.isdigit() or int(size) <= 0:
            raise CLIError(f"--hidden: {part!r} is not SIZE[:ACTIVATION] with a positive SIZE")
        act = act.strip() or "relu"
        if act not in ACTIVATIONS:
            raise CLIError(f"--hidden: unknown activation {act!r} in {part.strip()!r}; use one of "
                           + ", ".join(ACTIVATIONS))
        layers.append((int(size), act))
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
    if model_path.is_dir():
        raise CLIError(f"--out {model_path} is a folder: give a file name ending in .json")
    if model_path.suffix.lower() != ".json":
        raise CLIError(f"--out must name a .json file, got {model_path}")
    try:
        model_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CLIError(f"cannot create the folder {model_path.parent}: {exc.strerror}") from exc
    if not os.access(model_path.parent, os.W_OK):
        raise CLIError(f"cannot write to the folder {model_path.parent}: permission denied")
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
    metric = history_metric_text(h, 20)
    if metric and last:
        lines.append(f"last {len(last)} episodes: {metric}")
    if h.final_eval is not None:
        text = f"greedy evaluation: mean return {h.final_eval[1]:.2f}"
        if h.final_eval_metric_totals is not None and h.task_metric:
            _, total, count, episodes = h.final_eval_metric_totals
            text += f" over {episodes} episodes; {metric_text(h.task_metric, total, count, episodes)}"
        lines.append(text)
    lines += [f"model:  {model_path}", f"report: {report_path}"]
    return "\n".join(lines)


def report_title(what: str, run: TrainingRun, seed: int) -> str:
    """The report's title: what was trained, the seed and the steps actually trained."""
    note = f"stopped at {run.steps} of {run.total_steps} steps" if run.history.interrupted else f"{run.steps} steps"
    return f"{what} - seed {seed}, {note}"


STOPPING = ("\nCtrl-C: stopping after this step and saving what was learnt "
            "(press Ctrl-C again to quit without saving)")


class CtrlC:
    """What Ctrl-C does during ``drla train``: the first press stops the training run after its current
    step, so that what was learnt is saved (``finish_training``); a second press quits at once, without
    saving; a press while the results are being written waits for them. Before ``run`` is set (opening
    a scene, compiling) Ctrl-C quits as usual: there is nothing to save yet.

    ``stop`` is what the first press calls (default: ``run.stop`` without the final evaluation).
    """

    def __init__(self) -> None:
        self.run: TrainingRun | None = None
        self.stop: Callable[[], None] | None = None
        self.pressed = False
        self.saving = False

    def __call__(self, signum: int, frame: Any) -> None:
        if self.saving:
            print("\nCtrl-C: writing what was learnt, one moment", file=sys.stderr, flush=True)
            return
        if self.pressed or (self.run is None and self.stop is None):
            raise KeyboardInterrupt
        self.pressed = True
        print(STOPPING, file=sys.stderr, flush=True)
        if self.stop is not None:
            self.stop()
        elif self.run is not None:
            self.run.stop(evaluate=False, interrupted=True)

    @contextmanager
    def installed(self) -> Iterator[CtrlC]:
        """Handle SIGINT inside the block; outside the main thread (no signals there) nothing changes."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        old = signal.signal(signal.SIGINT, self)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, old)


def finish_training(run: TrainingRun, model: Model, model_path: Path, report_path: Path, title: str, wall: float,
                    ctrl_c: CtrlC | None = None) -> int:
    """Write the model and the report, print the summary; after Ctrl-C also a checkpoint, and say where.

    Returns the exit status: 0, or 130 (the convention for Ctrl-C) when the run was interrupted.
    """
    if ctrl_c is not None:
        ctrl_c.saving = True
    save_model(model_path, model)
    save_report(report_path, run.history, title)
    checkpoint = model_path.with_name(f"{model_path.stem}_step{run.steps}.json")
    if run.history.interrupted:
        save_model(checkpoint, model)
    print(_summary(run, model_path, report_path, wall))
    if not run.history.interrupted:
        return 0
    print(interrupted_text(run.steps, run.total_steps, checkpoint))
    return 130


def interrupted_text(steps: int, total: int, checkpoint: Path) -> str:
    return (f"interrupted at step {steps} of {total}: saved what was learnt so far (the model, a checkpoint and "
            f"the report)\ncheckpoint: {checkpoint}")


# ---- commands ---------------------------------------------------------------------------------------------


def shown_path(path: str | os.PathLike[str]) -> str:
    """``path`` as a user can type it here: relative to the current folder when inside it, else absolute."""
    full = Path(path).resolve()
    try:
        return str(full.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(full)


def drla_command() -> str:
    """The way to run DRLA again from this shell: ``drla`` when that is the one on PATH, else the
    console script's path (``.venv/bin/drla``), else ``<this python> -m drla``."""
    script = Path(sys.executable).parent / ("drla.exe" if os.name == "nt" else "drla")
    if script.exists():
        found = shutil.which("drla")
        if found and Path(found).resolve() == script.resolve():
            return "drla"
        return shown_path(script)
    return f"{shown_path(sys.executable)} -m drla"


def plain_text(doc: str) -> str:
    """A docstring line without reStructuredText markup (``n`` -> n)."""
    return re.sub(r"``([^`]*)``", r"\1", doc)


def cmd_envs(args: argparse.Namespace) -> int:
    from drla_core.envs import env_class

    for name in ENV_NAMES:
        doc = (env_class(name).__doc__ or "").strip().splitlines()
        print(f"{name:12s} {plain_text(doc[0]) if doc else ''}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    if args.target.lower().endswith(".blend"):
        from .scene_cli import train_scene

        return train_scene(args)
    if args.target not in ENV_NAMES:
        raise CLIError(f"unknown environment {args.target!r}: give a .blend file or one of {', '.join(ENV_NAMES)}")
    steps = 50_000 if args.steps is None else args.steps
    args.seed = 0 if args.seed is None else args.seed
    env, eval_env = make(args.target), make(args.target)
    config = make_config(None, {**ENV_DEFAULTS.get(args.target, {}), **config_overrides(args)}, steps)
    agent = DQNAgent(env.observation_space, env.action_space, config, seed=args.seed)
    model_path, report_path = _out_paths(args.out, args.target)
    meta = {"env": args.target, "seed": args.seed}
    callbacks: list[Any] = [] if args.quiet else [ProgressBar(steps)]
    run = TrainingRun(env, agent, steps, seed=args.seed, eval_env=eval_env,
                      eval_interval=2000 if args.eval_interval is None else args.eval_interval,
                      eval_episodes=10 if args.eval_episodes is None else args.eval_episodes, callbacks=callbacks,
                      checkpoint_interval=args.checkpoint_interval,
                      checkpoint_path=str(model_path.with_name(model_path.stem + "_step{step}.json")))
    with CtrlC().installed() as ctrl_c:
        ctrl_c.run = run
        t0 = time.perf_counter()
        run.run()
        wall = time.perf_counter() - t0
        meta.update(training_steps=run.steps, episodes=run.episodes)
        if run.history.interrupted:
            meta["interrupted"] = True
        return finish_training(run, agent.to_model(meta), model_path, report_path,
                               report_title(f"DQN on {args.target}", run, args.seed), wall, ctrl_c)


def _load(path: str) -> Any:
    """The model file at ``path``, or a ``CLIError`` that says what is wrong with it."""
    if Path(path).is_dir():
        raise CLIError(f"{path} is a folder, not a model file: give the model's .json file")
    try:
        return load_model(path)
    except FileNotFoundError as exc:
        raise CLIError(f"no such model file: {path}") from exc
    except ModelFormatError as exc:
        raise CLIError(f"{path}: {exc}") from exc
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from exc


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
    if env.task_metric:
        text += f"; {metric_text(env.task_metric, result.metric_sum, result.metric_count, len(result.returns))}"
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


class _Parser(argparse.ArgumentParser):
    """argparse, but a mistake prints one ``error:`` line and where to look, not the whole usage block."""

    def error(self, message: str) -> Any:  # argparse's hook; never returns
        self.exit(2, f"{self.prog}: error: {message}\n(for the options: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="drla",
        description="DRLA: train reinforcement-learning agents on built-in environments or on a Blender scene's "
                    "DRLA node tree, headless, and save them as JSON model files.",
        epilog="Start with: drla demo   |   more: drla COMMAND --help",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("train", help="train an agent and save it as a JSON model plus a report picture",
                       description="Train a DQN agent. TARGET is a built-in environment (see 'envs') or a .blend "
                                   "file whose DRLA node tree describes the problem.")
    p.add_argument("target", metavar="TARGET", help=f"{' | '.join(ENV_NAMES)} | path/to/scene.blend")
    p.add_argument("--tree", help="DRLA node tree in the .blend (default: the only one)")
    p.add_argument("--steps", type=POSITIVE_INT, metavar="N",
                   help="environment steps to train, exactly (default: 50000, or the scene's Trainer node)")
    p.add_argument("--seed", type=SEED, metavar="N", help="random seed; the same seed gives the same run "
                                                          "(default 0, or the scene's Trainer node)")
    p.add_argument("--out", metavar="FILE.json",
                   help="model file to write (default: out/<name>.json); the report PNG goes beside it")
    p.add_argument("--eval-interval", type=COUNT, metavar="N",
                   help="greedy evaluation every N steps, 0: never (default 2000, or the scene's Trainer node)")
    p.add_argument("--eval-episodes", type=POSITIVE_INT, metavar="N",
                   help="episodes per evaluation (default 10, or the scene's Trainer node)")
    p.add_argument("--checkpoint-interval", type=COUNT, default=0, metavar="N",
                   help="save the model so far every N steps as <out>_step<N>.json (default 0: never)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_config_flags(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("eval", help="evaluate a model file on a built-in environment (greedy policy)",
                       description="Run a model's greedy policy on a built-in environment and print its mean return "
                                   "(and the task's counts, e.g. the tank's hits and shots per episode).")
    p.add_argument("model", help="model .json file")
    p.add_argument("--env", choices=ENV_NAMES, help="environment (default: the one recorded in the model)")
    p.add_argument("--episodes", type=POSITIVE_INT, default=20, metavar="N", help="episodes to run (default 20)")
    p.add_argument("--seed", type=SEED, default=1000, metavar="N",
                   help="seed of the first episode; the same seed gives the same episodes (default 1000)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("play", help="run a model's greedy policy in a Blender scene and report its return",
                       description="Play a trained model in a .blend scene (headless). The scene file is not changed.")
    p.add_argument("scene", help="path/to/scene.blend")
    p.add_argument("--model", required=True, help="model .json file (from drla train, or exported from Blender)")
    p.add_argument("--tree", help="DRLA node tree in the .blend (default: the only one)")
    p.add_argument("--episodes", type=POSITIVE_INT, default=20, metavar="N",
                   help="episodes to play; for a Learned IK model, random targets to solve (default 20)")
    p.add_argument("--seed", type=SEED, default=1000, metavar="N",
                   help="seed of the first episode (or of the IK targets) (default 1000)")
    p.add_argument("--frames", metavar="DIR", help="also write the camera's rendered frames of the first episode")
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("inspect", help="validate a model file and show its architecture")
    p.add_argument("model", help="model .json file to check")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("envs", help="list the built-in environments")
    p.set_defaults(func=cmd_envs)

    p = sub.add_parser("demo", help="train the tank example headless; write the model and a report picture")
    p.add_argument("--out", default=str(DEFAULT_OUT_DIR), metavar="DIR", help="output folder (default: out)")
    p.add_argument("--steps", type=POSITIVE_INT, metavar="N", help="training steps (default: the scene's Trainer node)")
    p.add_argument("--seed", type=SEED, default=0, metavar="N", help="random seed (default 0)")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad argument (2, the message already printed)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return int(args.func(args) or 0)
    except CLIError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: quit without saving the model (during training, one Ctrl-C stops it and saves what "
              "was learnt)", file=sys.stderr)
        return 130
