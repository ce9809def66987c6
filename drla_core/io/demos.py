"""The DRLA demonstration file (format ``drla-demonstration``, version 1): a NumPy ``.npz``, pure data.

A demonstration is what a person (or a script) did in an environment: per step the observation, the action,
the reward, and whether the episode ended there (``terminated``: the task ended; ``truncated``: the recording
or a time limit cut it). It names where it came from (a .blend and its tree, or an environment id) and holds
the observation and action spaces, so a trainer can check that it fits the agent before learning from it.

Why ``.npz`` and not JSON: observations are many floats (a camera observation is thousands per step); JSON
text is about 3x the bytes and slow to parse, a zip of raw ``.npy`` arrays is read straight into arrays. It is
read with ``np.load(allow_pickle=False)``, so nothing in it is ever unpickled or executed: an object array
is refused by NumPy itself. The zip is checked before any member is read: the exact set of member names, each
member's declared size (a zip bomb is refused from its directory), the file's size. The metadata is one JSON
document stored as a ``uint8`` array (``meta.json``), parsed with the model format's limits and checks.

Members (``T`` steps, ``O`` the observation space's shape, ``D`` the dimensions of a Box action space):

* ``obs``        float32 ``(T, *O)``: the observation the action was chosen from;
* ``actions``    int64 ``(T,)`` in ``[0, n)`` (Discrete) or float32 ``(T, D)`` inside the bounds (Box);
* ``rewards``    float32 ``(T,)``, finite;
* ``terminated`` / ``truncated``  bool ``(T,)``: the episode ended after this step; the last step ends one;
* ``meta.json``  uint8: ``{"format", "version", "observation_space", "action_space", "source", "recorded_by",
  "created", "meta"}`` (``source``: ``{"blend", "tree"}`` or ``{"env"}``; ``meta``: free JSON, e.g. the
  fraction of keyframed steps explained).

The format is documented in ``docs/demonstrations.md``.
"""

from __future__ import annotations

import io
import json
import math
import os
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..base.files import atomic_write
from ..base.spaces import Box, Discrete, Space
from .model_checks import ModelFormatError, _keys, _obj, _space, _str
from .model_io import _json_data, parse_model_json

__all__ = ["FORMAT", "VERSION", "MAX_DEMO_BYTES", "MAX_STEPS", "DemoFormatError", "Demonstration",
           "save_demo", "load_demo", "demo_fits", "episodes"]

FORMAT = "drla-demonstration"
VERSION = 1
#: The largest demonstration file, and the largest total of its members once unzipped.
MAX_DEMO_BYTES = 512 * 1024 * 1024
#: The most steps one demonstration holds.
MAX_STEPS = 2_000_000
#: The largest ``meta.json``.
MAX_META_BYTES = 1024 * 1024
MEMBERS = ("obs", "actions", "rewards", "terminated", "truncated", "meta.json")
RECORDERS = ("keyboard", "keyframes", "script", "agent")


class DemoFormatError(ModelFormatError):
    """A demonstration file that is not a valid ``drla-demonstration``; the message names the problem."""


def _now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass
class Demonstration:
    """Steps of one or more episodes, with the spaces they were recorded in (see the module docstring)."""

    observation_space: Space
    action_space: Space
    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    source: dict[str, str] = field(default_factory=dict)
    recorded_by: str = "script"
    meta: dict[str, Any] = field(default_factory=dict)
    created: str = field(default_factory=_now_iso)

    def __post_init__(self) -> None:
        self.obs = np.asarray(self.obs, dtype=np.float32)
        discrete = isinstance(self.action_space, Discrete)
        self.actions = np.asarray(self.actions, dtype=np.int64 if discrete else np.float32)
        self.rewards = np.asarray(self.rewards, dtype=np.float32).reshape(-1)
        self.terminated = np.asarray(self.terminated, dtype=bool).reshape(-1)
        self.truncated = np.asarray(self.truncated, dtype=bool).reshape(-1)
        if not discrete and self.actions.ndim == 1 and len(self.obs):
            self.actions = self.actions.reshape(len(self.obs), -1)
        _check(self, "demonstration", DemoFormatError)

    def __len__(self) -> int:
        return len(self.rewards)

    @property
    def n_episodes(self) -> int:
        return int(np.count_nonzero(self.terminated | self.truncated))

    def episode_returns(self) -> list[float]:
        """The summed reward of each episode, in order."""
        return [float(self.rewards[a:b].sum()) for a, b in episodes(self)]


def episodes(demo: Demonstration) -> list[tuple[int, int]]:
    """``(start, stop)`` step ranges of the demonstration's episodes."""
    ends = np.flatnonzero(demo.terminated | demo.truncated) + 1
    starts = np.concatenate([[0], ends[:-1]])
    return [(int(a), int(b)) for a, b in zip(starts, ends)]


