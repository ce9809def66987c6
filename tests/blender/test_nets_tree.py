"""Issue 15 in Blender: the Network node's Grow on Plateau, the Grow button while training, a grown run
stopped and resumed from its training state (growth rule counters included), on the tank scene."""

import shutil
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from test_snapshot import full_dump as fingerprint  # noqa: E402

TANK_BLEND = Path(__file__).resolve().parents[2] / "scenes" / "tank" / "tank.blend"


@pytest.fixture
def tank(ext, tmp_path):
    """scenes/tank copied into tmp_path (its Export node writes beside the .blend), opened, Tree 'Tank' chosen,
    evaluations every 300 steps (1 episode)."""
    from drla_ext.addon.runs import sessions

    blend = tmp_path / "tank.blend"
    shutil.copyfile(TANK_BLEND, blend)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    tree = bpy.data.node_groups["Tank"]
    trainer = tree.nodes["Trainer"]
    trainer.eval_interval, trainer.eval_episodes, trainer.output_path = 300, 1, str(tmp_path / "out")
    scene.drla.tree = tree
    scene.drla.output_dir = str(tmp_path / "out")
    yield scene, tree
    sessions.discard_all()


def _plateau_rule(tree, **kw):
    net = tree.nodes["Network"]
    net.grow, net.grow_patience, net.grow_min_delta = True, 1, 1e9  # every evaluation after the first: a plateau
    for name, value in kw.items():
        setattr(net, name, value)
    return net


def test_grow_on_plateau_compiles_to_plain_data_and_refuses_what_cannot_grow(tank):
    from drla_ext.addon.specs import CompileError
    from drla_ext.addon.tree.compiler import compile_tree

    scene, tree = tank
    assert "growth" not in compile_tree(tree, scene).agent.config  # off by default
    net = _plateau_rule(tree, grow_how='DEEPEN', grow_max_layers=5)
    growth = compile_tree(tree, scene).agent.config["growth"]
    assert growth == {"patience": 1, "how": "deepen", "factor": 2, "max_size": 256, "max_layers": 5, "max_grows": 3,
                      "min_delta": 1e9, "node": "Network"}
    tree.nodes["Hidden Layer.001"].activation = 'TANH'
    with pytest.raises(CompileError, match="exact only after a ReLU"):
        compile_tree(tree, scene)
    assert "Widen" in net.drla_error
    net.grow_how, net.grow_max_width = 'WIDEN', 64
    with pytest.raises(CompileError, match="Max Width"):
        compile_tree(tree, scene)


def test_grow_rule_without_evaluations_is_refused_with_the_reason(tank):
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs.train import TrainSession

    scene, tree = tank
    _plateau_rule(tree)
    tree.nodes["Trainer"].eval_interval = 0
    before = fingerprint(scene)
    with pytest.raises(sessions.SessionError, match="never evaluates"):
        TrainSession(scene, tree, total_steps=500).start()
    assert "Network" in scene.drla.error and "Evaluate Every" in scene.drla.error
    assert fingerprint(scene) == before


def test_network_grows_on_a_plateau_and_by_the_grow_button_and_the_model_records_it(tank):
    from drla_ext.addon.runs import model_store
    from drla_ext.addon.runs.train import TrainSession

    scene, tree = tank
    _plateau_rule(tree, grow_max_times=1)
    before = fingerprint(scene)
    sess = TrainSession(scene, tree, total_steps=1600).start()
    assert sess.network_text() == "Network: 211 > 128 > 64 > 8"
    while sess.steps < 150:  # by steps, whatever the machine's speed
        sess.tick(None, max_steps=150 - sess.steps)
    agent = sess.job.agent
    obs = np.random.default_rng(0).normal(size=(16, 211)).astype(np.float32)
    q_before = agent.q_network.forward(obs)
    step = sess.steps
    assert bpy.ops.drla.grow(how='WIDEN') == {'FINISHED'}  # the sidebar's button, between two steps
    assert [h.size for h in agent.q_network.hidden] == [256, 128]
    np.testing.assert_allclose(agent.q_network.forward(obs), q_before, atol=1e-4)  # the same function
    assert agent.optimizer.params is agent.q_network.params  # Adam follows the grown network
    assert "Grew the network" in sess.message and "256 > 128" in sess.network_text()
    sess.run_blocking()
    assert sess.steps == 1600 and sess.state == "DONE"  # training went on after growing
    ops = [(r["op"], r["step"]) for r in agent.growth_history]
    assert ops[:2] == [("widen", step), ("widen", step)]
    rule = [cb for cb in sess.job.callbacks if type(cb).__name__ == "GrowthRule"][0]
    # the button: two records (two layers); then the node's rule once: only the layer below Max Width (256)
    assert len(rule.grows) == 1 and ops[2:] == [("widen", rule.grows[0]["step"])]
    assert [h.size for h in agent.q_network.hidden] == [256, 256]
    model = model_store.load_stored_model(tree)
    assert [r["hidden"] for r in model.meta["growth"]][-1] == [256, 256]
    assert model.network.architecture() == agent.q_network.architecture()
    assert fingerprint(scene) == before


