"""While a demonstration is recorded by keyboard (issue 26) the keys are where the person looks: the legend drawn
over the 3D viewport (rendered headless into an offscreen buffer here; tests/gui sees it in the real window), the
status bar's line, and the top of the sidebar's main panel. The recorder is driven by key names, as the modal
operator feeds it (real window events cannot be made headless)."""

from types import SimpleNamespace
from unittest.mock import MagicMock

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from test_demos_record import reach  # noqa: E402


@pytest.fixture
def recording(empty_scene, tmp_path):
    from drla_ext.addon.runs import demos_record

    tree, _ = reach(empty_scene)
    rec = demos_record.KeyboardRecorder(empty_scene, tree, str(tmp_path / "reach.blend")).start()
    yield rec
    rec.stop(save=False)


def render_legend(rec, width=420, height=300):
    """The legend drawn with its top left corner at (10, height - 10) of an offscreen buffer: RGBA, top row first."""
    import gpu
    from mathutils import Matrix

    from drla_ext.addon.scene.camera_pixels import ensure_gpu_context
    from drla_ext.addon.ui import demo_operators

    ensure_gpu_context()
    off = gpu.types.GPUOffScreen(width, height)
    try:
        with off.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=(0.0, 0.0, 0.0, 0.0))
            with gpu.matrix.push_pop():
                gpu.matrix.load_identity()
                proj = np.eye(4)
                proj[0, 0], proj[1, 1], proj[0, 3], proj[1, 3] = 2.0 / width, 2.0 / height, -1.0, -1.0
                gpu.matrix.load_projection_matrix(Matrix(proj.tolist()))
                size = demo_operators.draw_legend(rec, 10, height - 10, 1.0)
            pixels = np.array(fb.read_color(0, 0, width, height, 4, 0, 'FLOAT').to_list(), dtype=np.float32)
    finally:
        off.free()
    return pixels.reshape(height, width, 4)[::-1], size


def test_the_viewport_legend_lists_every_key_and_lights_the_last_one(recording):
    from drla_ext.addon.ui import demo_operators

    rec = recording
    assert [(k, name) for k, name, _ in demo_operators.legend_rows(rec)] == [
        ("1", "right"), ("2", "left"), ("3", "front"), ("4", "back"), ("5", "wait"), ("Space", "wait"),
        ("Esc", "stop and save")]
    assert not any(lit for _, _, lit in demo_operators.legend_rows(rec))
    rec.press("ONE")
    rec.press("THREE")
    assert [k for k, _, lit in demo_operators.legend_rows(rec) if lit] == ["3"]
    rec.press("SPACE")
    assert [k for k, _, lit in demo_operators.legend_rows(rec) if lit] == ["Space"]

    img, (w, h) = render_legend(rec)
    rows = len(demo_operators.legend_rows(rec))
    assert h == pytest.approx((rows + 2) * 20 + 20) and 150 < w < 400  # title, progress, 7 keys
    box = img[10:10 + int(h), 10:10 + int(w)]
    assert np.all(box[..., 3] > 0.5) and img[5, 5, 3] == 0 and img[12 + int(h), 12 + int(w), 3] == 0
    red = (box[..., 0] > 0.6) & (box[..., 1] < 0.35) & (box[..., 2] < 0.35)
    lit_row = 10 + (1 + 6 + 1) * 20  # the Space row (the 6th key) below the title and the progress lines
    assert red[:20].sum() > 50  # the record light
    assert red[lit_row - 12:lit_row + 14].sum() > 150  # the lit Space key
    assert red[lit_row - 12 - 5 * 20:lit_row + 14 - 5 * 20].sum() == 0  # the key "1" is not lit
    bright = box[..., :3].min(axis=2) > 0.55  # text, row by row: every row of the legend has some
    for k in range(rows + 2):
        assert bright[10 + 20 * k:10 + 20 * (k + 1)].sum() > 20, k


def test_the_status_bar_and_the_main_panel_show_the_keys(recording):
    from drla_ext.addon.ui import demo_operators, panels

    rec = recording
    assert rec.keys_line() == ("1: right   2: left   3: front   4: back   5: wait   Space: wait   "
                               "Esc: stop and save")
    rec.press("ONE")
    assert rec.progress_line() == "1 step \u00b7 0 episodes done \u00b7 return " + f"{rec.episode_return:.3g}"
    layout = MagicMock()
    panels.DRLA_PT_view3d.draw(SimpleNamespace(layout=layout), bpy.context)
    names = [c[0].split(".")[-1] for c in layout.mock_calls]
    texts = [c.kwargs.get("text", "") for c in layout.mock_calls if c[0].split(".")[-1] in ("label", "operator")
             or (c.args and c.args[0] in ("drla.train",))]
    keys = [f"{key}   {name}" for key, name in rec.labels]
    assert all(k in texts for k in keys) and "Esc   stop and save" in texts
    # the keys come before the Train button: seen at the top of the sidebar without scrolling
    order = [c.kwargs.get("text") for c in layout.mock_calls if c[0].split(".")[-1] in ("label", "operator")]
    assert order.index(keys[-1]) < order.index("Train") and "operator" in names
    model = MagicMock()
    demo_operators.draw_demonstrations(model, bpy.context)
    assert not [c for c in model.mock_calls if c[0].endswith("operator")]  # no second Record while recording


def test_the_legend_handler_comes_and_goes_with_the_recording(empty_scene, tmp_path):
    from drla_ext.addon.runs import demos_record
    from drla_ext.addon.ui import demo_operators

    tree, _ = reach(empty_scene)
    assert not demo_operators.legend_shown()
    rec = demos_record.KeyboardRecorder(empty_scene, tree, str(tmp_path / "r.blend")).start()
    demo_operators.show_legend(True)
    assert demo_operators.legend_shown()
    demo_operators.show_legend(False)  # a recording still runs: the legend stays
    assert demo_operators.legend_shown()
    rec.stop(save=False)
    demo_operators.show_legend(False)
    assert not demo_operators.legend_shown()
    # saving the file stops a recording (its steps saved) and takes the legend away with it
    rec = demos_record.KeyboardRecorder(empty_scene, tree, str(tmp_path / "r.blend")).start()
    demo_operators.show_legend(True)
    rec.press("ONE")
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "r.blend"))
    assert demos_record.active(empty_scene) is None and not demo_operators.legend_shown()
    assert (tmp_path / "r_Reach_keyboard.npz").is_file()
