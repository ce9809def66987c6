"""scenes/pacman (issue 12): pac-man against a ghost in a maze whose objects are the game, co-evolved.

The committed file is what its script builds; walls block moves and pellets are collected (and come back
at reset); a short co-evolution from the sidebar's session gives both sides a champion that beats the
other side's generation-0 champion better than generation 0 did, exports both champions, plays both, and
leaves the scene bit-exact (after an error too); the CLI trains it with a report and both JSON files; a
broken co-evolution tree gets its messages on the nodes."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import bpy
import pytest

from test_snapshot import full_dump as fingerprint

ROOT = Path(__file__).resolve().parents[2]
BLEND = ROOT / "scenes" / "pacman" / "pacman.blend"


def _builder():
    spec = importlib.util.spec_from_file_location("build_pacman", ROOT / "scenes" / "pacman" / "build_pacman.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _open(population: int = 10, generations: int = 6):
    bpy.ops.wm.open_mainfile(filepath=str(BLEND))
    tree = bpy.data.node_groups["PacMan"]
    for node in tree.nodes:
        if node.bl_idname == "DRLA_EvolutionAgentNode":
            node.population_size, node.generations = population, generations
    return bpy.context.scene, tree


def test_rebuild_matches_committed_blend(ext, tmp_path):
    builder = _builder()
    builder.build(tmp_path / "pacman.blend")
    rebuilt = json.loads(json.dumps(builder.dump()))
    bpy.ops.wm.open_mainfile(filepath=str(BLEND))
    committed = json.loads(json.dumps(builder.dump()))
    assert rebuilt == committed, "pacman.blend is stale: make setup-bpy45 && .venv-bpy45/bin/python " \
                                 "scenes/pacman/build_pacman.py"


def test_walls_block_and_pellets_are_eaten_then_come_back(ext):
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    scene, tree = _open()
    compiled = compiler.compile_tree(tree, scene)
    assert compiled.agent.kind == "coevolution" and [m.name for m in compiled.team] == ["pacman", "ghost"]
    pac, ghost, pellet = scene.objects["PacMan"], scene.objects["Ghost"], scene.objects["Pellet.02.05"]
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            env.reset(seed=0)
            start = tuple(pac.location)
            # pac-man (top-left corner) up and the ghost (bottom-right) down: both into a wall
            _, rewards, _, _, _ = env.step({"pacman": 0, "ghost": 1})
            assert tuple(pac.location) == start and rewards["pacman"] == 0.0
            apart = (pac.location - ghost.location).length
            _, rewards, _, _, _ = env.step({"pacman": 3, "ghost": 2})  # right, onto a pellet; the ghost left
            assert pac.location.x == pytest.approx(start[0] + 1) and rewards["pacman"] == 1.0
            assert tuple(pellet.scale) == (0.0, 0.0, 0.0) and pac["pellets"] == 1
            closer = apart - (pac.location - ghost.location).length
            assert rewards["ghost"] == pytest.approx(-1.0 + 0.5 * closer)  # the pellet it let go, its hint
            env.reset(seed=0)
            assert tuple(pellet.scale) == (1.0, 1.0, 1.0) and pac["pellets"] == 0 and tuple(pac.location) == start
            assert ghost.location.x == pytest.approx(4.0)
        finally:
            env.close()


@pytest.mark.slow
def test_coevolution_from_the_sidebar_improves_both_sides_and_restores_the_scene(ext, tmp_path):
    """The panel's TrainSession at a fixed seed: each side's last champion scores better against the other
    side's generation-0 champion than generation 0 itself did; both champions exported and played."""
    from drla_ext.addon.runs import build, kinds, model_store
    from drla_ext.addon.runs.play import PlaySession
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.ui import live_curve

    scene, tree = _open()
    before = fingerprint(scene)
    session = TrainSession(scene, tree, seed=0, output_dir=str(tmp_path)).start()
    assert session.agent_kind is kinds.COEVOLUTION
    while session.tick(0.5):
        pass
    assert session.state == "DONE", session.message
    assert fingerprint(scene) == before
    job, h = session.job, session.job.history
    with restored_scene(scene):  # generation 0 against generation 0, on the scene again
        env = build.build_env(session.compiled, scene)
        job.resume(env)
        baseline = job.play({n: job.first[n] for n in job.names})
        env.close()
    print("baseline", baseline, {k: h[k] for k in ("pacman_vs_first", "ghost_vs_first")})
    assert job.steps == 6
    assert h["pacman_vs_first"][-1] > baseline["pacman"] + 3  # pellets eaten against the first ghost
    assert h["ghost_vs_first"][-1] > baseline["ghost"] + 0.5
    assert "Co-evolved 6 generations" in session.message
    for name in ("pacman", "ghost"):
        path = tmp_path / f"PacMan_{name}.json"
        data = json.loads(path.read_text())
        assert data["kind"] == "mlp" and data["meta"]["side"] == name, path
        assert model_store.load_stored_model(tree, name).meta["side"] == name
    assert (tmp_path / "PacMan_report.png").is_file()
    raw, _ = live_curve.series(h, 'RETURN')
    assert list(raw) == h["pacman_best"] and live_curve.title(h, 'LOSS') == "ghost: best fitness per generation"
    play = PlaySession(scene, tree, seed=0).start()
    play.run_episode(max_steps=100)
    assert play.episodes == 1 and play.state == "RUNNING"
    play.stop()
    assert fingerprint(scene) == before


