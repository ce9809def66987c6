"""Files DRLA writes (models, reports, checkpoints) get the user's normal permissions: 0666 less the umask,
or the mode of the file they replace, like ``open(path, "w")``; never owner-only behind the user's back."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from drla_core.rl.dqn import DQNAgent, DQNConfig
from drla_core.envs import make
from drla_core.base.files import atomic_write, new_file_mode
from drla_core.io.model_io import save_model
from drla_core.io.plot import save_report
from drla_core.io.png import write_png
from drla_core.rl.train import TrainingRun

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")


@pytest.fixture
def umask():
    """Set the umask for one test and put the old one back."""
    old = os.umask(0o022)
    os.umask(old)
    yield lambda mask: os.umask(mask)
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _agent():
    env = make("identity")
    return env, DQNAgent(env.observation_space, env.action_space, DQNConfig(learning_starts=10, train_freq=4,
                                                                            gradient_steps=1), seed=0)


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600), (0o027, 0o640)])
def test_new_files_follow_the_umask(tmp_path, umask, mask, expected):
    umask(mask)
    env, agent = _agent()
    model = save_model(tmp_path / "m.json", agent.to_model({}))
    report = save_report(tmp_path / "r.png", {"episode_returns": [1.0, 2.0]})
    png = write_png(tmp_path / "p.png", np.zeros((2, 2, 3), dtype=np.uint8))
    run = TrainingRun(env, agent, 60, checkpoint_interval=50, checkpoint_path=str(tmp_path / "ck_{step}.json"))
    run.run()
    for path in (model, report, png, tmp_path / "ck_50.json", atomic_write(tmp_path / "raw.bin", b"x")):
        assert mode(path) == expected, f"{path.name}: {oct(mode(path))}, expected {oct(expected)}"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary file may stay behind"


def test_a_replaced_file_keeps_its_mode(tmp_path, umask):
    umask(0o022)
    path = tmp_path / "m.json"
    path.write_text("old")
    path.chmod(0o640)
    _, agent = _agent()
    save_model(path, agent.to_model({}))
    assert mode(path) == 0o640 and new_file_mode(path) == 0o640
    assert new_file_mode(tmp_path / "new.json") == 0o644


def test_the_cli_writes_files_with_the_users_permissions(tmp_path, umask, capsys):
    from drla.cli import main

    umask(0o002)
    model = tmp_path / "m.json"
    assert main(["train", "identity", "--steps", "120", "--learning-starts", "50", "--quiet", "--eval-interval", "0",
                 "--checkpoint-interval", "100", "--out", str(model)]) == 0
    for path in (model, tmp_path / "m_report.png", tmp_path / "m_step100.json"):
        assert mode(path) == 0o664, f"{path.name}: {oct(mode(path))}"
