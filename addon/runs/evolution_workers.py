"""An Evolution tree trained with worker processes: each generation's population is evaluated across W Blender
processes, with the same champion, history and model as one process for the same seed.

Each worker (a background Blender on a copy of the .blend inside Blender, a Python with ``bpy`` for the CLI and the
tests; started by ``workers.ProcessPool``) opens the file, builds the tree's environment (with the Environment
node's Copies) and an ``EvolutionJob`` of the run's settings, then evaluates what it is sent. The learner sends,
once per generation and worker, what the method's ``policy()`` is made from (the RNG and ``method.state()``: what a
checkpoint holds at the start of a generation, so any method that resumes bit for bit is evaluated bit for bit,
with nothing special to it), then units of individuals: the worker runs the same ``Evaluation`` on them with the
generation's episode seeds and sends back their returns, behaviours and steps. An episode's result depends only on
the individual and its seed (a scene restarts exactly), so where an individual is played does not matter; with
Copies above 1 a unit is whole rounds of copies (a physics scene's copies restart together), so each round holds
what it holds in one process. A worker that dies is started again and its unit evaluated again. The CLI's
``--ray`` runs the same ``Evaluator`` in Ray actors (``drla.workers.RayEvolutionPool``).

``WorkersEvolutionJob`` is the tree's ``SceneEvolutionJob`` (a ``TrainingJob``: progress, Stop/Resume, Ctrl-C,
checkpoints, report), its scene in this process built (for the spaces) but never stepped.
"""

from __future__ import annotations

import math
import signal
import sys
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

import bpy
import numpy as np

from ...drla_core.evolve.checkpoint import rng_from_state, rng_state
from ...drla_core.evolve.evaluation import Evaluation
from ...drla_core.evolve.evolution import EvolutionConfig, EvolutionJob
from ..scene.snapshot import restored_scene
from ..tree.compiler import compile_tree
from ..tree.node_tree import TREE_ID
from . import build
from .workers import MAX_RESTARTS, ProcessPool, _Worker

#: Guided unit sizes: each unit is about this fraction of what is left per worker (large units first, few
#: messages; small ones last, so the workers finish a generation together: the last units are one round each).
UNIT_SHARE = 0.5
#: Units a worker holds at a time: the next is there when it finishes one (no wait for the learner's answer).
IN_FLIGHT = 2


# ---- the worker side --------------------------------------------------------------------------------------


class Evaluator:
    """A worker's scene: the .blend opened in this process, its environment and an ``EvolutionJob`` of the run's
    settings whose method makes the policies. The file on disk is never written."""

    def __init__(self, blend: str, tree_name: str, copies: int) -> None:
        bpy.context.preferences.filepaths.use_scripts_auto_execute = False  # never run a file's scripts
        bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False)
        scene = bpy.context.scene
        tree = next(t for t in bpy.data.node_groups if t.bl_idname == TREE_ID and t.name == tree_name)
        self.compiled = compile_tree(tree, scene)
        self.compiled.env.copies = copies
        self._restore = restored_scene(scene)
        self._restore.__enter__()
        self.env = build.build_env(self.compiled, scene, copies=copies)
        self.copies = int(getattr(self.env, "num_envs", 1))
        self.job: EvolutionJob | None = None
        self.policy: Any = None

    def setup(self, config: dict[str, Any], seed: int) -> None:
        behavior = build.behavior_of(self.compiled)
        kw = {} if behavior is None else {"behavior": behavior}
        self.job = EvolutionJob(self.env, EvolutionConfig.from_dict(config), seed=seed, **kw)

    def prepare(self, kind: str, state: dict[str, Any]) -> None:
        """The policy of a generation (``state``: the RNG and the method's state) or of one genome (a check)."""
        job = self.job
        assert job is not None
        if kind == "population":
            job.rng = rng_from_state(state["rng"])
            job.method.rng = job.rng  # type: ignore[attr-defined]  (as a checkpoint is loaded)
            job.method.load_state(state["method"])
            self.policy = job.method.policy()
        else:
            network = job.method.genome_network(job.method.genome_from_data(state["genome"]))
            self.policy = lambda idx, obs: network.forward(obs)

    def evaluate(self, ids: list[int], seeds: list[int]) -> tuple[np.ndarray, list, int]:
        """Individuals ``ids`` on every seed: their returns ``(len(ids), episodes)``, behaviours and steps."""
        job, policy = self.job, self.policy
        assert job is not None
        rows = np.asarray(ids, dtype=np.int64)
        memo: list[Any] = [None, None]

        def sub_policy(idx: np.ndarray, obs: np.ndarray) -> np.ndarray:
            if memo[0] is not idx:  # the same array object from step to step: NEAT reuses what it gathered
                memo[0], memo[1] = idx, rows[idx]
            return policy(memo[1], obs)

        ev = Evaluation(sub_policy, len(ids), seeds, job._pool(len(ids) * len(seeds)), job._act, job.behavior)
        ev.run(None)
        return ev.returns, ev.behaviors, ev.env_steps

    def close(self) -> None:
        try:
            self.env.close()
        finally:
            self._restore.__exit__(None, None, None)


