"""The sidebar's draw() with stand-in layouts: the right operators and states (idle, training,
stopped, playing, trained, error), the greyed-out reasons, and the live learning curve."""

from types import SimpleNamespace
from unittest.mock import MagicMock, patch

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")


def operators(layout) -> list[str]:
    """Operator idnames drawn anywhere in a MagicMock layout (nested rows/columns included)."""
    return [c.args[0] for c in layout.mock_calls if c[0].split(".")[-1] == "operator"]


def calls(layout, name: str) -> list:
    return [c for c in layout.mock_calls if c[0].split(".")[-1] == name]


def labels(layout) -> list[str]:
    return [c.kwargs.get("text", "") for c in calls(layout, "label")]


def draw(panel_cls, context=None):
    layout = MagicMock()
    panel_cls.draw(SimpleNamespace(layout=layout), context or bpy.context)
    return layout


@pytest.fixture
def ui(ext):
    from drla_ext.addon.ui import live_curve
    from drla_ext.addon.runs import model_store
    from drla_ext.addon.ui import panels
    from drla_ext.addon.runs import sessions as session

    return SimpleNamespace(panels=panels, session=session, model_store=model_store, live_curve=live_curve)


@pytest.fixture
def tree(empty_scene):
    tree = bpy.data.node_groups.new("Brain", "DRLA_NodeTree")
    tree.use_fake_user = True
    return tree


def fake_session(ui, scene, tree, kind="TRAIN", state="RUNNING"):
    s = SimpleNamespace(kind=kind, state=state, tree_name=tree.name, close=lambda: None)
    ui.session._sessions[scene.session_uid] = s
    return s


@pytest.fixture(autouse=True)
def _no_sessions_left(ext):
    yield
    from drla_ext.addon.runs import sessions

    sessions._sessions.clear()


def store_some_model(tree):
    from drla_ext.addon.runs import model_store
    from drla_ext.drla_core.base import spaces
    from drla_ext.drla_core.io import model_io
    from drla_ext.drla_core.nn import mlp

    model = model_io.Model(mlp.MLP(2, [(4, "relu")], 2, rng=0), spaces.Box(-1, 1, (2,)), spaces.Discrete(2))
    model_store.store_model(tree, model)


def test_panels_registered_in_both_sidebars(ui):
    for cls in ui.panels.classes:
        assert cls.is_registered and cls.bl_category == "DRLA" and cls.bl_region_type == 'UI'
    spaces = {cls.bl_space_type for cls in ui.panels.classes}
    assert spaces == {'VIEW_3D', 'NODE_EDITOR'}
    node_main = ui.panels.DRLA_PT_node
    assert node_main.poll(SimpleNamespace(scene=bpy.context.scene,
                                          space_data=SimpleNamespace(tree_type="DRLA_NodeTree")))
    assert not node_main.poll(SimpleNamespace(scene=bpy.context.scene,
                                              space_data=SimpleNamespace(tree_type="ShaderNodeTree")))


def test_no_tree_state(ui, empty_scene):
    layout = draw(ui.panels.DRLA_PT_view3d)
    assert ui.session.ui_state(empty_scene) == "NO_TREE"
    assert operators(layout) == []
    assert any("Examples" in t for t in labels(layout))
    assert calls(layout, "prop")[0].args[1] == "tree"


def test_idle_state_offers_train_and_greys_the_rest(ui, tree, empty_scene):
    empty_scene.drla.tree = tree
    assert ui.session.ui_state(empty_scene) == "IDLE"
    main = draw(ui.panels.DRLA_PT_view3d)
    assert operators(main) == ["drla.train", "drla.resume"]
    assert calls(main, "progress") == []
    model = draw(ui.panels.DRLA_PT_view3d_model)
    assert operators(model) == ["drla.play", "drla.export_model", "drla.import_model", "drla.bake",
                               "drla.record_demonstration", "drla.record_keyframes"]
    # the buttons that can't act are greyed out by poll, with the reason as tooltip
    assert bpy.ops.drla.train.poll() and bpy.ops.drla.import_model.poll()
    assert not bpy.ops.drla.resume.poll() and not bpy.ops.drla.play.poll() and not bpy.ops.drla.bake.poll()
    assert not bpy.ops.drla.export_model.poll() and not bpy.ops.drla.stop.poll()
    from drla_ext.addon.ui import operators as ops

    for cls, words in ((ops.DRLA_OT_play, "No trained model"), (ops.DRLA_OT_resume, "No stopped run"),
                       (ops.DRLA_OT_stop, "Nothing is running")):
        with patch.object(cls, "poll_message_set") as message:
            assert not cls.poll(bpy.context)
        assert words in message.call_args.args[0]


