"""Evolution strategies (issue 27, item 3): OpenAI-ES (``drla_core.evolve.es``) and CMA-ES with sep-CMA
(``drla_core.evolve.cmaes``): CMA-ES's updates equal pycma's reference implementation (``purecma``) on the same
samples, its evaluations to a target on the sphere and Rosenbrock match pycma 4.5's, the ES gradient estimate on a
quadratic, CartPole solved by both, and runs stopped and resumed (job and CLI) ending with the same model bytes."""

import json
import math
import warnings

import numpy as np
import pytest

from drla.cli import main
from drla_core.envs import make
from drla_core.evolve.cmaes import CMAES, CMAESConfig, CMAESMethod, default_population
from drla_core.evolve.es import ESConfig, OpenAIES, centered_ranks
from drla_core.evolve.evolution import EvolutionConfig, EvolutionJob, PopulationMLP
from drla_core.io.model_io import load_model, save_model

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # pycma says it has no matplotlib
    import cma
    from cma.more_algorithms import purecma


def sphere(x):
    return float(np.sum(np.asarray(x) ** 2))


def rosenbrock(x):
    x = np.asarray(x)
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


# ---- CMA-ES ----------------------------------------------------------------------------------------------------


def test_default_strategy_parameters_are_the_tutorials():
    for n in (2, 3, 10, 100):
        ours, ref = CMAES(np.zeros(n), 1.0), purecma.CMAESParameters(n)
        assert ours.lam == default_population(n) == ref.lam and ours.mu == ref.mu
        np.testing.assert_allclose(ours.weights, ref.weights[:ref.mu], rtol=1e-14)
        for name in ("mueff", "cs", "cc", "c1", "cmu"):
            assert getattr(ours, name) == pytest.approx(getattr(ref, name), rel=1e-13), (n, name)
        assert ours.chin == pytest.approx(ref.chiN, rel=1e-14)
        # d_sigma: the tutorial's (purecma uses 2 mu_eff / lambda + 0.3 + c_sigma)
        assert ours.damps == pytest.approx(1 + 2 * max(0, math.sqrt((ref.mueff - 1) / (n + 1)) - 1) + ref.cs)
    sep = CMAES(np.zeros(40), 1.0, diagonal=True)
    full = CMAES(np.zeros(40), 1.0)
    assert sep.c1 == pytest.approx(full.c1 * 42 / 3) and sep.cmu == pytest.approx(full.cmu * 42 / 3)
    assert sep.C.shape == (40,) and sep.B is None  # O(n) memory


