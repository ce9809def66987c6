"""The one training loop: any ``Env`` (pure or a Blender scene) with any agent that has ``act``/``observe``.

``TrainingRun`` owns the loop state, so the loop can run in slices: ``advance(max_steps,
max_seconds)`` does a bounded amount of work and returns, which is what Blender's modal
timer calls once per tick; ``run()`` just advances until done. Same seeds, same run, bit
for bit, whatever the slicing.

Evaluation is greedy (``agent.predict``) and its time is excluded from ``train_seconds``.
It uses ``eval_env`` when given. Without one it reuses the training env, but only at an
episode boundary (the next one after the evaluation is due), re-seeding it for the
evaluation, so no training episode is ever cut short.

Agents may implement optional hooks, called when present: ``on_training_start(total_steps)``,
``on_evaluation(step, mean_return)`` and ``on_training_end()`` (``DQNAgent`` uses them for
its epsilon schedule and keep-best).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .checkpoint import read_checkpoint, save_checkpoint
from .history import (
    EVAL_SEED_OFFSET,
    Callback,
    EvalResult,
    History,
    PrintProgress,
    TrainingError,
    evaluate,
)
from .restore import restore_run
from ..base.env import Env
from ..base.metrics import METRIC_WORDS, ONCE_PER_EPISODE, history_metric_text, metric_text, short_metric_text
from ..io.model_io import save_model
from ..io.plot import save_report

__all__ = ["Callback", "EvalResult", "History", "PrintProgress", "TrainingError", "TrainingRun", "EVAL_SEED_OFFSET",
           "evaluate", "train",
           "metric_text", "short_metric_text", "history_metric_text", "METRIC_WORDS", "ONCE_PER_EPISODE"]


def action_mask(info: Any) -> Any:
    """The env's action mask (Gymnasium's ``info["action_mask"]``: one 0/1 per action), or ``None``."""
    return info.get("action_mask") if isinstance(info, dict) else None


def _default_save(run: TrainingRun, path: str) -> None:
    save_model(path, run.agent.to_model({"steps": run.steps, "episodes": run.episodes}))


class TrainingRun:
    """One training run, advanced in slices or run to the end.

    Args:
        env: the training environment.
        agent: has ``act(obs, explore=True)``, ``observe(obs, action, reward, next_obs, terminated,
            truncated) -> dict`` and ``predict(obs)`` (for evaluation).
        total_steps: environment steps to train for.
        seed: seeds the training env's first reset; evaluations use ``seed + EVAL_SEED_OFFSET``.
        eval_env: environment for greedy evaluations (default: the training env, at episode boundaries).
        eval_interval: evaluate every this many steps (0: never, and no final evaluation).
        eval_episodes: episodes per evaluation.
        callbacks: ``Callback`` objects.
        checkpoint_interval: save every this many steps (0: never) with ``save_fn(run, path)``.
        checkpoint_path: where checkpoints go; ``{step}`` in it is replaced by the step count.
        save_fn: how to save (default: ``model_io.save_model(path, agent.to_model(meta))``).
    """

    def __init__(self, env: Env, agent: Any, total_steps: int, *, seed: int | None = 0, eval_env: Env | None = None,
                 eval_interval: int = 0, eval_episodes: int = 10, callbacks: Iterable[Callback] = (),
                 checkpoint_interval: int = 0, checkpoint_path: str | None = None,
                 save_fn: Callable[[TrainingRun, str], None] | None = None) -> None:
        if checkpoint_interval and not checkpoint_path:
            raise ValueError("checkpoint_interval needs a checkpoint_path")
        self.env = env
        self.agent = agent
        self.total_steps = int(total_steps)
        self.seed = seed
        self.eval_env = eval_env
        self.eval_interval = int(eval_interval)
        self.eval_episodes = int(eval_episodes)
        self.callbacks: Sequence[Callback] = tuple(callbacks)
        self.checkpoint_interval = int(checkpoint_interval)
        self.checkpoint_path = checkpoint_path
        self.save_fn = save_fn or _default_save
        self.history = History(task_metric=env.task_metric)

        self.steps = 0
        self.episodes = 0
        self.done = False
        self.train_seconds = 0.0
        """Wall time spent training (acting, env steps, updates); evaluations and checkpoints excluded."""
        self.eval_seconds = 0.0
        self.cpu_seconds = 0.0
        """CPU time of this process inside ``advance`` (evaluations included); unlike wall time, other
        processes competing for the CPU do not inflate it."""
        self.eval_cpu_seconds = 0.0
        self._slice_cpu_start: float | None = None
        self._started = False
        self._continuing = False  # restored from a checkpoint, first slice not run yet (``_continue``)
        self._stop_requested = False
        self._final_eval = True
        self._obs: Any = None
        self._mask: Any = None  # the actions enabled in ``_obs`` (``info["action_mask"]``), when the env masks
        self._episode_return = 0.0
        self._episode_length = 0
        self._metric_sum = 0.0
        self._metric_count = 0
        self._next_eval = self.eval_interval if self.eval_interval > 0 else math.inf
        self._next_checkpoint = self.checkpoint_interval if self.checkpoint_interval > 0 else math.inf

    # ---- control --------------------------------------------------------------------------------

    def stop(self, evaluate: bool = True, interrupted: bool = False) -> None:
        """Ask the run to end after the current step (then ``on_end`` runs and ``done`` becomes True).

        With ``evaluate=False`` the final evaluation is skipped (a user waiting on Ctrl-C);
        ``interrupted`` is recorded in the history (the report says so).
        """
        self._stop_requested = True
        self._final_eval = self._final_eval and evaluate
        self.history.interrupted = self.history.interrupted or interrupted

    def resume(self, env: Env | None = None) -> None:
        """Continue a paused run, optionally on a rebuilt ``env`` (e.g. after the scene was restored).

        The episode the pause cut short is dropped (not recorded): the next step starts a fresh
        episode. Agent, replay memory, schedules and history carry on unchanged.
        """
        if env is not None:
            self.env = env
        self._stop_requested = False
        self._final_eval = True
        self.history.interrupted = False
        if not self._started:
            return
        self._fresh_episode()

    # ---- as a TrainingJob (agents.base) -----------------------------------------------------------

    def status(self) -> dict[str, str]:
        """Episodes, exploration (or the agent's own ``status()`` figures) and the mean return of the last 20
        episodes, as the sidebar shows them."""
        returns = self.history.episode_returns[-20:]
        mean = sum(returns) / len(returns) if returns else 0.0
        figures = {"Episodes": str(self.episodes)}
        if hasattr(self.agent, "epsilon"):
            figures["Epsilon"] = f"{float(self.agent.epsilon):.2f}"
        figures.update(getattr(self.agent, "status", dict)())  # its own figures (PPO: entropy; SAC: temperature)
        return {**figures, "Return": f"{mean:.2f}"}

    @property
    def interrupted(self) -> bool:
        return bool(self.history.interrupted)

    def finish(self) -> None:
        """Nothing left to measure: the final evaluation ran as the last step ended (``_finish``)."""

    def summary(self, wall_seconds: float) -> list[str]:
        """Steps, episodes and speed, the mean return of the last 20 episodes, the task's counts and the
        final greedy evaluation: what the CLI prints at the end."""
        h = self.history
        last = h.episode_returns[-20:]
        lines = [f"trained {self.steps} steps, {self.episodes} episodes in {wall_seconds:.1f} s "
                 f"({self.steps / max(self.train_seconds, 1e-9):,.0f} steps/s training)",
                 f"mean return of the last {len(last)} episodes: {np.mean(last):.2f}" if last
                 else "no episode finished"]
        metric = history_metric_text(h, 20)
        if metric and last:
            lines.append(f"last {len(last)} episodes: {metric}")
        if h.final_eval is not None:
            text = f"greedy evaluation: mean return {h.final_eval[1]:.2f}"
            if h.final_eval_metric_totals is not None and h.task_metric:
                _, total, count, episodes = h.final_eval_metric_totals
                text += f" over {episodes} episodes; {metric_text(h.task_metric, total, count, episodes)}"
            lines.append(text)
        return lines

    def save_report(self, path: Any, title: str, wall_seconds: float = 0.0) -> Any:
        """The report picture: returns and losses by step, evaluations, the task's counts, and for a DQN agent
        its layers' weight histograms and activation histograms over the last 1000 observations it stored (a PPO
        agent: its actor's, over its last rollout)."""
        network = getattr(self.agent, "q_network", None) or getattr(self.agent, "actor", None)  # DQN's; PPO's actor
        buffer = getattr(self.agent, "replay_buffer", None)
        states = None
        if network is not None and buffer is not None and len(buffer):
            states = buffer.obs[:len(buffer)][-1000:]
        rollout = getattr(self.agent, "buf_obs", None)  # PPO: its last rollout (normalised as the actor reads it)
        if states is None and rollout is not None:
            states = rollout.reshape(-1, rollout.shape[-1])[-1000:]
        label = getattr(self.agent, "exploration_label", None)  # what its epsilon curve holds, when not epsilon
        history = {**self.history.to_dict(), "exploration_label": label} if label else self.history
        return save_report(path, history, title, network=network, states=states)

    def to_model(self, meta: dict[str, Any] | None = None) -> Any:
        """The agent's model, its meta with the episodes and the action names of the environment."""
        info = {**(meta or {}), "episodes": int(self.episodes)}
        names = getattr(self.env.action_space, "names", None)
        if names:
            info["actions"] = list(names)
        if self._mask is not None:  # trained under action masks: exports take a mask (ONNX: a second input)
            info["action_mask"] = True
        return self.agent.to_model(info)

    def run(self) -> TrainingRun:
        """Advance until the run is done."""
        while not self.done:
            self.advance()
        return self

    def advance(self, max_steps: int | None = None, max_seconds: float | None = None) -> int:
        """Run at most ``max_steps`` steps and about ``max_seconds`` seconds; returns the steps taken.

        A training phase of the agent or an evaluation is never split, so a slice can overrun
        ``max_seconds`` by one of those.
        """
        if self.done:
            return 0
        self._slice_cpu_start = time.process_time()
        start = time.perf_counter()
        deadline = start + max_seconds if max_seconds is not None else math.inf
        limit = max_steps if max_steps is not None else math.inf
        if not self._started:
            self._start()
        elif self._continuing:
            self._continue()
        taken = 0
        stride = self._stride
        while taken < limit and not self.done:
            self._step()
            taken += stride
            if time.perf_counter() >= deadline:
                break
        self.cpu_seconds += time.process_time() - self._slice_cpu_start
        self._slice_cpu_start = None
        return taken

    @property
    def _stride(self) -> int:
        """Environment steps one ``_step`` takes: 1 here, one per copy for a vector env."""
        return 1

    @property
    def train_cpu_seconds(self) -> float:
        """CPU time spent training (evaluations included in neither): for timings on a busy machine."""
        partial = time.process_time() - self._slice_cpu_start if self._slice_cpu_start is not None else 0.0
        return self.cpu_seconds + partial - self.eval_cpu_seconds

    # ---- the loop -------------------------------------------------------------------------------

    def _start(self) -> None:
        self._started = True
        if hasattr(self.agent, "on_training_start"):
            self.agent.on_training_start(self.total_steps)
        for cb in self.callbacks:
            cb.on_start(self)
        t0 = time.perf_counter()
        self._obs, info = self.env.reset(seed=self.seed)
        self._mask = action_mask(info)
        self.train_seconds += time.perf_counter() - t0

    def _continue(self) -> None:
        """The first slice of a run restored from a checkpoint (``load_checkpoint``): what ``_start`` does for a
        new run. An env that could not be restored mid-episode (a scene) starts a fresh episode here."""
        self._continuing = False
        if hasattr(self.agent, "on_training_start"):
            self.agent.on_training_start(self.total_steps)
        for cb in self.callbacks:
            cb.on_start(self)
        if self._obs is None:
            t0 = time.perf_counter()
            self._fresh_episode()
            self.train_seconds += time.perf_counter() - t0
        if self.steps >= self.total_steps:
            self._finish()

    def _fresh_episode(self) -> None:
        self._obs, info = self.env.reset()
        self._mask = action_mask(info)
        self._episode_return, self._episode_length = 0.0, 0
        self._metric_sum, self._metric_count = 0.0, 0

    # ---- checkpoints (drla_core.rl.checkpoint) -------------------------------------------------------

    def save_checkpoint(self, path: Any, **kwargs: Any) -> Any:
        """Write the run's full state to ``path`` (``.npz``); see ``checkpoint.save_checkpoint`` for ``kwargs``."""
        return save_checkpoint(path, self, **kwargs)

    def load_checkpoint(self, checkpoint: Any) -> list[tuple[str, Any, Any]]:
        """Continue from ``checkpoint`` (a path or a ``checkpoint.Checkpoint``) on this freshly built run;
        returns the settings changed since, as ``(setting, old, new)``; see ``checkpoint.restore_run``."""
        if not hasattr(checkpoint, "meta"):
            checkpoint = read_checkpoint(checkpoint)
        return restore_run(self, checkpoint)

    def _step(self) -> None:
        t0 = time.perf_counter()
        env, agent, obs, mask = self.env, self.agent, self._obs, self._mask
        action = agent.act(obs) if mask is None else agent.act(obs, mask=mask)
        next_obs, reward, terminated, truncated, info = env.step(action)
        next_mask = action_mask(info)
        if next_mask is None:
            out = agent.observe(obs, action, reward, next_obs, terminated, truncated)
        else:
            out = agent.observe(obs, action, reward, next_obs, terminated, truncated, next_mask=next_mask)
        self.steps += 1
        self.history.steps = self.steps
        self._episode_return += float(reward)
        self._episode_length += 1
        if out and "loss" in out:
            if not math.isfinite(out["loss"]):
                raise TrainingError(f"training diverged at step {self.steps}: the loss became {out['loss']}. "
                                    "Lower the learning rate, or scale the observations and rewards")
            self.history.losses.append(float(out["loss"]))
            self.history.loss_steps.append(self.steps)
        key = self.history.task_metric
        if key is not None and key in info:
            self._metric_sum += float(info[key])
            self._metric_count += 1
        episode_over = bool(terminated or truncated)
        if episode_over:
            self._obs = None  # reset below, after a possible evaluation on this env
        else:
            self._obs, self._mask = next_obs, next_mask
        self.train_seconds += time.perf_counter() - t0

        if episode_over:
            self._end_episode()
        stop = False
        for cb in self.callbacks:
            if cb.on_step(self) is False:
                stop = True
        if self.steps >= self._next_eval and (self.eval_env is not None or episode_over):
            self._evaluate()
        if self.steps >= self._next_checkpoint:
            self._checkpoint()
        if self._obs is None:
            t0 = time.perf_counter()
            self._obs, info = env.reset()
            self._mask = action_mask(info)
            self.train_seconds += time.perf_counter() - t0
        if stop or self._stop_requested or self.steps >= self.total_steps:
            self._finish()

    def _end_episode(self) -> None:
        h = self.history
        self.episodes += 1
        h.episode_returns.append(self._episode_return)
        h.episode_lengths.append(self._episode_length)
        h.episode_end_steps.append(self.steps)
        # the exploration figure per episode: epsilon, or an agent's own (``exploration``: SAC's temperature)
        h.epsilons.append(float(getattr(self.agent, "exploration", getattr(self.agent, "epsilon", 0.0))))
        if h.task_metric is not None:
            h.episode_metrics.append(self._metric_sum / self._metric_count if self._metric_count else None)
            h.episode_metric_sums.append(self._metric_sum)
            h.episode_metric_counts.append(self._metric_count)
        self._episode_return, self._episode_length = 0.0, 0
        self._metric_sum, self._metric_count = 0.0, 0
        for cb in self.callbacks:
            cb.on_episode_end(self)

    def _run_eval(self) -> EvalResult:
        t0, c0 = time.perf_counter(), time.process_time()
        env = self.eval_env if self.eval_env is not None else self.env
        seed = None if self.seed is None else self.seed + EVAL_SEED_OFFSET
        # Evaluating on the training env re-seeds it; put its generator back afterwards so that
        # training does not restart from the same random stream after every evaluation.
        training_rng = getattr(env, "_np_random", None) if env is self.env else None
        result = evaluate(env, self.agent, self.eval_episodes, seed)
        if training_rng is not None:
            env._np_random = training_rng  # type: ignore[attr-defined]
        self.eval_seconds += time.perf_counter() - t0
        self.eval_cpu_seconds += time.process_time() - c0
        return result

    def _evaluate(self) -> None:
        while self._next_eval <= self.steps:
            self._next_eval += self.eval_interval
        result = self._run_eval()
        self.history.evals.append((self.steps, result.mean_return, result.metric))
        if self.history.task_metric is not None:
            self.history.eval_metric_totals.append((self.steps, result.metric_sum, result.metric_count,
                                                    len(result.returns)))
        self.history.eval_train_seconds.append(self.train_seconds)
        self.history.eval_train_cpu_seconds.append(self.train_cpu_seconds)
        if hasattr(self.agent, "on_evaluation"):
            self.agent.on_evaluation(self.steps, result.mean_return)
        for cb in self.callbacks:
            cb.on_eval(self)

    def _checkpoint(self) -> None:
        while self._next_checkpoint <= self.steps:
            self._next_checkpoint += self.checkpoint_interval
        path = str(self.checkpoint_path).replace("{step}", str(self.steps))
        self.save_fn(self, path)
        for cb in self.callbacks:
            cb.on_checkpoint(self, path)

    def _finish(self) -> None:
        self.done = True
        if hasattr(self.agent, "on_training_end"):
            self.agent.on_training_end()
        if self.eval_interval > 0 and self._final_eval:
            if self.eval_env is None and self._obs is not None:
                self._obs = None  # the training env is about to be re-seeded; the run is over anyway
            result = self._run_eval()
            self.history.final_eval = (self.steps, result.mean_return, result.metric)
            if self.history.task_metric is not None:
                self.history.final_eval_metric_totals = (self.steps, result.metric_sum, result.metric_count,
                                                         len(result.returns))
        for cb in self.callbacks:
            cb.on_end(self)



def train(env: Env, agent: Any, total_steps: int, **kwargs: Any) -> TrainingRun:
    """``TrainingRun(env, agent, total_steps, **kwargs).run()``."""
    return TrainingRun(env, agent, total_steps, **kwargs).run()