def test_no_tree_reason_on_train(ui, empty_scene):
    from drla_ext.addon.ui import operators as ops

    with patch.object(ops.DRLA_OT_train, "poll_message_set") as message:
        assert not ops.DRLA_OT_train.poll(bpy.context)
    assert "Pick an RL tree" in message.call_args.args[0]


def test_training_state_shows_progress_and_stop(ui, tree, empty_scene):
    s = empty_scene.drla
    s.tree = tree
    s.steps_done, s.steps_total, s.progress, s.status = 500, 2000, 0.25, "Episodes\t7\nEpsilon\t0.60"
    fake_session(ui, empty_scene, tree)
    assert ui.session.ui_state(empty_scene) == "TRAINING"
    main = draw(ui.panels.DRLA_PT_view3d)
    assert operators(main) == ["drla.stop"]
    (progress,) = calls(main, "progress")
    assert progress.kwargs["factor"] == pytest.approx(0.25) and progress.kwargs["type"] == 'BAR'
    assert progress.kwargs["text"] == "500 / 2000 steps"
    assert "Episodes 7" in labels(main) and "Epsilon 0.60" in labels(main)
    # nothing else can start while training; the reason says so
    assert not bpy.ops.drla.train.poll() and not bpy.ops.drla.import_model.poll()
    assert bpy.ops.drla.stop.poll()
    from drla_ext.addon.ui import operators as ops

    with patch.object(ops.DRLA_OT_train, "poll_message_set") as message:
        ops.DRLA_OT_train.poll(bpy.context)
    assert "Training is running" in message.call_args.args[0]


def test_stopped_state_offers_resume(ui, tree, empty_scene):
    empty_scene.drla.tree = tree
    fake_session(ui, empty_scene, tree, state="STOPPED")
    store_some_model(tree)
    assert ui.session.ui_state(empty_scene) == "STOPPED"
    main = draw(ui.panels.DRLA_PT_view3d)
    assert operators(main) == ["drla.train", "drla.resume"]
    assert "(stopped)" in calls(main, "progress")[0].kwargs["text"]
    assert bpy.ops.drla.resume.poll() and bpy.ops.drla.play.poll()


def test_trained_state(ui, tree, empty_scene):
    empty_scene.drla.tree = tree
    empty_scene.drla.message = "Trained 100 steps"
    store_some_model(tree)
    assert ui.session.ui_state(empty_scene) == "TRAINED"
    main = draw(ui.panels.DRLA_PT_view3d)
    train_call = [c for c in calls(main, "operator") if c.args[0] == "drla.train"][0]
    assert train_call.kwargs["text"] == "Train Again"
    assert "Trained 100 steps" in labels(main)
    model = draw(ui.panels.DRLA_PT_view3d_model)
    assert operators(model) == ["drla.play", "drla.export_model", "drla.import_model", "drla.bake",
                               "drla.record_demonstration", "drla.record_keyframes"]
    assert "DRLA model: Brain" in labels(model)
    assert bpy.ops.drla.play.poll() and bpy.ops.drla.bake.poll() and bpy.ops.drla.export_model.poll()


def test_playing_state(ui, tree, empty_scene):
    empty_scene.drla.tree = tree
    store_some_model(tree)
    fake_session(ui, empty_scene, tree, kind="PLAY")
    assert ui.session.ui_state(empty_scene) == "PLAYING"
    assert operators(draw(ui.panels.DRLA_PT_view3d)) == ["drla.stop"]
    model = draw(ui.panels.DRLA_PT_view3d_model)
    assert operators(model)[0] == "drla.stop"
    assert not bpy.ops.drla.bake.poll() and not bpy.ops.drla.play.poll()


