"""Record a demonstration by playing: the person drives the tree's agent from the keyboard, the scene steps as in
training (the tree's own environment: its actions, frames per step, rewards and endings), and the transitions
go to a demonstration file beside the .blend when the recording stops. The scene comes back as it was.

``KeyboardRecorder`` is the stepping core, free of windows and events (the modal operator in
``ui/demo_operators.py`` feeds it key names): each press of an action's key is one step of that action.

* discrete actions: action ``i`` on ``KEYS[i]`` (1, 2, ... 9, 0, then Q W E R T Y U I O P);
* continuous actions: dimension ``j`` on the pair ``PAIRS[j]`` (Q/A, W/S, E/D, ...): +1 / -1 for one step;
* Space: one step with no action (the tree's Wait, or zero amounts); Esc stops and saves.

An episode that ends starts the next one at once; the last, unfinished one is saved as truncated.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import numpy as np

from ...drla_core.base.spaces import Discrete
from ...drla_core.io.demos import Demonstration, save_demo
from ..tree.compiler import compile_tree
from ..words import count
from . import build
from .demos_keyframes import default_demo_path

__all__ = ["KEYS", "PAIRS", "KeyboardRecorder", "active", "any_active", "MAX_RECORDED_STEPS"]

KEYS = ("ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT", "NINE", "ZERO",
        "Q", "W", "E", "R", "T", "Y", "U", "I", "O", "P")
PAIRS = (("Q", "A"), ("W", "S"), ("E", "D"), ("R", "F"), ("T", "G"), ("Y", "H"), ("U", "J"), ("I", "K"),
         ("O", "L"))
KEY_LABELS = {"ONE": "1", "TWO": "2", "THREE": "3", "FOUR": "4", "FIVE": "5", "SIX": "6", "SEVEN": "7",
              "EIGHT": "8", "NINE": "9", "ZERO": "0", "SPACE": "Space"}
#: A recording stops by itself after this many steps (and is saved).
MAX_RECORDED_STEPS = 200_000

_ACTIVE: dict[str, KeyboardRecorder] = {}


def active(scene) -> KeyboardRecorder | None:
    """The recording running in ``scene``, if any."""
    return _ACTIVE.get(scene.name)


class KeyboardRecorder:
    """Steps ``tree``'s environment in ``scene`` by key names and records the transitions (module docstring)."""

    def __init__(self, scene, tree, blend_path: str = "", out: str | Path | None = None, seed: int = 0) -> None:
        self.scene, self.tree = scene, tree
        self.blend_path = blend_path
        self.out = Path(out) if out else default_demo_path(blend_path, tree.name, "keyboard")
        self.seed = seed
        self.env: Any = None
        self._stack: contextlib.ExitStack | None = None
        self.rows: dict[str, list] = {k: [] for k in ("obs", "actions", "rewards", "terminated", "truncated")}
        self.obs: Any = None
        self.episodes = 0
        self.episode_return = 0.0
        self.last_return: float | None = None
        self.keymap: dict[str, Any] = {}
        self.labels: list[tuple[str, str]] = []
        self.saved: Path | None = None
        self.last_key = ""  # the label (as ``labels`` shows it) of the last key that stepped, for the overlay

    # ---- start / stop --------------------------------------------------------------------------------------

    def start(self) -> KeyboardRecorder:
        """Compile the tree, open its environment on the scene (restored on ``stop``), begin the first episode."""
        if active(self.scene) is not None:
            raise ValueError("A recording is running in this scene: press Esc to stop it first")
        compiled = compile_tree(self.tree, self.scene)
        if compiled.env is None or compiled.team:
            raise ValueError(f"tree {self.tree.name!r} has no one-agent environment to record in")
        stack = contextlib.ExitStack()
        try:
            self.env = stack.enter_context(build.one_scene_env(compiled, self.scene))
            self.keymap = self._keymap()
            self.obs, _ = self.env.reset(seed=self.seed)
        except BaseException:
            stack.close()  # the scene back as it was
            self.env = None
            raise
        self._stack = stack
        _ACTIVE[self.scene.name] = self
        return self

    def _keymap(self) -> dict[str, Any]:
        space = self.env.action_space
        if isinstance(space, Discrete):
            if space.n > len(KEYS):
                raise ValueError(f"{space.n} actions: the keyboard has keys for {len(KEYS)}")
            keys: dict[str, Any] = {KEYS[i]: i for i in range(space.n)}
            names = space.names or []
            wait = next((i for i, item in enumerate(self.env.actuator.items) if item.kind == "WAIT"), None)
            if wait is not None:
                keys["SPACE"] = wait
            self.labels = [(KEY_LABELS.get(k, k), names[a] if a < len(names) else str(a)) for k, a in keys.items()]
            return keys
        dims = int(np.prod(space.shape))
        if dims > len(PAIRS):
            raise ValueError(f"{dims} continuous actions: the keyboard has key pairs for {len(PAIRS)}")
        keys = {}
        self.labels = []
        for j in range(dims):
            for key, sign in zip(PAIRS[j], (1.0, -1.0)):
                amounts = np.zeros(dims, dtype=np.float32)
                amounts[j] = sign
                keys[key] = amounts
            self.labels.append((f"{PAIRS[j][0]} / {PAIRS[j][1]}", f"action {j + 1}: +1 / -1"))
        keys["SPACE"] = np.zeros(dims, dtype=np.float32)
        self.labels.append(("Space", "no action"))
        return keys

    @property
    def steps(self) -> int:
        return len(self.rows["rewards"])

    def press(self, key: str) -> bool:
        """A key press: one step of its action (True), or nothing for a key that is not an action's (False)."""
        if key not in self.keymap or self.env is None:
            return False
        self.step(self.keymap[key])
        self.last_key = self._label_of(key)
        return True

    def _label_of(self, key: str) -> str:
        """The ``labels`` entry a key belongs to ('1', 'Space', or a continuous pair's 'Q / A')."""
        short = KEY_LABELS.get(key, key)
        for label, _ in self.labels:
            if label == short or short in label.split(" / "):
                return label
        return short

    def step(self, action: Any) -> tuple[float, bool]:
        """One environment step of ``action``, recorded; a finished episode starts the next. ``(reward, ended)``."""
        obs, reward, terminated, truncated, _ = self.env.step(action)
        for k, v in zip(self.rows, (self.obs, action, reward, terminated, truncated and not terminated)):
            self.rows[k].append(np.array(v, copy=True) if isinstance(v, np.ndarray) else v)
        self.episode_return += reward
        ended = terminated or truncated
        if ended:
            self.episodes += 1
            self.last_return, self.episode_return = self.episode_return, 0.0
            obs, _ = self.env.reset()
        self.obs = obs
        return reward, ended

    def demonstration(self) -> Demonstration | None:
        """What was recorded so far (the unfinished episode truncated), or None before the first step."""
        if not self.rows["rewards"]:
            return None
        truncated = list(self.rows["truncated"])
        if not (self.rows["terminated"][-1] or truncated[-1]):
            truncated[-1] = True
        space = self.env.action_space
        source = {"blend": Path(self.blend_path).name if self.blend_path else "", "tree": self.tree.name}
        return Demonstration(self.env.observation_space, space, np.asarray(self.rows["obs"]), self.rows["actions"],
                             self.rows["rewards"], self.rows["terminated"], truncated, source=source,
                             recorded_by="keyboard")

    def stop(self, save: bool = True) -> Path | None:
        """End the recording, put the scene back, and (``save``) write the file; returns its path (None: nothing
        recorded or not saved)."""
        if self.env is None:  # stopped already (a file opened or saved meanwhile): what was saved then
            return self.saved
        demo = self.demonstration() if save else None
        _ACTIVE.pop(self.scene.name, None)
        if self._stack is not None:
            self._stack.close()
            self._stack = None
        self.env = None
        if demo is not None:
            self.saved = save_demo(self.out, demo)
        return self.saved

    def status_line(self) -> str:
        ret = f", last episode's return {self.last_return:.3g}" if self.last_return is not None else ""
        return f"Recording: {self.steps} steps, {self.episodes} episodes done{ret}. Esc: stop and save"

    def progress_line(self) -> str:
        """Steps, episodes and returns in a few words (the viewport overlay's second line)."""
        words = [count(self.steps, "step"), f"{count(self.episodes, 'episode')} done",
                 f"return {self.episode_return:.3g}"]
        if self.last_return is not None:
            words.append(f"last episode {self.last_return:.3g}")
        return " \u00b7 ".join(words)

    def keys_line(self) -> str:
        """Every key and its action on one line (Blender's status bar while recording)."""
        return "   ".join(f"{key}: {name}" for key, name in self.labels) + "   Esc: stop and save"


def any_active() -> bool:
    """Whether a recording runs in any scene."""
    return bool(_ACTIVE)


def stop_all() -> list[Path]:
    """Stop every recording, saving what each recorded (a file about to be opened or saved: the scene must be
    the user's, not mid-episode); returns the files written."""
    saved = []
    for rec in list(_ACTIVE.values()):
        with contextlib.suppress(Exception):
            path = rec.stop(save=True)
            if path is not None:
                saved.append(path)
    _ACTIVE.clear()
    return saved
