"""Novelty search on Lehman and Stanley's medium and hard mazes: NEAT with novelty against NEAT with fitness
(issue 27, item 2), beside the paper's figures.

    PYTHONPATH=. python bench/novelty_maze.py                       # the scaled-down default (a few minutes)
    PYTHONPATH=. python bench/novelty_maze.py --full --jobs 16      # the paper's protocol: 40 runs, 250,000 evaluations

The domain is ``drla_core/envs/hard_maze.py`` (Lehman's Novelty Search C++ maze, number for number; its
docstring cites the code for each). Each run is DRLA's NEAT (``drla_core/evolve/neat.py``, population 250 as the
paper's Table 1, its other settings DRLA's defaults, the same in both arms as the paper's Appendix A asks)
scored either by fitness (``300 - distance to the goal`` at the end, Section 5) or by novelty
(``drla_core/evolve/novelty.py``: the final position, k = 15 nearest neighbours, initial archive threshold 6.0:
Table 1). A generation is what ``EvolutionJob`` does with it (``archive.score(behaviours, fitness)`` then
``neat.tell(scores)``), written out here so that 250 robots step as one numpy batch (``HardMazeBatch``).

The archive follows the C++ code (``noveltyset.h``) with ``--archive code`` (default): distance ``mean_abs``
(``hist_diff`` on the final (x, y); the paper's text, Section 5, calls the metric the squared Euclidean distance,
but the code that ran it computes this, and its threshold 6.0 is in these units), admission by the distance to
the nearest archived behaviour, threshold +20 % after a generation that archives more than 4, -5 % after 10
generations that archive none, never below 0.25 (the C++ applies each change at the next generation's
start, one generation later than here). ``--archive drla`` keeps DRLA's own rule (novelty score
against the threshold, -5 % after any generation that archives none, Euclidean distance), with the paper's k and
initial threshold.

A run stops at its first robot within 5 units of the goal (its evaluations: the generations before, times the
population, plus its place in its generation) or at the evaluation budget.

The paper's figures (Lehman and Stanley, "Abandoning Objectives: Evolution through the Search for Novelty
Alone", Evolutionary Computation 19(2):189-223, 2011; Section 6 "Maze Results", Figure 3; 40 runs per method,
250,000 evaluations per run (Figure 3's caption)):

* medium map: novelty search solved every run in 18,274 evaluations on average (sd 20,447); fitness-based NEAT
  solved every run in 56,334 (sd 48,705); solutions' connections 24.6 (novelty) and 66.74 (fitness).
* hard map: novelty search solved 39 of 40 runs in 35,109 evaluations on average when successful (sd 30,236),
  33.46 connections; fitness-based NEAT solved 3 of 40 (the paper gives no mean evaluations for those 3).

Differences from the paper's runs that this bench cannot remove: the paper's NEAT is rtNEAT (steady state: one
offspring evaluated at a time, the worst removed; a start genome with one hidden node; recurrent links allowed;
sigmoid units) and DRLA's NEAT is generational and feed-forward, starting fully connected (22 connections).
The paper's compatibility threshold is variable (Table 1: the C++ moves it 0.1 every 12 offspring toward
population / 15 species); here it moves 0.1 a generation toward that target (``--species-target``; 0 keeps
DRLA's fixed 3.0, under which a whole population often forms one species).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from drla_core.envs.hard_maze import HardMazeBatch  # noqa: E402
from drla_core.evolve.neat import NEAT, NEATConfig  # noqa: E402
from drla_core.evolve.novelty import NoveltyArchive, NoveltyConfig  # noqa: E402

#: (map, method) -> (runs solved, runs, mean evaluations when solved, sd, mean connections): Section 6.
PAPER: dict[tuple[str, str], tuple[int, int, float | None, float | None, float | None]] = {
    ("medium", "novelty"): (40, 40, 18_274, 20_447, 24.6),
    ("medium", "fitness"): (40, 40, 56_334, 48_705, 66.74),
    ("hard", "novelty"): (39, 40, 35_109, 30_236, 33.46),
    ("hard", "fitness"): (3, 40, None, None, None),
}
STEPS = 400  # noveltyexp.cpp, mazesim: timesteps=400


def novelty_config(archive: str) -> NoveltyConfig:
    if archive == "code":
        return NoveltyConfig(k=15, threshold=6.0, distance="mean_abs", admit="nearest", lower_after=10,
                             threshold_floor=0.25, max_archive=10**9)
    return NoveltyConfig(k=15, threshold=6.0, max_archive=10**9)


def run(maze: str, method: str, seed: int, budget: int, population: int = 250, archive: str = "code",
        inputs: str = "paper", species_target: int = 0) -> dict[str, Any]:
    """One run; returns solved, evaluations (to the solution, else the budget), generations, the closest
    final distance to the goal, the solution's enabled connections, seconds."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    neat = NEAT(11, 2, NEATConfig(population_size=population), rng, output_activation="tanh")
    arch = NoveltyArchive(novelty_config(archive)) if method == "novelty" else None
    robots: HardMazeBatch | None = None
    evals = generations = 0
    closest = np.inf
    while evals < budget:
        n = len(neat)
        if robots is None or robots.n != n:
            robots = HardMazeBatch(n, maze, inputs)
        obs = robots.reset()
        policy, rows = neat.policy(), np.arange(n)
        for _ in range(STEPS):
            obs = robots.step(np.clip(policy(rows, obs), -1.0, 1.0))  # tanh outputs on the [-1, 1] box
            if robots.reached.all():
                break
        generations += 1
        closest = min(closest, float(robots.distance().min()))
        if robots.reached.any():
            first = int(np.argmax(robots.reached))
            genome = neat.genomes[first]
            return {"solved": True, "evals": evals + first + 1, "generations": generations, "closest": closest,
                    "connections": sum(1 for c in genome.conns.values() if c[3]),
                    "seconds": time.perf_counter() - t0}
        evals += n
        fitness = robots.fitness()
        scores = fitness if arch is None else arch.score(robots.position, fitness, rng)[0]
        neat.tell(scores)
        if species_target:  # the paper's variable C_t: 0.1 toward the target species count (at least 0.3)
            c, count = neat.config, len(neat.species)
            step = 0.1 if count > species_target else -0.1 if count < species_target else 0.0
            c.compatibility_threshold = max(0.3, c.compatibility_threshold + step)
    return {"solved": False, "evals": evals, "generations": generations, "closest": closest, "connections": None,
            "seconds": time.perf_counter() - t0}


