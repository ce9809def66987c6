"""Neuroevolution core: the population matrix, the GA operators, novelty search, the EvolutionJob
(a TrainingJob), checkpoints and the learning results at fixed seeds (CartPole, the deceptive maze)."""

import json

import numpy as np
import pytest

from drla_core.rl.base import TrainingJob
from drla_core.envs import make
from drla_core.evolve.evolution import (
    EvolutionConfig,
    EvolutionJob,
    Evaluation,
    GA,
    GAConfig,
    NoveltyArchive,
    NoveltyConfig,
    PopulationMLP,
    action_function,
    gaussian_mutation,
    novelty_scores,
    one_point_crossover,
    rank_select,
    roulette_select,
    save_evolution_report,
    tournament_select,
    uniform_crossover,
)
from drla_core.io.model_io import load_model, save_model
from drla_core.base.spaces import Box, Discrete
from drla_core.rl.train import evaluate


def test_population_forward_is_every_rows_mlp_in_one_call():
    net = PopulationMLP(4, [(16, "tanh"), (8, "relu")], 3, "tanh")
    rng = np.random.default_rng(0)
    params = net.init_params(32, rng)
    params += rng.normal(0, 0.1, params.shape).astype(np.float32)  # non-zero biases too
    x = rng.normal(size=(32, 4)).astype(np.float32)
    out = net.forward(params, x)
    assert out.shape == (32, 3) and out.dtype == np.float32
    for i in (0, 7, 31):
        np.testing.assert_allclose(out[i], net.to_mlp(params[i]).forward(x[i]), rtol=1e-5, atol=1e-6)
    xb = rng.normal(size=(32, 5, 4)).astype(np.float32)  # several env copies per individual
    outb = net.forward(params, xb)
    np.testing.assert_allclose(outb[3], net.to_mlp(params[3]).forward(xb[3]), rtol=1e-5, atol=1e-6)
    assert net.n_params == net.to_mlp(params[0]).params.size
    assert net.cut_points == [4 * 16 + 16, 4 * 16 + 16 + 16 * 8 + 8]


@pytest.mark.parametrize("select", [roulette_select, tournament_select, rank_select])
def test_selection_pressure_prefers_the_fitter(select):
    rng = np.random.default_rng(1)
    fitness = np.arange(100, dtype=float)
    chosen = select(fitness, 20_000, rng)
    assert chosen.min() >= 0 and chosen.max() < 100
    mean = fitness[chosen].mean()
    assert mean > 55, f"{select.__name__}: mean selected fitness {mean:.1f}, population mean 49.5"
    # the best quarter is chosen more often than the worst quarter, by a clear margin
    assert (chosen >= 75).sum() > 2 * (chosen < 25).sum()


def test_selection_details():
    rng = np.random.default_rng(2)
    negative = np.array([-500.0, -100.0, -10.0])  # roulette must work with negative fitness
    counts = np.bincount(roulette_select(negative, 30_000, rng), minlength=3)
    assert counts[2] > counts[1] > counts[0]
    assert np.bincount(roulette_select(np.zeros(4), 8000, rng), minlength=4).min() > 1700  # equal: uniform
    f = np.arange(50, dtype=float)
    weak = f[tournament_select(f, 20_000, rng, size=2)].mean()
    strong = f[tournament_select(f, 20_000, rng, size=7)].mean()
    assert strong > weak + 5
    low = f[rank_select(f, 20_000, rng, pressure=1.1)].mean()
    high = f[rank_select(f, 20_000, rng, pressure=2.0)].mean()
    assert high > low + 5


def test_crossover_keeps_the_parents_genes():
    rng = np.random.default_rng(3)
    a = np.arange(100, dtype=np.float32).reshape(4, 25)
    b = -a - 1
    child = uniform_crossover(a, b, rng)
    assert np.all((child == a) | (child == b))
    assert 0.3 < (child == a).mean() < 0.7
    cuts = [5, 17]
    child = one_point_crossover(a, b, rng, cuts)
    for row, ca, cb in zip(child, a, b):
        cut = int(np.argmax(row != ca)) if np.any(row != ca) else 25
        assert cut in cuts
        np.testing.assert_array_equal(row[:cut], ca[:cut])
        np.testing.assert_array_equal(row[cut:], cb[cut:])


