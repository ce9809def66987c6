"""Evolution strategies on CartPole: DRLA's OpenAI-ES and CMA-ES beside pycma (installed with DRLA's development
tools) and EvoTorch 0.6.1 (bench/requirements-bench.txt), the same task, population and budget, in one run.

Prints ONE JSON line of figures (per-seed tables go to stderr).

**Task** (the protocol of bench/evolution.py): DRLA's ``cartpole`` (Gymnasium's CartPole-v1 bit for bit), a
4-16-16-2 tanh network (352 weights, argmax), one episode per individual per generation (the generation's seed,
the same for every individual, drawn as ``EvolutionJob`` draws it); when the generation's best scores >= 475 that
individual plays 20 fixed greedy episodes (seeds 10000..10019) and the run is solved when their mean is >= 475.
At most 100 generations. Every run starts from the same network (``PopulationMLP.init_params`` with the seed's
generator: the one DRLA's job starts from).

* OpenAI-ES: DRLA's ``EvolutionJob(method="es")`` (64 individuals = 32 antithetic pairs, sigma 0.2, Adam 0.1,
  weight decay 0.005) beside EvoTorch's PGPE set up as OpenAI-ES (64, symmetric sampling, centred ranks, Adam
  0.1, a fixed sigma 0.2: ``stdev_learning_rate=0``; EvoTorch has no weight decay).
* CMA-ES: DRLA's ``EvolutionJob(method="cmaes")`` (lambda = 4 + floor(3 ln 352) = 21, sigma 0.3) beside pycma's
  ``CMAEvolutionStrategy`` and EvoTorch's ``CMAES``, both with the same lambda, sigma and start.

The libraries are optimisers, not runners of episodes: each generation, every one (DRLA's ``OpenAIES`` and
``CMAESMethod`` too, as ``drla_es`` / ``drla_cmaes``) hands its population to one loop that evaluates it with DRLA's
own batched evaluator (``Evaluation`` on ``CartPoleBatch``, one forward for the population per step) and plays the
check as above, so the difference in time per generation is the optimiser's (ask and tell) and the way each hands
its population over. ``drla_es_job`` / ``drla_cmaes_job``: DRLA's ``EvolutionJob``, as ``drla train --agent
es|cmaes`` runs it (it evolves the same generations as the loop, which the bench asserts; for these methods it
checks a candidate on its own, after its generation, as the loop does: ``check_alongside = False`` in es.py).

Figures: ``*_generation_ms`` the median wall time of a generation over every generation of every seed,
``*_update_ms`` the part spent in the optimiser (sampling and update), ``*_generations_median`` the median
generations to solve (unsolved seeds left out and counted in ``*_solved``).

**Optimiser alone** (``update_only``): ask + tell of one generation on random scores, no episodes: n = 352
(full covariance) and n = 4610 (a 4-64-64-2 network: sep-CMA / pycma's ``CMA_diagonal`` / EvoTorch's
``separable``; OpenAI-ES with 64), median of 20 generations after 3 warm-up ones.

numpy and torch are held to one thread each (``OPENBLAS_NUM_THREADS=1``, ``torch.set_num_threads(1)``).

    .venv/bin/python bench/es.py [--seeds 5] [--quick]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from drla_core.envs import make  # noqa: E402
from drla_core.evolve.cmaes import CMAES, CMAESConfig, CMAESMethod, default_population  # noqa: E402
from drla_core.evolve.es import ESConfig, OpenAIES  # noqa: E402
from drla_core.evolve.evaluation import Evaluation, action_function  # noqa: E402
from drla_core.evolve.evolution import EvolutionConfig, EvolutionJob, PopulationMLP  # noqa: E402

SOLVED = 475.0
SOLVE_SEEDS = [10_000 + i for i in range(20)]
HIDDEN = [(16, "tanh"), (16, "tanh")]
ES_POPULATION, ES_SIGMA, ES_LR = 64, 0.2, 0.1
CMA_SIGMA = 0.3


def generation_seeds(seed: int, generation: int) -> list[int]:
    """One episode's seed, as ``EvolutionJob._episode_seeds`` draws it for generation ``generation``."""
    return [int(s) for s in np.random.default_rng([seed, generation]).integers(0, 2**31 - 1, size=1)]


