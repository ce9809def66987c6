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
