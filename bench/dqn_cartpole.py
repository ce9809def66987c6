"""DQN on CartPole-v1 with the rl-zoo settings: speed and sample efficiency over several seeds.

Prints ONE JSON line of figures (per-seed tables go to stderr). Protocol: lr 2.3e-3, batch 64,
buffer 100k, learning_starts 1000, gamma 0.99, target_update_interval 10 (env steps),
train_freq 256, gradient_steps 128, exploration_fraction 0.16, final epsilon 0.04, a 2x64 relu
network, 50k steps; a 20-episode greedy evaluation every 512 steps whose time is excluded.
What differs from SB3's DQN is named in the JSON ("choices"): the MSE loss (SB3: Huber) and
keep-best (the best-evaluated parameters are restored at the end, then evaluated once more: that
final evaluation is "final_eval"); the target is plain DQN's (double DQN off). Timings exclude
evaluation and are medians over seeds; per-seed lists are under "per_seed".

    .venv/bin/python bench/dqn_cartpole.py [--seeds 10] [--steps 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

# Small matrices: one BLAS thread is fastest, and Blender's numpy runs beside Blender's own threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drla_core.rl.dqn import DQNAgent, DQNConfig  # noqa: E402
from drla_core.envs.cartpole import CartPole  # noqa: E402
from drla_core.rl.train import Callback, TrainingRun  # noqa: E402

SOLVED = 475.0


def protocol_config() -> DQNConfig:
    """The rl-zoo CartPole-v1 DQN settings (2x64 network); the remaining fields are DQNConfig's defaults."""
    return DQNConfig(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1000, gamma=0.99,
                     target_update_interval=10, train_freq=256, gradient_steps=128, exploration_fraction=0.16,
                     exploration_initial_eps=1.0, exploration_final_eps=0.04, hidden=[(64, "relu"), (64, "relu")])


class FirstSolve(Callback):
    """Record the first evaluation whose mean return reaches SOLVED: its step and training seconds."""

    def __init__(self) -> None:
        self.step: int | None = None
        self.seconds: float | None = None
        self.cpu_seconds: float | None = None

    def on_eval(self, run: TrainingRun) -> None:
        step, mean_return, _ = run.history.evals[-1]
        if self.step is None and mean_return >= SOLVED:
            self.step, self.seconds, self.cpu_seconds = step, run.train_seconds, run.train_cpu_seconds


def run_seed(seed: int, steps: int, eval_interval: int, eval_episodes: int, config: DQNConfig) -> dict:
    env, eval_env = CartPole(), CartPole()
    agent = DQNAgent(env.observation_space, env.action_space, config, seed=seed)
    update_seconds = [0.0, 0.0]  # wall, CPU
    update = agent.update

    def timed_update(gradient_steps: int | None = None) -> float:
        t0, c0 = time.perf_counter(), time.process_time()
        loss = update(gradient_steps)
        update_seconds[0] += time.perf_counter() - t0
        update_seconds[1] += time.process_time() - c0
        return loss

    agent.update = timed_update  # type: ignore[method-assign]
    first = FirstSolve()
    run = TrainingRun(env, agent, steps, seed=seed, eval_env=eval_env, eval_interval=eval_interval,
                      eval_episodes=eval_episodes, callbacks=[first]).run()
    final = run.history.final_eval[1] if run.history.final_eval else float("nan")
    return {
        "seed": seed,
        "train_s": run.train_seconds,
        "eval_s": run.eval_seconds,
        "updates": agent.n_updates,
        "us_per_update": 1e6 * update_seconds[0] / max(agent.n_updates, 1),
        "env_steps_per_s": run.steps / run.train_seconds,
        "first_solve_step": first.step,
        "first_solve_s": first.seconds,
        "cpu_train_s": run.train_cpu_seconds,
        "cpu_us_per_update": 1e6 * update_seconds[1] / max(agent.n_updates, 1),
        "cpu_first_solve_s": first.cpu_seconds,
        "final_eval": final,
        "best_eval": max((m for _, m, _ in run.history.evals), default=float("nan")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="number of seeds (0 .. N-1)")
    parser.add_argument("--steps", type=int, default=50_000, help="environment steps per seed")
    parser.add_argument("--eval-interval", type=int, default=512)
    parser.add_argument("--eval-episodes", type=int, default=20)
    args = parser.parse_args(argv)

    config = protocol_config()
    load_before = os.getloadavg()[0]
    rows = []
    for seed in range(args.seeds):
        row = run_seed(seed, args.steps, args.eval_interval, args.eval_episodes, config)
        rows.append(row)
        print(f"seed {seed}: train {row['train_s']:.2f} s ({row['env_steps_per_s']:.0f} steps/s, "
              f"{row['us_per_update']:.0f} us/update; CPU {row['cpu_train_s']:.2f} s, "
              f"{row['cpu_us_per_update']:.0f} us/update), first solve "
              f"{row['first_solve_step']} steps / {row['first_solve_s'] and round(row['first_solve_s'], 2)} s, "
              f"final eval {row['final_eval']:.1f}, eval time {row['eval_s']:.1f} s", file=sys.stderr)

    solved = [r for r in rows if r["first_solve_step"] is not None]
    med = statistics.median
    figures = {
        "bench": "dqn_cartpole",
        "seeds": args.seeds,
        "steps": args.steps,
        "eval": {"interval": args.eval_interval, "episodes": args.eval_episodes, "solved_at": SOLVED,
                 "time_excluded": True},
        "choices": {"double_dqn": config.double_dqn, "loss": config.loss, "keep_best": config.keep_best,
                    "max_grad_norm": config.max_grad_norm, "init": "He uniform (relu), Xavier uniform (linear)"},
        "us_per_update": round(med(r["us_per_update"] for r in rows), 1),
        "env_steps_per_s": round(med(r["env_steps_per_s"] for r in rows)),
        "wall_s": round(med(r["train_s"] for r in rows), 3),
        "wall_s_max": round(max(r["train_s"] for r in rows), 3),
        "solved_seeds": len(solved),
        "median_first_solve_s": round(med(r["first_solve_s"] for r in solved), 3) if solved else None,
        "median_first_solve_steps": med(r["first_solve_step"] for r in solved) if solved else None,
        "final_solved_seeds": sum(r["final_eval"] >= SOLVED for r in rows),
        "cpu": {  # CPU time of the process: what the run costs when it has a core to itself
            "us_per_update": round(med(r["cpu_us_per_update"] for r in rows), 1),
            "env_steps_per_s": round(med(args.steps / r["cpu_train_s"] for r in rows)),
            "wall_s": round(med(r["cpu_train_s"] for r in rows), 3),
            "median_first_solve_s": round(med(r["cpu_first_solve_s"] for r in solved), 3) if solved else None,
        },
        "load_avg_1min": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        "cpus": os.cpu_count(),
        "per_seed": {
            "first_solve_step": [r["first_solve_step"] for r in rows],
            "first_solve_s": [None if r["first_solve_s"] is None else round(r["first_solve_s"], 3) for r in rows],
            "final_eval": [round(r["final_eval"], 1) for r in rows],
            "train_s": [round(r["train_s"], 3) for r in rows],
            "cpu_train_s": [round(r["cpu_train_s"], 3) for r in rows],
            "cpu_first_solve_s": [None if r["cpu_first_solve_s"] is None else round(r["cpu_first_solve_s"], 3)
                                  for r in rows],
        },
        "targets": {"us_per_update": 120, "wall_s": 4.0, "median_first_solve_s": 2.0, "solved_seeds": args.seeds,
                    "final_solved_seeds": max(0, args.seeds - 2 * args.seeds // 10)},
    }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
