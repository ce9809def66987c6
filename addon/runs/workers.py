"""Training with worker processes: W Blender processes gather experience, one learner trains.

Each worker is a separate process: a Blender started in the background on a copy of the .blend when
this runs inside Blender, or a Python with the ``bpy`` module (the command line, the tests). It opens
the file, builds the tree's environment with its copies and repeats: receive the learner's network
weights and exploration rate, act for a chunk of steps (one network call per step for all its copies),
send the transitions and the finished episodes back. The learner feeds them to the DQN agent
(``observe_batch``: its schedules count every worker's steps) and answers each chunk with the newest
weights. A worker that dies is started again and its chunk collected again: the run goes on.

``WorkersRun`` is a ``TrainingJob``: the panel's session, the CLI's progress bar, Ctrl-C, summary and
report work unchanged. How workers are started is a *pool*: ``ProcessPool`` here; the CLI adds a Ray pool.
A process talks to the learner over a socket pair handed to it at start (Linux and macOS).
"""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import bpy
import numpy as np

from ...drla_core.rl.checkpoint import read_checkpoint, save_checkpoint
from ...drla_core.rl.restore import restore_run
from ...drla_core.io.plot import save_report
from ...drla_core.rl.train import History, history_metric_text
from ...drla_core.base.vector_env import real_next_obs, vector_info_values
from ..scene.snapshot import restored_scene
from ..tree.compiler import compile_tree
from ..tree.node_tree import TREE_ID
from ..preferences import checkpoint_dir
from . import build, outputs
from .outputs import safe_name

#: Vector steps a worker collects between two weight updates.
CHUNK_STEPS = 32
#: How often a worker that keeps dying is started again before the run gives up.
MAX_RESTARTS = 5
#: The package this add-on is (``bl_ext.user_default.drla`` in Blender, ``drla_ext`` for the CLI), and its folder.
PACKAGE = __package__.rsplit(".", 2)[0]
ROOT = str(Path(__file__).resolve().parents[2])


# ---- the worker side --------------------------------------------------------------------------------------


class Collector:
    """A worker's scene: the .blend opened in this process, its environment (with copies) and an agent that
    only acts; ``collect`` runs a chunk with the learner's weights. The file on disk is never written."""

    def __init__(self, blend: str, tree_name: str, copies: int, seed: int) -> None:
        bpy.context.preferences.filepaths.use_scripts_auto_execute = False  # never run a file's scripts
        bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False)
        scene = bpy.context.scene
        tree = next(t for t in bpy.data.node_groups if t.bl_idname == TREE_ID and t.name == tree_name)
        compiled = compile_tree(tree, scene)
        compiled.env.copies = copies
        self._restore = restored_scene(scene)
        self._restore.__enter__()
        self.env = build.build_env(compiled, scene, copies=copies)
        self.vector = hasattr(self.env, "num_envs")
        self.agent = build.build_agent(compiled, self.env, seed=seed)
        obs, _ = self.env.reset(seed=seed)
        self.obs = obs if self.vector else obs[None]
        self.copies = len(self.obs)
        self.returns = np.zeros(self.copies)
        self.sums = np.zeros(self.copies)
        self.counts = np.zeros(self.copies, np.int64)

    def copies_count(self) -> int:
        return self.copies

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

    def collect(self, params: np.ndarray, epsilon: float, steps: int) -> tuple[dict[str, np.ndarray], list]:
        """``steps`` steps of every copy with these weights: the transitions, and the episodes that ended
        as ``(return, hits, shots, row)`` (``row``: the step of the chunk it ended on)."""
        self.agent.q_network.params[:] = params
        self.agent.epsilon = epsilon
        batch: dict[str, list[Any]] = {k: [] for k in ("obs", "actions", "rewards", "next_obs", "terminated",
                                                      "truncated")}
        episodes: list[tuple[float, float, int, int]] = []
        for _ in range(steps):
            actions = self.agent.act_batch(self.obs, explore=True)
            nxt, stored, rewards, term, trunc, hits, has = self._step(actions)
            for key, value in (("obs", self.obs), ("actions", actions), ("rewards", rewards), ("next_obs", stored),
                               ("terminated", term), ("truncated", trunc)):
                batch[key].append(np.array(value))
            self.returns += rewards
            self.sums += np.where(has, hits, 0.0)
            self.counts += has
            row = len(batch["obs"]) - 1  # the row each episode ended on: the learner records it there
            for i in np.flatnonzero(term | trunc):
                episodes.append((float(self.returns[i]), float(self.sums[i]), int(self.counts[i]), row))
                self.returns[i] = self.sums[i] = self.counts[i] = 0
            self.obs = nxt
        return {k: np.stack(v) for k, v in batch.items()}, episodes

    def close(self) -> None:
        try:
            self.env.close()
        finally:
            self._restore.__exit__(None, None, None)


