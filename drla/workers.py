"""``drla train SCENE --workers W [--ray [ADDRESS]]``: W Blender (``bpy``) processes or Ray actors gather
experience, one learner trains.

Each worker is a process started with the multiprocessing *spawn* method (a process that has loaded
``bpy`` is never forked). It opens the .blend itself (never writing it), builds the tree's environment
(with the Environment node's copies, or ``--copies``), and repeats: receive the learner's network
weights and exploration rate, act for a chunk of steps with one network call per step for all its
copies, send the transitions and the finished episodes back. The learner (this process) feeds them to
the DQN agent (``observe_batch``: its schedules count every worker's steps) and answers each chunk with
the newest weights, so the workers act with a policy at most one chunk old.

A worker that dies (a crash, a kill) is started again with a new seed and its chunk is collected again:
the run goes on. ``WorkersRun`` is a ``TrainingJob`` like any other, so the CLI's progress bar, Ctrl-C,
summary and report work unchanged.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import numpy as np

from drla_core.plot import save_report
from drla_core.train import History, history_metric_text
from drla_core.vector_env import real_next_obs, vector_info_values

#: Vector steps a worker collects between two weight updates.
CHUNK_STEPS = 32
#: How often a worker that keeps dying is started again before the run gives up.
MAX_RESTARTS = 5


# ---- the worker process ------------------------------------------------------------------------------------


def _without_bpy_internals(paths: list[str]) -> list[str]:
    """``sys.path`` without the folders the ``bpy`` module adds when it loads (its own ``scripts/...``):
    spawn hands the parent's path to the child, where they would make ``import bpy`` find the inner
    ``bpy`` package of Blender's scripts instead of the module."""
    marker = f"{os.sep}bpy{os.sep}"
    return [p for p in paths if not (marker in p and f"{os.sep}scripts" in p)]