def _run(task: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return task, run(*task)


def table(results: dict[tuple[str, str], list[dict[str, Any]]], budget: int) -> str:
    lines = [f"{'map':7}{'method':9}{'solved':>8}{'paper':>8}   {'evaluations to solve: mean (sd)':34}"
             f"{'paper':22}{'connections':>12}{'paper':>7}{'closest':>9}{'s/run':>8}"]
    for (maze, method), rs in results.items():
        won = [r for r in rs if r["solved"]]
        ev = np.array([r["evals"] for r in won], dtype=float)
        mine = f"{ev.mean():,.0f} (sd {ev.std(ddof=1) if len(ev) > 1 else 0:,.0f})" if len(ev) else "-"
        p_won, p_runs, p_mean, p_sd, p_conn = PAPER[(maze, method)]
        paper = f"{p_mean:,.0f} (sd {p_sd:,.0f})" if p_mean is not None else "not given"
        conn = f"{np.mean([r['connections'] for r in won]):.1f}" if won else "-"
        lines.append(f"{maze:7}{method:9}{f'{len(won)}/{len(rs)}':>8}{f'{p_won}/{p_runs}':>8}   {mine:34}{paper:22}"
                     f"{conn:>12}{p_conn if p_conn is not None else '-':>7}"
                     f"{np.median([r['closest'] for r in rs]):>9.1f}{np.mean([r['seconds'] for r in rs]):>8.1f}")
    lines.append(f"(budget {budget:,} evaluations a run; the paper's: 250,000. 'closest': the median over runs of the "
                 "closest any robot ended to the goal.)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--full", action="store_true", help="the paper's protocol: 40 runs, 250,000 evaluations a run")
    p.add_argument("--runs", type=int, default=2, help="runs per map and method (default 2; --full: 40)")
    p.add_argument("--budget", type=int, default=12_500,
                   help="evaluations a run (default 12,500: 50 generations; --full: the paper's 250,000)")
    p.add_argument("--maps", default="medium,hard", help="medium,hard (default both)")
    p.add_argument("--methods", default="novelty,fitness")
    p.add_argument("--archive", choices=("code", "drla"), default="code")
    p.add_argument("--inputs", choices=("paper", "code"), default="paper",
                   help="the sensors as the paper describes them, or as the C++ network saw them")
    p.add_argument("--population", type=int, default=250)
    p.add_argument("--seed", type=int, default=0, help="run r uses seed + r (the same seeds for both methods)")
    p.add_argument("--species-target", type=int, default=None,
                   help="move NEAT's compatibility threshold 0.1 a generation toward this many species (default: "
                        "population / 15, as the C++ code, which moves it 0.1 every 12 offspring); 0: DRLA's fixed 3.0")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (runs are independent)")
    args = p.parse_args(argv)
    runs, budget = (40, 250_000) if args.full else (args.runs, args.budget)
    if args.species_target is None:
        args.species_target = args.population // 15  # noveltyexp.cpp: num_species_target = pop_size / 15
    tasks = [(maze, method, args.seed + r, budget, args.population, args.archive, args.inputs, args.species_target)
             for maze in args.maps.split(",") for method in args.methods.split(",") for r in range(runs)]
    print(f"NEAT (population {args.population}) with novelty vs with fitness on Lehman and Stanley's mazes: "
          f"{runs} runs, {budget:,} evaluations each, archive rule {args.archive}, inputs {args.inputs}, species "
          f"target {args.species_target or 'none'}, {args.jobs} process(es)", flush=True)
    results: dict[tuple[str, str], list[dict[str, Any]]] = {(t[0], t[1]): [] for t in tasks}
    t0 = time.perf_counter()
    pool = multiprocessing.Pool(args.jobs) if args.jobs > 1 else None
    try:
        for task, r in (pool.imap_unordered(_run, tasks) if pool else map(_run, tasks)):
            results[(task[0], task[1])].append(r)
            print(f"  {task[0]:6} {task[1]:8} seed {task[2]:3}: " + (f"solved at {r['evals']:,} evaluations"
                  if r["solved"] else f"not solved in {r['evals']:,}") + f" ({r['generations']} generations, "
                  f"closest {r['closest']:.1f}, {r['seconds']:.1f} s)", flush=True)
    finally:
        if pool:
            pool.close()
    print(table(results, budget))
    print(f"total {time.perf_counter() - t0:.0f} s wall")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
