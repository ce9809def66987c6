"""Smoke tests of the real CLI entry point with tiny budgets (CleanRL's habit)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from drla.cli import main, parse_hidden, CLIError
from drla_core.model_io import load_model

ROOT = Path(__file__).resolve().parent.parent


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
    (["train", "identity", "--hidden", "0:relu"], "positive SIZE"),
    (["train", "identity", "--tau", "2"], "tau must be in (0, 1]"),
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
