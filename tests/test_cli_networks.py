"""``drla merge``: averages relatives, distils others, refuses what cannot be merged with one error line."""

import json
import shutil

import pytest

from drla.cli import main
from drla_core.io.model_io import load_model

TRAIN = ["--quiet", "--learning-starts", "100", "--train-freq", "4", "--gradient-steps", "1", "--eval-interval", "0",
         "--hidden", "16"]


def _train(path, seed, *extra):
    assert main(["train", "identity", "--steps", "400", "--seed", str(seed), "--out", str(path), *TRAIN, *extra]) == 0


def test_merge_averages_relatives_and_distils_strangers(tmp_path, capsys):
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    _train(a, 1)
    _train(b, 1, "--learning-rate", "3e-3")  # same initial weights, other training
    _train(c, 2)
    capsys.readouterr()
    assert main(["merge", str(a), str(b), "--out", str(tmp_path / "ab.json")]) == 0
    assert "averaged 2 networks" in capsys.readouterr().out
    merged = load_model(tmp_path / "ab.json")
    pa, pb = load_model(a).network.params, load_model(b).network.params
    assert abs(merged.network.params - (pa + pb) / 2).max() < 1e-6
    assert main(["merge", str(a), str(c), "--out", str(tmp_path / "ac.json"), "--states", "500", "--epochs", "5"]) == 0
    out = capsys.readouterr().out
    assert "not averaging:" in out and "do not share an ancestor" in out and "distilled:" in out
    assert load_model(tmp_path / "ac.json").meta["merge"]["method"] == "distill"
    assert main(["eval", str(tmp_path / "ac.json"), "--episodes", "2"]) == 0  # the env name came along


