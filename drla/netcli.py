"""``drla merge`` (and the other network commands of issue 15): kept out of cli.py, which only adds the parsers.

    drla merge a.json b.json --out merged.json                 (average when allowed, else distil)
    drla merge a.json b.json --method distill --envs cartpole cartpole --out m.json
    drla experts add tank.json --name tank_a --library experts     drla experts list     drla experts remove tank_a
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from drla_core.envs import ENV_NAMES, make
from drla_core.nets.merge import MergeError, average, check_average, distill, record_states
from drla_core.io.model_io import check_fits, save_model
from drla_core.io.team_model import load_any


from . import scene as blend
from .common import CLIError, float_range, int_range, load_model_file, shown_path
from .experts import ExpertLibrary, LibraryError

DEFAULT_LIBRARY = "experts"


def _library(args: argparse.Namespace) -> ExpertLibrary:
    return ExpertLibrary(args.library or os.environ.get("DRLA_EXPERTS") or DEFAULT_LIBRARY)


def _space_text(d: Any) -> str:
    if isinstance(d, dict) and d.get("type") == "discrete":
        return f"{d.get('n')} actions"
    if isinstance(d, dict) and isinstance(d.get("shape"), list):
        return "x".join(str(n) for n in d["shape"]) + " inputs"
    return "?"


def _team_or_none(path: str) -> dict[str, Any] | None:
    """The agents' models of a team file, or None for anything else (a model file, a broken file)."""
    try:
        loaded = load_any(path)
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def cmd_experts(args: argparse.Namespace) -> int:
    lib = _library(args)
    try:
        if args.experts_command == "add":
            if not os.path.isfile(args.model):
                raise CLIError(f"{args.model}: no such model file")
            team = _team_or_none(args.model)
            if team is None:
                load_model_file(args.model)  # a bad file: the usual one-line error
                entry = lib.add(args.model, name=args.name, task=args.task, score=args.score, scene=args.scene,
                                replace=args.replace)
                print(f"added {entry['name']} to {shown_path(lib.folder)}")
            else:  # a team file: each agent's network is an expert of its own, <name>_<agent>
                base = args.name or Path(args.model).stem
                with tempfile.TemporaryDirectory() as tmp:
                    for agent, model in team.items():
                        one = save_model(Path(tmp) / f"{base}_{agent}.json", model)
                        entry = lib.add(one, name=f"{base}_{agent}", task=args.task, score=args.score,
                                        scene=args.scene, replace=args.replace)
                        print(f"added {entry['name']} (agent {agent} of {args.model}) to {shown_path(lib.folder)}")
        elif args.experts_command == "remove":
            entry = lib.remove(args.name)
            print(f"removed {entry['name']} from {shown_path(lib.folder)}")
        else:
            entries = lib.entries()
            if not entries:
                print(f"no experts in {shown_path(lib.folder)} (add one: drla experts add MODEL.json)")
            for e in entries:
                score = "" if e["score"] is None else f"  score {e['score']:g}"
                where = f"  from {e['scene']}" if e["scene"] else ""
                print(f"{e['name']:20s} {e['task'] or '-':14s} {_space_text(e['observation_space'])} -> "
                      f"{_space_text(e['action_space'])}{score}{where}")
    except LibraryError as exc:
        raise CLIError(str(exc)) from exc
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    models = [load_model_file(path) for path in args.models]
    names = [shown_path(path) for path in args.models]
    method = args.method
    if method == "auto":
        try:
            check_average(models, names)
            method = "average"
        except MergeError as exc:
            print(f"not averaging: {exc}")
            method = "distill"
    try:
        if method == "average":
            merged = average(models, names=names)
            print(f"averaged {len(models)} networks")
        else:
            merged = _distill(args, models, names)
    except MergeError as exc:
        raise CLIError(str(exc)) from exc
    path = save_model(args.out, merged)
    print(f"wrote {shown_path(path)}")
    return 0


def _distill(args: argparse.Namespace, models: list[Any], names: list[str]) -> Any:
    if getattr(args, "scene", None):
        return _distill_in_scene(args, models, names)
    envs = args.envs or [m.meta.get("env") for m in models]
    if len(envs) != len(models):
        raise CLIError(f"--envs: give one environment per model ({len(models)}), got {len(envs)}")
    states = []
    for i, (model, env_name) in enumerate(zip(models, envs)):
        if env_name not in ENV_NAMES:
            named = "names none" if env_name is None else f"names {env_name!r}, not a built-in environment"
            raise CLIError(f"distillation records states in each teacher's environment: {names[i]} {named}; pass "
                           f"--envs with one of {', '.join(ENV_NAMES)} per model (or --scene SCENE.blend)")
        env = make(env_name)
        try:
            check_fits(model, env.observation_space, env.action_space)
        except ValueError as exc:
            raise CLIError(f"{names[i]} does not fit environment {env_name!r}: {exc}") from exc
        states.append(record_states(model, env, args.states, seed=args.seed + i))
    student, info = distill(models, states, epochs=args.epochs, seed=args.seed, names=names)
    for name, share in zip(names, info["agreement"]):
        print(f"distilled: the merged network picks {name}'s action on {100 * share:.1f} % of its states")
    return student