def child_main(fd: int, blend: str, tree_name: str, copies: int, seed: int) -> None:
    """A worker process: open the scene, then collect chunks until told to stop (or the learner is gone)."""
    conn = Connection(fd)
    collector = Collector(blend, tree_name, copies, seed)
    try:
        conn.send(("ready", collector.copies))
        while True:
            try:
                msg = conn.recv()
            except EOFError:
                break
            if msg[0] == "stop":
                break
            conn.send(("chunk", *collector.collect(*msg[1:])))
    finally:
        collector.close()
        conn.close()


#: What a worker process runs: find this add-on (enabled in a Blender, so imported at its start, or loaded
#: from its folder with the ``bpy`` module and registered: importable is not enough, as with the package
#: ``pip install`` puts beside the ``drla`` command), then ``child_main``. Arguments come as the last items
#: of ``sys.argv`` (the last: the module of ``addon.runs`` whose ``child_main`` runs).
CHILD_CODE = """\
import importlib, importlib.util, sys
fd, blend, tree, copies, seed, package, root, module = sys.argv[-8:]
if package in sys.modules:
    workers = importlib.import_module(package + ".addon.runs." + module)
else:
    import bpy
    spec = importlib.util.spec_from_file_location(package, root + "/__init__.py", submodule_search_locations=[root])
    ext = importlib.util.module_from_spec(spec)
    sys.modules[package] = ext
    spec.loader.exec_module(ext)
    ext.register()
    workers = importlib.import_module(package + ".addon.runs." + module)
workers.child_main(int(fd), blend, tree, int(copies), int(seed))
"""


def worker_command() -> list[str]:
    """How to start a worker: Blender itself in the background, or this Python (which has the bpy module)."""
    binary = bpy.app.binary_path
    if binary and os.path.basename(binary).lower().startswith("blender"):
        return [binary, "--background", "--python-exit-code", "1", "--python-expr", CHILD_CODE, "--"]
    return [sys.executable, "-c", CHILD_CODE]


# ---- the learner side -------------------------------------------------------------------------------------




class _Worker:
    """One worker as the learner sees it: its index, whether it has work, how many copies it runs."""

    def __init__(self, index: int, seed: int) -> None:
        self.index, self.seed = index, seed
        self.copies = 0
        self.busy = False
        self.handle: Any = None  # the process and its connection, or a Ray actor
        self.pending: Any = None


class ProcessPool:
    """Workers as processes of their own (never forked from a process that loaded ``bpy``), each talking to
    the learner over a socket pair."""

    label = "worker processes"
    #: The module of ``addon.runs`` whose ``child_main(fd, blend, tree, copies, seed)`` a worker runs.
    module = "workers"

    def __init__(self, blend: str, tree_name: str, copies: int) -> None:
        if os.name == "nt":
            raise RuntimeError("worker processes are not supported on Windows yet: set Workers to 0")
        self.args = (blend, tree_name, int(copies))

    def start(self, worker: _Worker) -> str:
        ours, theirs = socket.socketpair()
        argv = [str(theirs.fileno()), *map(str, self.args), str(worker.seed), PACKAGE, ROOT, self.module]
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # one core each: see drla/
        process = subprocess.Popen([*worker_command(), *argv], pass_fds=(theirs.fileno(),),
                                   stdin=subprocess.DEVNULL, env=env)
        theirs.close()
        worker.handle = (process, Connection(ours.detach()))
        return f"process {process.pid}"

    def submit(self, worker: _Worker, params: np.ndarray, epsilon: float, steps: int) -> bool:
        try:
            worker.handle[1].send(("collect", params, epsilon, steps))
        except OSError:
            return False
        return True

    def death(self, worker: _Worker) -> str:
        """How a worker whose connection broke ended (its exit code)."""
        process = worker.handle[0]
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        return f"exit code {process.poll()}"

    def wait(self, workers: list[_Worker], timeout: float) -> list[tuple[_Worker, tuple]]:
        """The workers with news: ``("ready", copies)``, ``("chunk", batch, episodes)`` or ``("dead", why)``."""
        conns = {w.handle[1]: w for w in workers}
        news = []
        for conn in wait(list(conns), timeout=timeout):
            worker = conns[conn]
            try:
                news.append((worker, conn.recv()))
            except (EOFError, OSError):
                news.append((worker, ("dead", self.death(worker))))
        return news

    def close(self, workers: list[_Worker]) -> None:
        for worker in workers:
            try:
                worker.handle[1].send(("stop",))
            except OSError:
                pass
        for worker in workers:
            process, conn = worker.handle
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
            conn.close()


