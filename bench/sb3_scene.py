"""Bench: Stable-Baselines3's DQN trains the tank of ``scenes/tank/tank.blend`` through its camera, via
``gymnasium.make("drla/Scene-v0", ...)`` (issue 25): steps/s and the greedy policy's hit rate.

The tree's observation is what the tank's own camera sees (19 x 11 black/white pixels), its score and its cannon
pitch; its eight actions move, turn, pitch and fire. SB3's DQN gets the tree's DQN settings (``TANK_DQN`` of the
add-on's examples: learning rate 1e-3, gamma 0.95, train every 4 steps, target network every 500, an MLP of 128 and
64, replay 50,000, batch 64, learning from step 1000, epsilon 1 -> 0.05 over 40 % of the run), so the figure
compares trainers on one scene, not settings. Prints, one per line: the environment alone (random actions, no
learning) in steps/s; training in steps/s; then greedy play over ``--eval-episodes`` episodes (evaluation seeds
never trained on): shots fired, hits, hit rate, mean return. ``--steps`` (default 20,000) steps of training; the
DRLA DQN of ``drla train scenes/tank/tank.blend`` is ``bench/tank_training.py``.

Run: ``.venv/bin/python bench/sb3_scene.py [--steps 20000] [--seed 0] [--eval-episodes 20]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gymnasium
import numpy as np

import drla.gym  # noqa: F401  (registers drla/Scene-v0)

TANK = Path(__file__).resolve().parents[1] / "scenes" / "tank" / "tank.blend"
EVAL_SEED = 50_000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-episodes", type=int, default=20)
    p.add_argument("--raw-steps", type=int, default=2000, help="random-action steps for the env-only figure")
    args = p.parse_args()

    import torch
    from stable_baselines3 import DQN

    torch.set_num_threads(1)
    env = gymnasium.make("drla/Scene-v0", blend=str(TANK), tree="Tank")
    try:
        env.reset(seed=args.seed)
        env.action_space.seed(args.seed)
        t0 = time.perf_counter()
        for _ in range(args.raw_steps):
            *_, term, trunc, _ = env.step(env.action_space.sample())
            if term or trunc:
                env.reset()
        raw = args.raw_steps / (time.perf_counter() - t0)
        print(f"env alone (random actions): {raw:.0f} steps/s")

        model = DQN("MlpPolicy", env, seed=args.seed, device="cpu", learning_rate=1e-3, gamma=0.95, train_freq=4,
                    gradient_steps=1, target_update_interval=500, buffer_size=50_000, batch_size=64,
                    learning_starts=1000, exploration_initial_eps=1.0, exploration_final_eps=0.05,
                    exploration_fraction=0.4, max_grad_norm=10.0, policy_kwargs={"net_arch": [128, 64]})
        t0 = time.perf_counter()
        model.learn(args.steps)
        wall = time.perf_counter() - t0
        print(f"SB3 DQN training: {args.steps} steps in {wall:.1f} s, {args.steps / wall:.0f} steps/s")

        shots = hits = 0
        returns = []
        for episode in range(args.eval_episodes):
            obs, _ = env.reset(seed=EVAL_SEED + episode)
            total, done = 0.0, False
            while not done:
                action, _ = model.predict(obs, deterministic=True)
                obs, reward, term, trunc, info = env.step(action)
                total += reward
                done = term or trunc
                if "hit" in info:
                    shots += 1
                    hits += int(info["hit"])
            returns.append(total)
        rate = f"{hits / shots:.1%}" if shots else "n/a (no shot fired)"
        print(f"greedy play, {args.eval_episodes} episodes: {shots} shots, {hits} hits, hit rate {rate}, "
              f"mean return {np.mean(returns):.2f}")
    finally:
        env.close()


if __name__ == "__main__":
    main()
