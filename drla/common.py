"""What both halves of the CLI share (the pure-env commands in ``cli.py``, the Blender scenes in
``scene.py``): the user-facing error, DQN flags into a config, output paths, Ctrl-C handling and
the end-of-training summary. Neither half imports the other's private names.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import shlex
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from drla_core.rl.dqn import DQNConfig
from drla_core.rl.checkpoint import Checkpoint, CheckpointError, read_latest
from drla_core.evolve.evolution import read_evolution_checkpoint
from drla_core.nn.mlp import ACTIVATIONS
from drla_core.io.model_io import Model, ModelFormatError, load_model, save_model
from drla_core.io.team_model import save_team


DEFAULT_OUT_DIR = Path("out")


class CLIError(Exception):
    """A problem the user can fix; printed as ``error: ...`` with exit status 2, no traceback."""


# ---- numbers the user types: every numeric flag's argparse ``type`` is one of these, with both bounds --------
#: The most environment steps (or generations) one command may ask for: about a day at the fastest rates here.
MAX_STEPS = 1_000_000_000
#: The most units in one hidden layer (``--hidden``): a 4096 x 4096 layer is 64 MB of weights, plus Adam's state.
MAX_HIDDEN_UNITS = 4096


class Range:
    """An argparse ``type`` for a number in ``[low, high]`` (``integer``: whole numbers only; ``5e4`` counts);
    a value outside, or not a number, gives argparse's one ``error:`` line (exit status 2) before anything runs.
    ``low``/``high`` stay readable: tests check that every numeric flag of every command has both."""

    def __init__(self, low: float, high: float, *, integer: bool = True, low_open: bool = False,
                 what: str = "") -> None:
        if not (math.isfinite(low) and math.isfinite(high) and low <= high):
            raise ValueError(f"a flag's range needs finite bounds, low <= high: got [{low}, {high}]")
        self.low, self.high, self.integer, self.low_open = low, high, integer, low_open
        self.__name__ = "int" if integer else "float"  # argparse names the type in some messages
        if what:
            self.need = what
        elif integer:
            self.need = f"a whole number from {_shown(low)} to {_shown(high)}"
        else:
            self.need = f"a number in {'(' if low_open else '['}{_shown(low)}, {_shown(high)}]"

    def __call__(self, text: str) -> float:
        number: float
        try:
            number = int(text.strip().replace("_", "")) if self.integer else float(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"needs {self.need}, got {text!r}") from None
            if self.integer:
                if not (math.isfinite(number) and number.is_integer()):
                    raise argparse.ArgumentTypeError(f"needs {self.need}, got {text!r}") from None
                number = int(number)
        if not (math.isfinite(number) and self.low <= number <= self.high) or (self.low_open and number == self.low):
            shown = text.strip() if len(text.strip()) <= 30 else text.strip()[:27] + "..."
            raise argparse.ArgumentTypeError(f"needs {self.need}, got {shown}")
        return number

    def __repr__(self) -> str:
        return f"Range({self.low}, {self.high}, integer={self.integer})"


def _shown(x: float) -> str:
    """1000000 -> 1_000_000, 0.5 -> 0.5, 1e-08 -> 1e-08: a bound as a user can type it back."""
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):_}"
    return f"{x:g}"


def int_range(low: int, high: int, what: str = "") -> Range:
    """Whole numbers in ``[low, high]``."""
    return Range(low, high, integer=True, what=what)


def float_range(low: float, high: float, *, low_open: bool = False, what: str = "") -> Range:
    """Finite numbers in ``[low, high]`` (``low`` itself excluded where ``low_open``)."""
    return Range(low, high, integer=False, low_open=low_open, what=what)


def parse_hidden(text: str) -> list[tuple[int, str]]:
    """``"64:relu,32:tanh"`` -> ``[(64, "relu"), (32, "tanh")]``; activation defaults to relu."""
    layers = []
    for part in text.split(","):
        size, _, act = part.strip().partition(":")
        if not size.strip().isdigit() or not 0 < int(size) <= MAX_HIDDEN_UNITS:
            raise CLIError(f"--hidden: {part.strip()!r} is not SIZE[:ACTIVATION] with a SIZE from 1 to "
                           f"{MAX_HIDDEN_UNITS}")
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


def total_memory() -> int:
    """This machine's memory in bytes (0 where it cannot be told)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 0


def check_replay_memory(buffer_size: int | None, obs_size: int, memory: int | None = None) -> None:
    """``--buffer-size``: the replay memory (observations and next observations, float32) must fit in half of
    this machine's memory; refused before training otherwise, with the sizes."""
    memory = total_memory() if memory is None else memory
    if not buffer_size or not memory:
        return
    need = buffer_size * (2 * obs_size * 4 + 16)
    if need > memory // 2:
        raise CLIError(f"--buffer-size {buffer_size}: the replay memory would take {need / 2**30:.1f} GiB "
                       f"({obs_size} observation values a step), more than half of this machine's "
                       f"{memory / 2**30:.1f} GiB; give at most {memory // 2 // (2 * obs_size * 4 + 16):_}")


def out_paths(out: str | None, default_stem: str) -> tuple[Path, Path]:
    stem = default_stem.replace(":", "_").replace("/", "_")  # gym:ALE/Pong-v5 -> gym_ALE_Pong-v5
    model_path = Path(out) if out else DEFAULT_OUT_DIR / f"{stem}.json"
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


