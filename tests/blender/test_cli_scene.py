"""The CLI on a real .blend scene, run as a user runs it (a subprocess with bpy)."""

import subprocess
import sys
from pathlib import Path

import bpy
import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "drla", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def reach_blend(ext, tmp_path):
    from drla_ext.addon import examples

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    examples.build_transform_scene(scene)
    examples.build_transform_tree(scene)
    path = tmp_path / "reach.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


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
    from drla_ext.addon import examples

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
    import time

    scene = ROOT / "scenes" / "robot_arm" / "robot_arm.blend"
    before = scene.read_bytes()
    model = tmp_path / "arm3.json"
    t0 = time.perf_counter()
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
    assert time.perf_counter() - t0 < 60
    assert scene.read_bytes() == before, "the CLI must never write the user's .blend"


def test_play_writes_rendered_frames_of_the_first_episode(tmp_path):
    tank = ROOT / "scenes" / "tank" / "tank.blend"
    model = tmp_path / "tank.json"
    out = run_cli("train", tank, "--tree", "Tank", "--steps", "300", "--out", model, "--eval-interval", "0",
                  "--learning-starts", "100", "--quiet")
    assert out.returncode == 0, out.stderr
    frames = tmp_path / "frames"
    out = run_cli("play", tank, "--model", model, "--episodes", "2", "--frames", frames)
    assert out.returncode == 0, out.stderr
    pngs = sorted(frames.glob("frame_*.png"))
    assert 1 <= len(pngs) <= 100 and f"({len(pngs)} PNG files)" in out.stdout
    assert pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
