"""What a person sees, on real Blender data: the time left, wrapped panel text, the learning curve
picture, node colours and widths, number limits on the nodes, and nothing left behind in the file."""

import time

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from test_operators import build_mover_tree  # noqa: E402


@pytest.fixture
def mover(empty_scene, tmp_path):
    tree = build_mover_tree(empty_scene, total_steps=4000)
    empty_scene.drla.output_dir = str(tmp_path)
    yield tree
    from drla_ext.addon.runs import sessions

    sessions.discard_all()


# --------------------------------------------------------------------------- time left
def _seconds_left_and_its_bounds(sess, steps_since, left):
    """``sess.seconds_left`` and the values the pace since ``sess._clock_start`` allows for it, from
    the wall clock read just before and just after (exact on a busy machine too)."""
    a = time.perf_counter()
    value = sess.seconds_left
    b = time.perf_counter()
    low, high = left * (a - sess._clock_start) / steps_since, left * (b - sess._clock_start) / steps_since
    return value, low * (1 - 1e-9), high * (1 + 1e-9)  # (rounding)


def test_time_left_counts_the_wall_clock_not_only_the_training(ext, mover, empty_scene):
    """In the GUI Blender redraws between ticks; the time left must include that time."""
    from drla_ext.addon.runs import train as train_session
    from drla_ext.addon import words

    sess = train_session.TrainSession(empty_scene, mover).start()
    for _ in range(3):
        sess.tick(0.0)  # one step each
    assert sess.steps == 3
    # Blender spent 100 s redrawing between those ticks: the pace since the start counts them
    sess._clock_start -= 100.0
    left = sess.total_steps - sess.steps
    value, low, high = _seconds_left_and_its_bounds(sess, sess.steps, left)
    assert low <= value <= high
    compute_only = left * sess.train_seconds / sess.steps
    assert sess.train_seconds < 10.0 and value > 10 * compute_only
    assert words.format_duration(sess.seconds_left) in sess.status_line()
    # Resume starts a new clock: the pause does not count
    sess.stop()
    steps = sess.steps
    paused = time.perf_counter()
    sess.resume()
    assert sess._clock_steps == steps and sess._clock_start >= paused
    sess.tick(0.0)
    sess._clock_start -= 10.0
    value, low, high = _seconds_left_and_its_bounds(sess, sess.steps - steps, sess.total_steps - sess.steps)
    assert sess.steps == steps + 1 and low <= value <= high
    assert value > 10.0 * (sess.total_steps - sess.steps) * 0.99  # >= 10 s per step since Resume
    sess.stop()


def test_duration_reads_as_minutes_and_hours(ext):
    from drla_ext.addon.words import format_duration

    assert format_duration(38.4) == "0:38"
    assert format_duration(6 * 60 + 5) == "6:05"
    assert format_duration(2 * 3600 + 5 * 60) == "2 h 05"
    assert format_duration(-3) == "0:00"


# --------------------------------------------------------------------------- wrapped text
def test_long_messages_wrap_to_the_sidebar_width(ext):
    from drla_ext.addon.ui import panels

    measure = panels.text_measure(bpy.context)
    message = "Stopped at step 7000 of 60000: Resume continues, Play uses the model so far"
    for width in (120, 200, 420):
        lines = panels.wrap(message, width, measure)
        assert all(measure(line) <= width for line in lines)
        assert " ".join(lines).split() == message.split()
    assert len(panels.wrap(message, 200, measure)) > len(panels.wrap(message, 420, measure)) >= 1
    # a word wider than a line (a file path) is cut, never lost
    path = "/home/someone/projects/a-very-long-folder-name/tank_report_of_the_evening.png"
    lines = panels.wrap(f"Report: {path}", 150, measure)
    assert all(measure(line) <= 150 for line in lines) and "".join(lines).replace(" ", "") == f"Report:{path}"
    assert panels.wrap("", 100, measure) == [""]
    assert panels.wrap("first line\nsecond", 400, measure) == ["first line", "second"]


