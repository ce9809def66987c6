"""Several named agents in one tree (issue 11): a Multi-Agent Trainer over Named Agents, each with its own
Environment and DQN Agent, training or frozen. The chase example: the hero learns to catch a target that
moves away; the frozen target never changes; the panel's run exports the trained agent; bad trees say why."""

import json

import bpy
import numpy as np
import pytest


def chase(scene, **kw):
    from drla_ext.addon.ui import examples

    return examples.build_chase_tree(scene, **kw)


def compile_tree(tree, scene):
    from drla_ext.addon.tree import compiler

    return compiler.compile_tree(tree, scene)


def test_the_chase_tree_compiles_to_two_named_agents(empty_scene):
    compiled = compile_tree(chase(empty_scene), empty_scene)
    assert compiled.agent.kind == "team" and compiled.env is None
    assert [(m.name, m.mode) for m in compiled.team] == [("hero", "train"), ("target", "frozen")]
    hero, target = compiled.team
    assert hero.env.actions[0].obj == "Hero" and target.env.actions[0].obj == "Target"


def test_the_hero_learns_to_catch_the_frozen_target_which_never_changes(empty_scene):
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene

    scene = empty_scene
    compiled = compile_tree(chase(scene), scene)
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            job = build.build_job(compiled, env, seed=0, total_steps=6000)
            target = job.slots["target"].agent
            before = target.q_network.params.copy()
            probe = np.random.default_rng(0).uniform(-1, 1, (50, 4)).astype(np.float32)
            acts = [target.predict(o) for o in probe]
            job.run()
        finally:
            env.close()
    hero = job.histories["hero"].episode_returns
    assert np.mean(hero[:20]) < 0.0 < 2.0 < np.mean(hero[-20:])  # measured: -2.2 then 4.3 at seed 0
    assert np.array_equal(target.q_network.params, before)  # frozen: it never learnt
    assert [target.predict(o) for o in probe] == acts  # and acts the same way for the same observations
    assert list(job.to_models()) == ["hero"]  # only the agent that trains is exported


def test_a_panel_run_exports_each_trained_agent_and_restores_the_scene(empty_scene, tmp_path):
    from drla_ext.addon.runs.train import TrainSession

    scene = empty_scene
    tree = chase(scene, total_steps=300, target_mode='TRAIN')
    places = {ob.name: tuple(ob.matrix_world.translation) for ob in scene.objects}
    sess = TrainSession(scene, tree, output_dir=str(tmp_path)).start()
    sess.run_blocking()
    assert sess.state == "DONE", scene.drla.error
    for who in ("hero", "target"):
        data = json.loads((tmp_path / f"Chase_{who}.json").read_text())
        assert data["meta"]["agent"] == who and data["kind"] == "dqn"
    assert "hero (train)" in sess.message and (tmp_path / "Chase_report.png").is_file()
    assert {ob.name: tuple(ob.matrix_world.translation) for ob in scene.objects} == places


@pytest.mark.parametrize("case", ["same names", "all frozen", "nothing linked"])
def test_a_broken_multi_agent_tree_says_why_on_the_node(empty_scene, case):
    from drla_ext.addon.specs import CompileError

    tree = chase(empty_scene)
    members = [n for n in tree.nodes if n.bl_idname == "DRLA_NamedAgentNode"]
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_MultiAgentTrainerNode")
    if case == "same names":
        members[1].agent_name = "hero"
        node, message = members[1], "another Named Agent ('Named Agent') is called 'hero' too"
    elif case == "all frozen":
        members[0].mode = 'FROZEN'
        node, message = trainer, "every Named Agent is Frozen: set one to Train"
    else:
        for link in list(tree.links):
            if link.to_node == trainer:
                tree.links.remove(link)
        node, message = trainer, "link a Named Agent (or several) into its Agents input"
    with pytest.raises(CompileError):
        compile_tree(tree, empty_scene)
    assert message in node.drla_error


def test_play_shows_every_agent_acting_from_its_stored_model(empty_scene, tmp_path):
    from drla_ext.addon.runs import model_store
    from drla_ext.addon.runs.play import PlaySession
    from drla_ext.addon.runs.train import TrainSession

    scene = empty_scene
    tree = chase(scene, total_steps=200)
    TrainSession(scene, tree, output_dir=str(tmp_path)).start().run_blocking()
    assert model_store.has_model(tree) and model_store.find_text(tree, "target") is not None  # frozen one too
    places = {ob.name: tuple(ob.matrix_world.translation) for ob in scene.objects}
    play = PlaySession(scene, tree, seed=4).start()
    hero, target = scene.objects["Hero"], scene.objects["Target"]
    seen = set()
    for _ in range(30):
        play.step()
        seen.add((tuple(hero.matrix_world.translation), tuple(target.matrix_world.translation)))
    play.stop()
    assert len({h for h, _ in seen}) > 1 and len({t for _, t in seen}) > 1  # both agents moved
    assert play.steps == 30 and "Played 30 steps" in scene.drla.message
    assert {ob.name: tuple(ob.matrix_world.translation) for ob in scene.objects} == places
    # Bake the same 30 steps: both agents' objects get keyframes, and the scene is as it was
    from drla_ext.addon.runs import bake

    result = bake.bake(scene, tree, seed=4, max_steps=30)
    assert {ob for ob, _, _ in result.keys} == {"Hero", "Target"} and len(result.frames) == 31
    assert {ob.name: tuple(ob.location) for ob in scene.objects} == places


@pytest.mark.parametrize("name, objects", [("Tank Duel (two agents)", ("TankB", "CannonB", "MuzzleB", "TankBCamera")),
                                           ("Chase (two agents)", ("Hero", "Target"))])
def test_the_multi_agent_examples_come_from_the_add_menu_into_an_empty_file(empty_scene, tmp_path, name, objects):
    """Add > DRLA Examples brings the example's objects (from the scene in the extension) and its tree, ready."""
    from drla_ext.addon.runs import sessions

    assert bpy.ops.drla.add_example(name=name) == {'FINISHED'}
    assert all(n in empty_scene.objects for n in objects)
    compiled = compile_tree(empty_scene.drla.tree, empty_scene)
    assert compiled.agent.kind == "team" and len(compiled.team) == 2
    empty_scene.drla.output_dir = str(tmp_path)
    assert bpy.ops.drla.train(steps=60) == {'FINISHED'}, empty_scene.drla.error
    sessions.discard_all()
