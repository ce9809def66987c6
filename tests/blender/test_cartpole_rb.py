"""scenes/cartpole_rb: the committed .blend is what its build script builds; the Motor action drives
Blender's rigid-body physics and resets replay it bit for bit; an Evolution tree evolves a champion
clearly better than generation 0 in Blender headless; the user's scene is bit-exact afterwards, and
after an error; broken trees get their message on the node."""

import json
from pathlib import Path

import numpy as np
import pytest

from test_snapshot import full_dump

bpy = pytest.importorskip("bpy")

import tree_cases  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BLEND = tree_cases.CARTPOLE_RB / "cartpole_rb.blend"


@pytest.fixture(scope="module")
def builder(ext):
    return tree_cases.cartpole_builder()


@pytest.fixture
def cartpole(builder):
    """A freshly built cart-pole scene and its tree (the scene as a user's file holds it)."""
    scene = builder.build_scene()
    tree = builder.build_tree(scene)
    yield scene, tree
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)


@pytest.mark.skipif(not BLEND.exists(), reason="scenes/cartpole_rb/cartpole_rb.blend not built yet")
def test_rebuild_matches_committed_blend(builder, tmp_path):
    tree_cases.assert_rebuild_matches(builder, tmp_path, BLEND)


def _env(scene, tree):
    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler

    return build.build_env(compiler.compile_tree(tree, scene), scene)


def _episode(env, actions):
    obs, _ = env.reset(seed=0)
    trace = [obs]
    for a in actions:
        obs, r, term, trunc, _ = env.step(np.array([a], np.float32))
        trace.append(obs)
        if term or trunc:
            break
    return np.stack(trace)


def test_the_motor_drives_the_cart_and_resets_replay_bit_for_bit(cartpole):
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.drla_core.base.spaces import Box

    scene, tree = cartpole
    motor = scene.objects["CartMotor"].rigid_body_constraint
    with restored_scene(scene):
        env = _env(scene, tree)
        assert isinstance(env.action_space, Box) and env.action_space.shape == (1,)
        assert env.observation_space.shape == (10,)
        obs, _ = env.reset(seed=0)
        assert obs[6] == pytest.approx(-0.15, abs=1e-4)  # the pole's start tilt, about the hinge's axis
        env.step(np.array([0.5], np.float32))
        assert motor.motor_lin_target_velocity == pytest.approx(1.5)  # 0.5 x Max Velocity 3
        pushed = _episode(env, [1.0] * 10)
        assert pushed[-1, 0] < -0.05  # Blender's motor drives object2 against the constraint's +X
        rng = np.random.default_rng(0)
        wobble = rng.uniform(-1, 1, 60)
        first = _episode(env, wobble)
        _episode(env, -wobble)  # another episode between: the simulation must not remember it
        again = _episode(env, wobble)
        assert len(first) > 5
        np.testing.assert_array_equal(first, again)
        still = _episode(env, [0.0] * 200)
        assert len(still) < 60  # nothing balances it: the pole falls and the episode ends
        env.close()
    assert motor.motor_lin_target_velocity == 0.0


def test_evolution_balances_the_rigid_body_pole(cartpole):
    """The tree's Evolution Agent in Blender headless (seed 0): the champion clearly beats generation 0's
    best, and the user's scene is bit-exact afterwards."""
    from drla_ext.addon.runs.train import TrainSession

    scene, tree = cartpole
    for frame in range(1, 8):  # the user played the simulation to frame 7 and left the playhead there
        scene.frame_set(frame)
    before = full_dump(scene)
    session = TrainSession(scene, tree, seed=0).start()
    while session.tick(1.0):
        pass
    assert session.state == "DONE", session.message
    assert full_dump(scene) == before
    h = session.job.history
    print("cartpole_rb best per generation:", h["best"], "mean:", [round(m, 1) for m in h["mean"]])
    assert len(h["best"]) == 10
    # At least twice generation 0's best and 50 steps more. Blender's physics differs between versions, so the
    # same seed evolves differently: seed 0 reaches 200 (the limit) on bpy 5.0.1 and 140 on Blender 5.2.2.
    assert session.job.champion_fitness >= max(2 * h["best"][0], h["best"][0] + 50), h["best"]


def test_scene_bit_exact_after_an_error_mid_evolution(cartpole):
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    scene, tree = cartpole
    before = full_dump(scene)
    compiled = compiler.compile_tree(tree, scene)
    with pytest.raises(RuntimeError, match="boom"):
        with restored_scene(scene):
            job = build.build_job(compiled, build.build_env(compiled, scene), seed=1)
            job.advance(max_seconds=0.3)
            assert job.env_steps > 0 and full_dump(scene) != before
            raise RuntimeError("boom")
    assert full_dump(scene) == before


