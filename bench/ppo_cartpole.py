"""PPO on CartPole-v1, DRLA against Stable-Baselines3, side by side in one run, with rl-zoo's CartPole settings.

Protocol (both): 8 copies, n_steps 32, batch 256, gae_lambda 0.8, gamma 0.98, 20 epochs, ent_coef 0, learning rate
linear from 1e-3, clip range linear from 0.2, a 2x64 tanh actor and critic (SB3's MlpPolicy and its defaults:
orthogonal init, Adam eps 1e-5, max_grad_norm 0.5, vf_coef 0.5, advantages normalised per minibatch), at most
1e5 steps. Every ``--check-every`` environment steps (after that many steps' updates) the greedy policy plays 20
CartPole episodes (DRLA's CartPole, equal to Gymnasium's CartPole-v1 bit for bit; the same seeds for both); a
mean of 475 is solved and ends the run. DRLA trains on ``SyncVectorEnv`` of its CartPole (what ``drla train
cartpole --agent ppo`` runs), SB3 on ``make_vec_env("CartPole-v1", n_envs=8)`` (DummyVecEnv). Both run with one
thread (torch.set_num_threads(1), OPENBLAS_NUM_THREADS=1). Each run is its own process: the wall time is the whole
process (start, imports, training, checks) until the threshold or the step budget.

Steps to the threshold: both sides give the same count for a seed on every run, and the counts spread widely over
seeds (standard deviation about 7,000 steps, 2,048 to 36,864), so a 10-seed median moves by a few thousand steps
with the seeds drawn (seeds 0-9: DRLA 14,336, SB3 11,264; seeds 0-49: DRLA 12,288, SB3 14,336). One update is SB3's to
float32 rounding from the same weights and rollout (``tests/test_ppo_fast.py``); compare over many seeds
(``--seeds 10 --first-seed 10`` adds ten more).

Also: the time of one update epoch over 2048 transitions (8 copies x 256 steps) of the 2x64 network, minibatches
of 64 (SB3's default) and of 256, DRLA (``bench/ppo_epoch.py``'s measurement) and SB3 (``PPO.train`` with n_epochs 1
on a full rollout buffer): median wall and CPU (``time.process_time``) ms, one BLAS / torch thread.

Prints ONE JSON line of figures (per-seed lines go to stderr).

    .venv/bin/python bench/ppo_cartpole.py [--seeds 10] [--steps 100000] [--check-every 2048] [--skip-sb3]
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

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

THRESHOLD = 475.0
EVAL_EPISODES = 20
EVAL_SEED = 10_000
ZOO = dict(n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0)


def greedy_mean(act_batch) -> float:
    """The mean return of 20 greedy CartPole episodes, played together (one batched policy call per step)."""
    from drla_core.envs.cartpole import CartPole

    envs = [CartPole() for _ in range(EVAL_EPISODES)]
    obs = np.stack([env.reset(seed=EVAL_SEED + i)[0] for i, env in enumerate(envs)])
    live = np.ones(EVAL_EPISODES, dtype=bool)
    returns = np.zeros(EVAL_EPISODES)
    while live.any():
        rows = np.flatnonzero(live)
        actions = act_batch(obs[rows])
        for row, action in zip(rows, actions):
            obs[row], reward, terminated, truncated, _ = envs[row].step(int(action))
            returns[row] += reward
            if terminated or truncated:
                live[row] = False
    return float(returns.mean())


# ---- one run, in its own process ---------------------------------------------------------------------------


def child_drla(seed: int, steps: int, check_every: int) -> dict:
    from drla_core.base.vector_env import SyncVectorEnv
    from drla_core.envs.cartpole import CartPole
    from drla_core.rl.ppo import PPOAgent, PPOConfig
    from drla_core.rl.train import Callback
    from drla_core.rl.vector_train import VectorTrainingRun

    venv = SyncVectorEnv([CartPole] * 8)
    config = PPOConfig(**ZOO, learning_rate=1e-3, lr_schedule="linear", clip_range=0.2, clip_schedule="linear",
                       hidden=[(64, "tanh"), (64, "tanh")])
    agent = PPOAgent(venv.single_observation_space, venv.single_action_space, config, seed=seed)
    found: dict = {"solved_at": None, "checks": []}

    class Check(Callback):
        next = check_every

        def on_step(self, run):
            if run.steps < self.next:
                return None
            self.next += check_every
            mean = greedy_mean(lambda obs: agent.act_batch(obs, explore=False))
            found["checks"].append((run.steps, mean))
            if mean >= THRESHOLD:
                found["solved_at"] = run.steps
                return False
            return None

    run = VectorTrainingRun(venv, agent, steps, seed=seed, callbacks=[Check()])
    run.run()
    return {**found, "steps": run.steps, "train_seconds": run.train_seconds}


def child_sb3(seed: int, steps: int, check_every: int) -> dict:
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
    model = PPO("MlpPolicy", env, **ZOO, learning_rate=lambda p: 1e-3 * p, clip_range=lambda p: 0.2 * p, seed=seed,
                device="cpu", verbose=0)
    found: dict = {"solved_at": None, "checks": []}

    def act_batch(obs):
        return model.predict(obs, deterministic=True)[0]

    class Check(BaseCallback):
        """Checks at a rollout's start: after the previous rollout's update, as DRLA's check after its update."""

        next = check_every
        stop = False

        def _on_rollout_start(self) -> None:
            if self.num_timesteps >= self.next:
                self.next += check_every
                mean = greedy_mean(act_batch)
                found["checks"].append((self.num_timesteps, mean))
                if mean >= THRESHOLD:
                    found["solved_at"] = self.num_timesteps
                    self.stop = True

        def _on_step(self) -> bool:
            return not self.stop

    t0 = time.perf_counter()
    model.learn(steps, callback=Check())
    if found["solved_at"] is None and model.num_timesteps >= steps:  # the final policy, checked once more
        mean = greedy_mean(act_batch)
        found["checks"].append((model.num_timesteps, mean))
        if mean >= THRESHOLD:
            found["solved_at"] = model.num_timesteps
    return {**found, "steps": int(model.num_timesteps), "train_seconds": time.perf_counter() - t0}