def test_the_scene_is_restored_after_an_error(ext, tmp_path):
    from drla_ext.addon.runs.sessions import SessionError
    from drla_ext.addon.runs.train import TrainSession

    scene, tree = _open(population=4, generations=3)
    before = fingerprint(scene)
    session = TrainSession(scene, tree, seed=0, output_dir=str(tmp_path)).start()
    session.tick(0.05)
    calls = []

    def broken(actions):
        calls.append(actions)
        raise RuntimeError("the ghost's sensor broke")
    session.env.step = broken
    with pytest.raises(SessionError, match="sensor broke"):
        session.tick(0.5)
    assert calls and session.state == "ERROR" and "sensor broke" in scene.drla.error
    assert fingerprint(scene) == before


def test_cli_trains_both_sides_with_a_report(ext, tmp_path):
    before = BLEND.read_bytes()
    model = tmp_path / "pac.json"
    out = subprocess.run([sys.executable, "-m", "drla", "train", BLEND, "--tree", "PacMan", "--steps", "2",
                          "--seed", "0", "--checkpoint-interval", "1", "--out", model], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "co-evolved 2 generations" in out.stdout
    for name in ("pacman", "ghost"):
        assert json.loads((tmp_path / f"pac_{name}.json").read_text())["meta"]["side"] == name
    team = json.loads(model.read_text())  # --out: both champions in one team file, which drla play plays
    assert team["format"] == "drla-team" and [a["meta"]["side"] for a in team["agents"].values()] == ["pacman",
                                                                                                       "ghost"]
    played = subprocess.run([sys.executable, "-m", "drla", "play", BLEND, "--tree", "PacMan", "--model", model,
                             "--episodes", "1"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert played.returncode == 0, played.stderr
    assert "  pacman: mean return " in played.stdout and "  ghost: mean return " in played.stdout
    sides = subprocess.run([sys.executable, "-m", "drla", "play", BLEND, "--tree", "PacMan", "--model",
                            tmp_path / "pac_pacman.json", "--model", tmp_path / "pac_ghost.json", "--episodes", "1"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)  # each side's file names its side
    assert sides.returncode == 0, sides.stderr
    assert sides.stdout.split("PacMan: ", 1)[1] == played.stdout.split("PacMan: ", 1)[1]
    assert "2/2" in out.stderr  # the progress bar, by generation
    assert BLEND.read_bytes() == before
    # both populations were checkpointed: --resume goes on to 3 generations and ends where 3 straight end
    ckpt = json.loads((tmp_path / "pac_ckpt.json").read_text())
    assert ckpt["format"] == "drla-coevolution" and ckpt["generation"] == 2 and ckpt["settings"]["tree"] == "PacMan"
    out = subprocess.run([sys.executable, "-m", "drla", "train", BLEND, "--steps", "3", "--resume",
                          tmp_path / "pac_ckpt.json"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    straight = tmp_path / "straight.json"
    out = subprocess.run([sys.executable, "-m", "drla", "train", BLEND, "--tree", "PacMan", "--steps", "3",
                          "--seed", "0", "--out", straight], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for name in ("pacman", "ghost"):
        resumed = json.loads((tmp_path / f"pac_{name}.json").read_text())
        assert resumed["meta"]["generations"] == 3
        assert resumed["params"] == json.loads((tmp_path / f"straight_{name}.json").read_text())["params"]
    assert BLEND.read_bytes() == before


def test_a_broken_coevolution_tree_gets_its_messages_on_the_nodes(ext):
    from drla_ext.addon.specs import CompileError
    from drla_ext.addon.tree import compiler

    scene, tree = _open()
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_MultiAgentTrainerNode")
    members = {n.agent_name: n for n in tree.nodes if n.bl_idname == "DRLA_NamedAgentNode"}
    agents = {name: m.inputs["Agent"].links[0].from_node for name, m in members.items()}
    assert trainer.agent_kind == "coevolution"  # what the panel reads while it draws

    agents["ghost"].generations = 4
    with pytest.raises(CompileError):
        compiler.compile_tree(tree, scene)
    assert trainer.drla_error == "both sides of a co-evolution evolve for the same Generations: pacman 6, ghost 4"
    agents["ghost"].generations = 6

    members["ghost"].mode = 'FROZEN'
    with pytest.raises(CompileError):
        compiler.compile_tree(tree, scene)
    assert members["ghost"].drla_error == "an Evolution Agent co-evolves with the other side: set Mode to Train"
    members["ghost"].mode = 'TRAIN'

    dqn = tree.nodes.new("DRLA_DQNAgentNode")
    tree.links.new(dqn.outputs[0], members["ghost"].inputs["Agent"])
    assert trainer.agent_kind == "team"
    with pytest.raises(CompileError):
        compiler.compile_tree(tree, scene)
    assert trainer.drla_error.startswith("its Named Agents mix Evolution and DQN Agents")
    tree.links.new(agents["ghost"].outputs[0], members["ghost"].inputs["Agent"])

    move = next(n for n in tree.nodes if n.bl_idname == "DRLA_ActionNode")
    move.blocked_by = bpy.data.collections.new("Empty")
    with pytest.raises(CompileError):
        compiler.compile_tree(tree, scene)
    assert move.drla_error == "Blocked By: the collection 'Empty' has no object in the scene"


def test_stop_and_resume_repeat_the_generation_cut_short(ext, tmp_path):
    """Stop in the middle of a generation (the scene restored, both champions so far stored), Resume on the
    reopened scene: the run ends exactly as one that never stopped."""
    from drla_ext.addon.runs import model_store
    from drla_ext.addon.runs.train import TrainSession

    scene, tree = _open(population=4, generations=3)
    before = fingerprint(scene)
    straight = TrainSession(scene, tree, seed=1, output_dir=str(tmp_path)).start()
    straight.run_blocking()
    expected = {k: v for k, v in straight.job.history.items() if k.endswith(("_best", "_mean", "_vs_first"))}
    session = TrainSession(scene, tree, seed=1, output_dir=str(tmp_path)).start()
    session.tick(0.02)
    session.job.advance(max_steps=1)  # into generation 2
    session.tick(0.02)
    session.stop()
    assert session.state == "STOPPED" and fingerprint(scene) == before
    assert {model_store.load_stored_model(tree, n).meta["side"] for n in ("pacman", "ghost")} == {"pacman", "ghost"}
    session.resume()
    while session.tick(0.5):
        pass
    assert session.state == "DONE", session.message
    assert {k: v for k, v in session.job.history.items() if k in expected} == expected
    assert fingerprint(scene) == before


def test_resume_after_the_file_is_reopened_ends_as_a_run_never_stopped(ext, tmp_path):
    """Stop writes both populations to a file the tree remembers; after saving, closing and opening the file,
    Resume continues from it and the run ends with the history of one that never stopped."""
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs.train import TrainSession

    scene, tree = _open(population=4, generations=3)
    straight = TrainSession(scene, tree, seed=1, output_dir=str(tmp_path)).start()
    straight.run_blocking()
    expected = {k: v for k, v in straight.job.history.items() if k.endswith(("_best", "_mean", "_vs_first"))}
    session = TrainSession(scene, tree, seed=1, output_dir=str(tmp_path)).start()
    while session.steps < 1:
        session.tick(0.05)
    session.stop()
    assert tree.drla_last_checkpoint.endswith("PacMan_resume.json")
    blend = tmp_path / "pacman.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    bpy.ops.wm.open_mainfile(filepath=str(blend))  # a new session: nothing of the run is left in memory
    scene = bpy.context.scene
    tree = bpy.data.node_groups["PacMan"]
    assert sessions.get(scene) is None
    before = fingerprint(scene)
    resumed = TrainSession.from_checkpoint(scene, tree, output_dir=str(tmp_path))
    assert resumed.steps >= 1 and resumed.state == "RUNNING", scene.drla.error
    resumed.run_blocking()
    assert resumed.state == "DONE", scene.drla.error
    assert {k: v for k, v in resumed.job.history.items() if k in expected} == expected
    assert fingerprint(scene) == before
    sessions.discard_all()


def test_scene_copies_copy_the_walls_and_pellets_too(ext):
    """A one-agent maze tree (pac-man alone, DQN) with two scene copies: each copy's pac-man is blocked by its
    own copy's walls and eats its own copy's pellets."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler
    from drla_ext.addon.ui import examples, examples_evolution

    scene, _ = _open()
    before = fingerprint(scene)
    obs = examples_evolution.build_pacman_objects(scene)
    b = examples._Builder("PacManAlone")
    env_node = examples_evolution._maze_env(b, obs["PacMan"], obs["Ghost"], obs["Walls"], obs["Pellets"], True)
    examples._agent(b, env_node, hidden=(8,))
    tree = b.done()
    compiled = compiler.compile_tree(tree, scene)
    compiled.env.copies = 2
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            first, _ = env.reset(seed=0)
            o, rewards, _, _, _ = env.step([0, 0])  # up: into each copy's own wall
            assert rewards.tolist() == [0.0, 0.0]
            assert o[:, :3].tolist() == first[:, :3].tolist()  # neither moved
            _, rewards, _, _, _ = env.step([3, 3])  # right: each onto its own copy's pellet
            assert rewards.tolist() == [1.0, 1.0]
        finally:
            env.close()
    bpy.data.node_groups.remove(tree)
    assert fingerprint(scene) == before


def test_add_example_builds_the_maze_and_its_tree_in_any_scene(empty_scene):
    from drla_ext.addon.tree import compiler

    assert bpy.ops.drla.add_example(name="Pac-Man (co-evolution)") == {'FINISHED'}
    scene = bpy.context.scene
    tree = scene.drla.tree
    assert tree is not None and tree.name == "PacMan"
    assert len(bpy.data.collections["Walls"].objects) == 44 and len(bpy.data.collections["Pellets"].objects) == 31
    compiled = compiler.compile_tree(tree, scene)
    assert compiled.agent.kind == "coevolution" and compiled.agent.config["train_steps"] == 15
