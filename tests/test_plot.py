"""plot and png: the PNG writer round-trips, the report renders for full, partial and empty histories."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from drla_core.io.plot import (
    draw_text,
    moving_average,
    normalise_history,
    render_curve,
    render_report,
    save_report,
    text_width,
)
from drla_core.io.png import read_png, write_png


def full_history(n: int = 200) -> dict:
    rng = np.random.default_rng(0)
    steps = np.cumsum(rng.integers(10, 60, n))
    return {
        "episode_returns": (np.linspace(-1, 1, n) + rng.normal(0, 0.3, n)).tolist(),
        "episode_steps": steps.tolist(),
        "losses": [(int(s), float(np.exp(-s / 3000))) for s in range(50, int(steps[-1]), 25)],
        "epsilons": [(int(s), max(0.05, 1 - s / 5000)) for s in range(0, int(steps[-1]), 100)],
        "evals": [(1000, -0.5, 0.2), (3000, 0.1, None), (6000, 0.8, 0.9)],
        "task_metric_name": "hit",
        "task_metric": [(int(s), int(rng.random() < s / steps[-1])) for s in range(0, int(steps[-1]), 30)],
    }


@pytest.mark.parametrize("shape", [(5, 7, 3), (4, 3, 4), (6, 2), (1, 1, 1), (3, 9, 2)])
def test_png_round_trip(tmp_path: Path, shape: tuple[int, ...]) -> None:
    img = np.random.default_rng(1).integers(0, 256, size=shape, dtype=np.uint8)
    out = read_png(write_png(tmp_path / "a.png", img))
    assert np.array_equal(out, img.reshape(img.shape[0], img.shape[1], -1))


def test_png_file_structure(tmp_path: Path) -> None:
    img = np.zeros((2, 3, 3), dtype=np.uint8)
    data = write_png(tmp_path / "a.png", img).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    assert struct.unpack(">IIBBBBB", data[16:29]) == (3, 2, 8, 2, 0, 0, 0)
    assert struct.unpack(">I", data[29:33])[0] == zlib.crc32(data[12:29]) & 0xFFFFFFFF
    assert data.endswith(b"IEND\xaeB`\x82")


def test_png_float_input_is_scaled(tmp_path: Path) -> None:
    img = np.array([[[0.0, 0.5, 1.0]]], dtype=np.float32)
    assert read_png(write_png(tmp_path / "f.png", img)).tolist() == [[[0, 128, 255]]]


def test_png_rejects_bad_shapes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="expected an"):
        write_png(tmp_path / "bad.png", np.zeros((2, 2, 5), dtype=np.uint8))
    assert not list(tmp_path.iterdir())


def test_read_png_handles_all_filters(tmp_path: Path) -> None:
    # A hand-made PNG using filters 1-4, checked against the image it encodes.
    img = np.random.default_rng(3).integers(0, 256, size=(4, 5, 3)).astype(np.int32)
    rows, prev = [], np.zeros(15, dtype=np.int32)
    for y, kind in enumerate((1, 2, 3, 4)):
        cur = img[y].ravel()
        left = np.concatenate([np.zeros(3, dtype=np.int32), cur[:-3]])
        up_left = np.concatenate([np.zeros(3, dtype=np.int32), prev[:-3]])
        if kind == 1:
            pred = left
        elif kind == 2:
            pred = prev
        elif kind == 3:
            pred = (left + prev) // 2
        else:
            p = left + prev - up_left
            pa, pb, pc = abs(p - left), abs(p - prev), abs(p - up_left)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, up_left))
        rows.append(bytes([kind]) + bytes(((cur - pred) & 0xFF).astype(np.uint8)))
        prev = cur

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 5, 4, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b""))
    (tmp_path / "f.png").write_bytes(data)
    assert np.array_equal(read_png(tmp_path / "f.png"), img.astype(np.uint8))


def test_text_is_drawn_where_asked() -> None:
    img = np.zeros((20, 80, 3), dtype=np.uint8)
    draw_text(img, 2, 3, "Hit 42%", (255, 0, 0), scale=1)
    ys, xs = np.nonzero(img[:, :, 0])
    assert xs.min() >= 2 and xs.max() < 2 + text_width("Hit 42%") and ys.min() >= 3 and ys.max() < 3 + 9
    assert not img[:, :, 1].any()
    small = np.zeros((9, 20, 3), dtype=np.uint8)
    draw_text(small, 0, 0, "abc", (255, 255, 255))
    big = np.zeros((40, 200, 3), dtype=np.uint8)
    draw_text(big, 100, 0, "abc", (255, 255, 255), scale=2, anchor="center")
    assert np.count_nonzero(big[:, :, 0]) == 4 * np.count_nonzero(small[:, :, 0])  # each pixel becomes 2x2
    assert np.nonzero(big[:, :, 0])[1].mean() == pytest.approx(100, abs=2)


def test_moving_average() -> None:
    v = np.arange(6, dtype=float)
    assert np.allclose(moving_average(v, 3), [0, 0.5, 1, 2, 3, 4])
    assert np.allclose(moving_average(v, 3, centered=True), [0.5, 1, 2, 3, 4, 4.5])
    assert np.allclose(moving_average(v, 1), v) and len(moving_average([], 5)) == 0


def test_report_full_history(tmp_path: Path) -> None:
    hist = full_history()
    img = render_report(hist, "TankGrid: DQN")
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3 and img.shape[1] == 1200
    # The series colours are present: returns (blue), loss (red), epsilon (green), hit rate (purple).
    for color in ((31, 99, 196), (200, 50, 50), (30, 150, 90), (120, 70, 180)):
        assert np.any(np.all(img == color, axis=-1)), color
    path = save_report(tmp_path / "report.png", hist, "TankGrid: DQN")
    assert np.array_equal(read_png(path), img)


@pytest.mark.parametrize("history", [
    {},
    {"episode_returns": []},
    {"episode_returns": [1.0]},
    {"episode_returns": [0.0, 0.0, 0.0], "episode_steps": [5, 10, 15]},
    {"losses": [(1, 0.5)], "epsilons": []},
    {"episode_returns": [1, 2, 3], "episode_steps": [1, 2]},  # lengths disagree: plotted by episode
    {"episode_returns": [1.0, float("nan"), 2.0], "losses": [(1, 0.0), (2, 1e-9), (3, 5.0)]},
    {"evals": [(10, None, None)], "task_metric_name": "escaped", "task_metric": []},
    {"task_metric_name": "hit", "evals": [(100, 1.0, 0.5)]},
    {"losses": [(i, 10.0 ** -i) for i in range(12)], "task_metric_name": None, "task_metric": [(1, 1)]},
])
def test_report_tolerates_partial_histories(history: dict) -> None:
    img = render_report(history, "partial")
    assert img.dtype == np.uint8 and img.shape[2] == 3 and img.shape[0] > 100


@pytest.mark.parametrize("width", [400, 800, 1600])
def test_report_widths(width: int) -> None:
    assert render_report(full_history(50), "w", width=width).shape[1] == width


def test_render_curve() -> None:
    curve = render_curve(np.linspace(0, 1, 50), 100, 30, color=(1, 0, 0, 1))
    assert curve.shape == (30, 100, 4) and curve.dtype == np.float32
    assert 0.0 <= curve.min() and curve.max() <= 1.0
    lit = curve[:, :, 3] > 0
    rows = np.nonzero(lit)[0]
    cols = np.nonzero(lit)[1]
    # A rising line: lit low (high row index) on the left, high on the right.
    assert rows[cols < 10].mean() > rows[cols > 90].mean()
    flipped = render_curve(np.linspace(0, 1, 50), 100, 30, color=(1, 0, 0, 1), bottom_up=True)
    assert np.array_equal(flipped, curve[::-1])
    assert not render_curve([], 10, 10)[:, :, 3].any()
    assert render_curve([float("nan"), 1.0, 1.0], 10, 10, smooth=2).shape == (10, 10, 4)


def test_report_accepts_the_training_history_layout() -> None:
    """train.History keeps losses/loss_steps apart, one epsilon per episode and the metric name in task_metric."""
    history = {
        "episode_returns": [-1.0, 0.0, 1.0, 1.0], "episode_lengths": [10, 10, 10, 10],
        "episode_end_steps": [10, 20, 30, 40], "epsilons": [0.9, 0.5, 0.1, 0.1],
        "losses": [0.5, 0.2, 0.1], "loss_steps": [15, 25, 35], "evals": [(20, 0.5, 0.5), (40, 1.0, 1.0)],
        "task_metric": "hit", "episode_metrics": [0.0, None, 1.0, 1.0], "final_eval": None,
    }
    h = normalise_history(history)
    assert h["losses"] == [(15, 0.5), (25, 0.2), (35, 0.1)]
    assert h["epsilons"] == [(10, 0.9), (20, 0.5), (30, 0.1), (40, 0.1)]
    assert h["task_metric_name"] == "hit" and h["task_metric"] == [(10, 0.0), (30, 1.0), (40, 1.0)]
    img = render_report(history, "from train.History")
    for color in ((240, 190, 190), (30, 150, 90), (120, 70, 180)):
        assert np.any(np.all(img == color, axis=-1)), color


def test_report_adds_weight_and_activation_histograms_per_layer():
    from drla_core.nn.mlp import MLP
    from drla_core.io.plot import histogram_panels, render_report

    net = MLP(3, [(8, "relu"), (8, "tanh")], 2, rng=0)
    net.biases[0][:] = 5.0  # every unit of layer 1 fires on inputs in [0, 1] (|weights| < 1.5) ...
    net.weights[0][:, 5] = -10.0  # ... but unit 5, which never does: dead
    net.biases[0][5] = -1.0
    states = np.random.default_rng(0).uniform(0, 1, size=(200, 3)).astype(np.float32)
    weights, acts = histogram_panels(net, states)
    assert [s.label for s in weights.series] == ["layer 1", "layer 2", "layer 3"]
    assert [s.label for s in acts.series] == ["layer 1 (1 dead)", "layer 2"]
    assert all(s.ys.max() == 1.0 for s in weights.series + acts.series)
    plain = render_report({"episode_returns": [1.0, 2.0], "episode_steps": [10, 20]})
    with_net = render_report({"episode_returns": [1.0, 2.0], "episode_steps": [10, 20]}, network=net, states=states)
    assert with_net.shape[0] > plain.shape[0]  # two more panels, one more row