class CheckpointSaver:
    """A job's ``save_fn``: the model so far (``<out>_step<N>.json``, as before) and the full checkpoint
    (``checkpoint_file``; a DQN run keeps the last two) that ``--resume`` continues from. ``write_state`` is what
    Ctrl-C writes (``finish_training``), and ``resume_command`` the command that continues it."""

    def __init__(self, model_path: Path, settings: dict[str, Any], suffix: str = ".npz") -> None:
        self.path = checkpoint_file(model_path, suffix)
        self.settings = settings

    def __call__(self, run: Any, model_file: str) -> None:
        agent = getattr(run, "agent", None)  # a DQN TrainingRun: its agent's network; else the job's model
        model = agent.to_model({"steps": run.steps, "episodes": run.episodes}) if agent is not None else \
            run.to_model({"steps": run.steps})
        save_model(model_file, model)
        self.write_state(run)

    def write_state(self, run: Any) -> Path:
        run.save_checkpoint(self.path, settings=self.settings)
        return self.path

    def resume_command(self) -> str:
        """``drla train TARGET [--tree TREE] --resume CHECKPOINT``, as this shell can run it."""
        target = self.settings.get("target", "")
        target = shown_path(target) if str(target).lower().endswith(".blend") else str(target)
        tree = self.settings.get("tree")
        words = [drla_command(), "train", shlex.quote(target)] + (["--tree", shlex.quote(tree)] if tree else [])
        return " ".join(words + ["--resume", shlex.quote(shown_path(self.path))])


def checkpoint_saver(model_path: Path, settings: dict[str, Any], suffix: str = ".npz") -> CheckpointSaver:
    """The ``CheckpointSaver`` for a run writing ``model_path`` (``settings``: what ``--resume`` checks)."""
    return CheckpointSaver(model_path, settings, suffix)


def refuse_model_file(path: Path, data: Any = None) -> None:
    """``--resume`` given a model file (the trained network, not the run's state): say which file to give."""
    if data is None:
        try:
            with open(path, encoding="utf-8") as f:
                head = f.read(200)
        except (OSError, UnicodeDecodeError):
            return
        if '"drla-model"' not in head:
            return
    elif not (isinstance(data, dict) and data.get("format") == "drla-model"):
        return
    beside = [p for p in (path.with_name(path.stem + "_ckpt.npz"), path.with_name(path.stem + "_ckpt.json"),
                          path.with_name(path.stem + "_population.json")) if p.is_file()]
    raise CLIError(f"--resume: {path} is a model file (the trained network), not a checkpoint: "
                   + (f"resume from {beside[0]}" if beside else
                      "resume from the <out>_ckpt.npz, <out>_ckpt.json or <out>_population.json the run wrote "
                      "beside it"))


def read_resume(path: str) -> Any:
    """The checkpoint ``--resume`` names, or the one before it when it is broken (saying so on stderr); a
    ``.json`` file is an evolution run's (``EvolutionCheckpoint``: the same ``meta``/``settings`` surface)."""
    if path.lower().endswith(".json"):
        refuse_model_file(Path(path))
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
            # None: the handler before was not Python's (inside a Blender binary, Blender's own), which Python
            # cannot put back; the default action is the nearest (restoring None raises TypeError)
            signal.signal(signal.SIGINT, signal.SIG_DFL if old is None else old)


def finish_training(job: Any, model: Model | dict[str, Model], model_path: Path, report_path: Path, title: str,
                    wall: float, ctrl_c: CtrlC | None = None, extra: dict[Path, Model] | None = None) -> int:
    """Write the model and the report of any ``TrainingJob``, print its summary; after Ctrl-C also a
    checkpoint, and say where. ``extra``: more model files (each agent of a multi-agent run); ``model`` a dict
    name -> model: a team file of them all (``drla_core.io.team_model``).

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
    named = [f"model:  {path}" for path in (extra or {})]
    shown = f"model:  {model_path}" + (f" (every agent: {', '.join(team)})" if team else "")
    print("\n".join(["", *job.summary(wall), shown, *named, f"report: {report_path}"]))
    if not job.interrupted:
        return 0
    saver = getattr(job, "save_fn", None)
    if isinstance(saver, CheckpointSaver):  # the full training state: --resume continues from it
        checkpoint = saver.write_state(job)
        print(interrupted_text(job.steps, job.total_steps, checkpoint, saver.resume_command()))
    else:  # a run without a resumable state: the model so far, under its step
        checkpoint = model_path.with_name(f"{model_path.stem}_step{job.steps}.json")
        save(checkpoint)
        print(interrupted_text(job.steps, job.total_steps, checkpoint, ""))
    return 130


def interrupted_text(steps: int, total: int, checkpoint: Path, resume_command: str) -> str:
    if not resume_command:
        return (f"interrupted at step {steps} of {total}: saved what was learnt so far (the model and the report); "
                f"this run cannot be resumed\nmodel so far: {checkpoint}")
    return (f"interrupted at step {steps} of {total}: saved what was learnt so far (the model, a checkpoint and "
            f"the report)\ncheckpoint: {checkpoint}\ncontinue with: {resume_command}")


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