def test_text_space_follows_the_real_region_width(ext, empty_scene):
    from drla_ext.addon.ui import panels

    bpy.ops.wm.read_homefile(use_empty=False, use_factory_startup=True)
    window = bpy.context.window_manager.windows[0]
    area = next(a for a in window.screen.areas if a.type == 'PROPERTIES')
    region = next(r for r in area.regions if r.type == 'WINDOW')
    with bpy.context.temp_override(window=window, area=area, region=region):
        scale = panels.ui_scale(bpy.context)
        plain = panels.text_space(bpy.context)
        assert plain == int(region.width - panels.SIDEBAR_MARGIN_PX * scale)
        assert panels.text_space(bpy.context, icon=True, box=True) < panels.text_space(bpy.context, icon=True) < plain
    # no region (a script): a default sidebar's width
    assert panels.text_space(bpy.context) == int((panels.FALLBACK_REGION_PX - panels.SIDEBAR_MARGIN_PX)
                                                 * panels.ui_scale(bpy.context))


# --------------------------------------------------------------------------- learning curve picture
def _history(n=120):
    rng = np.random.default_rng(1)
    return {"episode_returns": list(np.linspace(-15, 2, n) + rng.normal(0, 3, n)),
            "episode_end_steps": list(np.cumsum(rng.integers(40, 90, n))),
            "losses": list(np.exp(-np.linspace(0, 3, 50))), "loss_steps": list(range(1000, 6000, 100)),
            "epsilons": list(np.linspace(1, 0.05, n)), "task_metric": "hit",
            "episode_metric_sums": list(rng.integers(0, 3, n).astype(float)),
            "episode_metric_counts": list(rng.integers(2, 6, n)), "episode_metrics": list(rng.random(n))}


def _ink(img, colour, rows=slice(None), cols=slice(None)):
    return int(np.all(np.isclose(img[rows, cols], colour, atol=1e-3), axis=-1).sum())


def test_curve_picture_has_a_title_axes_and_the_curve(ext):
    from drla_ext.addon.ui import live_curve as lc

    h = _history()
    assert lc.title(h, 'RETURN') == "Return per episode" and lc.title(h, 'LOSS') == "Loss per update"
    assert lc.title(h, 'METRIC') == "Hits per episode"  # counts, not a rate one lucky shot makes 100 %
    assert lc.title({"task_metric": "escaped", "episode_metrics": [1.0]}, 'METRIC') == "Escaped rate"
    assert lc.title({"losses": [1.0], "loss_name": "Median error (mm)"}, 'LOSS') == "Median error (mm)"
    x, label = lc.x_values(h, 'RETURN', len(h["episode_returns"]))
    assert label == "steps" and x[-1] == h["episode_end_steps"][-1]
    assert lc.x_values(h, 'LOSS', 50)[1] == "steps" and lc.x_values({}, 'LOSS', 3)[1] == "updates"
    assert lc.x_values({"episode_returns": [1, 2]}, 'RETURN', 2)[1] == "episodes"

    img = lc.render(h, 'RETURN', 240, 1)
    assert img.shape == (240, 240, 4) and img.dtype == np.float32
    assert _ink(img, lc.TEXT, rows=slice(0, 14)) > 60                   # the title
    assert _ink(img, lc.MUTED, rows=slice(14, 220), cols=slice(0, 30)) > 40  # y labels: max, min, 0
    assert _ink(img, lc.MUTED, rows=slice(215, 240)) > 40                # x labels and "steps"
    assert _ink(img, lc.COLOURS['RETURN']) > 150                         # the smoothed curve
    # the max label sits at the top, the min label at the bottom of the plot
    assert lc.short_number(max(h["episode_returns"])) != lc.short_number(min(h["episode_returns"]))
    # twice the UI scale: twice the font, the same layout
    big = lc.render(h, 'RETURN', 480, 2)
    assert _ink(big, lc.TEXT, rows=slice(0, 28)) == 4 * _ink(img, lc.TEXT, rows=slice(0, 14))
    empty = lc.render({}, 'METRIC', 200, 1)
    assert _ink(empty, lc.MUTED) > 0 and _ink(empty, lc.COLOURS['METRIC']) == 0
    for value, text in ((60000, "60k"), (11656, "11.7k"), (-17.0, "-17"), (0.052, "0.052"), (2.5e6, "2.5M"),
                        (0.0004, "4.0e-4")):
        assert lc.short_number(value) == text


