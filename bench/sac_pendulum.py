"""SAC on the pendulum: DRLA's numpy SAC against Stable-Baselines3's SAC with the rl-zoo Pendulum-v1 settings.

Prints ONE JSON line of figures (per-run lines, with their evaluations, go to stderr). Every run is its own
process (``--worker``), so the wall time is the whole process's: Python and library start-up, building, training,
evaluations and the last one; its CPU time (``cpu_s``, the same span) is printed beside it, steadier than wall time
on a shared machine.

Protocol, both sides: 20 000 environment steps (rl-zoo's n_timesteps); a greedy evaluation of 10 episodes every
1000 steps (seeded 10 000 + seed, time measured and reported apart); at the end the final policy's greedy mean of
10 episodes ("return"). The threshold is SB3's mean final return over the seeds; "steps_to_threshold" is the first
evaluation step whose mean reaches it (None: never).

* SB3: ``SAC("MlpPolicy", gymnasium.make("Pendulum-v1"), learning_rate=1e-3)``, everything else SB3's defaults,
  which is rl-zoo's hyperparams/sac.yml entry (n_timesteps 20000, learning_rate 1e-3): 2x256 networks, batch 256,
  buffer 1e6, learning_starts 100, tau 0.005, gamma 0.99, train_freq 1, gradient_steps 1, ent_coef auto (from 1),
  target entropy -1; on the CPU with ``--torch-threads`` threads (default 1: on a shared machine more threads
  only wait on each other; 0 keeps torch's default).
* DRLA: ``drla_core.rl.sac.SACConfig()`` defaults, which differ from those in the network (2x64 relu) and buffer
  (100 000) only; numpy with one BLAS thread; keep-best on (the final policy is the best of the evaluations above,
  as DRLA's CLI gives it), named in "choices". Its evaluations play the same episodes as SB3's.

    .venv/bin/python bench/sac_pendulum.py [--seeds 3] [--first-seed 0] [--steps 20000] [--only drla|sb3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVAL_EVERY, EVAL_EPISODES, EVAL_SEED = 1000, 10, 10_000


def worker_drla(seed: int, steps: int, hidden: int = 0) -> dict:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.path.insert(0, str(ROOT))
    from drla_core.envs import make
    from drla_core.nn.mlp import LayerSpec
    from drla_core.rl.sac import SACAgent, SACConfig
    from drla_core.rl.train import Callback, TrainingRun

    def greedy(agent: SACAgent) -> float:
        """The same episodes as SB3's evaluations (the pendulum is Pendulum-v1 step for step)."""
        env, returns = make("pendulum"), []
        for k in range(EVAL_EPISODES):
            obs, _ = env.reset(seed=EVAL_SEED + seed + k)
            total, done = 0.0, False
            while not done:
                obs, reward, terminated, truncated, _ = env.step(agent.predict(obs))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        return sum(returns) / len(returns)

    class Evals(Callback):
        """Every EVAL_EVERY steps: the greedy mean, fed to keep-best as the run's own evaluations would be."""

        def __init__(self) -> None:
            self.evals: list[tuple[int, float]] = []
            self.seconds = 0.0

        def on_step(self, run: TrainingRun) -> None:
            if run.steps % EVAL_EVERY == 0:
                t0 = time.perf_counter()
                self.evals.append((run.steps, greedy(run.agent)))
                run.agent.on_evaluation(run.steps, self.evals[-1][1])
                self.seconds += time.perf_counter() - t0

    env = make("pendulum")
    config = SACConfig() if not hidden else SACConfig(hidden=[LayerSpec(hidden, "relu"), LayerSpec(hidden, "relu")])
    agent = SACAgent(env.observation_space, env.action_space, config, seed=seed)
    evals = Evals()
    run = TrainingRun(env, agent, steps, seed=seed, callbacks=[evals])
    run.run()  # at the end keep-best puts the best evaluated policy back
    t0 = time.perf_counter()
    final = greedy(agent)
    return {"evals": evals.evals, "return": final, "eval_s": evals.seconds + time.perf_counter() - t0,
            "train_s": run.train_seconds}


