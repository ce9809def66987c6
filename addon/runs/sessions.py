"""Sessions: a live run on one scene (training or playing), their registry, and the file handlers.

A session compiles the tree, opens a scene snapshot (``scene.snapshot.restored_scene``) that puts
the scene back bit-exact when the session closes, builds the environment (``runs.build``), and
then advances in time-boxed slices:

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
import time
from collections import deque
from typing import Any

import bpy

from ..properties import settings
from ..scene.snapshot import restored_scene
from ..tree.compiler import compile_tree
from ..words import describe_error
from . import build, ik_follow, model_store

#: Seconds of work per modal tick: keeps Blender's UI responsive (one 60 Hz frame is 16 ms).
TICK_BUDGET_S = 0.03
#: Seconds between two timer events of the modal operator.
TIMER_INTERVAL_S = 0.04

NEW, RUNNING, STOPPED, DONE, ERROR = "NEW", "RUNNING", "STOPPED", "DONE", "ERROR"

_sessions: dict[int, Session] = {}
#: Called with the scene's name when a file is unloaded (the UI forgets its curves); set by ``ui``.
on_forget: list[Any] = []


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


def stop(scene) -> bool:
    """Stop whatever runs on ``scene``; True if something was running."""
    s = active(scene)
    if s is None:
        return False
    s.stop()
    return True


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
        self.compiled = compile_tree(self.tree, self.scene)
        if self.compiled.trainer is not None and self.seed is None:
            self.seed = int(self.compiled.trainer.seed)
        self.seed = 0 if self.seed is None else self.seed
        return self.compiled

    def _open_scene(self) -> None:
        """Snapshot the scene (restored on close) and build the environment on it, if the tree has one."""
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(restored_scene(self.scene))
            self._stack = stack
            if build.has_env(self.compiled):
                self.env = build.build_env(self.compiled, self.scene)
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

    def stop(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def status_line(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def run_blocking(self, *, max_seconds: float | None = None) -> Session:
        """Tick until the session ends (or ``max_seconds`` pass); the headless path."""
        t_end = None if max_seconds is None else time.perf_counter() + max_seconds
        while self.state == RUNNING:
            if t_end is not None and time.perf_counter() >= t_end:
                break
            self.tick(0.25)
        return self


# --------------------------------------------------------------------------- file handlers
def register() -> None:
    bpy.app.handlers.load_pre.append(_on_load_pre)
    bpy.app.handlers.save_pre.append(_on_save_pre)


def unregister() -> None:
    if _on_load_pre in bpy.app.handlers.load_pre:
        bpy.app.handlers.load_pre.remove(_on_load_pre)
    if _on_save_pre in bpy.app.handlers.save_pre:
        bpy.app.handlers.save_pre.remove(_on_save_pre)
    discard_all()
    ik_follow.disable_follow()


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
    """Opening another file ends every session (restoring its scene first), tells the UI to forget its
    curves, and ends Learned IK follow mode (its handler is not persistent: a follower left behind
    would show "On" in the panel while nothing follows)."""
    try:
        discard_all()
        for forget in list(on_forget):
            with contextlib.suppress(Exception):
                forget()
    finally:
        with contextlib.suppress(Exception):
            ik_follow.on_file_unload()
