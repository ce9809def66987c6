"""A demonstration recorded by keyboard trains the tank (issue 26): the tank of scenes/tank played through the
recorder the Record Demonstration operator feeds (``KeyboardRecorder.press`` with the key names the modal gets;
the keys chosen by a person's simple rule: line up with TankB, level the cannon, fire), saved as the operator
saves it; then ``drla train --demo`` and the Trainer node's Demonstration (the panel's Train) learn from it.

At 100 steps (no TD update yet: the tank tree's replay starts learning at 1000) the run that cloned the
demonstration already hits TankB again and again greedily; the same run without it does not."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from test_demos_keyframes import drla
from test_snapshot import full_dump

bpy = pytest.importorskip("bpy")

TANK_BLEND = Path(__file__).resolve().parents[2] / "scenes" / "tank" / "tank.blend"
DEMO_STEPS = 300
pytestmark = pytest.mark.skipif(not TANK_BLEND.exists(), reason="scenes/tank/tank.blend not built yet")


def person(scene) -> str:
    """The key a person presses next: 1 / 2 to line up with TankB (a 0.5 move), 6 / 7 to level the cannon, 8 to
    fire (the scene as the viewport shows it, what the person sees)."""
    a, b, cannon = (scene.objects[n] for n in ("TankA", "TankB", "Cannon"))
    pitch = cannon.rotation_euler[0]
    if abs(pitch) > 1e-3:
        return "SEVEN" if pitch > 0 else "SIX"
    dx = b.matrix_world.translation.x - a.matrix_world.translation.x
    return "ONE" if dx > 0.25 else "TWO" if dx < -0.25 else "EIGHT"


@pytest.fixture(scope="module")
def recorded(ext, tmp_path_factory):
    """tank.blend copied to a temporary folder, a keyboard demonstration recorded beside it: (blend, demo)."""
    from drla_ext.addon.runs import demos_record

    folder = tmp_path_factory.mktemp("tank_demo")
    blend = folder / "tank.blend"
    shutil.copy(TANK_BLEND, blend)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    before = full_dump(scene)
    rec = demos_record.KeyboardRecorder(scene, bpy.data.node_groups["Tank"], bpy.data.filepath).start()
    while rec.steps < DEMO_STEPS:
        assert rec.press(person(scene))
    path = rec.stop()
    assert path == folder / "tank_Tank_keyboard.npz" and full_dump(scene) == before  # the scene back as it was
    return blend, path


def greedy_hits(blend: Path, model, episodes: int = 5, seed: int = 123) -> tuple[int, int]:
    """(hits, shots) of ``model``'s (a model file's) greedy policy in ``blend``'s tank over ``episodes`` episodes."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler
    from drla_ext.drla_core.io.model_io import load_model

    model = load_model(model) if isinstance(model, Path) else model
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    compiled = compiler.compile_tree(bpy.data.node_groups["Tank"], scene)
    hits = shots = 0
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            obs, _ = env.reset(seed=seed)
            for _ in range(episodes):
                while True:
                    obs, _r, terminated, truncated, info = env.step(model.act(obs))
                    if "hit" in info:
                        shots += 1
                        hits += int(info["hit"])
                    if terminated or truncated:
                        obs, _ = env.reset()
                        break
        finally:
            env.close()
    return hits, shots


def test_the_recording_is_the_keys_pressed(recorded):
    from drla_ext.drla_core.io.demos import load_demo

    _, path = recorded
    demo = load_demo(path)
    assert demo.recorded_by == "keyboard" and len(demo) == DEMO_STEPS and demo.n_episodes == 3
    fired = demo.actions == 7
    assert set(demo.actions.tolist()) <= {0, 1, 5, 6, 7} and fired.sum() >= 40  # measured: 47 shots
    assert demo.rewards[fired].min() == 1.0  # every shot of the person's rule hits
    assert np.sum(demo.rewards) == fired.sum()


def test_drla_train_demo_hits_at_once_where_training_alone_does_not(recorded, tmp_path):
    blend, path = recorded
    runs = {}
    for name, extra in (("demo", ["--demo", path]), ("alone", [])):
        out = tmp_path / f"{name}.json"
        result = drla("train", blend, *extra, "--steps", "100", "--seed", "0", "--eval-interval", "0", "--quiet",
                      "--out", out, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        runs[name] = (result, greedy_hits(blend, out))
    demo_run, (hits, shots) = runs["demo"]
    assert f"demonstration {path}: {DEMO_STEPS} steps, 3 episodes; margin_loss" in demo_run.stderr
    assert "agreement 1," in demo_run.stderr or "agreement 0.99" in demo_run.stderr
    alone_hits, _ = runs["alone"][1]
    print(f"greedy over 5 episodes after 100 steps: with the demonstration {hits} hits of {shots} shots, "
          f"without {alone_hits} hits")
    assert hits >= 10 and hits / shots >= 0.8  # measured: 39 of 39 (seed 0, 5 episodes)
    assert alone_hits <= 2  # measured: 0


def test_the_trainers_demonstration_trains_from_the_panel_and_says_so(recorded, tmp_path):
    """The Train button's run (TrainSession) on a Trainer whose Demonstration is the recorded file: it learns from it
    first, the sidebar says so, the model it stores hits, and the scene is exactly as before."""
    from drla_ext.addon.runs import model_store, sessions
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.ui import panels

    blend, path = recorded
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    tree = bpy.data.node_groups["Tank"]
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_TrainerNode")
    trainer.demonstration = "//" + path.name
    scene.drla.output_dir = str(tmp_path)
    before = full_dump(scene)
    session = TrainSession(scene, tree, seed=0, total_steps=100).start()
    try:
        text = panels.demonstration_text(scene)
        assert text == (f"Learnt from the demonstration {path.name} ({DEMO_STEPS} steps) first: behavioural "
                        f"cloning, 100% of its actions matched; {DEMO_STEPS - 3} transitions in the replay"), text
        # (the 3 episodes' last steps are truncated, without a next observation: not replayed)
        while session.tick(1.0):
            pass
        assert session.state == "DONE", session.message
        assert full_dump(scene) == before
        assert panels.demonstration_text(scene) == text  # still said after the run
        model = model_store.load_stored_model(tree)
    finally:
        sessions.discard(scene)
    hits, shots = greedy_hits(blend, model)
    assert hits >= 10 and hits / shots >= 0.8