def test_error_state_shows_the_message_and_dismiss(ui, tree, empty_scene):
    empty_scene.drla.tree = tree
    empty_scene.drla.error = "Environment: no Action node is linked to the Actions input of this environment"
    main = draw(ui.panels.DRLA_PT_view3d)
    assert "drla.clear_error" in operators(main)
    text = " ".join(labels(main))
    assert "no Action node is linked" in text.replace("  ", " ")
    bpy.ops.drla.clear_error()
    assert empty_scene.drla.error == ""
    assert "drla.clear_error" not in operators(draw(ui.panels.DRLA_PT_view3d))


def test_node_editor_panels_draw_the_same(ui, tree, empty_scene):
    empty_scene.drla.tree = tree
    assert operators(draw(ui.panels.DRLA_PT_node)) == operators(draw(ui.panels.DRLA_PT_view3d))
    assert operators(draw(ui.panels.DRLA_PT_node_model)) == operators(draw(ui.panels.DRLA_PT_view3d_model))


# --------------------------------------------------------------------------- live curve
def test_curve_rasteriser_draws_the_line():
    from drla_ext.addon.ui import live_curve

    values = np.linspace(0.0, 1.0, 50)
    img = live_curve.rasterise(values, None, width=100, height=40, colour=(1, 0, 0, 1))
    assert img.shape == (40, 100, 4) and img.dtype == np.float32
    red = np.argwhere(np.all(img == (1, 0, 0, 1), axis=-1))
    assert len(red) >= 100
    # rising values: the line starts low (bottom rows) on the left and ends high on the right
    left, right = red[red[:, 1] == 0][:, 0].mean(), red[red[:, 1] == 99][:, 0].mean()
    assert left > 30 and right < 10
    # many points are binned into columns with a min..max band
    noisy = np.random.default_rng(0).normal(size=5000)
    assert live_curve.rasterise(noisy).shape == (live_curve.HEIGHT, live_curve.WIDTH, 4)
    assert live_curve.rasterise(np.array([])).shape == (live_curve.HEIGHT, live_curve.WIDTH, 4)


def test_curve_update_is_throttled_and_follows_the_metric(ext):
    from drla_ext.addon.ui import live_curve

    history = {"episode_returns": [0.0, 1.0, 3.0], "losses": [1.0, 0.5], "epsilons": [1.0, 0.5, 0.1],
               "episode_metrics": [0.0, 0.5, None]}
    assert live_curve.update("k", history, 'RETURN', now=100.0)
    first = live_curve.pixels("k").copy()
    history["episode_returns"].append(-5.0)
    assert not live_curve.update("k", history, 'RETURN', now=100.1)   # inside 0.25 s: skipped
    assert live_curve.update("k", history, 'RETURN', now=100.3)
    assert not np.array_equal(first, live_curve.pixels("k"))
    assert live_curve.update("k", history, 'LOSS', now=100.31)          # a metric switch redraws at once
    assert live_curve.info("k")["count"] == 2
    assert live_curve.update("k", history, 'METRIC', force=True)
    assert "last 0.5" in live_curve.info("k")["summary"]


def test_curve_panel_draws_the_picture(ui, tree, empty_scene):
    empty_scene.drla.tree = tree
    ui.live_curve.forget(empty_scene.name)
    layout = draw(ui.panels.DRLA_PT_view3d_curve)
    assert any("appears when training starts" in t for t in labels(layout))
    ui.live_curve.remember_history(empty_scene.name, {"episode_returns": [1.0, 2.0]})
    ui.live_curve.update(empty_scene.name, {"episode_returns": [1.0, 2.0]}, 'RETURN', force=True)
    size, _, icon_scale = ui.live_curve.picture_size(bpy.context)
    assert size == ui.live_curve.SIZE  # no region (headless): the default size
    ui.live_curve._state[empty_scene.name]["pictures"][(size, 1)]["icon_id"] = 42  # headless: no icon ids
    layout = draw(ui.panels.DRLA_PT_view3d_curve)
    (icon,) = calls(layout, "template_icon")
    assert icon.kwargs["icon_value"] == 42 and icon.kwargs["scale"] == pytest.approx(icon_scale)
    assert [c.args[1:] for c in calls(layout, "prop_enum")] == [("curve", c) for c in ('RETURN', 'LOSS', 'EPSILON',
                                                                                     'METRIC')]  # a DQN tree's
    ui.live_curve.forget(empty_scene.name)


