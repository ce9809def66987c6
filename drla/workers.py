"""``drla train SCENE --workers W``: W Blender (``bpy``) processes gather experience, one learner trains.

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


def worker_main(conn: Connection, blend: str, tree_name: str, copies: int, seed: int) -> None:
    """A spawned process: open the scene, then collect chunks of experience until told to stop."""
    sys.path[:] = _without_bpy_internals(sys.path)
    from drla.scene import addon_module, compile_or_explain, open_scene, quiet_egl  # after the path is clean

    bpy, ext, tree, scene = open_scene(blend, tree_name)
    compiled = compile_or_explain(ext, tree, scene)
    compiled.env.copies = copies
    build = addon_module("runs.build")
    with addon_module("scene.snapshot").restored_scene(scene):
        with quiet_egl():
            env = build.build_env(compiled, scene, copies=copies)
        try:
            vector = hasattr(env, "num_envs")
            agent = build.build_agent(compiled, env, seed=seed)
            obs, _ = env.reset(seed=seed)
            obs = obs if vector else obs[None]
            returns = np.zeros(len(obs))
            sums = np.zeros(len(obs))
            counts = np.zeros(len(obs), np.int64)
            conn.send(("ready", len(obs)))
            while True:
                msg = conn.recv()
                if msg[0] == "stop":
                    break
                _, params, epsilon, steps = msg
                agent.q_network.params[:] = params
                agent.epsilon = epsilon
                batch: dict[str, list[Any]] = {k: [] for k in ("obs", "actions", "rewards", "next_obs", "terminated",
                                                              "truncated")}
                episodes: list[tuple[float, float, int]] = []
                for _ in range(steps):
                    actions = agent.act_batch(obs, explore=True)
                    if vector:
                        nxt, rewards, term, trunc, infos = env.step(actions)
                        stored = real_next_obs(nxt, infos)
                        ended = term | trunc
                        hits, has = vector_info_values(infos, env.task_metric, ended) if env.task_metric else (
                            np.zeros(len(obs)), np.zeros(len(obs), bool))
                    else:
                        o, r, t, tr, info = env.step(int(actions[0]))
                        rewards, term, trunc = np.array([r]), np.array([t]), np.array([tr])
                        stored = np.asarray(o)[None]
                        ended = term | trunc
                        hits = np.array([float(info.get("hit", 0))])
                        has = np.array(["hit" in info])
                        nxt = stored if not ended[0] else env.reset()[0][None]
                    for key, value in (("obs", obs), ("actions", actions), ("rewards", rewards),
                                       ("next_obs", stored), ("terminated", term), ("truncated", trunc)):
                        batch[key].append(np.array(value))
                    returns += rewards
                    sums += np.where(has, hits, 0.0)
                    counts += has
                    for i in np.flatnonzero(ended):
                        episodes.append((float(returns[i]), float(sums[i]), int(counts[i])))
                        returns[i] = sums[i] = counts[i] = 0
                    obs = nxt
                conn.send(("chunk", {k: np.stack(v) for k, v in batch.items()}, episodes))
        finally:
            env.close()
    conn.close()


# ---- the learner ------------------------------------------------------------------------------------------


class _Worker:
    def __init__(self, ctx: Any, index: int, args: tuple, seed: int) -> None:
        self.index, self.seed = index, seed
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=worker_main, args=(child, *args, seed), daemon=True,
                                   name=f"drla-worker-{index}")
        self.process.start()
        child.close()
        self.copies = 0
        self.busy = False


class WorkersRun:
    """DQN trained from the experience of ``workers`` spawned scene processes (a ``TrainingJob``)."""

    def __init__(self, agent: Any, blend: str, tree_name: str, total_steps: int, *, workers: int = 2,
                 copies: int = 1, seed: int = 0, task_metric: str | None = None, log: Any = None) -> None:
        self.agent, self.total_steps, self.seed = agent, int(total_steps), int(seed)
        self.history = History(task_metric=task_metric)
        self.steps = 0
        self.episodes = 0
        self.done = False
        self.train_seconds = 0.0
        self.restarts = 0
        self.log = log or (lambda text: print(text, file=sys.stderr, flush=True))
        self._interrupted = False
        self._ctx = mp.get_context("spawn")
        self._args = (str(blend), tree_name, int(copies))
        self._next_seed = self.seed + 1000
        self.workers = [self._start(i) for i in range(int(workers))]
        self.started_at = time.perf_counter()
        self.first_step_s: float | None = None

    def _start(self, index: int) -> _Worker:
        self._next_seed += 1
        worker = _Worker(self._ctx, index, self._args, self._next_seed)
        self.log(f"worker {index}: process {worker.process.pid}")
        return worker

    def _send_work(self, worker: _Worker) -> None:
        params = self.agent.q_network.params
        worker.conn.send(("collect", params, float(self.agent.epsilon), CHUNK_STEPS))
        worker.busy = True

    def _restart(self, worker: _Worker) -> None:
        """A worker died: start another in its place (its chunk in flight is collected again)."""
        self.restarts += 1
        if self.restarts > MAX_RESTARTS * len(self.workers):
            raise RuntimeError(f"the workers keep dying ({self.restarts} restarts): see the messages above")
        code = worker.process.exitcode
        self.log(f"worker {worker.index} stopped (exit code {code}); starting another in its place")
        worker.conn.close()
        self.workers[worker.index] = self._start(worker.index)

    def _receive(self, worker: _Worker) -> None:
        try:
            msg = worker.conn.recv()
        except (EOFError, OSError):
            worker.process.join(timeout=5)
            self._restart(worker)
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
            for worker in self.workers:
                if not worker.busy and worker.copies:
                    self._send_work(worker)
            ready = wait([w.conn for w in self.workers] + [w.process.sentinel for w in self.workers],
                         timeout=max(0.0, min(1.0, deadline - time.perf_counter())))
            for worker in list(self.workers):
                if worker.conn in ready or (worker.process.sentinel in ready and worker.conn.poll()):
                    self._receive(worker)
                elif worker.process.sentinel in ready:
                    self._restart(worker)
        return self.steps - start

    def _finish(self) -> None:
        self.done = True
        for worker in self.workers:
            try:
                worker.conn.send(("stop",))
            except (BrokenPipeError, OSError):
                pass
        for worker in self.workers:
            worker.process.join(timeout=30)
            if worker.process.is_alive():
                worker.process.kill()

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
                 f"{len(self.workers)} worker processes ({self.steps / max(wall_seconds, 1e-9):,.0f} steps/s)",
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