def test_grow_button_is_greyed_out_with_the_reason_when_nothing_trains(tank):
    assert not bpy.ops.drla.grow.poll()
    with pytest.raises(RuntimeError, match="Grow works while a run trains"):
        bpy.ops.drla.grow()


def test_a_grown_run_stopped_resumes_from_its_training_state_with_the_rule_counters(tank):
    from drla_core.rl.checkpoint import read_checkpoint
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs.train import TrainSession

    scene, tree = tank
    _plateau_rule(tree, grow_max_times=3, grow_factor=2)
    sess = TrainSession(scene, tree, total_steps=3000).start()
    while not sess.job.callbacks[-1].grows and sess.tick(None, max_steps=10):  # until the rule grew once (by steps)
        pass
    while sess.steps < 800:
        sess.tick(None, max_steps=800 - sess.steps)
    sess.stop()
    rule = sess.job.callbacks[-1]
    saved = read_checkpoint(tree.drla_last_checkpoint)
    assert saved.meta["callbacks"]["growth_rule"] == rule.state_dict()
    grown_arch = sess.job.agent.q_network.architecture()
    sessions.discard_all()  # a later Blender: only the training state on disk remains

    resumed = TrainSession.from_checkpoint(scene, tree, output_dir=scene.drla.output_dir)
    assert resumed.job.agent.q_network.architecture() == grown_arch  # the grown network, not the node's 128 > 64
    new_rule = [cb for cb in resumed.job.callbacks if type(cb).__name__ == "GrowthRule"][0]
    assert new_rule.state_dict() == rule.state_dict()  # best, stale, growths done
    assert resumed.job.agent.growth_history == sess.job.agent.growth_history
    resumed.run_blocking()
    assert resumed.steps == 3000
    assert len(new_rule.grows) <= 3 and len(new_rule.grows) >= len(rule.grows)


def _draw(panel_cls):
    from types import SimpleNamespace
    from unittest.mock import MagicMock

    layout = MagicMock()
    panel_cls.draw(SimpleNamespace(layout=layout), bpy.context)
    ops = [c for c in layout.mock_calls if c[0].split(".")[-1] == "operator"]
    labels = [c.kwargs.get("text", "") for c in layout.mock_calls if c[0].split(".")[-1] == "label"]
    return [c.args[0] for c in ops], labels


def test_sidebar_offers_grow_while_training_and_lists_the_expert_library(tank, tmp_path):
    from drla_ext.addon.ui import net_panels, panels
    from drla_ext.addon.runs.train import TrainSession

    scene, tree = tank
    ops, labels = _draw(panels.DRLA_PT_view3d)
    assert "drla.grow" not in ops  # nothing trains
    sess = TrainSession(scene, tree, total_steps=400).start()
    sess.tick(0.0)  # one step: mid-run on any machine
    ops, labels = _draw(panels.DRLA_PT_view3d)
    assert ops.count("drla.grow") == 2 and "Network: 211 > 128 > 64 > 8" in labels
    assert bpy.ops.drla.grow.poll()
    sess.run_blocking()
    assert not bpy.ops.drla.grow.poll()  # the run is over

    scene.drla_expert_library = str(tmp_path / "library")
    ops, labels = _draw(net_panels.DRLA_PT_view3d_experts)
    assert ops == ["drla.expert_add"] and any("No experts yet" in t for t in labels)
    assert bpy.ops.drla.expert_add(name="tank a") == {'FINISHED'}
    ops, labels = _draw(net_panels.DRLA_PT_view3d_experts)
    assert ops == ["drla.expert_remove", "drla.expert_add"]
    assert any(t.startswith("tank_a  (Tank, score ") for t in labels), labels
    assert (tmp_path / "library" / "tank_a.json").is_file()
    assert bpy.ops.drla.expert_remove(name="tank_a") == {'FINISHED'}
    assert not (tmp_path / "library" / "tank_a.json").exists()