def _check(demo: Demonstration, where: str, error: type[Exception]) -> None:
    """Shapes, dtypes, ranges and episode ends of a demonstration's arrays, every problem named."""
    t = len(demo.rewards)
    if t == 0:
        raise error(f"{where}: no steps")
    if t > MAX_STEPS:
        raise error(f"{where}: {t} steps, more than the limit of {MAX_STEPS}")
    obs_shape = tuple(demo.observation_space.shape or ())
    if not isinstance(demo.observation_space, Box):
        raise error(f"{where}: observation_space must be a box space, got {type(demo.observation_space).__name__}")
    if demo.obs.shape != (t,) + obs_shape:
        raise error(f"{where}: obs has shape {demo.obs.shape}, expected {(t,) + obs_shape} "
                    f"({t} steps of the observation space's shape)")
    if not np.all(np.isfinite(demo.obs)):
        step = int(np.argmin(np.isfinite(demo.obs).reshape(t, -1).all(axis=1)))
        raise error(f"{where}: obs holds a NaN or infinite value (step {step})")
    _check_actions(demo, where, error)
    for name in ("terminated", "truncated"):
        if getattr(demo, name).shape != (t,):
            raise error(f"{where}: {name} has shape {getattr(demo, name).shape}, expected ({t},)")
    if not np.all(np.isfinite(demo.rewards)):
        raise error(f"{where}: rewards hold a NaN or infinite value")
    if not (demo.terminated[-1] or demo.truncated[-1]):
        raise error(f"{where}: the last step does not end an episode (set terminated or truncated on it)")
    if demo.recorded_by not in RECORDERS:
        raise error(f"{where}: recorded_by must be one of {', '.join(RECORDERS)}, got {demo.recorded_by!r:.40}")


def _check_actions(demo: Demonstration, where: str, error: type[Exception]) -> None:
    t = len(demo.rewards)
    space = demo.action_space
    if isinstance(space, Discrete):
        if demo.actions.shape != (t,):
            raise error(f"{where}: actions has shape {demo.actions.shape}, expected ({t},) for a discrete space")
        bad = np.flatnonzero((demo.actions < 0) | (demo.actions >= space.n))
        if len(bad):
            raise error(f"{where}: action {int(demo.actions[bad[0]])} at step {int(bad[0])} is outside "
                        f"0..{space.n - 1}")
    elif isinstance(space, Box):
        d = int(math.prod(space.shape))
        if demo.actions.shape != (t, d):
            raise error(f"{where}: actions has shape {demo.actions.shape}, expected ({t}, {d}) for a box space")
        low = np.asarray(space.low, dtype=np.float32).reshape(-1)
        high = np.asarray(space.high, dtype=np.float32).reshape(-1)
        if not np.all(np.isfinite(demo.actions)):
            raise error(f"{where}: actions hold a NaN or infinite value")
        outside = np.flatnonzero(((demo.actions < low - 1e-6) | (demo.actions > high + 1e-6)).any(axis=1))
        if len(outside):
            raise error(f"{where}: the action at step {int(outside[0])} is outside the action space's bounds")
    else:
        raise error(f"{where}: action_space must be a discrete or box space, got {type(space).__name__}")


def _meta_dict(demo: Demonstration) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "observation_space": demo.observation_space.to_dict(),
            "action_space": demo.action_space.to_dict(), "source": dict(demo.source),
            "recorded_by": demo.recorded_by, "created": demo.created, "meta": _json_data(demo.meta, "meta")}


def save_demo(path: str | os.PathLike[str], demo: Demonstration) -> Path:
    """Write ``demo`` to ``path`` (an ``.npz``), atomically; returns the path."""
    _check(demo, "demonstration", DemoFormatError)
    meta = json.dumps(_meta_dict(demo), allow_nan=False, separators=(",", ":")).encode()
    buf = io.BytesIO()
    np.savez_compressed(buf, obs=demo.obs, actions=demo.actions, rewards=demo.rewards,
                        terminated=demo.terminated, truncated=demo.truncated,
                        **{"meta.json": np.frombuffer(meta, dtype=np.uint8)})
    data = buf.getvalue()
    if len(data) > MAX_DEMO_BYTES:
        raise DemoFormatError(f"demonstration: {len(data)} bytes, more than the limit of {MAX_DEMO_BYTES}")
    return atomic_write(path, data)


def _members(path: Path) -> None:
    """The zip's directory: exactly the expected members, their unzipped total under the limit."""
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise DemoFormatError(f"{path.name}: not a demonstration file (not a zip archive: {exc})") from None
    names = [i.filename for i in infos]
    expected = sorted(m + ".npy" for m in MEMBERS)
    if sorted(names) != expected:
        extra = sorted(set(names) - set(expected))
        missing = sorted(set(expected) - set(names))
        what = f"unexpected member {extra[0]!r:.60}" if extra else f"missing member {missing[0]!r}" \
            if missing else "a member appears twice"
        raise DemoFormatError(f"{path.name}: {what} (a demonstration holds {', '.join(MEMBERS)})")
    total = sum(i.file_size for i in infos)
    if total > MAX_DEMO_BYTES:
        raise DemoFormatError(f"{path.name}: its members unzip to {total} bytes, more than the limit of "
                              f"{MAX_DEMO_BYTES}")
    meta = next(i for i in infos if i.filename == "meta.json.npy")
    if meta.file_size > MAX_META_BYTES + 256:
        raise DemoFormatError(f"{path.name}: meta.json is {meta.file_size} bytes, more than the limit of "
                              f"{MAX_META_BYTES}")


