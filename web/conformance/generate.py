"""Write the conformance set: example model files, their inputs and the outputs Python computes.

    .venv/bin/python web/conformance/generate.py

Each ``<name>.json`` is a model file; ``<name>.cases.json`` holds ``inputs`` (rows of observations), the
numpy ``outputs`` (``Model.predict``, float32 written as exact decimals), ``actions`` for discrete action
spaces, and for IK models with an arm ``targets``, ``angles`` (``IKSolver.solve_refined`` with
``restarts=0, precise=True``: the refinement both runtimes share) and ``tips`` (their FK). ``bad/*.json``
are hostile or malformed files; ``bad/expected.json`` maps each to a piece of the message both readers
give. ``index.json`` lists everything. A runtime conforms when every output is within the tolerance rule of
docs/model-format.md ("Conformance"), every action is equal, every tip is within 1e-6 m and every bad file is
refused. ``cartpole_physics.json`` holds CartPole episodes (start, actions, states) for the demo's JS physics.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from drla_core import kinematics as kin  # noqa: E402
from drla_core.rl.ik import IKSolver  # noqa: E402
from drla_core.nn.graph_net import GraphNetwork  # noqa: E402
from drla_core.nn.mlp import ACTIVATIONS, MLP  # noqa: E402
from drla_core.io.model_io import Model, load_model, model_to_dict  # noqa: E402
from drla_core.base.spaces import Box, Discrete  # noqa: E402

N_CASES = 64
META = {"drla_version": "0.1.0", "created": "2026-01-01T00:00:00Z", "note": "DRLA conformance set"}


def ik_refined(model: Model, targets: np.ndarray) -> np.ndarray:
    """The refinement both runtimes implement: solve_refined without atlas restarts, in float64."""
    return IKSolver.from_model(model).solve_refined(targets, restarts=0, precise=True)


def models() -> dict[str, Model]:
    """One model per kind, architecture and activation the format has."""
    out: dict[str, Model] = {}
    out["dqn_relu"] = Model(MLP(4, [(64, "relu"), (64, "relu")], 2, "linear", rng=1),
                            Box(-np.inf, np.inf, (4,)), Discrete(2, ["left", "right"]), kind="dqn", meta=META)
    out["dqn_obs_norm"] = Model(MLP(6, [(32, "tanh"), (16, "leaky_relu")], 5, "linear", rng=2),
                                Box(-10.0, 10.0, (6,)), Discrete(5, ["n", "e", "s", "w", "fire"]), kind="dqn",
                                obs_norm={"mean": [0.5, -1.0, 2.0, 0.0, 3.0, -0.25],
                                          "std": [1.0, 2.0, 0.5, 4.0, 1.5, 0.1]},
                                meta=META)
    for act in ACTIVATIONS:
        out[f"mlp_{act}"] = Model(MLP(5, [(12, act), (7, act)], 3, act, rng=3),
                                  Box(-2.0, 2.0, (5,)), Box(-1.0, 1.0, (3,)), kind="mlp", meta=META)
    out["mlp_box_2d_obs"] = Model(MLP(6, [(9, "sigmoid")], 2, "tanh", rng=4), Box(-1.0, 1.0, (2, 3)),
                                  Box([-0.5, -0.25], [0.5, 0.25]), kind="mlp", meta=META,
                                  obs_norm={"mean": [0.0] * 6, "std": [0.5] * 6})
    for arm in ("arm3", "arm6"):
        out[f"ik_{arm}"] = load_model(ROOT / "scenes" / "robot_arm" / f"{arm}_ik.json")
    # Graph networks (what NEAT evolves): inputs 0-3, outputs 4-5, hidden 6-8; skip connections, mixed activations
    rng = np.random.default_rng(5)
    conns = [(0, 6), (1, 6), (2, 7), (6, 7), (3, 8), (7, 4), (8, 5), (0, 4), (6, 5), (1, 5), (7, 8)]
    for name, out_act, kind, action_space in (("graph_dqn", "linear", "dqn", Discrete(2, ["a", "b"])),
                                              ("graph_tanh", "tanh", "mlp", Box(-1.0, 1.0, (2,)))):
        net = GraphNetwork(4, 2, out_act, ["tanh", "relu", "sigmoid"], conns, rng.normal(0, 1.2, len(conns)),
                           rng.normal(0, 0.5, 5))
        out[name] = Model(net, Box(-np.inf, np.inf, (4,)), action_space, kind=kind, meta=META)
    return out


def graph_bad_files(good: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Hostile graph networks: a cycle, a node that does not exist."""
    def with_connections(conns: list[list[int]]) -> str:
        d = json.loads(json.dumps(good))
        d["architecture"]["graph"]["connections"] = conns
        d["params"]["graph.weight"] = [0.5] * len(conns)
        return json.dumps(d, separators=(",", ":"))

    conns = good["architecture"]["graph"]["connections"]
    return {
        "graph_cycle": (with_connections([*conns, [8, 6]]), "connections form a cycle"),
        "graph_node_out_of_range": (with_connections([*conns, [0, 99]]), "node id out of range"),
        "graph_into_input": (with_connections([*conns, [6, 1]]), "inputs have no incoming connections"),
    }


