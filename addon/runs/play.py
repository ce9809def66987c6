"""Play: the trained model acting greedily on the live scene at a steady pace; Stop restores the scene."""

from __future__ import annotations

import time
from typing import Any

from ...drla_core.model_io import check_fits
from ..properties import settings
from ..words import count
from . import model_store
from .sessions import DONE, RUNNING, TICK_BUDGET_S, Session


class PlaySession(Session):
    """The greedy policy acting live on the scene at ``fps`` steps per second; restored on stop."""

    kind = "PLAY"

    def __init__(self, scene, tree, *, seed: int | None = None, fps: float = 12.0) -> None:
        super().__init__(scene, tree, seed=seed)
        self.fps = float(fps)
        self.model: Any = None
        self.obs: Any = None
        self.steps = 0
        self.episodes = 0
        self.episode_return = 0.0
        self.last_return = 0.0
        self._t0 = 0.0

    def start(self) -> PlaySession:
        s = settings(self.scene)
        s.error = ""
        self._register()
        self._guard(self._start)
        return self

    def _start(self) -> None:
        self.model = model_store.load_stored_model(self.tree)
        self._compile()
        self._open_scene()
        check_fits(self.model, self.env.observation_space, self.env.action_space)
        self.obs, _ = self.env.reset(seed=self.seed)
        self.state = RUNNING
        self._t0 = time.perf_counter()

    def step(self) -> tuple[Any, float, bool, bool, dict]:
        action = self.model.act(self.obs)
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        self.episode_return += float(reward)
        self.obs = obs
        if terminated or truncated:
            self.episodes += 1
            self.last_return, self.episode_return = self.episode_return, 0.0
            self.obs, _ = self.env.reset()
        return obs, reward, terminated, truncated, info

    def tick(self, budget_s: float = TICK_BUDGET_S, now: float | None = None) -> bool:
        """Take the steps that are due at ``fps`` (within ``budget_s``); False once stopped."""
        if self.state != RUNNING:
            return False
        t0 = time.perf_counter()
        now = t0 if now is None else now
        due = int((now - self._t0) * self.fps) + 1 - self.steps
        while due > 0 and time.perf_counter() - t0 < budget_s:
            self._guard(self.step)
            due -= 1
        self.tick_seconds.append(time.perf_counter() - t0)
        return True

    def run_steps(self, n: int) -> None:
        for _ in range(n):
            self._guard(self.step)

    def run_episode(self, max_steps: int = 100_000) -> None:
        start = self.episodes
        for _ in range(max_steps):
            self._guard(self.step)
            if self.episodes > start:
                break

    def stop(self) -> None:
        if self.state == RUNNING:
            self._close_scene()
            self.state = DONE
            settings(self.scene).message = (f"Played {count(self.steps, 'step')}, {count(self.episodes, 'episode')}"
                                            + (f", last return {self.last_return:.2f}" if self.episodes else ""))

    def status_line(self) -> str:
        return f"DRLA playing '{self.tree_name}': step {self.steps}, episode {self.episodes + 1}  (Esc: stop)"
