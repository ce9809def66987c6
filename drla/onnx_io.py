"""DRLA model files to ONNX and back (``drla export-onnx``, ``drla import-onnx``); needs ``pip install onnx``.

Export: one graph per model, opset 13 (Unity Sentis, Godot's ONNX add-ons, onnxruntime and onnxruntime-web
all read it), with a dynamic batch dimension:

* input ``obs``: float32 ``[batch, input_size]``, the observation flattened, NOT normalised: the file's
  ``obs_norm`` is part of the graph (``Sub`` mean, ``Div`` std);
* output ``output``: float32 ``[batch, output_size]``, the network's outputs (Q-values for ``dqn``);
  a graph network (NEAT) is computed level by level: ``Gemm`` per level and activation, ``Concat``, ``Gather``
  (``import-onnx`` reads plain MLPs only, so it refuses such a file);
* output ``action``: the greedy action: int64 ``[batch]`` (argmax, first on ties) for discrete actions;
  float32 ``[batch, output_size]`` clipped to the action box otherwise (joint angles in radians for ``ik``).
  The IK refinement (iterative DLS) is not in the graph: use drla.js or Python for it;
* input ``action_mask`` (only for a discrete model trained with action masks, ``meta["action_mask"]``):
  float32 ``[batch, output_size]``, 1 for an enabled action, 0 for a disabled one; ``action`` is then the
  argmax over the enabled outputs (``output`` stays the raw network outputs). Feed all ones for no mask.

Metadata (``metadata_props``): ``drla_kind``, ``drla_action_names`` (JSON list, discrete) and ``drla_model``:
the model file without its ``params`` and ``architecture`` (spaces, obs_norm, meta, extra), which makes
``import-onnx`` of an exported file give the same model back.

Import: plain MLPs: the graph's single input, then optionally ``Sub``/``Div`` by constants (read as
``obs_norm``), then layers each ``Gemm`` (any ``alpha``, ``beta``, folded into the weights and bias; any
``transB``) or ``MatMul`` + ``Add``, each
optionally followed by one of the format's activations (``Relu``, ``Tanh``, ``Sigmoid``, ``LeakyRelu`` with
alpha 0.01, ``Identity``). Heads after the last layer (``ArgMax``, ``Max``/``Min``/``Clip``, the mask's
``Where``) and the ``action_mask`` input are ignored. The
result goes through ``model_from_dict``, so every check of the format applies. Nothing is executed: the graph is
read as data, and weights stored outside the file (external data) are refused.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from drla_core.base.files import atomic_write
from drla_core.io.model_io import FORMAT, MAX_PARAMS, VERSION, Model, ModelFormatError, model_from_dict, model_to_dict
from drla_core.base.spaces import Box, Discrete

__all__ = ["OPSET", "INPUT", "OUTPUT", "ACTION", "MASK", "MAX_ONNX_BYTES", "export_onnx", "import_onnx", "to_onnx",
           "from_onnx", "OnnxMissing"]

OPSET = 13
INPUT, OUTPUT, ACTION = "obs", "output", "action"
#: The optional second input of a model trained with action masks (``meta["action_mask"]``): 1 enabled, 0 not.
MASK = "action_mask"
#: An ONNX file larger than this is refused before reading (4 million float32 parameters take 16 MB).
MAX_ONNX_BYTES = 64 * 1024 * 1024

_ACT_OPS = {"relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid", "leaky_relu": "LeakyRelu"}
_OP_ACTS = {"Relu": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid", "LeakyRelu": "leaky_relu", "Identity": "linear"}


class OnnxMissing(RuntimeError):
    """The ``onnx`` package is not installed."""


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise OnnxMissing("this needs the onnx package: pip install 'drla[onnx]' (or: pip install onnx)") from None
    return onnx


def to_onnx(model: Model) -> Any:
    """The ``onnx.ModelProto`` of a DRLA model (see the module docstring for names and shapes)."""
    onnx = _onnx()
    from onnx import TensorProto, helper, numpy_helper

    d = model_to_dict(model)
    arch = d["architecture"]
    if arch.get("type", "mlp") != "mlp":
        raise ModelFormatError(f"export-onnx: architecture {arch.get('type')!r} cannot be exported (only mlp)")
    if isinstance(arch.get("graph"), dict) and arch["graph"].get("recurrent"):
        raise ModelFormatError("export-onnx: a recurrent graph network (graph.recurrent) keeps a value per node "
                               "from one step to the next, and this export is a stateless function of one "
                               "observation; use its .json (drla play and drla eval run it)")
    nodes, inits = [], []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    x = INPUT
    if model.obs_norm is not None:
        nodes.append(helper.make_node("Sub", [x, const("obs_norm.mean", model.obs_norm["mean"])], ["obs_centred"]))
        nodes.append(helper.make_node("Div", ["obs_centred", const("obs_norm.std", model.obs_norm["std"])],
                                      ["obs_normalised"]))
        x = "obs_normalised"
    acts = [h["activation"] for h in arch["hidden"]] + [arch["output_activation"]]
    if "graph" in arch:  # a NEAT network: its levels, one Gemm per activation each (no layers.* params)
        nodes += _graph_nodes(model.network, x, const, inits)
        acts = []
    for i, act in enumerate(acts):
        last = i == len(acts) - 1
        z = OUTPUT if last and act == "linear" else f"layers.{i}.z"
        w = const(f"layers.{i}.weight", np.asarray(d["params"][f"layers.{i}.weight"]))
        b = const(f"layers.{i}.bias", np.asarray(d["params"][f"layers.{i}.bias"]))
        nodes.append(helper.make_node("Gemm", [x, w, b], [z], transB=1, name=f"layers.{i}"))
        if act != "linear":
            h = OUTPUT if last else f"layers.{i}.h"
            attrs = {"alpha": 0.01} if act == "leaky_relu" else {}
            nodes.append(helper.make_node(_ACT_OPS[act], [z], [h], **attrs))
            z = h
        x = z
    batch = "batch"
    outputs = [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, [batch, arch["output_size"]])]
    space = model.action_space
    inputs = [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, [batch, arch["input_size"]])]
    masked = isinstance(space, Discrete) and bool(model.meta.get("action_mask"))
    if masked:  # trained with action masks: the greedy action is the argmax over the enabled outputs
        inputs.append(helper.make_tensor_value_info(MASK, TensorProto.FLOAT, [batch, arch["output_size"]]))
        nodes.append(helper.make_node("Greater", [MASK, const("action_mask.half", np.float32(0.5))], ["enabled"]))
        nodes.append(helper.make_node("Where", ["enabled", OUTPUT, const("action_mask.off", np.float32(-3e38))],
                                      ["masked_output"]))
    if isinstance(space, Discrete):
        nodes.append(helper.make_node("ArgMax", ["masked_output" if masked else OUTPUT], [ACTION], axis=1,
                                      keepdims=0, select_last_index=0))
        outputs.append(helper.make_tensor_value_info(ACTION, TensorProto.INT64, [batch]))
    elif isinstance(space, Box):
        low = np.asarray(space.low, np.float64).reshape(-1)
        high = np.asarray(space.high, np.float64).reshape(-1)
        lo = np.where(np.isfinite(low), low, -np.finfo(np.float32).max).astype(np.float32)
        hi = np.where(np.isfinite(high), high, np.finfo(np.float32).max).astype(np.float32)
        nodes.append(helper.make_node("Max", [OUTPUT, const("action.low", lo)], ["action_above_low"]))
        nodes.append(helper.make_node("Min", ["action_above_low", const("action.high", hi)], [ACTION]))
        outputs.append(helper.make_tensor_value_info(ACTION, TensorProto.FLOAT, [batch, arch["output_size"]]))
    graph = helper.make_graph(nodes, f"drla_{model.kind}", inputs, outputs, initializer=inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="drla",
                                   producer_version=str(model.meta.get("drla_version", "")),
                                   doc_string=f"DRLA {model.kind} network: input '{INPUT}' (raw observations), "
                                              f"outputs '{OUTPUT}' and '{ACTION}' (the greedy action)")
    onnx_model.ir_version = 7  # opset 13's IR version: the most runtimes read it
    header = {k: v for k, v in d.items() if k not in ("params", "architecture")}
    props = {"drla_kind": model.kind, "drla_model": json.dumps(header, separators=(",", ":"))}
    if isinstance(space, Discrete):
        props["drla_action_names"] = json.dumps(space.names)
    helper.set_model_props(onnx_model, props)
    onnx.checker.check_model(onnx_model)
    return onnx_model


def _graph_nodes(net: Any, x: str, const: Any, inits: list[Any]) -> list[Any]:
    """The ONNX nodes of a ``GraphNetwork`` (NEAT) reading ``x`` and writing ``OUTPUT``.

    Nodes are computed level by level (``graph_levels``): ``values`` holds the inputs, then each level's nodes
    appended as columns (``Concat``); a level is one ``Gemm`` per activation over every column so far (the weight
    matrix zero where there is no connection), and ``OUTPUT`` gathers the output nodes' columns in order.
    """
    from onnx import helper, numpy_helper

    from drla_core.nn.graph_net import graph_levels

    n_in = net.input_size
    level = graph_levels(net.n_nodes, n_in, net.connections)
    order = list(range(n_in))  # node id of each column of ``values``
    values, nodes = x, []
    for lv in sorted(set(level[n_in:])):
        groups: dict[str, list[int]] = {}
        for node in range(n_in, net.n_nodes):
            if level[node] == lv:
                groups.setdefault(net.activations[node - n_in], []).append(node)
        outs, added = [], []
        row = {node: k for k, node in enumerate(order)}
        for act, members in sorted(groups.items()):
            if act != "linear" and act not in _ACT_OPS:
                raise ModelFormatError(f"export-onnx: activation {act!r} has no ONNX operator here")
            col = {node: k for k, node in enumerate(members)}
            w = np.zeros((len(order), len(members)), np.float32)
            for (src, dst), weight in zip(net.connections, net.weights):
                if dst in col:
                    w[row[src], col[dst]] += weight
            b = net.biases[np.asarray(members) - n_in]
            name = f"graph.level{lv}.{act}"
            nodes.append(helper.make_node("Gemm", [values, const(f"{name}.weight", w), const(f"{name}.bias", b)],
                                          [f"{name}.z"], name=name))
            z = f"{name}.z"
            if act != "linear":
                attrs = {"alpha": 0.01} if act == "leaky_relu" else {}
                nodes.append(helper.make_node(_ACT_OPS[act], [z], [f"{name}.h"], **attrs))
                z = f"{name}.h"
            outs.append(z)
            added += members
        order += added
        nodes.append(helper.make_node("Concat", [values, *outs], [f"graph.values{lv}"], axis=1))
        values = f"graph.values{lv}"
    picked = np.asarray([order.index(n_in + j) for j in range(net.output_size)], np.int64)
    inits.append(numpy_helper.from_array(picked, "graph.outputs"))
    nodes.append(helper.make_node("Gather", [values, "graph.outputs"], [OUTPUT], axis=1))
    return nodes


def export_onnx(model: Model, path: str | Path) -> Path:
    """Write ``model`` as an ONNX file at ``path``."""
    return atomic_write(path, to_onnx(model).SerializeToString())


# ---- import --------------------------------------------------------------------------------------------------


def _fail(message: str) -> None:
    raise ModelFormatError(f"import-onnx: {message}")


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _initializers(graph: Any) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    inits = {}
    for t in graph.initializer:
        if t.data_location == 1:  # EXTERNAL: the weights would be read from another path
            _fail(f"initializer {t.name!r} is stored outside the file (external data is not read)")
        if math.prod(t.dims) > MAX_PARAMS:
            _fail(f"initializer {t.name!r} has {math.prod(t.dims)} values, more than the limit of {MAX_PARAMS}")
        inits[t.name] = numpy_helper.to_array(t)
    return inits


class _Chain:
    """The MLP read off a graph: ``mean``/``std`` (a leading Sub/Div), ``layers`` [(W (out, in), b)], ``acts``."""

    def __init__(self, graph: Any) -> None:
        self.inits = _initializers(graph)
        inputs = [i for i in graph.input if i.name not in self.inits and i.name != MASK]
        if len(inputs) != 1:
            _fail(f"the graph needs exactly one input (the observation), it has {len(inputs)}")
        self.consumers: dict[str, list[Any]] = {}
        for node in graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.mean: np.ndarray | None = None
        self.std: np.ndarray | None = None
        self.layers: list[tuple[np.ndarray, np.ndarray]] = []
        self.acts: list[str] = []
        x = inputs[0].name
        while True:
            nexts = [n for n in self.consumers.get(x, [])
                     if n.op_type not in ("ArgMax", "Max", "Min", "Clip", "Where")]
            if not nexts:
                break
            if len(nexts) > 1:
                _fail(f"{x!r} feeds {len(nexts)} nodes: not a plain chain of layers")
            x = self._read(nexts[0], x)
        if not self.layers:
            _fail("no layer (Gemm or MatMul + Add) found after the input")
        for (w, _), (w2, _) in zip(self.layers, self.layers[1:]):
            if w2.shape[1] != w.shape[0]:
                _fail(f"layer shapes do not chain: {w.shape} then {w2.shape}")

    def constant(self, name: str, what: str) -> np.ndarray:
        if name not in self.inits:
            _fail(f"{what} {name!r} must be a constant (an initializer)")
        return np.asarray(self.inits[name], np.float64)

    def _read(self, node: Any, x: str) -> str:
        """Take in ``node`` (which reads ``x``); returns the name of the value the chain continues from."""
        op, args = node.op_type, list(node.input)
        if op in ("Sub", "Div") and not self.layers and args[0] == x:
            value = self.constant(args[1], f"{op}'s operand")
            if op == "Sub" and self.mean is None and self.std is None:
                self.mean = value
            elif op == "Div" and self.std is None:
                self.std = value
            else:
                _fail(f"unexpected {op} before the first layer")
        elif op == "Gemm":
            a = _attrs(node)
            if a.get("transA", 0):
                _fail(f"Gemm {node.name!r}: transA (the observations transposed) is not a DRLA layer")
            w = self.constant(args[1], "Gemm's weight")
            w = w if a.get("transB", 0) else w.T  # the format's layout: (out, in)
            b = self.constant(args[2], "Gemm's bias") if len(args) > 2 and args[2] else np.zeros(w.shape[0])
            w, b = w * float(a.get("alpha", 1.0)), b * float(a.get("beta", 1.0))  # folded into the layer
            self.layers.append((w, b))
            self.acts.append("linear")
        elif op == "MatMul":
            adds = self.consumers.get(node.output[0], [])
            add = adds[0] if len(adds) == 1 else None
            if add is None or add.op_type != "Add":
                _fail("MatMul must be followed by Add (the bias)")
            bias_name = [n for n in add.input if n != node.output[0]][0]
            self.layers.append((self.constant(args[1], "MatMul's weight").T, self.constant(bias_name, "Add's bias")))
            self.acts.append("linear")
            return add.output[0]
        elif op in _OP_ACTS and self.layers and self.acts[-1] == "linear":
            a = _attrs(node)
            if op == "LeakyRelu" and not math.isclose(a.get("alpha", 0.01), 0.01, rel_tol=1e-6):
                _fail(f"LeakyRelu alpha {a.get('alpha')}: the format's leaky_relu has slope 0.01")
            self.acts[-1] = _OP_ACTS[op]
        else:
            _fail(f"node {node.name or op!r} ({op}) is not part of a plain MLP (Gemm/MatMul+Add and "
                  f"{', '.join(_OP_ACTS)})")
        return node.output[0]


def _header(onnx_model: Any) -> dict[str, Any]:
    """The model file's keys other than params/architecture, from the ``drla_model`` metadata (empty if absent)."""
    props = {p.key: p.value for p in onnx_model.metadata_props}
    if "drla_model" not in props:
        return {}
    try:
        header = json.loads(props["drla_model"])
    except ValueError:
        _fail("metadata drla_model is not JSON")
    if not isinstance(header, dict) or not isinstance(header.get("meta", {}), dict):
        _fail("metadata drla_model is not an object with an object meta")
    return header