class Task:
    """CartPole scored by DRLA's batched evaluator, for any population matrix."""

    def __init__(self) -> None:
        self.env = make("cartpole")
        self.net = PopulationMLP(4, HIDDEN, 2, "linear")
        self.act = action_function(self.env.action_space)
        self.env_steps = 0  # every episode's steps, the checks' included

    def start(self, seed: int) -> np.ndarray:
        return self.net.init_params(1, np.random.default_rng(seed))[0].astype(np.float64)

    def fitness(self, rows: np.ndarray, seeds: list[int]) -> np.ndarray:
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        ev = Evaluation(lambda idx, obs: self.net.forward(rows[idx], obs), len(rows), seeds, [self.env], self.act)
        ev.run(None)
        self.env_steps += ev.env_steps
        return ev.fitness()

    def solved(self, row: np.ndarray) -> bool:
        return float(self.fitness(row[None, :], SOLVE_SEEDS)[0]) >= SOLVED


class Run:
    """One run's figures: generations, whether solved, each generation's wall and optimiser seconds."""

    def __init__(self) -> None:
        self.generations, self.solved = 0, False
        self.wall: list[float] = []
        self.update: list[float] = []
        self.env_steps = 0


def library_run(task: Task, seed: int, ask: Callable[[], np.ndarray], tell: Callable[[np.ndarray, np.ndarray], None],
                max_generations: int) -> Run:
    """A generation: ask, evaluate, the check when the best reaches 475, tell (not after a solved check)."""
    run = Run()
    task.env_steps = 0
    for generation in range(max_generations):
        t0 = time.perf_counter()
        rows = ask()
        t1 = time.perf_counter()
        fit = task.fitness(rows, generation_seeds(seed, generation))
        best = int(np.argmax(fit))
        run.generations = generation + 1
        if fit[best] >= SOLVED and task.solved(rows[best]):
            run.solved = True
            run.wall.append(time.perf_counter() - t0)
            run.update.append(t1 - t0)
            break
        t2 = time.perf_counter()
        tell(rows, fit)
        t3 = time.perf_counter()
        run.wall.append(t3 - t0)
        run.update.append((t1 - t0) + (t3 - t2))
    run.env_steps = task.env_steps
    return run


def drla_harness_run(task: Task, method: str, seed: int, max_generations: int) -> Run:
    """DRLA's method in the libraries' loop (the same evaluator and check): only ask and tell differ."""
    rng = np.random.default_rng(seed)  # the job's generator: the same start, the same samples
    if method == "es":
        m: Any = OpenAIES(task.net, ESConfig(population_size=ES_POPULATION, sigma=ES_SIGMA, learning_rate=ES_LR),
                          rng)
    else:
        m = CMAESMethod(task.net, CMAESConfig(sigma=CMA_SIGMA), rng)
    return library_run(task, seed, lambda: m.population, lambda rows, fit: m.tell(fit), max_generations)


def drla_run(method: str, seed: int, max_generations: int) -> Run:
    config = EvolutionConfig(method=method, generations=max_generations, target_return=SOLVED,
                             es=ESConfig(population_size=ES_POPULATION, hidden=HIDDEN, sigma=ES_SIGMA,
                                         learning_rate=ES_LR) if method == "es" else None,
                             cmaes=CMAESConfig(hidden=HIDDEN, sigma=CMA_SIGMA) if method == "cmaes" else None)
    job = EvolutionJob(lambda: make("cartpole"), config, seed=seed)
    run = Run()
    spent = [0.0]
    tell = job.method.tell

    def timed_tell(scores: np.ndarray) -> None:  # sampling the next generation happens inside tell
        t = time.perf_counter()
        tell(scores)
        spent[0] += time.perf_counter() - t

    job.method.tell = timed_tell  # type: ignore[method-assign]
    while not job.done:
        t0, before = time.perf_counter(), spent[0]
        job.advance(max_steps=1)
        run.wall.append(time.perf_counter() - t0)
        run.update.append(spent[0] - before)
    run.generations, run.solved, run.env_steps = job.steps, job.solved, job.env_steps
    return run


# ---- the libraries ---------------------------------------------------------------------------------------------


def pycma_run(task: Task, seed: int, max_generations: int) -> Run:
    import cma

    es = cma.CMAEvolutionStrategy(task.start(seed), CMA_SIGMA, {"popsize": default_population(task.net.n_params),
                                                                 "seed": seed + 1, "verbose": -9})
    asked: list[Any] = []

    def ask() -> np.ndarray:
        asked[:] = es.ask()
        return np.array(asked)

    return library_run(task, seed, ask, lambda rows, fit: es.tell(asked, list(-fit)), max_generations)