def answer(evaluator: Evaluator, msg: tuple) -> tuple | None:
    """What a worker does with one message of the learner's: ``("job", config, seed)`` (no answer) or
    ``("evaluate", token, kind, state or None, ids, seeds)``, answered ``("result", token, returns, behaviours,
    steps)``."""
    if msg[0] == "job":
        evaluator.setup(msg[1], msg[2])
        return None
    _, token, kind, state, ids, seeds = msg
    if state is not None:
        evaluator.prepare(kind, state)
    return ("result", token, *evaluator.evaluate(ids, seeds))


def child_main(fd: int, blend: str, tree_name: str, copies: int, seed: int) -> None:
    """A worker process: open the scene, then evaluate units until told to stop (or the learner is gone). An
    exception is sent to the learner (which stops the run with it) rather than dying: a restart would fail too.
    Ctrl-C in a terminal reaches the whole process group: a worker leaves it to the learner, which stops it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(fd)
    try:
        evaluator = Evaluator(blend, tree_name, copies)
    except Exception:
        conn.send(("error", traceback.format_exc()))
        raise
    try:
        conn.send(("ready", evaluator.copies))
        while True:
            try:
                msg = conn.recv()
            except EOFError:
                break
            if msg[0] == "stop":
                break
            try:
                reply = answer(evaluator, msg)
                if reply is not None:
                    conn.send(reply)
            except Exception:
                conn.send(("error", traceback.format_exc()))
                break
    finally:
        evaluator.close()
        conn.close()


# ---- the learner side -------------------------------------------------------------------------------------


class RemoteEvaluation:
    """What ``EvolutionJob`` needs of an ``Evaluation`` (``run``, ``env_steps``, ``fitness``, ``mean_behaviors``,
    ``check_result``), its units evaluated by the ``Farm``'s workers. ``kind``: "population" (a generation) or
    "check" (a candidate champion's greedy check); ``state``: what its policy is made from."""

    _tokens = 0

    def __init__(self, farm: Farm, kind: str, state: dict[str, Any], n: int, seeds: list[int]) -> None:
        RemoteEvaluation._tokens += 1
        self.token = RemoteEvaluation._tokens
        self.farm, self.kind, self.state = farm, kind, state
        self.n, self.seeds, self.episodes = int(n), [int(s) for s in seeds], len(seeds)
        self._returns = np.zeros((self.n, self.episodes), dtype=np.float64)
        self.behaviors: list[Any] = [None] * (self.n * self.episodes)
        self.env_steps = 0
        starts = np.cumsum([0, *farm.unit_sizes(self.n, self.episodes)])
        self.queue: list[list[int]] = [list(range(a, b)) for a, b in zip(starts[:-1], starts[1:])]
        self.left = len(self.queue)
        self.done = self.n == 0

    def run(self, deadline: float | None = None) -> bool:
        return self.farm.run(self, deadline)

    def accept(self, ids: list[int], returns: np.ndarray, behaviors: list[Any], steps: int) -> None:
        e = self.episodes
        for k, i in enumerate(ids):
            self._returns[i] = returns[k]
            self.behaviors[i * e:(i + 1) * e] = behaviors[k * e:(k + 1) * e]
        self.env_steps += int(steps)
        self.left -= 1
        self.done = self.left == 0

    @property
    def returns(self) -> np.ndarray:
        return self._returns.copy()

    def fitness(self) -> np.ndarray:
        return self._returns.mean(axis=1)

    def mean_behaviors(self) -> np.ndarray:
        b = np.stack([np.asarray(v) for v in self.behaviors])
        return b.reshape(self.n, self.episodes, -1).mean(axis=1)

    def check_result(self, i: int) -> None:
        return None  # no check is played alongside a generation here: it runs on its own when needed


class Farm:
    """The workers of a pool (``EvolutionPool``, or the CLI's ``RayEvolutionPool``), handing them the units of the
    running evaluation; a worker that dies is started again and its units handed out again."""

    def __init__(self, pool: Any, workers: int, hello: tuple, log: Any, copies: int = 1) -> None:
        self.pool, self.hello, self.log = pool, hello, log
        self.workers = [_Worker(i, 0) for i in range(int(workers))]
        self.restarts = 0
        self.closed = True
        self.halted = False  # the run was stopped (Ctrl-C): an evaluation under way returns at once
        self.copies = max(1, int(copies))

    def unit_sizes(self, n: int, episodes: int) -> list[int]:
        """Individuals per unit, in the order they are handed out: whole rounds of a worker's copies (``base``
        individuals), each about ``UNIT_SHARE`` of what is left per worker (guided self-scheduling: few
        messages, and the last units small, so no worker waits long on another at a generation's end)."""
        base = math.lcm(episodes, self.copies) // episodes
        workers, sizes, left = max(1, len(self.workers)), [], n
        while left > 0:
            size = max(base, math.ceil(left * UNIT_SHARE / workers / base) * base)
            sizes.append(min(size, left))
            left -= sizes[-1]
        return sizes

    def open(self) -> None:
        if self.closed:
            self.halted = False
            for worker in self.workers:
                self._start(worker)
            self.closed = False

    def _start(self, worker: _Worker) -> None:
        worker.busy, worker.copies, worker.pending = False, 0, []  # pending: (token, ids) of its units, in order
        worker.token = None  # type: ignore[attr-defined]  (the evaluation whose state it holds)
        self.log(f"worker {worker.index}: {self.pool.start(worker)}")
        self._send(worker, self.hello)  # (a worker that died at once is found by ``wait``)

    def _send(self, worker: _Worker, msg: tuple) -> bool:
        return bool(self.pool.send(worker, msg))

    def _restart(self, worker: _Worker, why: str, ev: RemoteEvaluation) -> None:
        ev.queue[:0] = [ids for token, ids in worker.pending if token == ev.token]  # its units: to the next free
        self.restarts += 1
        if self.restarts > MAX_RESTARTS * len(self.workers):
            raise RuntimeError(f"the workers keep dying ({self.restarts} restarts): see the messages above")
        self.log(f"worker {worker.index} stopped ({why}); starting another in its place")
        self._start(worker)

    def _dispatch(self, ev: RemoteEvaluation) -> None:
        """Units to the workers with room, one per worker in turn (the large first units spread over all of
        them), up to ``IN_FLIGHT`` each."""
        for held in range(IN_FLIGHT):
            for worker in self.workers:
                if not ev.queue:
                    return
                if not worker.copies or len(worker.pending) > held:
                    continue
                ids = ev.queue.pop(0)
                fresh = worker.token != ev.token  # type: ignore[attr-defined]
                worker.pending.append((ev.token, ids))
                if self._send(worker, ("evaluate", ev.token, ev.kind, ev.state if fresh else None, ids, ev.seeds)):
                    worker.token = ev.token  # type: ignore[attr-defined]
                else:
                    self._restart(worker, self.pool.death(worker), ev)

    def run(self, ev: RemoteEvaluation, deadline: float | None) -> bool:
        """Hand out ``ev``'s units and take the results until every unit is back (True) or ``deadline`` passes."""
        self.open()
        while not ev.done and not self.halted:
            self._dispatch(ev)
            left = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.perf_counter()))
            news = self.pool.wait(self.workers, left)
            if self.halted:  # (Ctrl-C reaches the workers too: their deaths are no news)
                break
            for worker, msg in news:
                self._handle(worker, msg, ev)
            if deadline is not None and time.perf_counter() >= deadline:
                break
        return ev.done

    def _handle(self, worker: _Worker, msg: tuple, ev: RemoteEvaluation) -> None:
        if msg[0] == "dead":
            self._restart(worker, msg[1], ev)
        elif msg[0] == "error":
            raise RuntimeError(f"worker {worker.index} failed:\n{msg[1]}")
        elif msg[0] == "ready":
            worker.copies = int(msg[1])
        elif msg[0] == "result":
            token, ids = worker.pending.pop(0) if worker.pending else (None, None)
            if token == msg[1] == ev.token:  # (a result of an evaluation dropped since is not used)
                ev.accept(ids, *msg[2:])

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.pool.close(self.workers)


