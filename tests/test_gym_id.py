"""``drla train --gym-id ID``: DRLA's agents on any registered Gymnasium environment with Box observations and
discrete actions (issue 25, item 4), through ``drla/gym_adapter.py``; what cannot be trained is refused in one line.
"""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from drla.cli import main  # noqa: E402
from drla.gym_adapter import GymIdError, GymnasiumEnv, make_gym_env  # noqa: E402
from drla_core.base.env import check_env  # noqa: E402
from drla_core.io.model_io import load_model  # noqa: E402
from drla_core.rl.train import evaluate  # noqa: E402


def _refusal(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_dqn_solves_gymnasiums_cartpole(tmp_path, capsys):
    """Gymnasium's own CartPole-v1 (not DRLA's copy), seed 0: the greedy policy reaches the env's reward threshold
    (475, its spec's) on episodes it never trained on, judged by Gymnasium's env itself."""
    out = tmp_path / "cartpole_v1.json"
    assert main(["train", "--gym-id", "CartPole-v1", "--steps", "30000", "--seed", "0", "--quiet",
                 "--out", str(out)]) == 0
    assert "greedy evaluation" in capsys.readouterr().out
    model = load_model(out)
    assert model.meta["env"] == "gym:CartPole-v1" and model.network.input_size == 4
    env = gymnasium.make("CartPole-v1")
    returns = []
    for episode in range(10):
        obs, _ = env.reset(seed=5000 + episode)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(model.act(obs))
            total += reward
            done = terminated or truncated
        returns.append(total)
    assert np.mean(returns) >= env.spec.reward_threshold, returns
    assert main(["eval", str(out), "--episodes", "3"]) == 0  # drla eval finds the env in the model's meta
    said = re.search(r"gym:CartPole-v1: mean return ([\d.]+) over 3 episodes", capsys.readouterr().out)
    assert said and float(said[1]) >= env.spec.reward_threshold


def test_acrobot_trains_with_dqn_copies_and_evolution(tmp_path, capsys):
    out = tmp_path / "acrobot.json"
    assert main(["train", "--gym-id", "Acrobot-v1", "--steps", "600", "--learning-starts", "200", "--hidden", "16",
                 "--eval-interval", "0", "--copies", "2", "--quiet", "--out", str(out)]) == 0
    model = load_model(out)
    assert (model.network.input_size, model.action_space.n) == (6, 3)
    assert model.meta["env"] == "gym:Acrobot-v1" and model.meta["training_steps"] == 600
    out = tmp_path / "acrobot_ga.json"
    assert main(["train", "--gym-id", "Acrobot-v1", "--agent", "ga", "--steps", "1", "--population", "4",
                 "--quiet", "--out", str(out)]) == 0
    meta = load_model(out).meta
    assert meta["env"] == "gym:Acrobot-v1" and meta["agent"] == "ga"
    assert "train gym:Acrobot-v1 --resume" in capsys.readouterr().out  # the hint is a command that runs


def test_same_seed_same_run(tmp_path):
    files = []
    for name in ("a", "b"):
        files.append(tmp_path / f"{name}.json")
        assert main(["train", "--gym-id", "CartPole-v1", "--steps", "1500", "--learning-starts", "500", "--seed",
                     "3", "--hidden", "8", "--eval-interval", "0", "--quiet", "--out", str(files[-1])]) == 0
    a, b = (json.loads(f.read_text()) for f in files)
    assert a["params"] == b["params"]


def test_checkpoint_and_resume(tmp_path, capsys):
    """--checkpoint-interval writes the DQN's full state; --resume continues it (a fresh episode at the step, the
    env's generator restored) and refuses another id's checkpoint; an evolution run resumes from its population."""
    base = ["train", "--gym-id", "CartPole-v1", "--learning-starts", "200", "--hidden", "8", "--eval-interval", "0",
            "--quiet"]
    out = tmp_path / "c.json"
    assert main([*base, "--steps", "800", "--checkpoint-interval", "400", "--out", str(out)]) == 0
    ckpt = tmp_path / "c_ckpt.npz"
    assert ckpt.is_file() and (tmp_path / "c_step400.json").is_file()
    resumed = tmp_path / "r.json"
    assert main([*base, "--steps", "1200", "--resume", str(ckpt), "--out", str(resumed)]) == 0
    assert load_model(resumed).meta["training_steps"] == 1200
    capsys.readouterr()
    line = _refusal(["train", "--gym-id", "Acrobot-v1", "--resume", str(ckpt), "--quiet"], capsys)
    assert "is a run on 'gym:CartPole-v1', not on 'gym:Acrobot-v1'" in line
    evo = ["train", "--gym-id", "CartPole-v1", "--agent", "ga", "--population", "4", "--quiet"]
    assert main([*evo, "--steps", "1", "--out", str(tmp_path / "g.json")]) == 0
    capsys.readouterr()
    assert main(["train", "--gym-id", "CartPole-v1", "--quiet", "--steps", "2", "--resume",
                 str(tmp_path / "g_population.json"), "--out", str(tmp_path / "g2.json")]) == 0
    said = capsys.readouterr()
    assert "resuming" in said.err and "at generation 1 of 2" in said.err and "trained 2 generations" in said.out


def test_refusals_are_one_line(tmp_path, capsys, monkeypatch):
    out = ["--out", str(tmp_path / "x.json")]
    line = _refusal(["train", "--gym-id", "CartPol-v1", *out], capsys)
    assert "unknown Gymnasium id 'CartPol-v1'" in line and "Did you mean: `CartPole`" in line
    line = _refusal(["train", "--gym-id", "Pendulum-v1", *out], capsys)
    assert "continuous actions" in line and "discrete actions" in line
    line = _refusal(["train", "--gym-id", "FrozenLake-v1", *out], capsys)
    assert "are not a Box" in line
    line = _refusal(["train", "cartpole", "--gym-id", "CartPole-v1", *out], capsys)
    assert "not both" in line
    assert "--gym-id ID" in _refusal(["train", *out], capsys)
    assert "two-agent game" in _refusal(["train", "--gym-id", "CartPole-v1", "--agent", "coevolution", *out], capsys)
    line = _refusal(["train", "--gym-id", "CartPole-v1", "--tree", "T", *out], capsys)
    assert "--tree: applies to a .blend scene's tree" in line
    assert not (tmp_path / "x.json").exists()
    try:
        import Box2D  # noqa: F401
    except ImportError:  # gymnasium's message says how to install the extra
        line = _refusal(["train", "--gym-id", "LunarLander-v3", *out], capsys)
        assert "LunarLander-v3 needs a package that is not installed" in line and "box2d" in line
    monkeypatch.setitem(sys.modules, "gymnasium", None)  # as if gymnasium were not installed
    line = _refusal(["train", "--gym-id", "CartPole-v1", *out], capsys)
    assert "--gym-id needs gymnasium: pip install" in line


def test_the_adapter_follows_drlas_env_contract():
    env = make_gym_env("Acrobot-v1")
    assert isinstance(env, GymnasiumEnv)
    check_env(env)  # DRLA's own checker: spaces, types, determinism under a seed
    assert np.isinf(make_gym_env("CartPole-v1").observation_space.high[1])  # float32's largest: unbounded
    result = evaluate(env, lambda obs: 0, 2, seed=7)
    assert result.returns == evaluate(env, lambda obs: 0, 2, seed=7).returns
    with pytest.raises(GymIdError, match="unknown Gymnasium id"):
        make_gym_env("NoSuchEnv-v0")