def worker_sb3(seed: int, steps: int, threads: int) -> dict:
    import gymnasium as gym
    import numpy as np
    import torch

    if threads:
        torch.set_num_threads(threads)
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback

    def greedy(model: SAC, episodes: int, seed: int) -> float:
        env = gym.make("Pendulum-v1")
        returns = []
        for k in range(episodes):
            obs, _ = env.reset(seed=seed + k)
            total, done = 0.0, False
            while not done:
                action, _ = model.predict(obs, deterministic=True)
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        return float(np.mean(returns))

    class Evals(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.evals: list[tuple[int, float]] = []
            self.seconds = 0.0

        def _on_step(self) -> bool:
            if self.num_timesteps % EVAL_EVERY == 0:
                t0 = time.perf_counter()
                self.evals.append((self.num_timesteps, greedy(self.model, EVAL_EPISODES, EVAL_SEED + seed)))
                self.seconds += time.perf_counter() - t0
            return True

    callback = Evals()
    t0 = time.perf_counter()
    model = SAC("MlpPolicy", gym.make("Pendulum-v1"), learning_rate=1e-3, seed=seed, device="cpu", verbose=0)
    model.learn(steps, callback=callback)
    train_s = time.perf_counter() - t0 - callback.seconds
    t0 = time.perf_counter()
    final = greedy(model, EVAL_EPISODES, EVAL_SEED + seed)
    return {"evals": callback.evals, "return": final, "eval_s": callback.seconds + time.perf_counter() - t0,
            "train_s": train_s, "torch_threads": torch.get_num_threads()}


def run_one(impl: str, seed: int, steps: int, threads: int, hidden: int = 0) -> dict:
    """One run in its own process: its figures and its whole wall time."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--worker", impl, "--seed", str(seed), "--steps", str(steps),
                          "--torch-threads", str(threads), "--drla-hidden", str(hidden)],
                         capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{impl} seed {seed} failed:\n{out.stderr}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result.update(impl=impl, seed=seed, wall_s=wall)
    print(json.dumps(result), file=sys.stderr, flush=True)
    return result


def first_reaching(evals: list, threshold: float) -> int | None:
    return next((int(s) for s, r in evals if r >= threshold), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--only", choices=("drla", "sb3"))
    parser.add_argument("--threshold", type=float, help="the return to reach (default: SB3's mean final return, "
                        "or -200 with --only drla)")
    parser.add_argument("--torch-threads", type=int, default=1, help="SB3's torch threads (0: torch's default)")
    parser.add_argument("--drla-hidden", type=int, default=0,
                        help="DRLA's two hidden layers' width (default 0: SACConfig()'s 64; SB3's is 256)")
    parser.add_argument("--worker", choices=("drla", "sb3"), help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        result = worker_drla(args.seed, args.steps, args.drla_hidden) if args.worker == "drla" else \
            worker_sb3(args.seed, args.steps, args.torch_threads)
        result["cpu_s"] = time.process_time()  # the whole process's CPU time (imports included): on a busy
        print(json.dumps(result))               # machine a steadier figure than the wall time
        return
    impls = [args.only] if args.only else ["sb3", "drla"]
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    runs = {impl: [run_one(impl, seed, args.steps, args.torch_threads, args.drla_hidden) for seed in seeds]
            for impl in impls}
    threshold = args.threshold if args.threshold is not None else \
        statistics.mean(r["return"] for r in runs["sb3"]) if "sb3" in runs else -200.0
    figures: dict = {"bench": "sac_pendulum", "steps": args.steps, "seeds": args.seeds, "threshold": threshold,
                     "torch_threads": args.torch_threads,
                     "threshold_from": "--threshold" if args.threshold is not None else "SB3's mean final return"
                     if "sb3" in runs else "fixed -200",
                     "choices": {"drla": "SACConfig() defaults: 2x64 relu, buffer 100000, keep-best on" + (
                                 f"; hidden 2x{args.drla_hidden}" if args.drla_hidden else ""),
                                 "sb3": "rl-zoo Pendulum-v1: learning_rate 1e-3, SB3 defaults (2x256)"}}
    for impl, rs in runs.items():
        reached = [first_reaching(r["evals"], threshold) for r in rs]
        figures[impl] = {
            "return_mean": statistics.mean(r["return"] for r in rs), "returns": [round(r["return"], 1) for r in rs],
            "wall_s_median": statistics.median(r["wall_s"] for r in rs),
            "wall_s_minus_evals_median": statistics.median(r["wall_s"] - r["eval_s"] for r in rs),
            "train_s_median": statistics.median(r["train_s"] for r in rs),
            "cpu_s_median": statistics.median(r["cpu_s"] for r in rs),
            "steps_to_threshold": reached,
            "reached": sum(s is not None for s in reached),
        }
    if len(runs) == 2:
        figures["wall_speedup"] = figures["sb3"]["wall_s_median"] / figures["drla"]["wall_s_median"]
        figures["wall_minus_evals_speedup"] = (figures["sb3"]["wall_s_minus_evals_median"]
                                               / figures["drla"]["wall_s_minus_evals_median"])
        figures["cpu_speedup"] = figures["sb3"]["cpu_s_median"] / figures["drla"]["cpu_s_median"]
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
