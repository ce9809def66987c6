"""Full training checkpoints (format ``drla-checkpoint``, version 1): everything a DQN ``TrainingRun`` needs to go on.

An agent with ``checkpoint_state() -> (meta, arrays)``, ``load_checkpoint_state(meta, arrays, total_steps)``,
``checkpoint_mismatch(meta)``, ``checkpoint_kind`` and ``rng`` (PPO, SAC) says its own state (its arrays are
stored as ``agent.<name>``); the file's ``kind`` is its ``checkpoint_kind``, a ``replay_buffer`` it has is saved
as DQN's is, and the rest (env, run, history, settings) is the same.

A model file (``model_io``) holds a network to *use*; a checkpoint holds a run to *continue*: the
online and target networks, Adam's moments and step count, the replay buffer (optional, capped,
and the file says how much of it is there), every random generator (the agent's, the env's
``np_random``), the step / episode / update counters, the exploration schedule's position, the
curves (``History``), the run's settings and the ``DQNConfig``. A run resumed from it on a pure
environment ends with the same weights, bit for bit, as the run that was never stopped.

One file: an uncompressed ``.npz`` (``np.savez``) whose member ``checkpoint.json`` (UTF-8 JSON as
a uint8 array) holds the small parts and lists every other member (name, shape, dtype). It is
loaded with ``allow_pickle=False``; nothing in it is executed. Writing is atomic: a temporary file
beside the target, fsync, then ``os.replace``; the checkpoint it replaces is kept as
``<name>.prev.npz``, so a kill at any moment leaves the last good checkpoint (and at worst a
temporary file, removed by the next write). The zip's CRC-32 of every member is checked as it is
read, so a truncated or corrupted file is refused (``CheckpointError``) rather than half-loaded.
Format: docs/model-format.md, "Checkpoints".

Environments: a pure env declares ``Env.episode_attrs`` (the attributes holding its current
episode); those and its ``np_random`` are saved, and a resumed run continues the very episode the
checkpoint cut. A Blender scene cannot be saved mid-episode, but its reset restarts it bit for bit: one
scene (no copies) says how its episode began and its actions (``episode_log() -> (generator state,
actions)``); the checkpoint keeps them (``env.0.replay_actions``), and the resumed run plays them again
(``replay_episode(state, actions)``) and continues that episode, bit for bit, when it ends on the saved
observation and generator. Other envs (scene copies, Gymnasium's) have their ``np_random`` restored
where they have one, and the resumed run starts a fresh episode at the checkpoint's step count, its
curve continuing.
"""

from __future__ import annotations

import glob
import json
import math
import os
import tempfile
import zipfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..base.files import new_file_mode

__all__ = ["FORMAT", "VERSION", "MAX_BUFFER_BYTES", "Checkpoint", "CheckpointError", "save_checkpoint",
           "read_checkpoint", "read_latest", "previous_path", "checkpoint_state"]

FORMAT = "drla-checkpoint"
VERSION = 1
#: Replay memory kept in a checkpoint by default; a larger buffer keeps only its newest transitions
#: (stated in the file; the resumed run is then no longer bit-exact).
MAX_BUFFER_BYTES = 1 << 30
#: The JSON part is small (settings, counters, curves); refuse a larger one before parsing it.
MAX_JSON_BYTES = 256 * 1024 * 1024
META = "checkpoint.json"
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "SFC64", "Philox")
#: DQNConfig fields a resumed run cannot change (the network and the memory it continues).
FIXED_FIELDS = ("hidden",)
#: DQNConfig fields that move epsilon when changed: it is recomputed at once.
_EXPLORATION_FIELDS = ("exploration_fraction", "exploration_initial_eps", "exploration_final_eps")


class CheckpointError(ValueError):
    """A checkpoint that cannot be read or does not fit the run; the message says why and what to do."""


