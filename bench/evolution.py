"""Neuroevolution: time to evolve a CartPole champion (DRLA's GA and NEAT, and neat-python for reference),
the batched population forward, and novelty search against plain fitness on the deceptive maze.

Prints ONE JSON line of figures (per-seed tables go to stderr). Protocol for CartPole, the same for all
three: each genome plays one episode per generation (the generation's seed, the same for every genome);
when the generation's best scores >= 475, that genome plays 20 fixed greedy episodes (seeds 10000..10019)
and the run is solved when their mean is >= 475. The wall time to that point, from making the env and the
first population (the config file parsed before) to the passed check, no breeding after it in either, is
the figure (median over the
seeds of the fastest of ``--repeats`` runs per seed: the runs are deterministic, so the fastest is the one least
disturbed by other work on the machine; the three are interleaved seed by seed; unsolved seeds are counted in
``*_solved_seeds`` and left out of the median). DRLA's NEAT and
neat-python both use 100 genomes, tanh hidden nodes, two outputs (argmax), full initial connection, initial
weights N(0, 1) and biases 0, the same mutation rates, threshold 3.0, elitism 2, stagnation 15.
neat-python evaluates genome by genome with its ``FeedForwardNetwork.activate`` on DRLA's pure-Python
CartPole; DRLA evaluates every genome's episode in one batched forward per step on ``CartPoleBatch`` (the
same dynamics in numpy, bit for bit the same trajectories: tests/test_evolution.py checks it), and plays the
20 greedy episodes alongside the generation, as more rows of the same batch, for its guess at the generation's
best (the three lowest-numbered genomes that may still be it); the check counts only for the genome the protocol
checks, played whole, when the exported champion network chooses every action it took (else it runs on its own
after the generation: the same result either way, tests/test_evolution_check.py). The two evolve differently,
so a seed may take DRLA more generations than neat-python or fewer (``*_generations_median``, and the per-seed
table on stderr).

Maze: GA (64 individuals, 80 generations) scored by novelty (k 15, adaptive archive) or by fitness,
solved when an individual reaches the goal.

Walker (``scenes/walker``, needs bpy): its Evolution tree in Blender headless, 40 generations (10 with
--quick); the champion's distance in one 10 s episode and generations per minute, and a picture of its
path (top view) in docs/images/walker_path.png (``--walker-only`` runs just this part).

    .venv/bin/python bench/evolution.py [--quick]      (make bench-evolution installs neat-python first)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from drla_core.envs import make  # noqa: E402
from drla_core.evolve.evolution import EvolutionConfig, EvolutionJob, GAConfig, NoveltyConfig, PopulationMLP  # noqa: E402
from drla_core.evolve.neat import NEATConfig  # noqa: E402
from drla_core.rl.train import evaluate  # noqa: E402

SOLVED = 475.0
MAX_GENERATIONS = 100
SOLVE_SEEDS = [10_000 + i for i in range(20)]
FRESH: dict[str, list[float]] = {"ga": [], "neat": []}


def drla_cartpole(method: str, seed: int) -> tuple[float | None, int]:
    cfg = EvolutionConfig(method=method, generations=MAX_GENERATIONS, target_return=SOLVED, solve_episodes=20,
                          solve_seed=SOLVE_SEEDS[0], ga=GAConfig(population_size=64),
                          neat=NEATConfig(population_size=100))
    t0 = time.perf_counter()
    job = EvolutionJob(lambda: make("cartpole"), cfg, seed=seed)
    job.advance()
    wall = time.perf_counter() - t0
    if job.solved:  # the exported champion on 100 other episodes (not part of the protocol: how well it generalises)
        FRESH[method].append(evaluate(make("cartpole"), job.to_model().act, 100, seed=20_000).mean_return)
    return (wall if job.solved else None), job.steps


NEAT_PYTHON_CONFIG = """
[NEAT]
fitness_criterion     = max
fitness_threshold     = 100000
no_fitness_termination = True
pop_size              = 100
reset_on_extinction   = False
seed                  = {seed}

