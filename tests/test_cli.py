"""Smoke tests of the real CLI entry point with tiny budgets (CleanRL's habit), and the mistakes a new
user makes: each gives one ``error:`` line and exit status 2, never a traceback or a silent wrong run."""

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from drla.cli import build_parser, main
from drla.common import CLIError, drla_command, parse_hidden
from drla_core.io.model_io import load_model

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "drla"


def test_help_runs_as_a_module():
    out = subprocess.run([sys.executable, "-m", "drla", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0
    for command in ("train", "eval", "play", "inspect", "envs", "demo"):
        assert command in out.stdout


def test_train_eval_inspect_round_trip(tmp_path, capsys):
    model = tmp_path / "m.json"
    assert main(["train", "identity", "--steps", "600", "--seed", "3", "--out", str(model), "--quiet",
                 "--learning-starts", "100", "--train-freq", "4", "--gradient-steps", "1",
                 "--eval-interval", "0", "--hidden", "16:tanh"]) == 0
    out = capsys.readouterr().out
    assert "trained 600 steps" in out and str(model) in out
    assert (tmp_path / "m_report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    loaded = load_model(model)
    assert loaded.meta["env"] == "identity" and loaded.meta["training_steps"] == 600
    assert loaded.network.architecture()["hidden"] == [{"size": 16, "activation": "tanh"}]
    assert main(["eval", str(model), "--episodes", "3"]) == 0
    assert "identity: mean return" in capsys.readouterr().out
    assert main(["inspect", str(model)]) == 0
    assert "valid DRLA model" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["train", "nosuchenv"], "unknown environment 'nosuchenv'"),
    (["train", "identity", "--out", "model.txt"], "--out must name a .json file"),
    (["train", "identity", "--hidden", "0:relu"], "a SIZE from 1 to 4096"),
    (["train", "identity", "--tau", "2"], "argument --tau: needs a number in (0, 1], got 2"),
    (["eval", "missing.json", "--env", "identity"], "no such model file"),
    (["train", "missing.blend"], "no such .blend file"),
])
def test_user_errors_are_one_clear_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_corrupt_model_is_reported(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "drla-model", "version": 99}))
    assert main(["inspect", str(bad)]) == 2
    assert "version" in capsys.readouterr().err


def test_parse_hidden():
    assert parse_hidden("64, 32:tanh") == [(64, "relu"), (32, "tanh")]
    with pytest.raises(CLIError):
        parse_hidden("big")


# ---- the console script ------------------------------------------------------------------------------------


