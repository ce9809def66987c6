"""``drla train SCENE --workers W [--ray [ADDRESS]]``: the add-on's worker processes (``addon.runs.workers``)
for the command line, and the same collectors as Ray actors on a local Ray or a cluster.

Ray is an extra of the command line (``pip install 'drla[ray]'``), never needed inside Blender.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np


class RayCollector:
    """A Ray actor's scene: the add-on loaded in the actor's process, then its ``Collector``."""

    def __init__(self, blend: str, tree_name: str, copies: int, seed: int) -> None:
        from drla.extension import register_extension  # in the actor's own process, where bpy loads

        register_extension()
        from drla_ext.addon.runs.workers import Collector

        self.collector = Collector(blend, tree_name, copies, seed)

    def copies_count(self) -> int:
        return self.collector.copies

    def collect(self, params: np.ndarray, epsilon: float, steps: int) -> Any:
        return self.collector.collect(params, epsilon, steps)

    def close(self) -> None:
        self.collector.close()


class RayPool:
    """Workers as Ray actors (``--ray`` or ``--ray ADDRESS``): the same collector on any machine of a cluster
    that has ``bpy`` and this checkout (``docs/cluster.md``). Ray is an extra of the CLI, never in Blender."""

    label = "Ray actors"

    def __init__(self, args: tuple, address: str | None, num_cpus: int | None = None) -> None:
        try:
            import ray
        except ImportError as exc:
            raise RuntimeError("--ray needs the ray package: pip install 'drla[ray]' (or pip install ray)") from exc
        self.ray = ray
        root = str(Path(__file__).resolve().parent.parent)
        if not ray.is_initialized():
            ray.init(address=address or None, num_cpus=None if address else num_cpus, include_dashboard=False,
                     runtime_env={"env_vars": {"PYTHONPATH": root}}, logging_level="ERROR")
        self.actor_class = ray.remote(num_cpus=1)(RayCollector)
        self.args = args

    def start(self, worker: Any) -> str:
        actor = self.actor_class.remote(*self.args, worker.seed)
        worker.handle = actor
        worker.pending = ("ready", actor.copies_count.remote())
        return "Ray actor"

    def death(self, worker: Any) -> str:
        return "its Ray actor is gone"

    def submit(self, worker: Any, params: np.ndarray, epsilon: float, steps: int) -> bool:
        worker.pending = ("chunk", worker.handle.collect.remote(params, epsilon, steps))
        return True

    def wait(self, workers: list[Any], timeout: float) -> list[tuple[Any, tuple]]:
        refs = {w.pending[1]: w for w in workers if w.pending is not None}
        if not refs:
            time.sleep(min(timeout, 0.05))
            return []
        done, _ = self.ray.wait(list(refs), num_returns=1, timeout=timeout)
        news = []
        for ref in done:
            worker = refs[ref]
            kind = worker.pending[0]
            worker.pending = None
            try:
                value = self.ray.get(ref)
            except self.ray.exceptions.RayError as exc:
                news.append((worker, ("dead", type(exc).__name__)))
                continue
            news.append((worker, ("ready", value) if kind == "ready" else ("chunk", *value)))
        return news

    def stop(self, worker: Any) -> None:
        self.ray.kill(worker.handle)

    def close(self, workers: list[Any]) -> None:
        for worker in workers:
            try:
                self.ray.get(worker.handle.close.remote(), timeout=30)
            except Exception:  # a dead actor: nothing to close
                pass
            self.stop(worker)


class RayEvaluator:
    """A Ray actor's scene for an Evolution tree: the add-on loaded in the actor's process, then its ``Evaluator``."""

    def __init__(self, blend: str, tree_name: str, copies: int, seed: int) -> None:
        from drla.extension import register_extension

        register_extension()
        from drla_ext.addon.runs.evolution_workers import Evaluator

        self.evaluator = Evaluator(blend, tree_name, copies)

    def copies_count(self) -> int:
        return self.evaluator.copies

    def answer(self, msg: tuple) -> Any:
        from drla_ext.addon.runs.evolution_workers import answer

        return answer(self.evaluator, msg)

    def close(self) -> None:
        self.evaluator.close()


class RayEvolutionPool(RayPool):
    """An Evolution tree's workers as Ray actors: each message is a call of the actor's ``answer`` (one actor's
    calls run in order), its answers taken in that order."""

    def __init__(self, args: tuple, address: str | None, num_cpus: int | None = None) -> None:
        super().__init__(args, address, num_cpus)
        self.actor_class = self.ray.remote(num_cpus=1)(RayEvaluator)

    def start(self, worker: Any) -> str:
        actor = self.actor_class.remote(*self.args, worker.seed)
        worker.handle = actor
        worker.calls = [("ready", actor.copies_count.remote())]
        return "Ray actor"

    def send(self, worker: Any, msg: tuple) -> bool:
        worker.calls.append((msg[0], worker.handle.answer.remote(msg)))
        return True

    def wait(self, workers: list[Any], timeout: float) -> list[tuple[Any, tuple]]:
        refs = {w.calls[0][1]: w for w in workers if w.calls}  # each worker's oldest call: answers in order
        if not refs:
            time.sleep(min(timeout, 0.05))
            return []
        done, _ = self.ray.wait(list(refs), num_returns=1, timeout=timeout)
        news: list[tuple[Any, tuple]] = []
        for ref in done:
            worker = refs[ref]
            kind, _ = worker.calls.pop(0)
            try:
                value = self.ray.get(ref)
            except self.ray.exceptions.RayActorError as exc:
                news.append((worker, ("dead", type(exc).__name__)))
                continue
            except self.ray.exceptions.RayTaskError as exc:
                news.append((worker, ("error", str(exc))))
                continue
            if kind == "ready":
                news.append((worker, ("ready", value)))
            elif value is not None:
                news.append((worker, value))
        return news


def workers_run(agent: Any, blend: str, tree_name: str, total_steps: int, *, workers: int, copies: int, seed: int,
                task_metric: str | None, ray: str | None = None, **run_kw: Any) -> Any:
    """A ``WorkersRun`` over worker processes, or over Ray actors with ``ray`` ("local" or an address);
    ``run_kw``: the run's other options (the learner's env, checkpoints)."""
    from drla_ext.addon.runs import workers as addon_workers

    args = (str(blend), tree_name, int(copies))
    pool = addon_workers.ProcessPool(*args) if ray is None else RayPool(args, None if ray == "local" else ray,
                                                                        num_cpus=int(workers))
    return addon_workers.WorkersRun(agent, pool, total_steps, workers=workers, seed=seed, task_metric=task_metric,
                                      **run_kw)
