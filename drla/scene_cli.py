"""The CLI's Blender half: train, play and demo on a ``.blend`` scene's DRLA node tree, headless.

Needs ``bpy`` (the PyPI wheel ``bpy==5.0.1``, Python 3.11). The scene file on disk is never
written; the in-memory scene is restored after training and playing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from drla_core.agents.ik import accuracy_text, save_ik_report
from drla_core.model_io import save_model
from drla_core.train import TrainingRun, evaluate, metric_text

from .common import (
    CLIError,
    CtrlC,
    config_overrides,
    finish_training,
    interrupted_text,
    load_model_file,
    make_config,
    out_paths,
    report_title,
)
from .progress import ProgressBar

ROOT = Path(__file__).resolve().parent.parent
TANK_SCENE = ROOT / "scenes" / "tank" / "tank.blend"
TREE_IDNAME = "DRLA_NodeTree"


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


def open_scene(path: str | Path, tree_name: str | None) -> tuple[Any, Any, Any, Any]:
    """Open ``path`` with bpy and return ``(bpy, ext, tree, scene)``; clear errors otherwise."""
    path = Path(path)
    if path.is_dir():
        raise CLIError(f"{path} is a folder, not a .blend file")
    if not path.is_file():
        raise CLIError(f"no such .blend file: {path}")
    bpy = _import_bpy()
    from .extension import register_extension

    ext = register_extension()
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
    compiler = addon_module("tree.compiler")
    try:
        return compiler.compile_tree(tree, scene)
    except addon_module("specs").CompileError as exc:
        lines = [f"the node tree {tree.name!r} has problems:"]
        lines += [f"  node {node!r}: {message}" for node, message in exc.errors]
        raise CLIError("\n".join(lines)) from exc


def train_scene(args: argparse.Namespace) -> int:
    bpy, ext, tree, scene = open_scene(args.target, args.tree)
    compiled = compile_or_explain(ext, tree, scene)
    if compiled.agent is not None and compiled.agent.kind == "ik":
        return train_ik_scene(args, tree, compiled)
    build = addon_module("runs.build")
    trainer = compiled.trainer
    steps = int(args.steps if args.steps is not None else (trainer.total_steps if trainer else 20_000))
    seed = args.seed if args.seed is not None else (trainer.seed if trainer else 0)
    config = make_config(build.dqn_config(compiled, steps), config_overrides(args), steps)
    model_path, report_path = out_paths(args.out, Path(args.target).stem)
    callbacks: list[Any] = [] if args.quiet else [ProgressBar(steps)]

    from drla_core.agents.dqn import DQNAgent

    with CtrlC().installed() as ctrl_c, addon_module("scene.snapshot").restored_scene(scene):
        with quiet_egl():
            env = build.build_env(compiled, scene)
        try:
            agent = DQNAgent(env.observation_space, env.action_space, config, seed=seed)
            ckpt_path = str(model_path.with_name(model_path.stem + "_step{step}.json"))
            eval_interval = args.eval_interval if args.eval_interval is not None else (
                trainer.eval_interval if trainer else 0)
            eval_episodes = args.eval_episodes if args.eval_episodes is not None else (
                trainer.eval_episodes if trainer else 5)
            run = TrainingRun(env, agent, steps, seed=seed, eval_interval=eval_interval,
                              eval_episodes=eval_episodes, callbacks=callbacks,
                              checkpoint_interval=args.checkpoint_interval, checkpoint_path=ckpt_path)
            ctrl_c.run = run
            t0 = time.perf_counter()
            run.run()
            wall = time.perf_counter() - t0
        finally:
            ctrl_c.saving = True  # the scene is being restored: a Ctrl-C now waits for the results
            env.close()
    meta = {"scene": Path(args.target).name, "tree": tree.name, "seed": seed, "training_steps": run.steps,
            "episodes": run.episodes}
    if run.history.interrupted:
        meta["interrupted"] = True
    with ctrl_c.installed():
        return finish_training(run, agent.to_model(meta), model_path, report_path,
                               report_title(f"DQN on {tree.name} ({Path(args.target).name})", run, seed), wall,
                               ctrl_c)


def _ik_progress_line(step: int, total: int, seconds: float, solver: Any, width: int = 24) -> str:
    frac = min(1.0, step / max(total, 1))
    filled = int(frac * width)
    rate = step / seconds if seconds > 0 else 0.0
    eta = (total - step) / rate if rate > 0 else 0.0
    curve = getattr(solver, "curve", None)
    err = f"median error {1000 * curve[-1][1]:7.1f} mm" if curve else "median error       - mm"
    return (f"[{'#' * filled}{'.' * (width - filled)}] {step:>{len(str(total))}}/{total} | {err} | "
            f"{rate:,.0f} steps/s | ETA {int(eta) // 60}:{int(eta) % 60:02d}")


def train_ik_scene(args: argparse.Namespace, tree: Any, compiled: Any) -> int:
    """Train a Learned IK tree: the IKSolver on the armature's kinematics (the scene is only read)."""
    build = addon_module("runs.build")
    trainer = compiled.trainer
    cfg = compiled.agent.config
    steps = build.total_steps_of(compiled, args.steps or 0)
    seed = args.seed if args.seed is not None else (trainer.seed if trainer else 0)
    model_path, report_path = out_paths(args.out, f"{Path(args.target).stem}_{tree.name}")
    job = build.build_job(compiled, None, seed=seed, total_steps=steps)
    solver = job.solver
    arm = solver.arm
    print(f"Learned IK for '{cfg['armature']}' ({arm.n_bones} bones, {arm.n_dofs} joints, reach {arm.reach:.3f} m): "
          f"{cfg['method'].lower().replace('_', '-')} training, {steps} steps (at most {cfg['train_seconds']:.0f} s), "
          f"seed {seed}", file=sys.stderr)
    t0 = time.perf_counter()
    decile = 0
    interrupted: list[bool] = []
    with CtrlC().installed() as ctrl_c:
        ctrl_c.stop = lambda: interrupted.append(True)
        while not interrupted and not job.done:
            job.advance(max_steps=1)
            if not args.quiet and job.steps * 10 // steps > decile:
                decile = job.steps * 10 // steps
                print(_ik_progress_line(job.steps, steps, time.perf_counter() - t0, solver), file=sys.stderr,
                      flush=True)
        trained = job.steps
        ctrl_c.saving = True
        wall = time.perf_counter() - t0
        acc = job.evaluate(n=1000, seed=12345)
        meta = {"scene": Path(args.target).name, "tree": tree.name, "seed": seed, "training_steps": trained,
                "refine_iters": cfg["refine_iters"]}
        if interrupted:
            meta["interrupted"] = True
        model = job.to_model(meta)
        save_model(model_path, model)
        note = f"stopped at {trained} of {steps} steps" if interrupted else f"{trained} steps"
        save_ik_report(report_path, solver, acc, f"Learned IK: {tree.name} ({Path(args.target).name}), "
                                                 f"seed {seed}, {note}", wall)
        checkpoint = model_path.with_name(f"{model_path.stem}_step{trained}.json")
        if interrupted:
            save_model(checkpoint, model)
    print("\n".join([
        "",
        f"trained {trained} steps in {wall:.1f} s "
        f"({trained / max(solver.train_seconds if job.done else wall, 1e-9):,.0f} steps/s)",
        f"on 1000 random reachable targets: {accuracy_text(acc)}",
        f"model:  {model_path}  (kind 'ik'; extra.arm holds the arm description)",
        f"report: {report_path}",
    ]))
    if interrupted:
        print(interrupted_text(trained, steps, checkpoint))
        return 130
    return 0


