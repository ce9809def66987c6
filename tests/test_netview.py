"""The network drawing: positions and colours as data, strongest connections only, a headless PNG."""

import numpy as np

from drla.cli import main
from drla_core.nn.mlp import MLP
from drla_core.nets.netview import COLD, INFRARED, network_drawing, palette, render_png_array
from drla_core.io.png import read_png


def test_palette_runs_black_red_orange_yellow_white():
    stops = palette(np.linspace(0, 1, 5))
    np.testing.assert_allclose(stops[:, :3], INFRARED)
    assert palette([2.0])[0, :3].tolist() == [1, 1, 1] and palette([-1.0])[0, :3].tolist() == [0, 0, 0]


def test_drawing_keeps_the_strongest_connections_coloured_by_weight():
    net = MLP(3, [(256, "relu"), (256, "relu")], 2, rng=0)
    net.weights[1][7, 9] = 50.0  # the strongest connection of the middle layer pair
    net.weights[1][8, 9] = -50.0  # as strong, negative
    d = network_drawing(net, max_lines=100)
    assert d.layer_sizes == [3, 256, 256, 2] and d.shown == [100 if n > 100 else n for n in d.total]
    assert d.total == [768, 65536, 512] and len(d.points) == 3 + 256 + 256 + 2
    assert d.lines.shape == (2 * sum(d.shown), 3) and d.line_colors.shape == (2 * sum(d.shown), 4)
    first, second = 2 * d.shown[0], 2 * (d.shown[0] + d.shown[1])
    middle, colours = d.lines[first:second], d.line_colors[first:second]
    # the strongest two are last (drawn on top), white-hot: positive in the infrared palette, negative in the cold one
    ends = {(tuple(middle[k]), tuple(middle[k + 1])): colours[k] for k in range(len(middle) - 4, len(middle), 2)}
    pos = d.points[3 + 7], d.points[3 + 256 + 9]
    neg = d.points[3 + 8], d.points[3 + 256 + 9]
    np.testing.assert_allclose(ends[(tuple(pos[0]), tuple(pos[1]))][:3], INFRARED[-1])
    np.testing.assert_allclose(ends[(tuple(neg[0]), tuple(neg[1]))][:3], COLD[-1])
    # layers are columns: every unit of a layer at the same x, one x per layer
    xs = [np.unique(d.points[a:a + n, 0]) for a, n in zip(np.cumsum([0] + d.layer_sizes[:-1]), d.layer_sizes)]
    assert [len(x) for x in xs] == [1, 1, 1, 1] and sorted(float(x[0]) for x in xs) == [0, 1, 2, 3]


def test_activations_colour_the_units():
    net = MLP(2, [(4, "relu")], 1, rng=0)
    grey = network_drawing(net)
    lit = network_drawing(net, obs=np.array([1.0, -1.0], np.float32))
    assert np.all(grey.point_colors[:, 0] == grey.point_colors[0, 0])
    assert not np.allclose(lit.point_colors, grey.point_colors)


def test_render_png_and_drla_show(tmp_path, capsys):
    net = MLP(4, [(16, "relu"), (16, "relu")], 2, rng=0)
    img = render_png_array(network_drawing(net), 320, 200)
    assert img.shape == (200, 320, 3) and (img.sum(axis=2) > 100).mean() > 0.02  # something drawn
    model = tmp_path / "m.json"
    assert main(["train", "cartpole", "--steps", "300", "--out", str(model), "--quiet", "--eval-interval", "0",
                 "--hidden", "8,8"]) == 0
    capsys.readouterr()
    assert main(["show", str(model), "--out", str(tmp_path / "net.png"), "--width", "300", "--height", "200"]) == 0
    assert "4 -> 8 -> 8 -> 2, 112 of 112 connections drawn, activations for cartpole's first observation" in (
        capsys.readouterr().out)
    picture = read_png(tmp_path / "net.png")
    assert picture.shape[:2] == (200, 300) and picture.reshape(-1, picture.shape[-1])[:, :3].max() > 200


def test_strongest_is_the_stable_argsort_tail():
    from drla_core.nets.netview import strongest

    rng = np.random.default_rng(0)
    for trial in range(400):
        n, k = int(rng.integers(1, 5000)), int(rng.integers(1, 400))
        ties = rng.integers(0, int(rng.integers(1, 12)), n).astype(np.float32)  # many equal values
        values = ties if trial % 2 else rng.random(n).astype(np.float32)
        np.testing.assert_array_equal(strongest(values, k), np.argsort(values, kind="stable")[-k:])
