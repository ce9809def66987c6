"""The training / play controller: ONE plain loop shared by the headless operators, the modal
operator and the tests.

A session owns a live run on one scene: it compiles the tree, opens a scene snapshot
(``snapshot.scene_session``) that puts the scene back bit-exact when the session closes, builds the
environment and the agent, and then advances in time-boxed slices:

* ``session.tick(budget_s)`` does at most ``budget_s`` seconds of work and returns whether there is
  more to do. The modal operator calls it on every timer event; the tests call it directly
  (timers never fire in headless Blender).
* ``session.run_blocking()`` is ``tick`` in a loop: what ``bpy.ops.drla.train(mode='BLOCKING')``,
  the CLI and the tests use.

Nothing here pushes undo steps; the operator pushes at most one when a run ends. Every error is
caught, the scene restored, and the message stored on ``scene.drla.error`` for the panel.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections import deque
from typing import Any

import bpy

from . import live_curve, model_store
from .properties import settings

#: Default training budget when neither the operator, the scene setting nor the tree sets one.
DEFAULT_TOTAL_STEPS = 20_000
#: Seconds of work per modal tick: keeps Blender's UI responsive (one 60 Hz frame is 16 ms).
TICK_BUDGET_S = 0.03
#: Seconds between two timer events of the modal operator.
TIMER_INTERVAL_S = 0.04

NEW, RUNNING, STOPPED, DONE, ERROR = "NEW", "RUNNING", "STOPPED", "DONE", "ERROR"

_sessions: dict[int, Session] = {}


class SessionError(Exception):
    """A user-facing failure of a session (already stored on ``scene.drla.error``)."""


# --------------------------------------------------------------------------- registry
def _key(scene) -> int:
    return scene.session_uid


def get(scene) -> Session | None:
    """The session of ``scene`` (running, stopped or finished), or None."""
    return _sessions.get(_key(scene)) if scene is not None else None


def active(scene) -> Session | None:
    """The session of ``scene`` if it is running now."""
    s = get(scene)
    return s if s is not None and s.state == RUNNING else None


def discard(scene) -> None:
    """Forget ``scene``'s session, closing it first (restores the scene if it is still open)."""
    s = _sessions.pop(_key(scene), None)
    if s is not None:
        s.close()


def discard_all() -> None:
    for s in list(_sessions.values()):
        with contextlib.suppress(Exception):
            s.close()
    _sessions.clear()


def ui_state(scene) -> str:
    """What the panel shows: NO_TREE, IDLE, TRAINING, STOPPED, PLAYING or TRAINED."""
    tree = settings(scene).tree
    if tree is None:
        return "NO_TREE"
    s = get(scene)
    if s is not None and s.tree_name == tree.name:
        if s.state == RUNNING:
            return "TRAINING" if s.kind == "TRAIN" else "PLAYING"
        if s.state == STOPPED and s.kind == "TRAIN":
            return "STOPPED"
    return "TRAINED" if model_store.has_model(tree) else "IDLE"


# --------------------------------------------------------------------------- helpers
def describe_error(exc: BaseException) -> str:
    """One readable line for the panel: compile errors per node, model-file errors as they are."""
    errors = getattr(exc, "errors", None)
    if errors:
        parts = []
        for item in errors:
            if isinstance(item, (tuple, list)) and len(item) == 2:
                parts.append(f"{item[0]}: {item[1]}" if item[0] else str(item[1]))
            else:
                parts.append(str(item))
        return "; ".join(parts)
    text = str(exc) or type(exc).__name__
    known = ("CompileError", "ModelFormatError", "SessionError", "EnvCheckError")
    return text if type(exc).__name__ in known else f"{type(exc).__name__}: {text}"


def format_duration(seconds: float) -> str:
    """``0:38``, ``12:05``, ``1 h 05``: a time left as a person reads it."""
    seconds = int(round(max(0.0, seconds)))
    if seconds < 3600:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d}"


def count(n: int, word: str, plural: str | None = None) -> str:
    """``1 episode``, ``3 episodes``."""
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "tree"


def _backend():
    """The colleagues' modules, imported late so this file loads before they exist."""
    from . import compile as compile_mod
    from . import snapshot

    return compile_mod, snapshot


