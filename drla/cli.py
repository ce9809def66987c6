"""The DRLA command line (``drla``, installed by ``make setup`` as ``.venv/bin/drla``; or ``python -m drla``).

    drla train cartpole --steps 50000 --seed 0 --out model.json
    drla train cartpole --agent neat            (or ga, es, cmaes; drla train deceptive_maze --agent novelty)
    drla train scenes/tank/tank.blend --tree Tank --steps 20000 --out tank.json
    drla eval model.json --env cartpole --episodes 20
    drla play scenes/tank/tank.blend --model tank.json --episodes 20
    drla inspect model.json
    drla export-onnx model.json model.onnx
    drla import-sb3 ppo_cartpole.zip --out model.json        (a Stable-Baselines3 policy; needs torch)
    drla train --gym-id CartPole-v1 --steps 30000            (any Gymnasium env with discrete actions)
    drla web model.json
    drla envs
    drla demo

Built-in environments are pure numpy; ``.blend`` files need ``bpy`` (``pip install bpy==5.0.1``).
The DQN hyper-parameters are the fields of ``drla_core.rl.dqn.DQNConfig``, one flag each. Every number
is checked when the command line is read (argparse's ``error:`` line, exit status 2).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


import numpy as np

from drla_core.rl.dqn import DQNAgent, DQNConfig
from drla_core.envs import ENV_NAMES, PARALLEL_ENV_NAMES
from drla_core.nn.mlp import ACTIVATIONS
from drla_core.base.spaces import Discrete
from drla_core.rl.train import TrainingRun, evaluate, metric_text
from drla_core.rl.vector_train import VectorTrainingRun
from drla_core.base.vector_env import SyncVectorEnv

from . import demo_flags, netcli, pure_jobs, record_cli, sac_cli, scene, train_flags
from .gym_adapter import GYM_PREFIX, GymIdError, make_target
from .common import (
    DEFAULT_OUT_DIR,
    MAX_STEPS,
    CLIError,
    CtrlC,
    check_replay_memory,
    config_overrides,
    drla_command,
    finish_training,
    load_model_file,
    make_config,
    checkpoint_saver,
    float_range,
    int_range,
    out_paths,
    parse_hidden,
    read_resume,
    report_title,
    resume,
    resume_config,
    shown_path,
)
from .progress import ProgressBar


# ---- numbers the user types: checked by argparse (``drla train: error: argument --steps: ...``, exit 2) ------
# Every numeric flag's type is a ``common.Range`` with both bounds (tests/test_cli.py checks every subcommand).

STEPS = int_range(1, MAX_STEPS)
COUNT = int_range(0, MAX_STEPS, "a whole number from 0 (0: never) to 1_000_000_000")
SEED = int_range(0, 2**32 - 1)
EPISODES = int_range(1, 10_000)
PROBABILITY = float_range(0.0, 1.0)
#: ``--copies``: the Environment node's own limit (each copy of a .blend scene duplicates its objects)
COPIES = int_range(1, 256)
#: ``--workers``: Blender processes, each a whole Blender in memory
WORKERS = int_range(1, 64)


def _hidden_type(text: str) -> str:
    """``--hidden``: checked when the command line is read (sizes 1..MAX_HIDDEN_UNITS, known activations)."""
    try:
        parse_hidden(text)
    except CLIError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--hidden: ")) from None
    return text


#: The argparse type of each DQNConfig field given as a flag (every field a user can type must be here).
CONFIG_TYPES: dict[str, Callable[[str], Any]] = {
    "learning_rate": float_range(0.0, 10.0, low_open=True),
    "gamma": PROBABILITY,
    "batch_size": int_range(1, 65_536),
    "buffer_size": int_range(1, 10_000_000),  # the buffer's memory is this times the observation's size
    "learning_starts": int_range(0, MAX_STEPS),
    "train_freq": int_range(1, 1_000_000),
    "gradient_steps": int_range(1, 1_000),
    "target_update_interval": int_range(1, MAX_STEPS),
    "tau": float_range(0.0, 1.0, low_open=True),
    "exploration_fraction": PROBABILITY,
    "exploration_initial_eps": PROBABILITY,
    "exploration_final_eps": PROBABILITY,
    "max_grad_norm": float_range(0.0, 1e6, low_open=True),
    "adam_eps": float_range(0.0, 1.0, low_open=True),
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
            group.add_argument(flag, metavar="SIZE[:ACT],...", default=None, type=_hidden_type,
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


# ---- shared helpers ---------------------------------------------------------------------------------------


# ---- commands ---------------------------------------------------------------------------------------------


def plain_text(doc: str) -> str:
    """A docstring line without reStructuredText markup (``n`` -> n)."""
    return re.sub(r"``([^`]*)``", r"\1", doc)


def cmd_envs(args: argparse.Namespace) -> int:
    from drla_core.envs import env_class

    for name in ENV_NAMES + PARALLEL_ENV_NAMES:
        doc = (env_class(name).__doc__ or "").strip().splitlines()
        print(f"{name:12s} {plain_text(doc[0]) if doc else ''}")
    examples = sorted(scene.TANK_SCENE.parents[1].glob("*/*.blend"))  # shipped by the checkout and the wheel
    if examples:
        print("\nexample scenes (drla train PATH; they need bpy: pip install 'drla[blender]'):")
        for path in examples:
            print(f"  {shown_path(path)}")
    return 0


#: ``drla train`` flags that only a .blend scene's tree uses: refused on a built-in environment, never ignored.
BLEND_ONLY = (("--tree", "tree"), ("--workers", "workers"), ("--ray", "ray"))
#: ... and the ones a .blend tree never reads (its agent node says which agent and how many).
BUILTIN_ONLY = (("--agent", "agent"), ("--population", "population"))


def _check_target_flags(args: argparse.Namespace, blend: bool) -> None:
    """Refuse, with the reason, a flag the target would not use (a silent no-op otherwise)."""
    if blend:
        for flag, name in BUILTIN_ONLY:
            value = getattr(args, name, None)
            if value is not None and not (name == "agent" and value == "dqn"):
                raise CLIError(f"{flag}: a .blend file's tree chooses its agent and its settings (its agent node); "
                               f"drop {flag}")
        ppo_given = [name for name in train_flags.PPO_ONLY if getattr(args, name, None) is not None]
        if ppo_given:
            flag = "--" + ppo_given[0].replace("_", "-")
            raise CLIError(f"{flag}: a PPO setting; a .blend file's tree trains the agent of its agent node "
                           f"(drop {flag})")
        return
    for flag, name in BLEND_ONLY:
        if getattr(args, name, None) is not None:
            also = " (use --copies N to step N copies here)" if name in ("workers", "ray") else ""
            what = "the Gymnasium environment" if args.target.startswith(GYM_PREFIX) else "the built-in environment"
            raise CLIError(f"{flag}: applies to a .blend scene's tree, not to {what} {args.target!r}{also}")


def _gym_target(args: argparse.Namespace) -> None:
    """``--gym-id ID``: the target ``gym:ID``, a Gymnasium environment (drla/gym_adapter.py), checked now."""
    if args.gym_id is not None:
        if args.target is not None:
            raise CLIError(f"--gym-id: give a TARGET ({args.target}) or --gym-id {args.gym_id}, not both")
        args.target = GYM_PREFIX + args.gym_id
    if args.target is None:
        raise CLIError("what to train? give a TARGET (a built-in environment or a .blend file) or --gym-id ID")
    if args.target.startswith(GYM_PREFIX):
        try:
            make_target(args.target).close()
        except GymIdError as exc:
            raise CLIError(str(exc)) from None


def _refuse_population(args: argparse.Namespace) -> None:
    if args.population is not None:
        raise CLIError("--population: the population of an evolution run (--agent "
                       f"{'|'.join(pure_jobs.AGENTS)}); {(args.agent or 'dqn').upper()} has none")


def cmd_train(args: argparse.Namespace) -> int:
    _gym_target(args)
    if args.target.lower().endswith(".blend"):
        _check_target_flags(args, blend=True)
        return scene.train_scene(args)
    if args.target not in ENV_NAMES + PARALLEL_ENV_NAMES and not args.target.startswith(GYM_PREFIX):
        raise CLIError(f"unknown environment {args.target!r}: give a .blend file, one of "
                       f"{', '.join(ENV_NAMES + PARALLEL_ENV_NAMES)}, or --gym-id ID")
    _check_target_flags(args, blend=False)
    demo_flags.check_agent(args, pure_jobs.AGENTS)
    if args.agent in pure_jobs.AGENTS or (args.resume or "").lower().endswith(".json"):
        # evolution; a .json --resume is a population file
        sac_cli.refuse_sac_flags(args)
        return pure_jobs.train(args, tuple(f.name for f in dataclasses.fields(DQNConfig) if f.name not in _SKIP_FIELDS),
                               train_flags.PPO_ONLY)
    ckpt = read_resume(args.resume) if args.resume else None
    _settle_agent(args, ckpt)
    sac = args.agent == "sac"
    saved = ckpt.settings if ckpt is not None else {}
    if args.target in PARALLEL_ENV_NAMES:
        raise CLIError(f"{args.target} is a two-agent game: train it with --agent coevolution")
    ppo = args.agent == "ppo"
    defaults = train_flags.ppo_defaults(args.target) if ppo else {
        "steps": sac_cli.DEFAULT_STEPS.get(args.target, 20_000) if sac else 50_000, "copies": 1}
    saved_run = ckpt.meta["run"] if ckpt is not None else {}
    steps = args.steps or saved_run.get("total_steps") or defaults["steps"]
    if ckpt is not None and args.seed is not None and args.seed != saved_run["seed"]:
        raise CLIError(f"--seed: a resumed run keeps its seed ({saved_run['seed']}); drop --seed")
    args.seed = saved_run.get("seed", 0) if args.seed is None else args.seed
    env, eval_env = make_target(args.target), make_target(args.target)
    agent = _agent(args, env, ckpt, steps)
    demo_flags.apply_demo(args, agent, resumed=ckpt is not None)
    model_path, report_path = out_paths(args.out or saved.get("out"), f"{args.target}_sac" if sac else args.target)
    meta = {"env": args.target, "seed": args.seed}
    callbacks: list[Any] = ([] if args.quiet else [ProgressBar(steps)]) + train_flags.train_callbacks(args, ckpt)
    interval = args.checkpoint_interval if args.checkpoint_interval is not None else saved_run.get(
        "checkpoint_interval", 0)
    options = dict(seed=args.seed, eval_env=eval_env,
                   eval_interval=_given(args.eval_interval, saved_run.get("eval_interval"), 10_000 if ppo else 2000),
                   eval_episodes=_given(args.eval_episodes, saved_run.get("eval_episodes"), 10),
                   callbacks=callbacks, checkpoint_interval=interval,
                   checkpoint_path=str(model_path.with_name(model_path.stem + "_step{step}.json")),
                   save_fn=checkpoint_saver(model_path, {"target": args.target, **({"agent": "sac"} if sac else {}),
                                                         "out": str(model_path)}))
    copies = getattr(args, "copies", None) or saved_run.get("num_envs") or defaults["copies"]
    if copies > 1:  # N copies stepped together, one network call for all; steps count env steps of every copy
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
        return finish_training(run, agent.to_model(meta), model_path, report_path,
                               report_title(f"{args.agent.upper()} on {args.target}", run, args.seed), wall,
                               ctrl_c)


def _settle_agent(args: argparse.Namespace, ckpt: Any) -> None:
    """``args.agent``: the one given, else the checkpoint's, else DQN; the other agents' flags refused, and a
    checkpoint of another target or agent."""
    sac = sac_cli.wanted(args, ckpt)  # Soft Actor-Critic, continuous actions (drla/sac_cli.py)
    if sac:
        sac_cli.check(args, ckpt)
    else:
        _refuse_population(args)
    saved = ckpt.settings if ckpt is not None else {}
    if ckpt is not None and saved.get("target") != args.target:
        raise CLIError(f"--resume: {ckpt.path} is a run on {saved.get('target')!r}, not on {args.target!r}")
    if ckpt is not None and not sac:  # a checkpoint continues with the agent it was trained with
        kind = str(ckpt.meta.get("kind", "dqn"))
        if args.agent not in (None, kind):
            raise CLIError(f"--resume: {ckpt.path} is a run of --agent {kind}, not {args.agent}")
    args.agent = args.agent or (str(ckpt.meta.get("kind", "dqn")) if ckpt is not None else "dqn")
    if not sac:
        train_flags.check_agent_flags(args)


def _agent(args: argparse.Namespace, env: Any, ckpt: Any, steps: int) -> Any:
    """The agent ``drla train`` trains on ``env``: the resumed run's config (or the target's defaults), then the
    flags given now."""
    if args.agent == "ppo":
        return train_flags.ppo_agent(args, env, ckpt, steps)
    if args.agent == "sac":
        return sac_cli.sac_agent(args, env, ckpt, steps)
    check_replay_memory(args.buffer_size, int(np.prod(env.observation_space.shape)))
    if not isinstance(env.action_space, Discrete):
        agents = " or --agent ".join(a for a in ("ppo", "sac", *pure_jobs.AGENTS) if a != "coevolution")
        raise CLIError(f"{args.target} has continuous actions ({env.action_space}) and DQN needs discrete ones: "
                       f"train it with --agent {agents}")
    train_flags.check_resume_hidden(args, ckpt)
    base = resume_config(ckpt) if ckpt is not None else None
    config = make_config(base, {**(ENV_DEFAULTS.get(args.target, {}) if base is None else {}),
                                **config_overrides(args)}, steps)
    return DQNAgent(env.observation_space, env.action_space, config, seed=args.seed)


def _given(value: Any, saved: Any, default: Any) -> Any:
    """A flag given now, else the resumed run's setting, else the default."""
    return value if value is not None else saved if saved is not None else default