class WorkersRun:
    """DQN trained from the experience of ``workers`` processes of a pool (a ``TrainingJob``).

    Every ``checkpoint_interval`` steps (0: never) ``save_fn(run, checkpoint_path with {step})`` runs, at the
    first row of experience that reaches the multiple, however the chunks and the slices fall. The learner's
    state is a ``drla_core.rl.checkpoint`` of one environment (``save_checkpoint``; ``env`` is this process's view of
    the scene, never stepped): ``--resume`` continues it with workers or without.
    """

    def __init__(self, agent: Any, pool: Any, total_steps: int, *, workers: int = 2, seed: int = 0,
                 task_metric: str | None = None, log: Any = None, env: Any = None, checkpoint_interval: int = 0,
                 checkpoint_path: str | None = None, save_fn: Any = None) -> None:
        if checkpoint_interval and not checkpoint_path:
            raise ValueError("checkpoint_interval needs a checkpoint_path")
        self.agent, self.pool, self.total_steps, self.seed = agent, pool, int(total_steps), int(seed)
        self.history = History(task_metric=task_metric)
        self.env = env
        self.checkpoint_interval, self.checkpoint_path = int(checkpoint_interval or 0), checkpoint_path
        self.save_fn = save_fn or build.save_checkpoint_model
        self._next_checkpoint = self.checkpoint_interval if self.checkpoint_interval > 0 else math.inf
        # what a checkpoint of a TrainingRun also holds: a learner never evaluates and has no episode of its own
        self.eval_env, self.eval_interval, self.eval_episodes, self._next_eval = None, 0, 10, math.inf
        self.eval_seconds = self.cpu_seconds = self.eval_cpu_seconds = 0.0
        self._obs, self._episode_return, self._episode_length, self._metric_sum, self._metric_count = \
            None, 0.0, 0, 0.0, 0
        self.callbacks: tuple = ()
        self._started = self._continuing = False
        self.steps = 0
        self.episodes = 0
        self.done = False
        self.train_seconds = 0.0
        self.restarts = 0
        self.log = log or (lambda text: print(text, file=sys.stderr, flush=True))
        self._interrupted = False
        self._closed = True
        self._next_seed = self.seed + 1000
        self.started_at = time.perf_counter()
        self.first_step_s: float | None = None
        self.workers = [_Worker(i, 0) for i in range(int(workers))]
        self._open()

    def _open(self) -> None:
        for worker in self.workers:
            self._start(worker)
        self._closed = False

    def _start(self, worker: _Worker) -> None:
        self._next_seed += 1
        worker.seed, worker.busy, worker.copies, worker.pending = self._next_seed, False, 0, None
        self.log(f"worker {worker.index}: {self.pool.start(worker)}")

    def _send_work(self, worker: _Worker) -> None:
        if self.pool.submit(worker, self.agent.q_network.params, float(self.agent.epsilon), CHUNK_STEPS):
            worker.busy = True
        else:
            self._restart(worker, self.pool.death(worker))

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

    def _learn(self, batch: dict[str, np.ndarray], episodes: list[tuple[float, float, int, int]]) -> None:
        """A chunk, row by row: each row's transitions, the episodes that ended on it, then a checkpoint when the
        row reached one (the checkpoint holds exactly the experience up to its step)."""
        t0 = time.perf_counter()
        if self.first_step_s is None:
            self.first_step_s = t0 - self.started_at
        h = self.history
        ended: dict[int, list[tuple[float, float, int]]] = {}
        for ret, hits, shots, at in episodes:
            ended.setdefault(int(at), []).append((ret, hits, shots))
        for row in range(len(batch["rewards"])):
            if self.steps >= self.total_steps:
                break
            out = self.agent.observe_batch(batch["obs"][row], batch["actions"][row], batch["rewards"][row],
                                           batch["next_obs"][row], batch["terminated"][row], batch["truncated"][row])
            self.steps += len(batch["rewards"][row])
            h.steps = self.steps
            if out and "loss" in out:
                h.losses.append(float(out["loss"]))
                h.loss_steps.append(self.steps)
            for ret, hits, shots in ended.get(row, ()):
                self._record_episode(ret, hits, shots)
            if self.steps >= self._next_checkpoint:
                self.train_seconds += time.perf_counter() - t0
                self._checkpoint()
                t0 = time.perf_counter()
        self.train_seconds += time.perf_counter() - t0
        if self.steps >= self.total_steps:
            self._finish()

    def _record_episode(self, ret: float, hits: float, shots: int) -> None:
        h = self.history
        self.episodes += 1
        h.episode_returns.append(ret)
        h.episode_lengths.append(0)
        h.episode_end_steps.append(self.steps)
        h.epsilons.append(float(self.agent.epsilon))
        if h.task_metric is not None:
            h.episode_metrics.append(hits / shots if shots else None)
            h.episode_metric_sums.append(hits)
            h.episode_metric_counts.append(shots)

    def _checkpoint(self) -> None:
        while self._next_checkpoint <= self.steps:
            self._next_checkpoint += self.checkpoint_interval
        self.save_fn(self, str(self.checkpoint_path).replace("{step}", str(self.steps)))

    # ---- checkpoints (drla_core.rl.checkpoint: the learner as a run of one environment) ------------------------
    def save_checkpoint(self, path: Any, **kwargs: Any) -> Any:
        """The learner's full state (networks, optimiser, replay memory, schedules, curves) to ``path`` (.npz)."""
        return save_checkpoint(path, self, **kwargs)

    def load_checkpoint(self, checkpoint: Any) -> list[tuple[str, Any, Any]]:
        """Continue from ``checkpoint`` (a path or a ``Checkpoint``) before the first slice; the changed settings."""
        if not hasattr(checkpoint, "meta"):
            checkpoint = read_checkpoint(checkpoint)
        changes = restore_run(self, checkpoint)
        self._continuing = False  # nothing to start: the workers restart their own episodes
        return changes

    # ---- as a TrainingJob ---------------------------------------------------------------------------------
    def advance(self, max_steps: int | None = None, max_seconds: float | None = None) -> int:
        start = self.steps
        deadline = time.perf_counter() + (max_seconds if max_seconds is not None else 3600.0)
        while not self.done:  # news is looked at once at least, so that even an empty time box moves on
            if max_steps is not None and self.steps - start >= max_steps:
                break
            for worker, msg in self.pool.wait(self.workers, max(0.0, min(1.0, deadline - time.perf_counter()))):
                if not self.done:
                    self._handle(worker, msg)
            if time.perf_counter() >= deadline:
                break
        return self.steps - start

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            self.pool.close(self.workers)

    def _finish(self) -> None:
        self.done = True
        self._close()

    def pause(self) -> None:
        """The panel's Stop: the workers end (their scenes with them); ``resume`` starts new ones."""
        self._close()

    def resume(self, env: Any = None) -> None:
        """Go on after a pause: new worker processes, the same learner."""
        if self._closed and not self.done:
            self._open()

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
                 f"{len(self.workers)} {self.pool.label} ({self.steps / max(wall_seconds, 1e-9):,.0f} steps/s)",
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