def test_preferences_default_folder_is_outside_the_extension(ext, tmp_path):
    import os

    from drla_ext.addon import preferences

    assert preferences.DRLA_AddonPreferences.bl_idname == "drla_ext"
    folder = preferences.checkpoint_dir()
    root = os.path.dirname(os.path.dirname(os.path.abspath(preferences.__file__)))
    assert os.path.isdir(folder) and not os.path.abspath(folder).startswith(root)
    assert preferences.checkpoint_dir(override=str(tmp_path / "runs")) == str(tmp_path / "runs")
    assert os.path.isdir(tmp_path / "runs")
    layout = MagicMock()
    preferences.DRLA_AddonPreferences.draw(SimpleNamespace(layout=layout), bpy.context)
    assert calls(layout, "prop")[0].args[1] == "checkpoint_dir"


def test_examples_menu_lists_the_examples(ext):
    from drla_ext.addon.ui import examples_menu

    layout = MagicMock()
    examples_menu.DRLA_MT_examples.draw(SimpleNamespace(layout=layout), bpy.context)
    assert operators(layout) == ["drla.add_example"] * len(examples_menu._examples())
    assert {c.kwargs["text"] for c in calls(layout, "operator")} >= {"Tank", "Reach (transform)",
                                                                     "Robot Arm 6 (Learned IK)"}
    add = MagicMock()
    examples_menu.draw_view3d_add(SimpleNamespace(layout=add), bpy.context)
    assert calls(add, "menu")[0].args[0] == "DRLA_MT_examples"
    node_add = MagicMock()
    examples_menu.draw_node_add(SimpleNamespace(layout=node_add),
                                SimpleNamespace(space_data=SimpleNamespace(tree_type="ShaderNodeTree")))
    assert calls(node_add, "menu") == []


# --------------------------------------------------------------------------- every label fits the sidebar
class WidthLayout:
    """A stand-in layout that knows how wide each label is drawn: a row shares its width among its items, a box
    takes its margins, an icon its place (Blender's layout rules, as ``ui.wrap`` models them)."""

    def __init__(self, side_by_side=False, box=False, columns=0):
        self.side_by_side, self.is_box, self.columns, self.items = side_by_side, box, columns, []

    def _child(self, side_by_side=False, box=False, columns=0):
        child = WidthLayout(side_by_side, box, columns)
        self.items.append(child)
        return child

    def row(self, *args, **kwargs):
        return self._child(True)

    def split(self, *args, **kwargs):
        return self._child(True)

    def grid_flow(self, columns=0, **kwargs):
        return self._child(True, columns=columns)

    def column(self, *args, **kwargs):
        return self._child(False)

    def box(self):
        return self._child(False, box=True)

    def label(self, text="", icon='NONE', **kwargs):
        self.items.append(("label", text, icon))

    def __getattr__(self, name):  # operator, prop, progress, template_icon, separator: one item each
        def item(*args, **kwargs):
            return self._child(False)
        return item

    def labels(self, width, wrap):
        """``(text, room in pixels)`` of every label drawn, for a layout ``width`` pixels wide."""
        inner = width - (wrap.BOX_PX if self.is_box else 0)
        n = (self.columns or len(self.items)) if self.side_by_side else 1
        share = inner / max(n, 1)
        if n > 1:
            share -= wrap.COLUMN_GAP_PX * (n - 1) / n
        out = []
        for it in self.items:
            if isinstance(it, tuple):
                _, text, icon = it
                out.append((text, share - (wrap.ICON_PX if icon != 'NONE' else 0)))
            else:
                out += it.labels(share, wrap)
        return out


LONG_FIGURES = ("generation\t12 / 15\npacman\tbest 3.52, mean 1.17, vs first 2.09\n"
                "ghost\tbest -3.53, mean -4.1, vs first -2.75\nchampion\t1.162 (generation 9 of 15)\n"
                "Median tip error\t70.3 mm\nEpisodes\t7")


