"""The DRLA model file (format ``drla-model``, version 1): JSON, pure data, strictly validated.

A model file holds one network (its architecture and every weight), the spaces it was trained
on (with action names), an optional input normalisation, and free-form metadata. Nothing in it is
executable: no pickle, no code, no class names. The format is documented in
``docs/model-format.md`` and described by the JSON Schema ``drla_core/io/model_schema.json``.

Loading checks everything before building anything: sizes are capped, the architecture is
checked before any array is made, every parameter's shape is compared with the architecture,
and every problem raises ``ModelFormatError`` with a message naming the field.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..base.files import atomic_write
from ..nn.graph_net import GraphError, GraphNetwork, RecurrentGraphNetwork, check_graph, is_graph_architecture, \
    is_recurrent_graph
from ..nn.mlp import MLP
from ..base.spaces import Box, Discrete, Space
from .model_checks import (
    ARCHITECTURE_KEYS,
    BOX_DTYPES,
    FORMAT,
    KINDS,
    MAX_ARRAY_ITEMS,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_INT_DIGITS,
    MAX_LAYER_SIZE,
    MAX_LAYERS,
    MAX_PARAMS,
    MAX_STRING_CHARS,
    META_REQUIRED_KEYS,
    OPTIONAL_KEYS,
    REQUIRED_KEYS,
    VERSION,
    ModelFormatError,
    _architecture,
    _check_depth,
    _float32_array,
    _keys,
    _number_list,
    _obj,
    _params,
    _space,
    _space_size,
    _str,
    _type_name,
)

__all__ = [
    "FORMAT", "VERSION", "KINDS", "REQUIRED_KEYS", "OPTIONAL_KEYS", "ARCHITECTURE_KEYS", "META_REQUIRED_KEYS",
    "MAX_FILE_BYTES", "MAX_PARAMS", "MAX_LAYERS", "MAX_LAYER_SIZE", "MAX_DEPTH", "MAX_STRING_CHARS", "MAX_ARRAY_ITEMS",
    "MAX_INT_DIGITS", "MAX_NUMBER", "BOX_DTYPES",
    "Model", "ModelFormatError", "save_model", "load_model", "model_to_dict", "model_from_dict", "parse_model_json",
]

# ---------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------


def _now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


class Model:
    """A trained network plus everything needed to use it: spaces, input normalisation, metadata.

    Args:
        network: the ``MLP``.
        observation_space: the space of the observations it reads (flattened to ``input_size``).
        action_space: the space of its actions; ``Discrete`` names are saved with the model.
        kind: ``"dqn"`` (Q-values, act = argmax), ``"ik"`` (joint values) or ``"mlp"`` (anything else).
        obs_norm: ``None`` or ``{"mean": [...], "std": [...]}``; ``predict`` feeds ``(obs - mean) / std``.
        meta: free-form JSON data; ``drla_version`` and ``created`` (ISO 8601 UTC) are filled in if absent.
        extra: free-form JSON data (for example an arm description for IK).
    """

    def __init__(self, network: MLP | GraphNetwork | RecurrentGraphNetwork, observation_space: Space,
                 action_space: Space, kind: str = "dqn",
                 obs_norm: Mapping[str, Any] | None = None, meta: Mapping[str, Any] | None = None,
                 extra: Mapping[str, Any] | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"Model: kind must be one of {KINDS}, not {kind!r}")
        self.network = network
        self.observation_space = observation_space
        self.action_space = action_space
        self.kind = kind
        self.obs_norm: dict[str, np.ndarray] | None = None
        if obs_norm is not None:
            mean = np.asarray(obs_norm["mean"], dtype=np.float32).reshape(-1)
            std = np.asarray(obs_norm["std"], dtype=np.float32).reshape(-1)
            if mean.shape != (network.input_size,) or std.shape != (network.input_size,):
                raise ValueError(f"Model: obs_norm mean and std must have {network.input_size} values")
            if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std > 0)):
                raise ValueError("Model: obs_norm needs finite means and positive, finite stds")
            self.obs_norm = {"mean": mean, "std": std}
        self.meta = {"drla_version": __version__, "created": _now_iso(), **dict(meta or {})}
        self.extra = dict(extra or {})

    def _input(self, obs: Any) -> np.ndarray:
        x = np.asarray(obs, dtype=np.float32)
        n = self.network.input_size
        if x.size == n and x.ndim <= max(1, len(self.observation_space.shape)):
            x = x.reshape(n)
        elif x.ndim >= 2 and math.prod(x.shape[1:]) == n:
            x = x.reshape(x.shape[0], n)
        else:
            raise ValueError(f"Model: observation of shape {x.shape} does not fit input size {n}")
        if self.obs_norm is not None:
            x = (x - self.obs_norm["mean"]) / self.obs_norm["std"]
        return x

    @property
    def recurrent(self) -> bool:
        """Whether the network keeps a state from call to call (a recurrent graph): ``reset`` at each episode's
        start, and one ``predict``/``act`` call per step."""
        return bool(getattr(self.network, "recurrent", False))

    def reset(self) -> None:
        """Start an episode: a recurrent network forgets its state (nothing to do for the others)."""
        reset = getattr(self.network, "reset", None)
        if reset is not None:
            reset()

    def predict(self, obs: Any) -> np.ndarray:
        """The network's output for one observation ``(obs_shape)`` or a batch ``(B, *obs_shape)`` (a recurrent
        network: one step of each row's episode, its state carried from the previous call)."""
        return self.network.forward(self._input(obs))

    def act(self, obs: Any, mask: Any = None) -> Any:
        """The greedy action: argmax for ``Discrete`` (an int, or an int array for a batch); for a
        ``Box`` the output clipped to the bounds and shaped like the action space.

        ``mask`` (``Discrete`` only; one 0/1 per action, ``(n,)`` or ``(B, n)``: the env's ``info["action_mask"]``):
        the argmax is over the enabled actions; a row that enables none is not masked."""
        y = self.predict(obs)
        if isinstance(self.action_space, Discrete):
            if mask is not None:
                m = np.broadcast_to(np.asarray(mask) != 0, y.shape)
                m = m | ~m.any(axis=-1, keepdims=True)
                y = np.where(m, y, -np.inf)
            best = np.argmax(y, axis=-1)
            return int(best) if best.ndim == 0 else best
        if isinstance(self.action_space, Box):
            space = self.action_space
            lead = y.shape[:-1]
            return np.clip(y.reshape(lead + space.shape), space.low, space.high).astype(space.dtype)
        return y

    def __repr__(self) -> str:
        return f"Model(kind={self.kind!r}, network={self.network!r}, action_space={self.action_space!r})"


