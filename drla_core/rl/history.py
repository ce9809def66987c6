"""What a run records and reports: ``History`` (curves, evaluations, metric counts), greedy ``evaluate``,
``TrainingError`` and the ``Callback`` hooks (``PrintProgress``)."""

from __future__ import annotations

import inspect

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..base.env import Env
from ..base.metrics import history_metric_text


__all__ = ["EVAL_SEED_OFFSET", "EvalResult", "evaluate", "History", "TrainingError", "Callback", "PrintProgress"]

EVAL_SEED_OFFSET = 10_000  # evaluation episodes use seed + this, so they never replay training episodes


class EvalResult(NamedTuple):
    """Greedy evaluation: mean return, each episode's return, and the task metric (None if the env has none).

    ``metric`` is a rate (``metric_sum / metric_count``: for the tank, hits per shot); ``metric_sum`` and
    ``metric_count`` are the counts behind it (hits and shots over all the episodes), so that a rate
    over one shot is never mistaken for one over hundreds.
    """

    mean_return: float
    returns: list[float]
    metric: float | None
    metric_sum: float = 0.0
    metric_count: int = 0


def _takes_mask(fn: Any) -> bool:
    """Whether a policy's act takes the env's action mask (``predict(obs, mask)``)."""
    try:
        return "mask" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def evaluate(env: Env, policy: Callable[[Any], Any] | Any, episodes: int = 10, seed: int | None = 0,
             max_steps_per_episode: int = 1_000_000) -> EvalResult:
    """Run ``episodes`` episodes with ``policy`` (a callable obs -> action, or an object with ``predict``).

    The first reset uses ``seed`` and later ones continue the env's generator, so one seed fixes
    the whole evaluation. A policy (or the object of a bound method, like ``model.act``) that is ``recurrent``
    is ``reset()`` at each episode's start. The metric is the mean of ``info[env.task_metric]`` over the steps
    that report it.
    """
    act: Callable[..., Any] = policy.predict if hasattr(policy, "predict") else policy
    masked = _takes_mask(act)
    owner: Any = getattr(policy, "__self__", policy)  # (a bound ``model.act``: its model)
    reset = owner.reset if getattr(owner, "recurrent", False) else None  # a recurrent model: new state per episode
    key = env.task_metric
    returns: list[float] = []
    metric_sum, metric_count = 0.0, 0
    for episode in range(episodes):
        obs, info = env.reset(seed=seed if episode == 0 else None)
        if reset is not None:
            reset()
        total = 0.0
        for _ in range(max_steps_per_episode):
            mask = info.get("action_mask") if masked and isinstance(info, dict) else None  # the env's action mask
            obs, reward, terminated, truncated, info = env.step(act(obs) if mask is None else act(obs, mask))
            total += float(reward)
            if key is not None and key in info:
                metric_sum += float(info[key])
                metric_count += 1
            if terminated or truncated:
                break
        returns.append(total)
    metric = metric_sum / metric_count if metric_count else None
    return EvalResult(float(np.mean(returns)) if returns else 0.0, returns, metric, metric_sum, metric_count)


@dataclass
class History:
    """What a run recorded; plain lists so it converts to JSON (``to_dict``) and plots directly."""

    episode_returns: list[float] = field(default_factory=list)
    episode_lengths: list[int] = field(default_factory=list)
    episode_end_steps: list[int] = field(default_factory=list)
    """Global step at which each episode ended."""
    epsilons: list[float] = field(default_factory=list)
    """Exploration rate at the end of each episode (when the agent has ``epsilon``)."""
    losses: list[float] = field(default_factory=list)
    """Mean loss of each training phase the agent reported."""
    loss_steps: list[int] = field(default_factory=list)
    evals: list[tuple[int, float, float | None]] = field(default_factory=list)
    """(step, mean greedy return, task metric or None) per evaluation."""
    eval_train_seconds: list[float] = field(default_factory=list)
    """Training wall time (evaluation excluded) when each evaluation ran."""
    eval_train_cpu_seconds: list[float] = field(default_factory=list)
    """Training CPU time of this process (evaluation excluded) when each evaluation ran."""
    task_metric: str | None = None
    """Name of the env's task metric (``info`` key), if it has one."""
    episode_metrics: list[float | None] = field(default_factory=list)
    """Per episode: mean of ``info[task_metric]`` over the steps that report it (None if none did)."""
    episode_metric_sums: list[float] = field(default_factory=list)
    """Per episode: sum of ``info[task_metric]`` (the tank's hits)."""
    episode_metric_counts: list[int] = field(default_factory=list)
    """Per episode: how many steps reported ``info[task_metric]`` (the tank's shots)."""
    eval_metric_totals: list[tuple[int, float, int, int]] = field(default_factory=list)
    """Per evaluation: (step, metric sum, metric count, episodes), e.g. hits and shots over its episodes."""
    final_eval: tuple[int, float, float | None] | None = None
    """Evaluation after training ended (after the agent's ``on_training_end``, e.g. keep-best restore)."""
    final_eval_metric_totals: tuple[int, float, int, int] | None = None
    """(step, metric sum, metric count, episodes) of ``final_eval``."""
    steps: int = 0
    """Environment steps trained (the last episode may not have ended there)."""
    interrupted: bool = False
    """The run was stopped before its budget (Ctrl-C on the command line)."""
    setting_changes: list[tuple[int, str, Any, Any]] = field(default_factory=list)
    """(step, setting, old value, new value) for each setting changed when the run was resumed from a checkpoint."""

    def metric_text(self, last: int | None = 20, short: bool = False) -> str | None:
        """The task metric's counts and rate over the last ``last`` episodes; see ``history_metric_text``."""
        return history_metric_text(self, last, short)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class TrainingError(RuntimeError):
    """Training cannot go on; the message says why and what to change."""


class Callback:
    """Hooks into a ``TrainingRun``; subclass and override what you need. ``on_step`` returning False stops."""

    def on_start(self, run: Any) -> None:
        pass

    def on_step(self, run: Any) -> bool | None:
        return None

    def on_episode_end(self, run: Any) -> None:
        pass

    def on_eval(self, run: Any) -> None:
        pass

    def on_checkpoint(self, run: Any, path: str) -> None:
        pass

    def on_end(self, run: Any) -> None:
        pass


class PrintProgress(Callback):
    """Print a one-line summary every ``every`` episodes (headless runs and the CLI)."""

    def __init__(self, every: int = 10, print_fn: Callable[[str], None] = print) -> None:
        self.every = every
        self.print_fn = print_fn

    def on_episode_end(self, run: Any) -> None:
        h = run.history
        if run.episodes % self.every == 0:
            recent = h.episode_returns[-self.every:]
            self.print_fn(f"step {run.steps}/{run.total_steps}  episode {run.episodes}  "
                          f"mean return {np.mean(recent):.1f}  epsilon {getattr(run.agent, 'epsilon', 0):.3f}")

    def on_eval(self, run: Any) -> None:
        step, mean_return, metric = run.history.evals[-1]
        extra = f"  {run.history.task_metric} {metric:.3f}" if metric is not None else ""
        self.print_fn(f"eval at step {step}: mean return {mean_return:.1f}{extra}")


