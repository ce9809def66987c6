"""Benchmark: train the tank agent of ``scenes/tank/tank.blend`` (tree "Tank") on several seeds.

The goal (the tank issue): a greedy hit rate >= 90 % over 100 shots within 5 minutes of wall
time on 2 cores, on at least 8 of 10 seeds.

Each seed opens the .blend, compiles its "Tank" tree and trains the agent the tree describes
(DQN Agent / Epsilon / Replay / Network nodes, the Trainer's total steps and the seed given here)
until the first of: the goal is reached, ``--max-seconds`` of wall time, the Trainer's total steps.
"Reached" is checked at the end of the first episode after every ``--check-every`` steps: the
greedy policy plays (exploration off, same scene env) until it has fired ``--shots`` times (at most
``--check-episodes`` episodes of 100 steps) and passes when every shot was fired and at least
``--goal`` of them hit; a seed stops after ``--confirm`` (2) passing checks in a row, so one lucky
check of a policy still in flux does not end it. The checks count in the wall time. When a seed
stops, a fresh measurement with another evaluation seed gives its reported hit rate: greedy play
until ``--shots`` fire actions (at most ``--max-episodes`` episodes; fewer shots than asked count
as not reaching the goal).

Seeds run in ``--jobs`` (default 2) worker processes started with ``subprocess``; each worker
imports bpy once and trains its share of the seeds one after the other, so two seeds train at
a time on a 2-core machine. Prints ONE JSON line: per-seed hit rates, wall seconds and steps to
reach the goal (null if not reached), steps trained, and how many seeds reached the goal.

Run: ``.venv/bin/python bench/tank_training.py [--seeds 10] [--max-seconds 300] [--jobs 2]``.
``--config '{"learning_rate": 5e-4}'`` overrides DQNConfig fields (for experiments).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TANK_BLEND = ROOT / "scenes" / "tank" / "tank.blend"
EVAL_SEED = 50_000  # evaluation episodes use seeds from here on: never a training episode's seed


def shots_evaluation(env, policy, shots: int = 100, max_episodes: int = 20, seed: int | None = None) -> dict:
    """Greedy play until ``shots`` fire actions (or ``max_episodes`` episodes): hits, shots, hit rate."""
    hits = fired = episodes = steps = 0
    obs, _ = env.reset(seed=seed)
    while fired < shots and episodes < max_episodes:
        obs, _reward, terminated, truncated, info = env.step(policy(obs))
        steps += 1
        if "hit" in info:
            fired += 1
            hits += int(info["hit"])
        if terminated or truncated:
            episodes += 1
            if fired < shots and episodes < max_episodes:
                obs, _ = env.reset()
    return {"hits": hits, "shots": fired, "hit_rate": hits / fired if fired else 0.0, "episodes": episodes,
            "steps": steps}


def train_seed(seed: int, args: argparse.Namespace) -> dict:
    """Train one seed (in this process, bpy imported) and measure it; returns its result row."""
    import bpy

    from drla.extension import register_extension

    register_extension()
    import dataclasses

    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.drla_core.rl.dqn import DQNAgent
    from drla_ext.drla_core.rl.train import Callback, TrainingRun

    t_start = time.perf_counter()
    bpy.ops.wm.open_mainfile(filepath=str(Path(args.blend).resolve()), load_ui=False)
    scene = bpy.context.scene
    compiled = compiler.compile_tree(bpy.data.node_groups[args.tree], scene)
    steps = int(args.steps or compiled.trainer.total_steps)
    config = build.dqn_config(compiled, steps)
    if args.config:
        config = dataclasses.replace(config, **json.loads(args.config))

    class GoalCheck(Callback):
        """At an episode end (before the run's reset), every ``check_every`` steps: is the goal reached?"""

        def __init__(self) -> None:
            self.next_check = args.check_every
            self.reached_at: tuple[float, int] | None = None
            self.checks: list[tuple[int, float, int]] = []
            self.passed_in_a_row = 0

        def on_episode_end(self, run: TrainingRun) -> None:
            if run.steps < self.next_check or self.reached_at is not None:
                return
            self.next_check = run.steps + args.check_every
            r = shots_evaluation(run.env, agent.predict, args.shots, args.check_episodes,
                                 seed=EVAL_SEED + 1000 * seed + len(self.checks))
            self.checks.append((run.steps, round(r["hit_rate"], 3), r["shots"]))
            self.passed_in_a_row = self.passed_in_a_row + 1 if (
                r["shots"] >= args.shots and r["hit_rate"] >= args.goal) else 0
            if self.passed_in_a_row >= args.confirm:
                self.reached_at = (time.perf_counter() - t_start, run.steps)
                run.stop()

    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            agent = DQNAgent(env.observation_space, env.action_space, config, seed=seed)
            check = GoalCheck()
            run = TrainingRun(env, agent, steps, seed=seed, callbacks=[check])
            deadline = t_start + args.max_seconds
            while not run.done:
                left = deadline - time.perf_counter()
                if left <= 0:
                    run.stop()
                    run.advance(1)  # ends the run (on_training_end) after one more step
                    break
                run.advance(max_seconds=min(left, 5.0))
            train_wall = time.perf_counter() - t_start
            final = shots_evaluation(env, agent.predict, args.shots, args.max_episodes, seed=EVAL_SEED - 1 - seed)
        finally:
            env.close()
    reached = check.reached_at is not None
    return {
        "seed": seed,
        "hit_rate": round(final["hit_rate"], 3),
        "hits": final["hits"],
        "shots": final["shots"],
        "eval_episodes": final["episodes"],
        "goal": final["shots"] >= args.shots and final["hit_rate"] >= args.goal,
        "seconds_to_goal": round(check.reached_at[0], 1) if reached else None,
        "steps_to_goal": check.reached_at[1] if reached else None,
        "steps": run.steps,
        "train_wall_s": round(train_wall, 1),
        "steps_per_s": round(run.steps / max(run.train_seconds, 1e-9)),
        "checks": check.checks,
    }


def worker(args: argparse.Namespace) -> int:
    """Train the seeds of ``--worker-seeds`` one after the other; one JSON line per seed."""
    for seed in (int(s) for s in args.worker_seeds.split(",") if s):
        row = train_seed(seed, args)
        print("SEED " + json.dumps(row), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=10, help="train seeds 0..N-1 (default 10)")
    p.add_argument("--seed-list", default="", help="comma-separated seeds instead of 0..N-1")
    p.add_argument("--max-seconds", type=float, default=300.0, help="wall-time limit per seed (default 300)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default 2: one per core)")
    p.add_argument("--blend", default=str(TANK_BLEND))
    p.add_argument("--tree", default="Tank")
    p.add_argument("--steps", type=int, default=0, help="training steps (default: the Trainer node's)")
    p.add_argument("--goal", type=float, default=0.9, help="hit rate to reach (default 0.9)")
    p.add_argument("--shots", type=int, default=100, help="shots per measurement (default 100)")
    p.add_argument("--check-every", type=int, default=5000, help="steps between goal checks (default 5000)")
    p.add_argument("--confirm", type=int, default=2,
                   help="checks in a row that must pass before a seed stops (default 2)")
    p.add_argument("--check-episodes", type=int, default=10, help="episode cap of a goal check (default 10)")
    p.add_argument("--max-episodes", type=int, default=20, help="episode cap of the final measurement (default 20)")
    p.add_argument("--config", default="", help="JSON object of DQNConfig overrides (experiments)")
    p.add_argument("--worker-seeds", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker_seeds is not None:
        return worker(args)

    seeds = [int(s) for s in args.seed_list.split(",") if s] if args.seed_list else list(range(args.seeds))
    jobs = max(1, min(args.jobs, len(seeds)))
    passthrough = []
    for name in ("max_seconds", "blend", "tree", "steps", "goal", "shots", "check_every", "check_episodes",
                 "confirm", "max_episodes", "config"):
        passthrough += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    t0 = time.perf_counter()
    procs = []
    for j in range(jobs):
        share = ",".join(str(s) for s in seeds[j::jobs])
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker-seeds", share, *passthrough]
        procs.append(subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    rows = []
    for proc in procs:
        out, _ = proc.communicate()
        for line in out.splitlines():
            if line.startswith("SEED "):
                rows.append(json.loads(line[5:]))
        if proc.returncode != 0:
            print(f"tank_training: a worker failed (exit {proc.returncode})", file=sys.stderr)
    rows.sort(key=lambda r: r["seed"])
    reached = sum(1 for r in rows if r["goal"])
    print(json.dumps({
        "bench": "tank_training",
        "goal": f"greedy hit rate >= {args.goal:.0%} over {args.shots} shots within {args.max_seconds:.0f} s",
        "seeds": [r["seed"] for r in rows],
        "hit_rates": [r["hit_rate"] for r in rows],
        "seconds_to_goal": [r["seconds_to_goal"] for r in rows],
        "steps_to_goal": [r["steps_to_goal"] for r in rows],
        "steps": [r["steps"] for r in rows],
        "seeds_at_goal": reached,
        "seeds_total": len(seeds),
        "passed": reached >= 0.8 * len(seeds) and len(rows) == len(seeds),
        "per_seed": rows,
        "jobs": jobs,
        "wall_s": round(time.perf_counter() - t0, 1),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }))
    return 0 if len(rows) == len(seeds) else 1


if __name__ == "__main__":
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main())
