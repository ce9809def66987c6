"""Learned IK as a ``TrainingJob``: ``IKTrainingJob`` trains an ``IKSolver`` in time slices for the panel and the
CLI, with its accuracy figures (``accuracy``, ``accuracy_text``) and the report picture."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from ..io.model_io import Model

from .ik import IKSolver, save_report

__all__ = ["IKTrainingJob", "accuracy", "accuracy_text", "save_ik_report"]


# ---- accuracy and report ---------------------------------------------------------------------------
def accuracy(solver: IKSolver, n: int = 1000, seed: int = 0, iters: int = 3) -> dict[str, float]:
    """Tip errors (mm) on ``n`` random reachable targets: network alone and network + refinement."""
    targets, _ = solver.arm.sample_targets(n, seed)
    out: dict[str, float] = {}
    for key, angles in (("net", solver.solve(targets)), ("refined", solver.solve_refined(targets, iters=iters))):
        err = solver.errors(targets, angles) * 1000.0
        out[f"{key}_median_mm"] = float(np.median(err))
        out[f"{key}_p90_mm"] = float(np.percentile(err, 90))
        out[f"{key}_under_1mm"] = float(np.mean(err < 1.0))
    return out


def accuracy_text(acc: dict[str, float]) -> str:
    return (f"network alone: median {acc['net_median_mm']:.1f} mm, p90 {acc['net_p90_mm']:.1f} mm, "
            f"{acc['net_under_1mm']:.1%} under 1 mm; network + refinement: median {acc['refined_median_mm']:.4f} mm, "
            f"p90 {acc['refined_p90_mm']:.4f} mm, {acc['refined_under_1mm']:.1%} under 1 mm")


def save_ik_report(path: str | Path, solver: IKSolver, acc: dict[str, float], title: str,
                   seconds: float = 0.0) -> Path:
    """The training report PNG: validation error curve plus the accuracy summary."""
    lines = [f"{solver.arm.name}: {solver.arm.n_dofs} joints, reach {solver.arm.reach:.3f} m",
             f"trained {solver.train_steps} steps" + (f" in {seconds:.1f} s" if seconds else ""),
             "1000 random reachable targets:",
             f"network alone: median {acc['net_median_mm']:.1f} mm",
             f"  p90 {acc['net_p90_mm']:.1f} mm, {acc['net_under_1mm']:.1%} < 1 mm",
             f"+ refinement: median {acc['refined_median_mm']:.4f} mm",
             f"  p90 {acc['refined_p90_mm']:.4f} mm, {acc['refined_under_1mm']:.1%} < 1 mm"]
    return save_report(path, list(getattr(solver, "curve", []) or []), lines, title)


# ---- the training job ------------------------------------------------------------------------------
class IKTrainingJob:
    """Learned IK training as a ``TrainingJob``: the solver's step generator (self-supervised or reward)
    advanced in slices. Resuming is advancing again: the generator keeps the optimiser and the
    schedule. ``evaluate`` measures the accuracy the model file and the report carry."""

    def __init__(self, solver: IKSolver, method: str = "SELF_SUPERVISED", total_steps: int = 16000,
                 max_seconds: float | None = None, refine_iters: int = 3) -> None:
        self.solver, self.method, self.total_steps = solver, method, int(total_steps)
        self.max_seconds, self.refine_iters = max_seconds, int(refine_iters)
        every = max(50, self.total_steps // 50)  # validation every ~2 % of the steps
        train = solver.iter_reward if method == "REWARD" else solver.iter_self_supervised
        self._gen = train(steps=self.total_steps, max_seconds=max_seconds or None, eval_every=every)
        self.steps = 0
        self.done = False
        self._interrupted = False
        self.train_seconds = 0.0  # wall seconds inside advance()
        self.accuracy: dict[str, float] = {}
        self.history: dict[str, Any] = {"losses": [], "loss_steps": [], "episode_returns": [],
                                        "loss_name": "Median tip error (mm)"}

    def advance(self, max_steps: int | None = None, max_seconds: float | None = None) -> int:
        """Train for at most ``max_steps`` steps or ``max_seconds`` seconds; returns the steps done."""
        t0 = time.perf_counter()
        t_end = None if max_seconds is None else t0 + max_seconds
        start = self.steps
        while not self.done:
            try:
                self.steps, _ = next(self._gen)
            except StopIteration:
                self.done = True
                break
            if max_steps is not None and self.steps - start >= max_steps:
                break
            if t_end is not None and time.perf_counter() >= t_end:
                break
        curve = getattr(self.solver, "curve", None) or []
        self.history["losses"] = [1000.0 * m for _, m, _ in curve]
        self.history["loss_steps"] = [step for step, _, _ in curve]
        self.train_seconds += time.perf_counter() - t0
        return self.steps - start

    def resume(self, env: Any = None) -> None:
        """Nothing to rebuild: the arm is read once, the generator goes on."""
        self.done = self.steps >= self.total_steps
        self._interrupted = False

    def stop(self, evaluate: bool = True, interrupted: bool = False) -> None:
        """End the job now (the accuracy is still measured by ``finish``)."""
        self.done = True
        self._interrupted = self._interrupted or interrupted

    @property
    def interrupted(self) -> bool:
        return self._interrupted

    def finish(self) -> None:
        """Measure the accuracy on 1000 random reachable targets (the model file and the report carry it)."""
        self.evaluate(n=1000, seed=12345)

    def summary(self, wall_seconds: float) -> list[str]:
        """Steps and speed, then the accuracy of the network alone and with refinement."""
        seconds = self.solver.train_seconds if self.done and not self._interrupted else wall_seconds
        lines = [f"trained {self.steps} steps in {wall_seconds:.1f} s ({self.steps / max(seconds, 1e-9):,.0f} steps/s)"]
        if self.accuracy:
            lines.append(f"on 1000 random reachable targets: {accuracy_text(self.accuracy)}")
        return lines

    def save_report(self, path: Any, title: str, wall_seconds: float = 0.0) -> Path:
        """The validation error curve and the accuracy summary (``finish`` measures it first)."""
        if not self.accuracy:
            self.finish()
        return save_ik_report(path, self.solver, self.accuracy, title, wall_seconds)

    def error_mm(self) -> float:
        """The latest validation median tip error, network alone (mm)."""
        curve = getattr(self.solver, "curve", None) or []
        return 1000.0 * curve[-1][1] if curve else 0.0

    def status(self) -> dict[str, str]:
        return {"Median tip error": f"{self.error_mm():.1f} mm"}

    def evaluate(self, n: int = 1000, seed: int = 12345) -> dict[str, float]:
        """Accuracy on ``n`` random reachable targets, kept for ``to_model`` and the report."""
        self.accuracy = accuracy(self.solver, n, seed=seed, iters=self.refine_iters)
        return self.accuracy

    def to_model(self, meta: dict[str, Any] | None = None) -> Model:
        info = {**(meta or {}), "method": self.method, "refine_iters": self.refine_iters,
                **{k: round(v, 6) for k, v in self.accuracy.items()}}
        return self.solver.to_model(info)