def test_gaussian_mutation_rate_and_sigma():
    rng = np.random.default_rng(4)
    x = np.zeros((200, 500), dtype=np.float32)
    y = gaussian_mutation(x, 0.1, 0.5, rng)
    changed = y != 0
    assert abs(changed.mean() - 0.1) < 0.01
    assert abs(y[changed].std() - 0.5) < 0.02
    assert y.dtype == np.float32 and not np.shares_memory(x, y)


def test_ga_elitism_and_determinism():
    net = PopulationMLP(3, [(4, "tanh")], 2)
    pops = []
    for _ in range(2):
        ga = GA(net, GAConfig(population_size=10, elites=2), np.random.default_rng(5))
        before = ga.population.copy()
        scores = np.arange(10, dtype=float)
        ga.tell(scores)
        np.testing.assert_array_equal(ga.population[0], before[9])
        np.testing.assert_array_equal(ga.population[1], before[8])
        pops.append(ga.population)
    np.testing.assert_array_equal(pops[0], pops[1])


def test_novelty_is_mean_distance_to_k_nearest():
    rng = np.random.default_rng(6)
    b = rng.random((12, 2))
    archive = rng.random((5, 2))
    got = novelty_scores(b, archive, k=3)
    others = np.concatenate([b, archive])
    for i in range(12):
        d = np.sort(np.linalg.norm(others - b[i], axis=1))[1:4]  # [0] is itself
        assert got[i] == pytest.approx(d.mean())


def test_archive_threshold_adapts_and_probability_inserts():
    rng = np.random.default_rng(7)
    arch = NoveltyArchive(NoveltyConfig(k=2, threshold=0.01))
    spread = rng.random((20, 2))
    arch.score(spread, np.zeros(20), rng)
    assert len(arch.items) == 20 and arch.threshold == pytest.approx(0.012)  # many added: threshold up 20 %
    arch.score(np.zeros((20, 2)), np.zeros(20), rng)  # nothing new: threshold down 5 %
    assert len(arch.items) == 20 and arch.threshold == pytest.approx(0.012 * 0.95)
    prob = NoveltyArchive(NoveltyConfig(archive="probability", add_probability=0.5))
    prob.score(rng.random((400, 2)), np.zeros(400), rng)
    assert 150 < len(prob.items) < 250
    blend = NoveltyArchive(NoveltyConfig(k=2, fitness_weight=1.0))
    scores, _ = blend.score(rng.random((5, 2)), np.array([0.0, 1, 2, 3, 4]), rng)
    np.testing.assert_allclose(scores, [0, 0.25, 0.5, 0.75, 1])


def test_box_actions_are_tanh_outputs_scaled_onto_the_box():
    act = action_function(Box(np.array([0.0, -2.0]), np.array([1.0, 2.0]), (2,)))
    out = act(np.array([[-1.0, 0.0], [1.0, 0.5]], dtype=np.float32))
    np.testing.assert_allclose(out[0], [0.0, 0.0])
    np.testing.assert_allclose(out[1], [1.0, 1.0])
    assert action_function(Discrete(3))(np.array([[0.1, 0.9, 0.2]])) == [1]


def test_evaluation_runs_every_individual_and_episode_on_few_envs():
    net = PopulationMLP(4, [(8, "tanh")], 2, "linear")
    params = net.init_params(6, np.random.default_rng(8))
    results = []
    for n_envs in (1, 4, 18):
        ev = Evaluation(lambda idx, obs: net.forward(params[idx], obs), 6, [11, 12, 13],
                        [make("cartpole") for _ in range(n_envs)], action_function(Discrete(2)))
        while not ev.run(deadline=0.0):  # one step per call: the generation spans many slices
            pass
        results.append(ev.returns)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])
    # individual 2, episode 1, replayed alone with its own MLP
    policy = net.to_mlp(params[2])
    alone = evaluate(make("cartpole"), lambda o: int(np.argmax(policy.forward(o))), 1, seed=12)
    assert results[0][2, 1] == alone.mean_return


def cartpole_job(method="ga", seed=0, generations=40, **kw):
    from drla_core.evolve.neat import NEATConfig

    cfg = EvolutionConfig(method=method, generations=generations, target_return=475.0,
                          ga=GAConfig(population_size=12), neat=NEATConfig(population_size=20), **kw)
    return EvolutionJob(lambda: make("cartpole"), cfg, seed=seed)