def test_broken_motor_and_evolution_trees_say_why_on_the_node(cartpole):
    from drla_ext.addon.specs import CompileError
    from drla_ext.addon.tree import compiler

    scene, tree = cartpole
    motor_node = next(n for n in tree.nodes if n.bl_idname == "DRLA_MotorActionNode")
    agent = next(n for n in tree.nodes if n.bl_idname == "DRLA_EvolutionAgentNode")
    motor_node.constraint = scene.objects["PoleHinge"]
    agent.method = 'NEAT'  # with a Network linked
    with pytest.raises(CompileError):
        compiler.compile_tree(tree, scene)
    assert motor_node.drla_error.startswith("the constraint of 'PoleHinge' is Hinge, not Motor")
    assert "NEAT evolves its own topology" in tree.nodes["Network"].drla_error
    motor_node.constraint = scene.objects["CartMotor"]
    scene.objects["CartMotor"].rigid_body_constraint.use_motor_lin = False
    with pytest.raises(CompileError):
        compiler.compile_tree(tree, scene)
    assert motor_node.drla_error == "the Linear motor of 'CartMotor' is off: turn it on in its constraint"
    discrete = tree.nodes.new("DRLA_ActionNode")
    discrete.kind, discrete.action_name = 'WAIT', "wait"
    action_set = next(n for n in tree.nodes if n.bl_idname == "DRLA_ActionSetNode")
    tree.links.new(discrete.outputs[0], action_set.inputs[0])
    with pytest.raises(CompileError):
        compiler.compile_tree(tree, scene)
    assert "either kind, not both" in action_set.drla_error


