"""``drla train SCENE --workers W`` (issue 13): spawned Blender processes gather the experience, this process
learns; a worker killed with SIGKILL is replaced and the run still trains every step; the .blend on disk is
never written."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import bpy
import pytest

ROOT = Path(__file__).resolve().parents[2]


def train(blend, out, *flags):
    return [sys.executable, "-m", "drla", "train", str(blend), "--out", str(out), "--eval-interval", "0",
            "--learning-starts", "100", *flags]


def test_two_workers_with_copies_train_every_step(reach_blend, tmp_path):
    before = reach_blend.read_bytes()
    out = subprocess.run(train(reach_blend, tmp_path / "r.json", "--workers", "2", "--copies", "2", "--steps", "1500"),
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "trained 1500 steps" in out.stdout and "with 2 worker processes" in out.stdout
    assert "workers 2 (4 copies)" in out.stderr  # the progress bar: 2 processes of 2 copies each
    assert (tmp_path / "r.json").is_file() and (tmp_path / "r_report.png").is_file()
    assert reach_blend.read_bytes() == before


def test_checkpoints_with_workers_are_refused_not_silently_dropped(reach_blend, tmp_path):
    out = subprocess.run(train(reach_blend, tmp_path / "r.json", "--workers", "2", "--checkpoint-interval", "100"),
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "error: --checkpoint-interval: not with --workers" in out.stderr, out.stderr
    assert not (tmp_path / "r.json").exists()


def test_a_killed_worker_is_replaced_and_the_run_finishes(reach_blend, tmp_path):
    proc = subprocess.Popen(train(reach_blend, tmp_path / "r.json", "--workers", "2", "--steps", "20000"), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid, lines, t0 = None, [], time.monotonic()
    while pid is None and time.monotonic() - t0 < 120:  # the learner names each worker's process
        line = proc.stderr.readline()
        lines.append(line)
        if "worker 0: process" in line:
            pid = int(re.search(r"process (\d+)", line).group(1))
    assert pid is not None, "".join(lines)
    while time.monotonic() - t0 < 120 and not any("[" in line and "/20000" in line for line in lines):
        lines.append(proc.stderr.readline())  # training has begun: the progress bar moved
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    err = "".join(lines) + err
    assert proc.returncode == 0, err
    assert f"worker 0 stopped (exit code {-signal.SIGKILL})" in err and "starting another in its place" in err
    assert "trained 20000 steps" in out and "1 worker restart(s)" in out


@pytest.mark.slow
def test_the_workers_run_as_ray_actors_on_a_local_ray(reach_blend, tmp_path):
    """--ray: the same collectors as Ray actors, on a local Ray instance started for the run with 2 CPUs."""
    pytest.importorskip("ray", reason="the ray package is an extra: pip install 'drla[ray]'")
    before = reach_blend.read_bytes()
    out = subprocess.run(train(reach_blend, tmp_path / "r.json", "--workers", "2", "--ray", "--steps", "1200"),
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "trained 1200 steps" in out.stdout and "with 2 Ray actors" in out.stdout
    assert (tmp_path / "r.json").is_file() and reach_blend.read_bytes() == before


def test_the_panel_trains_with_worker_processes_and_blender_stays_free(empty_scene, tmp_path):
    """Workers chosen in the sidebar: the learner's ticks return within their time box while two background
    processes gather the experience (on a copy of the file); the curve fills; Stop ends the processes; Resume
    starts new ones; the run finishes and the scene is as before."""
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.ui import examples

    scene = empty_scene
    tree = examples.build_transform_tree(scene, total_steps=1500)
    scene.drla.workers = 2
    bpy.context.view_layer.update()
    places = {ob.name: tuple(ob.matrix_world.translation) for ob in scene.objects}
    sess = TrainSession(scene, tree, output_dir=str(tmp_path)).start()
    assert (tmp_path / "Reach_workers.blend").is_file()
    ticks = []
    while sess.steps < 500:
        t0 = time.perf_counter()
        assert sess.tick(0.05), scene.drla.error
        ticks.append(time.perf_counter() - t0)
    assert max(ticks) < 2.0  # each tick waits for news at most its time box (plus one chunk's learning)
    assert "Workers\t2" in scene.drla.status and sess.job.history.episode_returns
    processes = [w.handle[0] for w in sess.job.workers]
    sess.stop()
    assert all(p.poll() is not None for p in processes)  # the workers ended with Stop
    sess.resume()
    sess.run_blocking()
    assert sess.state == "DONE" and sess.steps == 1500, scene.drla.error
    assert all(w.handle[0].poll() is not None for w in sess.job.workers)
    assert {ob.name: tuple(ob.matrix_world.translation) for ob in scene.objects} == places
