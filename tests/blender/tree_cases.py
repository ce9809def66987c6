"""What the PPO, SAC and Evolution cart-pole trees' tests share: the committed .blend is what its build script
builds; the CLI trains, resumes and plays a tree; a CLI run killed with SIGKILL mid-episode and resumed from its
checkpoint ends with the model the uninterrupted run ends with."""

import importlib.util
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import bpy
from drla_core.rl.checkpoint import read_checkpoint

ROOT = Path(__file__).resolve().parents[2]
CARTPOLE_RB = ROOT / "scenes" / "cartpole_rb"


def scene_builder(name: str):
    """scenes/NAME/build_NAME.py as a module (it builds the scene and its trees)."""
    spec = importlib.util.spec_from_file_location(f"build_{name}", ROOT / "scenes" / name / f"build_{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cartpole_builder():
    return scene_builder("cartpole_rb")


def _diff(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _diff(a.get(k), b.get(k), f"{path}/{k}")
        return out
    return [] if a == b else [f"{path}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}"]


def assert_rebuild_matches(builder, tmp_path, blend: Path, flag: str = "", **build_kw) -> dict:
    """``builder.build`` (scenes/cartpole_rb/build_cartpole_rb.py) writes what ``blend`` holds; returns the dump."""
    builder.build(tmp_path / blend.name, **build_kw)
    rebuilt = json.loads(json.dumps(builder.dump()))
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    committed = json.loads(json.dumps(builder.dump()))
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    rebuild = f"make setup-bpy45 && .venv-bpy45/bin/python scenes/cartpole_rb/build_cartpole_rb.py{flag}"
    diffs = _diff(rebuilt, committed)
    assert not diffs, f"{blend.name} is stale; rebuild it with `{rebuild}`:\n" + "\n".join(diffs[:20])
    assert rebuilt == committed, f"{blend.name} is stale; rebuild it with `{rebuild}`"
    return committed


def drla(*args, **kw):
    """``python -m drla ARGS`` from the checkout, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "drla", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, **kw)


def assert_cli_trains_resumes_and_plays(blend: Path, label: str, agent: str, tmp_path: Path) -> None:
    """``drla train`` trains ``blend``'s tree (``label``: "PPO on CartPole PPO") with checkpoints, ``--resume``
    continues it, ``drla play`` plays its model, ``--workers`` is refused; the .blend file is not changed."""
    before = blend.read_bytes()
    model = tmp_path / "m.json"
    out = drla("train", blend, "--steps", "150", "--eval-interval", "0", "--checkpoint-interval", "100", "--quiet",
               "--out", model)
    assert out.returncode == 0, out.stderr
    assert label in out.stderr and json.loads(model.read_text())["meta"]["agent"] == agent
    out = drla("train", blend, "--resume", tmp_path / "m_ckpt.npz", "--steps", "200", "--quiet", "--out",
               tmp_path / "r.json")
    assert out.returncode == 0, out.stderr
    assert "at step 150 of 200" in out.stderr or "at step 100 of 200" in out.stderr, out.stderr
    out = drla("play", blend, "--model", model, "--episodes", "1")
    assert out.returncode == 0, out.stderr
    assert "mean return" in out.stdout
    out = drla("train", blend, "--steps", "10", "--workers", "1")
    assert out.returncode == 2 and "learns in this process only" in out.stderr
    assert blend.read_bytes() == before


def without_created(path: Path) -> str:
    """A model file's text without its creation time (the one thing two identical runs write differently)."""
    text = path.read_text()
    assert len(re.findall(r'"created": ?"', text)) == 1
    return re.sub(r'"created": ?"[^"]*"', "", text)


def assert_sigkilled_run_resumes_bit_exact(blend: Path, tmp_path: Path, steps: int = 600, every: int = 130) -> None:
    """Train ``blend`` ``steps`` steps whole, and again killed with SIGKILL after a checkpoint (every ``every``
    steps, each one mid-episode) then ``--resume`` d: the two model files are the same, byte for byte (but their
    creation times), and so are the checkpoints' curves."""
    train = ["train", blend, "--steps", steps, "--checkpoint-interval", every, "--eval-interval", "0", "--quiet"]
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    out = drla(*train, "--out", whole / "m.json")
    assert out.returncode == 0, out.stderr
    ends = read_checkpoint(whole / "m_ckpt.npz").meta["history"]["episode_end_steps"]
    assert not set(ends) & set(range(every, steps, every)), "a checkpoint falls on an episode's end"

    proc = subprocess.Popen([sys.executable, "-m", "drla", *map(str, train), "--out", str(killed / "m.json")],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ckpt = killed / "m_ckpt.npz"
    t0 = time.monotonic()
    while not ckpt.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < 120, "no checkpoint appeared"
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert not (killed / "m.json").exists()
    saved = read_checkpoint(ckpt)
    at = saved.steps
    assert every <= at < steps and saved.meta["run"]["has_obs"]  # mid-episode: the scene's episode is replayed
    assert len(saved.arrays["env.0.replay_actions"]) == saved.meta["run"]["episode_length"] > 0

    out = drla("train", blend, "--resume", ckpt, "--quiet")
    assert out.returncode == 0, out.stderr
    assert f"resuming {ckpt} at step {at} of {steps}" in out.stderr
    assert without_created(whole / "m.json") == without_created(killed / "m.json")
    a, b = read_checkpoint(whole / "m_ckpt.npz"), read_checkpoint(killed / "m_ckpt.npz")
    assert a.steps == b.steps and a.meta["history"]["episode_returns"] == b.meta["history"]["episode_returns"]