def test_make_setup_installs_a_drla_command_that_works_from_any_folder(tmp_path):
    assert SCRIPT.is_file(), f"{SCRIPT} is missing: `make setup` installs it (pip install -e .)"
    out = subprocess.run([str(SCRIPT), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: drla ") and "demo" in out.stdout
    out = subprocess.run([str(SCRIPT), "train", "identity", "--steps", "150", "--learning-starts", "50", "--quiet",
                          "--out", "m.json"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "m.json").is_file() and (tmp_path / "m_report.png").is_file()


def test_package_metadata_agrees_with_the_extension():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
    import drla_core

    assert project["project"]["version"] == manifest["version"] == drla_core.__version__
    assert project["project"]["scripts"] == {"drla": "drla.cli:main"}
    assert "tool" in project and "ruff" in project["tool"] and "pytest" in project["tool"]


def test_the_suggested_command_runs_from_elsewhere(tmp_path, monkeypatch):
    """What the demo prints for replaying works in a plain shell (not `python -m drla`, which needs the repo)."""
    monkeypatch.chdir(tmp_path)
    command = drla_command()
    assert "-m drla" not in command or not SCRIPT.exists()
    out = subprocess.run(shlex.split(command) + ["envs"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "tank_grid" in out.stdout


# ---- help ------------------------------------------------------------------------------------------------------


def _parsers(parser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_flag_and_argument_has_help():
    for parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help and action.help.strip(), f"{parser.prog} {action.option_strings or action.dest}"
            assert "``" not in action.help, f"RST markup in {parser.prog} {action.option_strings}: {action.help}"


@pytest.mark.parametrize("command", ["train", "eval", "play", "inspect", "envs", "demo"])
def test_each_command_has_help(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: drla {command}") and "``" not in out


def test_envs_shows_plain_text(capsys):
    assert main(["envs"]) == 0
    out = capsys.readouterr().out
    assert "``" not in out and "Say which of n lights is on." in out
    assert "pacman       Pac-man and one ghost in a walled maze" in out  # the two-agent games too


# ---- numbers: every number a user types is checked -------------------------------------------------------------


BAD_NUMBERS = [
    (["train", "identity", "--steps", "0"], "--steps: needs a whole number from 1 to 1_000_000_000, got 0"),
    (["train", "identity", "--steps", "-5"], "--steps: needs a whole number from 1 to 1_000_000_000, got -5"),
    (['train', 'identity', '--steps', '2.5'], "--steps: needs a whole number from 1 to 1_000_000_000, got '2.5'"),
    (["train", "identity", "--seed", "-1"], "--seed: needs a whole number from 0 to 4_294_967_295, got -1"),
    (["train", "identity", "--eval-interval", "-1"],
     "--eval-interval: needs a whole number from 0 (0: never) to 1_000_000_000, got -1"),
    (["train", "identity", "--eval-episodes", "0"], "--eval-episodes: needs a whole number from 1 to 10_000, got 0"),
    (["train", "identity", "--checkpoint-interval", "-100"],
     "--checkpoint-interval: needs a whole number from 0 (0: never) to 1_000_000_000, got -100"),
    (["train", "identity", "--learning-rate", "-1"], "--learning-rate: needs a number in (0, 10], got -1"),
    (["train", "identity", "--learning-rate", "0"], "--learning-rate: needs a number in (0, 10], got 0"),
    (["train", "identity", "--learning-rate", "nan"], "--learning-rate: needs a number in (0, 10], got nan"),
    (["train", "identity", "--learning-rate", "fast"], "--learning-rate: needs a number in (0, 10], got 'fast'"),
    (["train", "identity", "--gamma", "1.5"], "--gamma: needs a number in [0, 1], got 1.5"),
    (["train", "identity", "--batch-size", "0"], "--batch-size: needs a whole number from 1 to 65_536, got 0"),
    (["train", "identity", "--buffer-size", "-3"], "--buffer-size: needs a whole number from 1 to 10_000_000, got -3"),
    (["train", "identity", "--learning-starts", "-1"],
     "--learning-starts: needs a whole number from 0 to 1_000_000_000, got -1"),
    (["train", "identity", "--train-freq", "0"], "--train-freq: needs a whole number from 1 to 1_000_000, got 0"),
    (["train", "identity", "--gradient-steps", "0"], "--gradient-steps: needs a whole number from 1 to 1_000, got 0"),
    (["train", "identity", "--target-update-interval", "0"],
     "--target-update-interval: needs a whole number from 1 to 1_000_000_000, got 0"),
    (["train", "identity", "--tau", "0"], "--tau: needs a number in (0, 1], got 0"),
    (["train", "identity", "--exploration-fraction", "2"], "--exploration-fraction: needs a number in [0, 1]"),
    (["train", "identity", "--exploration-initial-eps", "-0.1"], "--exploration-initial-eps: needs a number in [0, 1]"),
    (["train", "identity", "--exploration-final-eps", "1.01"], "--exploration-final-eps: needs a number in [0, 1]"),
    (["train", "identity", "--max-grad-norm", "0"], "--max-grad-norm: needs a number in (0, 1_000_000], got 0"),
    (["train", "identity", "--adam-eps", "-0.001"], "--adam-eps: needs a number in (0, 1], got -0.001"),
    (["train", "identity", "--hidden", "64:swish"], "--hidden: unknown activation 'swish'"),
    (["train", "identity", "--hidden", "99999"],
     "--hidden: '99999' is not SIZE[:ACTIVATION] with a SIZE from 1 to 4096"),
    (["train", "identity", "--loss", "l1"], "--loss: invalid choice: 'l1'"),
    (["eval", "m.json", "--episodes", "0"], "--episodes: needs a whole number from 1 to 10_000, got 0"),
    (["eval", "m.json", "--seed", "-2"], "--seed: needs a whole number from 0 to 4_294_967_295, got -2"),
    (["eval", "m.json", "--env", "pong"], "--env: invalid choice: 'pong'"),
    (["play", "s.blend", "--model", "m.json", "--episodes", "-1"],
     "--episodes: needs a whole number from 1 to 10_000, got -1"),
    (['play', 's.blend', '--model', 'm.json', '--seed', 'x'],
     "--seed: needs a whole number from 0 to 4_294_967_295, got 'x'"),
    (["demo", "--steps", "0"], "--steps: needs a whole number from 1 to 1_000_000_000, got 0"),
    (["train", "identity", "--steps", "99999999999999999999999"],
     "--steps: needs a whole number from 1 to 1_000_000_000, got 99999999999999999999999"),
    (["train", "scene.blend", "--copies", "100000"], "--copies: needs a whole number from 1 to 256, got 100000"),
    (["train", "scene.blend", "--workers", "1000"], "--workers: needs a whole number from 1 to 64, got 1000"),
    (["train", "cartpole", "--agent", "ga", "--population", "1e6"],
     "--population: needs a whole number from 3 to 10_000, got 1e6"),
    (["train", "identity", "--buffer-size", "1e12"], "--buffer-size: needs a whole number from 1 to 10_000_000"),
    (["train", "identity", "--learning-rate", "inf"], "--learning-rate: needs a number in (0, 10], got inf"),
    (["web", "m.json", "--port", "70000"], "--port: needs a whole number from 0 to 65_535, got 70000"),
    (["show", "m.json", "--out", "n.png", "--width", "100000"], "--width: needs a whole number from 64 to 8_192"),
    (["demo", "--seed", "-1"], "--seed: needs a whole number from 0 to 4_294_967_295, got -1"),
]


@pytest.mark.parametrize("argv, message", BAD_NUMBERS, ids=[" ".join(a[0:1] + a[2:]) for a, _ in BAD_NUMBERS])
def test_bad_numbers_are_refused_before_anything_runs(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"drla {argv[0]}: error: argument {message}" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 2  # the error and where to look
    assert not (tmp_path / "out").exists(), "nothing may run on a refused command line"


def _all_actions(parser, prefix=()):
    """(command words, action) for every option and argument of every subcommand, recursively."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _all_actions(sub, prefix + (name,))
        else:
            yield prefix, action


def test_every_numeric_flag_of_every_command_has_a_checked_range():
    """Introspect the parser: a flag that takes a number has a ``Range`` type (low and high, both finite) that
    refuses a value just past each end; no bare ``int``/``float`` type and no numeric default without one."""
    import argparse

    from drla.cli import build_parser
    from drla.common import Range

    numeric, bare = [], []
    for words, action in _all_actions(build_parser()):
        if isinstance(action, (argparse._HelpAction, argparse._StoreTrueAction, argparse.BooleanOptionalAction,
                               argparse._StoreConstAction)):
            continue
        name = " ".join(words) + " " + "/".join(action.option_strings or [action.dest])
        if isinstance(action.type, Range):
            numeric.append(name)
            kind = action.type
            for outside in (kind.low - 1, kind.high + 1):
                with pytest.raises(argparse.ArgumentTypeError, match="needs"):
                    kind(str(outside))
            kind(str(int(kind.high) if kind.integer else kind.high))  # the ends themselves are taken
            if not kind.low_open:
                kind(str(int(kind.low) if kind.integer else kind.low))
        elif action.type in (int, float) or (isinstance(action.default, (int, float))
                                             and not isinstance(action.default, bool)) or (
                action.metavar in ("N", "K", "W", "PX", "INT", "FLOAT", "SECONDS")):
            bare.append(name)  # a number typed without a range (or a number-like metavar on a text flag)
    assert not bare, f"numeric flags without a checked range: {bare}"
    for must in ("train --steps", "train --copies", "train --workers", "train --population", "train --grow",
                 "train --learning-rate", "play --episodes", "web --port", "show --width", "merge --states",
                 "experts add --score"):
        assert any(n.startswith(must + " ") or n == must or n.startswith(must + "/") for n in numeric), must


def test_every_numeric_hyperparameter_flag_is_checked():
    from drla.cli import CONFIG_CHOICES, CONFIG_TYPES
    import dataclasses

    from drla_core.rl.dqn import DQNConfig

    for f in dataclasses.fields(DQNConfig):
        if f.type in ("int", "float", int, float) and f.name != "total_timesteps":
            assert f.name in CONFIG_TYPES, f.name
    assert set(CONFIG_CHOICES) == {"loss"}
    flags = {a[2] for a, _ in BAD_NUMBERS if a[0] == "train"}
    for name in CONFIG_TYPES:
        assert "--" + name.replace("_", "-") in flags, f"no test of a bad --{name}"


@pytest.mark.parametrize("argv, message", [
    (["train", "identity", "--out", "."], "--out . is a folder"),
])
def test_other_bad_values(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and "Traceback" not in err


def test_steps_trains_exactly_what_was_asked(tmp_path, capsys):
    model = tmp_path / "m.json"
    assert main(["train", "identity", "--steps", "137", "--out", str(model), "--quiet", "--learning-starts", "50",
                 "--eval-interval", "0"]) == 0
    assert "trained 137 steps" in capsys.readouterr().out
    assert load_model(model).meta["training_steps"] == 137
    assert main(["train", "identity", "--steps", "2e2", "--out", str(model), "--quiet", "--learning-starts", "50",
                 "--eval-interval", "0"]) == 0
    assert "trained 200 steps" in capsys.readouterr().out


# ---- model paths -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["inspect", "{dir}"], ["eval", "{dir}", "--env", "identity"],
                                  ["play", "scene.blend", "--model", "{dir}"]])
def test_a_folder_as_the_model_is_one_clear_line(argv, tmp_path, capsys):
    assert main([a.replace("{dir}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path} is a folder, not a model file: give the model's .json file\n"


def test_unreadable_model_is_one_clear_line(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    model = tmp_path / "m.json"
    model.write_text("{}")
    model.chmod(0)
    assert main(["inspect", str(model)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_eval_reports_hits_and_shots_per_episode(tmp_path, capsys):
    model = tmp_path / "tank.json"
    assert main(["train", "tank_grid", "--steps", "300", "--learning-starts", "100", "--quiet", "--eval-interval",
                 "0", "--out", str(model)]) == 0
    capsys.readouterr()
    assert main(["eval", str(model), "--episodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "tank_grid: mean return" in out and "over 2 episodes" in out
    assert "hits " in out and "/episode, shots " in out and "hit rate" in out and "in 2 episodes" in out


def test_train_on_copies_counts_every_copys_steps(tmp_path, capsys):
    model = tmp_path / "identity.json"
    assert main(["train", "identity", "--copies", "4", "--steps", "302", "--learning-starts", "100", "--quiet",
                 "--eval-interval", "100", "--eval-episodes", "1", "--out", str(model)]) == 0
    assert "trained 304 steps" in capsys.readouterr().out  # 302 rounded up to whole vector steps of 4
    meta = load_model(model).meta
    assert meta["copies"] == 4 and meta["training_steps"] == 304
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "identity", "--copies", "0"])


# ---- Ctrl-C ----------------------------------------------------------------------------------------------------


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    t0 = time.monotonic()
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before {path.name} appeared: {proc.communicate()}")
        if time.monotonic() - t0 > timeout:
            proc.kill()
            raise AssertionError(f"{path.name} never appeared")
        time.sleep(0.05)


def test_ctrl_c_saves_what_was_learnt_and_says_where(tmp_path):
    model = tmp_path / "m.json"
    proc = subprocess.Popen([sys.executable, "-m", "drla", "train", "identity", "--steps", "100000000", "--out",
                             str(model), "--checkpoint-interval", "300", "--learning-starts", "100",
                             "--eval-interval", "200"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    _wait_for(tmp_path / "m_step300.json", proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert "Ctrl-C: stopping after this step and saving what was learnt" in err and "Traceback" not in err
    saved = load_model(model)
    steps = saved.meta["training_steps"]
    assert saved.meta["interrupted"] is True and 300 <= steps < 100_000_000
    checkpoint = tmp_path / "m_ckpt.npz"
    assert f"interrupted at step {steps} of 100000000: saved what was learnt so far" in out
    assert f"model:  {model}" in out and f"report: {tmp_path / 'm_report.png'}" in out
    assert f"checkpoint: {checkpoint}" in out
    assert (tmp_path / "m_report.png").read_bytes()[:4] == b"\x89PNG"
    # the checkpoint is the run's whole state, and the line after it is the command that continues the run
    command = shlex.split(out.split("continue with: ", 1)[1].splitlines()[0])
    assert command[command.index("train"):] == ["train", "identity", "--resume", str(checkpoint)]
    resumed = subprocess.run([sys.executable, "-m", "drla", *command[command.index("train"):], "--steps",
                              str(steps + 150), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming {checkpoint} at step {steps} of {steps + 150}" in resumed.stderr
    assert load_model(model).meta["training_steps"] == steps + 150


def test_ctrl_c_presses(capsys):
    """First press: stop after this step; second: quit without saving; while writing results: wait."""
    from drla.common import CtrlC

    stops = []
    ctrl_c = CtrlC()
    with pytest.raises(KeyboardInterrupt):  # nothing to save yet (opening a scene, compiling)
        ctrl_c(2, None)
    ctrl_c.stop = lambda: stops.append(1)
    ctrl_c(2, None)
    assert stops == [1] and "stopping after this step and saving" in capsys.readouterr().err
    with pytest.raises(KeyboardInterrupt):
        ctrl_c(2, None)
    ctrl_c.saving = True
    ctrl_c(2, None)
    assert "writing what was learnt, one moment" in capsys.readouterr().err and stops == [1]


def test_ctrl_c_without_checkpoint_interval_still_leaves_a_resumable_run(tmp_path):
    """No --checkpoint-interval: Ctrl-C alone writes the full state (<out>_ckpt.npz) and the resume command."""
    model, metrics = tmp_path / "m.json", tmp_path / "m.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "drla", "train", "identity", "--steps", "100000000", "--out",
                             str(model), "--learning-starts", "50", "--eval-interval", "0", "--metrics", str(metrics),
                             "--quiet"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while not (metrics.exists() and metrics.stat().st_size > 0):  # a few episodes trained
        assert proc.poll() is None and time.monotonic() - t0 < 120, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "Traceback" not in err, (out, err)
    steps = load_model(model).meta["training_steps"]
    assert f"checkpoint: {tmp_path / 'm_ckpt.npz'}" in out and "continue with: " in out
    command = shlex.split(out.split("continue with: ", 1)[1].splitlines()[0])
    resumed = subprocess.run([sys.executable, "-m", "drla", *command[command.index("train"):], "--steps",
                              str(steps + 40), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0 and f"at step {steps} of {steps + 40}" in resumed.stderr, resumed.stderr


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    assert main(["train", "identity", "--steps", "60", "--learning-starts", "20", "--eval-interval", "0", "--quiet",
                 "--hidden", "4", "--out", str(folder / "m.json")]) == 0
    (folder / "frames.png").write_bytes(b"not a folder")
    return folder


@pytest.mark.parametrize("argv, message", [
    (["train", "deceptive_maze", "--steps", "10"], "deceptive_maze has continuous actions (Box(shape=(2,), "
     "dtype=float32)) and DQN needs discrete ones: train it with --agent ppo or --agent sac or --agent ga or "
     "--agent neat or --agent es or --agent cmaes or --agent novelty"),
    (["train", "cartpole", "--workers", "2"], "--workers: applies to a .blend scene's tree, not to the built-in "
     "environment 'cartpole' (use --copies N to step N copies here)"),
    (["train", "cartpole", "--tree", "T"], "--tree: applies to a .blend scene's tree"),
    (["train", "cartpole", "--population", "10"], "--population: the population of an evolution run"),
    (["train", "cartpole", "--agent", "neat", "--learning-rate", "0.1"],
     "--learning-rate: a DQN setting; --agent neat does not use it (drop --learning-rate)"),
    (["train", "cartpole", "--agent", "ga", "--copies", "2"], "--copies: a DQN setting; --agent ga does not use it"),
    (["train", "scenes/tank/tank.blend", "--agent", "neat"], "--agent: a .blend file's tree chooses its agent"),
    (["train", "cartpole", "--resume", "{tiny}/m.json"], "--resume: {tiny}/m.json is a model file (the trained "
     "network), not a checkpoint: resume from the <out>_ckpt.npz, <out>_ckpt.json or <out>_population.json the "
     "run wrote beside it"),
    (["train", "scenes/tank/tank.blend", "--resume", "{tiny}/m.json"], "--resume: {tiny}/m.json is a model file"),
    (["play", "scenes/tank/tank.blend", "--model", "{tiny}/m.json", "--frames", "{tiny}/frames.png"],
     "--frames {tiny}/frames.png is a file: give a folder for the frames"),
])
def test_flags_a_command_would_ignore_or_trip_on_are_refused_in_one_line(argv, message, tiny_model, capsys):
    """Issue 23: each was a traceback or a silent no-op."""
    argv = [a.replace("{tiny}", str(tiny_model)) for a in argv]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        assert main(argv) == 2
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert err.strip() == "error: " + message.replace("{tiny}", str(tiny_model)) or (
        message.replace("{tiny}", str(tiny_model)) in err and len(err.strip().splitlines()) == 1), err


def test_replay_memory_must_fit_in_half_the_machines_memory():
    from drla.common import CLIError, check_replay_memory

    check_replay_memory(1000, 211, memory=2**30)  # 1.7 MB of 1 GiB
    check_replay_memory(None, 211, memory=2**30)  # no --buffer-size: the node's or the default
    with pytest.raises(CLIError, match=r"--buffer-size 9000000: the replay memory would take 14.3 GiB \(211 "
                                       r"observation values a step\), more than half of this machine's 16.0 GiB; "
                                       r"give at most 5_041_041"):
        check_replay_memory(9_000_000, 211, memory=16 * 2**30)