def _parse_meta(raw: np.ndarray, name: str) -> dict[str, Any]:
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise DemoFormatError(f"{name}: meta.json must be a 1-d uint8 array, got {raw.dtype} {raw.shape}")
    try:
        d = parse_model_json(raw.tobytes())
    except ModelFormatError as exc:
        raise DemoFormatError(f"{name}: meta.json: {exc}") from None
    d = _obj(d, "meta.json")
    _keys(d, "meta.json", ("format", "version", "observation_space", "action_space", "source", "recorded_by"),
          ("created", "meta"))
    if d["format"] != FORMAT:
        raise DemoFormatError(f"{name}: format is {d['format']!r:.40}, not {FORMAT!r}")
    if d["version"] != VERSION:
        raise DemoFormatError(f"{name}: version {d['version']!r:.20} is not supported "
                              f"(this DRLA reads version {VERSION})")
    source = _obj(d["source"], "meta.json.source")
    _keys(source, "meta.json.source", (), ("blend", "tree", "env"))
    for k, v in source.items():
        _str(v, f"meta.json.source.{k}")
    _str(d["recorded_by"], "meta.json.recorded_by")
    if "created" in d:
        _str(d["created"], "meta.json.created")
    if "meta" in d:
        _obj(d["meta"], "meta.json.meta")
    return d


def load_demo(path: str | os.PathLike[str]) -> Demonstration:
    """Read and validate a demonstration; every problem raises ``DemoFormatError`` naming it. Nothing is unpickled."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DemoFormatError(f"{path.name}: cannot read the demonstration ({exc.strerror or exc})") from None
    if size > MAX_DEMO_BYTES:
        raise DemoFormatError(f"{path.name}: {size} bytes, more than the limit of {MAX_DEMO_BYTES} for a demonstration")
    _members(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {m: npz[m] for m in MEMBERS}
    except ValueError as exc:  # an object array (pickle) or a malformed .npy header
        raise DemoFormatError(f"{path.name}: an array cannot be read without unpickling or is malformed "
                              f"({exc})") from None
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        raise DemoFormatError(f"{path.name}: damaged archive ({exc})") from None
    try:
        d = _parse_meta(arrays["meta.json"], path.name)
        obs_space = _space(d["observation_space"], "meta.json.observation_space")
        act_space = _space(d["action_space"], "meta.json.action_space")
    except DemoFormatError:
        raise
    except ModelFormatError as exc:  # (the model format's checks name the field)
        raise DemoFormatError(f"{path.name}: {exc}") from None
    for name, kinds in (("obs", "f"), ("rewards", "f"), ("terminated", "b"), ("truncated", "b"),
                        ("actions", "i" if isinstance(act_space, Discrete) else "f")):
        if arrays[name].dtype.kind not in kinds:
            raise DemoFormatError(f"{path.name}: {name} has dtype {arrays[name].dtype}, expected "
                                  f"{ {'f': 'floats', 'b': 'booleans', 'i': 'integers'}[kinds] }")
    demo = object.__new__(Demonstration)
    demo.observation_space, demo.action_space = obs_space, act_space
    demo.obs = arrays["obs"].astype(np.float32, copy=False)
    demo.actions = arrays["actions"].astype(np.int64 if isinstance(act_space, Discrete) else np.float32, copy=False)
    demo.rewards = arrays["rewards"].astype(np.float32, copy=False)
    demo.terminated, demo.truncated = arrays["terminated"], arrays["truncated"]
    demo.source, demo.recorded_by = dict(d["source"]), d["recorded_by"]
    demo.meta, demo.created = dict(d.get("meta", {})), d.get("created", "")
    if demo.rewards.ndim != 1:
        raise DemoFormatError(f"{path.name}: rewards has shape {demo.rewards.shape}, expected one value per step")
    _check(demo, path.name, DemoFormatError)
    return demo


def demo_fits(demo: Demonstration, observation_space: Space, action_space: Space) -> None:
    """Raise ``DemoFormatError`` naming the difference when the demonstration's spaces are not the agent's."""
    if tuple(demo.observation_space.shape) != tuple(observation_space.shape):
        raise DemoFormatError(f"the demonstration's observations have shape {tuple(demo.observation_space.shape)}, "
                              f"the agent reads {tuple(observation_space.shape)}")
    a, b = demo.action_space, action_space
    if isinstance(a, Discrete) != isinstance(b, Discrete):
        raise DemoFormatError(f"the demonstration has {type(a).__name__} actions, the agent {type(b).__name__} ones")
    if isinstance(a, Discrete) and isinstance(b, Discrete) and a.n != b.n:
        raise DemoFormatError(f"the demonstration has {a.n} actions, the agent {b.n}")
    if isinstance(a, Box) and isinstance(b, Box) and tuple(a.shape) != tuple(b.shape):
        raise DemoFormatError(f"the demonstration's actions have shape {tuple(a.shape)}, the agent's {tuple(b.shape)}")