@pytest.mark.parametrize("region_width", [220, 300, 420])
def test_no_sidebar_label_is_wider_than_the_sidebar(ui, tree, empty_scene, region_width):
    """Training with long figures, a long message, the curve hint, Show Network's words: every label the
    panels draw fits the sidebar at its width (Blender cuts a label off with '...' otherwise)."""
    from drla_ext.addon.ui import net_overlay, wrap

    s = empty_scene.drla
    s.tree = tree
    s.steps_done, s.steps_total, s.progress, s.status = 500, 2000, 0.25, LONG_FIGURES
    fake_session(ui, empty_scene, tree)
    ctx = SimpleNamespace(scene=empty_scene, region=SimpleNamespace(width=region_width),
                          preferences=bpy.context.preferences, space_data=None)
    measure = wrap.text_measure(ctx)
    room = region_width - wrap.SIDEBAR_MARGIN_PX * wrap.ui_scale(ctx)
    net_overlay.toggle()
    try:
        net_overlay._refresh()  # no network yet: Show Network says why, under its button
        assert net_overlay.status().startswith("No network yet")
        drawn = []
        for panel in (ui.panels.DRLA_PT_view3d, ui.panels.DRLA_PT_view3d_curve, ui.panels.DRLA_PT_view3d_model):
            layout = WidthLayout()
            panel.draw(SimpleNamespace(layout=layout), ctx)
            drawn += layout.labels(room, wrap)
    finally:
        net_overlay.toggle()
    texts = " ".join(t for t, _ in drawn)
    for words in ("ghost best -3.53, mean -4.1, vs first -2.75", "Median tip error 70.3 mm", "No network yet",
                  "The curve appears when training starts"):
        assert all(w in texts.split() for w in words.split()), words
    too_wide = [(t, round(measure(t)), round(r)) for t, r in drawn if measure(t) > r]
    assert not too_wide


def test_the_old_two_column_grid_cut_figures_off(ui):
    """What the width check above guards against: a figure in half the sidebar does not fit at 300 px."""
    from drla_ext.addon.ui import wrap

    ctx = SimpleNamespace(region=SimpleNamespace(width=300), preferences=bpy.context.preferences)
    measure = wrap.text_measure(ctx)
    assert measure("ghost best -3.53, mean -4.1, vs first -2.75") > wrap.text_space(ctx) / 2


def test_node_tooltips_read_as_help(ext):
    """What Blender shows over a node in the Add menu: sentences, no search words, no code paths."""
    from drla_ext.addon import nodes

    for cls in nodes.classes:
        tip = bpy.types.Node.bl_rna_get_subclass(cls.bl_idname).description
        assert tip and "Triggers" not in tip and "drla_core" not in tip and "addon/" not in tip, cls.bl_idname
        assert "\n" not in tip.strip() or all(len(p) > 40 for p in tip.split("\n")), cls.bl_idname
    dqn = bpy.types.Node.bl_rna_get_subclass("DRLA_DQNAgentNode").description
    assert dqn.startswith("A Deep Q-Network agent: learns the value of each discrete action, Q(s, a)")


def test_runs_write_to_a_visible_folder_next_to_the_blend_or_in_documents(ext, empty_scene, tmp_path, monkeypatch):
    import os

    from drla_ext.addon import preferences
    from drla_ext.addon.runs import outputs

    real = getattr(preferences.default_checkpoint_dir, "real", preferences.default_checkpoint_dir)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "Documents").mkdir(parents=True)
    assert not bpy.data.filepath  # never saved: the documents folder, not a hidden one under Blender's config
    assert real(create=False) == str(tmp_path / "home" / "Documents" / "DRLA")
    assert outputs.folder_words(real(create=False)) == "~/Documents/DRLA"
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "arena.blend"))
    assert real() == str(tmp_path / "arena_drla") and os.path.isdir(tmp_path / "arena_drla")
    assert outputs.files_words([str(tmp_path / "arena_drla" / "a.json"), str(tmp_path / "arena_drla" / "b.json")]) \
        == f"a.json, b.json in {tmp_path / 'arena_drla'}"