# ---------------------------------------------------------------------------------------------
# To plain data
# ---------------------------------------------------------------------------------------------


def _json_data(value: Any, field: str, depth: int = 0) -> Any:
    """Plain JSON data from ``value`` (numpy scalars and arrays converted); raises on anything else."""
    if depth > MAX_DEPTH:
        raise ModelFormatError(f"{field}: nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ModelFormatError(f"{field}: NaN and infinity are not allowed (got {value})")
        return value
    if isinstance(value, np.generic):
        return _json_data(value.item(), field, depth)
    if isinstance(value, np.ndarray):
        return _json_data(value.tolist(), field, depth)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ModelFormatError(f"{field}: object keys must be strings, got {type(k).__name__} {k!r}")
            out[k] = _json_data(v, f"{field}.{k}", depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_json_data(v, f"{field}[{i}]", depth + 1) for i, v in enumerate(value)]
    raise ModelFormatError(f"{field}: {type(value).__name__} is not JSON data")


def model_to_dict(model: Model) -> dict[str, Any]:
    """The model as plain JSON data (the v1 layout); ``model_from_dict`` is its inverse."""
    params = {}
    for key, arr in model.network.state_dict().items():
        arr = np.asarray(arr, dtype=np.float32)
        if not np.all(np.isfinite(arr)):
            raise ModelFormatError(f"params.{key}: contains NaN or infinity; refusing to save a broken network")
        params[key] = arr.tolist()
    obs_norm = None
    if model.obs_norm is not None:
        obs_norm = {"mean": model.obs_norm["mean"].tolist(), "std": model.obs_norm["std"].tolist()}
    return {
        "format": FORMAT,
        "version": VERSION,
        "kind": model.kind,
        "architecture": model.network.architecture(),
        "params": params,
        "observation_space": model.observation_space.to_dict(),
        "action_space": model.action_space.to_dict(),
        "obs_norm": obs_norm,
        "meta": _json_data(model.meta, "meta"),
        "extra": _json_data(model.extra, "extra"),
    }


# ---------------------------------------------------------------------------------------------
# Graph networks (NEAT): a layer stack's architecture keys (hidden empty) plus "graph"; params graph.*
# ---------------------------------------------------------------------------------------------


def _sizes(arch: Any, params: Any) -> list[int]:
    """Layer sizes of a layer stack; [input_size, output_size] of a valid graph (structure and params
    checked); else ModelFormatError."""
    if not is_graph_architecture(arch):
        return _architecture(arch)["sizes"]
    try:
        check_graph(arch, params)
    except GraphError as exc:
        raise ModelFormatError(str(exc)) from None
    return [arch["input_size"], arch["output_size"]]


def _network(arch: dict[str, Any], params: Any, sizes: list[int]) -> MLP | GraphNetwork | RecurrentGraphNetwork:
    """The network of a checked architecture: a graph, or a layer stack whose params are checked here."""
    if is_graph_architecture(arch):
        return _graph_network(arch, params)
    arrays = _params(params, sizes)  # the architecture is checked: now building arrays is bounded
    network = MLP(sizes[0], [(h["size"], h["activation"]) for h in arch["hidden"]], sizes[-1],
                  arch["output_activation"], rng=0)
    try:
        network.load_state_dict(arrays)
    except ValueError as exc:  # pragma: no cover - _params already checked keys and shapes
        raise ModelFormatError(f"params: {exc}") from None
    return network


def _graph_network(arch: dict[str, Any], params: dict[str, Any]) -> GraphNetwork | RecurrentGraphNetwork:
    weights = _float32_array(params["graph.weight"], "params.graph.weight")
    biases = _float32_array(params["graph.bias"], "params.graph.bias")
    net = RecurrentGraphNetwork if is_recurrent_graph(arch) else GraphNetwork
    return net(arch["input_size"], arch["output_size"], arch["output_activation"], arch["graph"]["nodes"],
                        [(s, t) for s, t in arch["graph"]["connections"]], weights, biases)


# ---------------------------------------------------------------------------------------------
# From plain data
# ---------------------------------------------------------------------------------------------


def model_from_dict(d: Any) -> Model:
    """Build a ``Model`` from v1 plain data, checking every field; raises ``ModelFormatError``."""
    if not isinstance(d, dict):
        raise ModelFormatError(f"a model must be a JSON object, got {_type_name(d)}")
    if "format" not in d:
        raise ModelFormatError("missing required key 'format' (expected \"drla-model\"): not a DRLA model file")
    if d["format"] == "drla-team":  # drla_core.io.team_model
        names = ", ".join(map(str, d["agents"])) if isinstance(d.get("agents"), dict) else "?"
        raise ModelFormatError(f"this is a team file holding several agents' models ({names:.200}), not one "
                               "model: play, bake or import it on a multi-agent tree, export-onnx or experts add it "
                               "whole, or give one agent's own file (drla train writes <out>_<agent>.json beside it)")
    if d["format"] != FORMAT:
        raise ModelFormatError(f"format is {d['format']!r:.40}, expected {FORMAT!r}: not a DRLA model file")
    if "version" not in d:
        raise ModelFormatError(f"missing required key 'version' (this DRLA reads version {VERSION})")
    version = d["version"]
    if type(version) is not int:
        raise ModelFormatError(f"version must be an integer, got {_type_name(version)} ({version!r:.40})")
    if version != VERSION:
        newer = " (a newer DRLA wrote it; update DRLA)" if version > VERSION else ""
        raise ModelFormatError(f"unsupported model format version {version}: this DRLA reads version {VERSION}{newer}")
    _keys(d, "model", REQUIRED_KEYS, OPTIONAL_KEYS)
    kind = _str(d["kind"], "kind")
    if kind not in KINDS:
        raise ModelFormatError(f"kind: unknown kind {kind!r}; known: {', '.join(KINDS)}")

    sizes = _sizes(d["architecture"], d["params"])
    observation_space = _space(d["observation_space"], "observation_space")
    action_space = _space(d["action_space"], "action_space")
    if _space_size(observation_space) != sizes[0]:
        raise ModelFormatError(f"observation_space has {_space_size(observation_space)} values but "
                               f"architecture.input_size is {sizes[0]}")
    if _space_size(action_space) != sizes[-1]:
        raise ModelFormatError(f"action_space has {_space_size(action_space)} values but "
                               f"architecture.output_size is {sizes[-1]}")

    obs_norm = d.get("obs_norm")
    if obs_norm is not None:
        _keys(_obj(obs_norm, "obs_norm"), "obs_norm", ("mean", "std"))
        _number_list(obs_norm["mean"], "obs_norm.mean", sizes[0])
        _number_list(obs_norm["std"], "obs_norm.std", sizes[0])
        mean = _float32_array(obs_norm["mean"], "obs_norm.mean")
        std = _float32_array(obs_norm["std"], "obs_norm.std")
        if not np.all(std > 0):
            raise ModelFormatError("obs_norm.std: every value must be positive")
        obs_norm = {"mean": mean, "std": std}

    meta = _obj(d["meta"], "meta")
    for key in META_REQUIRED_KEYS:
        if key not in meta:
            raise ModelFormatError(f"meta: missing required key {key!r}")
        _str(meta[key], f"meta.{key}")
    _check_depth(meta, "meta")
    extra = _obj(d.get("extra", {}), "extra")
    _check_depth(extra, "extra")

    network = _network(d["architecture"], d["params"], sizes)
    return Model(network, observation_space, action_space, kind=kind, obs_norm=obs_norm,
                 meta=_json_data(meta, "meta"), extra=_json_data(extra, "extra"))


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ModelFormatError(f"{name} is not allowed in a model file (JSON numbers must be finite)")


#: Every JSON number in a model file is below this in magnitude (integers: at most MAX_INT_DIGITS digits);
#: the JavaScript reader, which sees numbers only as doubles, applies the same rule.
MAX_NUMBER = 1e39


def _finite_float(text: str) -> float:
    value = float(text)
    if not abs(value) < MAX_NUMBER:
        raise ModelFormatError(f"number {text[:40]} is too large (numbers in a model file are below 1e39)")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ModelFormatError(f"integer {text[:20]}... is too large: {len(text.lstrip('-'))} digits, more than the "
                               f"limit of {MAX_INT_DIGITS} (numbers in a model file are below 1e39)")
    return int(text)


def parse_model_json(text: str | bytes) -> Any:
    """Parse JSON text strictly: NaN/Infinity and overflowing numbers are refused; returns plain data."""
    if len(text) > MAX_FILE_BYTES:
        raise ModelFormatError(f"model data is {len(text)} bytes, more than the limit of {MAX_FILE_BYTES}")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            msg = f"not a JSON model file: not UTF-8 text ({exc.reason} at byte {exc.start})"
            raise ModelFormatError(msg) from None
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        raise ModelFormatError(f"not a JSON model file: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ModelFormatError("not a usable model file: JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer with thousands of digits
        if isinstance(exc, ModelFormatError):
            raise
        raise ModelFormatError(f"not a usable model file: {exc}") from None


def read_model_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a model (or team) file, refused before reading when over ``MAX_FILE_BYTES``."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ModelFormatError(f"{path.name}: {size} bytes, more than the limit of {MAX_FILE_BYTES} for a model file")
    with open(path, "rb") as f:
        return f.read(MAX_FILE_BYTES + 1)


def load_model(path: str | os.PathLike[str]) -> Model:
    """Read and validate a model file; raises ``ModelFormatError`` (or ``OSError`` if it cannot be read)."""
    return model_from_dict(parse_model_json(read_model_bytes(path)))


def write_json(path: str | os.PathLike[str], model: Model) -> Path:
    """Write ``model`` as DRLA JSON v1 atomically (a temporary file in the same folder, then ``os.replace``)."""
    text = json.dumps(model_to_dict(model), allow_nan=False, separators=(",", ":"))
    return atomic_write(path, (text + "\n").encode("utf-8"))


#: File suffix -> writer. A path with another suffix, or none, is written as JSON (an Export node's
#: file may have no suffix); a new format (ONNX) adds its writer here.
WRITERS = {".json": write_json}


def save_model(path: str | os.PathLike[str], model: Model) -> Path:
    """Write ``model`` in the format its file's suffix names (JSON by default); the one model writer."""
    writer = WRITERS.get(Path(path).suffix.lower(), write_json)
    return writer(path, model)


def _count(n: int, word: str) -> str:
    return f"{n} {word if n == 1 else word + 's'}"


def check_fits(model: Model, observation_space: Space, action_space: Space) -> None:
    """Raise ``ModelFormatError`` when ``model`` cannot drive an environment with these spaces (another
    observation size, another number of actions, or continuous instead of discrete actions)."""
    obs_size = int(getattr(observation_space, "size", 0) or 0)
    if obs_size and model.network.input_size != obs_size:
        raise ModelFormatError(f"The model reads {model.network.input_size} inputs but this tree observes "
                               f"{obs_size}: it was trained on a different tree")
    a_model = model.action_space
    if isinstance(action_space, Discrete) and isinstance(a_model, Discrete) and action_space.n != a_model.n:
        raise ModelFormatError(f"The model chooses among {_count(a_model.n, 'action')} but this tree has "
                               f"{action_space.n}: it was trained on a different tree")
    if isinstance(action_space, Discrete) != isinstance(a_model, Discrete):
        kinds = {True: "a set of actions", False: "continuous actions"}
        raise ModelFormatError(f"The model was trained for {kinds[isinstance(a_model, Discrete)]} but this tree "
                               f"has {kinds[isinstance(action_space, Discrete)]}: it was trained on a different tree")
