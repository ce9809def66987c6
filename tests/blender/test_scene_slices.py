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
  ``--checkpoint-interval`` steps, at the row of experience that reaches the multiple: exactly, on in-process
  collectors (``test_workers_run_weight_pushes_and_checkpoints_exactly``), and with real worker processes, where
  the README's ``--resume <out>_ckpt.npz`` continues it (issue 23): ``test_workers_checkpoint_and_resume``.
* The command line's own lines: a progress line at each 10 % of ``drla train SCENE`` (not on a terminal):
  ``test_cli_periodic_files``.
* The panel (``TrainSession.tick``): the Trainer node's Evaluate Every and Checkpoint Every
  (``<tree>_checkpoint.json``), and the live curve's points (the run's history): ``test_panel_periodic_actions``;
  with the sidebar's Workers, Checkpoint Every: ``test_panel_workers_checkpoint_every``.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
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
    from drla_ext.drla_core.rl.checkpoint import read_checkpoint

    out: dict = {}
    for path in sorted(folder.iterdir()):
        if path.suffix == ".json":
            out[path.name] = clean(json.loads(path.read_text()))
        elif path.suffix == ".npz":
            ckpt = read_checkpoint(path)
            out[path.name] = (clean(ckpt.meta), {k: a.tobytes() for k, a in sorted(ckpt.arrays.items())})
    return out