def from_onnx(onnx_model: Any, kind: str | None = None, action_names: list[str] | None = None) -> Model:
    """A DRLA ``Model`` from an ``onnx.ModelProto`` holding a plain MLP (see the module docstring)."""
    if any(node.op_type in ("Concat", "Gather") for node in onnx_model.graph.node):
        _fail("a graph network (NEAT, as drla export-onnx writes it) is not a plain MLP; use its model .json file")
    chain = _Chain(onnx_model.graph)
    layers, acts = chain.layers, chain.acts
    header = _header(onnx_model)
    n_in, n_out = layers[0][0].shape[1], layers[-1][0].shape[0]
    if action_names:
        if len(action_names) != n_out:
            _fail(f"{len(action_names)} action names for {n_out} outputs")
        header["action_space"] = Discrete(n_out, action_names).to_dict()
        header.setdefault("kind", "dqn")
    header.setdefault("action_space", Box(-np.inf, np.inf, (n_out,)).to_dict())
    header.setdefault("observation_space", Box(-np.inf, np.inf, (n_in,)).to_dict())
    header["kind"] = kind or header.get("kind") or "mlp"
    if chain.mean is not None or chain.std is not None:
        header["obs_norm"] = {"mean": np.broadcast_to(chain.mean if chain.mean is not None else 0.0, (n_in,)).tolist(),
                              "std": np.broadcast_to(chain.std if chain.std is not None else 1.0, (n_in,)).tolist()}
    meta = header.setdefault("meta", {})
    meta.setdefault("drla_version", str(onnx_model.producer_version or "unknown"))
    meta.setdefault("created", "unknown")
    meta.setdefault("imported_from", f"ONNX ({onnx_model.producer_name or 'unknown producer'})")
    hidden = [{"size": int(w.shape[0]), "activation": a} for (w, _), a in zip(layers[:-1], acts[:-1])]
    params = {}
    for i, (w, b) in enumerate(layers):
        params[f"layers.{i}.weight"] = w.astype(np.float32).tolist()
        params[f"layers.{i}.bias"] = b.astype(np.float32).reshape(-1).tolist()
    return model_from_dict({**header, "format": FORMAT, "version": VERSION, "params": params,
                            "architecture": {"input_size": n_in, "hidden": hidden, "output_size": n_out,
                                             "output_activation": acts[-1]}})


