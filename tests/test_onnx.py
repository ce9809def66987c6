"""ONNX export and import (issue 14): every kind verified with onnxruntime to 1e-5 on 1000 inputs; plain MLPs
from elsewhere (Gemm or MatMul + Add) come back as DRLA models; bad graphs get one clear error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="onnx is not installed (pip install 'drla[onnx]'): ONNX NOT tested")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed: ONNX outputs NOT verified")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from drla import onnx_io, portable  # noqa: E402
from drla.cli import main  # noqa: E402
from drla_core.io.model_io import ModelFormatError, load_model, model_to_dict  # noqa: E402
from drla_core.base.spaces import Discrete  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = ROOT / "web" / "conformance"
MODELS = [c.path for c in portable.cases(2)] + sorted(CONFORMANCE.glob("mlp_*[!s].json"))


def run(path: Path, x: np.ndarray) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: x}
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feed)))


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_export_matches_numpy_in_onnxruntime(tmp_path: Path, path: Path) -> None:
    model = load_model(path)
    n_in = model.network.input_size
    x = np.random.default_rng(0).normal(0, 1, size=(1000, n_in)).astype(np.float32)
    if model.kind == "ik":
        x = x * 0.2 + model.obs_norm["mean"]
    out = tmp_path / "m.onnx"
    assert main(["export-onnx", str(path), str(out)]) == 0
    got = run(out, x)
    y = model.predict(x.reshape(len(x), *model.observation_space.shape))
    scale = max(1.0, float(np.abs(y).max()))
    assert np.abs(got["output"] - y).max() <= 1e-5 * scale
    if isinstance(model.action_space, Discrete):
        assert got["action"].dtype == np.int64 and np.array_equal(got["action"], model.act(x))
    else:
        assert np.abs(got["action"] - model.act(x).reshape(len(x), -1)).max() <= 1e-5 * scale
    proto = onnx.load(str(out))
    props = {p.key: p.value for p in proto.metadata_props}
    assert props["drla_kind"] == model.kind and proto.opset_import[0].version == onnx_io.OPSET


@pytest.mark.parametrize("path", MODELS[:4], ids=[p.stem for p in MODELS[:4]])
def test_import_of_an_export_gives_the_model_back(tmp_path: Path, path: Path) -> None:
    model = load_model(path)
    onnx_io.export_onnx(model, tmp_path / "m.onnx")
    assert main(["import-onnx", str(tmp_path / "m.onnx"), str(tmp_path / "back.json")]) == 0
    back = load_model(tmp_path / "back.json")
    a, b = model_to_dict(model), model_to_dict(back)
    assert b["meta"].pop("imported_from").startswith("ONNX (drla)")
    assert a == b


def foreign_mlp(op: str = "matmul", alpha: float = 0.01) -> onnx.ModelProto:
    """A 3 -> 5 (LeakyRelu) -> 4 (Tanh) -> 2 MLP as another tool would write it: MatMul + Add, (in, out) weights."""
    rng = np.random.default_rng(1)
    w = [rng.normal(size=(3, 5)), rng.normal(size=(5, 4)), rng.normal(size=(4, 2))]
    b = [rng.normal(size=5), rng.normal(size=4), rng.normal(size=2)]
    inits = [numpy_helper.from_array(a.astype(np.float32), f"{k}{i}") for i, (wi, bi) in enumerate(zip(w, b))
             for k, a in (("W", wi), ("B", bi))]
    nodes, x = [], "input"
    for i, act in enumerate(["LeakyRelu", "Tanh", None]):
        if op == "matmul":
            nodes += [helper.make_node("MatMul", [x, f"W{i}"], [f"m{i}"]), helper.make_node("Add", [f"m{i}", f"B{i}"],
                                                                                             [f"z{i}"])]
        else:
            nodes.append(helper.make_node(op, [x, f"W{i}", f"B{i}"], [f"z{i}"]))
        x = f"z{i}"
        if act:
            nodes.append(helper.make_node(act, [x], [f"h{i}"], **({"alpha": alpha} if act == "LeakyRelu" else {})))
            x = f"h{i}"
    graph = helper.make_graph(nodes, "foreign", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [None, 3])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [None, 2])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="elsewhere")


@pytest.mark.parametrize("op", ["matmul", "Gemm"])
def test_import_a_foreign_mlp_as_a_dqn(tmp_path: Path, op: str) -> None:
    proto = foreign_mlp(op)  # Gemm without transB: (in, out) weights, as MatMul's
    path = tmp_path / "foreign.onnx"
    onnx.save(proto, str(path))
    assert main(["import-onnx", str(path), str(tmp_path / "m.json"), "--actions", "left,right"]) == 0
    model = load_model(tmp_path / "m.json")
    assert model.kind == "dqn" and model.action_space.names == ["left", "right"]
    assert [h["activation"] for h in model.network.architecture()["hidden"]] == ["leaky_relu", "tanh"]
    x = np.random.default_rng(2).normal(size=(1000, 3)).astype(np.float32)
    y = run(path, x)[proto.graph.output[0].name]
    assert np.abs(model.predict(x) - y).max() <= 1e-5 * max(1.0, float(np.abs(y).max()))


@pytest.mark.parametrize("case, message", [
    ("conv", r"\(Conv\) is not part of a plain MLP"),
    ("alpha", "LeakyRelu alpha 0.2"),
    ("garbage", "not an ONNX file"),
    ("external", "stored outside the file"),
    ("no-layer", "no layer"),
])
def test_import_refuses_what_is_not_a_plain_mlp(tmp_path: Path, case: str, message: str) -> None:
    path = tmp_path / "bad.onnx"
    if case == "garbage":
        path.write_bytes(b"\x08\x07garbage" * 10)
    else:
        proto = foreign_mlp(alpha=0.2 if case == "alpha" else 0.01)
        if case == "conv":
            proto.graph.node[2].op_type = "Conv"
        elif case == "external":
            proto.graph.initializer[0].data_location = TensorProto.EXTERNAL
        elif case == "no-layer":
            del proto.graph.node[:]
        path.write_bytes(proto.SerializeToString())
    with pytest.raises(ModelFormatError, match=message):
        onnx_io.import_onnx(path)


def test_oversized_onnx_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.onnx"
    onnx.save(foreign_mlp(), str(path))
    monkeypatch.setattr(onnx_io, "MAX_ONNX_BYTES", 100)
    with pytest.raises(ModelFormatError, match="more than the limit of 100 for an ONNX file"):
        onnx_io.import_onnx(path)


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"not": "onnx"}))
    for argv, message in ((["export-onnx", "missing.json", "o.onnx"], "no such model file"),
                          (["import-onnx", str(tmp_path / "x.json"), str(tmp_path / "o.json")], "not an ONNX file"),
                          (["import-onnx", str(tmp_path / "none.onnx"), str(tmp_path / "o.json")], "no such ONNX")):
        out = subprocess.run([sys.executable, "-m", "drla", *argv], cwd=tmp_path, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert message in out.stderr


def neat_model(with_norm: bool = True):
    """A NEAT-shaped graph network: 3 inputs, 2 tanh outputs, hidden nodes of three activations on two levels,
    a skip connection from an input to an output, and an output fed by a hidden node only."""
    from drla_core.nn.graph_net import GraphNetwork
    from drla_core.io.model_io import Model
    from drla_core.base.spaces import Box

    # nodes: 0-2 inputs, 3-4 outputs, 5 relu (level 1), 6 sigmoid (level 1), 7 leaky_relu (level 2)
    conns = [(0, 5), (1, 5), (1, 6), (2, 6), (5, 7), (6, 7), (7, 3), (0, 3), (6, 4), (2, 4)]
    rng = np.random.default_rng(3)
    net = GraphNetwork(3, 2, "tanh", ["relu", "sigmoid", "leaky_relu"], conns, rng.normal(0, 1.5, len(conns)),
                       rng.normal(0, 0.5, 5))
    norm = {"mean": [0.1, -0.2, 0.3], "std": [1.5, 0.5, 2.0]} if with_norm else None
    return Model(net, Box(-np.inf, np.inf, (3,)), Discrete(2, ["a", "b"]), kind="mlp", obs_norm=norm,
                 meta={"agent": "neat"})


def test_a_neat_graph_network_exports_and_matches_numpy(tmp_path: Path) -> None:
    from drla_core.io.model_io import save_model

    model = neat_model()
    save_model(tmp_path / "neat.json", model)
    assert main(["export-onnx", str(tmp_path / "neat.json"), str(tmp_path / "neat.onnx")]) == 0
    x = np.random.default_rng(4).normal(0, 2, size=(1000, 3)).astype(np.float32)
    got = run(tmp_path / "neat.onnx", x)
    y = model.predict(x)
    assert np.abs(got["output"] - y).max() <= 1e-5 * max(1.0, float(np.abs(y).max()))
    assert np.array_equal(got["action"], model.act(x))
    with pytest.raises(ModelFormatError, match="a graph network .* is not a plain MLP"):
        onnx_io.import_onnx(tmp_path / "neat.onnx")


def test_gemm_alpha_and_beta_are_folded_into_the_layer(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    w1, b1, w2, b2 = rng.normal(size=(4, 3)), rng.normal(size=4), rng.normal(size=(2, 4)), rng.normal(size=2)
    init = [numpy_helper.from_array(a.astype(np.float32), n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"),
                                                                          (b2, "b2"))]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["z1"], transB=1, alpha=0.5, beta=2.0),
             helper.make_node("Relu", ["z1"], ["h1"]),
             helper.make_node("Gemm", ["h1", "w2", "b2"], ["y"], transB=1, alpha=-3.0)]
    graph = helper.make_graph(nodes, "scaled", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 2])], initializer=init)
    path = tmp_path / "scaled.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    model = onnx_io.import_onnx(path)
    x = rng.normal(size=(500, 3)).astype(np.float32)
    y = run(path, x)["y"]
    assert np.abs(model.predict(x) - y).max() <= 1e-5 * max(1.0, float(np.abs(y).max()))
    proto = onnx.load(str(path))
    proto.graph.node[0].attribute.append(helper.make_attribute("transA", 1))
    path.write_bytes(proto.SerializeToString())
    with pytest.raises(ModelFormatError, match="transA"):
        onnx_io.import_onnx(path)
