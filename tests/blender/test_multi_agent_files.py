"""Multi-agent trees (issue 23) as first-class as one agent: Export writes every agent into one team file and
Import reads it back (or one agent's own file) with equal outputs; Bake keys every agent's objects and leaves
the scene as it was; Play and Bake refuse while an agent has no model; pac-man's co-evolution bakes too."""

from pathlib import Path

import bpy
import numpy as np
import pytest

from test_snapshot import full_dump

ROOT = Path(__file__).resolve().parents[2]
DUEL = ROOT / "scenes" / "tank_duel" / "tank_duel.blend"
PACMAN = ROOT / "scenes" / "pacman" / "pacman.blend"
# the tank's actions: move_right, move_left, move_front, move_back, wait, canon_up, canon_down, fire
MOVE_FRONT, CANON_UP = 2, 5


def _open_duel():
    bpy.ops.wm.open_mainfile(filepath=str(DUEL))
    scene = bpy.context.scene
    assert scene.drla.tree is not None and scene.drla.tree.name == "Duel"
    return scene, scene.drla.tree


def _scripted(scene, tree, choices, seed=0):
    """Each agent's model (the trained network's spaces) choosing ``choices[name]`` whatever it sees."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    compiled = compiler.compile_tree(tree, scene)
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            job = build.build_job(compiled, env, seed=seed, total_steps=10)
            models = job.policies({"tree": tree.name})
        finally:
            env.close()
    for name, model in models.items():
        last = len(model.network.weights) - 1
        for w in model.network.weights:
            w[:] = 0.0
        for b in model.network.biases:
            b[:] = 0.0
        model.network.biases[last][choices[name]] = 1.0
    return models


def _outputs(models, n=16):
    rng = np.random.default_rng(1)
    return {name: m.network.forward(rng.uniform(0, 1, (n, m.network.input_size)).astype(np.float32))
            for name, m in models.items()}


def test_export_writes_every_agent_and_import_gives_equal_outputs(ext, tmp_path):
    from drla_ext.addon.runs import kinds, model_store
    from drla_ext.drla_core.io import team_model

    scene, tree = _open_duel()
    assert kinds.team_names(tree) == ["tank_a", "tank_b"]
    assert not bpy.ops.drla.export_model.poll() and not bpy.ops.drla.bake.poll()  # nothing trained yet
    models = _scripted(scene, tree, {"tank_a": MOVE_FRONT, "tank_b": CANON_UP})
    rng = np.random.default_rng(5)
    for m in models.values():  # other outputs than a scripted network's: every weight counts
        m.network.params[:] = rng.normal(0, 0.1, m.network.params.size).astype(np.float32)
    team_model.save_team(tmp_path / "in.json", models)
    assert bpy.ops.drla.import_model(filepath=str(tmp_path / "in.json")) == {'FINISHED'}, scene.drla.error
    assert scene.drla.message == "Imported in.json into 'Duel' (agents tank_a, tank_b)"
    assert bpy.ops.drla.export_model.poll() and bpy.ops.drla.bake.poll() and bpy.ops.drla.play.poll()

    out = tmp_path / "duel_export.json"
    assert bpy.ops.drla.export_model(filepath=str(out)) == {'FINISHED'}, scene.drla.error
    assert scene.drla.message == (f"Exported 'Duel' (all 2 agents (tank_a, tank_b) in one team file) to {out}")
    exported = team_model.load_team(out)
    assert list(exported) == ["tank_a", "tank_b"]
    want = _outputs(models)
    for name, got in _outputs(exported).items():
        np.testing.assert_array_equal(got, want[name])

    # into the file as it was on disk (no model stored): import the exported file, the outputs are the same
    scene, tree = _open_duel()
    assert model_store.find_text(tree, "tank_a") is None
    assert bpy.ops.drla.import_model(filepath=str(out)) == {'FINISHED'}, scene.drla.error
    for name, got in _outputs(model_store.stored_team(tree, ["tank_a", "tank_b"])).items():
        np.testing.assert_array_equal(got, want[name])


def test_import_takes_one_agents_own_file_and_refuses_what_belongs_to_no_agent(ext, tmp_path):
    from drla_ext.addon.runs import kinds, model_store
    from drla_ext.drla_core.io.model_io import save_model

    scene, tree = _open_duel()
    models = _scripted(scene, tree, {"tank_a": MOVE_FRONT, "tank_b": CANON_UP})
    save_model(tmp_path / "duel_tank_b.json", models["tank_b"])  # as the trainer writes it: meta.agent names it
    assert models["tank_b"].meta["agent"] == "tank_b"
    assert bpy.ops.drla.import_model(filepath=str(tmp_path / "duel_tank_b.json")) == {'FINISHED'}
    assert model_store.find_text(tree, "tank_b") is not None and model_store.find_text(tree, "tank_a") is None
    assert kinds.missing_models_text(tree) == ("No trained model for agent tank_a of 'Duel' yet: train the tree "
                                               "or import a team file")
    assert not bpy.ops.drla.play.poll() and not bpy.ops.drla.bake.poll()  # tank_a still has none

    models["tank_a"].meta.pop("agent")
    save_model(tmp_path / "nameless.json", models["tank_a"])
    models["tank_a"].meta["agent"] = "hero"
    save_model(tmp_path / "hero.json", models["tank_a"])
    for file, why in (("nameless.json", "this model file names no agent (meta.agent)"),
                      ("hero.json", "this model file is agent 'hero's model")):
        with pytest.raises(RuntimeError):
            bpy.ops.drla.import_model(filepath=str(tmp_path / file))
        assert scene.drla.error.startswith(f"{file}: {why}, and tree 'Duel' has agents tank_a, tank_b")
    assert model_store.find_text(tree, "tank_a") is None  # nothing was stored


def test_bake_keys_every_agents_objects_and_leaves_the_scene_as_it_was(ext, tmp_path):
    from drla_ext.addon.runs import bake, model_store
    from drla_ext.addon.scene import keyframes

    scene, tree = _open_duel()
    for name, model in _scripted(scene, tree, {"tank_a": MOVE_FRONT, "tank_b": CANON_UP}).items():
        model_store.store_model(tree, model, name)
    model_store.store_model(tree, model)
    before = full_dump(scene)
    assert bpy.ops.drla.bake(steps=6) == {'FINISHED'}, scene.drla.error
    assert "onto CannonB, TankA; returns tank_a " in scene.drla.message and ", tank_b " in scene.drla.message
    _assert_only_the_baked_objects_follow_their_new_actions(scene, before)
    replay = bake.record_episode(scene, tree, max_steps=6)
    keys = replay.changed_keys()
    assert ("TankA", "", "location") in keys and ("CannonB", "", "rotation_euler") in keys  # each agent's
    assert all(isinstance(a, dict) and a == {"tank_a": MOVE_FRONT, "tank_b": CANON_UP} for a in replay.actions)
    for ob_name in ("TankA", "CannonB"):
        ob = scene.objects[ob_name]
        assert ob.animation_data.action.name == f"DRLA Bake: Duel: {ob_name}"
        fcurves = _fcurves(ob)
        for key in (k for k in keys if k[0] == ob_name):
            for index in range(len(replay.samples[0][key])):
                fc = fcurves.find(keyframes.data_path(key[1], key[2]), index=index)
                for i, sample in enumerate(replay.samples):
                    assert fc.evaluate(scene.frame_start + i) == pytest.approx(sample[key][index], abs=1e-6)


def _assert_only_the_baked_objects_follow_their_new_actions(scene, before):
    """The scene is as it was but for the objects given a bake action (and their children), which now stand
    where their action puts them at the current frame."""
    after = full_dump(scene)
    baked = {ob.name for ob in scene.objects
             if ob.animation_data and ob.animation_data.action
             and ob.animation_data.action.name.startswith(f"DRLA Bake: {scene.drla.tree.name}: ")}
    moved = {ob.name for ob in scene.objects if any(p.name in baked for p in _parents(ob))}
    assert baked and {k: v for k, v in after.items() if k != "objects"} == \
        {k: v for k, v in before.items() if k != "objects"}
    for name, dump in after["objects"].items():
        if name not in baked | moved:
            assert dump == before["objects"][name], name
    for name in baked:
        ob = scene.objects[name]
        fcurves = _fcurves(ob)
        for fc in fcurves:
            assert getattr(ob, fc.data_path)[fc.array_index] == pytest.approx(fc.evaluate(scene.frame_current))


def _parents(ob):
    while ob is not None:
        yield ob
        ob = ob.parent


def _fcurves(ob):
    from bpy_extras import anim_utils

    return anim_utils.action_get_channelbag_for_slot(ob.animation_data.action, ob.animation_data.action_slot).fcurves


@pytest.mark.slow
def test_pacman_co_evolution_bakes_both_sides(ext, tmp_path):
    from drla_ext.addon.runs.train import TrainSession

    bpy.ops.wm.open_mainfile(filepath=str(PACMAN))
    scene = bpy.context.scene
    tree = scene.drla.tree
    for node in tree.nodes:
        if node.bl_idname == "DRLA_EvolutionAgentNode":
            node.population_size, node.generations = 4, 1
    TrainSession(scene, tree, seed=0, output_dir=str(tmp_path)).start().run_blocking()
    before = full_dump(scene)
    assert bpy.ops.drla.bake(steps=12) == {'FINISHED'}, scene.drla.error
    _assert_only_the_baked_objects_follow_their_new_actions(scene, before)
    assert "PacMan" in scene.drla.message and "Ghost" in scene.drla.message, scene.drla.message
    out = tmp_path / "pac.json"
    assert bpy.ops.drla.export_model(filepath=str(out)) == {'FINISHED'}
    from drla_ext.drla_core.io.team_model import load_team

    assert list(load_team(out)) == ["pacman", "ghost"]
    ghost = tmp_path / "PacMan_ghost.json"  # the side's own file from the run: meta.side names it
    assert bpy.ops.drla.import_model(filepath=str(ghost)) == {'FINISHED'}, scene.drla.error
    assert scene.drla.message == "Imported PacMan_ghost.json into 'PacMan' (agents ghost)"


def test_an_export_json_node_on_a_multi_agent_tree_writes_every_agent(empty_scene, tmp_path):
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.ui import examples
    from drla_ext.drla_core.io.team_model import load_team

    tree = examples.build_chase_tree(empty_scene, total_steps=100)
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_MultiAgentTrainerNode")
    export = tree.nodes.new("DRLA_ExportJSONNode")
    export.filepath = str(tmp_path / "chase_team.json")
    tree.links.new(trainer.outputs["Model"], export.inputs["Model"])
    session = TrainSession(empty_scene, tree, output_dir=str(tmp_path)).start()
    session.run_blocking()
    assert session.state == "DONE", empty_scene.drla.error
    team = load_team(tmp_path / "chase_team.json")
    assert list(team) == ["hero", "target"]  # the frozen target too: the file plays the whole tree
    assert "chase_team.json" in session.message


def test_playing_every_agent_for_whole_episodes_restores_the_scene(ext):
    from drla_ext.addon.runs import kinds
    from drla_ext.addon.tree import compiler

    scene, tree = _open_duel()
    models = _scripted(scene, tree, {"tank_a": MOVE_FRONT, "tank_b": CANON_UP})
    compiled = compiler.compile_tree(tree, scene)
    before = full_dump(scene)
    text = kinds.of(compiled).evaluate(scene, compiled, models, 2, 0)
    assert full_dump(scene) == before
    assert text.splitlines()[0] == "Duel: 2 episodes with every agent greedy"
    # tank_a drives forward off the ground's edge each episode (-1), tank_b only raises its cannon (0)
    assert text.splitlines()[1].startswith("  tank_a: mean return -1.00; hits 0.00/episode, shots 0.00/episode")
    assert text.splitlines()[2].startswith("  tank_b: mean return 0.00")
    with pytest.raises(ValueError, match="tree 'Duel' has no agent named 'hero'"):
        kinds.of(compiled).evaluate(scene, compiled, {**models, "hero": models["tank_a"]}, 1, 0)
