"""Co-evolution on pac-man: the game's rules, both populations improving against each other, export, resume."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from drla_core.evolve.coevolution import CoevolutionJob, OpponentEnv, Opponent
from drla_core.envs import PARALLEL_ENV_NAMES, make
from drla_core.envs.pacman import PacmanEnv
from drla_core.evolve.evolution import EvolutionConfig, GAConfig
from drla_core.io.model_io import load_model, save_model
from drla_core.base.parallel_env import check_parallel_env


def small_config(generations: int) -> EvolutionConfig:
    return EvolutionConfig(generations=generations, episodes=2,
                           ga=GAConfig(population_size=16, hidden=[(8, "tanh")], mutation_rate=0.2,
                                       mutation_sigma=0.5))


def test_pacman_is_a_parallel_env_in_the_registry() -> None:
    assert "pacman" in PARALLEL_ENV_NAMES
    env = make("pacman")
    assert isinstance(env, PacmanEnv)
    check_parallel_env(env, steps=300)


def test_pacman_rules_pellet_catch_and_swap() -> None:
    env = PacmanEnv()
    env.reset(seed=0)
    env.pacman, env.ghost = (1, 5), (9, 1)  # top-left corner, bottom-right corner
    env.pellets[2, 5] = True
    _, rewards, terms, _, _ = env.step({"pacman": 3, "ghost": 0})  # pac-man right onto a pellet
    assert rewards == {"pacman": 1.0, "ghost": -1.0} and not terms["pacman"]
    env.ghost = (3, 5)
    _, rewards, terms, _, infos = env.step({"pacman": 3, "ghost": 2})  # they swap cells: caught
    assert rewards["pacman"] == -5.0 and terms["ghost"] and infos["pacman"]["caught"] == 1
    assert env.agents == []
    with pytest.raises(ValueError, match="only '#'"):
        PacmanEnv(maze=("###", "#x#", "###"))


def test_opponent_env_plays_the_other_side() -> None:
    job = CoevolutionJob(lambda: make("pacman"), small_config(1), seed=0)
    opponent = Opponent(make("pacman").action_space("ghost"))
    opponent.network = job.first["ghost"]
    env = OpponentEnv(make("pacman"), "pacman", opponent)
    obs, _ = env.reset(seed=3)
    assert obs.shape == (17,)
    with pytest.raises(ValueError, match="two-agent environment with 'hero'"):
        OpponentEnv(make("pacman"), "hero", opponent)


@pytest.mark.slow
def test_both_populations_improve_against_each_other_and_export(tmp_path) -> None:
    job = CoevolutionJob(lambda: make("pacman"), small_config(12), seed=0)
    while not job.done:
        job.advance(max_seconds=0.5)  # in slices, as the CLI runs it
    h = job.history
    assert job.steps == 12 and len(h["pacman_best"]) == len(h["ghost_best"]) == 12
    # Each champion against the other side's first (random) champion, on fixed episodes: both rise.
    assert np.mean(h["pacman_vs_first"][-4:]) > h["pacman_vs_first"][0] + 1.0, h["pacman_vs_first"]
    assert np.mean(h["ghost_vs_first"][-4:]) > h["ghost_vs_first"][0] + 1.0, h["ghost_vs_first"]
    models = job.to_models({"env": "pacman"})
    assert set(models) == {"pacman", "ghost"}
    env = make("pacman")
    for name, model in models.items():
        path = save_model(tmp_path / f"{name}.json", model)
        back = load_model(path)
        obs = np.random.default_rng(0).uniform(-1, 1, (5, env.observation_space(name).shape[0])).astype(np.float32)
        assert np.array_equal(back.network.forward(obs), model.network.forward(obs))
        assert back.meta["side"] == name
    assert job.save_report(tmp_path / "report.png", "co-evolution").stat().st_size > 1000


def test_checkpoint_resumes_to_the_same_run(tmp_path) -> None:
    straight = CoevolutionJob(lambda: make("pacman"), small_config(3), seed=1)
    straight.advance()
    job = CoevolutionJob(lambda: make("pacman"), small_config(3), seed=1)
    job.advance(max_steps=2)
    path = job.save_checkpoint(tmp_path / "coevo.json")
    back = CoevolutionJob.load_checkpoint(path, lambda: make("pacman"))
    assert back.steps == 2
    back.advance()
    assert back.done and back.history["pacman_best"] == straight.history["pacman_best"]
    assert back.history["ghost_vs_first"] == straight.history["ghost_vs_first"]
    with pytest.raises(ValueError, match="not a DRLA co-evolution checkpoint"):
        CoevolutionJob.from_checkpoint({"format": "drla-evolution"}, lambda: make("pacman"))


def test_one_shared_environment_gives_the_run_of_a_factory() -> None:
    """A scene is one environment: the episodes run one after another on it, with the same results as on
    fresh games; a resume onto a new one goes on the same way."""
    by_factory = CoevolutionJob(lambda: make("pacman"), small_config(3), seed=4, progress_episodes=2)
    by_factory.advance()
    shared = CoevolutionJob(make("pacman"), small_config(3), seed=4, progress_episodes=2)
    shared.advance(max_steps=1)
    shared.stop()
    shared.resume(make("pacman"))  # between two generations: the sides move onto the new environment
    shared.advance()
    def measured(job):
        return {k: v for k, v in job.history.items() if k != "seconds"}
    assert measured(shared) == measured(by_factory)
    assert shared.history["pacman_best"] and shared.history["ghost_vs_first"]
    with pytest.raises(TypeError, match="one ParallelEnv"):
        CoevolutionJob(42)  # type: ignore[arg-type]


def test_continue_from_a_checkpoint_refuses_another_seed_and_extends_the_budget(tmp_path):
    from drla_core.evolve.evolution import read_evolution_checkpoint

    config = EvolutionConfig(generations=2, ga=GAConfig(population_size=6))
    job = CoevolutionJob(lambda: make("pacman"), config, seed=1)
    job.advance()
    path = job.save_checkpoint(tmp_path / "co.json", settings={"target": "pacman"})
    ckpt = read_evolution_checkpoint(path)  # one reader for both kinds of population file
    assert ckpt.meta["kind"] == "coevolution" and ckpt.meta["run"]["total_steps"] == 2 and ckpt.steps == 2
    assert ckpt.settings == {"target": "pacman"}
    other = CoevolutionJob(lambda: make("pacman"), config, seed=2)
    with pytest.raises(ValueError, match="seed is 1, this run's 2"):
        other.continue_from(ckpt)
    longer = CoevolutionJob(lambda: make("pacman"), replace(config, generations=3), seed=1)
    assert longer.continue_from(ckpt) == [("generations", 2, 3)]
    assert longer.steps == 2 and not longer.done
    longer.advance()
    assert longer.steps == 3 and longer.done
