"""A faster machine must not change what happens (issue 28), for the Blender kinds: every periodic action fires at
its steps or generations however many of them fit into one time slice.

Each case runs with one slice so long that the whole run happens in one call (``DRLA_SLICE_S=3600`` for
``drla train SCENE``, ``tick(3600)`` in the panel) and with empty slices (``0``: each call takes one step, or one
physics step of a generation's episodes, most calls of an evolution finishing no generation), and compares the
files written and what they hold (wall-clock figures aside).

The periodic actions of the Blender kinds, and where each is checked here:

* DQN on a scene, one copy or several (``drla train SCENE``): evaluations every ``--eval-interval`` steps and
  checkpoints every ``--checkpoint-interval`` steps (``<out>_step<N>.json`` and ``<out>_ckpt.npz``):
  ``test_cli_periodic_files``.
* Evolution (``SceneEvolutionJob``, a rigid-body scene) and co-evolution (``SceneCoevolutionJob``, pac-man):
  the champion and the population every ``--checkpoint-interval`` generations (``<out>_step<N>.json``,
  ``<out>_ckpt.json``): ``test_cli_periodic_files``.
* Workers (``WorkersRun``): a weight push to a worker with each chunk it returns, and checkpoints every
  ``--checkpoint-interval`` steps, at the row of experience that reaches the multiple; the README's
  ``--resume <out>_ckpt.npz`` continues it (issue 23): ``test_workers_checkpoint_and_resume``.
* The panel (``TrainSession.tick``): the Trainer node's Evaluate Every and Checkpoint Every
  (``<tree>_checkpoint.json``), and the live curve's points (the run's history): ``test_panel_periodic_actions``.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import bpy
import pytest

ROOT = Path(__file__).resolve().parents[2]
CARTPOLE_RB = ROOT / "scenes" / "cartpole_rb" / "cartpole_rb.blend"
PACMAN = ROOT / "scenes" / "pacman" / "pacman.blend"
SLICES = {"one call": 3600.0, "empty slices": 0.0}
#: Wall-clock figures: the only things allowed to differ between two slicings of one run.
CLOCK_KEYS = {"seconds", "train_seconds", "eval_seconds", "cpu_seconds", "eval_cpu_seconds", "eval_train_seconds",
              "eval_train_cpu_seconds", "created", "wall_seconds", "elapsed"}


def clean(data):
    if isinstance(data, dict):
        return {k: clean(v) for k, v in data.items() if k not in CLOCK_KEYS}
    if isinstance(data, list):
        return [clean(v) for v in data]
    return data


def files(folder: Path) -> dict:
    """Every file under ``folder`` by name: JSON as data, a checkpoint as its meta and arrays (wall-clock figures
    aside); report pictures print the wall time and are left out."""
    from drla_ext.drla_core.checkpoint import read_checkpoint

    out: dict = {}
    for path in sorted(folder.iterdir()):
        if path.suffix == ".json":
            out[path.name] = clean(json.loads(path.read_text()))
        elif path.suffix == ".npz":
            ckpt = read_checkpoint(path)
            out[path.name] = (clean(ckpt.meta), {k: a.tobytes() for k, a in sorted(ckpt.arrays.items())})
    return out


def cli(blend, folder: Path, slice_s: float, *flags) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "drla", "train", str(blend), "--seed", "0", "--quiet",
                          "--out", str(folder / "cp.json"), *map(str, flags)], cwd=ROOT, capture_output=True,
                         text=True, timeout=600, env={**os.environ, "DRLA_SLICE_S": str(slice_s)})
    assert out.returncode == 0, out.stderr
    return out


CASES = {
    "dqn": (None, ["--steps", "300", "--eval-interval", "100", "--eval-episodes", "2", "--learning-starts", "50",
                   "--checkpoint-interval", "100"], [100, 200, 300], "cp_ckpt.npz"),
    "dqn on 2 copies": (None, ["--steps", "300", "--copies", "2", "--eval-interval", "100", "--eval-episodes", "2",
                               "--learning-starts", "50", "--checkpoint-interval", "100"], [100, 200, 300],
                        "cp_ckpt.npz"),
    "evolution": (CARTPOLE_RB, ["--steps", "3", "--checkpoint-interval", "1"], [1, 2, 3], "cp_ckpt.json"),
    "co-evolution": (PACMAN, ["--tree", "PacMan", "--steps", "2", "--checkpoint-interval", "1"], [1, 2],
                     "cp_ckpt.json"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_cli_periodic_files(case, reach_blend, tmp_path):
    blend, flags, steps, ckpt = CASES[case]
    blend = blend or reach_blend
    got = {}
    for label, seconds in SLICES.items():
        folder = tmp_path / "run"  # the same paths each time: a checkpoint records where it was written
        cli(blend, folder, seconds, *flags)
        got[label] = files(folder)
        shutil.rmtree(folder)
    one, empty = got["one call"], got["empty slices"]
    assert sorted(n for n in one if n.startswith("cp_step")) == sorted(f"cp_step{s}.json" for s in steps)
    assert ckpt in one and sorted(one) == sorted(empty)
    for name in one:
        assert one[name] == empty[name], name


def test_workers_checkpoint_and_resume(reach_blend, tmp_path):
    """``--workers 2 --checkpoint-interval 200`` writes the model at steps 200, 400 and 600 and the learner's
    full state, whatever the slice; ``--resume <out>_ckpt.npz`` (the README's next line) continues it, without
    workers or with them. (Which worker's chunk arrives first differs run to run: the names are compared.)"""
    from drla_ext.drla_core.checkpoint import read_checkpoint

    for label, seconds in SLICES.items():
        folder = tmp_path / label.replace(" ", "_")
        out = cli(reach_blend, folder, seconds, "--workers", "2", "--steps", "600", "--eval-interval", "0",
                  "--learning-starts", "100", "--checkpoint-interval", "200")
        assert "trained 600 steps" in out.stdout
        assert sorted(p.name for p in folder.glob("cp_step*.json")) == ["cp_step200.json", "cp_step400.json",
                                                                         "cp_step600.json"], label
        ckpt = read_checkpoint(folder / "cp_ckpt.npz")
        assert ckpt.steps == 600 and ckpt.meta["run"]["checkpoint_interval"] == 200
        assert json.loads((folder / "cp_step400.json").read_text())["meta"]["steps"] == 400
        # the run before the last checkpoint: the previous file holds step 400
        assert read_checkpoint(folder / "cp_ckpt.prev.npz").steps == 400
    folder = tmp_path / "one_call"
    resumed = subprocess.run([sys.executable, "-m", "drla", "train", str(reach_blend), "--quiet", "--steps", "800",
                              "--resume", str(folder / "cp_ckpt.prev.npz")], cwd=ROOT, capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "at step 400 of 800" in resumed.stderr and "trained 800 steps" in resumed.stdout
    assert read_checkpoint(folder / "cp_ckpt.npz").steps == 800  # --checkpoint-interval 200 kept
    with_workers = subprocess.run([sys.executable, "-m", "drla", "train", str(reach_blend), "--quiet", "--steps",
                                   "1000", "--workers", "2", "--resume", str(folder / "cp_ckpt.npz")], cwd=ROOT,
                                  capture_output=True, text=True, timeout=600)
    assert with_workers.returncode == 0, with_workers.stderr
    assert "at step 800 of 1000" in with_workers.stderr and "trained 1000 steps" in with_workers.stdout
    assert (folder / "cp_step1000.json").is_file()


class _Record:
    """A training callback keeping each evaluation's and checkpoint's step (and the checkpoint file's content)."""

    def __init__(self) -> None:
        self.events: list = []

    def on_start(self, run):
        pass

    def on_step(self, run):
        return None

    def on_episode_end(self, run):
        pass

    def on_eval(self, run):
        self.events.append(("eval", run.steps, run.history.evals[-1][1]))

    def on_checkpoint(self, run, path):
        self.events.append(("checkpoint", run.steps, Path(path).name, clean(json.loads(Path(path).read_text()))))

    def on_end(self, run):
        pass


def test_panel_periodic_actions(empty_scene, tmp_path):
    """The sidebar's Train with Evaluate Every 100 and Checkpoint Every 150 on a 450-step Reach run: the same
    evaluations and checkpoints (each file as it was written) at the same steps, the same curve, whether one tick
    does it all or every tick takes one step."""
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.ui import examples

    scene = empty_scene
    examples.build_transform_scene(scene)
    tree = examples.build_transform_tree(scene, total_steps=450)
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_TrainerNode")
    trainer.eval_interval, trainer.eval_episodes, trainer.checkpoint_interval = 100, 2, 150
    scene.drla.tree = tree
    got = {}
    folder = tmp_path / "run"  # not there yet: the first checkpoint creates it
    trainer.output_path = str(folder)
    for label, seconds in SLICES.items():
        sess = TrainSession(scene, tree, seed=0, output_dir=str(folder)).start()
        record = _Record()
        sess.job.callbacks = (*sess.job.callbacks, record)
        ticks = 0
        while sess.tick(seconds):
            ticks += 1
        assert sess.state == "DONE", scene.drla.error
        assert ticks == (0 if seconds else 449)  # (the last tick ends the run and returns False)
        got[label] = (record.events, sess.job.history.to_dict(), sess.job.agent.q_network.params.tobytes())
        sessions.discard_all()
        shutil.rmtree(folder)
    one, empty = got["one call"], got["empty slices"]
    # evaluations on the training scene wait for the episode under way to end; checkpoints are at their steps
    assert [e[1] for e in one[0] if e[0] == "checkpoint"] == [150, 300, 450]
    assert len([e for e in one[0] if e[0] == "eval"]) >= 3
    assert one[0] == empty[0]
    assert clean(one[1]) == clean(empty[1]) and one[2] == empty[2]
    assert bpy.context.scene == scene
