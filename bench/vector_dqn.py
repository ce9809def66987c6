"""DQN on CartPole with N = 1, 4, 16 copies (SyncVectorEnv): speed, and learning per environment step.

Prints ONE JSON line (per-seed rows go to stderr). Every N uses the same DQNConfig (the rl-zoo
CartPole settings of bench/dqn_cartpole.py) with no retuning: DQNAgent.observe_batch counts
environment steps for epsilon, learning_starts, train_freq and target updates, so N copies do the
same gradient steps per env step as one copy (gradient_steps / train_freq = 0.5): N / 256 phases of
128 gradient steps per vector step on average. What N changes: one network call acts for N copies,
and the data of a phase comes from N shorter stretches of experience instead of one.

Figures per N: ``train_steps_per_s`` (env steps summed over copies per second of training, updates
included, evaluations excluded; median over seeds), ``act_step_steps_per_s`` (acting + stepping only,
no learning: what batching the network call buys; best of 3), each also per CPU second of this process
(``..._per_cpu_s``: what other processes on a busy machine do not inflate), ``first_solve_steps``
(env steps at the first greedy evaluation, on one separate CartPole, with mean return >= 475; None
when not solved) and its median over seeds. A run stops at its first solve.

    .venv/bin/python bench/vector_dqn.py [--quick] [--seeds 0 1 2] [--copies 1 4 16] [--steps 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from drla_core.rl.dqn import DQNAgent, DQNConfig  # noqa: E402
from drla_core.envs.cartpole import CartPole  # noqa: E402
from drla_core.rl.train import Callback, TrainingRun  # noqa: E402
from drla_core.rl.vector_train import VectorTrainingRun
from drla_core.base.vector_env import SyncVectorEnv  # noqa: E402

SOLVED = 475.0


class StopAtSolve(Callback):
    """Record the first evaluation reaching SOLVED and stop the run there."""

    def __init__(self) -> None:
        self.step: int | None = None

    def on_eval(self, run: TrainingRun) -> None:
        step, mean_return, _ = run.history.evals[-1]
        if self.step is None and mean_return >= SOLVED:
            self.step = step

    def on_step(self, run: TrainingRun) -> bool:
        return self.step is None


def train_seed(n: int, seed: int, steps: int, eval_interval: int, eval_episodes: int) -> dict:
    venv = SyncVectorEnv([CartPole] * n)
    agent = DQNAgent(venv.single_observation_space, venv.single_action_space, DQNConfig(), seed=seed)
    solve = StopAtSolve()
    run = VectorTrainingRun(venv, agent, steps, seed=seed, eval_env=CartPole(), eval_interval=eval_interval,
                            eval_episodes=eval_episodes, callbacks=[solve])
    run.run()
    return {"copies": n, "seed": seed, "steps": run.steps, "first_solve_steps": solve.step,
            "train_s": run.train_seconds, "train_steps_per_s": run.steps / run.train_seconds,
            "train_steps_per_cpu_s": run.steps / run.train_cpu_seconds,
            "gradient_steps": agent.n_updates, "gradient_steps_per_env_step": agent.n_updates / run.steps}


def act_step_rate(n: int, env_steps: int = 40_000, repeats: int = 3) -> tuple[float, float]:
    """Env steps per second acting (epsilon-greedy, one network call per vector step) and stepping, no learning:
    (per wall second, per CPU second of this process), each the best of ``repeats``."""
    venv = SyncVectorEnv([CartPole] * n)
    agent = DQNAgent(venv.single_observation_space, venv.single_action_space, DQNConfig(), seed=0)
    agent.epsilon = 0.05
    obs, _ = venv.reset(seed=0)
    calls = env_steps // n
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(calls):
            obs, *_ = venv.step(agent.act_batch(obs))
        wall.append(calls * n / (time.perf_counter() - t0))
        cpu.append(calls * n / max(time.process_time() - c0, 1e-9))
    return max(wall), max(cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, 30k steps, 5-episode evaluations")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--steps", type=int, default=50_000, help="env steps (summed over copies) per run at most")
    parser.add_argument("--eval-interval", type=int, default=1024)
    parser.add_argument("--eval-episodes", type=int, default=10)
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.steps, args.eval_episodes = args.seeds[:2], min(args.steps, 30_000), 5

    load_before = os.getloadavg()[0]
    per_n = {}
    rows = []
    for n in args.copies:
        seed_rows = [train_seed(n, s, args.steps, args.eval_interval, args.eval_episodes) for s in args.seeds]
        for r in seed_rows:
            print(json.dumps(r), file=sys.stderr)
        rows += seed_rows
        solves = [r["first_solve_steps"] for r in seed_rows]
        solved = [s for s in solves if s is not None]
        act_wall, act_cpu = act_step_rate(n)
        per_n[str(n)] = {
            "train_steps_per_s": round(statistics.median(r["train_steps_per_s"] for r in seed_rows)),
            "train_steps_per_cpu_s": round(statistics.median(r["train_steps_per_cpu_s"] for r in seed_rows)),
            "act_step_steps_per_s": round(act_wall),
            "act_step_steps_per_cpu_s": round(act_cpu),
            "first_solve_steps": solves,
            "median_first_solve_steps": statistics.median(solved) if len(solved) == len(solves) else None,
            "solved": f"{len(solved)}/{len(solves)}",
            "gradient_steps_per_env_step": round(float(np.mean([r["gradient_steps_per_env_step"] for r in seed_rows])),
                                                 4),
        }
    print(json.dumps({
        "bench": "vector_dqn", "env": "CartPole", "seeds": args.seeds, "max_steps": args.steps,
        "eval": {"interval_env_steps": args.eval_interval, "episodes": args.eval_episodes, "solved_at": SOLVED},
        "config": "DQNConfig() defaults (rl-zoo CartPole), the same for every N",
        "copies": per_n,
        "load_avg_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "note": "2-core machine shared with other jobs: timings are noisy",
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