def cases(name: str, model: Model) -> dict[str, Any]:
    rng = np.random.default_rng(sum(map(ord, name)))
    shape = (N_CASES, *model.observation_space.shape)
    data: dict[str, Any] = {}
    if model.kind == "ik" and "arm" in model.extra:
        arm = kin.ArmDescription.from_dict(model.extra["arm"])
        targets, _ = arm.sample_targets(N_CASES, rng)
        targets = targets.astype(np.float32).astype(np.float64)  # exact in both runtimes' input paths
        angles = ik_refined(model, targets)
        data.update(targets=targets.tolist(), angles=angles.tolist(),
                    tips=kin.forward_kinematics(arm, angles).tolist())
        inputs = targets.astype(np.float32)
    else:
        inputs = rng.normal(0.0, 1.5, size=shape).astype(np.float32)
    y = model.predict(inputs)
    data = {"inputs": inputs.reshape(N_CASES, -1).astype(np.float64).tolist(),
            "outputs": y.astype(np.float64).tolist(), **data}
    if isinstance(model.action_space, Discrete):
        data["actions"] = [int(a) for a in model.act(inputs)]
    return data


def bad_files(good: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """name -> (file text, a piece of the message both readers give)."""
    text = json.dumps(good, separators=(",", ":"))
    bias = '"layers.0.bias":['
    arch = good["architecture"]

    def with_(path: str, value: Any) -> str:
        d = json.loads(text)
        node = d
        keys = path.split("/")
        for k in keys[:-1]:
            node = node[int(k) if isinstance(node, list) else k]
        node[int(keys[-1]) if isinstance(node, list) else keys[-1]] = value
        return json.dumps(d, separators=(",", ":"))

    return {
        "not_json": ("this is not json", "not a JSON model file"),
        "array": ("[1, 2, 3]", "a model must be a JSON object, got an array"),
        "wrong_format": (with_("format", "onnx"), "expected 'drla-model'"),
        "newer_version": (with_("version", 2), "unsupported model format version 2"),
        "unknown_key": (with_("pickle", "x"), "model: unknown key 'pickle'"),
        "unknown_kind": (with_("kind", "ppo"), "kind: unknown kind 'ppo'"),
        "unknown_activation": (with_("architecture/hidden/0/activation", "gelu"),
                               "architecture.hidden[0].activation: unknown activation 'gelu'"),
        "size_string": (with_("architecture/input_size", "4"), "architecture.input_size must be an integer"),
        "weight_shape": (with_("architecture/hidden/0/size", arch["hidden"][0]["size"] + 1),
                         "params.layers.0.weight: shape mismatch"),
        "weight_string": (with_("params/layers.1.bias/0", "0.5"), "every value must be a number, found a string"),
        "weight_null": (with_("params/layers.1.bias/0", None), "every value must be a number, found null"),
        "float32_overflow": (with_("params/layers.1.bias/0", 1e38 * 9), "values must be finite float32"),
        "nan": (text.replace(bias, bias + "NaN,", 1), "NaN is not allowed in a model file"),
        "infinity": (text.replace(bias, bias + "-Infinity,", 1), "-Infinity is not allowed in a model file"),
        "huge_number": (text.replace(bias, bias + "1e999,", 1), "is too large"),
        "huge_integer": (text.replace(bias, bias + "1" * 400 + ",", 1), "too large"),
        "obs_norm_zero_std": (with_("obs_norm", {"mean": [0.0] * 4, "std": [1.0, 0.0, 1.0, 1.0]}),
                              "obs_norm.std: every value must be positive"),
        "deep_extra": (with_("extra", {"deep": json.loads("[" * 40 + "]" * 40)}), "nested deeper than 32 levels"),
        "deep_json": ("[" * 5000 + "]" * 5000, "nested too deeply"),
        "long_string": (with_("meta/note", "x" * 65537), "a string of 65537 characters"),
        "too_many_params": (with_("architecture/hidden", [{"size": 100_000, "activation": "relu"}] * 3),
                            "more than the limit of 4000000"),
        "action_space_size": (with_("action_space", {"type": "discrete", "n": 3, "names": ["a", "b", "c"]}),
                              "action_space has 3 values but architecture.output_size is 2"),
    }


def cartpole_trajectories(episodes: int = 3, seed: int = 0) -> list[dict[str, Any]]:
    """CartPole episodes under random actions: the start state, the actions and every state after a step
    (float64), for checking web/demos/cartpole.js's physics against drla_core/envs/cartpole.py."""
    from drla_core.envs.cartpole import CartPole

    env, rng, out = CartPole(), np.random.default_rng(seed), []
    for e in range(episodes):
        env.reset(seed=seed + e)
        start, actions, states, done = list(env.state), [], [], []
        while True:
            a = int(rng.integers(2))
            _, _, terminated, truncated, _ = env.step(a)
            actions.append(a)
            states.append(list(env.state))
            done.append(bool(terminated or truncated))
            if terminated or truncated:
                break
        out.append({"start": start, "actions": actions, "states": states, "done": done})
    return out


def main() -> None:
    for path in list(HERE.glob("*.json")):
        path.unlink()
    shutil.rmtree(HERE / "bad", ignore_errors=True)
    (HERE / "bad").mkdir()
    index: dict[str, Any] = {"models": [], "bad": []}
    all_models = models()
    for name, model in all_models.items():
        d = model_to_dict(model)
        (HERE / f"{name}.json").write_text(json.dumps(d, separators=(",", ":")) + "\n")
        (HERE / f"{name}.cases.json").write_text(json.dumps(cases(name, model), separators=(",", ":")) + "\n")
        index["models"].append({"name": name, "kind": model.kind, "solve": model.kind == "ik" and "arm" in model.extra})
    expected = {}
    hostile = {**bad_files(model_to_dict(all_models["dqn_relu"])),
               **graph_bad_files(model_to_dict(all_models["graph_dqn"]))}
    for name, (text, message) in hostile.items():
        (HERE / "bad" / f"{name}.json").write_text(text)
        expected[name] = message
        index["bad"].append(name)
    (HERE / "bad" / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    (HERE / "cartpole_physics.json").write_text(json.dumps(cartpole_trajectories()) + "\n")
    (HERE / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    print(f"wrote {len(index['models'])} models and {len(index['bad'])} bad files to {HERE}")


if __name__ == "__main__":
    main()