def test_cli_trains_and_plays_the_committed_scene_and_bake_keys_the_champion(tmp_path, builder):
    """``drla train scene.blend`` and ``drla play`` as for a DQN tree (the file never written), then Bake:
    the champion's episode keyed where the simulation put the cart and the pole."""
    import subprocess
    import sys

    from drla_ext.addon.runs import kinds

    if not BLEND.exists():
        pytest.skip("scenes/cartpole_rb/cartpole_rb.blend not built yet")
    before = BLEND.read_bytes()
    model = tmp_path / "cp.json"
    cli = [sys.executable, "-m", "drla"]
    out = subprocess.run([*cli, "train", BLEND, "--steps", "2", "--seed", "0", "--out", model], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "evolved 2 generations" in out.stdout and json.loads(model.read_text())["kind"] == "mlp"
    out = subprocess.run([*cli, "play", BLEND, "--model", model, "--episodes", "2"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "CartPole: mean return 63.00 over 2 episodes" in out.stdout  # generation 1's best, replayed exactly
    assert BLEND.read_bytes() == before

    from drla_ext.addon.runs import model_store
    from drla_ext.drla_core.io.model_io import load_model

    scene = builder.build_scene()
    tree = builder.build_tree(scene)
    model_store.store_model(tree, load_model(model))
    text = kinds.EVOLUTION.bake(scene, tree, scene.drla, 0)
    assert "Baked" in text or "bake" in text.lower(), text
    assert scene.objects["Pole"].animation_data is not None
    from drla_ext.addon.scene import keyframes

    cart = scene.objects["Cart"]
    fcurves = keyframes.fcurves_for(cart, cart.animation_data.action)
    xs = [k.co[1] for k in fcurves.find("location", index=0).keyframe_points]
    assert len(xs) == 63 + 1 and max(abs(x) for x in xs) > 0.05  # the cart moved on the rail, keyed per step
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)


@pytest.mark.slow
def test_cli_evolution_checkpoints_and_resume(tmp_path):
    """``--checkpoint-interval 1`` writes the population every generation (<out>_ckpt.json) and ``--resume``
    continues it: 2 generations then 1 more evolve the same champion as 3 straight."""
    import subprocess
    import sys

    if not BLEND.exists():
        pytest.skip("scenes/cartpole_rb/cartpole_rb.blend not built yet")
    cli = [sys.executable, "-m", "drla", "train", BLEND, "--seed", "0", "--quiet"]

    def train(*args):
        out = subprocess.run([*cli, *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out

    train("--steps", "2", "--checkpoint-interval", "1", "--out", tmp_path / "cp.json")
    ckpt = json.loads((tmp_path / "cp_ckpt.json").read_text())
    assert ckpt["format"] == "drla-evolution" and ckpt["generation"] == 2 and ckpt["settings"]["tree"]
    assert (tmp_path / "cp_step1.json").is_file() and (tmp_path / "cp_step2.json").is_file()
    out = train("--steps", "3", "--resume", tmp_path / "cp_ckpt.json")
    assert "resuming" in out.stderr and "at step 2 of 3" in out.stderr and "evolved 3 generations" in out.stdout
    train("--steps", "3", "--out", tmp_path / "straight.json")
    resumed = json.loads((tmp_path / "cp.json").read_text())
    straight = json.loads((tmp_path / "straight.json").read_text())
    assert resumed["meta"]["champion_fitness"] == straight["meta"]["champion_fitness"]
    assert resumed["params"] == straight["params"]
    bad = subprocess.run([*cli, "--resume", tmp_path / "cp.json"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 2 and (f"{tmp_path / 'cp.json'} is a model file (the trained network), not a "
                                    f"checkpoint: resume from {tmp_path / 'cp_ckpt.json'}") in bad.stderr


def test_panel_stop_and_resume_an_evolution_run(cartpole, tmp_path):
    """Stop writes the population (<tree>_resume.json) and Resume, even in a later session, continues it."""
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs.train import TrainSession

    scene, tree = cartpole
    next(n for n in tree.nodes if n.bl_idname == "DRLA_EvolutionAgentNode").generations = 3
    scene.drla.tree = tree
    sess = TrainSession(scene, tree, output_dir=str(tmp_path)).start()
    while sess.steps < 1:  # one generation, by steps: all 3 may fit into one tick of a fast machine
        sess.tick(None, max_steps=1)
    sess.stop()
    stopped_at, best = sess.steps, list(sess.job.history["best"])
    population = sess.job.method.population.copy()
    assert tree.drla_last_checkpoint.endswith("_resume.json") and scene.drla.error == ""
    sessions.discard_all()
    resumed = TrainSession.from_checkpoint(scene, tree, output_dir=str(tmp_path))
    assert resumed.steps == stopped_at and resumed.job.history["best"] == best
    assert np.array_equal(resumed.job.method.population, population)
    resumed.run_blocking()
    assert resumed.state == "DONE" and resumed.steps == 3, scene.drla.error
    assert len(resumed.job.history["best"]) == 3
    sessions.discard_all()


def test_copies_of_the_physics_scene_share_one_world_and_restart_together(cartpole):
    """Four copies of the cart-pole in the scene's one rigid-body world (rail, hinges and motor copied, each
    constraint between its own copy's bodies): every copy restarted with seed 0 and driven by the same motor
    values plays the single scene's episode (to float32 world precision: the copies stand metres apart); a
    copy whose pole fell waits for the others (no copy restarts alone); a restart replays bit for bit; a DQN
    run, whose copies restart one by one, is refused; afterwards the scene is bit-exact, the world as it was."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.copies import CopyError
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    scene, tree = cartpole
    rbw = scene.rigidbody_world
    world = (rbw.collection.objects[:], rbw.constraints.objects[:])
    before = full_dump(scene)
    compiled = compiler.compile_tree(tree, scene)
    wobble = np.random.default_rng(0).uniform(-1, 1, 60).astype(np.float32)
    with restored_scene(scene):
        single = _episode(build.build_env(compiled, scene), wobble)
    assert full_dump(scene) == before
    compiled.env.copies = 4
    with restored_scene(scene):
        venv = build.build_env(compiled, scene)
        try:
            assert isinstance(venv, SceneVectorEnv) and venv.restarts_together
            assert len(rbw.collection.objects) == 4 * len(world[0])
            hinge = scene.objects["PoleHinge [2]"].rigid_body_constraint
            assert (hinge.object1.name, hinge.object2.name) == ("Cart [2]", "Pole [2]")
            traces = []
            for _ in range(2):
                obs = venv.restart(range(4), [0, 0, 0, 0])
                trace, ended = [obs], np.zeros(4, bool)
                for a in wobble:
                    obs, _, term, trunc, infos = venv.step(np.full((4, 1), a, np.float32))
                    if "final_obs" in infos:
                        obs = np.where(infos["_final_obs"][:, None], infos["final_obs"], obs)
                    trace.append(np.where(ended[:, None], trace[-1], obs))  # a waiting copy's steps don't count
                    ended |= term | trunc
                    if ended.all():
                        break
                traces.append(np.stack(trace))
            np.testing.assert_array_equal(traces[0], traces[1])
            assert len(traces[0]) == len(single)
            for i in range(4):
                np.testing.assert_allclose(traces[0][:, i], single, atol=2e-3)
        finally:
            venv.close()
    assert (rbw.collection.objects[:], rbw.constraints.objects[:]) == world
    assert full_dump(scene) == before
    with pytest.raises(CopyError, match="'Cart' is a rigid body: copies of a physics scene restart together at "
                                        "the start frame, which only an Evolution Agent can use"):
        SceneVectorEnv(compiled.env, scene, 2)
    assert full_dump(scene) == before


def test_evolution_on_physics_copies_is_repeatable_and_leaves_the_scene_as_it_was(cartpole):
    """The Evolution Agent with Copies 4 on the Environment node: each generation's episodes play four at a
    time in one rigid-body world, rounds restarting together; the same seed evolves the same history, and
    the scene (playhead left at frame 5 mid-simulation) is bit-exact after each run."""
    from drla_ext.addon.runs.train import TrainSession

    scene, tree = cartpole
    env_node = next(n for n in tree.nodes if n.bl_idname == "DRLA_EnvironmentNode")
    agent = next(n for n in tree.nodes if n.bl_idname == "DRLA_EvolutionAgentNode")
    env_node.copies, agent.generations = 4, 3
    for frame in range(1, 6):
        scene.frame_set(frame)
    before = full_dump(scene)
    histories = []
    for _ in range(2):
        session = TrainSession(scene, tree, seed=0).start()
        while session.tick(1.0):
            pass
        assert session.state == "DONE", session.message
        assert full_dump(scene) == before
        histories.append({k: v for k, v in session.job.history.items() if k != "seconds"})  # wall clock aside
    assert histories[0] == histories[1] and len(histories[0]["best"]) == 3
    assert histories[0]["best"][-1] > 20  # a generation's best on copies balances as it does alone (63 at gen 1)