def import_onnx(path: str | Path, kind: str | None = None, action_names: list[str] | None = None) -> Model:
    """Read an ONNX file holding a plain MLP as a DRLA ``Model``; raises ``ModelFormatError``."""
    onnx = _onnx()
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_ONNX_BYTES:
        raise ModelFormatError(f"{path.name}: {size} bytes, more than the limit of {MAX_ONNX_BYTES} for an ONNX file")
    try:
        onnx_model = onnx.load_model_from_string(path.read_bytes())
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ModelFormatError(f"{path.name}: not an ONNX file ({type(exc).__name__})") from None
    return from_onnx(onnx_model, kind, action_names)


# ---- the commands (parsed in drla/cli.py) ----------------------------------------------------------------------


def cmd_export_onnx(args: Any) -> int:
    """One model file to one ONNX file; a team file (several agents) to one ONNX file per agent,
    ``<out>_<agent>.onnx``."""
    from drla_core.io.team_model import load_any

    from .common import CLIError, load_model_file

    try:
        loaded = load_any(args.model)
    except (OSError, ValueError):
        loaded = load_model_file(args.model)  # (its one-line message for a missing or broken file)
    out = Path(args.out)
    jobs = ({out.with_name(f"{out.stem}_{name}{out.suffix or '.onnx'}"): m for name, m in loaded.items()}
            if isinstance(loaded, dict) else {out: loaded})
    for target, model in jobs.items():
        try:
            path = export_onnx(model, target)
        except (OnnxMissing, ModelFormatError) as exc:
            raise CLIError(str(exc)) from None
        except OSError as exc:
            raise CLIError(f"cannot write {target}: {exc.strerror or exc}") from None
        names = f", '{ACTION}' (greedy action)"
        print(f"wrote {path}: input '{INPUT}' [batch, {model.network.input_size}] (raw observations), outputs "
              f"'{OUTPUT}' [batch, {model.network.output_size}]{names}; opset {OPSET}")
    return 0


def cmd_import_onnx(args: Any) -> int:
    from drla_core.io.model_io import save_model

    from .common import CLIError

    names = [n.strip() for n in args.actions.split(",")] if args.actions else None
    try:
        model = import_onnx(args.onnx, kind=args.kind, action_names=names)
        path = save_model(args.out, model)
    except FileNotFoundError:
        raise CLIError(f"no such ONNX file: {args.onnx}") from None
    except (OnnxMissing, ModelFormatError) as exc:
        raise CLIError(f"{args.onnx}: {exc}") from None
    except OSError as exc:
        raise CLIError(f"cannot read {args.onnx} or write {args.out}: {exc.strerror or exc}") from None
    arch = model.network.architecture()
    layers = " -> ".join([str(arch["input_size"])] + [f"{h['size']} {h['activation']}" for h in arch["hidden"]]
                         + [f"{arch['output_size']} {arch['output_activation']}"])
    print(f"wrote {path}: DRLA model (kind {model.kind}), network {layers}")
    return 0