def play_ik_scene(args: argparse.Namespace, model: Any) -> int:
    """Move the IK tree's target to random reachable spots, solve with the model, report the tip errors."""
    bpy, ext, tree, scene = open_scene(args.scene, args.tree)
    compiled = compile_or_explain(ext, tree, scene)
    if compiled.agent is None or compiled.agent.kind != "ik":
        raise CLIError(f"{args.model} is a Learned IK model but tree {tree.name!r} has no Learned IK Agent")
    ik, armature = addon_module("runs.ik"), addon_module("scene.armature")
    ob, target = ik.compiled_armature(compiled)
    try:
        solver = ik.solver_for(ob, model)
    except ValueError as exc:
        raise CLIError(f"{args.model}: {exc}") from exc
    iters = compiled.agent.config["refine_iters"]
    points = solver.arm.local_to_world(solver.arm.sample_targets(args.episodes, args.seed)[0])
    errors, net_errors = [], []
    t0 = time.perf_counter()
    with addon_module("scene.snapshot").restored_scene(scene):
        view_layer = bpy.context.view_layer
        for p in points:
            armature.move_target(target, p)
            view_layer.update()
            where = np.array(target.matrix_world.translation, dtype=np.float64)
            local = solver.arm.world_to_local(where)
            net_errors.append(float(solver.errors(local[None], solver.solve(local[None]))[0]))
            armature.apply_angles(ob, solver.arm, armature.solve_for_target(ob, solver, where, iters))
            view_layer.update()
            errors.append(float(np.linalg.norm(armature.tip_world(ob, solver.arm) - where)))
    wall = time.perf_counter() - t0
    mm, net_mm = 1000.0 * np.array(errors), 1000.0 * np.array(net_errors)
    print(f"{tree.name}: {len(points)} random reachable targets for '{ob.name}', solved in Blender "
          f"({1000 * wall / max(len(points), 1):.1f} ms each with the scene update): tip error median "
          f"{np.median(mm):.4f} mm, p90 {np.percentile(mm, 90):.4f} mm, max {mm.max():.4f} mm, "
          f"{np.mean(mm < 1.0):.0%} under 1 mm (network alone: median {np.median(net_mm):.1f} mm)")
    return 0


