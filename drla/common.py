"""What both halves of the CLI share (the pure-env commands in ``cli.py``, the Blender scenes in
``scene.py``): the user-facing error, DQN flags into a config, output paths, Ctrl-C handling and
the end-of-training summary. Neither half imports the other's private names.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from drla_core.agents.dqn import DQNConfig
from drla_core.checkpoint import Checkpoint, CheckpointError, read_latest
from drla_core.evolution import read_evolution_checkpoint
from drla_core.mlp import ACTIVATIONS
from drla_core.model_io import Model, ModelFormatError, load_model, save_model
from drla_core.team_model import save_team


DEFAULT_OUT_DIR = Path("out")


class CLIError(Exception):
    """A problem the user can fix; printed as ``error: ...`` with exit status 2, no traceback."""


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


def out_paths(out: str | None, default_stem: str) -> tuple[Path, Path]:
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


def checkpoint_file(model_path: Path, suffix: str = ".npz") -> Path:
    """The full checkpoint beside the model: ``out/m.json`` -> ``out/m_ckpt.npz`` (the one before: ``.prev.npz``;
    an evolution run's: ``out/m_ckpt.json``, its job's ``checkpoint_suffix``)."""
    return model_path.with_name(model_path.stem + "_ckpt" + suffix)


def checkpoint_saver(model_path: Path, settings: dict[str, Any], suffix: str = ".npz") -> Callable[[Any, str], None]:
    """A job's ``save_fn``: the model so far (``<out>_step<N>.json``, as before) and the full checkpoint
    (``checkpoint_file``; a DQN run keeps the last two) that ``--resume`` continues from."""
    path = checkpoint_file(model_path, suffix)

    def save(run: Any, model_file: str) -> None:
        agent = getattr(run, "agent", None)  # a DQN TrainingRun: its agent's network; else the job's model
        model = agent.to_model({"steps": run.steps, "episodes": run.episodes}) if agent is not None else \
            run.to_model({"steps": run.steps})
        save_model(model_file, model)
        run.save_checkpoint(path, settings=settings)

    return save


def read_resume(path: str) -> Any:
    """The checkpoint ``--resume`` names, or the one before it when it is broken (saying so on stderr); a
    ``.json`` file is an evolution run's (``EvolutionCheckpoint``: the same ``meta``/``settings`` surface)."""
    if path.lower().endswith(".json"):
        try:
            return read_evolution_checkpoint(path)
        except ValueError as exc:
            raise CLIError(f"--resume: {exc}") from exc
    try:
        ckpt, note = read_latest(path)
    except CheckpointError as exc:
        raise CLIError(f"--resume: {exc}") from exc
    if note:
        print(f"warning: {note}", file=sys.stderr)
    return ckpt


def resume_config(ckpt: Checkpoint) -> DQNConfig:
    """The ``DQNConfig`` the checkpointed run trained with (flags given now change it, ``make_config``)."""
    try:
        return DQNConfig(**ckpt.config)
    except (TypeError, ValueError) as exc:
        raise CLIError(f"--resume: {ckpt.path} holds a DQN configuration this DRLA cannot use: {exc}") from exc


def resume(run: Any, ckpt: Checkpoint) -> None:
    """Load ``ckpt`` into the freshly built ``run``; say where it continues and what changed (on stderr)."""
    try:
        changes = run.load_checkpoint(ckpt)
    except (CheckpointError, ValueError) as exc:
        raise CLIError(f"cannot resume from {ckpt.path}: {exc}") from exc
    print(f"resuming {ckpt.path} at step {run.steps} of {run.total_steps}", file=sys.stderr)
    for name, old, new in changes:
        print(f"  {name}: {old} -> {new} (from step {run.steps})", file=sys.stderr)


def report_title(what: str, job: Any, seed: int) -> str:
    """The report's title: what was trained, the seed and the steps actually trained."""
    note = f"stopped at {job.steps} of {job.total_steps} steps" if job.interrupted else f"{job.steps} steps"
    return f"{what} - seed {seed}, {note}"


STOPPING = ("\nCtrl-C: stopping after this step and saving what was learnt "
            "(press Ctrl-C again to quit without saving)")


class CtrlC:
    """What Ctrl-C does during ``drla train``: the first press stops the training run after its current
    step, so that what was learnt is saved (``finish_training``); a second press quits at once, without
    saving; a press while the results are being written waits for them. Before ``run`` is set (opening
    a scene, compiling) Ctrl-C quits as usual: there is nothing to save yet.

    ``stop`` is what the first press calls (default: the job's ``stop`` without the final evaluation).
    """

    def __init__(self) -> None:
        self.run: Any = None  # the TrainingJob the first press stops
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


def finish_training(job: Any, model: Model | dict[str, Model], model_path: Path, report_path: Path, title: str,
                    wall: float, ctrl_c: CtrlC | None = None, extra: dict[Path, Model] | None = None) -> int:
    """Write the model and the report of any ``TrainingJob``, print its summary; after Ctrl-C also a
    checkpoint, and say where. ``extra``: more model files (each agent of a multi-agent run); ``model`` a dict
    name -> model: a team file of them all (``drla_core.team_model``).

    Returns the exit status: 0, or 130 (the convention for Ctrl-C) when the run was interrupted.
    """
    if ctrl_c is not None:
        ctrl_c.saving = True
    team = model if isinstance(model, dict) else None  # several named agents: one team file holding them all

    def save(path: Path) -> None:
        if team is not None:
            save_team(path, team)
        else:
            save_model(path, model)  # type: ignore[arg-type]
    save(model_path)
    for path, each in (extra or {}).items():
        save_model(path, each)
    job.save_report(report_path, title, wall)
    checkpoint = model_path.with_name(f"{model_path.stem}_step{job.steps}.json")
    if job.interrupted:
        save(checkpoint)
    named = [f"model:  {path}" for path in (extra or {})]
    shown = f"model:  {model_path}" + (f" (every agent: {', '.join(team)})" if team else "")
    print("\n".join(["", *job.summary(wall), shown, *named, f"report: {report_path}"]))
    if not job.interrupted:
        return 0
    print(interrupted_text(job.steps, job.total_steps, checkpoint))
    return 130


def interrupted_text(steps: int, total: int, checkpoint: Path) -> str:
    return (f"interrupted at step {steps} of {total}: saved what was learnt so far (the model, a checkpoint and "
            f"the report)\ncheckpoint: {checkpoint}")


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


def load_model_file(path: str, reader: Any = load_model) -> Any:
    """The model file at ``path`` (read by ``reader``: ``team_model.load_any`` takes a team file too), or a
    ``CLIError`` that says what is wrong with it."""
    if Path(path).is_dir():
        raise CLIError(f"{path} is a folder, not a model file: give the model's .json file")
    try:
        return reader(path)
    except FileNotFoundError as exc:
        raise CLIError(f"no such model file: {path}") from exc
    except ModelFormatError as exc:
        raise CLIError(f"{path}: {exc}") from exc
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from exc