class Checkpoint:
    """A checkpoint read back: ``meta`` (the JSON part) and ``arrays`` (name -> array), checked."""

    def __init__(self, path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.path = path
        self.meta = meta
        self.arrays = arrays

    @property
    def steps(self) -> int:
        return int(self.meta["run"]["steps"])

    @property
    def settings(self) -> dict[str, Any]:
        """What the caller stored with ``save_checkpoint(settings=...)`` (the CLI: target, out, ...)."""
        return dict(self.meta.get("settings") or {})

    @property
    def config(self) -> dict[str, Any]:
        """The ``DQNConfig`` fields the run trained with."""
        return dict(self.meta["agent"]["config"])


def previous_path(path: str | os.PathLike[str]) -> Path:
    """Where the checkpoint before ``path`` is kept: ``m_ckpt.npz`` -> ``m_ckpt.prev.npz``."""
    path = Path(path)
    return path.with_name(path.stem + ".prev" + path.suffix)


# ---- plain data ---------------------------------------------------------------------------------------------


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _rng_state_dict(state: Mapping[str, Any]) -> dict[str, Any]:
    if state.get("bit_generator") not in _BIT_GENERATORS:
        raise CheckpointError(f"cannot checkpoint a {state.get('bit_generator')} generator; "
                              f"use one of {', '.join(_BIT_GENERATORS)} (np.random.default_rng is PCG64)")
    return dict(state)


def _rng_state(rng: np.random.Generator | None) -> dict[str, Any] | None:
    if rng is None:
        return None
    return _rng_state_dict(rng.bit_generator.state)


def _set_rng(rng: np.random.Generator, state: Any, what: str) -> None:
    """Put ``state`` into ``rng`` in place (so that every holder of ``rng`` follows)."""
    if not isinstance(state, dict) or state.get("bit_generator") != rng.bit_generator.state["bit_generator"]:
        raise CheckpointError(f"the checkpoint's {what} random generator is not a "
                              f"{rng.bit_generator.state['bit_generator']} state")
    try:
        rng.bit_generator.state = state
    except (TypeError, ValueError, KeyError) as exc:
        raise CheckpointError(f"the checkpoint's {what} random generator state is invalid: {exc}") from exc


def _encode(value: Any, key: str, arrays: dict[str, np.ndarray]) -> Any:
    """An env attribute as JSON: tuples marked (CartPole's state is a tuple), arrays into the npz."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, f"{key}.{i}", arrays) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, f"{key}.{i}", arrays) for i, v in enumerate(value)]
    if isinstance(value, np.ndarray):
        arrays[key] = value.copy()
        return {"array": key}
    raise CheckpointError(f"{key}: a {type(value).__name__} cannot go into a checkpoint (numbers, strings, tuples, "
                          "lists and numpy arrays can)")


def _decode(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(value, dict):
        if "tuple" in value:
            return tuple(_decode(v, arrays) for v in value["tuple"])
        if "array" in value and value["array"] in arrays:
            return arrays[value["array"]].copy()
        raise CheckpointError(f"unknown value {value!r} in the environment's state")
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    return value


def _copies(env: Any) -> list[Any]:
    """The single environments behind ``env``: itself, or a vector env's copies."""
    envs = getattr(env, "envs", None)
    return list(envs) if isinstance(envs, (list, tuple)) and hasattr(env, "num_envs") else [env]


def _restorable(env: Any) -> bool:
    return all(getattr(e, "episode_attrs", None) is not None for e in _copies(env))


# ---- writing ------------------------------------------------------------------------------------------------


def _lineage(agent: Any) -> dict[str, Any]:
    """The digest of the initial weights (lineage.py) and the growth history (growth.py), when the agent has them."""
    out: dict[str, Any] = {}
    if getattr(agent, "origin", None):
        out["origin"] = agent.origin
    if getattr(agent, "growth_history", None):
        out["growth"] = [dict(record) for record in agent.growth_history]
    return out


def _dqn_state(agent: Any, own: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A DQN agent's networks, optimiser, generator and counters: ``(agent meta, arrays)``."""
    for name in ("q_network", "target_network", "optimizer", "replay_buffer", "rng", "config"):
        if not hasattr(agent, name):
            raise CheckpointError(f"checkpoints hold DQN runs; {type(agent).__name__} has no {name}")
    arrays: dict[str, np.ndarray] = {
        "agent.q_params": own(agent.q_network.params),
        "agent.target_params": own(agent.target_network.params),
        # Adam keeps its moments divided by (1 - beta); saved as held, so the resumed steps are bit-exact
        "agent.adam_m_scaled": own(agent.optimizer._m),
        "agent.adam_v_scaled": own(agent.optimizer._v),
    }
    if agent.best_params is not None:
        arrays["agent.best_params"] = own(agent.best_params)
    opt = agent.optimizer
    agent_meta = {
        "config": agent.config.to_dict(), "architecture": agent.q_network.architecture(),
        "observation_space": agent.observation_space.to_dict(), "action_space": agent.action_space.to_dict(),
        "rng": _rng_state(agent.rng), "num_timesteps": int(agent.num_timesteps), "n_updates": int(agent.n_updates),
        "epsilon": float(agent.epsilon), "total_timesteps": int(agent.total_timesteps),
        "last_target_update": int(agent._last_target_update),
        "best_mean_return": _finite_or_none(float(agent.best_mean_return)),
        "adam": {"t": int(opt.t), "lr": opt.lr, "eps": opt.eps, "betas": [opt.beta1, opt.beta2]},
    }
    agent_meta.update(_lineage(agent))
    return agent_meta, arrays


def _buffer_state(buf: Any, own: Any, replay_buffer: bool, max_buffer_bytes: int,
                  arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The replay memory (DQN's, SAC's) into ``arrays``: all of it, its newest part or none; its meta."""
    size = len(buf)
    per_transition = sum(a[0].nbytes for a in (buf.obs, buf.next_obs, buf.actions, buf.rewards, buf.terminated,
                                               buf.truncated))
    keep = min(size, max(int(max_buffer_bytes), 0) // max(per_transition, 1)) if replay_buffer else 0
    buffer_meta: dict[str, Any] = {"capacity": buf.capacity, "size": size, "pos": buf.pos, "full": buf.full,
                                   "limit_bytes": int(max_buffer_bytes) if replay_buffer else 0}
    names: tuple[str, ...] = ("obs", "next_obs", "actions", "rewards", "terminated", "truncated")
    if buf.next_masks is not None:  # an env with action masks: the next states' masks (the TD target's max)
        names += ("next_masks",)
    if keep == size and size:  # all of it, as laid out: sampling after the resume draws the same rows
        buffer_meta["stored"] = "all"
        for name in names:
            arrays[f"buffer.{name}"] = own(getattr(buf, name)[:size])
    elif keep:  # the newest ``keep`` transitions, oldest first
        buffer_meta["stored"] = "newest"
        rows = (buf.pos - keep + np.arange(keep)) % buf.capacity
        for name in names:
            arrays[f"buffer.{name}"] = getattr(buf, name).take(rows, axis=0)
    else:
        buffer_meta["stored"] = "none"
    buffer_meta["stored_transitions"] = keep
    return buffer_meta


def _replay_log(env: Any, arrays: dict[str, np.ndarray]) -> dict[str, Any] | None:
    """How a replayable env's current episode began and its actions (a scene's ``episode_log``), for the
    resumed run to play again; None for another env."""
    log = env.episode_log() if callable(getattr(env, "episode_log", None)) else None
    if log is None:
        return None
    rng, actions = log
    arrays["env.0.replay_actions"] = np.stack(actions) if actions else np.zeros((0,), np.float32)
    return {"rng": _rng_state_dict(rng), "actions": "env.0.replay_actions"}


def checkpoint_state(run: Any, *, replay_buffer: bool = True, max_buffer_bytes: int = MAX_BUFFER_BYTES,
                     settings: dict[str, Any] | None = None,
                     copy: bool = True) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``run``'s full state as ``(JSON-able meta, arrays)``; the arrays are copies unless ``copy=False`` (views
    into the live run, for writing at once: a full replay buffer is tens of megabytes)."""
    agent = run.agent

    def own(a: np.ndarray) -> np.ndarray:
        return a.copy() if copy else a

    own_state = getattr(agent, "checkpoint_state", None)
    if callable(own_state):  # an agent that says its own state (PPO: its rollout; SAC: its networks)
        agent_meta, agent_arrays = own_state()
        agent_meta = {**agent_meta, "rng": _rng_state(agent.rng)}
        arrays = {f"agent.{name}": own(a) for name, a in agent_arrays.items()}
        kind = str(agent.checkpoint_kind)
    else:
        agent_meta, arrays = _dqn_state(agent, own)
        kind = "dqn"
    buf = getattr(agent, "replay_buffer", None)  # the replay memory, for an agent that has one (DQN, SAC)
    buffer_meta: dict[str, Any] = ({"stored": "none", "stored_transitions": 0, "limit_bytes": 0} if buf is None
                                   else _buffer_state(buf, own, replay_buffer, max_buffer_bytes, arrays))

    envs = _copies(run.env)
    restorable = _restorable(run.env)
    copies = []
    for i, env in enumerate(envs):
        episode = None
        if restorable:
            episode = {name: _encode(getattr(env, name), f"env.{i}.{name}", arrays) for name in env.episode_attrs}
        copies.append({"rng": _rng_state(getattr(env, "_np_random", None)), "episode": episode})
    if not restorable and run._obs is not None and envs[0] is run.env:
        copies[0]["replay"] = _replay_log(run.env, arrays)
    env_meta = {"restorable": restorable, "copies": copies,
                "eval_rng": _rng_state(getattr(run.eval_env, "_np_random", None)) if run.eval_env is not None
                else None}

    vector = hasattr(run, "num_envs")
    if run._obs is not None:
        arrays["run.obs"] = np.array(run._obs, copy=True)
        if getattr(run, "_mask", None) is not None:
            arrays["run.mask"] = np.array(run._mask, copy=True)
    if vector:
        for name in ("returns", "lengths", "metric_sums", "metric_counts"):
            arrays[f"run.{name}"] = getattr(run, f"_{name}").copy()
    run_meta = {
        "class": type(run).__name__, "vector": vector, "num_envs": int(getattr(run, "num_envs", 1)),
        "steps": int(run.steps), "episodes": int(run.episodes), "total_steps": int(run.total_steps),
        "seed": run.seed, "eval_interval": run.eval_interval, "eval_episodes": run.eval_episodes,
        "checkpoint_interval": run.checkpoint_interval,
        "next_eval": _finite_or_none(run._next_eval), "next_checkpoint": _finite_or_none(run._next_checkpoint),
        "train_seconds": run.train_seconds, "eval_seconds": run.eval_seconds, "cpu_seconds": run.cpu_seconds,
        "eval_cpu_seconds": run.eval_cpu_seconds,
        "episode_return": run._episode_return, "episode_length": run._episode_length,
        "metric_sum": run._metric_sum, "metric_count": run._metric_count,
        "has_obs": run._obs is not None,
    }
    meta = {"format": FORMAT, "version": VERSION, "drla_version": __version__,
            "created": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
            "kind": kind, "run": run_meta, "agent": agent_meta, "buffer": buffer_meta, "env": env_meta,
            "history": run.history.to_dict(), "settings": dict(settings or {}),
            "callbacks": callback_states(run)}
    meta["arrays"] = {name: {"shape": list(a.shape), "dtype": a.dtype.str} for name, a in arrays.items()}
    return meta, arrays


def callback_states(run: Any) -> dict[str, Any]:
    """The state of each callback that keeps one (``checkpoint_key``, ``state_dict()``: a ``GrowthRule``'s
    counters), by its key: what a resumed run's callbacks of the same key continue from."""
    out: dict[str, Any] = {}
    for cb in getattr(run, "callbacks", ()):
        key = getattr(cb, "checkpoint_key", None)
        if key and callable(getattr(cb, "state_dict", None)):
            out[key] = cb.state_dict()
    return out


def _restore_callbacks(run: Any, ckpt: Checkpoint) -> None:
    saved = ckpt.meta.get("callbacks") or {}
    for cb in getattr(run, "callbacks", ()):
        key = getattr(cb, "checkpoint_key", None)
        if key in saved and callable(getattr(cb, "load_state_dict", None)):
            cb.load_state_dict(saved[key])


def save_checkpoint(path: str | os.PathLike[str], run: Any, *, replay_buffer: bool = True,
                    max_buffer_bytes: int = MAX_BUFFER_BYTES, settings: dict[str, Any] | None = None,
                    keep_previous: bool = True) -> Path:
    """Write ``run``'s full state to ``path`` (a ``.npz``) atomically; the one it replaces becomes
    ``previous_path(path)`` when ``keep_previous``. ``settings``: JSON data stored as given (the CLI's)."""
    path = Path(path)
    if path.suffix != ".npz":
        raise CheckpointError(f"a checkpoint file ends in .npz, not {path.name}")
    meta, arrays = checkpoint_state(run, replay_buffer=replay_buffer, max_buffer_bytes=max_buffer_bytes,
                                    settings=settings, copy=False)
    text = json.dumps(meta, allow_nan=False, separators=(",", ":"))
    members = {META: np.frombuffer(text.encode("utf-8"), dtype=np.uint8), **arrays}
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if os.name == "posix":
                os.fchmod(f.fileno(), new_file_mode(path))
            np.savez(f, **members)
            f.flush()
            os.fsync(f.fileno())
        if keep_previous and path.exists():
            os.replace(path, previous_path(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):  # left by a run killed while writing
        try:
            stale.unlink()
        except OSError:
            pass
    if os.name == "posix":  # the renames themselves reach the disk
        try:
            dir_fd = os.open(path.parent, os.O_RDONLY)
        except OSError:
            return path
        try:
            os.fsync(dir_fd)
        except OSError:
            pass
        finally:
            os.close(dir_fd)
    return path


# ---- reading ------------------------------------------------------------------------------------------------


def _broken(path: Path, reason: str) -> CheckpointError:
    return CheckpointError(f"{path} is not a usable DRLA checkpoint: {reason}")


def _read_meta(npz: Any, path: Path) -> dict[str, Any]:
    if META not in npz.files:
        raise _broken(path, f"it has no {META} (not written by DRLA's save_checkpoint)")
    info = npz.zip.getinfo(META + ".npy")
    if info.file_size > MAX_JSON_BYTES:
        raise _broken(path, f"its {META} is {info.file_size} bytes (at most {MAX_JSON_BYTES})")
    raw = npz[META]
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise _broken(path, f"its {META} is not UTF-8 bytes")
    try:
        meta = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _broken(path, f"its {META} is not valid JSON ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _broken(path, f"its format is {meta.get('format') if isinstance(meta, dict) else None!r}, not {FORMAT!r}")
    version = meta.get("version")
    if version != VERSION:
        newer = " (a newer DRLA wrote it; update DRLA)" if isinstance(version, int) and version > VERSION else ""
        raise _broken(path, f"format version {version!r}, this DRLA reads version {VERSION}{newer}")
    for key in ("run", "agent", "buffer", "env", "history", "arrays"):
        if not isinstance(meta.get(key), dict):
            raise _broken(path, f"its {META} has no {key!r} section")
    return meta


def _read_arrays(npz: Any, meta: dict[str, Any], path: Path) -> dict[str, np.ndarray]:
    """Every array the JSON lists, its size checked before it is read (the zip checks its CRC-32 as it is)."""
    arrays: dict[str, np.ndarray] = {}
    for name, spec in meta["arrays"].items():
        if name not in npz.files:
            raise _broken(path, f"the array {name!r} is missing (the file is truncated)")
        shape, dtype = tuple(spec["shape"]), np.dtype(spec["dtype"])
        if npz.zip.getinfo(name + ".npy").file_size < math.prod(shape) * dtype.itemsize:
            raise _broken(path, f"the array {name!r} is shorter than its {shape} {dtype} (truncated)")
        array = npz[name]
        if array.shape != shape or array.dtype != dtype:
            raise _broken(path, f"the array {name!r} is {array.shape} {array.dtype}, the file says {shape} {dtype}")
        arrays[name] = array
    return arrays


def read_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Read and check the checkpoint at ``path``; ``CheckpointError`` says what is wrong (missing, truncated,
    corrupted, another format or version)."""
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"{path} is a folder, not a checkpoint: give its .npz file")
    if not path.is_file():
        raise CheckpointError(f"no such checkpoint file: {path}")
    try:
        with np.load(path, allow_pickle=False) as npz:
            meta = _read_meta(npz, path)
            arrays = _read_arrays(npz, meta, path)
    except CheckpointError:
        raise
    except (zipfile.BadZipFile, EOFError, ValueError, KeyError, TypeError, OSError) as exc:
        reason = str(exc) or type(exc).__name__
        raise _broken(path, f"the file is truncated or corrupted ({reason})") from exc
    return Checkpoint(path, meta, arrays)


def read_latest(path: str | os.PathLike[str]) -> tuple[Checkpoint, str | None]:
    """``read_checkpoint(path)``, or when that fails the previous checkpoint beside it (``previous_path``).

    Returns the checkpoint and, when the previous one was used, a sentence saying so and why; when both
    fail, the error about ``path``.
    """
    try:
        return read_checkpoint(path), None
    except CheckpointError as exc:
        prev = previous_path(path)
        if not prev.is_file():
            raise
        try:
            ckpt = read_checkpoint(prev)
        except CheckpointError:
            raise exc from None
        return ckpt, f"{exc}; using the previous checkpoint {prev} (step {ckpt.steps}) instead"
