"""scenes/tank_duel and scenes/chase (issue 11): the committed files are what their scripts build; the duel
trains both tanks, each through its own camera, and exports both; with TankB frozen, TankA keeps learning
against it and TankB never changes; the CLI never writes the .blend."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DUEL = ROOT / "scenes" / "tank_duel" / "tank_duel.blend"
CHASE = ROOT / "scenes" / "chase" / "chase.blend"
TANK = ROOT / "scenes" / "tank" / "tank.blend"


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script, blend", [("tank_duel/build_tank_duel.py", DUEL), ("chase/build_chase.py", CHASE)])
def test_rebuild_matches_committed_blend(ext, tmp_path, script, blend):
    builder = _module(ROOT / "scenes" / script)
    builder.build(tmp_path / blend.name)
    rebuilt = json.loads(json.dumps(builder.dump()))
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    committed = json.loads(json.dumps(builder.dump()))
    assert rebuilt == committed, (f"{blend.name} is stale: make setup-bpy45 && .venv-bpy45/bin/python "
                                  f"scenes/{script}")


def test_each_tank_sees_the_other_through_its_own_camera(ext):
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    bpy.ops.wm.open_mainfile(filepath=str(DUEL))
    scene = bpy.context.scene
    compiled = compiler.compile_tree(bpy.data.node_groups["Duel"], scene)
    assert [m.name for m in compiled.team] == ["tank_a", "tank_b"]
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            obs, _ = env.reset(seed=3)
        finally:
            env.close()
    for name in ("tank_a", "tank_b"):
        pixels = obs[name][:19 * 11]
        assert 0 < pixels.sum() < pixels.size  # the other tank's blob, on a dark ground


def test_tankb_frozen_never_changes_while_tanka_learns(ext, tmp_path):
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    bpy.ops.wm.open_mainfile(filepath=str(DUEL))
    scene = bpy.context.scene
    tree = bpy.data.node_groups["Duel"]
    next(n for n in tree.nodes if getattr(n, "agent_name", "") == "tank_b").mode = 'FROZEN'
    compiled = compiler.compile_tree(tree, scene)
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            job = build.build_job(compiled, env, seed=0, total_steps=1500)
            a, b = job.slots["tank_a"].agent, job.slots["tank_b"].agent
            a0, b0 = a.q_network.params.copy(), b.q_network.params.copy()
            job.run()
        finally:
            env.close()
    assert not np.array_equal(a.q_network.params, a0) and np.array_equal(b.q_network.params, b0)
    assert list(job.to_models()) == ["tank_a"]


def test_the_cli_trains_the_duel_and_exports_both_tanks(tmp_path):
    before = DUEL.read_bytes()
    out = subprocess.run([sys.executable, "-m", "drla", "train", DUEL, "--steps", "300", "--out", tmp_path / "d.json",
                          "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for name in ("tank_a", "tank_b"):
        data = json.loads((tmp_path / f"d_{name}.json").read_text())
        assert data["meta"]["agent"] == name and data["action_space"]["n"] == 8
    assert "tank_a (train)" in out.stdout and "tank_b (train)" in out.stdout
    team = json.loads((tmp_path / "d.json").read_text())  # --out holds every agent's model: the team file
    assert team["format"] == "drla-team" and list(team["agents"]) == ["tank_a", "tank_b"]
    assert f"model:  {tmp_path / 'd.json'} (every agent: tank_a, tank_b)" in out.stdout
    assert DUEL.read_bytes() == before

    # drla play: the team file, the per-agent files, NAME=FILE: every agent acts from its model
    def play(*models):
        args = [a for m in models for a in ("--model", m)]
        done = subprocess.run([sys.executable, "-m", "drla", "play", DUEL, *args, "--episodes", "2"], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        done.stdout = "\n".join(line for line in done.stdout.splitlines() if "Read blend:" not in line)
        return done

    a, b = str(tmp_path / "d_tank_a.json"), str(tmp_path / "d_tank_b.json")
    whole = play(str(tmp_path / "d.json"))
    assert whole.returncode == 0, whole.stderr
    lines = whole.stdout.splitlines()
    assert lines[0] == "Duel: 2 episodes with every agent greedy"
    assert lines[1].startswith("  tank_a: mean return ") and lines[2].startswith("  tank_b: mean return ")
    assert "hits" in lines[1] and "hits" in lines[2]
    each = play(a, b)
    assert each.returncode == 0 and each.stdout == whole.stdout  # the same models: the same episodes
    named = play(f"tank_b={b}", f"tank_a={a}")
    assert named.returncode == 0 and named.stdout == whole.stdout
    one = play(a)
    assert one.returncode == 2
    assert f"tree 'Duel' has agents tank_a, tank_b; no model given for tank_b: add --model {b}" in one.stderr
    twice = play(a, f"tank_a={b}")
    assert twice.returncode == 2 and "two models given for agent 'tank_a'" in twice.stderr
    single_tree = subprocess.run([sys.executable, "-m", "drla", "play", TANK, "--model", tmp_path / "d.json"],
                                 cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert single_tree.returncode == 2 and "team file holding several agents' models (tank_a, tank_b)" in \
        single_tree.stderr
    assert DUEL.read_bytes() == before


def test_the_cli_plays_the_chase_with_its_frozen_target(tmp_path):
    """The chase's target is Frozen (only the hero's own file is exported): the team file holds both."""
    out = subprocess.run([sys.executable, "-m", "drla", "train", CHASE, "--steps", "200", "--out",
                          tmp_path / "c.json", "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert not (tmp_path / "c_target.json").exists() and (tmp_path / "c_hero.json").is_file()
    played = subprocess.run([sys.executable, "-m", "drla", "play", CHASE, "--model", tmp_path / "c.json",
                             "--episodes", "3"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert played.returncode == 0, played.stderr
    assert "  hero: mean return " in played.stdout and "  target: mean return " in played.stdout
    hero_only = subprocess.run([sys.executable, "-m", "drla", "play", CHASE, "--model", tmp_path / "c_hero.json"],
                               cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert hero_only.returncode == 2
    assert (f"no model given for target, or give {tmp_path / 'c.json'} (every agent's model in one file)"
            in hero_only.stderr)


def test_self_play_turns_on_the_trainer_reach_the_run(ext):
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    bpy.ops.wm.open_mainfile(filepath=str(DUEL))
    scene = bpy.context.scene
    tree = bpy.data.node_groups["Duel"]
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_MultiAgentTrainerNode")
    assert trainer.swap_every == 5000  # the committed file: turns of 5,000 steps
    trainer.swap_every = 50
    compiled = compiler.compile_tree(tree, scene)
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            job = build.build_job(compiled, env, seed=0, total_steps=120)
            learners = []
            while not job.done:
                learners.append(job.learner)
                job.advance(max_steps=1)
        finally:
            env.close()
    assert learners == ["tank_a"] * 50 + ["tank_b"] * 50 + ["tank_a"] * 20
    assert job.slots["tank_a"].agent.num_timesteps == 70 and job.slots["tank_b"].agent.num_timesteps == 50
