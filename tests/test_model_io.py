"""The model file: round trips are exact, and every kind of bad file gets a clear ModelFormatError."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from drla_core.io import model_checks, model_io
from drla_core.nn.mlp import MLP
from drla_core.io.model_io import (
    Model,
    ModelFormatError,
    load_model,
    model_from_dict,
    model_to_dict,
    parse_model_json,
    save_model,
)
from drla_core.base.spaces import Box, Discrete

ROOT = Path(__file__).resolve().parents[1]


def make_model(obs_norm: bool = True, kind: str = "dqn") -> Model:
    net = MLP(5, [(16, "relu"), (8, "tanh"), (6, "leaky_relu")], 3, "linear", rng=7)
    norm = {"mean": [0.1, -0.2, 0.0, 0.5, 1.0], "std": [1.0, 2.0, 0.5, 1.5, 3.0]} if obs_norm else None
    return Model(net, Box(-1.0, 1.0, (5,)), Discrete(3, ["left", "wait", "right"]), kind=kind, obs_norm=norm,
                 meta={"training_steps": 1234, "seed": 7}, extra={"arm": {"bones": ["a", "b"], "lengths": [1.0, 0.5]}})


@pytest.fixture
def good() -> dict[str, Any]:
    return model_to_dict(make_model())


def obs_batch(n: int = 32) -> np.ndarray:
    return np.random.default_rng(0).uniform(-1, 1, size=(n, 5)).astype(np.float32)


# ---- round trips -------------------------------------------------------------------------------


@pytest.mark.parametrize("obs_norm", [True, False])
def test_round_trip_file_gives_identical_outputs_and_dicts(tmp_path: Path, obs_norm: bool) -> None:
    model = make_model(obs_norm)
    path = save_model(tmp_path / "model.json", model)
    loaded = load_model(path)
    x = obs_batch()
    assert np.array_equal(model.predict(x), loaded.predict(x))
    assert np.array_equal(model.act(x), loaded.act(x))
    assert model.act(x[0]) == loaded.act(x[0])
    assert model_to_dict(loaded) == model_to_dict(model)
    assert loaded.action_space.names == ["left", "wait", "right"]
    assert loaded.extra == model.extra and loaded.meta == model.meta
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_round_trip_dict_and_box_actions() -> None:
    net = MLP(4, [(8, "sigmoid")], 2, "tanh", rng=1)
    model = Model(net, Box(-np.inf, np.inf, (2, 2)), Box([-0.5, -1.0], [0.5, 1.0]), kind="ik")
    again = model_from_dict(json.loads(json.dumps(model_to_dict(model))))
    x = np.random.default_rng(1).normal(size=(6, 2, 2)).astype(np.float32)
    assert np.array_equal(model.predict(x), again.predict(x))
    action = again.act(x[0])
    assert action.shape == (2,) and np.all(np.abs(action) <= [0.5, 1.0])
    assert again.observation_space == model.observation_space and again.kind == "ik"


def test_predict_applies_obs_norm() -> None:
    model = make_model()
    x = obs_batch(4)
    normed = (x - model.obs_norm["mean"]) / model.obs_norm["std"]
    assert np.allclose(model.predict(x), model.network.forward(normed))
    assert int(model.act(x[0])) == int(np.argmax(model.network.forward(normed[0])))


def test_meta_defaults_are_filled() -> None:
    meta = make_model().meta
    assert meta["drla_version"] and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["created"])


def test_save_is_atomic_and_replaces(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text("old")
    save_model(path, make_model())
    assert load_model(path).kind == "dqn"
    broken = make_model()
    broken.network.params[0] = np.nan
    with pytest.raises(ModelFormatError, match="NaN"):
        save_model(path, broken)
    assert load_model(path).kind == "dqn"  # the old file is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


def test_numpy_values_in_meta_are_saved_as_plain_data(tmp_path: Path) -> None:
    model = make_model()
    model.meta["seed"] = np.int64(3)
    model.extra["v"] = np.arange(3, dtype=np.float32)
    loaded = load_model(save_model(tmp_path / "m.json", model))
    assert loaded.meta["seed"] == 3 and loaded.extra["v"] == [0.0, 1.0, 2.0]


# ---- bad files ---------------------------------------------------------------------------------


def _set(path: str, value: Any) -> Callable[[dict], None]:
    def mutate(d: dict) -> None:
        *parents, last = path.split("/")
        for p in parents:
            d = d[int(p)] if isinstance(d, list) else d[p]
        if isinstance(d, list):
            d[int(last)] = value
        else:
            d[last] = value
    return mutate


def _delete(path: str) -> Callable[[dict], None]:
    def mutate(d: dict) -> None:
        *parents, last = path.split("/")
        for p in parents:
            d = d[int(p)] if isinstance(d, list) else d[p]
        del d[last]
    return mutate


def _resize_hidden(d: dict) -> None:
    d["architecture"]["hidden"][0]["size"] = 17


def _drop_column(d: dict) -> None:
    for row in d["params"]["layers.1.weight"]:
        row.pop()


BAD_DICTS = [
    ("wrong-format", _set("format", "keras"), "format is 'keras', expected 'drla-model'"),
    ("missing-format", _delete("format"), "missing required key 'format'"),
    ("future-version", _set("version", 2), "unsupported model format version 2: this DRLA reads version 1"),
    ("version-string", _set("version", "1"), "version must be an integer, got a string"),
    ("missing-params", _delete("params"), "model: missing required key 'params'"),
    ("missing-meta", _delete("meta"), "model: missing required key 'meta'"),
    ("missing-created", _delete("meta/created"), "meta: missing required key 'created'"),
    ("unknown-key", _set("pickle", "x"), "model: unknown key 'pickle'"),
    ("unknown-kind", _set("kind", "ppo"), "kind: unknown kind 'ppo'"),
    ("size-string", _set("architecture/input_size", "5"), "architecture.input_size must be an integer, got a string"),
    ("size-bool", _set("architecture/output_size", True), "architecture.output_size must be an integer, got a boolean"),
    ("size-float", _set("architecture/hidden/0/size", 16.0),
     "architecture.hidden[0].size must be an integer, got a number"),
    ("size-zero", _set("architecture/hidden/1/size", 0), "architecture.hidden[1].size must be between 1 and"),
    ("activation", _set("architecture/hidden/1/activation", "gelu"),
     "architecture.hidden[1].activation: unknown activation 'gelu'"),
    ("out-activation", _set("architecture/output_activation", 3), "architecture.output_activation must be a string"),
    ("hidden-not-list", _set("architecture/hidden", {"size": 3}), "architecture.hidden must be an array"),
    ("arch-missing", _delete("architecture/output_size"), "architecture: missing required key 'output_size'"),
    ("weight-shape", _resize_hidden, "params.layers.0.weight: shape mismatch, the architecture needs (17, 5) "
                                     "(out, in), the file has (16, 5)"),
    ("weight-columns", _drop_column, "params.layers.1.weight: shape mismatch, the architecture needs (8, 16) "
                                     "(out, in), the file has (8, 15)"),
    ("bias-shape", _set("params/layers.2.bias", [0.0] * 5), "params.layers.2.bias: shape mismatch, the architecture "
                                                            "needs (6,), the file has (5,)"),
    ("missing-layer", _delete("params/layers.3.bias"), "params: missing required key 'layers.3.bias'"),
    ("extra-layer", _set("params/layers.4.bias", [0.0]), "params: unknown key 'layers.4.bias'"),
    ("weight-string", _set("params/layers.0.weight/3/2", "0.5"),
     "params.layers.0.weight[3]: every value must be a number, found a string"),
    ("weight-bool", _set("params/layers.1.bias/0", False), "params.layers.1.bias: every value must be a number, "
                                                           "found a boolean"),
    ("weight-null", _set("params/layers.3.weight/0/0", None), "every value must be a number, found null"),
    ("weight-overflow", _set("params/layers.0.bias/0", 1e300), "params.layers.0.bias: values must be finite float32"),
    ("obs-space-size", _set("observation_space/shape", [6]),
     "observation_space has 6 values but architecture.input_size is 5"),
    ("action-space-size", _set("action_space", {"type": "discrete", "n": 4, "names": ["a", "b", "c", "d"]}),
     "action_space has 4 values but architecture.output_size is 3"),
    ("action-names", _set("action_space/names", ["a", "b"]), "action_space.names must be an array of 3 strings"),
    ("action-name-type", _set("action_space/names/1", 5), "action_space.names[1] must be a string, got an integer"),
    ("space-type", _set("observation_space/type", "tuple"), "observation_space.type must be 'box' or 'discrete'"),
    ("space-bound", _set("observation_space/low", "low"), "observation_space.low must be a number, null or an array"),
    ("obs-norm-length", _set("obs_norm/mean", [0.0]), "obs_norm.mean: expected 5 values, got 1"),
    ("obs-norm-std", _set("obs_norm/std", [1.0, 1.0, 0.0, 1.0, 1.0]), "obs_norm.std: every value must be positive"),
    ("obs-norm-type", _set("obs_norm", [1, 2]), "obs_norm must be an object, got an array"),
    ("meta-type", _set("meta", "yesterday"), "meta must be an object, got a string"),
    ("extra-type", _set("extra", []), "extra must be an object, got an array"),
    ("too-many-params", _set("architecture/hidden", [{"size": 100_000, "activation": "relu"}] * 6),
     f"more than the limit of {model_io.MAX_PARAMS}"),
    ("too-many-layers", _set("architecture/hidden", [{"size": 2, "activation": "relu"}] * 64),
     "64 hidden layers, at most 63 allowed"),
    ("layer-too-wide", _set("architecture/hidden/0/size", 10**9), "architecture.hidden[0].size must be between 1 and"),
]


@pytest.mark.parametrize("mutate, message", [c[1:] for c in BAD_DICTS], ids=[c[0] for c in BAD_DICTS])
def test_bad_model_dict_is_refused_with_a_clear_message(good: dict, mutate: Callable[[dict], None],
                                                        message: str) -> None:
    bad = copy.deepcopy(good)
    mutate(bad)
    with pytest.raises(ModelFormatError) as err:
        model_from_dict(bad)
    assert message in str(err.value)


def test_deeply_nested_extra_is_refused(good: dict) -> None:
    nested: Any = 1
    for _ in range(model_io.MAX_DEPTH + 2):
        nested = [nested]
    good["extra"] = {"deep": nested}
    with pytest.raises(ModelFormatError, match="nested deeper than"):
        model_from_dict(good)


def _good_text() -> str:
    return json.dumps(model_to_dict(make_model()), separators=(",", ":"))


BAD_TEXTS = [
    ("not-json", "this is not json", "not a JSON model file: Expecting value at line 1 column 1"),
    ("truncated", _good_text()[:200], "not a JSON model file"),
    ("not-object", "[1, 2, 3]", "a model must be a JSON object, got an array"),
    ("string", '"drla-model"', "a model must be a JSON object, got a string"),
    ("nan", _good_text().replace('"layers.0.bias":[', '"layers.0.bias":[NaN,', 1),
     "NaN is not allowed in a model file"),
    ("infinity", _good_text().replace('"layers.0.bias":[', '"layers.0.bias":[Infinity,', 1),
     "Infinity is not allowed in a model file"),
    ("minus-infinity", _good_text().replace('"layers.0.bias":[', '"layers.0.bias":[-Infinity,', 1),
     "-Infinity is not allowed in a model file"),
    ("huge-number", _good_text().replace('"layers.0.bias":[', '"layers.0.bias":[1e999,', 1),
     "number 1e999 is too large"),
    ("deep-nesting", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("not-utf8", b'{"format": "\xff"}', "not UTF-8"),
]


@pytest.mark.parametrize("text, message", [c[1:] for c in BAD_TEXTS], ids=[c[0] for c in BAD_TEXTS])
def test_bad_model_file_is_refused_with_a_clear_message(tmp_path: Path, text: str | bytes, message: str) -> None:
    path = tmp_path / "bad.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(ModelFormatError) as err:
        load_model(path)
    assert message in str(err.value)


def test_oversized_file_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_io, "MAX_FILE_BYTES", 1000)
    path = save_model(tmp_path / "big.json", make_model())
    with pytest.raises(ModelFormatError, match="more than the limit of 1000 for a model file"):
        load_model(path)
    with pytest.raises(ModelFormatError, match="more than the limit of 1000"):
        parse_model_json(path.read_text())


def test_params_are_not_built_when_the_architecture_is_absurd(good: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("arrays built before the architecture was checked")

    monkeypatch.setattr(model_checks, "_float32_array", boom)
    good["architecture"]["hidden"] = [{"size": 1_000_000, "activation": "relu"}] * 3
    with pytest.raises(ModelFormatError, match="parameters, more than the limit"):
        model_from_dict(good)


def test_model_io_never_uses_pickle_or_eval() -> None:
    for name in ("model_io.py", "model_checks.py", "team_model.py"):
        source = (ROOT / "drla_core" / "io" / name).read_text()
        for word in ("import pickle", "eval(", "exec(", "__import__", "allow_pickle=True"):
            assert word not in source


# ---- the schema and the docs --------------------------------------------------------------------


def load_schema() -> dict[str, Any]:
    return json.loads((ROOT / "drla_core" / "io" / "model_schema.json").read_text())


def test_schema_is_json_and_matches_the_loader() -> None:
    schema = load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    props = schema["properties"]
    assert schema["required"] == list(model_io.REQUIRED_KEYS)
    assert set(props) == set(model_io.REQUIRED_KEYS) | set(model_io.OPTIONAL_KEYS)
    assert schema["additionalProperties"] is False
    assert props["format"]["const"] == model_io.FORMAT and props["version"]["const"] == model_io.VERSION
    assert props["kind"]["enum"] == list(model_io.KINDS)
    arch = props["architecture"]
    assert arch["required"] == list(model_io.ARCHITECTURE_KEYS) and set(arch["properties"]) == set(arch["required"])
    assert arch["properties"]["hidden"]["maxItems"] == model_io.MAX_LAYERS - 1
    assert set(props["meta"]["required"]) == set(model_io.META_REQUIRED_KEYS)
    defs = schema["$defs"]
    assert defs["activation"]["enum"] == list(model_checks.ACTIVATIONS)
    assert defs["size"]["maximum"] == model_io.MAX_LAYER_SIZE
    discrete, box = defs["space"]["oneOf"]
    assert discrete["required"] == list(Discrete(2).to_dict())
    assert set(box["properties"]) == set(Box(0, 1, (2,)).to_dict())
    assert box["properties"]["dtype"]["enum"] == list(model_io.BOX_DTYPES)
    norm = props["obs_norm"]["oneOf"][1]
    assert norm["required"] == ["mean", "std"]


def _schema_types(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        return defs[schema["$ref"].split("/")[-1]]
    return schema


def _check(value: Any, schema: dict[str, Any], defs: dict[str, Any], where: str) -> None:
    """A small structural subset of JSON Schema (type, const, enum, required, properties, items, oneOf)."""
    schema = _schema_types(schema, defs)
    if "oneOf" in schema:
        errors = []
        for option in schema["oneOf"]:
            try:
                _check(value, option, defs, where)
            except AssertionError as exc:
                errors.append(str(exc))
        assert len(errors) == len(schema["oneOf"]) - 1, f"{where}: matches {len(schema['oneOf']) - len(errors)} options"
        return
    types = {"object": dict, "array": list, "string": str, "null": type(None), "boolean": bool}
    wanted = schema.get("type")
    if wanted is not None:
        names = wanted if isinstance(wanted, list) else [wanted]
        ok = any((type(value) in (int, float)) if n == "number" else (type(value) is int) if n == "integer"
                 else isinstance(value, types[n]) for n in names)
        assert ok, f"{where}: {value!r:.30} is not {wanted}"
    if "const" in schema:
        assert value == schema["const"], where
    if "enum" in schema:
        assert value in schema["enum"], where
    if isinstance(value, dict):
        for key in schema.get("required", []):
            assert key in value, f"{where}: missing {key}"
        for key, sub in value.items():
            if key in schema.get("properties", {}):
                _check(sub, schema["properties"][key], defs, f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                raise AssertionError(f"{where}: unexpected {key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                _check(sub, schema["additionalProperties"], defs, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value[:50]):
            _check(item, schema["items"], defs, f"{where}[{i}]")


@pytest.mark.parametrize("obs_norm", [True, False])
def test_saved_models_satisfy_the_schema(obs_norm: bool) -> None:
    schema = load_schema()
    _check(model_to_dict(make_model(obs_norm)), schema, schema["$defs"], "model")


def test_docs_example_loads_and_validates() -> None:
    text = (ROOT / "docs" / "model-format.md").read_text()
    example = json.loads(re.search(r"```json\n(.*?)```", text, re.S).group(1))
    model = model_from_dict(example)
    assert model.act([0.2, 0.4]) in (0, 1)
    schema = load_schema()
    _check(example, schema, schema["$defs"], "example")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_docs_javascript_forward_pass_matches_numpy(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "model-format.md").read_text()
    js = re.search(r"```js\n(.*?)```", text, re.S).group(1)
    model = make_model()
    path = save_model(tmp_path / "m.json", model)
    x = obs_batch(3)
    script = js + (f"\nconst model = JSON.parse(require('fs').readFileSync({json.dumps(str(path))}, 'utf8'));\n"
                   f"const xs = {json.dumps(x.tolist())};\n"
                   "console.log(JSON.stringify(xs.map(o => [predict(model, o), act(model, o)])));\n")
    (tmp_path / "forward.js").write_text(script)
    out = subprocess.run(["node", str(tmp_path / "forward.js")], capture_output=True, text=True, timeout=60, check=True)
    results = json.loads(out.stdout)
    for obs, (q, name) in zip(x, results):
        assert np.allclose(q, model.predict(obs), rtol=1e-5, atol=1e-5)
        assert name == model.action_space.names[model.act(obs)]


# ---- hostile files: each ends in ModelFormatError within bounded time and memory (issue 14, item 5) -------------


def _write_huge_extra(path: Path, megabytes: int) -> None:
    """A model whose ``extra`` holds ``megabytes`` MiB of numbers, written in 1 MiB chunks."""
    head, tail = _good_text().rsplit('"extra":{', 1)
    chunk = b"0.125," * (1024 * 1024 // 6)
    with open(path, "wb") as f:
        f.write((head + '"extra":{"numbers":[').encode())
        for _ in range(megabytes):
            f.write(chunk)
        f.write(("0]," + tail).encode())


def test_huge_integer_weight_is_a_format_error_not_an_overflow(tmp_path: Path) -> None:
    path = tmp_path / "bigint.json"
    path.write_text(_good_text().replace('"layers.0.bias":[', '"layers.0.bias":[' + "1" * 400 + ",", 1))
    with pytest.raises(ModelFormatError, match="integer 1111.* is too large: 400 digits, more than the limit of 39"):
        load_model(path)
    path.write_text(_good_text().replace('"layers.0.bias":[', '"layers.0.bias":[-' + "9" * 40 + ",", 1))
    with pytest.raises(ModelFormatError, match="40 digits"):
        load_model(path)


def test_huge_integer_in_a_dict_is_a_format_error(good: dict) -> None:
    good["params"]["layers.0.bias"][0] = 10**400
    with pytest.raises(ModelFormatError, match=r"params.layers.0.bias: values must be finite float32 numbers"):
        model_from_dict(good)


def test_float32_overflowing_integer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f32.json"
    path.write_text(re.sub(r'"layers.0.bias":\[[^,]+,', '"layers.0.bias":[' + "9" * 39 + ",", _good_text(), count=1))
    with pytest.raises(ModelFormatError, match="params.layers.0.bias: values must be finite float32"):
        load_model(path)


def test_250_mb_file_is_refused_before_parsing_with_bounded_memory(tmp_path: Path) -> None:
    import tracemalloc

    path = tmp_path / "huge.json"
    _write_huge_extra(path, 250)
    tracemalloc.start()
    try:
        with pytest.raises(ModelFormatError, match=r"huge.json: \d+ bytes, more than the limit of 16777216"):
            load_model(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000  # nothing was read: the size alone refused it


def test_file_just_under_the_limit_with_a_long_extra_array_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "long.json"
    _write_huge_extra(path, 15)  # 15 MiB: parsed, then the 2.6 million item array is refused
    assert path.stat().st_size < model_io.MAX_FILE_BYTES
    with pytest.raises(ModelFormatError, match=r"extra.numbers: an array of \d+ items, more than the limit of "
                                               r"1000000"):
        load_model(path)


@pytest.mark.parametrize("where, message", [
    ("extra", "extra.note: a string of 65537 characters, more than the limit of 65536"),
    ("meta", "meta.note: a string of 65537 characters"),
    ("key", "extra: a key: a string of 65537 characters"),
    ("name", "action_space.names[0]: a string of 65537 characters"),
])
def test_long_strings_are_refused(good: dict, where: str, message: str) -> None:
    text = "x" * (model_io.MAX_STRING_CHARS + 1)
    if where == "key":
        good["extra"] = {text: 1}
    elif where == "name":
        good["action_space"]["names"][0] = text
    else:
        good[where]["note"] = text
    with pytest.raises(ModelFormatError, match=re.escape(message)):
        model_from_dict(good)


def test_nested_long_array_in_extra_is_refused(good: dict) -> None:
    good["extra"] = {"a": [{"b": [0] * (model_io.MAX_ARRAY_ITEMS + 1)}]}
    with pytest.raises(ModelFormatError, match=re.escape("extra.a[0].b: an array of 1000001 items")):
        model_from_dict(good)


@pytest.mark.parametrize("command", ["inspect", "eval"])
@pytest.mark.parametrize("case", ["bigint", "huge"])
def test_cli_refuses_hostile_files_in_one_line(tmp_path: Path, command: str, case: str) -> None:
    import sys

    path = tmp_path / f"{case}.json"
    if case == "bigint":
        path.write_text(_good_text().replace('"layers.0.bias":[', '"layers.0.bias":[' + "1" * 400 + ",", 1))
    else:
        _write_huge_extra(path, 250)
    argv = [sys.executable, "-m", "drla", command, str(path)] + (["--env", "cartpole"] if command == "eval" else [])
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: "), out.stderr
    assert "Traceback" not in out.stderr
    assert ("400 digits" if case == "bigint" else "more than the limit of 16777216") in lines[0]
