"""The rigid-body walker (``scenes/walker/walker.blend``, needs bpy) trained by PPO (tree "Walker PPO") and by
evolution (tree "Walker") for the same wall-clock budget each, in Blender headless, one after the other in one
process, each tree with its own settings as the file holds them.

- PPO: ``advance(max_seconds=budget)`` of its TrainingRun; the tree's Trainer plays one greedy episode every
  5000 steps (inside the budget), and one more is played after it with the final policy (outside it). The
  figure is the best of those greedy returns.
- Evolution: ``advance(max_seconds=budget)`` of its EvolutionJob (GA, 24 walkers a generation, one episode
  each); a generation cut off by the budget does not count. The figure is the champion's fitness, the
  return of its one episode, which is its greedy return (the walker's episodes are deterministic).

With several ``--seeds``, each seed runs PPO then evolution; the JSON's figures are lists (one per seed) and
the medians of the best greedy returns. The return is the metres the torso walked towards the goal in the 10 s
episode (body lengths: / 0.8 m). Both budgets count everything the job does (PPO's evaluations and updates, the
GA's breeding). Prints a small table on stderr and ONE JSON line of figures.

    nice -n 10 .venv/bin/python bench/walker_ppo_vs_evolution.py [--seconds 120] [--seeds 0,4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BLEND = ROOT / "scenes" / "walker" / "walker.blend"
BODY_LENGTH = 0.8


def _open(tree_name: str):
    """Open walker.blend afresh; ``(scene, compiled tree)``."""
    import bpy

    from drla_ext.addon.tree.compiler import compile_tree

    bpy.ops.wm.open_mainfile(filepath=str(BLEND), load_ui=False)
    scene = bpy.context.scene
    return scene, compile_tree(bpy.data.node_groups[tree_name], scene)


def ppo(seconds: float, seed: int) -> dict:
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.drla_core.rl.train import evaluate

    scene, compiled = _open("Walker PPO")
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            job = build.build_job(compiled, env, seed=seed, total_steps=100_000_000)  # the budget ends it
            t0 = time.perf_counter()
            job.advance(max_seconds=seconds)
            wall = time.perf_counter() - t0
            final = evaluate(env, job.agent, 1, seed + 1000).mean_return  # the final policy, outside the budget
        finally:
            env.close()
    evals = [(int(s), float(r)) for s, r, _ in job.history.evals]
    best = max([r for _, r in evals] + [final])
    print(f"PPO greedy return (m) by step: {[(s, round(r, 2)) for s, r in evals]}, final {final:.2f}",
          file=sys.stderr)
    return {"ppo_best_greedy_m": round(best, 3), "ppo_final_greedy_m": round(final, 3),
            "ppo_best_body_lengths": round(best / BODY_LENGTH, 2), "ppo_wall_s": round(wall, 1),
            "ppo_env_steps": int(job.steps), "ppo_episodes": len(job.history.episode_returns),
            "ppo_greedy_evals": len(evals), "ppo_steps_per_s": round(job.steps / wall)}


def evolution(seconds: float, seed: int) -> dict:
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene

    scene, compiled = _open("Walker")
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            job = build.build_job(compiled, env, seed=seed, total_steps=100_000)  # generations: the budget ends it
            t0 = time.perf_counter()
            job.advance(max_seconds=seconds)
            wall = time.perf_counter() - t0
        finally:
            env.close()
    best = float(job.champion_fitness)
    generations = int(job.steps)
    print(f"evolution best (m) per generation: {[round(b, 2) for b in job.history['best']]}", file=sys.stderr)
    return {"evo_best_greedy_m": round(best, 3), "evo_best_body_lengths": round(best / BODY_LENGTH, 2),
            "evo_wall_s": round(wall, 1), "evo_generations": generations,
            "evo_evaluations": generations * int(compiled.agent.config["population_size"]),
            "evo_env_steps": int(job.history["env_steps"][-1]) if generations else 0,
            "evo_steps_per_s": round(job.env_steps / wall)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="wall-clock budget of each run (default 120)")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds, each run by both (default 0)")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    try:
        import bpy  # noqa: F401  (the bpy wheel of .venv)
    except ImportError:
        print(json.dumps({"bench": "walker_ppo_vs_evolution", "error": "bpy not installed"}))
        return 1
    from drla.extension import register_extension

    register_extension()
    out: dict = {"bench": "walker_ppo_vs_evolution", "budget_s": args.seconds, "seeds": seeds,
                 "cpus": os.cpu_count(), "load": round(os.getloadavg()[0], 1)}
    runs = []
    for seed in seeds:
        runs.append({**ppo(args.seconds, seed), **evolution(args.seconds, seed)})
    for key in runs[0]:
        out[key] = [run[key] for run in runs] if len(runs) > 1 else runs[0][key]
    for method in ("ppo", "evo"):
        out[f"{method}_best_greedy_m_median"] = round(statistics.median(r[f"{method}_best_greedy_m"] for r in runs), 3)
    print(f"{'':10} {'seed':>4} {'best greedy (m)':>16} {'body lengths':>13} {'wall (s)':>9} {'env steps':>10}  work",
          file=sys.stderr)
    for seed, r in zip(seeds, runs):
        print(f"{'PPO':10} {seed:4d} {r['ppo_best_greedy_m']:16.2f} {r['ppo_best_body_lengths']:13.2f} "
              f"{r['ppo_wall_s']:9.1f} {r['ppo_env_steps']:10d}  {r['ppo_episodes']} episodes, "
              f"{r['ppo_greedy_evals']} greedy evaluations", file=sys.stderr)
        print(f"{'evolution':10} {seed:4d} {r['evo_best_greedy_m']:16.2f} {r['evo_best_body_lengths']:13.2f} "
              f"{r['evo_wall_s']:9.1f} {r['evo_env_steps']:10d}  {r['evo_generations']} generations, "
              f"{r['evo_evaluations']} evaluations", file=sys.stderr)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