def test_merge_refusals_are_one_error_line(tmp_path, capsys):
    a, c = tmp_path / "a.json", tmp_path / "c.json"
    _train(a, 1)
    _train(c, 2)
    capsys.readouterr()
    assert main(["merge", str(a), str(c), "--method", "average", "--out", str(tmp_path / "m.json")]) == 2
    assert "error:" in capsys.readouterr().err
    assert main(["merge", str(a), str(c), "--method", "distill", "--envs", "cartpole", "identity",
                 "--out", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert "does not fit environment 'cartpole'" in err
    assert main(["merge", str(a), str(c), "--method", "distill", "--envs", "identity",
                 "--out", str(tmp_path / "m.json")]) == 2
    assert "give one environment per model (2), got 1" in capsys.readouterr().err


def test_experts_add_list_remove_and_combine(tmp_path, capsys):
    from drla.experts import ExpertLibrary, LibraryError
    from drla_core.nets.experts import ExpertError

    a, c = tmp_path / "a.json", tmp_path / "c.json"
    _train(a, 1)
    _train(c, 2)
    lib = tmp_path / "lib"
    capsys.readouterr()
    assert main(["experts", "--library", str(lib), "add", str(a), "--name", "light_a", "--score", "80"]) == 0
    assert main(["experts", "--library", str(lib), "add", str(c), "--scene", "lights.blend"]) == 0
    assert main(["experts", "--library", str(lib), "add", str(c)]) == 2
    assert "an expert named 'c' is already in" in capsys.readouterr().err
    assert main(["experts", "--library", str(lib), "list"]) == 0
    out = capsys.readouterr().out
    assert "light_a" in out and "identity" in out and "4 inputs -> 4 actions" in out and "score 80" in out
    assert "from lights.blend" in out
    # the folder is shareable: copied elsewhere, it still works
    moved = tmp_path / "moved"
    shutil.copytree(lib, moved)
    shared = ExpertLibrary(moved)
    switch = shared.combine(["light_a", "c"], rule=lambda obs: int(obs.argmax() >= 2))
    assert switch.act(load_model(a).observation_space.sample(__import__("numpy").random.default_rng(0))) in range(4)
    assert main(["experts", "--library", str(lib), "remove", "c"]) == 0
    assert not (lib / "c.json").exists() and [e["name"] for e in ExpertLibrary(lib).entries()] == ["light_a"]
    assert main(["experts", "--library", str(lib), "remove", "c"]) == 2
    assert "no expert named 'c'" in capsys.readouterr().err
    # combining experts with other spaces is refused
    assert main(["train", "cartpole", "--steps", "300", "--out", str(tmp_path / "cp.json"), *TRAIN]) == 0
    ExpertLibrary(lib).add(tmp_path / "cp.json", name="pole")
    with pytest.raises(ExpertError, match=r"pole acts in Discrete\(2\), light_a in Discrete\(4"):
        ExpertLibrary(lib).combine(["light_a", "pole"], rule=lambda obs: 0)
    (lib / "index.json").write_text('{"format": "drla-experts", "version": 1, "experts": [{"name": "x", "file": '
                                    '"../../etc/passwd"}]}')
    with pytest.raises(LibraryError, match="names no model file inside the folder"):
        ExpertLibrary(lib).entries()


def _tensorboard_events(folder):
    """The (tag, step, value) scalars and the histogram tags of every event file in ``folder`` (TFRecord framing)."""
    import struct

    from tensorboardX.proto import event_pb2

    scalars, histograms = [], set()
    for path in sorted(folder.iterdir()):
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4
            for v in event.summary.value:
                if v.HasField("histo"):
                    histograms.add(v.tag)
                else:
                    scalars.append((v.tag, event.step, v.simple_value))
    return scalars, histograms


def test_train_writes_metrics_as_json_lines_and_tensorboard_events_and_grows(tmp_path, capsys):
    pytest.importorskip("tensorboardX")
    metrics, tb = tmp_path / "m.jsonl", tmp_path / "tb"
    assert main(["train", "identity", "--steps", "600", "--seed", "1", "--out", str(tmp_path / "g.json"), "--quiet",
                 "--learning-starts", "100", "--train-freq", "4", "--gradient-steps", "1", "--hidden", "4",
                 "--eval-interval", "100", "--eval-episodes", "1", "--grow", "1", "--metrics", str(metrics),
                 "--tensorboard", str(tb)]) == 0
    lines = [json.loads(line) for line in metrics.read_text().splitlines()]
    events = {line["event"] for line in lines}
    assert events == {"start", "episode", "train", "eval", "growth", "end"}
    assert lines[0] == {"event": "start", "step": 0, "total_steps": 600} and lines[-1]["event"] == "end"
    evals = [line for line in lines if line["event"] == "eval"]
    assert [e["step"] for e in evals] == list(range(100, 601, 100))
    growth = [line for line in lines if line["event"] == "growth"]
    assert growth[0]["op"] == "widen" and growth[0]["to"] == 16
    assert load_model(tmp_path / "g.json").meta["growth"][0]["to"] == 16
    scalars, histograms = _tensorboard_events(tb)
    tags = {tag for tag, _, _ in scalars}
    assert {"episode/return", "train/loss", "eval/mean_return"} <= tags
    tb_evals = [(step, value) for tag, step, value in scalars if tag == "eval/mean_return"]
    assert tb_evals == [(e["step"], pytest.approx(e["mean_return"])) for e in evals]
    assert "weights/layer0" in histograms


def test_show_and_inspect_draw_a_neat_graph_network(tmp_path, capsys):
    """A NEAT network (a graph, not layers): columns by level (inputs, hidden levels, outputs last), one line per
    connection between its two units' points, unit colours from the first observation's values."""
    import numpy as np

    from drla_core.nn.graph_net import GraphNetwork
    from drla_core.io.model_io import Model, save_model
    from drla_core.nets.netview import network_drawing
    from drla_core.base.spaces import Box, Discrete

    conns = [(0, 5), (1, 5), (1, 6), (2, 6), (5, 7), (6, 7), (7, 3), (0, 3), (6, 4), (2, 4)]
    net = GraphNetwork(3, 2, "tanh", ["relu", "sigmoid", "leaky_relu"], conns, np.linspace(-2, 2, len(conns)),
                       np.zeros(5))
    d = network_drawing(net, max_lines=4)
    assert d.layer_sizes == [3, 2, 1, 2] and d.total == [10] and d.shown == [4]
    columns = {float(x) for x in d.points[:, 0]}
    assert columns == {0.0, 1.0, 2.0, 3.0}
    # the 4 strongest (|w| = 2, 2, 1.56, 1.56): (0,5) w=-2 and (2,4) w=+2 among them, each a segment between points
    ends = {tuple(map(tuple, d.lines[k:k + 2])) for k in range(0, len(d.lines), 2)}
    point = {node: tuple(p) for node, p in zip([0, 1, 2, 5, 6, 7, 3, 4], d.points)}
    assert (point[0], point[5]) in ends and (point[2], point[4]) in ends
    lit = network_drawing(net, obs=np.array([1.0, -1.0, 0.5], np.float32))
    assert not np.allclose(lit.point_colors, d.point_colors)

    model = Model(net, Box(-np.inf, np.inf, (3,)), Discrete(2), kind="mlp", meta={"agent": "neat"})
    save_model(tmp_path / "neat.json", model)
    assert main(["show", str(tmp_path / "neat.json"), "--out", str(tmp_path / "neat.png")]) == 0
    assert "wrote" in capsys.readouterr().out and (tmp_path / "neat.png").stat().st_size > 1000
    assert main(["inspect", str(tmp_path / "neat.json")]) == 0
    assert "graph: 3 inputs -> 3 hidden nodes, 10 connections -> 2 tanh outputs" in capsys.readouterr().out
