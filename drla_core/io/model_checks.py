"""The model file's limits and field checks: every value of a loaded file is typed, bounded and named in the
error (``ModelFormatError``) before anything is built from it."""


from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..nn.mlp import ACTIVATIONS
from ..base.spaces import Discrete, Space, space_from_dict


FORMAT = "drla-model"
VERSION = 1
KINDS = ("dqn", "ik", "mlp")
REQUIRED_KEYS = ("format", "version", "kind", "architecture", "params", "observation_space", "action_space", "meta")
OPTIONAL_KEYS = ("obs_norm", "extra")
ARCHITECTURE_KEYS = ("input_size", "hidden", "output_size", "output_activation")
META_REQUIRED_KEYS = ("drla_version", "created")
BOX_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "bool")

#: Refuse files larger than this before reading them: parsing 16 MiB of JSON numbers takes about a second
#: and about 10x the file's size in memory (Python objects), so a hostile file costs at most that.
MAX_FILE_BYTES = 16 * 1024 * 1024
#: Refuse architectures with more weights and biases than this before allocating anything (a file within
#: MAX_FILE_BYTES holds fewer anyway: each number takes at least two bytes).
MAX_PARAMS = 4_000_000
#: Most layers (hidden + output) a model may have.
MAX_LAYERS = 64
#: Widest layer (and largest observation / action vector) a model may have.
MAX_LAYER_SIZE = 1_000_000
#: Deepest nesting of lists/objects allowed in ``meta`` and ``extra``.
MAX_DEPTH = 32
#: Longest string (a value or an object key) anywhere in a model file.
MAX_STRING_CHARS = 65_536
#: Longest array anywhere in a model file (``meta`` and ``extra`` included).
MAX_ARRAY_ITEMS = 1_000_000
#: Most digits a JSON integer may have: float32's largest value has 39, so no weight needs more.
MAX_INT_DIGITS = 39


class ModelFormatError(ValueError):
    """A model file or dict is not a valid DRLA model; the message names the field at fault."""



# ---------------------------------------------------------------------------------------------
# Validation helpers: each names the field it checks
# ---------------------------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return {bool: "a boolean", str: "a string", int: "an integer", float: "a number", list: "an array",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)  # exact types: bools are not numbers


def _int(value: Any, field: str, low: int, high: int) -> int:
    if type(value) is not int:
        raise ModelFormatError(f"{field} must be an integer, got {_type_name(value)} ({value!r:.40})")
    if not low <= value <= high:
        raise ModelFormatError(f"{field} must be between {low} and {high}, got {value}")
    return value