def run_child(which: str, seed: int, steps: int, check_every: int) -> dict:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", which, "--seed", str(seed), "--steps", str(steps),
                          "--check-every", str(check_every)], capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{which} seed {seed} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_seconds"] = wall
    return result


# ---- one update epoch over 2048 transitions ----------------------------------------------------------------


def epoch_drla(batch_size: int, repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of one DRLA epoch (``bench/ppo_epoch.py``'s measurement)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from ppo_epoch import epoch_times

    walls, cpus, _ = epoch_times(batch_size, repeats)
    return statistics.median(walls), statistics.median(cpus)


def epoch_sb3(batch_size: int, repeats: int) -> tuple[float, float]:
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=8, seed=0), n_steps=256, batch_size=batch_size,
                n_epochs=1, device="cpu", verbose=0, seed=0)
    model.learn(2048)  # fills the rollout buffer (2048 transitions) and trains once
    walls, cpus = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        model.train()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus)


# ---- the whole bench ---------------------------------------------------------------------------------------


def summary(results: list[dict]) -> dict:
    solved = [r for r in results if r["solved_at"] is not None]
    return {
        "solved": len(solved), "of": len(results),
        "median_wall_seconds": round(statistics.median(r["wall_seconds"] for r in results), 2),
        "mean_wall_seconds": round(statistics.mean(r["wall_seconds"] for r in results), 2),
        "median_steps_to_threshold": statistics.median(r["solved_at"] for r in solved) if solved else None,
        "mean_steps_to_threshold": round(statistics.mean(r["solved_at"] for r in solved)) if solved else None,
        "per_seed": [{"seed": r["seed"], "solved_at": r["solved_at"], "wall_seconds": round(r["wall_seconds"], 2)}
                     for r in results],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--check-every", type=int, default=2048)
    parser.add_argument("--skip-sb3", action="store_true", help="DRLA only (the SB3 figures are then absent)")
    parser.add_argument("--epoch-repeats", type=int, default=30)
    parser.add_argument("--child", choices=("drla", "sb3"), help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        fn = child_drla if args.child == "drla" else child_sb3
        print(json.dumps({"seed": args.seed, **fn(args.seed, args.steps, args.check_every)}))
        return

    figures: dict = {"bench": "ppo_cartpole", "threshold": THRESHOLD, "eval_episodes": EVAL_EPISODES,
                     "steps": args.steps, "check_every": args.check_every, "settings": "rl-zoo CartPole-v1", **ZOO,
                     "learning_rate": "linear 1e-3", "clip_range": "linear 0.2"}
    impls = ("drla",) if args.skip_sb3 else ("drla", "sb3")
    results: dict[str, list[dict]] = {impl: [] for impl in impls}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for impl in impls:  # interleaved, so a change in the machine's load falls on both
            r = run_child(impl, seed, args.steps, args.check_every)
            results[impl].append(r)
            print(f"{impl:4s} seed {seed}: solved at {r['solved_at']} steps, {r['wall_seconds']:.1f} s whole process "
                  f"({r['train_seconds']:.1f} s learning)", file=sys.stderr, flush=True)
    for impl in impls:
        figures[impl] = summary(results[impl])
    if "sb3" in figures and figures["drla"]["median_wall_seconds"] > 0:
        figures["wall_ratio_sb3_over_drla"] = round(figures["sb3"]["median_wall_seconds"]
                                                    / figures["drla"]["median_wall_seconds"], 2)
    epoch: dict = {}
    for impl in impls:
        for b in (64, 256):
            wall, cpu = (epoch_drla(b, args.epoch_repeats) if impl == "drla"
                         else epoch_sb3(b, max(args.epoch_repeats // 3, 3)))
            epoch[f"{impl}_batch{b}_ms"] = {"wall": round(1000 * wall, 2), "cpu": round(1000 * cpu, 2)}
    figures["load_average"] = [round(x, 2) for x in os.getloadavg()]
    figures["update_epoch_2048_transitions_2x64"] = epoch
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
