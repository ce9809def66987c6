"""Add > DRLA Examples > Reach (SAC, continuous): the cube reaches the goal with two Move actions with Amount, learnt
by a SAC Agent. Added from the menu's operator into a fresh file, trained through the panel's TrainSession with the
example's own settings (the user's scene bit-exact afterwards), the greedy policy reaches the goal nearly always and
by a short path; Show Network draws that policy, the exported JSON and ONNX give its actions; the CLI trains the
saved file."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from test_examples_layout import _check_tree
from test_snapshot import full_dump

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
NAME = "Reach (SAC, continuous)"
#: Greedy episodes measured, each from its own seed (the Environment node's random starts in [-3, 3]^2).
EPISODES, FIRST_SEED = 40, 1000
#: Measured 2026-11-27 on these 40 episodes (2-core machine, loaded), training seeds 0-5: after the example's 3000
#: steps all 40 reached, in 5.4 to 5.6 steps on average; after 1500 (the CLI test's run) 5.5 to 6.1, `drla train`
#: the same; after 1000, 6.1 to 6.6. Steering straight at the goal (both amounts its direction, clipped) takes 5.2;
#: random amounts reach it in 4 of 40 (15.5 steps), untrained SAC policies (agent seeds 0-2) in 4 to 9 of 40.
MIN_RATE, MAX_MEAN_STEPS = 0.95, 6.5


def _add_example(tmp_path):
    """The example from the menu's operator in a fresh empty file; its export goes to ``tmp_path``."""
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert bpy.ops.drla.add_example(name=NAME) == {'FINISHED'}
    scene = bpy.context.scene
    tree = scene.drla.tree
    export = next(n for n in tree.nodes if n.bl_idname == "DRLA_ExportJSONNode")
    export.filepath = str(tmp_path / "reach_sac.json")
    return scene, tree