def test_curve_picture_is_as_wide_as_the_sidebar(ext, empty_scene):
    from drla_ext.addon.ui import live_curve as lc

    bpy.ops.wm.read_homefile(use_empty=False, use_factory_startup=True)
    window = bpy.context.window_manager.windows[0]
    area = next(a for a in window.screen.areas if a.type == 'PROPERTIES')
    region = next(r for r in area.regions if r.type == 'WINDOW')
    with bpy.context.temp_override(window=window, area=area, region=region):
        size, scale, icon_scale = lc.picture_size(bpy.context)
        ui = bpy.context.preferences.system.ui_scale or 1.0
    button = region.width - lc.SIDEBAR_MARGIN_PX * ui
    assert size == int(button) - 2 * lc.PREVIEW_PAD and scale == max(1, round(ui))
    assert icon_scale * 20 * ui == pytest.approx(int(button))
    # each size drawn gets its own picture, kept up to date by every update
    lc.forget("k")
    lc.update("k", _history(), 'RETURN', force=True)
    state = lc.info("k")
    lc._draw_picture("k", state, size, scale)
    assert set(state["pictures"]) == {(lc.SIZE, 1), (size, scale)}
    assert lc.update("k", _history(130), 'LOSS', force=True)
    assert {p["version"] for p in lc.info("k")["pictures"].values()} == {lc.info("k")["version"]}
    assert lc.pixels("k").shape[:2] in {(size, size), (lc.SIZE, lc.SIZE)}
    lc.forget("k")
    assert lc.info("k") == {}


def test_learned_ik_time_left_stops_at_its_train_seconds(ext, arm3_scene):
    from drla_ext.addon.runs import train as train_session

    tree = arm3_scene.drla.tree
    next(n for n in tree.nodes if n.bl_idname == "DRLA_IKAgentNode").train_seconds = 30.0
    sess = train_session.TrainSession(arm3_scene, tree, total_steps=10_000_000).start()
    sess.tick(0.0)
    sess.tick(0.0)
    assert sess.steps == 2 and sess.history["loss_name"] and len(sess.history["loss_steps"]) == len(
        sess.history["losses"])
    # the steps would take ages; the 30 s of training, with Blender's time between ticks (here 10 s
    # of it), end it first: what is left of the 30 s, at the wall-clock pace of training
    sess._clock_start -= 10.0
    trained = sess.train_seconds
    assert 0 < trained < 30.0  # two steps have not used up the 30 s
    a = time.perf_counter()
    value = sess.seconds_left
    b = time.perf_counter()
    low = (30.0 - trained) * (a - sess._clock_start) / trained
    high = (30.0 - trained) * (b - sess._clock_start) / trained
    assert low * (1 - 1e-9) <= value <= high * (1 + 1e-9)
    sess.stop()


# --------------------------------------------------------------------------- node looks
def test_nodes_are_coloured_by_category_and_wide_enough_for_their_labels(ext, empty_scene):
    from drla_ext.addon.tree import node_tree
    from drla_ext.addon import nodes
    from drla_ext.addon.ui import panels
    from drla_ext.addon.nodes._common import CATEGORIES

    icons = bpy.types.Node.bl_rna.properties["bl_icon"].enum_items.keys()
    assert len({color for color, _ in CATEGORIES.values()}) == len(CATEGORIES)
    tree = bpy.data.node_groups.new("Looks", "DRLA_NodeTree")
    measure = panels.text_measure(bpy.context)
    seen = set()
    for cls in nodes.classes:
        assert cls.drla_category in CATEGORIES, cls.bl_idname
        seen.add(cls.drla_category)
        assert cls.bl_icon in icons
        assert 180 <= cls.bl_width_default <= 260, cls.bl_idname
        node = tree.nodes.new(cls.bl_idname)
        assert node.use_custom_color and tuple(node.color) == pytest.approx(CATEGORIES[cls.drla_category][0])
        # a label in draw_prop's column: LABEL_FACTOR of the node's inner width (node width - 20 px)
        column = node_tree.LABEL_FACTOR * (cls.bl_width_default - 20) - 4
        for name in cls.draw_props:
            prop = node.bl_rna.properties[name]
            if prop.type in {'POINTER', 'ENUM', 'STRING'}:
                assert measure(prop.name + ":") <= column, (cls.bl_idname, prop.name)
    assert seen == set(CATEGORIES)
    bpy.data.node_groups.remove(tree)