def evotorch_problem(task: Task | None, n: int, scores: Callable[[np.ndarray], np.ndarray] | None = None) -> Any:
    import torch
    from evotorch import Problem

    class CartPole(Problem):
        def __init__(self) -> None:
            super().__init__("max", solution_length=n, initial_bounds=(-0.1, 0.1), dtype=torch.float32,
                             device="cpu")
            self.rows: np.ndarray | None = None
            self.fit: np.ndarray | None = None

        def _evaluate_batch(self, batch: Any) -> None:
            self.rows = batch.values.detach().cpu().numpy()
            self.fit = scores(self.rows) if scores is not None else self.fit
            batch.set_evals(torch.as_tensor(self.fit, dtype=torch.float32))

    return CartPole()


def evotorch_run(task: Task, seed: int, max_generations: int, searcher_of: Callable[[Any, np.ndarray], Any]) -> Run:
    """EvoTorch's ``step()`` asks, evaluates (through the problem: our evaluator, timed apart) and tells."""
    import torch

    torch.manual_seed(seed)
    run = Run()
    task.env_steps = 0
    generation = [0]
    evaluated = [0.0]
    hit = [False]

    def scores(rows: np.ndarray) -> np.ndarray:
        t = time.perf_counter()
        fit = task.fitness(rows, generation_seeds(seed, generation[0]))
        best = int(np.argmax(fit))
        hit[0] = bool(fit[best] >= SOLVED and task.solved(rows[best]))
        evaluated[0] = time.perf_counter() - t
        return fit

    problem = evotorch_problem(task, task.net.n_params, scores)
    searcher = searcher_of(problem, task.start(seed))
    for g in range(max_generations):
        generation[0] = g
        t0 = time.perf_counter()
        searcher.step()
        wall = time.perf_counter() - t0
        run.wall.append(wall)
        run.update.append(wall - evaluated[0])
        run.generations = g + 1
        if hit[0]:
            run.solved = True
            break
    run.env_steps = task.env_steps
    return run


def evotorch_pgpe(problem: Any, center: np.ndarray) -> Any:
    from evotorch.algorithms import PGPE

    return PGPE(problem, popsize=ES_POPULATION, center_learning_rate=ES_LR, stdev_learning_rate=0.0,
                stdev_init=ES_SIGMA, optimizer="adam", ranking_method="centered", symmetric=True,
                center_init=center.astype(np.float32))


def evotorch_cmaes(problem: Any, center: np.ndarray, separable: bool = False) -> Any:
    from evotorch.algorithms import CMAES as TorchCMAES

    return TorchCMAES(problem, stdev_init=CMA_SIGMA, popsize=default_population(center.size),
                      center_init=center.astype(np.float32), separable=separable)


# ---- the optimiser alone -----------------------------------------------------------------------------------------


def timed(step: Callable[[], None], generations: int = 20, warm: int = 3) -> float:
    for _ in range(warm):
        step()
    times = []
    for _ in range(generations):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def update_only(n: int, evotorch_ok: bool) -> dict[str, float | None]:
    """ms per ask + tell at ``n`` parameters on random scores (full CMA at 352, diagonal at 4610)."""
    import cma

    rng = np.random.default_rng(0)
    diagonal = n > 1000
    lam = default_population(n)
    out: dict[str, float | None] = {}
    ours = CMAES(rng.standard_normal(n) * 0.1, 0.3, diagonal=diagonal, rng=np.random.default_rng(1))

    def drla_cma() -> None:
        x = ours.ask()
        ours.tell(x, rng.standard_normal(lam))
    out["drla_cmaes"] = timed(drla_cma)
    ref = cma.CMAEvolutionStrategy(rng.standard_normal(n) * 0.1, 0.3,
                                   {"popsize": lam, "seed": 2, "verbose": -9, "CMA_diagonal": diagonal})

    def pycma_step() -> None:
        x = ref.ask()
        ref.tell(x, list(rng.standard_normal(lam)))
    out["pycma_cmaes"] = timed(pycma_step)
    net = PopulationMLP(4, [(64, "tanh"), (64, "tanh")] if n > 1000 else HIDDEN, 2)
    es = OpenAIES(net, ESConfig(population_size=ES_POPULATION, hidden=[]), np.random.default_rng(3))
    out["drla_es"] = timed(lambda: es.tell(rng.standard_normal(ES_POPULATION)))
    out["evotorch_cmaes"] = out["evotorch_pgpe"] = None
    if evotorch_ok:
        problem = evotorch_problem(None, n)
        problem.fit = rng.standard_normal(lam)
        searcher = evotorch_cmaes(problem, rng.standard_normal(n) * 0.1, separable=diagonal)
        out["evotorch_cmaes"] = timed(searcher.step)
        problem = evotorch_problem(None, n)
        problem.fit = rng.standard_normal(ES_POPULATION)
        searcher = evotorch_pgpe(problem, rng.standard_normal(n) * 0.1)
        out["evotorch_pgpe"] = timed(searcher.step)
    return {k: None if v is None else round(v, 3) for k, v in out.items()}


