"""The CLI's Blender half: train, play and demo on a ``.blend`` scene's DRLA node tree, headless.

Needs ``bpy`` (the PyPI wheel ``bpy==5.0.1``, Python 3.11). The scene file on disk is never
written; the in-memory scene is restored after training and playing.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from drla_core.nets.growth import GrowthRule
from drla_core.io.model_io import read_model_bytes
from drla_core.io.team_model import read_models

from . import demo_flags, extension, train_flags
from .common import (
    CLIError,
    CtrlC,
    check_replay_memory,
    checkpoint_saver,
    config_overrides,
    finish_training,
    load_model_file,
    out_paths,
    read_resume,
    report_title,
    resume,
    resume_config,
)
from .progress import ProgressBar

ROOT = extension.ROOT  # the checkout, or the installed drla_ext package (its scenes/ in both)
TANK_SCENE = extension.SCENES / "tank" / "tank.blend"
TREE_IDNAME = "DRLA_NodeTree"
#: Seconds per ``advance`` slice of ``drla train SCENE``: how often the progress bar and Ctrl-C are looked at.
#: Nothing a run saves or measures depends on it (tests/blender/test_scene_slices.py sets it to 0 and to an hour).
SLICE_S = float(os.environ.get("DRLA_SLICE_S", "0.1"))


#: What Mesa's EGL prints (three times) when Blender makes its offscreen GPU context without a window.
#: The context works (the camera sensor renders); the lines only alarm, so the CLI drops them.
EGL_NOISE = b"EGL Error (0x3009): EGL_BAD_MATCH"


@contextlib.contextmanager
def quiet_egl() -> Iterator[None]:
    """Drop the harmless ``EGL_BAD_MATCH`` lines the GPU context prints while Blender sets it up.

    They are written by C code straight to file descriptor 2, so ``sys.stderr`` cannot filter them:
    for the duration of the block fd 2 goes to a temporary file, which is then copied back to the
    real stderr without those lines (anything else, a Python warning included, still shows, in order).
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no usable fd 2 (an embedding host): leave it alone
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            kept = b"".join(line for line in capture.read().splitlines(keepends=True) if EGL_NOISE not in line)
            if kept:
                os.write(2, kept)


def _import_bpy() -> Any:
    try:
        import bpy
    except ImportError as exc:
        raise CLIError("Blender scenes need the bpy module: use Python 3.11 and `pip install bpy==5.0.1` "
                       "(make setup does this in .venv)") from exc
    return bpy


def open_scene(path: str | Path, tree_name: str | None, model_tree: str | None = None) -> tuple[Any, Any, Any, Any]:
    """Open ``path`` with bpy and return ``(bpy, ext, tree, scene)``; clear errors otherwise. Without ``tree_name``
    a model's own tree (``model_tree``, its ``meta.tree``) is used where the file has it, else the panel's."""
    path = Path(path)
    if path.is_dir():
        raise CLIError(f"{path} is a folder, not a .blend file")
    if not path.is_file():
        raise CLIError(f"no such .blend file: {path}")
    bpy = _import_bpy()
    ext = extension.register_extension()
    # A .blend can carry Python scripts that run on load when auto-run is on: never from the CLI.
    bpy.context.preferences.filepaths.use_scripts_auto_execute = False
    try:
        bpy.ops.wm.open_mainfile(filepath=str(path.resolve()), load_ui=False)
    except RuntimeError as exc:
        reason = str(exc).strip().splitlines()[-1].removeprefix("Error: ") if str(exc).strip() else "unknown error"
        raise CLIError(f"Blender could not open {path}: {reason}") from exc
    trees = [t for t in bpy.data.node_groups if t.bl_idname == TREE_IDNAME]
    if not trees:
        raise CLIError(f"{path} has no DRLA node tree: open it in Blender and add one (Add > DRLA Examples in "
                       "the 3D viewport, or a new tree in the DRLA node editor), or give another .blend")
    if tree_name is None and len(trees) > 1 and model_tree in [t.name for t in trees]:
        tree = next(t for t in trees if t.name == model_tree)
        print(f"{path.name}: tree {tree.name!r}, the one the model was trained on (--tree picks another)",
              file=sys.stderr)
    elif tree_name is None:
        tree = panel_tree(trees, bpy.context.scene)
        if tree is None:
            raise CLIError(f"{path} has several DRLA trees; pick one with --tree: {', '.join(t.name for t in trees)}")
        if len(trees) > 1:
            others = ", ".join(t.name for t in trees if t != tree)
            print(f"{path.name}: tree {tree.name!r}, the RL Tree its DRLA panel picks (--tree picks another: "
                  f"{others})", file=sys.stderr)
    else:
        matches = [t for t in trees if t.name == tree_name]
        if not matches:
            raise CLIError(f"no DRLA tree named {tree_name!r} in {path}; it has: {', '.join(t.name for t in trees)}")
        tree = matches[0]
    return bpy, ext, tree, bpy.context.scene


