"""Smoke runs of ``drla train <env> --agent ga|neat|novelty`` through the real entry point (seconds each)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from drla.cli import main
from drla.pure_jobs import AGENTS
from drla_core.evolve.coevolution import CoevolutionJob
from drla_core.evolve.evolution import EvolutionJob
from drla_core.envs import make
from drla_core.io.model_io import load_model

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("agent", sorted(set(AGENTS) - {"coevolution"}))
def test_train_evolution_agents_write_model_report_and_population(agent, tmp_path, capsys):
    out = tmp_path / f"{agent}.json"
    assert main(["train", "cartpole", "--agent", agent, "--steps", "2", "--population", "8", "--seed", "1",
                 "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "generations in" in text and str(out) in text
    model = load_model(out)
    assert model.meta["agent"] == agent and model.meta["env"] == "cartpole"
    assert (tmp_path / f"{agent}_report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    population = json.loads((tmp_path / f"{agent}_population.json").read_text())
    job = EvolutionJob.from_checkpoint(population, lambda: make("cartpole"))
    assert job.steps == model.meta["generations"]
    assert main(["eval", str(out), "--episodes", "2"]) == 0
    assert main(["inspect", str(out)]) == 0
    assert "valid DRLA model" in capsys.readouterr().out


def test_novelty_on_the_maze_as_a_module(tmp_path):
    out = tmp_path / "maze.json"
    run = subprocess.run([sys.executable, "-m", "drla", "train", "deceptive_maze", "--agent", "novelty", "--steps",
                          "3", "--population", "10", "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "[3/3 generations]" in run.stderr and "novelty" in run.stderr
    assert load_model(out).action_space.shape == (2,)


def test_coevolution_on_pacman_writes_both_champions_report_and_population(tmp_path, capsys):
    out = tmp_path / "pac.json"
    assert main(["train", "pacman", "--agent", "coevolution", "--steps", "2", "--population", "6", "--seed", "2",
                 "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "generations in" in text and "pacman" in text and "ghost" in text
    for side in ("pacman", "ghost"):
        model = load_model(tmp_path / f"pac_{side}.json")
        assert model.meta["side"] == side and model.meta["env"] == "pacman" and model.meta["generations"] == 2
        assert model.observation_space.shape == make("pacman").observation_space(side).shape
    assert (tmp_path / "pac_report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    job = CoevolutionJob.load_checkpoint(tmp_path / "pac_population.json", lambda: make("pacman"))
    assert job.steps == 2 and job.done


@pytest.mark.parametrize("argv, message", [
    (["train", "pacman"], "pacman is a two-agent game: train it with --agent coevolution"),
    (["train", "pacman", "--agent", "neat"], "pacman is a two-agent game: train it with --agent coevolution"),
    (["train", "cartpole", "--agent", "coevolution"], "--agent coevolution needs a two-agent game (pacman), not "
                                                       "cartpole"),
    (["train", "cartpole", "--agent", "ga", "--population", "1"],
     "argument --population: needs a whole number from 3 to 10_000, got 1"),
    (["train", "cartpole", "--agent", "evolve"], "argument --agent: invalid choice: 'evolve'"),
])
def test_evolution_flag_mistakes_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("target,agent", [("deceptive_maze", "neat"), ("pacman", "coevolution")])
def test_resume_a_population_continues_the_run_exactly(target, agent, tmp_path, capsys):
    """3 generations, then --resume to 5, end with the same champions as 5 generations straight."""
    base = ["train", target, "--agent", agent, "--population", "8", "--seed", "2", "--quiet"]
    assert main([*base, "--steps", "5", "--out", str(tmp_path / "straight.json")]) == 0
    assert main([*base, "--steps", "3", "--out", str(tmp_path / "cut.json")]) == 0
    # the population file names its agent, seed and settings: --resume needs only the new budget
    assert main(["train", target, "--steps", "5", "--quiet", "--resume", str(tmp_path / "cut_population.json")]) == 0
    capsys.readouterr()
    names = ["pacman", "ghost"] if agent == "coevolution" else [None]
    for name in names:
        suffix = f"_{name}" if name else ""
        straight = load_model(tmp_path / f"straight{suffix}.json")
        resumed = load_model(tmp_path / f"cut{suffix}.json")
        obs = np.random.default_rng(0).standard_normal((16, straight.observation_space.shape[0])).astype(np.float32)
        np.testing.assert_array_equal(straight.network.forward(obs), resumed.network.forward(obs))
    saved = json.loads((tmp_path / "cut_population.json").read_text())
    assert saved["settings"]["agent"] == agent and saved["settings"]["target"] == target


def test_resume_refuses_another_target_agent_seed_or_a_broken_file(tmp_path, capsys):
    out = tmp_path / "ga.json"
    assert main(["train", "cartpole", "--agent", "ga", "--steps", "1", "--population", "4", "--quiet",
                 "--out", str(out)]) == 0
    state = str(tmp_path / "ga_population.json")
    capsys.readouterr()
    for argv, message in [
        (["train", "deceptive_maze", "--resume", state], "is a run on 'cartpole', not on 'deceptive_maze'"),
        (["train", "cartpole", "--agent", "neat", "--resume", state], "is a run of --agent ga, not neat"),
        (["train", "cartpole", "--seed", "9", "--resume", state], "a resumed run keeps its seed (0)"),
    ]:
        assert main(argv) == 2
        assert message in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "drla-evolution", "seed": 0, "settings": {"target": "cartpole", "agent": "ga"}}')
    assert main(["train", "cartpole", "--resume", str(broken)]) == 2
    assert "a broken population file: missing 'config'" in capsys.readouterr().err
    broken.write_text("[1, 2")
    assert main(["train", "cartpole", "--resume", str(broken)]) == 2
    assert "is not a JSON population file" in capsys.readouterr().err
