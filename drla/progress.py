"""A dependency-free progress bar for any training job: a ``TrainingRun`` callback, or called after
each slice of another ``TrainingJob`` (``on_step(job)``)."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from drla_core.rl.train import METRIC_WORDS, ONCE_PER_EPISODE, Callback


def _fmt_seconds(s: float) -> str:
    s = max(0, int(round(s)))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class ProgressBar(Callback):
    """Prints ``[####....] steps | the job's status figures | hits/ep of shots | steps/s | ETA``.

    On a terminal it redraws one line a few times a second; elsewhere (CI, a log file) it
    prints a line at every 10 % so logs stay short.
    """

    def __init__(self, total_steps: int, stream: TextIO | None = None, width: int = 24, every_s: float = 0.25):
        self.total = max(1, int(total_steps))
        self.stream = stream or sys.stderr
        self.width = width
        self.every_s = every_s
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_draw = 0.0
        self._last_decile = 0  # no line for the very first step (its rate means nothing yet)
        self._t0 = time.perf_counter()

    # -- callback interface -------------------------------------------------------------
    def on_start(self, run: Any) -> None:
        self._t0 = time.perf_counter()

    def on_step(self, run: Any) -> None:  # type: ignore[override]
        now = time.perf_counter()
        decile = run.steps * 10 // self.total
        if self.tty and now - self._last_draw >= self.every_s:
            self._draw(run, end="")
            self._last_draw = now
        elif not self.tty and decile != self._last_decile:
            self._last_decile = decile
            self._draw(run, end="\n")

    def on_end(self, run: Any) -> None:
        if self.tty or self._last_decile != 10:
            self._draw(run, end="\n")

    # -- drawing --------------------------------------------------------------------------
    def line(self, run: Any) -> str:
        """The bar, then the job's own figures (``status()``, what the sidebar shows), the task's counts
        when the job keeps them, the speed and the time left. ``run`` is any ``TrainingJob``."""
        steps = int(run.steps)
        frac = min(1.0, steps / self.total)
        filled = int(frac * self.width)
        elapsed = time.perf_counter() - self._t0
        rate = steps / elapsed if elapsed > 0 else 0.0
        eta = (self.total - steps) / rate if rate > 0 else 0.0
        parts = [f"[{'#' * filled}{'.' * (self.width - filled)}] {steps:>{len(str(self.total))}}/{self.total}"]
        parts += [f"{label.lower()} {value}" for label, value in run.status().items()]
        metric = getattr(run.history, "task_metric", None)
        sums = getattr(run.history, "episode_metric_sums", [])[-20:]
        counts = getattr(run.history, "episode_metric_counts", [])[-20:]
        if metric and sums:  # counts per episode, then the rate: one lucky shot is not "100 %"
            (_, ones), (_, events) = METRIC_WORDS.get(metric, ((metric, metric), ("event", "events")))
            hits, shots = sum(sums), sum(counts)
            share = f" ({hits / shots:.0%})" if shots else ""
            if metric in ONCE_PER_EPISODE:  # an escape: the rate alone says it
                parts.append(f"{metric} {hits / shots:.0%}")
            else:
                parts.append(f"{ones}/ep {hits / len(sums):.2f} of {shots / len(sums):.2f} {events}{share}")
        parts.append(f"{rate:,.0f} steps/s")
        parts.append(f"ETA {_fmt_seconds(eta)}")
        return " | ".join(parts)

    def _draw(self, run: Any, end: str) -> None:
        prefix = "\r" if self.tty else ""
        self.stream.write(prefix + self.line(run) + end)
        self.stream.flush()