class EvolutionPool(ProcessPool):
    """``ProcessPool`` whose processes run this module's ``child_main``."""

    module = "evolution_workers"

    def send(self, worker: _Worker, msg: tuple) -> bool:
        """A message to the worker; False when it is gone."""
        try:
            worker.handle[1].send(msg)
        except OSError:
            return False
        return True


class WorkersEvolutionJob(build.SceneEvolutionJob):
    """The tree's ``SceneEvolutionJob`` whose generations (and champion checks) are evaluated by ``workers``
    processes of ``pool``; everything else (breeding, novelty, checkpoints, history) happens here, as in one
    process, so the run is the one process's run."""

    def __init__(self, env: Any, config: EvolutionConfig, *, pool: Any, workers: int, copies: int = 1,
                 seed: int = 0, log: Any = None, **kw: Any) -> None:
        self.farm = Farm(pool, workers, ("job", config.to_dict(), int(seed)),
                         log or (lambda text: print(text, file=sys.stderr, flush=True)), copies)
        super().__init__(env, config, seed=seed, **kw)
        self.farm.open()

    def _generation_evaluation(self, n: int, seeds: list[int]) -> Any:
        state = {"rng": rng_state(self.rng), "method": self.method.state()}
        self.method.policy()  # as one process makes it (a method whose policy() draws keeps its RNG in step)
        return RemoteEvaluation(self.farm, "population", state, n, seeds)

    def _champion_evaluation(self, genome: Any) -> Any:
        return RemoteEvaluation(self.farm, "check", {"genome": self.method.genome_to_data(genome)}, 1,
                                self._check_seeds())

    def advance(self, max_steps: int | None = None, max_seconds: float | None = None) -> int:
        finished = super().advance(max_steps, max_seconds)
        if self.done:
            self.farm.close()
        return finished

    def pause(self) -> None:
        """The panel's Stop: the workers end (their scenes with them); ``resume`` starts new ones."""
        self.farm.close()

    def resume(self, env: Any = None) -> None:
        super().resume(env)
        if not self.done and hasattr(self, "farm"):
            self.farm.open()

    def stop(self, evaluate: bool = True, interrupted: bool = False) -> None:
        """Ctrl-C (a signal handler: the workers are closed by ``advance`` or ``finish``, not here)."""
        super().stop(evaluate, interrupted)
        self.farm.halted = True

    def finish(self) -> None:
        self.farm.close()

    def status(self) -> dict[str, str]:
        n = self.farm.copies
        return {**super().status(), "workers": f"{len(self.farm.workers)} ({n} cop{'y' if n == 1 else 'ies'} each)"}

    def summary(self, wall_seconds: float) -> list[str]:
        lines = super().summary(wall_seconds)
        lines[0] += f" with {len(self.farm.workers)} {self.farm.pool.label}"
        if self.farm.restarts:
            lines.append(f"{self.farm.restarts} worker restart(s): their individuals were evaluated again")
        return lines