def test_updates_equal_purecma_on_the_same_samples():
    """Mean, evolution paths and covariance after each of 6 generations, purecma told the same points; the step
    size is handed over each generation (purecma adapts it by the squared path length, the tutorial by the length)."""
    n = 4
    ours = CMAES(np.full(n, 0.5), 0.3, rng=np.random.default_rng(3))
    ours.eigen_gap = 0  # both decompose every generation
    ref = purecma.CMAES(list(np.full(n, 0.5)), 0.3)
    ref.params.lazy_gap_evals = 0
    for generation in range(6):
        ref.ask()  # (purecma decomposes C here; its own samples are not used)
        x = ours.ask()
        values = [rosenbrock(p) for p in x]
        sigma = ours.sigma
        ours.tell(x, values)
        ref.tell([list(p) for p in x], values)
        np.testing.assert_allclose(ours.mean, ref.xmean, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(ours.pc, ref.pc, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ours.ps, ref.ps, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ours.C, np.array(ref.C), rtol=1e-9,
                                   atol=1e-12)
        expected = sigma * math.exp(ours.cs / ours.damps * (np.linalg.norm(ref.ps) / ours.chin - 1))
        assert ours.sigma == pytest.approx(expected, rel=1e-9), generation
        ref.sigma = ours.sigma
    assert ours.generation == 6 and ours.evaluations == 6 * ours.lam


def evaluations_to(f, n, target, seed, diagonal=False):
    es = CMAES(np.full(n, 0.5), 0.3, diagonal=diagonal, rng=np.random.default_rng(seed))
    while es.evaluations < 100_000:
        x = es.ask()
        values = [f(p) for p in x]
        es.tell(x, values)
        if min(values) < target:
            return es.evaluations
    return None


def pycma_evaluations_to(f, n, target, seed, **options):
    es = cma.CMAEvolutionStrategy(np.full(n, 0.5), 0.3, {"seed": seed + 1, "verbose": -9, "tolfun": 0, "tolx": 0,
                                                          "tolflatfitness": 1000, **options})
    evaluations = 0
    while evaluations < 100_000:
        x = es.ask()
        values = [f(p) for p in x]
        es.tell(x, values)
        evaluations += len(x)
        if min(values) < target:
            return evaluations
    return None


@pytest.mark.parametrize("f, n", [(sphere, 2), (sphere, 10), (rosenbrock, 2), (rosenbrock, 5)])
def test_evaluations_to_1e_8_match_pycma(f, n):
    """Median over 7 seeds from (0.5, ..., 0.5), sigma 0.3: no more than 1.25 x pycma 4.5's without active CMA (the
    same algorithm) and 1.5 x pycma's defaults (active CMA: negative weights, quicker on Rosenbrock); every run
    reaches the target."""
    seeds = range(7)
    ours = [evaluations_to(f, n, 1e-8, s) for s in seeds]
    plain = [pycma_evaluations_to(f, n, 1e-8, s, CMA_active=False) for s in seeds]
    default = [pycma_evaluations_to(f, n, 1e-8, s) for s in seeds]
    print(f.__name__, n, "ours", np.median(ours), "pycma", np.median(plain), "pycma active", np.median(default))
    assert None not in ours
    assert np.median(ours) <= 1.25 * np.median(plain)
    assert np.median(ours) <= 1.5 * np.median(default)


def test_sep_cma_on_a_separable_problem():
    """sep-CMA reaches 1e-8 on the 30-D sphere, no slower than the full CMA-ES there (a separable problem:
    its larger learning rates pay) and within 1.3 x pycma's CMA_diagonal."""
    ours = [evaluations_to(sphere, 30, 1e-8, s, diagonal=True) for s in range(3)]
    full = [evaluations_to(sphere, 30, 1e-8, s) for s in range(3)]
    ref = [pycma_evaluations_to(sphere, 30, 1e-8, s, CMA_diagonal=True) for s in range(3)]
    print("sep", ours, "full", full, "pycma diagonal", ref)
    assert None not in ours and np.median(ours) <= np.median(full)
    assert np.median(ours) <= 1.3 * np.median(ref)


def test_cma_method_chooses_sep_above_its_parameter_count_or_by_setting():
    rng = np.random.default_rng(0)
    small = PopulationMLP(4, [(16, "tanh")], 2)  # 114 parameters
    big = PopulationMLP(40, [(32, "tanh")], 4)  # 1444 parameters
    assert not CMAESMethod(small, CMAESConfig(), rng).es.diagonal
    assert CMAESMethod(big, CMAESConfig(), rng).es.diagonal
    assert CMAESMethod(small, CMAESConfig(covariance="diagonal"), rng).es.diagonal
    assert not CMAESMethod(big, CMAESConfig(covariance="full"), rng).es.diagonal
    assert CMAESMethod(small, CMAESConfig(diagonal_above=100), rng).es.diagonal
    method = CMAESMethod(small, CMAESConfig(), rng)
    assert len(method) == default_population(114) == 18 and method.population.dtype == np.float32
    with pytest.raises(ValueError, match="unknown covariance 'sparse'; choose from auto, full, diagonal"):
        CMAESConfig(covariance="sparse").check()
    with pytest.raises(ValueError, match="population_size must be at least 2, not 1"):
        CMAESConfig(population_size=1).check()
    with pytest.raises(ValueError, match="tell needs 18 points of 114 values"):
        method.es.tell(np.zeros((3, 114)), np.zeros(3))


# ---- OpenAI-ES -------------------------------------------------------------------------------------------------


def quadratic_es(n_pairs, seed=0, **config):
    net = PopulationMLP(3, [], 1, "linear")  # 4 parameters: a quadratic in them, no network needed
    return OpenAIES(net, ESConfig(population_size=2 * n_pairs, hidden=[], **config), np.random.default_rng(seed))


def test_centered_ranks():
    np.testing.assert_array_equal(centered_ranks(np.array([3.0, 1.0, 2.0])), [0.5, -0.5, 0.0])
    np.testing.assert_array_equal(centered_ranks(np.array([5.0, 5.0])), [-0.5, 0.5])  # ties by position


def test_the_gradient_estimate_on_a_quadratic():
    """F(x) = -(x - a)^T H (x - a) / 2. The antithetic pair's difference is exactly 2 sigma grad F . eps (the
    curvature cancels), so on raw scores the estimate is (1 / half) sum_j (grad F . eps_j) eps_j, whatever H, and
    its mean over many draws is grad F."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal(4)
    h = rng.standard_normal((4, 4))
    h = h @ h.T + np.eye(4)

    def f(x):
        d = x - a
        return -0.5 * np.einsum("...i,ij,...j->...", d, h, d)

    es = quadratic_es(500, fitness_shaping="none", sigma=0.3)
    true = -h @ (es.theta - a)
    estimates = []
    for _ in range(40):
        step = es.config.sigma * es.noise
        scores = np.empty(len(es))
        scores[0::2], scores[1::2] = f(es.theta + step), f(es.theta - step)  # the rows, in float64
        g = es.gradient(scores)
        np.testing.assert_allclose(g, (es.noise @ true) @ es.noise / es.noise.shape[0], rtol=1e-9, atol=1e-12)
        estimates.append(g)
        es._sample()
    mean = np.mean(estimates, axis=0)
    assert np.linalg.norm(mean - true) < 0.05 * np.linalg.norm(true), (mean, true)
    # centred ranks keep the direction: the shaped estimate points the same way
    shaped = quadratic_es(500, sigma=0.3)
    step = shaped.config.sigma * shaped.noise
    scores = np.empty(len(shaped))
    scores[0::2], scores[1::2] = f(shaped.theta + step), f(shaped.theta - step)
    g = shaped.gradient(scores)
    assert g @ true / (np.linalg.norm(g) * np.linalg.norm(true)) > 0.9


def test_adam_steps_climb_the_quadratic_and_weight_decay_pulls_to_zero():
    a = np.array([1.0, -2.0, 0.5, 3.0])
    es = quadratic_es(16, sigma=0.1, learning_rate=0.05, weight_decay=0.0)
    start = np.linalg.norm(es.theta - a)
    for _ in range(300):
        es.tell(-np.sum((es.population.astype(np.float64) - a) ** 2, axis=1))
    assert np.linalg.norm(es.theta - a) < 0.1 * start
    assert es.t == 300
    flat = quadratic_es(16, sigma=0.1, learning_rate=0.05, weight_decay=1.0)
    for _ in range(300):
        flat.tell(np.zeros(len(flat)))  # no signal at all: only the decay (ranks by position cancel in pairs)
    assert np.linalg.norm(flat.theta) < 0.05


def test_es_settings_are_checked():
    with pytest.raises(ValueError, match=r"population_size must be even and at least 2 \(antithetic pairs\), not 5"):
        ESConfig(population_size=5).check()
    with pytest.raises(ValueError, match="unknown fitness_shaping 'raw'; choose from centered_rank, none"):
        ESConfig(fitness_shaping="raw").check()
    with pytest.raises(ValueError, match="sigma must be > 0"):
        ESConfig(sigma=0.0).check()
    with pytest.raises(ValueError, match="3 scores for a population of 4"):
        quadratic_es(2).gradient(np.zeros(3))


# ---- the job: CartPole, resume -----------------------------------------------------------------------------------


@pytest.mark.parametrize("method, most", [("es", 30), ("cmaes", 30)])
def test_cartpole_is_solved(method, most):
    """Seed 0, the defaults (ES: 64, CMA-ES: lambda of 352 weights = 21): the champion's greedy mean over 20
    episodes reaches 475 within ``most`` generations."""
    job = EvolutionJob(lambda: make("cartpole"), EvolutionConfig(method=method, generations=60, target_return=475.0),
                       seed=0)
    job.advance()
    print(method, "solved at generation", job.steps, job.status())
    assert job.solved and job.steps <= most
    assert job.champion_eval >= 475.0
    assert job.to_model().meta["agent"] == f"evolution-{method}"


def test_checking_after_the_generation_gives_what_checking_alongside_gives():
    """ES and CMA-ES check a candidate champion after its generation (``check_alongside = False``: around one point
    the alongside checks would play every generation); the run is the same as with the check alongside."""
    runs = []
    for alongside in (False, True):
        job = EvolutionJob(lambda: make("cartpole"), EvolutionConfig(method="es", generations=30,
                                                                     target_return=475.0), seed=2)
        assert job.method.check_alongside is False
        job.method.check_alongside = alongside
        job.advance()
        runs.append((job.steps, job.solved, job.history["best"], job.history["evals"], job.champion.tobytes()))
    assert runs[0][1] and runs[0] == runs[1]


def model_file(path):
    """A model file's JSON without its clock (``meta.created``), and its network's weights as bytes."""
    data = json.loads(path.read_text())
    assert data["meta"].pop("created")
    return data, load_model(path).network.params.tobytes()


def comparable(checkpoint):
    data = json.loads(json.dumps(checkpoint))
    data["history"].pop("seconds")
    return data


@pytest.mark.parametrize("method, settings", [
    ("es", {"es": ESConfig(population_size=16)}),
    ("cmaes", {"cmaes": CMAESConfig(population_size=12)}),
    ("cmaes", {"cmaes": CMAESConfig(covariance="diagonal")}),
])
def test_stopped_and_resumed_equals_straight(tmp_path, method, settings):
    def job():
        config = EvolutionConfig(method=method, generations=6, **settings)
        return EvolutionJob(lambda: make("cartpole"), config, seed=4)

    whole = job()
    whole.advance()
    part = job()
    part.advance(max_steps=2)
    part.advance(max_seconds=0.0)  # generation 3 cut short: the checkpoint holds its start
    path = part.save_checkpoint(tmp_path / "pop.json")
    resumed = EvolutionJob.load_checkpoint(path, lambda: make("cartpole"))
    assert resumed.steps == 2
    resumed.advance()
    assert comparable(resumed.checkpoint()) == comparable(whole.checkpoint())
    assert model_file(save_model(tmp_path / "whole.json", whole.to_model())) == \
        model_file(save_model(tmp_path / "resumed.json", resumed.to_model()))
    data = json.loads(path.read_text())
    assert data["config"]["method"] == method
    data["method"]["mean" if method == "cmaes" else "theta"] = [0.0]
    with pytest.raises(ValueError, match=r"broken evolution checkpoint: checkpoint (mean|theta) has shape \(1,\)"):
        EvolutionJob.from_checkpoint(data, lambda: make("cartpole"))


@pytest.mark.parametrize("agent, target", [("es", "cartpole"), ("cmaes", "pendulum")])
def test_cli_resume_gives_the_same_model_bytes(agent, target, tmp_path, capsys):
    base = ["train", target, "--agent", agent, "--population", "8", "--seed", "1", "--quiet"]
    assert main([*base, "--steps", "4", "--out", str(tmp_path / "straight.json")]) == 0
    assert main([*base, "--steps", "2", "--out", str(tmp_path / "cut.json")]) == 0
    assert main(["train", target, "--steps", "4", "--quiet", "--resume", str(tmp_path / "cut_population.json")]) == 0
    out = capsys.readouterr().out
    assert "trained 4 generations" in out or "trained 2 generations" in out
    assert model_file(tmp_path / "straight.json") == model_file(tmp_path / "cut.json")


def test_cli_refuses_an_odd_es_population(capsys):
    assert main(["train", "cartpole", "--agent", "es", "--population", "5", "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "population_size must be even and at least 2 (antithetic pairs), not 5" in err and "Traceback" not in err