[DefaultGenome]
activation_default      = tanh
activation_mutate_rate  = 0.0
activation_options      = tanh
aggregation_default     = sum
aggregation_mutate_rate = 0.0
aggregation_options     = sum
bias_init_mean          = 0.0
bias_init_stdev         = 0.0
bias_max_value          = 30.0
bias_min_value          = -30.0
bias_mutate_power       = 0.5
bias_mutate_rate        = 0.7
bias_replace_rate       = 0.1
compatibility_disjoint_coefficient = 1.0
compatibility_weight_coefficient   = 0.5
conn_add_prob           = 0.5
conn_delete_prob        = 0.0
enabled_default         = True
enabled_mutate_rate     = 0.01
feed_forward            = True
initial_connection      = full_direct
node_add_prob           = 0.2
node_delete_prob        = 0.0
num_hidden              = 0
num_inputs              = 4
num_outputs             = 2
response_init_mean      = 1.0
response_init_stdev     = 0.0
response_max_value      = 30.0
response_min_value      = -30.0
response_mutate_power   = 0.0
response_mutate_rate    = 0.0
response_replace_rate   = 0.0
weight_init_mean        = 0.0
weight_init_stdev       = 1.0
weight_max_value        = 30
weight_min_value        = -30
weight_mutate_power     = 0.5
weight_mutate_rate      = 0.8
weight_replace_rate     = 0.1

[DefaultSpeciesSet]
compatibility_threshold = 3.0

[DefaultStagnation]
species_fitness_func = max
max_stagnation       = 15
species_elitism      = 2

[DefaultReproduction]
elitism            = 2
survival_threshold = 0.2
min_species_size   = 1
"""


class Solved(Exception):
    """neat-python's run reached a champion that passed its check (raised from an ``eval_genomes``)."""


def neat_python_config_text(seed: int, **changes: object) -> str:
    """``NEAT_PYTHON_CONFIG`` with ``key = value`` lines replaced (``changes``: key -> value)."""
    lines = []
    for line in NEAT_PYTHON_CONFIG.format(seed=seed).splitlines():
        key = line.split("=")[0].strip()
        lines.append(f"{key} = {changes[key]}" if "=" in line and key in changes else line)
    missing = set(changes) - {ln.split("=")[0].strip() for ln in lines if "=" in ln}
    if missing:
        raise KeyError(f"not keys of NEAT_PYTHON_CONFIG: {sorted(missing)}")
    return "\n".join(lines) + "\n"


def run_neat_python(config_text: str, seed: int, eval_genomes, max_generations: int,
                    stop: tuple[type[BaseException], ...] = ()) -> tuple[object, bool, BaseException | None]:
    """The one neat-python runner of the benches: a ``neat.Population`` from ``config_text`` (Python's ``random``
    seeded with ``seed``), one generation per ``pop.run`` until ``eval_genomes`` raises ``Solved`` (True) or one of
    ``stop`` (returned), or ``max_generations``. Returns (config, solved, the stop exception or None)."""
    import neat

    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write(config_text)
    config = neat.Config(neat.DefaultGenome, neat.DefaultReproduction, neat.DefaultSpeciesSet,
                         neat.DefaultStagnation, f.name)
    os.unlink(f.name)
    random.seed(seed)
    pop = neat.Population(config)
    for _ in range(max_generations):
        try:
            pop.run(eval_genomes, 1)  # (Solved: out of pop.run before it breeds a generation nobody uses)
        except Solved:
            return config, True, None
        except stop as e:
            return config, False, e
    return config, False, None


def neat_python_cartpole(seed: int) -> tuple[float | None, int]:
    import neat

    t0 = time.perf_counter()  # like DRLA's figure: from making the env and the population to the champion
    env = make("cartpole")
    state = {"generation": 0}

    def episode(net, ep_seed: int) -> float:
        obs, _ = env.reset(seed=ep_seed)
        total, done = 0.0, False
        while not done:
            out = net.activate(obs.tolist())
            obs, r, terminated, truncated, _ = env.step(1 if out[1] > out[0] else 0)
            total += r
            done = terminated or truncated
        return total

    def eval_genomes(genomes, config) -> None:
        ep_seed = int(np.random.default_rng([seed, state["generation"]]).integers(0, 2**31 - 1))
        best, best_net = -1.0, None
        for _, genome in genomes:
            net = neat.nn.FeedForwardNetwork.create(genome, config)
            genome.fitness = episode(net, ep_seed)
            if genome.fitness > best:
                best, best_net = genome.fitness, net
        state["generation"] += 1
        if best >= SOLVED and np.mean([episode(best_net, s) for s in SOLVE_SEEDS]) >= SOLVED:
            raise Solved

    _, solved, _ = run_neat_python(neat_python_config_text(seed), seed, eval_genomes, MAX_GENERATIONS)
    wall = time.perf_counter() - t0
    return (wall if solved else None), state["generation"]