def cli(blend, folder: Path, slice_s: float, *flags) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "drla", "train", str(blend), "--seed", "0",
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
    lines = {}
    for label, seconds in SLICES.items():
        folder = tmp_path / "run"  # the same paths each time: a checkpoint records where it was written
        out = cli(blend, folder, seconds, *flags)
        got[label] = files(folder)
        lines[label] = re.findall(r"\] +(\d+)/\d+ \|", out.stderr)  # the progress lines' steps (not a terminal)
        shutil.rmtree(folder)
    one, empty = got["one call"], got["empty slices"]
    total = steps[-1]
    assert lines["one call"] == lines["empty slices"] == [str(-(-d * total // 10)) for d in range(1, 11)
                                                          if d == 1 or -(-d * total // 10) > -(-(d - 1) * total // 10)]
    assert sorted(n for n in one if n.startswith("cp_step")) == sorted(f"cp_step{s}.json" for s in steps)
    assert ckpt in one and sorted(one) == sorted(empty)
    for name in one:
        assert one[name] == empty[name], name


def test_workers_checkpoint_and_resume(reach_blend, tmp_path):
    """``--workers 2 --checkpoint-interval 200`` writes the model at steps 200, 400 and 600 and the learner's
    full state, whatever the slice; ``--resume <out>_ckpt.npz`` (the README's next line) continues it, without
    workers or with them. (Which worker's chunk arrives first differs run to run: the names are compared.)"""
    from drla_ext.drla_core.rl.checkpoint import read_checkpoint

    for label, seconds in SLICES.items():
        folder = tmp_path / label.replace(" ", "_")
        out = cli(reach_blend, folder, seconds, "--quiet", "--workers", "2", "--steps", "600", "--eval-interval", "0",
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


class _InProcessPool:
    """A pool whose workers collect in this process, on pure CartPole copies, with the add-on's own ``Collector``
    code: the same chunks in the same order on any machine, so two slicings of a ``WorkersRun`` can be compared
    exactly. Records every weight push (the learner's step, the weights' bytes)."""

    label = "in-process workers"

    def __init__(self, copies: int) -> None:
        self.copies = copies
        self.pushes: list = []
        self.run = None

    def start(self, worker) -> str:
        from drla_ext.addon.runs.workers import Collector
        from drla_ext.drla_core.rl.dqn import DQNAgent, DQNConfig
        from drla_ext.drla_core.envs import make
        from drla_ext.drla_core.base.vector_env import SyncVectorEnv

        c = Collector.__new__(Collector)  # its scene part (opening a .blend) aside: the collecting is the same
        c.env = SyncVectorEnv([lambda: make("cartpole")] * self.copies)
        c.vector = True
        c.agent = DQNAgent(make("cartpole").observation_space, make("cartpole").action_space,
                           DQNConfig(hidden=[(16, "relu")]), seed=worker.seed)
        c.obs, _ = c.env.reset(seed=worker.seed)
        c.copies = self.copies
        c.returns, c.sums, c.counts = np.zeros(self.copies), np.zeros(self.copies), np.zeros(self.copies, np.int64)
        worker.handle = c
        worker.pending = ("ready", self.copies)
        return "in this process"

    def submit(self, worker, params, epsilon, steps) -> bool:
        self.pushes.append((worker.index, self.run.steps if self.run else 0, params.tobytes()))
        worker.pending = ("chunk", *worker.handle.collect(params, epsilon, steps))
        return True

    def wait(self, workers, timeout):
        news = [(w, w.pending) for w in workers if w.pending is not None]
        for w in workers:
            w.pending = None
        return news

    def death(self, worker) -> str:
        return "never"

    def close(self, workers) -> None:
        pass


def test_workers_run_weight_pushes_and_checkpoints_exactly(ext, tmp_path):
    """``WorkersRun`` on in-process collectors: every weight push (after each chunk) and every checkpoint (at the
    row reaching each multiple of 250, its file holding the model of exactly that step) the same with one call
    for the whole run and with empty slices; the learner's state file loads into a new learner whole."""
    from drla_ext.addon.runs.workers import WorkersRun
    from drla_ext.drla_core.rl.dqn import DQNAgent, DQNConfig
    from drla_ext.drla_core.envs import make

    got = {}
    for label, seconds in SLICES.items():
        folder = tmp_path / label.replace(" ", "_")
        pool = _InProcessPool(copies=3)
        agent = DQNAgent(make("cartpole").observation_space, make("cartpole").action_space,
                         DQNConfig(hidden=[(16, "relu")], learning_starts=100, total_timesteps=1200), seed=0)
        run = WorkersRun(agent, pool, 1200, workers=2, seed=0, log=lambda text: None,
                         checkpoint_interval=250, checkpoint_path=str(folder / "m_step{step}.json"))
        pool.run = run
        calls = 0
        while not run.done:
            run.advance(max_seconds=seconds)
            calls += 1
        assert calls == 1 if seconds else calls > 1
        got[label] = (pool.pushes, {p.name: clean(json.loads(p.read_text())) for p in sorted(folder.iterdir())},
                      run.history.to_dict(), agent.q_network.params.tobytes())
    one, empty = got["one call"], got["empty slices"]
    assert len(one[0]) > 10 and one[0] == empty[0]
    # 3 copies a row: the first row at or past each multiple of 250, each file the model of that step
    assert sorted(one[1], key=lambda n: int(n[6:-5])) == ["m_step252.json", "m_step501.json", "m_step750.json",
                                                           "m_step1002.json"]
    assert [data["meta"]["steps"] for _, data in sorted(one[1].items(), key=lambda kv: int(kv[0][6:-5]))] == \
        [252, 501, 750, 1002]
    assert one[1] == empty[1] and clean(one[2]) == clean(empty[2]) and one[3] == empty[3]

    def learner(seed: int, folder: Path):
        agent = DQNAgent(make("cartpole").observation_space, make("cartpole").action_space,
                         DQNConfig(hidden=[(16, "relu")], learning_starts=100, total_timesteps=2000), seed=seed)
        return WorkersRun(agent, _InProcessPool(copies=3), 2000, workers=2, seed=0, log=lambda text: None,
                          checkpoint_interval=250, checkpoint_path=str(folder / "m_step{step}.json"))
    first = learner(0, tmp_path / "first")
    first.advance(max_steps=600)
    first.save_checkpoint(tmp_path / "learner.npz")
    second = learner(7, tmp_path / "second")
    assert second.load_checkpoint(tmp_path / "learner.npz") == []
    assert second.steps == first.steps and second.episodes == first.episodes
    assert np.array_equal(second.agent.q_network.params, first.agent.q_network.params)
    assert second.history.episode_returns == first.history.episode_returns
    assert second._next_checkpoint == first._next_checkpoint == (first.steps // 250 + 1) * 250
    second.advance()
    assert second.done and 2000 <= second.steps < 2003  # (3 copies a row)
    assert sorted(int(p.name[6:-5]) // 250 for p in (tmp_path / "second").glob("m_step*.json")) == \
        list(range(first.steps // 250 + 1, 9))  # every multiple after the resumed step, 2000 included, once


def test_panel_workers_checkpoint_every(empty_scene, tmp_path):
    """The sidebar's Workers with the Trainer's Checkpoint Every 200 on a 600-step run: the model so far at steps
    200, 400 and 600 (worker processes, one copy each: a row of experience is one step), whether one tick does
    it all or every tick only looks for news."""
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.ui import examples

    scene = empty_scene
    examples.build_transform_scene(scene)
    tree = examples.build_transform_tree(scene, total_steps=600)
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_TrainerNode")
    trainer.checkpoint_interval, trainer.output_path = 200, str(tmp_path / "out")
    scene.drla.tree, scene.drla.workers = tree, 2
    bpy.context.view_layer.update()
    for label, seconds in SLICES.items():
        sess = TrainSession(scene, tree, seed=0, output_dir=str(tmp_path)).start()
        saved = []
        write = sess.job.save_fn

        def save(run, path, write=write, saved=saved):
            write(run, path)
            saved.append((run.steps, Path(path).name, json.loads(Path(path).read_text())["meta"]["steps"]))
        sess.job.save_fn = save
        while sess.tick(seconds):
            pass
        assert sess.state == "DONE" and sess.steps == 600, scene.drla.error
        assert saved == [(s, "Reach_checkpoint.json", s) for s in (200, 400, 600)], label
        sessions.discard_all()
