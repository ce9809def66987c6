"""The CLI on a real .blend scene, run as a user runs it (a subprocess with bpy)."""

import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import bpy
import pytest

from drla_core.io.model_io import load_model

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "drla"


def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "drla", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def no_noise(out):
    """No traceback, and not the three EGL_BAD_MATCH lines Blender's GPU set-up prints though rendering works."""
    assert "Traceback" not in out.stderr, out.stderr
    assert "EGL Error" not in out.stderr and "EGL_BAD_MATCH" not in out.stderr + out.stdout, out.stderr


def test_train_then_play_a_scene(reach_blend, tmp_path):
    before = reach_blend.read_bytes()
    model = tmp_path / "out" / "reach.json"
    out = run_cli("train", reach_blend, "--steps", "800", "--seed", "1", "--out", model, "--eval-interval", "400",
                  "--eval-episodes", "2", "--learning-starts", "200", "--train-freq", "8", "--gradient-steps", "2")
    assert out.returncode == 0, out.stderr
    assert "trained 800 steps" in out.stdout
    assert model.is_file() and (tmp_path / "out" / "reach_report.png").is_file()
    out = run_cli("play", reach_blend, "--model", model, "--episodes", "2")
    assert out.returncode == 0, out.stderr
    assert "Reach: mean return" in out.stdout
    assert reach_blend.read_bytes() == before, "the CLI must never write the user's .blend"


def test_wrong_tree_name_lists_the_trees(reach_blend):
    out = run_cli("train", reach_blend, "--tree", "Nope", "--steps", "10")
    assert out.returncode == 2
    assert "no DRLA tree named 'Nope'" in out.stderr and "Reach" in out.stderr


def test_broken_tree_reports_the_node(ext, tmp_path):
    from drla_ext.addon.ui import examples

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    examples.build_transform_scene(scene)
    tree = examples.build_transform_tree(scene)
    state = next(n for n in tree.nodes if n.bl_idname == "DRLA_StateNode")
    for link in list(state.inputs[0].links):
        tree.links.remove(link)
    path = tmp_path / "broken.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    out = run_cli("train", path, "--steps", "10")
    assert out.returncode == 2
    assert "has problems" in out.stderr and f"node {state.name!r}" in out.stderr
    assert "Traceback" not in out.stderr


def test_train_then_play_learned_ik_on_the_robot_arm(tmp_path):
    import json

    scene = ROOT / "scenes" / "robot_arm" / "robot_arm.blend"
    before = scene.read_bytes()
    model = tmp_path / "arm3.json"
    out = run_cli("train", scene, "--tree", "Arm3", "--steps", "300", "--seed", "2", "--out", model)
    assert out.returncode == 0, out.stderr
    assert "trained 300 steps" in out.stdout and "network + refinement: median" in out.stdout
    assert "300/300" in out.stderr  # progress lines
    data = json.loads(model.read_text())
    assert data["kind"] == "ik" and data["extra"]["arm"]["bones"] == ["Base", "Upper", "Fore"]
    assert (tmp_path / "arm3_report.png").is_file()
    out = run_cli("play", scene, "--tree", "Arm3", "--model", model, "--episodes", "5", "--seed", "3")
    assert out.returncode == 0, out.stderr
    assert "Arm3: 5 random reachable targets" in out.stdout and "under 1 mm" in out.stdout
    out = run_cli("play", scene, "--tree", "Arm6", "--model", model, "--episodes", "2")
    assert out.returncode == 2 and "trained for bones" in out.stderr
    assert scene.read_bytes() == before, "the CLI must never write the user's .blend"


