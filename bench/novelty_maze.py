"""Novelty search on Lehman and Stanley's medium and hard mazes: NEAT with novelty against NEAT with fitness
(issue 27, item 2), beside the paper's figures.

    PYTHONPATH=. python bench/novelty_maze.py                       # the scaled-down default (a few minutes)
    PYTHONPATH=. python bench/novelty_maze.py --full --jobs 16      # the paper's protocol: 40 runs, 250,000 evaluations
    PYTHONPATH=. python bench/novelty_maze.py --runs 10 --max-evals 250000 --time-limit 3600   # what fits in an hour

Runs are dealt seed by seed over the cells (map, method); ``--lockstep K`` (default 4) steps K runs' robots in one
numpy batch per map (each run's course is the same bits as alone: tests/test_hard_maze.py); ``--jobs`` processes
each take a share of the runs. After ``--time-limit`` seconds the runs still going are reported as cut short, with
the evaluations they had reached, and left out of the counts.

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
from collections.abc import Iterator
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


class Run:
    """One run, a generation at a time: ``begin`` gives its population's policy, ``end`` takes the robots' final
    state (its slice of a batch) and returns the result once the run is over (solved or out of budget)."""

    def __init__(self, maze: str, method: str, seed: int, budget: int, population: int = 250,
                 archive: str = "code", inputs: str = "paper", species_target: int = 0) -> None:
        self.task = (maze, method, seed, budget, population, archive, inputs, species_target)
        self.maze, self.inputs, self.budget, self.species_target = maze, inputs, budget, species_target
        self.t0 = time.perf_counter()
        self.seconds = 0.0  # (its share of the shared batches' time, when run in lockstep: see run_all)
        self.rng = np.random.default_rng(seed)
        self.neat = NEAT(11, 2, NEATConfig(population_size=population), self.rng, output_activation="tanh")
        self.arch = NoveltyArchive(novelty_config(archive)) if method == "novelty" else None
        self.evals = self.generations = 0
        self.closest = np.inf
        self.policy: Any = None
        self.rows = np.arange(0)

    def begin(self) -> int:
        """Start a generation: its robot count."""
        self.policy = self.neat.policy()
        self.rows = np.arange(len(self.neat))  # (one array object for the whole episode: the policy's cache key)
        return len(self.rows)

    def act(self, obs: np.ndarray) -> np.ndarray:
        return np.clip(self.policy(self.rows, obs), -1.0, 1.0)  # tanh outputs on the [-1, 1] box

    def end(self, robots: HardMazeBatch, lo: int) -> dict[str, Any] | None:
        """The generation's robots are ``robots``' rows ``lo ..``: score them and breed, or finish."""
        n = len(self.rows)
        reached = robots.reached[lo:lo + n]
        self.generations += 1
        self.closest = min(self.closest, float(robots.distance()[lo:lo + n].min()))
        if reached.any():
            first = int(np.argmax(reached))
            genome = self.neat.genomes[first]
            return self._result(True, self.evals + first + 1, sum(1 for c in genome.conns.values() if c[3]))
        self.evals += n
        fitness = robots.fitness()[lo:lo + n]
        scores = fitness if self.arch is None else self.arch.score(robots.position[lo:lo + n], fitness, self.rng)[0]
        self.neat.tell(scores)
        if self.species_target:  # the paper's variable C_t: 0.1 toward the target species count (at least 0.3)
            c, count = self.neat.config, len(self.neat.species)
            step = 0.1 if count > self.species_target else -0.1 if count < self.species_target else 0.0
            c.compatibility_threshold = max(0.3, c.compatibility_threshold + step)
        return None if self.evals < self.budget else self._result(False, self.evals, None)

    def _result(self, solved: bool, evals: int, connections: int | None) -> dict[str, Any]:
        return {"solved": solved, "evals": evals, "generations": self.generations, "closest": self.closest,
                "connections": connections, "seconds": self.seconds or time.perf_counter() - self.t0}


def run_all(tasks: list[tuple[Any, ...]], lockstep: int = 1, time_limit: float = float("inf")) -> Iterator[
        tuple[tuple[Any, ...], dict[str, Any]]]:
    """Yields (task, result) as runs finish. ``lockstep`` runs at a time step their robots together, one
    ``HardMazeBatch`` per map (a larger batch costs numpy less per robot; each robot's arithmetic, and so every
    run's course, is the same bits as alone). After ``time_limit`` seconds no generation starts: the runs still
    going are yielded with ``{"cut": True, "evals": ..., "generations": ...}``."""
    pending, slots = list(tasks), []  # type: ignore[var-annotated]
    t0 = time.perf_counter()
    while pending or slots:
        while pending and len(slots) < lockstep:
            slots.append(Run(*pending.pop(0)))
        if time.perf_counter() - t0 >= time_limit:
            for r in slots:
                yield r.task, {"cut": True, "evals": r.evals, "generations": r.generations}
            return
        tg = time.perf_counter()
        groups: dict[tuple[str, str], list[Run]] = {}
        for r in slots:
            groups.setdefault((r.maze, r.inputs), []).append(r)
        batches = []
        for (maze, inputs), runs in groups.items():
            sizes = [r.begin() for r in runs]
            starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
            batches.append((runs, starts, HardMazeBatch(int(starts[-1]), maze, inputs)))
        for runs, starts, robots in batches:
            obs = robots.reset()
            actions = np.empty((robots.n, 2))
            for _ in range(STEPS):
                for r, lo, hi in zip(runs, starts[:-1], starts[1:]):
                    actions[lo:hi] = r.act(obs[lo:hi])
                obs = robots.step(actions)
                if robots.reached.all():
                    break
        share = (time.perf_counter() - tg) / max(1, sum(len(r.rows) for r in slots))
        for runs, starts, robots in batches:
            for r, lo in zip(runs, starts[:-1]):
                te = time.perf_counter()
                result = r.end(robots, int(lo))
                r.seconds += share * len(r.rows) + time.perf_counter() - te
                if result is not None:
                    slots.remove(r)
                    yield r.task, result


def run(maze: str, method: str, seed: int, budget: int, population: int = 250, archive: str = "code",
        inputs: str = "paper", species_target: int = 0) -> dict[str, Any]:
    """One run; returns solved, evaluations (to the solution, else the budget), generations, the closest
    final distance to the goal, the solution's enabled connections, seconds."""
    ((_, result),) = run_all([(maze, method, seed, budget, population, archive, inputs, species_target)])
    return result


def _run(task: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return task, run(*task)


def table(results: dict[tuple[str, str], list[dict[str, Any]]], budget: int,
          cut: dict[tuple[str, str], list[int]] | None = None) -> str:
    """The solve counts and mean evaluations beside the paper's; ``cut``: per cell, the evaluations reached by
    runs the time limit stopped (left out of the counts)."""
    lines = [f"{'map':7}{'method':9}{'solved':>8}{'paper':>8}   {'evaluations to solve: mean (sd)':34}"
             f"{'paper':22}{'connections':>12}{'paper':>7}{'closest':>9}{'s/run':>8}  cut short (evaluations)"]
    for (maze, method), rs in results.items():
        if not rs:
            lines.append(f"{maze:7}{method:9}{'0/0':>8}   (no run finished)")
            continue
        won = [r for r in rs if r["solved"]]
        ev = np.array([r["evals"] for r in won], dtype=float)
        mine = f"{ev.mean():,.0f} (sd {ev.std(ddof=1) if len(ev) > 1 else 0:,.0f})" if len(ev) else "-"
        p_won, p_runs, p_mean, p_sd, p_conn = PAPER[(maze, method)]
        paper = f"{p_mean:,.0f} (sd {p_sd:,.0f})" if p_mean is not None else "not given"
        conn = f"{np.mean([r['connections'] for r in won]):.1f}" if won else "-"
        lines.append(f"{maze:7}{method:9}{f'{len(won)}/{len(rs)}':>8}{f'{p_won}/{p_runs}':>8}   {mine:34}{paper:22}"
                     f"{conn:>12}{p_conn if p_conn is not None else '-':>7}"
                     f"{np.median([r['closest'] for r in rs]):>9.1f}{np.mean([r['seconds'] for r in rs]):>8.1f}"
                     f"  {', '.join(f'{e:,}' for e in (cut or {}).get((maze, method), [])) or '-'}")
    lines.append(f"(budget {budget:,} evaluations a run; the paper's: 250,000. 'closest': the median over runs of the "
                 "closest any robot ended to the goal. 'cut short': runs the time limit stopped, neither solved "
                 "nor failed, left out of the counts.)")
    return "\n".join(lines)


def _worker(tasks: list[tuple[Any, ...]], lockstep: int, time_limit: float, queue: Any) -> None:
    for task, r in run_all(tasks, lockstep, time_limit):
        queue.put((task, r))
    queue.put(None)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--full", action="store_true", help="the paper's protocol: 40 runs, 250,000 evaluations a run")
    p.add_argument("--runs", type=int, default=None, help="runs per map and method (default 2; --full: 40)")
    p.add_argument("--max-evals", "--budget", dest="budget", type=int, default=None,
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
    p.add_argument("--lockstep", type=int, default=4,
                   help="runs stepped together in one numpy batch per map (default 4; results do not depend on it)")
    p.add_argument("--time-limit", type=float, default=float("inf"),
                   help="seconds after which no generation starts; runs still going are reported as cut short")
    p.add_argument("--jobs", type=int, default=1, help="worker processes, each with its share of the runs")
    args = p.parse_args(argv)
    runs = args.runs if args.runs is not None else 40 if args.full else 2
    budget = args.budget if args.budget is not None else 250_000 if args.full else 12_500
    if args.species_target is None:
        args.species_target = args.population // 15  # noveltyexp.cpp: num_species_target = pop_size / 15
    cells = [(maze, method) for maze in args.maps.split(",") for method in args.methods.split(",")]
    # seed by seed, every cell in turn: a time limit leaves the cells with about as many runs each
    tasks = [(maze, method, args.seed + r, budget, args.population, args.archive, args.inputs, args.species_target)
             for r in range(runs) for maze, method in cells]
    print(f"NEAT (population {args.population}) with novelty vs with fitness on Lehman and Stanley's mazes: "
          f"{runs} runs, {budget:,} evaluations each, archive rule {args.archive}, inputs {args.inputs}, species "
          f"target {args.species_target or 'none'}, {args.jobs} process(es), {args.lockstep} run(s) in lockstep",
          flush=True)
    results: dict[tuple[str, str], list[dict[str, Any]]] = {cell: [] for cell in cells}
    cut: dict[tuple[str, str], list[int]] = {cell: [] for cell in cells}
    t0 = time.perf_counter()
    if args.jobs > 1:
        queue: Any = multiprocessing.Queue()
        procs = [multiprocessing.Process(target=_worker, args=(tasks[j::args.jobs], args.lockstep, args.time_limit,
                                                                queue)) for j in range(args.jobs)]
        for proc in procs:
            proc.start()
        done = 0
        while done < len(procs):
            got = queue.get()
            if got is None:
                done += 1
            else:
                _report(got[0], got[1], results, cut)
        for proc in procs:
            proc.join()
    else:
        for task, r in run_all(tasks, args.lockstep, args.time_limit):
            _report(task, r, results, cut)
    print(table(results, budget, cut))
    print(f"total {time.perf_counter() - t0:.0f} s wall")
    return 0


def _report(task: tuple[Any, ...], r: dict[str, Any], results: dict[tuple[str, str], list[dict[str, Any]]],
            cut: dict[tuple[str, str], list[int]]) -> None:
    if r.get("cut"):
        cut[(task[0], task[1])].append(r["evals"])
        print(f"  {task[0]:6} {task[1]:8} seed {task[2]:3}: cut short by the time limit at {r['evals']:,} "
              "evaluations", flush=True)
        return
    results[(task[0], task[1])].append(r)
    print(f"  {task[0]:6} {task[1]:8} seed {task[2]:3}: " + (f"solved at {r['evals']:,} evaluations"
          if r["solved"] else f"not solved in {r['evals']:,}") + f" ({r['generations']} generations, "
          f"closest {r['closest']:.1f}, {r['seconds']:.1f} s)", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
