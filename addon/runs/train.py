"""One training session over any agent kind: a ``drla_core`` ``TrainingJob`` advanced in time-boxed
slices on a snapshot of the scene.

``stop()`` restores the scene and stores the model so far, but keeps the job (network, optimiser,
replay memory, schedules); ``resume()`` re-opens the scene and continues the same job up to its
total steps. What differs between kinds (the final figures, the report, what happens after
training) is in ``runs.kinds``; this file never asks which kind it runs.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from ...drla_core.rl.checkpoint import read_checkpoint
from ...drla_core.evolve.evolution import read_evolution_checkpoint
from ...drla_core.nets.growth import grow as grow_network
from ...drla_core.rl.train import TrainingRun
from ..preferences import checkpoint_dir
from ..properties import settings
from ..words import format_duration
from . import build, evolution_workers, kinds, model_store, outputs, workers
from .sessions import DONE, RUNNING, STOPPED, TICK_BUDGET_S, Session, SessionError


#: The replay memory a stopped run writes for Resume at most (beyond it, the newest transitions).
RESUME_BUFFER_BYTES = 256 * 1024 * 1024
#: The Grow button widens no hidden layer beyond this (the Hidden Layer node's own maximum).
MAX_GROWN_WIDTH = 4096


class TrainSession(Session):
    """Train the scene's tree: compile, snapshot, build the job, advance it in slices, store the model."""

    kind = "TRAIN"

    def __init__(self, scene, tree, *, total_steps: int = 0, seed: int | None = None, output_dir: str = "") -> None:
        super().__init__(scene, tree, seed=seed)
        self.requested_steps = int(total_steps)
        self.output_dir = output_dir
        self.total_steps = 0
        self.job: Any = None
        self.agent_kind: kinds.AgentKind | None = None
        self.report_path = ""
        self.exported: list[str] = []
        self.train_seconds = 0.0
        self.message = ""
        self._clock_start = 0.0  # wall clock (perf_counter) when the run started or was resumed
        self._clock_steps = 0    # steps done at that moment
        self._clock_train_seconds = 0.0

    # -- life cycle --------------------------------------------------------
    def start(self) -> TrainSession:
        """Compile, open the scene and build the job; RUNNING afterwards (or raises SessionError)."""
        s = settings(self.scene)
        s.error = ""
        s.message = ""
        self._register()
        self._guard(self._start)
        self._start_clock()
        return self

    def _start(self) -> None:
        compiled = self._compile()
        self.agent_kind = kinds.of(compiled)
        self.total_steps = build.total_steps_of(compiled, self.requested_steps)
        n_workers = int(settings(self.scene).workers) if self.agent_kind.workers and compiled.env else 0
        if n_workers:  # the workers open a copy of the file; this Blender only learns (its scene is not stepped)
            blend = workers.save_worker_copy(self.tree_name, self.output_dir)
            copies, compiled.env.copies = compiled.env.copies, 1
        self._open_scene()
        folder = checkpoint_dir(override=self.output_dir, create=False)
        if n_workers:
            evolving = compiled.agent is not None and compiled.agent.kind == "evolution"
            on_workers = evolution_workers if evolving else workers
            self.job = on_workers.build_job(compiled, self.env, blend, workers=n_workers, copies=copies,
                                            seed=self.seed, total_steps=self.total_steps, checkpoint_dir=folder)
        else:
            self.job = build.build_job(compiled, self.env, seed=self.seed, total_steps=self.total_steps,
                                       checkpoint_dir=folder)
        if self.agent_kind.curve:
            with contextlib.suppress(Exception):
                settings(self.scene).curve = self.agent_kind.curve
        self.state = RUNNING
        self._mirror()

    @property
    def history(self) -> Any:
        return self.job.history if self.job is not None else None

    def tick(self, budget_s: float | None = TICK_BUDGET_S, max_steps: int | None = None) -> bool:
        """Advance training for at most ``budget_s`` seconds (None: no limit) and ``max_steps`` steps (None: no
        limit; a script or test that needs the run at a given step drives it by steps, whatever the machine's
        speed); False once the run is over."""
        if self.state != RUNNING:
            return False
        t0 = time.perf_counter()
        self._guard(self.job.advance, max_steps=max_steps, max_seconds=budget_s)
        self.train_seconds += time.perf_counter() - t0
        if self.job.done or self.steps >= self.total_steps:
            self._guard(self._finish)
        self.tick_seconds.append(time.perf_counter() - t0)
        with contextlib.suppress(SessionError):
            self._mirror()
        return self.state == RUNNING

    def stop(self) -> None:
        """Pause: store the model so far, write the training state (the tree remembers where, so Resume
        works after the file is reopened), restore the scene, keep the job for ``resume``."""
        if self.state != RUNNING:
            return
        self._guard(self._store_model)
        self._guard(self._write_resume_state)
        self._close_scene()
        self.state = STOPPED
        self.message = (f"Stopped at step {self.steps} of {self.total_steps}: "
                        "Resume continues, Play uses the model so far")
        if callable(getattr(self.job, "save_checkpoint", None)) and self.tree.drla_last_checkpoint:
            self.message += f" (training state: {outputs.files_words([self.tree.drla_last_checkpoint])})"
        self._mirror()

    def _close_scene(self) -> None:
        """Worker processes end with the run's scene (stop, finish or failure); Resume starts new ones."""
        if self.job is not None and callable(getattr(self.job, "pause", None)):
            with contextlib.suppress(Exception):
                self.job.pause()
        super()._close_scene()

    def _write_resume_state(self) -> None:
        """The job's full state (networks, optimiser, replay memory, schedules, curves) for a later Blender."""
        if not callable(getattr(self.job, "save_checkpoint", None)):
            return
        path = outputs.resume_path(self.tree_name, self.output_dir, getattr(self.job, "checkpoint_suffix", ".npz"))
        self.job.save_checkpoint(path, settings={"tree": self.tree_name, "total_steps": self.total_steps},
                                 max_buffer_bytes=RESUME_BUFFER_BYTES)
        self.tree.drla_last_checkpoint = path

    @classmethod
    def from_checkpoint(cls, scene, tree, *, total_steps: int = 0, output_dir: str = "") -> TrainSession:
        """A stopped run of ``tree`` continued from the training state it wrote when it stopped (possibly in
        an earlier Blender session): RUNNING afterwards, or raises SessionError (the scene untouched)."""
        sess = cls(scene, tree, total_steps=total_steps, output_dir=output_dir)
        s = settings(scene)
        s.error = ""
        s.message = ""
        sess._register()
        sess._guard(sess._start_from_checkpoint, tree.drla_last_checkpoint)
        sess._start_clock()
        return sess

    def _start_from_checkpoint(self, path: str) -> None:
        # An evolution run's training state is its population as JSON; a DQN run's an .npz.
        checkpoint = read_evolution_checkpoint(path) if path.lower().endswith(".json") else read_checkpoint(path)
        compiled = self._compile()
        self.agent_kind = kinds.of(compiled)
        self.total_steps = int(self.requested_steps or checkpoint.meta["run"]["total_steps"])
        self._open_scene()
        # The tree's settings as they are now: what the user changed since applies (and is recorded); a network
        # that grew during the run continues at its grown size
        grown = build.grown_config(compiled, checkpoint, self.total_steps)
        if compiled.trainer is not None:  # the checkpoint holds what the Trainer's Demonstration taught
            compiled.trainer.demonstration = ""
        self.job = build.build_job(compiled, self.env, seed=int(checkpoint.meta["run"]["seed"]),
                                   total_steps=self.total_steps, **({"config": grown} if grown is not None else {}))
        if not callable(getattr(self.job, "load_checkpoint", None)):
            raise SessionError(f"A {self.agent_kind.label} run cannot continue from a training state: press Train")
        changes = self.job.load_checkpoint(checkpoint)
        self.state = RUNNING
        self.message = f"Resumed at step {self.steps} from {os.path.basename(path)}" + (
            f"; changed since: {', '.join(name for name, _, _ in changes)}" if changes else "")
        self._mirror()

    def resume(self) -> TrainSession:
        """Continue a stopped run on a freshly opened scene."""
        if self.state != STOPPED:
            raise SessionError("Nothing to resume: the run is not stopped")
        settings(self.scene).error = ""
        self._register()
        self._guard(self._resume)
        self._start_clock()
        return self

    def _resume(self) -> None:
        self._open_scene()
        self.job.resume(self.env)  # a DQN run drops the episode the pause cut and starts a new one
        self.state = RUNNING
        self._mirror()

    # -- growth ----------------------------------------------------------------
    def why_not_grow(self) -> str:
        """Why the Grow button cannot grow this run's network now ('' when it can)."""
        if self.state not in (RUNNING, STOPPED) or self.job is None:
            return "Grow works while a run trains (or is stopped)"
        if not isinstance(self.job, TrainingRun) or not hasattr(getattr(self.job, "agent", None), "q_network"):
            grows = self.agent_kind is not None and self.agent_kind.grows
            label = self.agent_kind.label if self.agent_kind else "another kind"
            return f"Grow works on a DQN run in this Blender; this run trains {label}" + (
                " with workers" if grows else "")
        if not self.job.agent.q_network.hidden:
            return "The network has no hidden layer to grow: add a Hidden Layer to the Network node"
        return ""

    def network_text(self) -> str:
        """'Network: 36 > 256 > 256 > 7 (grown twice)' for a DQN run in this Blender; '' otherwise."""
        agent = getattr(self.job, "agent", None)
        net = getattr(agent, "q_network", None)
        if net is None or not isinstance(self.job, TrainingRun):
            return ""
        grown = len({r.get("step") for r in getattr(agent, "growth_history", None) or []})
        return ("Network: " + " > ".join(str(n) for n in net.sizes)
                + (f" (grown {grown} time{'s' if grown != 1 else ''})" if grown else ""))

    def grow(self, how: str = "widen") -> dict:
        """Widen every hidden layer (x2) or deepen (an identity layer after the last) between two training steps,
        keeping the function, the optimiser's moments and the target network (``drla_core.nets.growth.grow``);
        the record is in the model's ``meta["growth"]``. Raises SessionError with the reason."""
        reason = self.why_not_grow()
        if reason:
            raise SessionError(reason)
        agent = self.job.agent
        if how == "widen" and any(2 * h.size > MAX_GROWN_WIDTH for h in agent.q_network.hidden):
            raise SessionError(f"Grow: a hidden layer would exceed {MAX_GROWN_WIDTH} units")
        try:
            record = grow_network(agent, how)
        except ValueError as exc:  # deepen after tanh: not function-preserving
            raise SessionError(f"Grow: {exc}") from exc
        sizes = " > ".join(str(h.size) for h in agent.q_network.hidden)
        self.message = f"Grew the network at step {self.steps} ({how}): hidden layers {sizes}"
        with contextlib.suppress(SessionError):
            self._mirror()
        return record

    def _start_clock(self) -> None:
        """The time left is estimated from the wall clock from here on (see ``seconds_left``)."""
        self._clock_start = time.perf_counter()
        self._clock_steps = self.steps
        self._clock_train_seconds = self.train_seconds

    def _finish(self) -> None:
        self.job.finish()
        model = self._store_model()
        if callable(getattr(self.job, "policies", None)):  # several agents: an Export node writes them all
            team = self.job.policies({"tree": self.tree_name, "seed": self.seed})
            self.exported = [outputs.write_team(path, team, {"tree": self.tree_name})
                             for path in outputs.export_paths(self.compiled)]
        else:
            self.exported = outputs.write_models(outputs.export_paths(self.compiled), model)
        if callable(getattr(self.job, "to_models", None)):  # several agents: each trained one its own file
            for name, each in self.job.to_models({"tree": self.tree_name, "seed": self.seed}).items():
                self.exported.append(outputs.write_model(outputs.member_path(self.compiled, name, self.output_dir),
                                                         each))
        self.report_path = outputs.report_path(self.tree_name, self.output_dir)
        self.job.save_report(self.report_path, f"DRLA: {self.tree_name} ({self.steps} steps)", self.train_seconds)
        self._close_scene()
        self.state = DONE
        stored = model_store.text_name(self.tree_name)
        self.message = f"{self.agent_kind.trained_text(self)}; model stored in '{stored}'"
        if self.exported:
            self.message += f"; exported {outputs.files_words(self.exported)}"
        self.message += f"; report {outputs.files_words([self.report_path])}"
        self.message += self.agent_kind.after_training(self)
        self._mirror()

    def model(self):
        """The model as trained so far, with what the run knows about itself."""
        return self.job.to_model({"tree": self.tree_name, "steps": int(self.steps), "seed": self.seed})

    def _store_model(self):
        model = self.model()
        model_store.store_model(self.tree, model)
        if callable(getattr(self.job, "policies", None)):  # several agents: each one's model, for Play
            for name, each in self.job.policies({"tree": self.tree_name, "seed": self.seed}).items():
                model_store.store_model(self.tree, each, agent=name)
        return model

    # -- numbers -------------------------------------------------------------
    @property
    def steps(self) -> int:
        return int(self.job.steps) if self.job is not None else 0

    @property
    def episodes(self) -> int:
        return int(getattr(self.job, "episodes", 0) or 0) if self.job is not None else 0

    @property
    def progress(self) -> float:
        return min(1.0, self.steps / self.total_steps) if self.total_steps else 0.0

    @property
    def seconds_left(self) -> float:
        """Wall-clock seconds to the end at the pace since the run started (or resumed), or sooner
        when the job has a training-time budget (Learned IK's Train Seconds) that ends it first.

        The pace counts everything between two slices of training, not only the training itself:
        in the GUI, Blender redraws the viewport and the sidebar between ticks, and on a slow
        machine that can take most of the wall time. Before any step since (re)starting, the
        training time alone gives a first estimate.
        """
        left = max(0, self.total_steps - self.steps)
        done = self.steps - self._clock_steps
        elapsed = time.perf_counter() - self._clock_start
        running = self.state == RUNNING and self._clock_start > 0
        if running and done > 0 and elapsed > 0:
            estimate = left * elapsed / done
        elif self.steps <= 0 or self.train_seconds <= 0:
            estimate = 0.0
        else:
            estimate = left * self.train_seconds / self.steps
        budget = float(getattr(self.job, "max_seconds", 0.0) or 0.0)
        if budget <= 0:
            return estimate
        trained = self.train_seconds - self._clock_train_seconds
        ratio = elapsed / trained if running and trained > 0 else 1.0
        return min(estimate, max(0.0, budget - self.train_seconds) * max(1.0, ratio))

    def status(self) -> dict[str, str]:
        """What the panel shows under the progress bar (the job's own figures)."""
        return dict(self.job.status()) if self.job is not None else {}

    def status_line(self) -> str:
        figures = ", ".join(f"{k.lower()} {v}" for k, v in self.status().items())
        return (f"DRLA training '{self.tree_name}': step {self.steps}/{self.total_steps} "
                f"({100 * self.progress:.0f}%){', ' + figures if figures else ''}, "
                f"{format_duration(self.seconds_left)} left  (Esc: stop)")

    def _mirror(self) -> None:
        """Copy the numbers the panel shows onto ``scene.drla``."""
        s = settings(self.scene)
        s.progress = self.progress
        s.steps_done = self.steps
        s.steps_total = self.total_steps
        s.episodes = self.episodes
        s.status = "\n".join(f"{k}\t{v}" for k, v in self.status().items())
        s.seconds_left = self.seconds_left
        if self.message:
            s.message = self.message
        if self.report_path:
            s.report_path = self.report_path
