"""The CLI's Blender half: train, play and demo on a ``.blend`` scene's DRLA node tree, headless.

Needs ``bpy`` (the PyPI wheel ``bpy==5.0.1``, Python 3.11). The scene file on disk is never
written; the in-memory scene is restored after training and playing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from drla_core.model_io import ModelFormatError, load_model, save_model
from drla_core.plot import save_report, write_png
from drla_core.train import TrainingRun, evaluate

from .cli import CLIError, _out_paths, _summary, config_overrides, make_config
from .progress import ProgressBar

ROOT = Path(__file__).resolve().parent.parent
TANK_SCENE = ROOT / "scenes" / "tank" / "tank.blend"
TREE_IDNAME = "DRLA_NodeTree"


def _import_bpy() -> Any:
    try:
        import bpy
    except ImportError as exc:
        raise CLIError("Blender scenes need the bpy module: use Python 3.11 and `pip install bpy==5.0.1` "
                       "(make setup does this in .venv)") from exc
    return bpy


def open_scene(path: str | Path, tree_name: str | None) -> tuple[Any, Any, Any, Any]:
    """Open ``path`` with bpy and return ``(bpy, ext, tree, scene)``; clear errors otherwise."""
    path = Path(path)
    if not path.is_file():
        raise CLIError(f"no such .blend file: {path}")
    bpy = _import_bpy()
    from .extension import register_extension

    ext = register_extension()
    try:
        bpy.ops.wm.open_mainfile(filepath=str(path.resolve()), load_ui=False)
    except RuntimeError as exc:
        raise CLIError(f"Blender could not open {path}: {exc}") from exc
    trees = [t for t in bpy.data.node_groups if t.bl_idname == TREE_IDNAME]
    if not trees:
        raise CLIError(f"{path} has no DRLA node tree")
    if tree_name is None:
        if len(trees) > 1:
            raise CLIError(f"{path} has several DRLA trees; pick one with --tree: {', '.join(t.name for t in trees)}")
        tree = trees[0]
    else:
        matches = [t for t in trees if t.name == tree_name]
        if not matches:
            raise CLIError(f"no DRLA tree named {tree_name!r} in {path}; it has: {', '.join(t.name for t in trees)}")
        tree = matches[0]
    return bpy, ext, tree, bpy.context.scene


def addon_module(name: str) -> Any:
    """``drla_ext.addon.<name>`` (imported on demand; the extension must be loaded)."""
    import importlib

    return importlib.import_module(f"drla_ext.addon.{name}")


def compile_or_explain(ext: Any, tree: Any, scene: Any) -> Any:
    compile_mod = addon_module("compile")
    try:
        return compile_mod.compile_tree(tree, scene)
    except compile_mod.CompileError as exc:
        lines = [f"the node tree {tree.name!r} has problems:"]
        lines += [f"  node {node!r}: {message}" for node, message in exc.errors]
        raise CLIError("\n".join(lines)) from exc


def train_scene(args: argparse.Namespace) -> int:
    bpy, ext, tree, scene = open_scene(args.target, args.tree)
    compile_mod = addon_module("compile")
    compiled = compile_or_explain(ext, tree, scene)
    trainer = compiled.trainer
    steps = int(args.steps or (trainer.total_steps if trainer else 20_000))
    seed = args.seed if args.seed is not None else (trainer.seed if trainer else 0)
    config = make_config(compile_mod.dqn_config(compiled, steps), config_overrides(args), steps)
    model_path, report_path = _out_paths(args.out, Path(args.target).stem)
    callbacks: list[Any] = [] if args.quiet else [ProgressBar(steps)]

    from drla_core.dqn import DQNAgent

    with addon_module("snapshot").scene_session(scene):
        env = compile_mod.build_env(compiled, scene)
        try:
            agent = DQNAgent(env.observation_space, env.action_space, config, seed=seed)
            ckpt_path = str(model_path.with_name(model_path.stem + "_step{step}.json"))
            run = TrainingRun(env, agent, steps, seed=seed, eval_interval=args.eval_interval,
                              eval_episodes=args.eval_episodes, callbacks=callbacks,
                              checkpoint_interval=args.checkpoint_interval, checkpoint_path=ckpt_path)
            t0 = time.perf_counter()
            run.run()
            wall = time.perf_counter() - t0
        finally:
            env.close()
    meta = {"scene": Path(args.target).name, "tree": tree.name, "seed": seed, "training_steps": run.steps,
            "episodes": run.episodes}
    save_model(model_path, agent.to_model(meta))
    save_report(report_path, run.history, f"DQN on {tree.name} ({Path(args.target).name}) - seed {seed}")
    print(_summary(run, model_path, report_path, wall))
    return 0


class _Greedy:
    """A model as a policy for ``evaluate`` (``predict``), optionally saving the camera's frames."""

    def __init__(self, model: Any, env: Any, frames_dir: Path | None) -> None:
        self.model, self.env, self.frames_dir, self.frame = model, env, frames_dir, 0

    def predict(self, obs: Any) -> int:
        if self.frames_dir is not None and self.frame < 1000:
            image = self.env.render_observation() if hasattr(self.env, "render_observation") else None
            if image is not None:
                rgb = np.clip(np.asarray(image, dtype=np.float32) * 255.0, 0, 255).astype(np.uint8)
                if rgb.ndim == 2:
                    rgb = np.repeat(rgb[:, :, None], 3, axis=2)
                write_png(self.frames_dir / f"frame_{self.frame:04d}.png", rgb[::-1])
            self.frame += 1
        return int(self.model.act(obs))