@pytest.mark.slow
def test_ga_evolves_a_cartpole_champion(tmp_path):
    job = cartpole_job("ga", seed=0)
    assert isinstance(job, TrainingJob)
    job.advance()
    assert job.history["best"][0] < 475, "generation 0 already solved: the test would not show evolution"
    assert job.solved and job.done and job.steps < 40
    path = save_model(tmp_path / "ga.json", job.to_model({"env": "cartpole"}))
    model = load_model(path)
    result = evaluate(make("cartpole"), model.act, 20, seed=5000)  # fresh episodes, through the file
    assert result.mean_return >= 475
    assert model.meta["generations"] == job.steps
    assert model.network.architecture()["hidden"] == [{"size": 16, "activation": "tanh"}] * 2


def maze_job(novelty: bool, seed: int = 4, generations: int = 20) -> EvolutionJob:
    cfg = EvolutionConfig(method="ga", generations=generations, target_return=1.0, solve_episodes=1,
                          ga=GAConfig(population_size=64, mutation_rate=0.2, mutation_sigma=0.2),
                          novelty=NoveltyConfig(k=15, threshold=0.05) if novelty else None)
    return EvolutionJob(lambda: make("deceptive_maze"), cfg, seed=seed)


@pytest.mark.slow
def test_novelty_search_escapes_the_deceptive_maze_where_fitness_does_not():
    novelty, fitness = maze_job(True), maze_job(False)
    novelty.advance()
    fitness.advance()
    assert novelty.solved and novelty.champion_fitness == 1.0
    assert not fitness.solved and fitness.champion_fitness < 0.8  # stuck against the trap's wall
    assert novelty.status()["novelty"] and int(novelty.status()["archive"]) > 0


def comparable(checkpoint: dict) -> dict:
    data = json.loads(json.dumps(checkpoint))
    data["history"].pop("seconds")  # wall time differs between runs
    return data


@pytest.mark.parametrize("method", ["ga", "neat"])
def test_checkpoint_resume_is_bit_exact(tmp_path, method):
    def job():
        cfg = EvolutionConfig(method=method, generations=6, ga=GAConfig(population_size=16),
                              novelty=NoveltyConfig(k=5, threshold=0.02))
        from drla_core.evolve.neat import NEATConfig
        cfg.neat = NEATConfig(population_size=16, add_node_prob=0.5)
        return EvolutionJob(lambda: make("deceptive_maze", max_episode_steps=40), cfg, seed=9)

    whole = job()
    whole.advance()
    part = job()
    part.advance(max_steps=3)
    part.advance(max_seconds=0.0)  # cut generation 4 short: the checkpoint holds its start
    path = part.save_checkpoint(tmp_path / "pop.json")
    assert b"pickle" not in path.read_bytes()
    resumed = EvolutionJob.load_checkpoint(path, lambda: make("deceptive_maze", max_episode_steps=40))
    assert resumed.steps == 3 and not resumed.done
    resumed.advance()
    assert resumed.done and resumed.steps == 6
    assert comparable(resumed.checkpoint()) == comparable(whole.checkpoint())


def test_checkpoint_refuses_other_files(tmp_path):
    with pytest.raises(ValueError, match="not a DRLA evolution checkpoint"):
        EvolutionJob.from_checkpoint({"format": "drla-model"}, lambda: make("cartpole"))
    with pytest.raises(ValueError, match="unsupported evolution checkpoint version 7"):
        EvolutionJob.from_checkpoint({"format": "drla-evolution", "version": 7}, lambda: make("cartpole"))
    good = cartpole_job("ga", generations=1)
    good.advance()
    data = json.loads(json.dumps(good.checkpoint()))
    del data["rng"]
    with pytest.raises(ValueError, match="broken evolution checkpoint: missing 'rng'"):
        EvolutionJob.from_checkpoint(data, lambda: make("cartpole"))
    data = json.loads(json.dumps(good.checkpoint()))
    data["method"]["population"] = [[0.0]]
    with pytest.raises(ValueError, match="broken evolution checkpoint: checkpoint population has shape"):
        EvolutionJob.from_checkpoint(data, lambda: make("cartpole"))