def build_job(compiled: Any, env: Any, blend: str, *, workers: int, copies: int, seed: int, total_steps: int,
              checkpoint_dir: str = "", pool: Any = None, log: Any = None, **saving: Any) -> WorkersEvolutionJob:
    """The Evolution tree's job with ``workers`` processes on ``blend`` (``copies`` each); ``env`` is this process's
    view of the scene (spaces only); ``saving``: ``checkpoint_interval`` and ``checkpoint_path``, as
    ``build.build_evolution_job`` takes them (the panel passes none)."""
    try:
        config = build.evolution_config(compiled, total_steps)
    except ValueError as exc:
        raise build.BuildError(str(exc)) from exc
    behavior = build.behavior_of(compiled)
    kw: dict[str, Any] = {k: v for k, v in saving.items() if k in ("checkpoint_interval", "checkpoint_path") and v}
    if behavior is not None:
        kw["behavior"] = behavior
    pool = pool or EvolutionPool(blend, compiled.tree, copies)
    try:
        return WorkersEvolutionJob(env, config, pool=pool, workers=workers, copies=copies, seed=seed,
                                   log=log or (lambda text: None), **kw)
    except ValueError as exc:
        raise build.BuildError(str(exc)) from exc


__all__ = ["Evaluator", "answer", "child_main", "RemoteEvaluation", "Farm", "EvolutionPool", "WorkersEvolutionJob",
           "build_job"]