def cmd_eval(args: argparse.Namespace) -> int:
    model = load_model_file(args.model)
    env_name = args.env or model.meta.get("env")
    if env_name in PARALLEL_ENV_NAMES:
        raise CLIError(f"{args.model} is one side of the two-agent game {env_name}: eval plays one-agent environments "
                       f"({', '.join(ENV_NAMES)}); its training report shows how the two sides did")
    gym = isinstance(env_name, str) and env_name.startswith(GYM_PREFIX)  # trained with --gym-id
    if env_name not in ENV_NAMES and not gym:
        what = f"{args.model} was trained in {env_name!r}, not a built-in environment" if env_name else (
            f"{args.model} names no environment")
        raise CLIError(f"which environment? {what}: pass --env (one of " + ", ".join(ENV_NAMES) + ")")
    try:
        env = make_target(env_name)
    except GymIdError as exc:
        raise CLIError(str(exc)) from None
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
    from drla_core.io.team_model import load_any

    loaded = load_model_file(args.model, load_any)
    if isinstance(loaded, dict):  # a team file: every named agent's model (docs/model-format.md)
        print(f"{args.model}: valid DRLA team file, {len(loaded)} agents: {', '.join(loaded)}")
        for name, model in loaded.items():
            print(f"{name}: kind {model.kind}")
            _describe(model)
        return 0
    print(f"{args.model}: valid DRLA model (kind {loaded.kind})")
    _describe(loaded)
    return 0