def _distill_in_scene(args: argparse.Namespace, models: list[Any], names: list[str]) -> Any:
    """Distillation over states recorded in a .blend: each teacher in the tree its file names (``meta.tree``), else
    in ``--tree`` (the Merge node's way, ``runs.merge``); the scene file is never written."""
    bpy, ext, tree, scene = blend.open_scene(args.scene, args.tree)
    merge_run = blend.addon_module("runs.merge")
    states, places = [], []
    try:
        with blend.quiet_egl():
            for i, (model, name) in enumerate(zip(models, names)):
                s, where = merge_run.record_teacher_states(model, name, tree, scene, args.states, args.seed + i)
                states.append(s)
                places.append(where)
    except (merge_run.MergeFailure, blend.addon_module("specs").CompileError) as exc:
        raise CLIError(str(exc)) from exc
    student, info = distill(models, states, epochs=args.epochs, seed=args.seed, names=names)
    student.meta["merge"]["recorded_in"] = places
    for name, share, where in zip(names, info["agreement"], places):
        print(f"distilled: the merged network picks {name}'s action on {100 * share:.1f} % of its states "
              f"(recorded in {where})")
    return student


def cmd_show(args: argparse.Namespace) -> int:
    from drla_core.nets.netview import network_drawing, render_png_array
    from drla_core.io.png import write_png

    model = load_model_file(args.model)
    obs = None
    env_name = args.env or model.meta.get("env")
    if env_name in ENV_NAMES:  # the activations for the environment's first observation
        env = make(env_name)
        if env.observation_space.shape == model.observation_space.shape:
            raw, _ = env.reset(seed=args.seed)
            obs = model._input(raw)  # normalised as the network reads it
    drawing = network_drawing(model.network, obs, max_lines=args.max_lines)
    path = write_png(args.out, render_png_array(drawing, args.width, args.height))
    layers = " -> ".join(str(n) for n in drawing.layer_sizes)
    print(f"wrote {shown_path(path)}: {layers}, {sum(drawing.shown)} of {sum(drawing.total)} connections drawn"
          + (f", activations for {env_name}'s first observation" if obs is not None else ""))
    return 0


def add_parsers(sub: Any) -> None:
    """The network commands' parsers (called by cli.build_parser)."""
    p = sub.add_parser("merge", help="merge networks: weight averaging (same ancestor) or distillation",
                       description="Merge model files into one network. Averaging needs networks of the same shape "
                                   "trained from the same initial weights (meta.ancestry); distillation trains a "
                                   "student on each teacher's outputs over states recorded in its environment.")
    p.add_argument("models", nargs="+", metavar="MODEL.json", help="two or more model files")
    p.add_argument("--out", required=True, metavar="FILE.json", help="merged model file to write")
    p.add_argument("--method", choices=("auto", "average", "distill"), default="auto",
                   help="auto (default): average when allowed, else distil")
    p.add_argument("--envs", nargs="+", metavar="ENV", help="each teacher's environment, for distillation (default: "
                   "the one recorded in each model)")
    p.add_argument("--scene", metavar="SCENE.blend", help="distil over states recorded in this .blend: each model "
                   "plays in the tree its file names (meta.tree), else in --tree (needs bpy)")
    p.add_argument("--tree", help="with --scene: the tree for models that name none (default: the only one)")
    p.add_argument("--states", type=int_range(1, 1_000_000), default=5000, metavar="N",
                   help="states recorded per teacher (default 5000)")
    p.add_argument("--epochs", type=int_range(1, 10_000), default=60, metavar="N",
                   help="distillation epochs (default 60)")
    p.add_argument("--seed", type=int_range(0, 2**32 - 1), default=0, metavar="N", help="random seed (default 0)")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("show", help="draw a model's network as a picture (units, strongest connections)",
                       description="Layers as columns of points, connections coloured by weight (infrared: "
                                   "black-red-orange-yellow-white; negative weights blue-cyan), units by their "
                                   "activation for the environment's first observation.")
    p.add_argument("model", metavar="MODEL.json", help="model file to draw")
    p.add_argument("--out", required=True, metavar="NET.png", help="picture to write (PNG)")
    p.add_argument("--env", choices=ENV_NAMES, help="environment for the activations (default: the model's)")
    p.add_argument("--seed", type=int_range(0, 2**32 - 1), default=0, metavar="N",
                   help="seed of that first observation")
    p.add_argument("--max-lines", type=int_range(1, 100_000), default=300, metavar="N",
                   help="strongest connections drawn per layer pair (default 300)")
    p.add_argument("--width", type=int_range(64, 8192), default=900, metavar="PX", help="picture width (default 900)")
    p.add_argument("--height", type=int_range(64, 8192), default=560, metavar="PX", help="picture height (default 560)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("experts", help="the expert library: a folder of models with an index (list, add, remove)",
                       description="A library folder of model files with an index.json (name, task, spaces, score, "
                                   "source scene); share it by copying the folder.")
    p.add_argument("--library", metavar="DIR",
                   help=f"library folder (default: $DRLA_EXPERTS, else ./{DEFAULT_LIBRARY})")
    esub = p.add_subparsers(dest="experts_command", metavar="ACTION")
    esub.add_parser("list", help="list the experts")
    pa = esub.add_parser("add", help="copy a model file into the library")
    pa.add_argument("model", metavar="MODEL.json", help="model file to copy in")
    pa.add_argument("--name", help="expert name (default: the file name)")
    pa.add_argument("--task", help="what it does (default: the environment the model records)")
    pa.add_argument("--score", type=float_range(-1e12, 1e12),
                    help="its score (for example its evaluation's mean return)")
    pa.add_argument("--scene", help="the scene it was trained in")
    pa.add_argument("--replace", action="store_true", help="replace an expert of the same name")
    pr = esub.add_parser("remove", help="remove an expert and its file")
    pr.add_argument("name", help="the expert's name (drla experts list)")
    p.set_defaults(func=cmd_experts, experts_command="list")