def redraw_ui() -> None:
    """Ask every sidebar and node editor to redraw (no-op headless)."""
    wm = bpy.context.window_manager
    if wm is None:
        return
    for window in wm.windows:
        for area in window.screen.areas:
            if area.type in {'VIEW_3D', 'NODE_EDITOR'}:
                area.tag_redraw()


# --------------------------------------------------------------------------- base
class Session:
    """Common life cycle: open (snapshot + env) -> tick ... -> close (restore)."""

    kind = "BASE"

    def __init__(self, scene, tree, *, seed: int | None = None) -> None:
        if tree is None:
            raise SessionError("Pick an RL tree first")
        self.scene_name = scene.name
        self.scene_uid = _key(scene)
        self.tree_name = tree.name
        self.seed = seed
        self.state = NEW
        self.error = ""
        self.compiled: Any = None
        self.env: Any = None
        self._stack: contextlib.ExitStack | None = None
        self.tick_seconds: deque[float] = deque(maxlen=2000)

    # live datablocks are looked up by name every time: a stored RNA pointer can dangle
    @property
    def scene(self):
        scene = bpy.data.scenes.get(self.scene_name)
        if scene is None:
            raise SessionError(f"Scene '{self.scene_name}' is gone")
        return scene

    @property
    def tree(self):
        tree = bpy.data.node_groups.get(self.tree_name)
        if tree is None:
            raise SessionError(f"RL tree '{self.tree_name}' is gone")
        return tree

    @property
    def is_open(self) -> bool:
        return self._stack is not None

    def _register(self) -> None:
        old = _sessions.get(self.scene_uid)
        if old is not None and old is not self:
            old.close()
        _sessions[self.scene_uid] = self

    def _compile(self):
        compile_mod, _ = _backend()
        self.compiled = compile_mod.compile_tree(self.tree, self.scene)
        if self.compiled.trainer is not None and self.seed is None:
            self.seed = int(self.compiled.trainer.seed)
        self.seed = 0 if self.seed is None else self.seed
        return self.compiled

    def _open_scene(self) -> None:
        """Snapshot the scene (restored on close) and build the environment on it."""
        compile_mod, snapshot = _backend()
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(snapshot.scene_session(self.scene))
            self._stack = stack
            self.env = compile_mod.build_env(self.compiled, self.scene)
        except BaseException:
            self._stack = None
            stack.close()
            raise

    def _close_scene(self) -> None:
        env, self.env = self.env, None
        stack, self._stack = self._stack, None
        try:
            if env is not None:
                with contextlib.suppress(Exception):
                    env.close()
        finally:
            if stack is not None:
                stack.close()  # restores the scene bit-exact

    def _fail(self, exc: BaseException) -> SessionError:
        """Restore the scene, store the message for the panel, return a SessionError to raise."""
        message = describe_error(exc)
        try:
            self._close_scene()
        except Exception as restore_exc:  # pragma: no cover - the snapshot's own failure
            message += f" (and restoring the scene failed: {describe_error(restore_exc)})"
        self.state = ERROR
        self.error = message
        with contextlib.suppress(Exception):
            s = settings(self.scene)
            s.error = message
        return SessionError(message)

    def _guard(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except SessionError as exc:
            if self.state != ERROR:
                raise self._fail(exc) from exc
            raise
        except Exception as exc:
            raise self._fail(exc) from exc

    def close(self) -> None:
        """End the session now, restoring the scene; a running session counts as stopped."""
        if self.is_open:
            self._close_scene()
        if self.state in (RUNNING, NEW):
            self.state = STOPPED

    def tick(self, budget_s: float = TICK_BUDGET_S) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def run_blocking(self, *, max_seconds: float | None = None) -> Session:
        """Tick until the session ends (or ``max_seconds`` pass); the headless path."""
        t_end = None if max_seconds is None else time.perf_counter() + max_seconds
        while self.state == RUNNING:
            if t_end is not None and time.perf_counter() >= t_end:
                break
            self.tick(0.25)
        return self


# --------------------------------------------------------------------------- training
class TrainSession(Session):
    """One training run: compile, snapshot, env + agent, ``TrainingRun`` advanced in slices.

    ``stop()`` restores the scene and stores the model so far, but keeps the agent (network,
    replay buffer, exploration schedule); ``resume()`` re-opens the scene and continues the same
    run up to its total steps.
    """

    kind = "TRAIN"

    def __init__(self, scene, tree, *, total_steps: int = 0, seed: int | None = None, output_dir: str = "") -> None:
        super().__init__(scene, tree, seed=seed)
        self.requested_steps = int(total_steps)
        self.output_dir = output_dir
        self.total_steps = 0
        self.agent: Any = None
        self.run: Any = None
        self.history: Any = None
        self.report_path = ""
        self.exported: list[str] = []
        self.train_seconds = 0.0
        self.steps_at_open = 0
        self.message = ""
        self._clock_start = 0.0  # wall clock (perf_counter) when the run started or was resumed
        self._clock_steps = 0    # steps done at that moment

    # -- life cycle --------------------------------------------------------
    def start(self) -> TrainSession:
        """Compile, open the scene and build the run; RUNNING afterwards (or raises SessionError)."""
        s = settings(self.scene)
        s.error = ""
        s.message = ""
        self._register()
        self._guard(self._start)
        self._start_clock()
        return self

    def _start(self) -> None:
        compile_mod, _ = _backend()
        compiled = self._compile()
        self.total_steps = self.requested_steps or _compiled_total_steps(compiled) or DEFAULT_TOTAL_STEPS
        self._open_scene()
        self.agent = compile_mod.build_agent(compiled, self.env, seed=self.seed, total_steps=self.total_steps)
        self.run = self._new_run()
        self.history = self.run.history
        self.state = RUNNING
        self._mirror(force_curve=True)

    def _new_run(self):
        compile_mod, _ = _backend()
        kwargs: dict[str, Any] = {"seed": self.seed}
        trainer = self.compiled.trainer
        if trainer is not None and trainer.checkpoint_interval and not trainer.output_path:
            from .preferences import checkpoint_dir

            folder = checkpoint_dir(override=self.output_dir)
            kwargs["checkpoint_interval"] = trainer.checkpoint_interval
            kwargs["checkpoint_path"] = os.path.join(folder, f"{safe_name(self.tree_name)}_checkpoint.json")
        return compile_mod.build_run(self.compiled, self.env, self.agent, self.total_steps, **kwargs)

    def tick(self, budget_s: float = TICK_BUDGET_S) -> bool:
        """Advance training for at most ``budget_s`` seconds; False once the run is over."""
        if self.state != RUNNING:
            return False
        t0 = time.perf_counter()
        self._guard(self.run.advance, max_seconds=budget_s)
        self.train_seconds += time.perf_counter() - t0
        if self.run.done or self.steps >= self.total_steps:
            self._guard(self._finish)
        self.tick_seconds.append(time.perf_counter() - t0)
        with contextlib.suppress(SessionError):
            self._mirror()
        return self.state == RUNNING

    def stop(self) -> None:
        """Pause: store the model so far, restore the scene, keep the agent for ``resume``."""
        if self.state != RUNNING:
            return
        self._guard(self._store_model)
        self._close_scene()
        self.state = STOPPED
        self.message = (f"Stopped at step {self.steps} of {self.total_steps}: "
                        "Resume continues, Play uses the model so far")
        self._mirror(force_curve=True)

    def resume(self) -> TrainSession:
        """Continue a stopped run on a freshly opened scene."""
        if self.state != STOPPED:
            raise SessionError("Nothing to resume: the run is not stopped")
        settings(self.scene).error = ""
        self._register()
        self._guard(self._resume)
        self._start_clock()
        return self

    def _start_clock(self) -> None:
        """The time left is estimated from the wall clock from here on (see ``seconds_left``)."""
        self._clock_start = time.perf_counter()
        self._clock_steps = self.steps
        self._clock_train_seconds = self.train_seconds

    def _resume(self) -> None:
        self._open_scene()
        rebind_run(self.run, self.env)
        self.state = RUNNING
        self._mirror(force_curve=True)

    def _finish(self) -> None:
        compile_mod, _ = _backend()
        self._store_model()
        self.exported = compile_mod.export_models(self.compiled, self.agent, self.env)
        self._write_report()
        self._close_scene()
        self.state = DONE
        rate = self.steps / self.train_seconds if self.train_seconds > 0 else 0.0
        self.message = (f"Trained {count(self.steps, 'step')}, {count(self.episodes, 'episode')} in "
                        f"{self.train_seconds:.1f} s "
                        f"({rate:.0f} steps/s); model stored in '{model_store.text_name(self.tree_name)}'")
        if self.exported:
            self.message += f"; exported to {', '.join(os.path.basename(p) for p in self.exported)}"
        self._mirror(force_curve=True)

    def _store_model(self) -> None:
        meta = {"tree": self.tree_name, "steps": int(self.steps), "episodes": int(self.episodes), "seed": self.seed}
        model_store.store_model(self.tree, self.agent.to_model(meta))

    def _write_report(self) -> None:
        from ..drla_core import plot
        from .preferences import checkpoint_dir

        folder = checkpoint_dir(override=self.output_dir)
        path = os.path.join(folder, f"{safe_name(self.tree_name)}_report.png")
        history = self.history.to_dict() if hasattr(self.history, "to_dict") else self.history
        plot.save_report(path, history, f"DRLA: {self.tree_name} ({self.steps} steps)")
        self.report_path = path

    # -- numbers -------------------------------------------------------------
    @property
    def steps(self) -> int:
        return int(getattr(self.run, "steps", 0)) if self.run is not None else 0

    @property
    def episodes(self) -> int:
        return int(getattr(self.run, "episodes", 0)) if self.run is not None else 0

    @property
    def epsilon(self) -> float:
        return float(getattr(self.agent, "epsilon", 0.0)) if self.agent is not None else 0.0

    @property
    def progress(self) -> float:
        return min(1.0, self.steps / self.total_steps) if self.total_steps else 0.0

    @property
    def seconds_left(self) -> float:
        """Wall-clock seconds to the end at the pace since the run started (or resumed).

        The pace counts everything between two slices of training, not only the training itself:
        in the GUI, Blender redraws the viewport and the sidebar between ticks, and on a slow
        machine that can take most of the wall time. Before any step since (re)starting, the
        training time alone gives a first estimate.
        """
        left = max(0, self.total_steps - self.steps)
        done = self.steps - self._clock_steps
        elapsed = time.perf_counter() - self._clock_start
        if self.state == RUNNING and self._clock_start > 0 and done > 0 and elapsed > 0:
            return left * elapsed / done
        if self.steps <= 0 or self.train_seconds <= 0:
            return 0.0
        return left * self.train_seconds / self.steps

    def mean_return(self, last: int = 20) -> float:
        returns = list(getattr(self.history, "episode_returns", []) or [])[-last:]
        return float(sum(returns) / len(returns)) if returns else 0.0

    def status_line(self) -> str:
        return (f"DRLA training '{self.tree_name}': step {self.steps}/{self.total_steps} "
                f"({100 * self.progress:.0f}%), episode {self.episodes}, epsilon {self.epsilon:.2f}, "
                f"{format_duration(self.seconds_left)} left  (Esc: stop)")

    def _mirror(self, force_curve: bool = False) -> None:
        """Copy the numbers the panel shows onto ``scene.drla``, and redraw the curve (throttled)."""
        s = settings(self.scene)
        s.progress = self.progress
        s.steps_done = self.steps
        s.steps_total = self.total_steps
        s.episodes = self.episodes
        s.epsilon = self.epsilon
        s.mean_return = self.mean_return()
        s.seconds_left = self.seconds_left
        if self.message:
            s.message = self.message
        if self.report_path:
            s.report_path = self.report_path
        key = self.scene_name
        live_curve.remember_history(key, self.history)
        live_curve.update(key, self.history, s.curve, force=force_curve)


# --------------------------------------------------------------------------- learned IK training
def is_ik_tree(tree) -> bool:
    """True when ``tree`` trains a Learned IK Agent (compiles to ``AgentSpec(kind="ik")``)."""
    if tree is None:
        return False
    iks = [n for n in tree.nodes if n.bl_idname == "DRLA_IKAgentNode"]
    if not iks:
        return False
    for n in tree.nodes:
        if n.bl_idname == "DRLA_TrainerNode":
            sock = n.inputs["Agent"]
            return bool(sock.is_linked and sock.links[0].from_node.bl_idname == "DRLA_IKAgentNode")
    return not any(n.bl_idname == "DRLA_EnvironmentNode" for n in tree.nodes)


class IKTrainSession(TrainSession):
    """Training of a Learned IK tree, with ``TrainSession``'s interface (start / tick / stop / resume /
    run_blocking): the ``IKSolver``'s step generator advanced in time-boxed slices. Stop keeps the
    network and the optimiser (Resume continues the same run); the model goes into the .blend
    (``model_store``) and to the Export JSON nodes and the node's Save To file when it ends.
    The scene is only read, but it is snapshotted and restored like any run's."""

    def __init__(self, scene, tree, **kw) -> None:
        super().__init__(scene, tree, **kw)
        self.solver: Any = None
        self._gen: Any = None
        self._steps = 0
        self.accuracy: dict[str, float] = {}

    def _ik(self):
        from . import ik_runtime

        return ik_runtime

    def _start(self) -> None:
        compiled = self._compile()
        if not compiled.is_ik:
            raise SessionError(f"'{self.tree_name}' is not a Learned IK tree")
        runtime = self._ik()
        self.total_steps = runtime.train_steps_of(compiled, self.requested_steps)
        self._open_scene()
        self.solver = runtime.new_solver(compiled, self.seed)
        self._gen = runtime.training_iter(self.solver, compiled, self.total_steps)
        self.history = {"losses": [], "loss_steps": [], "episode_returns": [], "loss_name": "Median tip error (mm)"}
        with contextlib.suppress(Exception):
            settings(self.scene).curve = 'LOSS'
        self.state = RUNNING
        self._mirror(force_curve=True)

    def _open_scene(self) -> None:
        _, snapshot = _backend()
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(snapshot.scene_session(self.scene))
        except BaseException:
            stack.close()
            raise
        self._stack = stack

    def _resume(self) -> None:
        self._open_scene()
        self.state = RUNNING
        self._mirror(force_curve=True)

    def _advance(self, budget_s: float) -> bool:
        """Steps for ``budget_s`` seconds; True once the generator is exhausted."""
        t_end = time.perf_counter() + budget_s
        while True:
            try:
                self._steps, _ = next(self._gen)
            except StopIteration:
                return True
            if time.perf_counter() >= t_end:
                return False

    def tick(self, budget_s: float = TICK_BUDGET_S) -> bool:
        if self.state != RUNNING:
            return False
        t0 = time.perf_counter()
        done = self._guard(self._advance, budget_s)
        self.train_seconds += time.perf_counter() - t0
        if done:
            self._guard(self._finish)
        self.tick_seconds.append(time.perf_counter() - t0)
        with contextlib.suppress(SessionError):
            self._mirror()
        return self.state == RUNNING

    def _finish(self) -> None:
        from ..drla_core import model_io

        runtime = self._ik()
        cfg = self.compiled.agent.config
        self.accuracy = runtime.accuracy(self.solver, 1000, seed=12345, iters=cfg["refine_iters"])
        self._store_model()
        model = self._model()
        paths = list(self.compiled.trainer.exports) if self.compiled.trainer else []
        if cfg.get("output_path"):
            paths.append(cfg["output_path"])
        self.exported = []
        for path in paths:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            model_io.save_model(path, model)
            self.exported.append(path)
        self._write_report()
        self._close_scene()
        self.state = DONE
        acc = self.accuracy
        self.message = (f"Trained {self.steps} IK steps in {self.train_seconds:.1f} s: median error "
                        f"{acc['net_median_mm']:.1f} mm (network), {acc['refined_median_mm']:.3f} mm refined, "
                        f"{acc['refined_under_1mm']:.0%} under 1 mm; "
                        f"stored in '{model_store.text_name(self.tree_name)}'")
        if self.exported:
            self.message += f"; exported to {', '.join(os.path.basename(p) for p in self.exported)}"
        if cfg.get("follow"):
            with contextlib.suppress(Exception):
                ob, target = runtime.compiled_armature(self.compiled)
                runtime.enable_follow(ob, target, runtime.solver_for(ob, model), cfg["refine_iters"])
                self.message += "; Learned IK follow is on"
        self._mirror(force_curve=True)

    def _model(self):
        meta = {"tree": self.tree_name, "steps": int(self.steps), "seed": self.seed,
                "method": self.compiled.agent.config["method"],
                **{k: round(v, 6) for k, v in self.accuracy.items()}}
        return self.solver.to_model(meta)

    def _store_model(self) -> None:
        model_store.store_model(self.tree, self._model())

    def _write_report(self) -> None:
        from .preferences import checkpoint_dir

        folder = checkpoint_dir(override=self.output_dir)
        path = os.path.join(folder, f"{safe_name(self.tree_name)}_report.png")
        self._ik().save_ik_report(path, self.solver, self.accuracy, f"Learned IK: {self.tree_name}",
                                  self.train_seconds)
        self.report_path = path

    @property
    def steps(self) -> int:
        return self._steps

    @property
    def episodes(self) -> int:
        return 0

    @property
    def epsilon(self) -> float:
        return 0.0

    @property
    def seconds_left(self) -> float:
        """As a DQN run's, or sooner when the node's Train Seconds (training time, not wall time) end it."""
        left = super().seconds_left
        budget = float((self.compiled.agent.config.get("train_seconds") or 0.0) if self.compiled else 0.0)
        if budget <= 0:
            return left
        wall = time.perf_counter() - self._clock_start
        trained = self.train_seconds - getattr(self, "_clock_train_seconds", 0.0)
        ratio = wall / trained if self.state == RUNNING and self._clock_start > 0 and trained > 0 else 1.0
        return min(left, max(0.0, budget - self.train_seconds) * max(1.0, ratio))

    def error_mm(self) -> float:
        curve = getattr(self.solver, "curve", None) or []
        return 1000.0 * curve[-1][1] if curve else 0.0

    def mean_return(self, last: int = 20) -> float:
        return self.error_mm()  # the panel shows it as the median tip error for IK trees

    def status_line(self) -> str:
        return (f"DRLA learned IK '{self.tree_name}': step {self.steps}/{self.total_steps} "
                f"({100 * self.progress:.0f}%), median error {self.error_mm():.1f} mm, "
                f"{format_duration(self.seconds_left)} left  (Esc: stop)")

    def _mirror(self, force_curve: bool = False) -> None:
        curve = getattr(self.solver, "curve", None) or []
        if self.history is not None:
            self.history["losses"] = [1000.0 * m for _, m, _ in curve]
            self.history["loss_steps"] = [step for step, _, _ in curve]
        super()._mirror(force_curve)


def make_train_session(scene, tree, **kw) -> TrainSession:
    """A ``TrainSession`` for a DQN tree, an ``IKTrainSession`` for a Learned IK tree."""
    return (IKTrainSession if is_ik_tree(tree) else TrainSession)(scene, tree, **kw)


def rebind_run(run, env) -> None:
    """Point a paused ``TrainingRun`` at a rebuilt env (the scene was restored in between).

    The episode cut by the pause is dropped (not recorded); the next step starts a new episode.
    """
    run.resume(env)


def _compiled_total_steps(compiled) -> int:
    for holder in (compiled, getattr(compiled, "trainer", None)):
        value = getattr(holder, "total_steps", None) if holder is not None else None
        if isinstance(value, int) and value > 0:
            return value
    return 0


# --------------------------------------------------------------------------- play
class PlaySession(Session):
    """The greedy policy acting live on the scene at ``fps`` steps per second; restored on stop."""

    kind = "PLAY"

    def __init__(self, scene, tree, *, seed: int | None = None, fps: float = 12.0) -> None:
        super().__init__(scene, tree, seed=seed)
        self.fps = float(fps)
        self.model: Any = None
        self.obs: Any = None
        self.steps = 0
        self.episodes = 0
        self.episode_return = 0.0
        self.last_return = 0.0
        self._t0 = 0.0

    def start(self) -> PlaySession:
        s = settings(self.scene)
        s.error = ""
        self._register()
        self._guard(self._start)
        return self

    def _start(self) -> None:
        self.model = model_store.load_stored_model(self.tree)
        self._compile()
        self._open_scene()
        check_model_fits(self.model, self.env)
        self.obs, _ = self.env.reset(seed=self.seed)
        self.state = RUNNING
        self._t0 = time.perf_counter()

    def step(self) -> tuple[Any, float, bool, bool, dict]:
        action = self.model.act(self.obs)
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        self.episode_return += float(reward)
        self.obs = obs
        if terminated or truncated:
            self.episodes += 1
            self.last_return, self.episode_return = self.episode_return, 0.0
            self.obs, _ = self.env.reset()
        return obs, reward, terminated, truncated, info

    def tick(self, budget_s: float = TICK_BUDGET_S, now: float | None = None) -> bool:
        """Take the steps that are due at ``fps`` (within ``budget_s``); False once stopped."""
        if self.state != RUNNING:
            return False
        t0 = time.perf_counter()
        now = t0 if now is None else now
        due = int((now - self._t0) * self.fps) + 1 - self.steps
        while due > 0 and time.perf_counter() - t0 < budget_s:
            self._guard(self.step)
            due -= 1
        self.tick_seconds.append(time.perf_counter() - t0)
        return True

    def run_steps(self, n: int) -> None:
        for _ in range(n):
            self._guard(self.step)

    def run_episode(self, max_steps: int = 100_000) -> None:
        start = self.episodes
        for _ in range(max_steps):
            self._guard(self.step)
            if self.episodes > start:
                break

    def stop(self) -> None:
        if self.state == RUNNING:
            self._close_scene()
            self.state = DONE
            settings(self.scene).message = (f"Played {count(self.steps, 'step')}, {count(self.episodes, 'episode')}"
                                            + (f", last return {self.last_return:.2f}" if self.episodes else ""))

    def status_line(self) -> str:
        return f"DRLA playing '{self.tree_name}': step {self.steps}, episode {self.episodes + 1}  (Esc: stop)"


def check_model_fits(model, env) -> None:
    """Raise ModelFormatError when ``model`` cannot drive ``env`` (different observation or action sizes)."""
    from ..drla_core.model_io import ModelFormatError
    from ..drla_core.spaces import Discrete

    obs_size = int(getattr(env.observation_space, "size", 0) or 0)
    if obs_size and model.network.input_size != obs_size:
        raise ModelFormatError(f"The model reads {model.network.input_size} inputs but this tree observes "
                               f"{obs_size}: it was trained on a different tree")
    a_env, a_model = env.action_space, model.action_space
    if isinstance(a_env, Discrete) and isinstance(a_model, Discrete) and a_env.n != a_model.n:
        raise ModelFormatError(f"The model chooses among {count(a_model.n, 'action')} but this tree has "
                               f"{a_env.n}: it was trained on a different tree")
    if isinstance(a_env, Discrete) != isinstance(a_model, Discrete):
        kinds = {True: "a set of actions", False: "continuous actions"}
        raise ModelFormatError(f"The model was trained for {kinds[isinstance(a_model, Discrete)]} but this tree "
                               f"has {kinds[isinstance(a_env, Discrete)]}: it was trained on a different tree")


def stop(scene) -> bool:
    """Stop whatever runs on ``scene``; True if something was running."""
    s = active(scene)
    if s is None:
        return False
    s.stop()
    return True


def register() -> None:
    bpy.app.handlers.load_pre.append(_on_load_pre)
    bpy.app.handlers.save_pre.append(_on_save_pre)


def unregister() -> None:
    if _on_load_pre in bpy.app.handlers.load_pre:
        bpy.app.handlers.load_pre.remove(_on_load_pre)
    if _on_save_pre in bpy.app.handlers.save_pre:
        bpy.app.handlers.save_pre.remove(_on_save_pre)
    discard_all()


@bpy.app.handlers.persistent
def _on_save_pre(*_args) -> None:
    """Saving while a run moves the scene would save the agent's mid-episode state: stop first.

    The scene is restored and the model so far stored (so it is saved too); Resume continues.
    """
    for s in list(_sessions.values()):
        if s.state == RUNNING:
            with contextlib.suppress(Exception):
                s.stop()


@bpy.app.handlers.persistent
def _on_load_pre(*_args) -> None:
    """Opening another file ends every session (restoring its scene first), forgets their curves and
    ends Learned IK follow mode (its handler is not persistent: a follower left behind would show
    "On" in the panel while nothing follows)."""
    try:
        discard_all()
        live_curve.forget_all()
    finally:
        from . import ik_runtime

        with contextlib.suppress(Exception):
            ik_runtime.on_file_unload()