# ---- the run -------------------------------------------------------------------------------------------------------


def summary(name: str, runs: list[Run], out: dict[str, Any]) -> None:
    solved = [r.generations for r in runs if r.solved]
    wall = [t for r in runs for t in r.wall]
    update = [t for r in runs for t in r.update]
    out[f"{name}_generation_ms"] = round(statistics.median(wall) * 1e3, 3)
    out[f"{name}_update_ms"] = round(statistics.median(update) * 1e3, 3)
    # the episodes' share: a generation of longer episodes (a better population) takes longer in any library
    out[f"{name}_us_per_env_step"] = round(sum(wall) / max(1, sum(r.env_steps for r in runs)) * 1e6, 3)
    out[f"{name}_generations_median"] = statistics.median(solved) if solved else None
    out[f"{name}_solved"] = f"{len(solved)}/{len(runs)}"
    print(f"{name:16s} generations by seed " + ", ".join(f"{r.generations}{'' if r.solved else '(unsolved)'}"
                                                       for r in runs) +
          f"; {out[f'{name}_generation_ms']} ms a generation, {out[f'{name}_update_ms']} ms of it updating, "
          f"{out[f'{name}_us_per_env_step']} us per environment step",
          file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--generations", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="2 seeds, 30 generations at most")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.generations = 2, 30
    warnings.filterwarnings("ignore")  # pycma: no matplotlib; torch: jit deprecation
    out: dict[str, Any] = {"bench": "es", "task": "cartpole 4-16-16-2 tanh", "seeds": args.seeds,
                           "max_generations": args.generations, "es_population": ES_POPULATION,
                           "cmaes_population": default_population(352)}
    try:
        import torch
        import evotorch  # noqa: F401

        torch.set_num_threads(1)
        logging.getLogger("evotorch").setLevel(logging.WARNING)  # not a line per problem made
        evotorch_ok, out["evotorch"] = True, evotorch.__version__
    except Exception as exc:  # noqa: BLE001 - any failure to import: say it, bench the rest
        evotorch_ok = False
        out["evotorch"] = f"skipped: {type(exc).__name__}: {exc}"
        print(f"EvoTorch skipped: {exc} (pip install -r bench/requirements-bench.txt)", file=sys.stderr)
    task = Task()
    runs: dict[str, list[Run]] = {name: [] for name in ("drla_es", "drla_es_job", "evotorch_pgpe", "drla_cmaes",
                                                         "drla_cmaes_job", "pycma_cmaes", "evotorch_cmaes")}
    for seed in range(args.seeds):  # interleaved seed by seed: a busy spell of the machine hits all alike
        for method in ("es", "cmaes"):
            runs[f"drla_{method}"].append(drla_harness_run(task, method, seed, args.generations))
            runs[f"drla_{method}_job"].append(drla_run(method, seed, args.generations))
            same = (runs[f"drla_{method}"][-1].generations, runs[f"drla_{method}"][-1].solved)
            assert same == (runs[f"drla_{method}_job"][-1].generations, runs[f"drla_{method}_job"][-1].solved), \
                f"{method} seed {seed}: the job and the loop evolved differently"
        runs["pycma_cmaes"].append(pycma_run(task, seed, args.generations))
        if evotorch_ok:
            runs["evotorch_pgpe"].append(evotorch_run(task, seed, args.generations, evotorch_pgpe))
            runs["evotorch_cmaes"].append(evotorch_run(task, seed, args.generations, evotorch_cmaes))
    for name, rs in runs.items():
        if rs:
            summary(name, rs, out)
    for n in (352, 4610):
        out[f"update_only_{n}_ms"] = update_only(n, evotorch_ok)
        print(f"update only, n = {n}: {out[f'update_only_{n}_ms']}", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
