"""``SceneTeamEnv``: several named agents acting at once in one scene (PettingZoo's parallel API).

Each agent has its own compiled environment (observation, actions, rewards, endings) over the shared
scene: every step all of them act, the scene advances once, and each reads its own observation and
reward. The scene is one world, so an episode is one for everybody: when one agent's ending fires,
that agent is terminated and the others are truncated (their episode was cut, not lost: they
bootstrap from it), and at Max Steps all are truncated. Agent ``i`` of ``reset(seed=s)`` draws its
random placements from seed ``s + i``.
"""

from __future__ import annotations

from typing import Any

from ...drla_core.base.parallel_env import ParallelEnv
from .scene_env import SceneEnv


class SceneTeamEnv(ParallelEnv):
    """The named agents' environments over ``scene``: ``members`` is ``[(name, EnvSpec), ...]``."""

    metadata = {"render_modes": [], "name": "drla_scene_team"}

    def __init__(self, members: list[tuple[str, Any]], scene) -> None:
        self.scene = scene
        self.envs: dict[str, SceneEnv] = {}
        try:
            for name, spec in members:
                self.envs[name] = SceneEnv(spec, scene)
        except BaseException:
            self.close()
            raise
        self.possible_agents = list(self.envs)
        self.agents: list[str] = []
        metrics = {env.task_metric for env in self.envs.values()} - {None}
        self.task_metric = metrics.pop() if len(metrics) == 1 else None
        first = next(iter(self.envs.values()))
        self.frames_per_step = first.frames_per_step
        self._frame = scene.frame_start

    def observation_space(self, agent: str):
        return self.envs[agent].observation_space

    def action_space(self, agent: str):
        return self.envs[agent].action_space

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        for i, env in enumerate(self.envs.values()):
            super(SceneEnv, env).reset(seed=None if seed is None else seed + i)
            env.restart_objects()
        self._frame = self.scene.frame_start
        self.scene.frame_set(self._frame)
        self.agents = list(self.possible_agents)
        return {name: env.begin_episode() for name, env in self.envs.items()}, {name: {} for name in self.agents}

    def step(self, actions: dict[str, Any]):
        live = list(self.agents)
        events = {name: self.envs[name].act(actions[name]) for name in live}
        for _ in range(self.frames_per_step):
            self._frame += 1
            self.scene.frame_set(self._frame)
        obs, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for name in live:
            o, r, term, trunc, info = self.envs[name].observe(events[name])
            obs[name], rewards[name], terminations[name], truncations[name], infos[name] = o, r, term, trunc, info
        if any(terminations.values()) or any(truncations.values()):
            for name in live:  # one world, one episode: the others' episodes are cut here
                truncations[name] = truncations[name] or not terminations[name]
            self.agents = []
        return obs, rewards, terminations, truncations, infos

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