# ---- the panel's assembly ---------------------------------------------------------------------------------


def save_worker_copy(tree_name: str, output_dir: str = "") -> str:
    """A copy of the open file for the workers to open (the user's own file is never written)."""
    path = os.path.join(checkpoint_dir(override=output_dir), f"{safe_name(tree_name)}_workers.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True, compress=False)
    return path


def build_job(compiled: Any, env: Any, blend: str, *, workers: int, copies: int, seed: int,
              total_steps: int, checkpoint_dir: str = "") -> Any:
    """A DQN ``WorkersRun``: the learner here (its agent from the tree, sized by ``env``), ``workers`` processes
    on ``blend`` with ``copies`` each; the Trainer's Checkpoint Every saves the model so far as a run in this
    process does (into its Output folder, else ``checkpoint_dir``). An Evolution tree's job is
    ``evolution_workers.build_job``'s (its populations evaluated on the workers)."""
    agent = build.build_agent(compiled, env, seed=seed, total_steps=total_steps)
    pool = ProcessPool(blend, compiled.tree, copies)
    saving: dict[str, Any] = {}
    trainer = compiled.trainer
    folder = (trainer.output_path or checkpoint_dir) if trainer is not None else ""
    if trainer is not None and trainer.checkpoint_interval and folder:
        saving = {"checkpoint_interval": trainer.checkpoint_interval,
                  "checkpoint_path": outputs.checkpoint_path(folder, compiled.tree)}
    return WorkersRun(agent, pool, total_steps, workers=workers, seed=seed, task_metric=env.task_metric,
                      log=lambda text: None, env=env, **saving)