def panel_tree(trees: list[Any], scene: Any) -> Any | None:
    """The tree to use when none is named: the only one, else the RL Tree the scene's DRLA panel picks (what
    pressing Train in that file would train); None when several exist and the panel picks none of them."""
    if len(trees) == 1:
        return trees[0]
    picked = getattr(getattr(scene, "drla", None), "tree", None)
    return picked if picked is not None and picked in trees else None


def addon_module(name: str) -> Any:
    """``drla_ext.addon.<name>`` (imported on demand; the extension must be loaded)."""
    import importlib

    return importlib.import_module(f"drla_ext.addon.{name}")


def compile_or_explain(ext: Any, tree: Any, scene: Any) -> Any:
    compiler = addon_module("tree.compiler")
    try:
        return compiler.compile_tree(tree, scene)
    except addon_module("specs").CompileError as exc:
        lines = [f"the node tree {tree.name!r} has problems:"]
        lines += [f"  node {node!r}: {message}" for node, message in exc.errors]
        raise CLIError("\n".join(lines)) from exc


def _default_stem(target: str, tree: Any, trees: int) -> str:
    """``tank`` for a file with one DRLA tree, ``robot_arm_Arm3`` when the file holds several."""
    stem = Path(target).stem
    return f"{stem}_{tree.name}" if trees > 1 else stem


def _checkpoint_to_resume(args: argparse.Namespace, tree: Any, kind: Any) -> Any:
    """``--resume``'s checkpoint (or None), refused when it is of another tree or the tree is not DQN."""
    ckpt = read_resume(args.resume) if getattr(args, "resume", None) else None
    if ckpt is not None and ckpt.settings.get("tree", tree.name) != tree.name:
        raise CLIError(f"--resume: {ckpt.path} is a run of tree {ckpt.settings['tree']!r}, not {tree.name!r}")
    if ckpt is not None and ckpt.meta.get("kind") != kind.name:
        made_by = addon_module("runs.kinds").KINDS.get(ckpt.meta.get("kind"))
        raise CLIError(f"--resume: {ckpt.path} is a checkpoint of a {made_by.label if made_by else 'different'} run, "
                       f"but tree {tree.name!r} trains {kind.label}")
    if ckpt is not None and args.seed is not None and args.seed != ckpt.meta["run"]["seed"]:
        raise CLIError(f"--seed: a resumed run keeps its seed ({ckpt.meta['run']['seed']}); drop --seed")
    return ckpt