# --------------------------------------------------------------------------- numbers on the nodes
def test_number_fields_refuse_nonsense(ext, empty_scene):
    tree = bpy.data.node_groups.new("Limits", "DRLA_NodeTree")
    agent = tree.nodes.new("DRLA_DQNAgentNode")
    agent.learning_rate = -1.0
    assert agent.learning_rate > 0
    agent.gamma = 2.0
    assert agent.gamma == 1.0
    agent.max_grad_norm = 0.0
    assert agent.max_grad_norm > 0  # 0 would scale every gradient to nothing
    replay = tree.nodes.new("DRLA_ReplayMemoryNode")
    replay.batch_size = -4
    assert replay.batch_size == 1
    trainer = tree.nodes.new("DRLA_TrainerNode")
    trainer.total_steps, trainer.eval_episodes = -5, 0
    assert trainer.total_steps == 1 and trainer.eval_episodes == 1
    for node in tree.nodes:  # every number field has limits a person can drag within
        for prop in node.bl_rna.properties:
            if prop.type in {'INT', 'FLOAT'} and prop.identifier in node.draw_props:
                assert prop.soft_max < 1e30 or prop.identifier in {"seed"}, (node.bl_idname, prop.identifier)
    bpy.data.node_groups.remove(tree)


def test_out_of_range_values_from_an_older_file_are_node_errors(ext, mover, empty_scene):
    """The fields refuse such values, but a file saved before the limits existed may hold them."""
    from drla_ext.addon.tree import compiler

    nodes = {n.bl_idname: n for n in mover.nodes}
    agent, env, trainer = nodes["DRLA_DQNAgentNode"], nodes["DRLA_EnvironmentNode"], nodes["DRLA_TrainerNode"]
    def stored(node):
        """Where Blender keeps an add-on property's value: its own store from 5.0, the ID properties before."""
        return node.bl_system_properties_get(do_create=True) if hasattr(node, "bl_system_properties_get") else node

    stored(agent)["learning_rate"] = -1.0  # stored as is, past the field's limits
    stored(agent)["max_grad_norm"] = 0.0
    stored(env)["max_steps"] = 0
    stored(trainer)["total_steps"] = -5
    with pytest.raises(compiler.CompileError) as info:
        compiler.compile_tree(mover, empty_scene)
    messages = [m for _, m in info.value.errors]
    assert "Learning Rate is -1; it must be above 0 and at most 1" in messages
    assert "Max Grad Norm is 0; it must be at least 0.001" in messages
    assert "Max Steps is 0; it must be at least 1" in messages
    assert "Total Steps is -5; it must be at least 1" in messages
    assert "Learning Rate is -1" in agent.drla_error and "Max Steps is 0" in env.drla_error
    assert {n for n, _ in info.value.errors} == {agent.name, env.name, trainer.name}
    # the panel's one line names the node and says what to type
    from drla_ext.addon import words

    assert "DQN Agent: Learning Rate is -1; it must be above 0" in words.describe_error(info.value)


def test_min_above_max_is_a_node_error(ext, mover, empty_scene):
    from drla_ext.addon.tree import compiler

    action = next(n for n in mover.nodes if n.bl_idname == "DRLA_ActionNode" and n.action_name == "left")
    action.limit_min = (5.0, -1.0, -1.0)
    with pytest.raises(compiler.CompileError):
        compiler.compile_tree(mover, empty_scene)
    assert action.drla_error == "Min X (5) is above Max X (3)"