class _Greedy:
    """A model as a policy for ``evaluate``; with ``frames_dir`` it also renders the first episode.

    Each frame is the scene's own render (active camera, the file's render settings) of the state
    the agent acts on, saved from "Render Result" so no scene setting is touched.
    """

    def __init__(self, model: Any, env: Any, frames_dir: Path | None) -> None:
        self.model, self.env, self.frames_dir, self.frame = model, env, frames_dir, 0
        self.max_frames = int(getattr(env, "max_steps", 1000))

    def predict(self, obs: Any) -> int:
        if self.frames_dir is not None and self.frame < self.max_frames:
            import bpy

            if bpy.context.scene.camera is None:
                raise CLIError("--frames needs a scene camera to render from")
            bpy.ops.render.render()
            bpy.data.images["Render Result"].save_render(str(self.frames_dir / f"frame_{self.frame:04d}.png"))
            self.frame += 1
        return int(self.model.act(obs))


def play_scene(args: argparse.Namespace) -> int:
    model = load_model_file(args.model)
    if model.kind == "ik":
        return play_ik_scene(args, model)
    bpy, ext, tree, scene = open_scene(args.scene, args.tree)
    compiled = compile_or_explain(ext, tree, scene)
    if compiled.agent is not None and compiled.agent.kind == "ik":
        raise CLIError(f"tree {tree.name!r} is a Learned IK tree but {args.model} is a {model.kind} model")
    frames = Path(args.frames) if args.frames else None
    if frames is not None:
        frames.mkdir(parents=True, exist_ok=True)
    with addon_module("scene.snapshot").restored_scene(scene):
        with quiet_egl():
            env = addon_module("runs.build").build_env(compiled, scene)
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
    if env.task_metric:
        text += f"; {metric_text(env.task_metric, result.metric_sum, result.metric_count, len(result.returns))}"
    print(text)
    if frames is not None:
        print(f"frames: {frames} ({policy.frame} PNG files)")
    return 0