def _str(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise ModelFormatError(f"{field} must be a string, got {_type_name(value)} ({value!r:.40})")
    if len(value) > MAX_STRING_CHARS:
        raise ModelFormatError(f"{field}: a string of {len(value)} characters, more than the limit of "
                               f"{MAX_STRING_CHARS}")
    return value


def _obj(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ModelFormatError(f"{field} must be an object, got {_type_name(value)}")
    return value


def _keys(d: Mapping[str, Any], field: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    missing = [k for k in required if k not in d]
    if missing:
        raise ModelFormatError(f"{field}: missing required key {missing[0]!r}")
    unknown = sorted(set(d) - set(required) - set(optional))
    if unknown:
        raise ModelFormatError(f"{field}: unknown key {unknown[0]!r:.60} (allowed: {', '.join(required + optional)})")


def _activation(value: Any, field: str) -> str:
    _str(value, field)
    if value not in ACTIVATIONS:
        raise ModelFormatError(f"{field}: unknown activation {value!r}; known: {', '.join(ACTIVATIONS)}")
    return value


def _number_list(value: Any, field: str, length: int) -> None:
    """A flat list of ``length`` finite JSON numbers (checked without building an array)."""
    if not isinstance(value, list):
        raise ModelFormatError(f"{field} must be an array of numbers, got {_type_name(value)}")
    if len(value) != length:
        raise ModelFormatError(f"{field}: expected {length} values, got {len(value)}")
    if not set(map(type, value)) <= {int, float}:
        bad = next(v for v in value if not _is_number(v))
        raise ModelFormatError(f"{field}: every value must be a number, found {_type_name(bad)} ({bad!r:.40})")


def _float32_array(value: list, field: str) -> np.ndarray:
    try:
        with np.errstate(over="ignore"):
            arr = np.array(value, dtype=np.float64).astype(np.float32)
    except OverflowError:  # a Python int beyond float64 (a dict built in code; files stop at MAX_INT_DIGITS)
        raise ModelFormatError(f"{field}: values must be finite float32 numbers (an integer too large for a "
                               "number found)") from None
    if not np.all(np.isfinite(arr)):
        raise ModelFormatError(f"{field}: values must be finite float32 numbers (NaN, infinity or overflow found)")
    return arr


def _check_depth(value: Any, field: str, depth: int = 0) -> None:
    """Free-form data (``meta``, ``extra``) within the limits: nesting, array lengths, string lengths."""
    if depth > MAX_DEPTH:
        raise ModelFormatError(f"{field}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        _str(value, field)
    elif isinstance(value, dict):
        for k, v in value.items():
            _str(k, f"{field}: a key")
            _check_depth(v, f"{field}.{k:.40}", depth + 1)
    elif isinstance(value, list):
        if len(value) > MAX_ARRAY_ITEMS:
            raise ModelFormatError(f"{field}: an array of {len(value)} items, more than the limit of {MAX_ARRAY_ITEMS}")
        if set(map(type, value)) <= {int, float, bool, type(None)}:
            return  # a flat array of numbers (the common case) needs no walk item by item
        for i, v in enumerate(value):
            _check_depth(v, f"{field}[{i}]", depth + 1)


def _architecture(value: Any) -> dict[str, Any]:
    arch = _obj(value, "architecture")
    _keys(arch, "architecture", ARCHITECTURE_KEYS)
    input_size = _int(arch["input_size"], "architecture.input_size", 1, MAX_LAYER_SIZE)
    output_size = _int(arch["output_size"], "architecture.output_size", 1, MAX_LAYER_SIZE)
    _activation(arch["output_activation"], "architecture.output_activation")
    hidden = arch["hidden"]
    if not isinstance(hidden, list):
        raise ModelFormatError(f"architecture.hidden must be an array of layers, got {_type_name(hidden)}")
    if len(hidden) + 1 > MAX_LAYERS:
        raise ModelFormatError(f"architecture.hidden: {len(hidden)} hidden layers, at most {MAX_LAYERS - 1} allowed")
    sizes = [input_size]
    for i, layer in enumerate(hidden):
        field = f"architecture.hidden[{i}]"
        _keys(_obj(layer, field), field, ("size", "activation"))
        sizes.append(_int(layer["size"], f"{field}.size", 1, MAX_LAYER_SIZE))
        _activation(layer["activation"], f"{field}.activation")
    sizes.append(output_size)
    n_params = sum(i * o + o for i, o in zip(sizes[:-1], sizes[1:]))
    if n_params > MAX_PARAMS:
        raise ModelFormatError(f"architecture: {n_params} parameters, more than the limit of {MAX_PARAMS}")
    return {"sizes": sizes}


def _params(value: Any, sizes: list[int]) -> dict[str, np.ndarray]:
    params = _obj(value, "params")
    expected = [f"layers.{i}.{k}" for i in range(len(sizes) - 1) for k in ("weight", "bias")]
    _keys(params, "params", tuple(expected))
    arrays = {}
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        key = f"layers.{i}.weight"
        field = f"params.{key}"
        rows = params[key]
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise ModelFormatError(f"{field} must be an array of arrays (out, in), got {_type_name(rows)}")
        if len(rows) != fan_out or any(len(r) != fan_in for r in rows):
            lengths = {len(r) for r in rows}
            got = f"({len(rows)}, {lengths.pop()})" if len(lengths) == 1 else f"({len(rows)}, ragged rows)"
            raise ModelFormatError(f"{field}: shape mismatch, the architecture needs ({fan_out}, {fan_in}) "
                                   f"(out, in), the file has {got}")
        for j, row in enumerate(rows):
            _number_list(row, f"{field}[{j}]", fan_in)
        arrays[key] = _float32_array(rows, field)
        key = f"layers.{i}.bias"
        bias = params[key]
        if isinstance(bias, list) and len(bias) != fan_out:
            raise ModelFormatError(f"params.{key}: shape mismatch, the architecture needs ({fan_out},), "
                                   f"the file has ({len(bias)},)")
        _number_list(bias, f"params.{key}", fan_out)
        arrays[key] = _float32_array(bias, f"params.{key}")
    return arrays


def _bound(value: Any, field: str, size: int) -> None:
    if value is None or _is_number(value):
        return
    if not isinstance(value, list):
        raise ModelFormatError(f"{field} must be a number, null or an array, got {_type_name(value)}")
    if len(value) != size:
        raise ModelFormatError(f"{field}: expected {size} values (the space's size), got {len(value)}")
    for j, v in enumerate(value):
        if v is not None and not _is_number(v):
            raise ModelFormatError(f"{field}[{j}] must be a number or null, got {_type_name(v)}")


def _space(value: Any, field: str) -> Space:
    d = _obj(value, field)
    kind = d.get("type")
    if kind == "discrete":
        _keys(d, field, ("type", "n", "names"))
        n = _int(d["n"], f"{field}.n", 1, MAX_LAYER_SIZE)
        names = d["names"]
        if not isinstance(names, list) or len(names) != n:
            raise ModelFormatError(f"{field}.names must be an array of {n} strings")
        for j, name in enumerate(names):
            _str(name, f"{field}.names[{j}]")
    elif kind == "box":
        _keys(d, field, ("type", "shape", "low", "high"), ("dtype",))
        shape = d["shape"]
        if not isinstance(shape, list) or len(shape) > 8:
            raise ModelFormatError(f"{field}.shape must be an array of at most 8 integers")
        size = 1
        for j, s in enumerate(shape):
            size *= _int(s, f"{field}.shape[{j}]", 1, MAX_LAYER_SIZE)
        if size > MAX_LAYER_SIZE:
            raise ModelFormatError(f"{field}.shape: {size} elements, more than the limit of {MAX_LAYER_SIZE}")
        _bound(d["low"], f"{field}.low", size)
        _bound(d["high"], f"{field}.high", size)
        if "dtype" in d and d["dtype"] not in BOX_DTYPES:
            raise ModelFormatError(f"{field}.dtype: unknown dtype {d['dtype']!r}; known: {', '.join(BOX_DTYPES)}")
    else:
        raise ModelFormatError(f"{field}.type must be 'box' or 'discrete', got {kind!r:.40}")
    try:
        return space_from_dict(d)
    except (ValueError, TypeError, KeyError) as exc:
        raise ModelFormatError(f"{field}: {exc}") from None


def _space_size(space: Space) -> int:
    return space.n if isinstance(space, Discrete) else math.prod(space.shape)
