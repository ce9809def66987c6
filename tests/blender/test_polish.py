"""What a person sees, on real Blender data: the time left, wrapped panel text, the learning curve
picture, node colours and widths, number limits on the nodes, and nothing left behind in the file."""

import time

import pytest

bpy = pytest.importorskip("bpy")

from test_operators import build_mover_tree  # noqa: E402


@pytest.fixture
def mover(empty_scene, tmp_path):
    tree = build_mover_tree(empty_scene, total_steps=4000)
    empty_scene.drla.output_dir = str(tmp_path)
    yield tree
    from drla_ext.addon import session

    session.discard_all()


# --------------------------------------------------------------------------- time left
def test_time_left_counts_the_wall_clock_not_only_the_training(ext, mover, empty_scene):
    """In the GUI Blender redraws between ticks; the time left must include that time."""
    from drla_ext.addon import session

    sess = session.make_train_session(empty_scene, mover).start()
    for _ in range(3):
        sess.tick(0.02)
        time.sleep(0.06)  # what Blender does between two timer events (redraws)
    assert 0 < sess.steps < sess.total_steps
    compute_only = (sess.total_steps - sess.steps) * sess.train_seconds / sess.steps
    assert sess.seconds_left > 1.5 * compute_only
    # exactly the pace since the start: pretend the run started 100 s ago
    sess._clock_start -= 100.0
    elapsed = time.perf_counter() - sess._clock_start
    expected = (sess.total_steps - sess.steps) * elapsed / sess.steps
    assert sess.seconds_left == pytest.approx(expected, rel=0.01)
    assert session.format_duration(sess.seconds_left) in sess.status_line()
    # Resume starts a new clock: the pause does not count
    sess.stop()
    steps = sess.steps
    time.sleep(0.05)
    sess.resume()
    assert sess._clock_steps == steps and time.perf_counter() - sess._clock_start < 1.0
    sess.tick(0.02)
    sess._clock_start = time.perf_counter() - 10.0
    assert sess.seconds_left == pytest.approx((sess.total_steps - sess.steps) * 10.0 / (sess.steps - steps), rel=0.01)
    sess.stop()


def test_duration_reads_as_minutes_and_hours(ext):
    from drla_ext.addon.session import format_duration

    assert format_duration(38.4) == "0:38"
    assert format_duration(6 * 60 + 5) == "6:05"
    assert format_duration(2 * 3600 + 5 * 60) == "2 h 05"
    assert format_duration(-3) == "0:00"


# --------------------------------------------------------------------------- wrapped text
def test_long_messages_wrap_to_the_sidebar_width(ext):
    from drla_ext.addon import panels

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
    from drla_ext.addon import panels

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