class Collector:
    """The scene side of a worker: the .blend opened in this process, its environment (with copies) and an
    agent that only acts; ``collect`` runs a chunk with the learner's weights. Used by a spawned process
    (``worker_main``) and by a Ray actor alike."""

    def __init__(self, blend: str, tree_name: str, copies: int, seed: int) -> None:
        if "bpy" not in sys.modules:  # a fresh process with the parent's path: bpy must find itself first
            sys.path[:] = _without_bpy_internals(sys.path)
        from drla.scene import addon_module, compile_or_explain, open_scene, quiet_egl  # after the path is clean

        bpy, ext, tree, scene = open_scene(blend, tree_name)
        compiled = compile_or_explain(ext, tree, scene)
        compiled.env.copies = copies
        build = addon_module("runs.build")
        self._restore = addon_module("scene.snapshot").restored_scene(scene)
        self._restore.__enter__()
        with quiet_egl():
            self.env = build.build_env(compiled, scene, copies=copies)
        self.vector = hasattr(self.env, "num_envs")
        self.agent = build.build_agent(compiled, self.env, seed=seed)
        obs, _ = self.env.reset(seed=seed)
        self.obs = obs if self.vector else obs[None]
        self.copies = len(self.obs)
        self.returns = np.zeros(self.copies)
        self.sums = np.zeros(self.copies)
        self.counts = np.zeros(self.copies, np.int64)

    def _step(self, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        """One step of every copy: (next obs, what the buffer stores, rewards, terminated, truncated, hits, has)."""
        env = self.env
        if self.vector:
            nxt, rewards, term, trunc, infos = env.step(actions)
            ended = term | trunc
            hits, has = vector_info_values(infos, env.task_metric, ended) if env.task_metric else (
                np.zeros(self.copies), np.zeros(self.copies, bool))
            return nxt, real_next_obs(nxt, infos), rewards, term, trunc, hits, has
        o, r, t, tr, info = env.step(int(actions[0]))
        stored = np.asarray(o)[None]
        nxt = env.reset()[0][None] if (t or tr) else stored
        return (nxt, stored, np.array([r]), np.array([t]), np.array([tr]), np.array([float(info.get("hit", 0))]),
                np.array(["hit" in info]))

    def copies_count(self) -> int:
        return self.copies

    def collect(self, params: np.ndarray, epsilon: float, steps: int) -> tuple[dict[str, np.ndarray], list]:
        """``steps`` steps of every copy with these weights: the transitions, and the episodes that ended
        as ``(return, hits, shots)``."""
        self.agent.q_network.params[:] = params
        self.agent.epsilon = epsilon
        batch: dict[str, list[Any]] = {k: [] for k in ("obs", "actions", "rewards", "next_obs", "terminated",
                                                      "truncated")}
        episodes: list[tuple[float, float, int]] = []
        for _ in range(steps):
            actions = self.agent.act_batch(self.obs, explore=True)
            nxt, stored, rewards, term, trunc, hits, has = self._step(actions)
            for key, value in (("obs", self.obs), ("actions", actions), ("rewards", rewards), ("next_obs", stored),
                               ("terminated", term), ("truncated", trunc)):
                batch[key].append(np.array(value))
            self.returns += rewards
            self.sums += np.where(has, hits, 0.0)
            self.counts += has
            for i in np.flatnonzero(term | trunc):
                episodes.append((float(self.returns[i]), float(self.sums[i]), int(self.counts[i])))
                self.returns[i] = self.sums[i] = self.counts[i] = 0
            self.obs = nxt
        return {k: np.stack(v) for k, v in batch.items()}, episodes

    def close(self) -> None:
        try:
            self.env.close()
        finally:
            self._restore.__exit__(None, None, None)


def worker_main(conn: Connection, blend: str, tree_name: str, copies: int, seed: int) -> None:
    """A spawned process: open the scene, then collect chunks of experience until told to stop."""
    collector = Collector(blend, tree_name, copies, seed)
    try:
        conn.send(("ready", collector.copies))
        while True:
            msg = conn.recv()
            if msg[0] == "stop":
                break
            conn.send(("chunk", *collector.collect(*msg[1:])))
    finally:
        collector.close()
        conn.close()


# ---- the learner ------------------------------------------------------------------------------------------


class _Worker:
    """One worker as the learner sees it: its index, whether it has work, how many copies it runs."""

    def __init__(self, index: int, seed: int) -> None:
        self.index, self.seed = index, seed
        self.copies = 0
        self.busy = False
        self.handle: Any = None  # the process and its pipe, or the Ray actor and its pending result
        self.pending: Any = None


class ProcessPool:
    """Workers as processes started with the *spawn* method, talking over pipes."""

    def __init__(self, args: tuple) -> None:
        self.ctx = mp.get_context("spawn")
        self.args = args

    def start(self, worker: _Worker) -> str:
        conn, child = self.ctx.Pipe()
        process = self.ctx.Process(target=worker_main, args=(child, *self.args, worker.seed), daemon=True,
                                   name=f"drla-worker-{worker.index}")
        kept = list(sys.path)
        sys.path[:] = _without_bpy_internals(kept)  # the child starts from this path (and may re-run __main__)
        try:
            process.start()
        finally:
            sys.path[:] = kept
        child.close()
        worker.handle = (process, conn)
        return f"process {process.pid}"

    def submit(self, worker: _Worker, params: np.ndarray, epsilon: float, steps: int) -> bool:
        try:
            worker.handle[1].send(("collect", params, epsilon, steps))
        except (BrokenPipeError, OSError):
            return False
        return True

    def wait(self, workers: list[_Worker], timeout: float) -> list[tuple[_Worker, tuple]]:
        """The workers with news: ``("ready", copies)``, ``("chunk", batch, episodes)`` or ``("dead", why)``."""
        conns = {w.handle[1]: w for w in workers}
        sentinels = {w.handle[0].sentinel: w for w in workers}
        ready = wait([*conns, *sentinels], timeout=timeout)
        news, seen = [], set()
        for item in ready:
            worker = conns.get(item) or sentinels[item]
            if worker.index in seen:
                continue
            seen.add(worker.index)
            process, conn = worker.handle
            try:
                if conn.poll():
                    news.append((worker, conn.recv()))
                    continue
            except (EOFError, OSError):
                pass
            process.join(timeout=5)
            news.append((worker, ("dead", f"exit code {process.exitcode}")))
        return news

    def stop(self, worker: _Worker) -> None:
        process, conn = worker.handle
        try:
            conn.send(("stop",))
        except (BrokenPipeError, OSError):
            pass

    def close(self, workers: list[_Worker]) -> None:
        for worker in workers:
            self.stop(worker)
        for worker in workers:
            process = worker.handle[0]
            process.join(timeout=30)
            if process.is_alive():
                process.kill()


class RayPool:
    """Workers as Ray actors (``--ray`` or ``--ray ADDRESS``): the same collector on any machine of a cluster
    that has ``bpy`` and this checkout (``docs/cluster.md``). Ray is an extra of the CLI, never in Blender."""

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
        self.actor_class = ray.remote(num_cpus=1)(Collector)
        self.args = args

    def start(self, worker: _Worker) -> str:
        actor = self.actor_class.remote(*self.args, worker.seed)
        worker.handle = actor
        worker.pending = ("ready", actor.copies_count.remote())
        return "Ray actor"

    def submit(self, worker: _Worker, params: np.ndarray, epsilon: float, steps: int) -> bool:
        worker.pending = ("chunk", worker.handle.collect.remote(params, epsilon, steps))
        return True

    def wait(self, workers: list[_Worker], timeout: float) -> list[tuple[_Worker, tuple]]:
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

    def stop(self, worker: _Worker) -> None:
        self.ray.kill(worker.handle)

    def close(self, workers: list[_Worker]) -> None:
        for worker in workers:
            try:
                self.ray.get(worker.handle.close.remote(), timeout=30)
            except Exception:  # a dead actor: nothing to close
                pass
            self.stop(worker)


class WorkersRun:
    """DQN trained from the experience of ``workers`` scene processes or Ray actors (a ``TrainingJob``)."""

    def __init__(self, agent: Any, blend: str, tree_name: str, total_steps: int, *, workers: int = 2,
                 copies: int = 1, seed: int = 0, task_metric: str | None = None, log: Any = None,
                 ray: str | None = None) -> None:
        self.agent, self.total_steps, self.seed = agent, int(total_steps), int(seed)
        self.history = History(task_metric=task_metric)
        self.steps = 0
        self.episodes = 0
        self.done = False
        self.train_seconds = 0.0
        self.restarts = 0
        self.log = log or (lambda text: print(text, file=sys.stderr, flush=True))
        self._interrupted = False
        args = (str(blend), tree_name, int(copies))
        self.pool: ProcessPool | RayPool = ProcessPool(args) if ray is None else RayPool(
            args, None if ray == "local" else ray, num_cpus=int(workers))
        self._next_seed = self.seed + 1000
        self.started_at = time.perf_counter()
        self.first_step_s: float | None = None
        self.workers = [self._start(_Worker(i, 0)) for i in range(int(workers))]

    def _start(self, worker: _Worker) -> _Worker:
        self._next_seed += 1
        worker.seed, worker.busy, worker.copies = self._next_seed, False, 0
        self.log(f"worker {worker.index}: {self.pool.start(worker)}")
        return worker

    def _send_work(self, worker: _Worker) -> None:
        if self.pool.submit(worker, self.agent.q_network.params, float(self.agent.epsilon), CHUNK_STEPS):
            worker.busy = True
        else:
            self._restart(worker, "its pipe is closed")

    def _restart(self, worker: _Worker, why: str) -> None:
        """A worker died: start another in its place (its chunk in flight is collected again)."""
        self.restarts += 1
        if self.restarts > MAX_RESTARTS * len(self.workers):
            raise RuntimeError(f"the workers keep dying ({self.restarts} restarts): see the messages above")
        self.log(f"worker {worker.index} stopped ({why}); starting another in its place")
        self._start(worker)

    def _handle(self, worker: _Worker, msg: tuple) -> None:
        if msg[0] == "dead":
            self._restart(worker, msg[1])
            return
        if msg[0] == "ready":
            worker.copies = msg[1]
        elif msg[0] == "chunk":
            self._learn(msg[1], msg[2])
        worker.busy = False
        if not self.done:
            self._send_work(worker)

    def _learn(self, batch: dict[str, np.ndarray], episodes: list[tuple[float, float, int]]) -> None:
        t0 = time.perf_counter()
        if self.first_step_s is None:
            self.first_step_s = t0 - self.started_at
        for row in range(len(batch["rewards"])):
            if self.steps >= self.total_steps:
                break
            out = self.agent.observe_batch(batch["obs"][row], batch["actions"][row], batch["rewards"][row],
                                           batch["next_obs"][row], batch["terminated"][row], batch["truncated"][row])
            self.steps += len(batch["rewards"][row])
            if out and "loss" in out:
                self.history.losses.append(float(out["loss"]))
                self.history.loss_steps.append(self.steps)
        h = self.history
        for ret, hits, shots in episodes:
            self.episodes += 1
            h.episode_returns.append(ret)
            h.episode_lengths.append(0)
            h.episode_end_steps.append(self.steps)
            h.epsilons.append(float(self.agent.epsilon))
            if h.task_metric is not None:
                h.episode_metrics.append(hits / shots if shots else None)
                h.episode_metric_sums.append(hits)
                h.episode_metric_counts.append(shots)
        h.steps = self.steps
        self.train_seconds += time.perf_counter() - t0
        if self.steps >= self.total_steps:
            self._finish()

    # ---- as a TrainingJob ---------------------------------------------------------------------------------
    def advance(self, max_steps: int | None = None, max_seconds: float | None = None) -> int:
        start = self.steps
        deadline = time.perf_counter() + (max_seconds if max_seconds is not None else 3600.0)
        while not self.done and time.perf_counter() < deadline:
            if max_steps is not None and self.steps - start >= max_steps:
                break
            for worker, msg in self.pool.wait(self.workers, max(0.0, min(1.0, deadline - time.perf_counter()))):
                if not self.done:
                    self._handle(worker, msg)
        return self.steps - start

    def _finish(self) -> None:
        self.done = True
        self.pool.close(self.workers)

    def resume(self, env: Any = None) -> None:
        """Nothing to rebuild: the workers own their scenes."""

    def stop(self, evaluate: bool = True, interrupted: bool = False) -> None:
        self._interrupted = self._interrupted or interrupted
        self.history.interrupted = self._interrupted
        if not self.done:
            self._finish()

    @property
    def interrupted(self) -> bool:
        return self._interrupted

    def finish(self) -> None:
        if not self.done:
            self._finish()

    def status(self) -> dict[str, str]:
        returns = self.history.episode_returns[-20:]
        mean = sum(returns) / len(returns) if returns else 0.0
        copies = sum(w.copies for w in self.workers)
        return {"Workers": f"{len(self.workers)} ({copies} copies)", "Episodes": str(self.episodes),
                "Epsilon": f"{float(self.agent.epsilon):.2f}", "Return": f"{mean:.2f}"}

    def summary(self, wall_seconds: float) -> list[str]:
        last = self.history.episode_returns[-20:]
        lines = [f"trained {self.steps} steps, {self.episodes} episodes in {wall_seconds:.1f} s with "
                 f"{len(self.workers)} {'Ray actors' if isinstance(self.pool, RayPool) else 'worker processes'} "
                 f"({self.steps / max(wall_seconds, 1e-9):,.0f} steps/s)",
                 f"mean return of the last {len(last)} episodes: {np.mean(last):.2f}" if last
                 else "no episode finished"]
        metric = history_metric_text(self.history, 20)
        if metric and last:
            lines.append(f"last {len(last)} episodes: {metric}")
        if self.restarts:
            lines.append(f"{self.restarts} worker restart(s): their lost chunks were collected again")
        return lines

    def save_report(self, path: Any, title: str, wall_seconds: float = 0.0) -> Path:
        return save_report(path, self.history, title)

    def to_model(self, meta: dict[str, Any] | None = None) -> Any:
        return self.agent.to_model({**(meta or {}), "episodes": self.episodes, "workers": len(self.workers)})
