"""Play: the trained model acting greedily on the live scene at a steady pace; Stop restores the scene.
``evaluate_episodes`` is the same greedy policy for whole episodes at once (the CLI's ``play``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import bpy

from ...drla_core.io.model_io import ModelFormatError, check_fits
from ...drla_core.rl.multi_agent import evaluate_parallel
from ...drla_core.rl.train import evaluate, metric_text
from ..properties import settings
from ..scene.masks import greedy_action
from ..scene.snapshot import restored_scene
from ..words import count
from . import build, model_store, switcher
from .sessions import DONE, RUNNING, TICK_BUDGET_S, Session


class PlaySession(Session):
    """The greedy policy acting live on the scene at ``fps`` steps per second; restored on stop."""

    kind = "PLAY"

    def __init__(self, scene, tree, *, seed: int | None = None, fps: float = 12.0) -> None:
        super().__init__(scene, tree, seed=seed)
        self.fps = float(fps)
        self.model: Any = None
        self.models: dict[str, Any] = {}  # a multi-agent tree: name -> model
        self.obs: Any = None
        self.info: Any = {}  # the last reset or step info (its action_mask: the actions enabled now)
        self.steps = 0
        self.episodes = 0
        self.episode_return = 0.0
        self.last_return = 0.0
        self._t0 = 0.0
        self.switcher_node = ""  # the Expert Switcher that acts instead of the stored model, if any

    def start(self) -> PlaySession:
        s = settings(self.scene)
        s.error = ""
        self._register()
        self._guard(self._start)
        return self

    def _start(self) -> None:
        compiled = self._compile()
        if compiled.team:  # several named agents: each acts from its own stored model
            self.models = {m.name: model_store.load_stored_model(self.tree, m.name) for m in compiled.team}
        else:
            node = switcher.play_node(self.tree)
            if node is not None:  # an Expert Switcher with Use for Play: it picks an expert, the expert acts
                try:
                    self.model = switcher.make_switcher(node, self.scene)
                except switcher.SwitcherError as exc:
                    node.drla_error = str(exc)
                    raise
                node.drla_error = ""
                self.switcher_node = node.name
            else:
                self.model = model_store.load_stored_model(self.tree)
            if compiled.env is not None:
                compiled.env.copies = 1  # Play shows the scene itself, not the training copies
        self._open_scene()
        if compiled.team:
            for name, model in self.models.items():
                check_fits(model, self.env.observation_space(name), self.env.action_space(name))
        elif self.switcher_node:
            switcher.check_fits_env(self.model, self.env, self.tree_name)
        else:
            check_fits(self.model, self.env.observation_space, self.env.action_space)
        self.obs, self.info = self.env.reset(seed=self.seed)
        if not compiled.team:
            getattr(self.model, "reset", lambda: None)()  # (a recurrent network starts afresh)
        self.state = RUNNING
        self._t0 = time.perf_counter()

    def step(self) -> tuple[Any, float, bool, bool, dict]:
        if self.models:
            return self._step_team()
        action = greedy_action(self.model, self.obs, self.info)  # among the enabled actions (an action mask)
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._count(float(reward), terminated or truncated)
        self.obs, self.info = obs, info
        if terminated or truncated:
            self.obs, self.info = self.env.reset()
            getattr(self.model, "reset", lambda: None)()  # (a recurrent network starts the episode afresh)
        return obs, reward, terminated, truncated, info

    def _step_team(self) -> tuple[Any, float, bool, bool, dict]:
        """Every named agent acts greedily at once; the return counted is their sum."""
        actions = {name: self.models[name].act(self.obs[name]) for name in self.env.agents}
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        ended = not self.env.agents
        self._count(float(sum(rewards.values())), ended)
        self.obs = obs
        if ended:
            self.obs, _ = self.env.reset()
        return obs, rewards, any(terms.values()), ended and not any(terms.values()), infos

    def _count(self, reward: float, ended: bool) -> None:
        self.steps += 1
        self.episode_return += reward
        if ended:
            self.episodes += 1
            self.last_return, self.episode_return = self.episode_return, 0.0

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
                                            + (f", last return {self.last_return:.2f}" if self.episodes else "")
                                            + self._experts_text())

    def _experts_text(self) -> str:
        """With an Expert Switcher: how many steps each expert acted."""
        if not self.switcher_node:
            return ""
        used = ", ".join(f"{name} {int(n)}" for name, n in zip(self.model.names, self.model.counts))
        return f"; '{self.switcher_node}' steps per expert: {used}"

    def status_line(self) -> str:
        acting = ""
        if self.switcher_node and self.model.last_choice >= 0:
            acting = f", expert {self.model.names[self.model.last_choice]} acting"
        return (f"DRLA playing '{self.tree_name}': step {self.steps}, episode {self.episodes + 1}{acting}  "
                "(Esc: stop)")


class _GreedyFilmed:
    """A model as a policy for ``evaluate``; with ``frames_dir`` it also renders the first episode.

    Each frame is the scene's own render (active camera, the file's render settings) of the state
    the agent acts on, saved from "Render Result" so no scene setting is touched.
    """

    def __init__(self, model: Any, env: Any, frames_dir: Path | None) -> None:
        self.model, self.frames_dir, self.frames = model, frames_dir, 0
        self.max_frames = int(getattr(env, "max_steps", 1000))

    def predict(self, obs: Any, mask: Any = None) -> Any:
        if self.frames_dir is not None and self.frames < self.max_frames:
            bpy.ops.render.render()
            bpy.data.images["Render Result"].save_render(str(self.frames_dir / f"frame_{self.frames:04d}.png"))
            self.frames += 1
        return greedy_action(self.model, obs, {"action_mask": mask})


def evaluate_episodes(scene, compiled, model, episodes: int, seed: int, frames_dir: Path | None = None) -> str:
    """Play ``episodes`` greedy episodes of ``model`` in ``scene`` (restored afterwards); the result in words.
    With ``frames_dir`` the first episode is rendered there, one PNG per step."""
    if frames_dir is not None and scene.camera is None:
        raise ValueError("rendering frames needs a scene camera to render from")
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            check_fits(model, env.observation_space, env.action_space)
            policy = _GreedyFilmed(model, env, frames_dir)
            result = evaluate(env, policy, episodes, seed)
        finally:
            env.close()
    text = f"{compiled.tree}: mean return {result.mean_return:.2f} over {count(episodes, 'episode')}"
    if env.task_metric:
        text += f"; {metric_text(env.task_metric, result.metric_sum, result.metric_count, len(result.returns))}"
    if frames_dir is not None:
        removed = bpy.data.images.get("Render Result")
        if removed is not None:
            bpy.data.images.remove(removed)
        text += f"\nframes: {frames_dir} ({policy.frames} PNG files)"
    return text


def check_team_fits(models: dict[str, Any], env: Any) -> None:
    """Every agent of ``env`` has a model that fits its spaces; ``ModelFormatError`` names the agent otherwise."""
    for name in env.possible_agents:
        if name not in models:
            raise ModelFormatError(f"no model for agent '{name}'")
        try:
            check_fits(models[name], env.observation_space(name), env.action_space(name))
        except ModelFormatError as exc:
            raise ModelFormatError(f"agent '{name}': {exc}") from None


def evaluate_team(scene, compiled, models: dict[str, Any], episodes: int, seed: int,
                  frames_dir: Path | None = None) -> str:
    """Play ``episodes`` episodes of a multi-agent tree, every named agent greedy from its model in ``models``
    (name -> model), in ``scene`` (restored afterwards); per agent its mean return (and task metric), in words.
    With ``frames_dir`` the first episode is rendered there, one PNG per step."""
    if frames_dir is not None and scene.camera is None:
        raise ValueError("rendering frames needs a scene camera to render from")
    unknown = [name for name in models if name not in [m.name for m in compiled.team]]
    if unknown:
        raise ModelFormatError(f"tree '{compiled.tree}' has no agent named '{unknown[0]}' (its agents: "
                               f"{', '.join(m.name for m in compiled.team)})")
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            check_team_fits(models, env)
            filmed = _GreedyFilmed(models[env.possible_agents[0]], env.envs[env.possible_agents[0]], frames_dir)
            policies = {name: models[name].act for name in env.possible_agents}
            policies[env.possible_agents[0]] = filmed.predict  # films the shared scene once per step
            result = evaluate_parallel(env, policies, episodes, seed)
        finally:
            env.close()
    lines = [f"{compiled.tree}: {count(episodes, 'episode')} with every agent greedy"]
    for name, (mean, _rate, total, n) in result.items():
        text = f"  {name}: mean return {mean:.2f}"
        if env.task_metric:
            text += f"; {metric_text(env.task_metric, total, n, episodes)}"
        lines.append(text)
    if frames_dir is not None:
        removed = bpy.data.images.get("Render Result")
        if removed is not None:
            bpy.data.images.remove(removed)
        lines.append(f"frames: {frames_dir} ({filmed.frames} PNG files)")
    return "\n".join(lines)
