"""Schedules for exploration rates and learning rates."""

from __future__ import annotations

__all__ = ["linear_schedule"]


def linear_schedule(start: float, end: float, fraction: float, progress: float) -> float:
    """Go linearly from ``start`` to ``end`` over the first ``fraction`` of training, then stay at ``end``.

    ``progress`` is the fraction of training done (0 at the start, 1 at the end), as in SB3's
    ``get_linear_fn`` (there written with ``1 - progress_remaining``).
    """
    if fraction <= 0.0 or progress >= fraction:
        return float(end)
    return float(start + (end - start) * max(progress, 0.0) / fraction)
