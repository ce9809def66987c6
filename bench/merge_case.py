"""The merge case of bench/networks.py: two tank arenas trained separately, one network distilled from both.

Arena A is ``TankGrid(width=6, depth=6)``; arena B is a smaller ``TankGrid(width=4, depth=5,
elevations=4)`` (a narrower, shorter arena with a longer cannon), whose camera picture is placed
in A's picture frame (``Framed``: the same cells at the same offsets from the tank, so one network
reads both). A DQN teacher trains on each (same settings as ``drla train tank_grid``), each records
states in its own arena, one student is distilled from both, and every network plays both arenas.

``merged_score_ratio``: per arena, the student's mean return over its teacher's (greedy, the same
evaluation episodes); ``merge_distill_s``: the distillation's wall time (recording the states included).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drla_core.rl.dqn import DQNAgent, DQNConfig  # noqa: E402
from drla_core.base.env import Env  # noqa: E402
from drla_core.envs.tank_grid import TankGrid  # noqa: E402
from drla_core.nets.merge import distill, greedy_actions, record_states  # noqa: E402
from drla_core.base.spaces import Box  # noqa: E402
from drla_core.rl.train import TrainingRun, evaluate  # noqa: E402

TANK_SETTINGS = {"learning_rate": 1e-3, "train_freq": 4, "gradient_steps": 1, "target_update_interval": 500,
                 "exploration_fraction": 0.3, "exploration_final_eps": 0.02, "learning_starts": 1000}


class Framed(Env):
    """A TankGrid whose tank-camera picture is drawn in a larger arena's picture frame (zeros around it)."""

    def __init__(self, inner: TankGrid, frame: TankGrid) -> None:
        self.inner, self.frame = inner, frame
        self.observation_space = Box(0.0, 1.0, frame.observation_space.shape, np.float32)
        self.action_space = inner.action_space
        self.task_metric = inner.task_metric
        self.rows, self.cols = frame.picture_shape
        self.dr, self.dc = frame.depth - inner.depth, frame.width - inner.width

    def _frame(self, obs: np.ndarray) -> np.ndarray:
        h, w = self.inner.picture_shape
        pic = obs[:-1].reshape(h, w)
        out = np.zeros((self.rows, self.cols), dtype=np.float32)
        cells = pic[:-1, :2 * self.inner.width - 1]
        out[self.dr:self.dr + cells.shape[0], self.dc:self.dc + cells.shape[1]] = cells
        out[-1, :w] = pic[-1]  # the cannon gauge, from the left
        return np.append(out.ravel(), obs[-1]).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        obs, info = self.inner.reset(seed=seed, options=options)
        return self._frame(obs), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.inner.step(action)
        return self._frame(obs), reward, terminated, truncated, info


def arenas() -> dict[str, Any]:
    a = TankGrid(width=6, depth=6, max_steps=100)
    return {"A": lambda: TankGrid(width=6, depth=6, max_steps=100),
            "B": lambda: Framed(TankGrid(width=4, depth=5, elevations=4, max_steps=100), a)}


def train_teacher(make: Any, steps: int, seed: int) -> Any:
    env = make()
    agent = DQNAgent(env.observation_space, env.action_space, DQNConfig(**TANK_SETTINGS), seed=seed)
    TrainingRun(env, agent, steps, seed=seed, eval_env=make(), eval_interval=5000, eval_episodes=10).run()
    return agent.to_model({"env": "tank_grid"})


def merge_case(quick: bool = False, seed: int = 0) -> dict:
    steps = 30_000 if quick else 60_000
    n_states = 10_000 if quick else 20_000
    episodes = 20 if quick else 50
    makers = arenas()
    t0 = time.perf_counter()
    teachers = {name: train_teacher(make, steps, seed + i) for i, (name, make) in enumerate(makers.items())}
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    states = [record_states(teachers[name], makers[name](), n_states, seed=seed + 100 + i)
              for i, name in enumerate(makers)]
    student, info = distill(list(teachers.values()), states, names=list(makers), seed=seed)
    distill_s = time.perf_counter() - t0
    scores: dict[str, dict[str, float]] = {}
    for name, make in makers.items():
        scores[name] = {who: evaluate(make(), model.act, episodes, seed=5000).mean_return
                        for who, model in (("teacher", teachers[name]), ("merged", student))}
        other = next(n for n in makers if n != name)
        scores[name]["other_teacher"] = evaluate(make(), teachers[other].act, episodes, seed=5000).mean_return
    held_out = {name: float(np.mean(greedy_actions(student, s) == greedy_actions(teachers[name], s)))
                for name, s in ((n, record_states(teachers[n], makers[n](), 2000, seed=seed + 200)) for n in makers)}
    ratio = {name: round(s["merged"] / s["teacher"], 3) if s["teacher"] > 0 else None for name, s in scores.items()}
    print(json.dumps({"merge_scores": scores, "teacher_train_s": round(train_s, 1), "agreement": info["agreement"],
                      "held_out_agreement": held_out}), file=sys.stderr)
    return {"merge_distill_s": round(distill_s, 2), "merged_score_ratio": ratio,
            "merge_teacher_scores": {n: round(s["teacher"], 2) for n, s in scores.items()},
            "merge_cross_scores": {n: round(s["other_teacher"], 2) for n, s in scores.items()}}


if __name__ == "__main__":
    print(json.dumps(merge_case(quick="--quick" in sys.argv)))