def _describe(model: Any) -> None:
    arch = model.network.architecture()
    if "graph" in arch:  # a NEAT network (docs/model-format.md, graph networks)
        graph = arch["graph"]
        layers = (f"graph: {arch['input_size']} inputs -> {len(graph['nodes'])} hidden nodes, "
                  f"{len(graph['connections'])} connections -> {arch['output_size']} {arch['output_activation']} "
                  "outputs")
    else:
        layers = " -> ".join([str(arch["input_size"])] + [f"{h['size']} {h['activation']}" for h in arch["hidden"]]
                             + [f"{arch['output_size']} {arch['output_activation']}"])
    print(f"  network:      {layers} ({model.network.params.size:,} parameters)")
    print(f"  observations: {model.observation_space}")
    names = getattr(model.action_space, "names", None)
    print(f"  actions:      {model.action_space}" + (f" {names}" if names else ""))
    print(f"  meta:         {json.dumps(model.meta, sort_keys=True)}")


def cmd_play(args: argparse.Namespace) -> int:
    return scene.play_scene(args)


def cmd_demo(args: argparse.Namespace) -> int:
    """Train the tank example headless with progress; print where the model and the report are."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tank = scene.TANK_SCENE
    print(f"DRLA demo: training the tank agent in {tank.relative_to(scene.ROOT)} (headless Blender)")
    train_args = build_parser().parse_args(
        ["train", str(tank), "--tree", "Tank", "--seed", str(args.seed), "--out", str(out / "tank.json")]
        + (["--steps", str(args.steps)] if args.steps else [])
    )
    status = scene.train_scene(train_args)
    if status in (0, 130):
        print(f"\nopen {out / 'tank_report.png'} to see the learning curve and the hits per episode;")
        print(f"replay the agent with: {drla_command()} play {shown_path(tank)} --model {out / 'tank.json'}")
    return status


def _onnx_io() -> Any:
    from . import onnx_io  # imported on use: onnx is an optional extra

    return onnx_io


def _sb3_io() -> Any:
    from . import sb3_io  # imported on use: it needs torch

    return sb3_io


def _web() -> Any:
    from . import web

    return web


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
    p.add_argument("target", metavar="TARGET", nargs="?",
                   help=f"{' | '.join(ENV_NAMES + PARALLEL_ENV_NAMES)} | path/to/scene.blend (or --gym-id ID)")
    p.add_argument("--gym-id", metavar="ID",
                   help="train on a registered Gymnasium environment instead of a TARGET: gymnasium.make(ID), Box "
                        "observations and discrete actions (CartPole-v1, Acrobot-v1, LunarLander-v3 with "
                        "gymnasium[box2d]; needs gymnasium: pip install '.[gym]')")
    p.add_argument("--tree", help="DRLA node tree in the .blend (default: the only one)")
    p.add_argument("--steps", type=STEPS, metavar="N",
                   help="environment steps to train, exactly (default: 50000, or the scene's Trainer node)")
    p.add_argument("--seed", type=SEED, metavar="N", help="random seed; the same seed gives the same run "
                                                          "(default 0, or the scene's Trainer node)")
    p.add_argument("--out", metavar="FILE.json",
                   help="model file to write (default: out/<name>.json); the report PNG goes beside it")
    p.add_argument("--eval-interval", type=COUNT, metavar="N",
                   help="greedy evaluation every N steps, 0: never (default 2000, or the scene's Trainer node)")
    p.add_argument("--eval-episodes", type=int_range(1, 10_000), metavar="N",
                   help="episodes per evaluation (default 10, or the scene's Trainer node)")
    p.add_argument("--checkpoint-interval", type=COUNT, metavar="N",
                   help="every N steps save the model so far as <out>_step<N>.json and the full training state as "
                        "<out>_ckpt.npz (the one before kept as <out>_ckpt.prev.npz), for --resume (default 0: "
                        "never; a resumed run keeps its interval); an evolution tree: every N generations, the "
                        "population as <out>_ckpt.json")
    p.add_argument("--resume", metavar="CKPT",
                   help="continue the run saved in this checkpoint (an <out>_ckpt.npz, or an evolution tree's "
                        "<out>_ckpt.json; a built-in environment's --agent ga|neat|es|cmaes|novelty|coevolution run: "
                        "its <out>_population.json) to its --steps; flags given now (learning rate, exploration, "
                        "steps, ...) apply from there; the network cannot change")
    p.add_argument("--copies", type=COPIES, metavar="N",
                   help="train N copies of the environment at once, one network call for all (default: 1 for a "
                        "built-in environment, the Environment node's Copies for a .blend); --steps counts the steps "
                        "of every copy")
    p.add_argument("--workers", type=WORKERS, metavar="W",
                   help="a .blend scene with a DQN agent: W Blender processes gather the experience (each with its "
                        "own copies), this one learns; with an Evolution agent they evaluate each generation's "
                        "population, the same run as one process (default: none, all in this process)")
    p.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="run the --workers as Ray actors: on a local Ray started here, or on the cluster at ADDRESS "
                        "(needs the ray package: pip install 'drla[ray]'; see docs/cluster.md)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    demo_flags.add_demo_flags(p)
    train_flags.add_train_flags(p)  # --metrics, --tensorboard, --grow (issue 15)
    p.add_argument("--agent", choices=("dqn", "ppo", "sac", *pure_jobs.AGENTS), default=None,
                   help="built-in environments: dqn (default), ppo (policy gradients; continuous actions too), sac "
                        "(Soft Actor-Critic, continuous actions: pendulum), or evolve networks: ga (genetic "
                        "algorithm), neat, es (OpenAI-ES), cmaes (CMA-ES; sep-CMA above 1000 weights), novelty (GA "
                        "scored by novelty search); a two-agent game (pacman): coevolution (two GA "
                        "populations, each scored against the other's champion); for these --steps counts generations "
                        "(a .blend: its tree's agent node)")
    p.add_argument("--population", type=int_range(3, 10_000), metavar="N",
                   help="population size for ga, neat, es (even), cmaes (default 4 + 3 ln(weights)), novelty, "
                        "coevolution")
    _add_config_flags(p)
    train_flags.add_ppo_flags(p)
    sac_cli.add_flags(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("eval", help="evaluate a model file on a built-in environment (greedy policy)",
                       description="Run a model's greedy policy on a built-in environment and print its mean return "
                                   "(and the task's counts, e.g. the tank's hits and shots per episode).")
    p.add_argument("model", help="model .json file")
    p.add_argument("--env", choices=ENV_NAMES, help="environment (default: the one recorded in the model)")
    p.add_argument("--episodes", type=EPISODES, default=20, metavar="N", help="episodes to run (default 20)")
    p.add_argument("--seed", type=SEED, default=1000, metavar="N",
                   help="seed of the first episode; the same seed gives the same episodes (default 1000)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("play", help="run a model's greedy policy in a Blender scene and report its return",
                       description="Play a trained model in a .blend scene (headless). The scene file is not changed.")
    p.add_argument("scene", help="path/to/scene.blend")
    p.add_argument("--model", action="append", metavar="[NAME=]FILE",
                   help="model .json file (from drla train, or exported from Blender); a multi-agent tree takes the "
                        "team file drla train writes to --out (every agent), or one --model per agent: its own "
                        "<out>_<name>.json, or NAME=FILE")
    p.add_argument("--switcher", nargs="?", const="", metavar="NODE",
                   help="play the tree's Expert Switcher node instead of a model (each step it picks an expert by "
                        "its rule or selector; NODE: its name when the tree has several)")
    p.add_argument("--tree", help="DRLA node tree in the .blend (default: the only one)")
    p.add_argument("--episodes", type=EPISODES, default=20, metavar="N",
                   help="episodes to play; for a Learned IK model, random targets to solve (default 20)")
    p.add_argument("--seed", type=SEED, default=1000, metavar="N",
                   help="seed of the first episode (or of the IK targets) (default 1000)")
    p.add_argument("--frames", metavar="DIR", help="also write the camera's rendered frames of the first episode")
    p.set_defaults(func=cmd_play)
    record_cli.add_record_parser(sub)

    p = sub.add_parser("inspect", help="validate a model file and show its architecture")
    p.add_argument("model", help="model .json file to check")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("export-onnx", help="write a model file as ONNX (Unity, Godot, onnxruntime-web; needs onnx)",
                       description="Write MODEL.json as an ONNX graph: input 'obs' [batch, inputs] (raw observations; "
                                   "the normalisation is in the graph), outputs 'output' and 'action' (greedy).")
    p.add_argument("model", help="model .json file")
    p.add_argument("out", metavar="OUT.onnx", help="ONNX file to write")
    p.set_defaults(func=lambda args: _onnx_io().cmd_export_onnx(args))

    p = sub.add_parser("import-onnx", help="read a plain MLP from ONNX as a DRLA model file (needs onnx)",
                       description="Read an ONNX MLP (Gemm or MatMul+Add layers, relu/tanh/sigmoid/leaky_relu) "
                                   "and write it as a DRLA model file.")
    p.add_argument("onnx", metavar="IN.onnx", help="ONNX file to read")
    p.add_argument("out", metavar="OUT.json", help="model file to write")
    p.add_argument("--kind", choices=("dqn", "ik", "mlp"), help="model kind (default: from the file, else mlp)")
    p.add_argument("--actions", metavar="NAMES", help="comma-separated action names: discrete actions (a DQN)")
    p.set_defaults(func=lambda args: _onnx_io().cmd_import_onnx(args))

    p = sub.add_parser("import-sb3", help="read a Stable-Baselines3 policy (.zip) as a DRLA model file (needs torch)",
                       description="Convert the greedy policy of a Stable-Baselines3 MlpPolicy (DQN's Q-network; "
                                   "PPO's or A2C's actor: argmax for discrete actions, the mean for continuous ones) "
                                   "into a DRLA model file that Blender's Import / Play and drla play read. Nothing "
                                   "in the zip is executed.")
    p.add_argument("policy", metavar="POLICY.zip", help="the zip SB3's model.save() wrote")
    p.add_argument("--out", required=True, metavar="OUT.json", help="model file to write")
    p.add_argument("--kind", choices=("dqn", "mlp"),
                   help="model kind (default: dqn for discrete actions, which a DQN tree plays; mlp for continuous "
                        "ones, or for an evolution tree)")
    p.add_argument("--actions", metavar="NAMES", help="comma-separated names of the discrete actions")
    p.set_defaults(func=lambda args: _sb3_io().cmd_import_sb3(args))

    p = sub.add_parser("web", help="open a model in its browser demo (a local server on 127.0.0.1)",
                       description="Serve web/ and MODEL.json on 127.0.0.1 and open the demo page for the model's "
                                   "kind: CartPole, the robot arm (IK) or the tank's greedy policy.")
    p.add_argument("model", help="model .json file")
    p.add_argument("--port", type=int_range(0, 65_535), default=0, metavar="N", help="port (default: any free one)")
    p.add_argument("--no-browser", action="store_true", help="only print the address")
    p.set_defaults(func=lambda args: _web().cmd_web(args))

    netcli.add_parsers(sub)  # merge, experts, show (issue 15)

    p = sub.add_parser("envs", help="list the built-in environments")
    p.set_defaults(func=cmd_envs)

    p = sub.add_parser("demo", help="train the tank example headless; write the model and a report picture")
    p.add_argument("--out", default=str(DEFAULT_OUT_DIR), metavar="DIR", help="output folder (default: out)")
    p.add_argument("--steps", type=STEPS, metavar="N", help="training steps (default: the scene's Trainer node)")
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