def greedy_reach(scene, tree, act, episodes=EPISODES, seed=FIRST_SEED):
    """(share of episodes ending within 0.5 of the goal, mean steps of those, every observation acted on) for the
    policy ``act(obs) -> amounts``; the scene is put back afterwards."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    compiled = compiler.compile_tree(tree, scene)
    agent, goal = scene.objects["Agent"], scene.objects["Goal"]
    reached, steps, seen = 0, [], []
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            for episode in range(episodes):
                obs, _ = env.reset(seed=seed + episode)
                done, start = False, len(seen)
                while not done:  # (the Environment node ends every episode by its 50th step)
                    seen.append(obs)
                    obs, _, terminated, truncated, _ = env.step(act(obs))
                    done = terminated or truncated
                if terminated and (agent.location - goal.location).length < 0.5:
                    reached += 1
                    steps.append(len(seen) - start)
        finally:
            env.close()
    return reached / episodes, float(np.mean(steps)) if steps else float("inf"), np.array(seen, np.float32)


def test_the_menu_builds_a_continuous_reach_with_a_sac_agent(ext, tmp_path):
    from drla_ext.addon.runs import kinds
    from drla_ext.addon.tree import compiler
    from drla_ext.addon.ui import examples, examples_menu

    assert list(examples_menu.EXAMPLES)[:3] == ["Tank", "Reach (transform)", NAME]
    scene, tree = _add_example(tmp_path)
    assert list(bpy.data.scenes) == [scene] and {"Agent", "Goal"} <= set(scene.objects.keys())
    assert tree.name == "Reach SAC" and tree.use_fake_user
    assert scene.drla.message.startswith(f"Added the {NAME} example: press Train")
    moves = [(n.action_name, tuple(n.vector), n.amount) for n in tree.nodes if n.bl_idname == "DRLA_ActionNode"]
    assert moves == [("move_x", (0.5, 0.0, 0.0), True), ("move_y", (0.0, 0.5, 0.0), True)]
    compiled = compiler.compile_tree(tree, scene)
    assert kinds.of(compiled) is kinds.SAC and compiled.agent.kind == "sac"
    assert compiled.agent.hidden == [(64, "relu"), (64, "relu")]
    config = compiled.agent.config
    for key, value in examples.REACH_SAC.items():
        assert config[key] == pytest.approx(value), key
    assert (config["buffer_size"], config["batch_size"], config["learning_starts"]) == examples.REACH_SAC_REPLAY
    assert compiled.trainer.total_steps == examples.REACH_SAC_STEPS
    _check_tree(examples, tree)


def test_sac_learns_the_reach_and_its_exports_are_its_policy(ext, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from drla.onnx_io import INPUT, export_onnx
    from drla_core.io.model_io import load_model
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.ui import net_overlay
    from drla_ext.drla_core.rl.sac import SACAgent

    scene, tree = _add_example(tmp_path)
    untrained = SACAgent(*_spaces(scene, tree))
    rate, _, _ = greedy_reach(scene, tree, untrained.predict)
    assert rate <= 0.3, rate  # (the measure tells a policy that learnt nothing)

    before = full_dump(scene)
    session = TrainSession(scene, tree, seed=0, output_dir=str(tmp_path)).start()
    while session.tick(1.0):
        pass
    assert session.state == "DONE", session.message
    assert full_dump(scene) == before
    agent = session.job.agent
    assert isinstance(agent, SACAgent) and session.total_steps == 3000

    rate, mean_steps, seen = greedy_reach(scene, tree, agent.predict)
    assert rate >= MIN_RATE and mean_steps <= MAX_MEAN_STEPS, (rate, mean_steps)
    assert full_dump(scene) == before

    obs = np.concatenate([seen[::3], np.random.default_rng(0).uniform(-1.5, 1.5, (20, 4)).astype(np.float32)])
    expected = agent.predict(obs)
    shown, source, why = net_overlay.networks(scene)  # Show Network: the run's policy, as the model file holds it
    assert why == "" and source in {"trained run", "stopped run"} and len(shown) == 1, (shown, source, why)
    policy = shown[0][1]
    assert [w.shape for w in policy.weights] == [(4, 64), (64, 64), (64, 2)]
    assert np.allclose(policy.forward(obs), expected, atol=1e-6)
    model = load_model(tmp_path / "reach_sac.json")  # what the Export JSON node wrote at the end of the run
    assert model.meta["agent"] == "sac" and model.network.input_size == 4 and model.network.output_size == 2
    assert np.allclose(model.act(obs), expected, atol=1e-6)
    onnx_path = export_onnx(model, tmp_path / "reach_sac.onnx")
    session_ort = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    outputs = dict(zip([o.name for o in session_ort.get_outputs()], session_ort.run(None, {INPUT: obs})))
    assert np.allclose(outputs["action"], expected, atol=1e-5)


def _spaces(scene, tree):
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    with restored_scene(scene):
        env = build.build_env(compiler.compile_tree(tree, scene), scene)
        spaces = env.observation_space, env.action_space
        env.close()
    return spaces


def test_the_cli_trains_the_saved_example(ext, tmp_path):
    """``drla train`` of the example saved as a .blend: SAC on its tree, the model file its greedy policy, which
    reaches the goal in the file's own scene; the .blend is not written."""
    from drla_core.io.model_io import load_model

    scene, tree = _add_example(tmp_path)
    blend = tmp_path / "reach_sac.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    saved = blend.read_bytes()
    args = ["train", blend, "--tree", "Reach SAC", "--steps", "1500", "--seed", "0", "--out", tmp_path / "cli.json",
            "--quiet"]
    out = subprocess.run([sys.executable, "-m", "drla", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "SAC on Reach SAC" in out.stderr, out.stderr
    assert blend.read_bytes() == saved
    model = load_model(tmp_path / "cli.json")
    rate, mean_steps, _ = greedy_reach(bpy.context.scene, bpy.context.scene.drla.tree, model.act)
    assert rate >= MIN_RATE and mean_steps <= MAX_MEAN_STEPS, (rate, mean_steps)