def population_forward_us(repeats: int = 2000) -> float:
    net = PopulationMLP(4, [(16, "tanh"), (16, "tanh")], 2, "linear")
    rng = np.random.default_rng(0)
    params = net.init_params(256, rng)
    x = rng.normal(size=(256, 4)).astype(np.float32)
    for _ in range(50):
        net.forward(params, x)
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeats):
            net.forward(params, x)
        best.append((time.perf_counter() - t0) / repeats * 1e6)
    return min(best)


def maze(novelty: bool, seed: int) -> bool:
    cfg = EvolutionConfig(method="ga", generations=80, target_return=1.0, solve_episodes=1,
                          ga=GAConfig(population_size=64, mutation_rate=0.2, mutation_sigma=0.2),
                          novelty=NoveltyConfig(k=15, threshold=0.05) if novelty else None)
    job = EvolutionJob(lambda: make("deceptive_maze"), cfg, seed=seed)
    job.advance()
    return job.solved


def solve_figures(name: str, runs: list[tuple[float | None, int]], out: dict) -> None:
    times = [t for t, _ in runs if t is not None]
    out[f"{name}_solve_s"] = round(statistics.median(times), 3) if times else None
    out[f"{name}_solved_seeds"] = len(times)
    out[f"{name}_generations_median"] = statistics.median(g for _, g in runs)
    print(f"{name}: " + ", ".join(f"{'-' if t is None else f'{t:.2f}s'}/{g}g" for t, g in runs), file=sys.stderr)


