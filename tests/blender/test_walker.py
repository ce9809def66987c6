"""scenes/walker: the committed .blend is what its build script builds; the four-legged rigid-body walker
stands still without actions, and its Evolution tree (with novelty of the final position) evolves a
champion that walks clearly farther than generation 0's best, the scene bit-exact afterwards."""

import json
from pathlib import Path

import numpy as np
import pytest

from tree_cases import _diff, scene_builder
from test_snapshot import full_dump

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
BLEND = ROOT / "scenes" / "walker" / "walker.blend"
REBUILD = "make setup-bpy45 && .venv-bpy45/bin/python scenes/walker/build_walker.py"


@pytest.fixture(scope="module")
def builder(ext):
    return scene_builder("walker")


@pytest.fixture
def walker(builder):
    scene = builder.build_scene()
    tree = builder.build_tree(scene)
    yield scene, tree
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)


@pytest.mark.skipif(not BLEND.exists(), reason="scenes/walker/walker.blend not built yet")
def test_rebuild_matches_committed_blend(builder, tmp_path):
    builder.build(tmp_path / "walker.blend")
    rebuilt = json.loads(json.dumps(builder.dump()))
    bpy.ops.wm.open_mainfile(filepath=str(BLEND))
    committed = json.loads(json.dumps(builder.dump()))
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    diffs = _diff(rebuilt, committed)
    assert not diffs, f"walker.blend is stale; rebuild it with `{REBUILD}`:\n" + "\n".join(diffs[:20])


def test_the_walker_stands_without_actions(walker, builder):
    """Zero motor velocities: the walker stands 10 s; the Clock Sensor reads sin, cos of 2 pi f t."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler
    from drla_ext.addon.ui import examples_evolution

    scene, tree = walker
    with restored_scene(scene):
        env = build.build_env(compiler.compile_tree(tree, scene), scene)
        assert env.action_space.shape == (4,) and env.observation_space.shape == (14,)
        obs, _ = env.reset(seed=0)
        assert obs[-2:].tolist() == [0.0, 1.0]  # the clock starts each episode at phase 0
        ret, steps = 0.0, 0
        while True:
            obs, r, term, trunc, _ = env.step(np.zeros(4, np.float32))
            ret, steps = ret + r, steps + 1
            phase = 2 * np.pi * examples_evolution.WALKER_CLOCK_HZ * steps / scene.render.fps
            assert obs[-2:] == pytest.approx([np.sin(phase), np.cos(phase)], abs=1e-6)
            if term or trunc:
                break
        assert steps == 240 and not term  # 10 s standing: it does not fall
        assert abs(ret) < 0.05 and obs[3] == pytest.approx(0.45, abs=0.03)  # no walk; the torso's height
        env.close()


@pytest.mark.slow
def test_evolution_makes_the_walker_walk(walker):
    """Seed 4, 24 walkers x 4 generations (about 10 s): the champion walks clearly farther than generation 0's
    best; the Novelty node's behaviour is the final position (the first two observation values)."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    scene, tree = walker
    agent = tree.nodes["Evolution Agent"]
    agent.generations = 4
    novelty = tree.nodes.new("DRLA_NoveltyNode")
    novelty.values, novelty.fitness_weight = 2, 0.9  # mostly fitness: novelty only breaks ties
    tree.links.new(novelty.outputs[0], agent.inputs["Novelty"])
    before = full_dump(scene)
    compiled = compiler.compile_tree(tree, scene)
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        job = build.build_job(compiled, env, seed=4)  # seed 0 (the clock tree) starts slower: flat for 5 generations
        job.advance()
        env.close()
    assert full_dump(scene) == before
    best = job.history["best"]
    print("walker best distance per generation (m):", [round(b, 2) for b in best])
    assert job.champion_fitness >= best[0] + 0.3, best
    assert job.archive.items and len(job.archive.items[0]) == 2


@pytest.mark.parametrize("name, tree_name", [("Walker", "Walker"), ("Cart-Pole (rigid body)", "CartPole")])
def test_rigid_body_examples_come_from_the_add_menu_into_an_empty_file(ext, name, tree_name):
    """Add > DRLA Examples brings the rigid bodies into a new rigid-body world, and the tree simulates them:
    with zero motor velocities the walker stands and the pole falls, as in the example's own .blend."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    assert bpy.ops.drla.add_example(name=name) == {'FINISHED'}
    rbw = scene.rigidbody_world
    assert rbw is not None and len(rbw.collection.objects) >= 2 and len(rbw.constraints.objects) >= 1
    tree = scene.drla.tree
    assert tree.name.startswith(tree_name)
    compiled = compiler.compile_tree(tree, scene)
    assert compiled.agent.kind == "evolution"
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        obs0, _ = env.reset(seed=0)
        for _ in range(30):
            obs, _, term, _, _ = env.step(np.zeros(env.action_space.shape, np.float32))
            if term:
                break
        env.close()
    if name == "Walker":
        assert not term and obs[3] == pytest.approx(0.45, abs=0.03)  # the torso stands at its height
    else:
        assert term or abs(obs[6]) > abs(obs0[6]) + 0.1  # unbalanced, the pole (hinge angle) tips over
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
