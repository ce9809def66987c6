"""The learning curve's tabs are the curves a run of its agent kind records (issue 26): real PPO and SAC runs of
the shipped rigid-body cart-pole files through the panel's TrainSession, then the sidebar's Learning Curve panel
drawn (a stand-in layout records what it draws: headless Blender has no UI to draw into). PPO has no epsilon
tab; SAC's exploration tab is its entropy temperature alpha, titled so in the picture."""

from pathlib import Path
from types import SimpleNamespace
from unittest.mock import MagicMock

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
CARTPOLE = ROOT / "scenes" / "cartpole_rb"


def drawn_tabs(panel_cls) -> list[tuple[str, str]]:
    """``(curve, tab text)`` of every tab the panel drew (``prop_enum`` of the ``curve`` setting)."""
    layout = MagicMock()
    panel_cls.draw(SimpleNamespace(layout=layout), bpy.context)
    return [(c.args[2], c.kwargs.get("text", "")) for c in layout.mock_calls
            if c[0].split(".")[-1] == "prop_enum" and c.args[1] == "curve"]


def train(blend: Path, steps: int, folder: Path):
    """A copy of ``blend`` in ``folder`` (its Export node writes beside it), its tree trained for ``steps`` steps as
    the Train button does; the finished session."""
    from drla_ext.addon.runs.train import TrainSession

    copy = folder / blend.name
    copy.write_bytes(blend.read_bytes())
    bpy.ops.wm.open_mainfile(filepath=str(copy))
    scene = bpy.context.scene
    session = TrainSession(scene, scene.drla.tree, seed=0, total_steps=steps).start()
    while session.tick(1.0):
        pass
    assert session.state == "DONE", session.message
    return scene, session


@pytest.fixture
def ui(ext):
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.ui import live_curve, panels

    yield SimpleNamespace(live_curve=live_curve, panels=panels)
    sessions._sessions.clear()
    live_curve.forget_all()


def test_ppo_run_has_no_epsilon_tab(ui, tmp_path):
    scene, session = train(CARTPOLE / "cartpole_rb_ppo.blend", 300, tmp_path)
    assert session.agent_kind.name == "ppo"
    assert len(session.history.episode_returns) >= 1 and set(session.history.epsilons) == {0.0}  # none recorded
    assert drawn_tabs(ui.panels.DRLA_PT_view3d_curve) == [('RETURN', "Return"), ('LOSS', "Loss"), ('METRIC', "Task")]
    assert drawn_tabs(ui.panels.DRLA_PT_node_curve) == drawn_tabs(ui.panels.DRLA_PT_view3d_curve)
    # a file saved while Epsilon was chosen (a DQN tree's): the PPO run shows its return instead
    scene.drla.curve = 'EPSILON'
    drawn_tabs(ui.panels.DRLA_PT_view3d_curve)
    state = ui.live_curve.info(scene.name)
    assert state["metric"] == 'RETURN' and state["title"] == "Return per episode"


def test_sac_run_shows_its_temperature_where_dqn_shows_epsilon(ui, tmp_path):
    scene, session = train(CARTPOLE / "cartpole_rb_sac.blend", 300, tmp_path)
    agent = session.job.agent
    assert session.agent_kind.name == "sac"
    assert drawn_tabs(ui.panels.DRLA_PT_view3d_curve) == [('RETURN', "Return"), ('LOSS', "Loss"),
                                                          ('EPSILON', "Alpha"), ('METRIC', "Task")]
    scene.drla.curve = 'EPSILON'
    drawn_tabs(ui.panels.DRLA_PT_view3d_curve)
    state = ui.live_curve.info(scene.name)
    assert state["metric"] == 'EPSILON' and state["title"] == "Temperature (alpha)"
    recorded = np.asarray(session.history.epsilons)
    assert recorded.size == state["count"] >= 1 and np.all(recorded > 0)
    assert recorded[-1] == pytest.approx(agent.temperature, rel=0.2)  # the last episode's alpha, near the end's
    assert f"last {recorded[-1]:.3g}" in state["summary"]
    # the picture's title row is drawn (text pixels in the title band, none there in a title-less picture)
    img = ui.live_curve.render(session.history, 'EPSILON', 240, 1, "temperature")
    assert (np.abs(img[4:11, 4:200, :3] - np.array(ui.live_curve.BACKGROUND[:3])).sum(axis=2) > 0.5).sum() > 40


def test_tabs_by_kind():
    """Every kind's tabs (no run needed): IK draws its one curve untabbed, evolution names best and mean fitness;
    a PPO history that records an exploration figure gets its tab."""
    from drla_ext.addon.ui import live_curve as lc

    assert [c for c, _ in lc.tabs("dqn")] == ['RETURN', 'LOSS', 'EPSILON', 'METRIC']
    assert lc.tabs("ik") == [('LOSS', "Tip Error")]
    assert lc.tabs("evolution") == [('RETURN', "Best"), ('LOSS', "Mean")]
    assert lc.tabs("ppo", {"epsilons": [0.0, 0.0]}) == lc.tabs("ppo")
    assert ('EPSILON', "Entropy") in lc.tabs("ppo", {"epsilons": [1.2, 1.1]}, "entropy")
    titles = {"RETURN": "pacman: best fitness per generation", "LOSS": "ghost: best fitness per generation"}
    assert lc.tabs("coevolution", {"curve_titles": titles}) == [('RETURN', "Pacman"), ('LOSS', "Ghost")]
    assert lc.shown_curve('EPSILON', lc.tabs("ppo")) == 'RETURN' and lc.shown_curve('LOSS', lc.tabs("ppo")) == 'LOSS'
    assert lc.title({}, 'EPSILON') == "Epsilon (random actions)"
    assert lc.title({"exploration_label": "temperature"}, 'EPSILON') == "Temperature (alpha)"