def walker(generations: int, seed: int = 0, picture: Path | None = None) -> dict:
    """The rigid-body walker (``scenes/walker``) evolved in Blender headless by its own tree (GA, 24
    individuals, one 10 s episode each): the champion's distance walked (m) and generations per minute; with
    ``picture``, the champion's path (top view) and the curves as a PNG."""
    try:
        import bpy  # noqa: F401  (the bpy wheel of .venv)
    except ImportError:
        return {"walker_best_distance_m": "bpy not installed"}
    import importlib.util

    from drla.extension import register_extension

    register_extension()
    spec = importlib.util.spec_from_file_location("build_walker", ROOT / "scenes" / "walker" / "build_walker.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree.compiler import compile_tree

    scene = module.build_scene()
    compiled = compile_tree(module.build_tree(scene), scene)
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        job = build.build_job(compiled, env, seed=seed, total_steps=generations)
        t0 = time.perf_counter()
        job.advance()
        wall = time.perf_counter() - t0
        path = walker_path(env, job.champion_policy(), scene.objects["Torso"])
        env.close()
    best = job.champion_fitness
    print(f"walker: best per generation {[round(b, 2) for b in job.history['best']]}", file=sys.stderr)
    out = {"walker_best_distance_m": round(best, 3), "walker_body_lengths": round(best / module.BODY_LENGTH, 2),
           "walker_replay_distance_m": round(float(path[-1, 0] - path[0, 0]), 3),
           "walker_generations_per_min": round(60.0 * job.steps / wall, 1), "walker_generations": job.steps}
    if picture is not None:
        save_walker_picture(picture, path, job.history, module.BODY_LENGTH, out)
        out["walker_path_png"] = str(picture.relative_to(ROOT) if picture.is_relative_to(ROOT) else picture)
    return out


def walker_path(env, policy, torso):
    """The champion's episode replayed: the torso's world (x, y) before the first step and after each."""
    import numpy as np

    obs, _ = env.reset(seed=0)
    points = [tuple(torso.matrix_world.translation)[:2]]
    while True:
        obs, _, terminated, truncated, _ = env.step(policy(obs))
        points.append(tuple(torso.matrix_world.translation)[:2])
        if terminated or truncated:
            return np.asarray(points, dtype=np.float64)


def save_walker_picture(path: Path, xy, history: dict, body_length: float, figures: dict) -> None:
    """Top view of the torso's path over the 10 s (the 3-body-length mark beside it) and the fitness curves."""
    import numpy as np

    from drla_core.io.plot import BLUE, GREEN, ORANGE, Panel, Series, render_panels
    from drla_core.io.png import write_png

    lo, hi = float(min(xy[:, 1].min(), -0.5)), float(max(xy[:, 1].max(), 0.5))
    mark = 3 * body_length + xy[0, 0]
    top = Panel("Torso path, top view (y against x, m)", x_label="x (m)", y_range=(lo, hi), series=[
        Series(np.array([mark, mark]), np.array([lo, hi]), GREEN, "3 body lengths", width=1),
        Series(xy[:, 0], xy[:, 1], BLUE, "torso"),
        Series(xy[[0, -1], 0], xy[[0, -1], 1], ORANGE, "start, end", kind="points", width=5)])
    gens = np.asarray(history["generation"], np.float64)
    fit = Panel("Distance walked per generation (m)", x_label="generation", series=[
        Series(gens, np.asarray(history["mean"], np.float64), BLUE, "mean"),
        Series(gens, np.asarray(history["best"], np.float64), ORANGE, "best")])
    text = Panel("Summary", text_lines=[f"{k}: {v}" for k, v in figures.items()])
    write_png(path, render_panels([top, fit, text], "DRLA walker: the evolved champion's 10 s", 1200))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 seeds instead of 10")
    parser.add_argument("--no-neat-python", action="store_true", help="skip the neat-python reference")
    parser.add_argument("--repeats", type=int, default=3, help="runs per seed; the fastest counts (default 3)")
    parser.add_argument("--no-walker", action="store_true", help="skip the rigid-body walker (needs bpy)")
    parser.add_argument("--walker-only", action="store_true", help="only the walker (and its picture)")
    parser.add_argument("--walker-picture", default=str(ROOT / "docs" / "images" / "walker_path.png"),
                        help="where the walker's path picture goes (default docs/images/walker_path.png)")
    args = parser.parse_args()
    if args.walker_only:
        print(json.dumps(walker(10 if args.quick else 40, picture=Path(args.walker_picture))))
        return
    seeds = range(3 if args.quick else 10)
    out: dict = {"seeds": len(seeds), "repeats": args.repeats,
                 "population_forward_us": round(population_forward_us(), 2)}
    runs: dict[str, list[tuple[float | None, int]]] = {"ga_cartpole": [], "neat_cartpole": [],
                                                       "neat_python_cartpole": []}
    have_neat_python = not args.no_neat_python
    for seed in seeds:  # interleaved, so the three meet the same machine load; each the fastest of its repeats
        for name, fn in (("ga_cartpole", lambda s: drla_cartpole("ga", s)),
                         ("neat_cartpole", lambda s: drla_cartpole("neat", s)),
                         ("neat_python_cartpole", neat_python_cartpole)):
            if name == "neat_python_cartpole" and not have_neat_python:
                continue
            try:
                results = [fn(seed) for _ in range(args.repeats)]
            except ImportError:
                have_neat_python = False
                out["neat_python_cartpole_solve_s"] = "neat-python not installed (make bench-evolution installs it)"
                continue
            times = [t for t, _ in results if t is not None]
            runs[name].append((min(times) if times else None, results[0][1]))
    for name, result in runs.items():
        if result:
            solve_figures(name, result, out)
    if out.get("neat_cartpole_solve_s") and isinstance(out.get("neat_python_cartpole_solve_s"), float):
        out["neat_speedup_vs_neat_python"] = round(out["neat_python_cartpole_solve_s"] / out["neat_cartpole_solve_s"],
                                                   2)
        ratios = [p / d for (d, _), (p, _) in zip(runs["neat_cartpole"], runs["neat_python_cartpole"])
                  if d is not None and p is not None]  # seed by seed: the same seed, measured side by side
        if ratios:
            out["neat_speedup_worst_seed"] = round(min(ratios), 2)
            print("neat speed-up over neat-python by seed: " + ", ".join(f"{r:.2f}x" for r in ratios), file=sys.stderr)
    for method, means in FRESH.items():
        if means:
            out[f"{method}_champion_100_fresh_episodes_median"] = round(statistics.median(means), 1)
    out["maze_novelty_solved_seeds"] = sum(maze(True, s) for s in seeds)
    out["maze_fitness_solved_seeds"] = sum(maze(False, s) for s in seeds)
    if not args.no_walker:
        out.update(walker(10 if args.quick else 40, picture=Path(args.walker_picture)))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