def play_scene(args: argparse.Namespace) -> int:
    try:
        model = load_model(args.model)
    except FileNotFoundError as exc:
        raise CLIError(f"no such model file: {args.model}") from exc
    except ModelFormatError as exc:
        raise CLIError(f"{args.model}: {exc}") from exc
    bpy, ext, tree, scene = open_scene(args.scene, args.tree)
    compiled = compile_or_explain(ext, tree, scene)
    frames = Path(args.frames) if args.frames else None
    if frames is not None:
        frames.mkdir(parents=True, exist_ok=True)
    with addon_module("snapshot").scene_session(scene):
        env = addon_module("compile").build_env(compiled, scene)
        try:
            if env.observation_space.shape != model.observation_space.shape or env.action_space != model.action_space:
                raise CLIError(f"{args.model} was trained for other observations or actions than tree {tree.name!r} "
                               f"({model.observation_space}, {model.action_space} vs {env.observation_space}, "
                               f"{env.action_space})")
            policy = _Greedy(model, env, frames)
            result = evaluate(env, policy, args.episodes, args.seed)
        finally:
            env.close()
    text = f"{tree.name}: mean return {result.mean_return:.2f} over {args.episodes} episodes"
    if result.metric is not None and env.task_metric:
        text += f", {env.task_metric} rate {result.metric:.1%}"
    print(text)
    if frames is not None:
        print(f"frames: {frames} ({policy.frame} PNG files)")
    return 0


def demo(args: argparse.Namespace) -> int:
    """Train the tank example headless with progress; print where the model and the report are."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"DRLA demo: training the tank agent in {TANK_SCENE.relative_to(ROOT)} (headless Blender)")
    from .cli import build_parser

    train_args = build_parser().parse_args(
        ["train", str(TANK_SCENE), "--tree", "Tank", "--seed", str(args.seed), "--out", str(out / "tank.json")]
        + (["--steps", str(args.steps)] if args.steps else [])
    )
    status = train_scene(train_args)
    if status == 0:
        print(f"\nopen {out / 'tank_report.png'} to see the learning curve and the hit rate;")
        print(f"replay the agent with: python -m drla play {TANK_SCENE.relative_to(ROOT)} --model {out / 'tank.json'}")
    return status