def _run_options(args: argparse.Namespace, model_path: Path, ckpt: Any) -> dict[str, Any]:
    """What ``build_job`` gets besides the seed and steps: the flags' config changes, the checkpoints and, when
    resuming, the checkpointed run's config and evaluations."""
    saved_run = ckpt.meta["run"] if ckpt is not None else {}
    interval = args.checkpoint_interval if args.checkpoint_interval is not None else saved_run.get(
        "checkpoint_interval", 0)
    options: dict[str, Any] = {"overrides": config_overrides(args), "callbacks": [], "checkpoint_interval": interval,
                               "checkpoint_path": str(model_path.with_name(model_path.stem + "_step{step}.json"))}
    if ckpt is not None and ckpt.config is not None:  # a DQN run's (an evolution run's settings are its tree's)
        # (a SAC run's config is a SACConfig, a PPO run's a PPOConfig: drla/train_flags.py)
        options["config"] = {"sac": train_flags.sac_resume_config, "ppo": train_flags.ppo_resume_config}.get(
            str(ckpt.meta.get("kind")), resume_config)(ckpt)
        for name in ("eval_interval", "eval_episodes"):
            options[name] = saved_run[name]
    for name in ("eval_interval", "eval_episodes"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    return options


def train_scene(args: argparse.Namespace) -> int:
    """Train the tree's agent, whatever its kind, through the add-on's one assembler (``runs.build``)."""
    bpy, ext, tree, scene = open_scene(args.target, args.tree)
    compiled = compile_or_explain(ext, tree, scene)
    build, kinds = addon_module("runs.build"), addon_module("runs.kinds")
    kind = kinds.of(compiled)
    ckpt = _checkpoint_to_resume(args, tree, kind)
    saved_run = ckpt.meta["run"] if ckpt is not None else {}
    if ckpt is not None and not getattr(args, "copies", None) and saved_run.get("num_envs"):
        args.copies = saved_run["num_envs"]  # a resumed run keeps its copies
    workers = _check_scale_flags(args, compiled, kind, tree)
    _check_network_flags(args, kind, tree, workers)
    trainer = compiled.trainer
    steps = build.total_steps_of(compiled, args.steps or saved_run.get("total_steps") or 0)
    seed = saved_run["seed"] if ckpt is not None else args.seed if args.seed is not None else (
        trainer.seed if trainer else 0)
    trees = sum(1 for t in bpy.data.node_groups if t.bl_idname == TREE_IDNAME)
    model_path, report_path = out_paths(args.out or (ckpt.settings.get("out") if ckpt is not None else None),
                                        _default_stem(args.target, tree, trees))
    options = _run_options(args, model_path, ckpt)
    if kind.grows and not workers:
        options.update(_network_options(args, compiled, ckpt))
    bar = None if args.quiet else ProgressBar(steps)
    print(f"{kind.label} on {tree.name} ({Path(args.target).name}): {steps} steps, seed {seed}", file=sys.stderr)
    env = None
    with CtrlC().installed() as ctrl_c, addon_module("scene.snapshot").restored_scene(scene):
        try:
            if build.has_env(compiled):
                copies = getattr(compiled.env, "copies", 1)  # (a multi-agent tree: its team env, no copies)
                if not workers and copies > 8:  # seconds to a minute or two (256 copies): say so
                    print(f"making {copies} copies of the environment's objects...", file=sys.stderr)
                with quiet_egl():
                    try:
                        env = build.build_env(compiled, scene, copies=1 if workers else None)
                    except addon_module("scene.copies").CopyError as exc:
                        raise CLIError(f"--copies: {exc}") from exc
                if kind.grows:  # a DQN tree: its replay memory, when --buffer-size is given
                    space = getattr(env, "single_observation_space", None) or env.observation_space
                    check_replay_memory(getattr(args, "buffer_size", None), math.prod(space.shape))
            try:
                demo_flags.check_workers(args, workers)
                if workers:
                    job = _workers_run(args, build, compiled, env, tree, steps, seed, workers,
                                       checkpoint_interval=options["checkpoint_interval"] or 0,
                                       checkpoint_path=options["checkpoint_path"])
                else:
                    demo_flags.replace_tree_demo(args, compiled, resumed=ckpt is not None)
                    job = build.build_job(compiled, env, seed=seed, total_steps=steps, **options)
                    demo_flags.apply_demo_to_job(args, job, f"tree {tree.name!r} trains {kind.label}", ckpt is not None)
            except build.BuildError as exc:
                raise CLIError(str(exc)) from exc
            if options["checkpoint_interval"] and not callable(getattr(job, "save_checkpoint", None)) and not getattr(
                    job, "checkpoint_interval", 0):  # a job that saves neither way would ignore the flag
                what = "a --workers run is not saved part-way (it cannot be resumed)" if workers else (
                    f"tree {tree.name!r} trains {kind.label}, whose runs are not saved part-way (they cannot be "
                    "resumed)")
                raise CLIError(f"--checkpoint-interval: {what}: drop --checkpoint-interval")
            if callable(getattr(job, "save_checkpoint", None)):  # full checkpoints, for --resume
                job.save_fn = checkpoint_saver(model_path, {"target": str(args.target), "tree": tree.name,
                                                            "out": str(model_path),
                                                            "checkpoint_interval": options["checkpoint_interval"]},
                                               suffix=getattr(job, "checkpoint_suffix", ".npz"))
            if ckpt is not None:  # one scene plays its cut episode again (copies start a fresh one)
                resume(job, ckpt)
            ctrl_c.run = job
            wall = _run_to_end(job, bar)
        finally:
            ctrl_c.saving = True  # the scene is being restored: a Ctrl-C now waits for the results
            if env is not None:
                env.close()
    with ctrl_c.installed():
        job.finish()
        meta = {"scene": Path(args.target).name, "tree": tree.name, "seed": seed, "training_steps": job.steps}
        if job.interrupted:
            meta["interrupted"] = True
        title = report_title(f"{kind.label} on {tree.name} ({Path(args.target).name})", job, seed)
        extra, model = {}, job.to_model(meta)
        if callable(getattr(job, "to_models", None)):  # several agents: each trained one its own file, and
            extra = {model_path.with_name(f"{model_path.stem}_{name}.json"): m  # the model file holds them all
                     for name, m in job.to_models(meta).items()}
            model = job.policies(meta)
        return finish_training(job, model, model_path, report_path, title, wall, ctrl_c, extra)


def _check_scale_flags(args: argparse.Namespace, compiled: Any, kind: Any, tree: Any) -> int:
    """Apply ``--copies`` to the compiled tree; the number of ``--workers`` (0: none), if the kind takes them."""
    workers = int(getattr(args, "workers", None) or (2 if getattr(args, "ray", None) else 0))
    if workers and not kind.workers:
        raise CLIError(f"--workers: tree {tree.name!r} trains {kind.label}, which learns in this process only")
    copies = getattr(args, "copies", None)
    if copies:
        if compiled.env is None:
            raise CLIError(f"--copies: tree {tree.name!r} trains {kind.label}, which has no environment to copy")
        compiled.env.copies = copies
    return workers


def _check_network_flags(args: argparse.Namespace, kind: Any, tree: Any, workers: int) -> None:
    """``--grow``, ``--metrics`` and ``--tensorboard`` watch a DQN run in this process: refused otherwise."""
    given = [flag for flag, name in (("--grow", "grow"), ("--metrics", "metrics"), ("--tensorboard", "tensorboard"))
             if getattr(args, name, None)]
    if not given:
        return
    if not kind.grows:
        raise CLIError(f"{given[0]}: tree {tree.name!r} trains {kind.label}; {', '.join(given)} apply to a DQN agent")
    if workers:
        raise CLIError(f"{given[0]}: not with --workers (the learner's run has no callbacks there); drop one of them")


def _network_options(args: argparse.Namespace, compiled: Any, ckpt: Any) -> dict[str, Any]:
    """A DQN tree's ``--grow`` (the Network node's rule otherwise, or the resumed run's) and dashboards."""
    train_flags.check_resume_hidden(args, ckpt)

    callbacks: list[Any] = []
    grows_itself = bool(compiled.agent is not None and compiled.agent.config.get("growth"))
    saved = train_flags.saved_growth_rule(ckpt)
    if saved is not None and not getattr(args, "grow", None) and not grows_itself:
        callbacks.append(GrowthRule.from_state(saved))  # a run that grew by --grow keeps its rule when resumed
    callbacks += train_flags.dashboard_callbacks(args)
    out: dict[str, Any] = {"callbacks": callbacks}
    if getattr(args, "grow", None):
        if args.grow < 1:
            raise CLIError("--grow: give a number of evaluations, 1 or more")
        out["grow"] = args.grow
    return out


def _run_to_end(job: Any, bar: ProgressBar | None) -> float:
    """Advance ``job`` in slices to its end, drawing the progress bar; returns the wall seconds."""
    t0 = time.perf_counter()
    if bar is not None:
        bar.on_start(job)
    while not job.done:
        # a slice never runs past the step of the next progress line (every 10 % in a log), however fast the machine
        job.advance(max_steps=None if bar is None else max(1, _next_line_step(job.steps, bar.total) - job.steps),
                    max_seconds=SLICE_S)
        if bar is not None:
            bar.on_step(job)
    if bar is not None:
        bar.on_end(job)
    return time.perf_counter() - t0


def _next_line_step(steps: int, total: int) -> int:
    """The first step of the tenth of ``total`` after the one ``steps`` is in (where a log's next progress line is)."""
    return -(-(steps * 10 // total + 1) * total // 10)


def _workers_run(args: argparse.Namespace, build: Any, compiled: Any, env: Any, tree: Any, steps: int, seed: int,
                 workers: int, **saving: Any) -> Any:
    """The DQN learner here, its experience from ``workers`` spawned Blender processes (``drla.workers``);
    ``env`` (this process's own view of the scene) only tells the agent its spaces; ``saving``: the
    checkpoint interval and path, as a run in this process takes them."""
    from .workers import workers_run  # Ray's machinery, only when asked for

    if compiled.agent.kind == "evolution":  # its populations evaluated on the workers, all else here
        return _evolution_workers(args, compiled, env, steps, seed, workers, **saving)
    config = build.config_with(compiled, steps, config_overrides(args))
    agent = build.build_agent(compiled, env, seed=seed, total_steps=steps, config=config)
    try:
        return workers_run(agent, str(Path(args.target).resolve()), tree.name, steps, workers=workers,
                           copies=compiled.env.copies, seed=seed, task_metric=env.task_metric,
                           ray=getattr(args, "ray", None), env=env, **saving)
    except RuntimeError as exc:  # no ray package
        raise CLIError(str(exc)) from exc


def _evolution_workers(args: argparse.Namespace, compiled: Any, env: Any, steps: int, seed: int, workers: int,
                       **saving: Any) -> Any:
    """An Evolution tree's job whose populations ``workers`` spawned processes evaluate (``evolution_workers``)."""
    if config_overrides(args):
        raise CLIError("DQN settings from the command line do not apply to an Evolution Agent "
                       "(its settings are on the Evolution Agent node)")
    blend, pool = str(Path(args.target).resolve()), None
    ray = getattr(args, "ray", None)
    if ray:  # Ray actors (drla.workers), locally or on a cluster
        from .workers import RayEvolutionPool

        try:
            pool = RayEvolutionPool((blend, compiled.tree, compiled.env.copies), None if ray == "local" else ray,
                                    num_cpus=workers)
        except RuntimeError as exc:  # no ray package
            raise CLIError(str(exc)) from exc
    return addon_module("runs.evolution_workers").build_job(
        compiled, env, blend, workers=workers, copies=compiled.env.copies, seed=seed, total_steps=steps, pool=pool,
        log=lambda text: print(text, file=sys.stderr, flush=True), **saving)


def _trained_on(given: list[str]) -> str | None:
    """The tree one model file names (``meta.tree``), for a .blend holding several; None when unsure (a damaged file
    is reported when it is loaded)."""
    if len(given) != 1 or not Path(given[0]).is_file():
        return None
    try:
        model = read_models(read_model_bytes(given[0]))
    except Exception:  # noqa: BLE001 - loading it later gives the message
        return None
    tree = getattr(model, "meta", {}).get("tree") if not isinstance(model, dict) else None
    return tree if isinstance(tree, str) else None


def play_scene(args: argparse.Namespace) -> int:
    """Try a trained model in the scene: greedy episodes (DQN) or random reachable targets (Learned IK); with
    ``--switcher``, the tree's Expert Switcher node (each step: pick an expert, it acts)."""
    if getattr(args, "switcher", None) is not None:
        if args.model:
            raise CLIError("--switcher plays the tree's Expert Switcher (its experts are on the node): drop --model")
        return _play_switcher(args)
    if not args.model:
        raise CLIError("which model? pass --model MODEL.json (or --switcher to play the tree's Expert Switcher)")
    given = args.model if isinstance(args.model, list) else [args.model]
    for value in given:  # the model files are checked first: a missing one is reported before Blender starts
        path = value if Path(value).exists() or "=" not in value else value.partition("=")[2]
        if not Path(path).exists():
            raise CLIError(f"no such model file: {path}")
        if Path(path).is_dir():
            raise CLIError(f"{path} is a folder, not a model file: give the model's .json file")
    frames = Path(args.frames) if args.frames else None
    if frames is not None and frames.exists() and not frames.is_dir():  # before the scene is opened
        raise CLIError(f"--frames {frames} is a file: give a folder for the frames")
    bpy, ext, tree, scene = open_scene(args.scene, args.tree, _trained_on(given))
    compiled = compile_or_explain(ext, tree, scene)
    kinds = addon_module("runs.kinds")
    kind = kinds.of(compiled)
    if kind.team:
        model: Any = team_models(given, [m.name for m in compiled.team], tree.name)
        shown = ", ".join(given)
    else:
        if len(given) > 1:
            raise CLIError(f"tree {tree.name!r} has one agent: give one --model (got {len(given)})")
        model, shown = load_model_file(given[0]), given[0]
    for each in (model.values() if kind.team else [model]):
        if not kind.makes(each):
            made_by = next((k.label for k in kinds.KINDS.values() if k.makes(each)), repr(each.kind))
            article = "an" if made_by[:1].upper() in "AEIOU" else "a"
            raise CLIError(f"{shown} is {article} {made_by} model but tree {tree.name!r} trains {kind.label}")
    if frames is not None:
        try:
            frames.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CLIError(f"--frames: cannot create the folder {frames}: {exc.strerror or exc}") from exc
    try:
        with quiet_egl():
            text = kind.evaluate(scene, compiled, model, args.episodes, args.seed, frames)
    except ValueError as exc:  # the model does not fit the tree (ModelFormatError is a ValueError too)
        raise CLIError(f"cannot play {shown} on tree {tree.name!r}: {exc}") from exc
    print(text)
    return 0


def _load_one(value: str, names: list[str]) -> dict[str, Any]:
    """One ``--model`` value of a multi-agent tree as name -> model (a team file, ``NAME=FILE``, or an agent's own
    file whose ``meta.agent`` names it)."""
    from drla_core.io.team_model import load_any

    who, sep, path = value.partition("=")
    if not sep or who not in names:  # a plain path (which may hold '=')
        who, path = "", value
    if Path(path).is_dir():
        raise CLIError(f"{path} is a folder, not a model file: give the model's .json file")
    try:
        loaded = load_any(path)
    except FileNotFoundError as exc:
        raise CLIError(f"no such model file: {path}") from exc
    except ValueError as exc:  # ModelFormatError
        raise CLIError(f"{path}: {exc}") from exc
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if isinstance(loaded, dict):
        if who:
            raise CLIError(f"{value}: {path} is a team file holding {', '.join(loaded)}: give it without '{who}='")
        return loaded
    named = loaded.meta.get("side", loaded.meta.get("agent", ""))  # a co-evolution's side; meta.agent: its algorithm
    who = who or (named if isinstance(named, str) else "")
    if not who:
        raise CLIError(f"{path} names no agent (meta.agent): give it as --model NAME={path}, NAME one of "
                       f"{', '.join(names)}")
    return {who: loaded}


def _missing_hint(given: list[str], found: list[str], missing: list[str]) -> str:
    """Where the missing agents' models may be: ``<out>_<name>.json`` beside the first file, or ``<out>.json``."""
    first = Path(given[0].split("=", 1)[1] if "=" in given[0] and not Path(given[0]).is_file() else given[0])
    stem = first.stem.removesuffix(f"_{found[0]}") if found else first.stem
    beside = [first.with_name(f"{stem}_{name}.json") for name in missing]
    if all(p.is_file() for p in beside):
        return ": add " + " ".join(f"--model {p}" for p in beside)
    combined = first.with_name(f"{stem}.json")
    if combined.is_file() and combined != first:
        return f", or give {combined} (every agent's model in one file)"
    return ": give a team file (drla train writes one to --out) or --model NAME=FILE for each"


def team_models(given: list[str], names: list[str], tree_name: str) -> dict[str, Any]:
    """The model of every named agent of a multi-agent tree from ``--model`` values: a team file (every agent's
    model, as ``drla train`` writes to ``--out``), ``NAME=FILE``, or one agent's file (its ``meta.agent`` names
    it, as ``<out>_<name>.json``); each agent once, every agent covered."""
    models: dict[str, Any] = {}
    for value in given:
        for name, each in _load_one(value, names).items():
            if name not in names:
                raise CLIError(f"{value} holds agent {name!r}, but tree {tree_name!r} has agents {', '.join(names)}")
            if name in models:
                raise CLIError(f"two models given for agent {name!r}: give each agent once")
            models[name] = each
    missing = [name for name in names if name not in models]
    if missing:
        raise CLIError(f"tree {tree_name!r} has agents {', '.join(names)}; no model given for {', '.join(missing)}"
                       + _missing_hint(given, list(models), missing))
    return {name: models[name] for name in names}


def _play_switcher(args: argparse.Namespace) -> int:
    bpy, ext, tree, scene = open_scene(args.scene, args.tree)
    switcher = addon_module("runs.switcher")
    try:
        node = switcher.find_node(tree, args.switcher)
        with quiet_egl():
            text = switcher.evaluate_switcher(scene, tree, node, args.episodes, args.seed)
    except (switcher.SwitcherError, addon_module("specs").CompileError) as exc:
        raise CLIError(f"cannot play the Expert Switcher of tree {tree.name!r}: {exc}") from exc
    print(text)
    return 0
