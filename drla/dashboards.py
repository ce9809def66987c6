"""Every training metric as JSON lines (``--metrics FILE.jsonl``) and TensorBoard event files (``--tensorboard DIR``).

One ``MetricsWriter`` callback reads the run's history as it grows, so the loop itself is
untouched. JSON lines: one object per line with an ``event`` ("start", "episode", "train", "eval",
"growth", "end") and a ``step``; a line is flushed as soon as it is written, so a crashed or
interrupted run keeps what it logged. TensorBoard goes through tensorboardX (the CLI's
``tensorboard`` extra; never inside Blender): scalars under ``episode/``, ``train/``, ``eval/``, and
at each evaluation a histogram of every layer's weights.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from drla_core.rl.train import Callback

__all__ = ["MetricsWriter", "open_tensorboard"]


def open_tensorboard(logdir: str) -> Any:
    """A tensorboardX ``SummaryWriter`` on ``logdir``, or a clear error when the extra is not installed."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError as exc:
        raise ImportError("--tensorboard needs tensorboardX: pip install 'drla[tensorboard]' "
                          "(or pip install tensorboardX)") from exc
    return SummaryWriter(logdir=logdir)


def _clean(value: Any) -> Any:
    """JSON has no NaN or infinity: those become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class MetricsWriter(Callback):
    """Writes the run's metrics to a JSON-lines file and/or a TensorBoard writer as they happen."""

    def __init__(self, jsonl: str | Path | None = None, tensorboard: Any = None) -> None:
        self._file = open(jsonl, "a", encoding="utf-8") if jsonl is not None else None  # noqa: SIM115 (closed in on_end)
        self.tb = tensorboard
        self._losses = self._evals = self._growth = 0

    def _emit(self, event: str, step: int, **values: Any) -> None:
        if self._file is not None:
            line = {"event": event, "step": int(step), **{k: _clean(v) for k, v in values.items()}}
            self._file.write(json.dumps(line) + "\n")
            self._file.flush()
        if self.tb is not None:
            for key, value in values.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                    self.tb.add_scalar(f"{event}/{key}", value, int(step))

    def on_start(self, run: Any) -> None:
        if self._file is not None:
            self._emit("start", run.steps, total_steps=run.total_steps)
        self._losses, self._evals = len(run.history.losses), len(run.history.evals)

    def on_episode_end(self, run: Any) -> None:
        h = run.history
        values: dict[str, Any] = {"episode": len(h.episode_returns), "return": float(h.episode_returns[-1]),
                                  "length": int(h.episode_lengths[-1]), "epsilon": float(h.epsilons[-1])}
        if h.task_metric is not None and h.episode_metrics and h.episode_metrics[-1] is not None:
            values[h.task_metric] = float(h.episode_metrics[-1])
        self._emit("episode", h.episode_end_steps[-1], **values)
        self._flush_losses(run)
        self._flush_growth(run)

    def _flush_losses(self, run: Any) -> None:
        h = run.history
        for step, loss in zip(h.loss_steps[self._losses:], h.losses[self._losses:]):
            self._emit("train", step, loss=float(loss))
        self._losses = len(h.losses)

    def _flush_growth(self, run: Any) -> None:
        grown = getattr(run.agent, "growth_history", None) or []
        for record in grown[self._growth:]:
            self._emit("growth", record.get("step", run.steps), **{k: v for k, v in record.items() if k != "step"})
        self._growth = len(grown)

    def on_eval(self, run: Any) -> None:
        self._flush_losses(run)
        for step, mean_return, metric in run.history.evals[self._evals:]:
            self._emit("eval", step, mean_return=float(mean_return), **({} if metric is None else {"metric": metric}))
        self._evals = len(run.history.evals)
        self._flush_growth(run)
        net = getattr(run.agent, "q_network", None)
        if self.tb is not None and net is not None:
            for i, (w, b) in enumerate(zip(net.weights, net.biases)):
                self.tb.add_histogram(f"weights/layer{i}", w.ravel(), run.steps)
                self.tb.add_histogram(f"biases/layer{i}", b, run.steps)

    def on_end(self, run: Any) -> None:
        self._flush_losses(run)
        self._flush_growth(run)
        final = run.history.final_eval
        self._emit("end", run.steps, episodes=run.episodes, train_seconds=float(run.train_seconds),
                   **({} if final is None else {"final_mean_return": float(final[1])}))
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.tb is not None:
            self.tb.flush()
            self.tb.close()
