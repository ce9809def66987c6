"""Issue 15 in Blender: the Expert Switcher node routes by its rule on the tank scene (Play runs it, each
step one expert acts), refuses experts that do not fit with the reason on the node, trains a learned
selector; the Merge node averages relatives, distils any networks over states recorded in their tree's
scene, and refuses mismatched or unreadable files with the reason on the node."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from test_snapshot import full_dump as fingerprint  # noqa: E402

from drla_core.rl.dqn import DQNAgent, DQNConfig  # noqa: E402
from drla_core.nn.mlp import MLP  # noqa: E402
from drla_core.io.model_io import Model, load_model, save_model  # noqa: E402

TANK_BLEND = Path(__file__).resolve().parents[2] / "scenes" / "tank" / "tank.blend"
RIGHT, WAIT = 0, 4  # the tank's actions: move_right ... wait ...


@pytest.fixture
def tank(ext, tmp_path):
    from drla_ext.addon.runs import build, sessions
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree.compiler import compile_tree

    blend = tmp_path / "tank.blend"
    shutil.copyfile(TANK_BLEND, blend)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    tree = bpy.data.node_groups["Tank"]
    scene.drla.tree = tree
    with restored_scene(scene):
        env = build.build_env(compile_tree(tree, scene), scene)
        spaces = env.observation_space, env.action_space
        env.close()
    yield scene, tree, spaces
    sessions.discard_all()


def always(action, spaces, path, n_in=None, meta=None):
    """A model file whose greedy action is always ``action`` (zero weights, the bias decides)."""
    obs_space, act_space = spaces
    net = MLP(n_in or obs_space.size, [(4, "relu")], act_space.n, rng=0)
    net.params[...] = 0.0
    net.biases[-1][action] = 1.0
    if n_in is not None:
        from drla_core.base.spaces import Box
        obs_space = Box(-np.inf, np.inf, (n_in,))
    save_model(path, Model(net, obs_space, act_space, meta=meta or {}))
    return str(path)


def switcher_node(tree, paths):
    node = tree.nodes.new("DRLA_ExpertSwitcherNode")
    node.expert_count = len(paths)
    for i, p in enumerate(paths, 1):
        setattr(node, f"expert_{i}", p)
    return node


def test_play_routes_each_step_by_an_object_property(tank, tmp_path):
    from drla_ext.addon.runs.play import PlaySession

    scene, tree, spaces = tank
    node = switcher_node(tree, [always(RIGHT, spaces, tmp_path / "right.json"),
                                always(WAIT, spaces, tmp_path / "wait.json")])
    ground = bpy.data.objects["Ground"]
    ground["expert"] = 1
    node.rule, node.rule_object, node.rule_property, node.value_is_expert = 'PROPERTY', ground, "expert", True
    tank_a = bpy.data.objects["TankA"]
    before = fingerprint(scene)
    assert bpy.ops.drla.play.poll()  # no trained model: the switcher plays
    sess = PlaySession(scene, tree).start()
    x0 = tank_a.matrix_world.translation.x
    sess.run_steps(2)
    assert list(sess.model.counts) == [2, 0] and sess.model.last_choice == 0
    assert tank_a.matrix_world.translation.x == pytest.approx(x0 + 1.0)  # expert 1 moved right twice
    ground["expert"] = 2  # the scene changes: the next steps are the other expert's
    sess.run_steps(3)
    assert list(sess.model.counts) == [2, 3] and sess.model.last_choice == 1
    assert tank_a.matrix_world.translation.x == pytest.approx(x0 + 1.0)  # expert 2 waits
    assert "expert wait acting" in sess.status_line()
    sess.stop()
    assert "steps per expert: right 2, wait 3" in scene.drla.message
    ground["expert"] = 1
    assert fingerprint(scene) == before
    assert bpy.ops.drla.play(mode='BLOCKING', steps=4) == {'FINISHED'}  # the sidebar's button
    assert "right 4, wait 0" in scene.drla.message
    assert fingerprint(scene) == before


def test_distance_rule_picks_above_or_below_the_threshold(tank, tmp_path):
    from drla_ext.addon.runs import switcher

    scene, tree, spaces = tank
    node = switcher_node(tree, [always(RIGHT, spaces, tmp_path / "a.json"), always(WAIT, spaces, tmp_path / "b.json")])
    a, b = bpy.data.objects["TankA"], bpy.data.objects["TankB"]
    node.rule, node.rule_object, node.rule_object_b = 'DISTANCE', a, b
    gap = (a.matrix_world.translation - b.matrix_world.translation).length
    node.threshold, node.above, node.below = gap + 1.0, 2, 1
    sw = switcher.make_switcher(node, scene)
    obs = np.zeros(spaces[0].size, np.float32)
    assert sw.choose(obs) == 0  # nearer than the threshold: Below (expert 1)
    a.location += (a.matrix_world.translation - b.matrix_world.translation).normalized() * 5.0  # away from b
    bpy.context.view_layer.update()
    assert sw.choose(obs) == 1  # now farther: Above (expert 2)
    node.above = 3
    with pytest.raises(switcher.SwitcherError, match="Above is expert 3, but there are 2"):
        switcher.make_switcher(node, scene)


def test_experts_that_do_not_fit_are_refused_with_the_reason_on_the_node(tank, tmp_path):
    scene, tree, spaces = tank
    good = always(RIGHT, spaces, tmp_path / "good.json")
    node = switcher_node(tree, [good, always(WAIT, spaces, tmp_path / "small.json", n_in=10)])
    node.rule = 'OBSERVATION'
    with pytest.raises(RuntimeError, match="cannot be combined"):
        bpy.ops.drla.switcher_check(tree=tree.name, node=node.name)
    assert "reads observations of shape (10,)" in node.drla_error
    node.expert_1 = always(RIGHT, spaces, tmp_path / "small2.json", n_in=10)  # they agree, but not with the tree
    with pytest.raises(RuntimeError, match="does not fit tree 'Tank'"):
        bpy.ops.drla.switcher_check(tree=tree.name, node=node.name)
    (tmp_path / "hostile.json").write_text('{"__class__": "os.system", "network": "rm -rf /"}')
    node.expert_1, node.expert_2 = good, str(tmp_path / "hostile.json")
    with pytest.raises(RuntimeError, match="Expert 2 \\(hostile.json\\)"):
        bpy.ops.drla.switcher_check(tree=tree.name, node=node.name)
    node.expert_2 = good
    assert bpy.ops.drla.switcher_check(tree=tree.name, node=node.name) == {'FINISHED'}
    assert node.drla_error == "" and "2 experts fit 'Tank': 211 inputs -> 8 actions" in node.result
    node.expert_2 = str(tmp_path / "missing.json")
    with pytest.raises(RuntimeError, match="Error: Expert 2 \\(missing.json\\)"):  # Play stops with the reason
        bpy.ops.drla.play(mode='BLOCKING', steps=2)
    assert "missing.json" in node.drla_error and "missing.json" in bpy.context.scene.drla.error


def test_learned_selector_trains_over_the_experts_and_plays(tank, tmp_path):
    from drla_ext.addon.runs.play import PlaySession

    scene, tree, spaces = tank
    node = switcher_node(tree, [always(RIGHT, spaces, tmp_path / "a.json"), always(WAIT, spaces, tmp_path / "b.json")])
    node.rule, node.selector_path, node.selector_steps = 'LEARNED', str(tmp_path / "sel.json"), 400
    before = fingerprint(scene)
    assert bpy.ops.drla.switcher_train_selector(tree=tree.name, node=node.name) == {'FINISHED'}
    assert "Selector trained 400 steps" in node.result
    selector = load_model(tmp_path / "sel.json")
    assert selector.action_space.n == 2 and selector.meta["selector_for"] == ["a", "b"]
    assert fingerprint(scene) == before
    sess = PlaySession(scene, tree).start()
    sess.run_steps(5)
    assert sess.model.counts.sum() == 5
    sess.stop()
    assert fingerprint(scene) == before


def _dqn_model(spaces, seed, nudge=0.0, hidden=((8, "relu"),)):
    agent = DQNAgent(spaces[0], spaces[1], DQNConfig(hidden=list(hidden)), seed=seed)
    agent.q_network.params[...] += nudge
    return agent.to_model({"tree": "Tank"})


def merge_node(tree, paths, mode, out):
    node = tree.nodes.new("DRLA_MergeNode")
    node.model_count = len(paths)
    for i, p in enumerate(paths, 1):
        setattr(node, f"model_{i}", str(p))
    node.mode, node.output_path = mode, str(out)
    return node


def test_merge_averages_relatives_and_refuses_strangers_and_bad_files(tank, tmp_path):
    scene, tree, spaces = tank
    a, b = _dqn_model(spaces, 0), _dqn_model(spaces, 0, nudge=0.5)  # same initial weights: relatives
    save_model(tmp_path / "a.json", a)
    save_model(tmp_path / "b.json", b)
    node = merge_node(tree, [tmp_path / "a.json", tmp_path / "b.json"], 'AVERAGE', tmp_path / "m.json")
    assert bpy.ops.drla.merge_models(tree=tree.name, node=node.name) == {'FINISHED'}
    merged = load_model(tmp_path / "m.json")
    np.testing.assert_allclose(merged.network.params, (a.network.params + b.network.params) / 2, atol=1e-6)
    assert merged.meta["merge"]["method"] == "average" and node.result.startswith("Averaged 2 networks")

    save_model(tmp_path / "c.json", _dqn_model(spaces, 1))  # other initial weights
    node.model_2 = str(tmp_path / "c.json")
    with pytest.raises(RuntimeError, match="do not share an ancestor"):
        bpy.ops.drla.merge_models(tree=tree.name, node=node.name)
    assert "use distillation" in node.drla_error and node.result == ""
    save_model(tmp_path / "d.json", _dqn_model(spaces, 0, hidden=((16, "relu"),)))
    node.model_2 = str(tmp_path / "d.json")
    with pytest.raises(RuntimeError, match="another shape"):
        bpy.ops.drla.merge_models(tree=tree.name, node=node.name)
    (tmp_path / "bad.json").write_text("[" * 100_000)  # hostile: nesting deep enough to break a naive reader
    node.model_2 = str(tmp_path / "bad.json")
    with pytest.raises(RuntimeError, match="Model 2 \\(bad.json\\)"):
        bpy.ops.drla.merge_models(tree=tree.name, node=node.name)
    node.model_2 = ""
    with pytest.raises(RuntimeError, match="Model 2 is empty"):
        bpy.ops.drla.merge_models(tree=tree.name, node=node.name)
    bpy.ops.drla.merge_slots(tree=tree.name, node=node.name, delta=1)
    assert node.model_count == 3
    bpy.ops.drla.merge_slots(tree=tree.name, node=node.name, delta=-1)
    bpy.ops.drla.merge_slots(tree=tree.name, node=node.name, delta=-1)
    assert node.model_count == 2  # never fewer than two


def test_merge_distils_over_states_recorded_in_the_teachers_tree(tank, tmp_path):
    scene, tree, spaces = tank
    save_model(tmp_path / "a.json", _dqn_model(spaces, 0))
    save_model(tmp_path / "c.json", _dqn_model(spaces, 1))
    node = merge_node(tree, [tmp_path / "a.json", tmp_path / "c.json"], 'AUTO', tmp_path / "m.json")
    node.states, node.epochs = 300, 40
    before = fingerprint(scene)
    assert bpy.ops.drla.merge_models(tree=tree.name, node=node.name) == {'FINISHED'}
    assert fingerprint(scene) == before
    merged = load_model(tmp_path / "m.json")
    info = merged.meta["merge"]
    assert info["method"] == "distill" and info["recorded_in"] == ["tree 'Tank'", "tree 'Tank'"]
    assert info["states"] == [300, 300] and min(info["agreement"]) > 0.5
    assert "not averaged: " in node.result and "a.json: same action on" in node.result
    assert json.loads((tmp_path / "m.json").read_text())["meta"]["merge"]["sources"] == ["a.json", "c.json"]
    # the merged file is a model like any other: Import JSON, then Play
    assert bpy.ops.drla.import_model(filepath=str(tmp_path / "m.json")) == {'FINISHED'}
    assert bpy.ops.drla.play(mode='BLOCKING', steps=3) == {'FINISHED'}
    assert scene.drla.message.startswith("Played 3 steps")