def test_play_writes_rendered_frames_of_the_first_episode(tmp_path):
    tank = ROOT / "scenes" / "tank" / "tank.blend"
    model = tmp_path / "tank.json"
    out = run_cli("train", tank, "--tree", "Tank", "--steps", "300", "--out", model, "--eval-interval", "0",
                  "--learning-starts", "100", "--quiet")
    assert out.returncode == 0, out.stderr
    frames = tmp_path / "frames"
    no_noise(out)
    out = run_cli("play", tank, "--model", model, "--episodes", "2", "--frames", frames)
    assert out.returncode == 0, out.stderr
    no_noise(out)
    assert "Tank: mean return" in out.stdout and "/episode, shots " in out.stdout and "hit rate" in out.stdout
    pngs = sorted(frames.glob("frame_*.png"))
    assert 1 <= len(pngs) <= 100 and f"({len(pngs)} PNG files)" in out.stdout
    assert pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_drla_command_trains_a_scene_from_another_folder(reach_blend, tmp_path):
    """The console script from `make setup`, run outside the repository (the scene commands load the add-on)."""
    work = tmp_path / "elsewhere"
    work.mkdir()
    out = subprocess.run([str(SCRIPT), "train", reach_blend, "--steps", "150", "--learning-starts", "50", "--quiet",
                          "--eval-interval", "0", "--out", "reach.json"], cwd=work, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "trained 150 steps" in out.stdout and (work / "reach.json").is_file()


@pytest.mark.parametrize("case", ["folder", "missing", "not a blend", "no tree"])
def test_a_wrong_blend_is_one_clear_line(case, ext, tmp_path):
    path = tmp_path / "scene.blend"
    if case == "folder":
        path.mkdir()
        expected = f"error: {path} is a folder, not a .blend file"
    elif case == "missing":
        expected = f"error: no such .blend file: {path}"
    elif case == "not a blend":
        path.write_text("hello")
        expected = f"error: Blender could not open {path}: File format is not supported"
    else:
        bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
        bpy.ops.wm.save_as_mainfile(filepath=str(path))
        expected = f"error: {path} has no DRLA node tree: open it in Blender and add one"
    for argv in (["train", path, "--steps", "10"], ["play", path, "--model", ROOT / "missing.json"]):
        out = run_cli(*argv)
        assert out.returncode == 2
        if argv[0] == "play":  # the model is read first
            assert out.stderr.strip().endswith(f"error: no such model file: {ROOT / 'missing.json'}")
        else:
            assert expected in out.stderr, out.stderr
        assert "Traceback" not in out.stderr


def test_ctrl_c_during_scene_training_saves_the_model_so_far(reach_blend, tmp_path):
    before = reach_blend.read_bytes()
    model = tmp_path / "reach.json"
    proc = subprocess.Popen([sys.executable, "-m", "drla", "train", reach_blend, "--steps", "10000000", "--out", model,
                             "--checkpoint-interval", "100", "--learning-starts", "50", "--eval-interval", "0"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = tmp_path / "reach_step100.json"
    t0 = time.monotonic()
    while not first.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < 120, "no checkpoint"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "Ctrl-C: stopping after this step" in err
    saved = load_model(model)
    steps = saved.meta["training_steps"]
    assert saved.meta["interrupted"] is True and steps >= 100
    assert f"interrupted at step {steps} of 10000000" in out
    assert f"checkpoint: {tmp_path / 'reach_ckpt.npz'}" in out  # the whole state: --resume continues it
    assert f"--resume {tmp_path / 'reach_ckpt.npz'}" in out.split("continue with: ", 1)[1]
    assert (tmp_path / "reach_report.png").is_file()
    assert reach_blend.read_bytes() == before


def test_demo_hint_is_a_command_that_works(tmp_path):
    """The demo's closing line names a command that runs in a plain shell, from where the user is."""
    out = subprocess.run([sys.executable, "-m", "drla", "demo", "--steps", "200", "--out", "demo_out"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    no_noise(out)
    hint = out.stdout.strip().splitlines()[-1]
    assert hint.startswith("replay the agent with: ") and "python -m drla" not in hint, hint
    command = shlex.split(hint.removeprefix("replay the agent with: "))
    played = subprocess.run(command + ["--episodes", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert played.returncode == 0, played.stderr
    assert "Tank: mean return" in played.stdout


def test_a_scene_run_resumes_from_its_checkpoint_at_its_step_count_and_curve(reach_blend, tmp_path):
    """A scene is not restorable mid-episode: the resumed run starts a fresh episode at the checkpoint's step
    count, with the agent, its memory and the curve carried on; the IK tree's kind is refused."""
    from drla_core.rl.checkpoint import read_checkpoint

    before = reach_blend.read_bytes()
    model = tmp_path / "reach.json"
    common = ["--eval-interval", "0", "--learning-starts", "100", "--train-freq", "8", "--gradient-steps", "2",
              "--quiet", "--out", model]
    out = run_cli("train", reach_blend, "--steps", "400", "--checkpoint-interval", "200", *common)
    assert out.returncode == 0, out.stderr
    ckpt = tmp_path / "reach_ckpt.npz"
    first = read_checkpoint(ckpt)
    assert first.steps == 400 and first.meta["env"]["restorable"] is False
    assert first.meta["buffer"]["stored"] == "all" and first.meta["buffer"]["size"] == 400

    out = run_cli("train", reach_blend, "--resume", ckpt, "--steps", "700", "--learning-rate", "0.001", "--quiet")
    assert out.returncode == 0, out.stderr
    no_noise(out)
    assert f"resuming {ckpt} at step 400 of 700" in out.stderr and "learning_rate:" in out.stderr
    assert "trained 700 steps" in out.stdout
    assert load_model(model).meta["training_steps"] == 700
    later = read_checkpoint(ckpt)  # written at step 600 by the resumed run
    assert later.steps == 600 and later.meta["agent"]["num_timesteps"] == 600
    old, new = first.meta["history"], later.meta["history"]
    n = len(old["episode_returns"])
    assert new["episode_returns"][:n] == old["episode_returns"] and len(new["episode_returns"]) > n
    assert new["episode_end_steps"][:n] == old["episode_end_steps"] and new["episode_end_steps"][n] > 400
    assert new["setting_changes"][0][:2] == [400, "learning_rate"]
    assert reach_blend.read_bytes() == before

    arm = ROOT / "scenes" / "robot_arm" / "robot_arm.blend"
    out = run_cli("train", arm, "--tree", "Arm3", "--resume", ckpt, "--steps", "10")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"--resume: {ckpt} is a run of tree 'Reach', not 'Arm3'" in out.stderr


def test_a_scene_run_with_copies_resumes_with_as_many_copies(reach_blend, tmp_path):
    from drla_core.rl.checkpoint import read_checkpoint

    model = tmp_path / "reach.json"
    out = run_cli("train", reach_blend, "--steps", "200", "--copies", "2", "--checkpoint-interval", "100",
                  "--eval-interval", "0", "--learning-starts", "50", "--quiet", "--out", model)
    assert out.returncode == 0, out.stderr
    ckpt = tmp_path / "reach_ckpt.npz"
    assert read_checkpoint(ckpt).meta["run"]["num_envs"] == 2
    out = run_cli("train", reach_blend, "--resume", ckpt, "--copies", "3", "--quiet")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "the checkpoint is of a run with 2 environment copies, this run has 3" in out.stderr
    out = run_cli("train", reach_blend, "--resume", ckpt, "--steps", "300", "--quiet")  # the checkpoint's 2 copies
    assert out.returncode == 0, out.stderr
    assert f"resuming {ckpt} at step 200 of 300" in out.stderr and "trained 300 steps" in out.stdout
    later = read_checkpoint(ckpt)
    assert later.steps == 300 and later.meta["agent"]["num_timesteps"] == 300