def test_job_in_slices_matches_one_call_and_reports_status(tmp_path):
    whole = cartpole_job("ga", seed=3, generations=3, episodes=2)
    whole.advance()
    sliced = cartpole_job("ga", seed=3, generations=3, episodes=2)
    calls = 0
    while not sliced.done:
        sliced.advance(max_seconds=0.01)
        calls += 1
    assert calls > 3
    assert comparable(sliced.checkpoint()) == comparable(whole.checkpoint())
    status = whole.status()
    assert status["generation"] == "3 / 3" and "best" in status and "mean" in status
    assert whole.total_steps == 3 and whole.steps == 3
    png = save_evolution_report(tmp_path / "r.png", whole.history, "GA on CartPole", ["done"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_list_of_envs_works_like_a_factory():
    envs = [make("cartpole") for _ in range(3)]
    a = EvolutionJob(envs, EvolutionConfig(generations=2, ga=GAConfig(population_size=8)), seed=1)
    b = EvolutionJob(lambda: make("cartpole"), EvolutionConfig(generations=2, ga=GAConfig(population_size=8)), seed=1)
    a.advance()
    b.advance()
    assert a.history["best"] == b.history["best"] and a.history["mean"] == b.history["mean"]
    assert len(a.envs) == 3


def test_continuous_actions_evolve_on_the_maze_and_export():
    job = maze_job(False, seed=0, generations=2)
    job.advance()
    model = job.to_model()
    assert isinstance(model.action_space, Box) and model.network.output_activation == "tanh"
    assert "action_transform" in model.extra


def test_resume_on_new_envs_mid_generation_repeats_the_generation_exactly():
    whole = cartpole_job("neat", seed=2, generations=3, episodes=2)
    whole.advance()
    cut = cartpole_job("neat", seed=2, generations=3, episodes=2)
    cut.advance(max_steps=1)
    cut.advance(max_seconds=0.0)  # generation 2 started, then the scene "closed"
    assert cut.steps == 1 and cut._eval is not None
    cut.resume([make("cartpole") for _ in range(5)])  # rebuilt environments, fewer of them
    cut.advance()
    assert comparable(cut.checkpoint()) == comparable(whole.checkpoint())
    assert cut.env_steps == whole.env_steps


class PoolCartPole(make("cartpole").__class__):
    """A CartPole whose ``step`` is its own (the same dynamics): no batch, so Evaluation uses the pool."""

    def step(self, action):
        return super().step(action)


def test_only_cartpole_s_own_dynamics_are_batched():
    """``CartPole.batch``: a subclass that changes ``step`` gets no batch. (That the batch follows the scalar env bit
    for bit, on every exact-math path, is tests/test_exact_math.py's.)"""
    from drla_core.envs.cartpole import CartPole

    assert CartPole().batch(3) is not None and PoolCartPole().batch(3) is None  # a changed step: no batch


def test_batched_evaluation_equals_the_pool():
    net = PopulationMLP(4, [(8, "tanh")], 2, "linear")
    params = net.init_params(10, np.random.default_rng(3))
    seeds = [21, 22, 23]
    results = []
    for envs in ([make("cartpole")], [PoolCartPole() for _ in range(4)]):
        ev = Evaluation(lambda idx, obs: net.forward(params[idx], obs), 10, seeds, envs, action_function(Discrete(2)))
        assert (ev._batch is not None) == (len(envs) == 1)
        while not ev.run(deadline=0.0):  # paused after every step, resumed
            pass
        results.append((ev.returns, ev.mean_behaviors(), ev.env_steps))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert results[0][2] == results[1][2] == results[0][0].sum()
    assert results[0][0].max() > 100 > results[0][0].min()  # some episodes long, some short


def test_neat_job_on_the_batch_matches_the_pool():
    def job(factory):
        cfg = EvolutionConfig(method="neat", generations=3, target_return=475.0, episodes=2)
        from drla_core.evolve.neat import NEATConfig
        cfg.neat = NEATConfig(population_size=30, add_node_prob=0.5)
        return EvolutionJob(factory, cfg, seed=4)

    batched, pooled = job(lambda: make("cartpole")), job(PoolCartPole)
    batched.advance()
    pooled.advance()
    assert len(batched.envs) == 1 and len(pooled.envs) > 1
    assert comparable(batched.checkpoint()) == comparable(pooled.checkpoint())
