"""Full training checkpoints: a run killed with SIGKILL and resumed ends bit-exact where the uninterrupted run
ends; broken checkpoints are refused (and the previous one used); changed settings apply, a changed network
does not."""

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from drla_core.rl.dqn import DQNAgent, DQNConfig
from drla_core.rl.checkpoint import CheckpointError, previous_path, read_checkpoint, read_latest
from drla_core.base.env import Env
from drla_core.envs import make
from drla_core.io.model_io import load_model
from drla_core.base.spaces import Box, Discrete
from drla_core.rl.train import TrainingRun
from drla_core.rl.vector_train import VectorTrainingRun
from drla_core.base.vector_env import SyncVectorEnv

ROOT = Path(__file__).resolve().parents[1]
#: Wall and CPU clocks differ between any two runs; everything else in a checkpoint must not.
CLOCKS = {"train_seconds", "eval_seconds", "cpu_seconds", "eval_cpu_seconds"}
HISTORY_CLOCKS = {"eval_train_seconds", "eval_train_cpu_seconds"}


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "drla", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, **kw)


def assert_same_state(a, b):
    """Two checkpoints hold the same training state: every array bit for bit, counters, generators and curves."""
    assert sorted(a.arrays) == sorted(b.arrays)
    for name in a.arrays:
        assert np.array_equal(a.arrays[name], b.arrays[name]), name
    for section in ("agent", "buffer", "env"):
        assert a.meta[section] == b.meta[section], section
    assert {k: v for k, v in a.meta["run"].items() if k not in CLOCKS} == \
           {k: v for k, v in b.meta["run"].items() if k not in CLOCKS}
    assert {k: v for k, v in a.meta["history"].items() if k not in HISTORY_CLOCKS} == \
           {k: v for k, v in b.meta["history"].items() if k not in HISTORY_CLOCKS}


# ---- the proof: SIGKILL, then --resume, ends bit-exact -------------------------------------------------------


TRAIN = ["train", "cartpole", "--steps", "8000", "--checkpoint-interval", "1000", "--eval-interval", "2000",
         "--eval-episodes", "3", "--quiet"]


@pytest.mark.slow
def test_sigkilled_run_resumed_ends_bit_exact_with_the_uninterrupted_run(tmp_path):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    out = cli(*TRAIN, "--out", whole / "m.json")
    assert out.returncode == 0, out.stderr

    proc = subprocess.Popen([sys.executable, "-m", "drla", *TRAIN, "--out", str(killed / "m.json")], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ckpt = killed / "m_ckpt.npz"
    t0 = time.monotonic()
    while not ckpt.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < 120, "no checkpoint appeared"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert not (killed / "m.json").exists()  # it really died mid-run: no final model
    at = read_latest(ckpt)[0].steps
    assert 1000 <= at < 8000

    out = cli("train", "cartpole", "--resume", ckpt, "--quiet")
    assert out.returncode == 0, out.stderr
    assert f"resuming {ckpt} at step {at} of 8000" in out.stderr
    assert "trained 8000 steps" in out.stdout

    final_whole, final_resumed = load_model(whole / "m.json"), load_model(killed / "m.json")
    assert np.array_equal(final_whole.network.params, final_resumed.network.params)
    # and not only the weights: the last checkpoints (step 8000) hold the same state, curves included
    a, b = read_checkpoint(whole / "m_ckpt.npz"), read_checkpoint(killed / "m_ckpt.npz")
    assert a.steps == b.steps == 8000
    assert_same_state(a, b)


# ---- in process: every kind of run continues exactly ---------------------------------------------------------


def _config(steps, **kw):
    return DQNConfig(**{"learning_starts": 200, "train_freq": 16, "gradient_steps": 4, "target_update_interval": 50,
                        "buffer_size": 2000, "total_timesteps": steps, **kw})


def _run(name, steps, copies=0, config=None, **kw):
    config = config or _config(steps)
    if copies:
        env = SyncVectorEnv([lambda: make(name)] * copies)
        agent = DQNAgent(env.single_observation_space, env.single_action_space, config, seed=3)
        return VectorTrainingRun(env, agent, steps, seed=3, eval_env=make(name), eval_interval=1000,
                                 eval_episodes=2, **kw)
    env = make(name)
    agent = DQNAgent(env.observation_space, env.action_space, config, seed=3)
    return TrainingRun(env, agent, steps, seed=3, eval_env=make(name), eval_interval=1000, eval_episodes=2, **kw)


@pytest.mark.parametrize("name, copies", [("cartpole", 0), ("tank_grid", 0), ("evacuation", 0), ("cartpole", 3)])
def test_resume_mid_episode_is_bit_exact(tmp_path, name, copies):
    """Saved at an odd step (mid-episode, mid-exploration, the buffer already wrapped at 2000): the same end."""
    whole = _run(name, 3000, copies).run()
    first = _run(name, 3000, copies)
    first.advance(max_steps=2345)
    assert first.agent.replay_buffer.full
    path = first.save_checkpoint(tmp_path / "c.npz")
    second = _run(name, 3000, copies)
    assert second.load_checkpoint(path) == []
    assert second.steps == first.steps and second.history.episode_returns == first.history.episode_returns
    second.run()
    assert np.array_equal(whole.agent.q_network.params, second.agent.q_network.params)
    assert np.array_equal(whole.agent.target_network.params, second.agent.target_network.params)
    assert whole.history.episode_returns == second.history.episode_returns
    assert whole.history.evals == second.history.evals and whole.history.final_eval == second.history.final_eval


def test_checkpoint_written_by_the_loop_at_an_episode_end_resumes_exactly(tmp_path):
    """The loop checkpoints inside a step, before the env is reset after an ended episode: the resumed run
    makes that reset with the restored generator."""
    def save(run, path):
        run.save_checkpoint(tmp_path / f"c{run.steps}.npz", keep_previous=False)

    whole = _run("identity", 3000, checkpoint_interval=500, checkpoint_path="unused", save_fn=save).run()
    # IdentityEnv's episodes are 100 steps: a checkpoint at 1000 falls on an episode end
    ckpt = read_checkpoint(tmp_path / "c1000.npz")
    assert ckpt.meta["run"]["has_obs"] is False
    resumed = _run("identity", 3000, checkpoint_interval=500, checkpoint_path="unused", save_fn=lambda run, path: None)
    resumed.load_checkpoint(ckpt)
    resumed.run()
    assert np.array_equal(whole.agent.q_network.params, resumed.agent.q_network.params)
    assert whole.history.episode_returns == resumed.history.episode_returns


def test_a_checkpoint_at_the_last_step_resumes_to_a_finished_run(tmp_path):
    whole = _run("cartpole", 1000).run()
    path = tmp_path / "c.npz"
    done = _run("cartpole", 1000, checkpoint_interval=1000, checkpoint_path="x",
                save_fn=lambda run, _: run.save_checkpoint(path))
    done.run()
    resumed = _run("cartpole", 1000)
    resumed.load_checkpoint(path)
    assert resumed.advance() == 0 and resumed.done
    assert np.array_equal(whole.agent.q_network.params, resumed.agent.q_network.params)
    assert resumed.history.final_eval == whole.history.final_eval


class Unrestorable(Env):
    """A pure env that does not declare its episode state, as a Blender scene: resumed runs start a fresh episode."""

    observation_space = Box(0.0, 1.0, (2,), np.float32)
    action_space = Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.random(2).astype(np.float32), {}

    def step(self, action):
        self.t += 1
        return self.np_random.random(2).astype(np.float32), float(action), False, self.t >= 7, {}


def test_an_env_without_episode_state_restarts_the_episode_and_continues_the_curve(tmp_path):
    def run():
        env = Unrestorable()
        return TrainingRun(env, DQNAgent(env.observation_space, env.action_space, _config(300), seed=1), 300, seed=1)

    first = run()
    first.advance(max_steps=53)  # 7 episodes and 4 steps of the 8th
    path = first.save_checkpoint(tmp_path / "c.npz")
    ckpt = read_checkpoint(path)
    assert ckpt.meta["env"]["restorable"] is False and ckpt.meta["env"]["copies"][0]["rng"] is not None
    second = run()
    second.load_checkpoint(ckpt)
    second.run()
    assert second.steps == 300
    assert second.history.episode_returns[:7] == first.history.episode_returns
    # the cut episode was dropped, the next starts fresh at step 53: 7 steps each from there
    assert second.history.episode_end_steps[7:9] == [60, 67]
    assert second.agent.num_timesteps == 300


class Replayable(Unrestorable):
    """As a Blender scene: not restorable, but it logs how its episode began and its actions, and plays them again
    (``drift``: a replay that does not end on the observation the episode had)."""

    drift = 0.0

    def reset(self, *, seed=None, options=None):
        Env.reset(self, seed=seed)
        self.log = (self.np_random.bit_generator.state, [])
        return self._begin(), {}

    def _begin(self):
        self.t = 0
        return self.np_random.random(2).astype(np.float32)

    def step(self, action):
        self.log[1].append(action)
        return super().step(action)

    def episode_log(self):
        return self.log

    def replay_episode(self, state, actions):
        self.np_random.bit_generator.state = state
        self.log = (state, [])
        obs = self._begin()
        for action in actions:
            obs = self.step(action)[0]
        return obs + np.float32(self.drift)


def test_an_env_that_replays_its_episode_resumes_mid_episode_bit_exact(tmp_path):
    def run(drift=0.0):
        env = Replayable()
        env.drift = drift
        return TrainingRun(env, DQNAgent(env.observation_space, env.action_space, _config(300), seed=1), 300, seed=1)

    whole = run().run()
    first = run()
    first.advance(max_steps=53)  # 7 episodes and 4 steps of the 8th
    ckpt = read_checkpoint(first.save_checkpoint(tmp_path / "c.npz"))
    replay = ckpt.meta["env"]["copies"][0]["replay"]
    assert ckpt.meta["env"]["restorable"] is False and replay["actions"] == "env.0.replay_actions"
    assert ckpt.arrays["env.0.replay_actions"].tolist() == first.env.log[1] and len(first.env.log[1]) == 4
    second = run()
    second.load_checkpoint(ckpt)
    assert second._episode_length == 4 and np.array_equal(second._obs, first._obs)
    second.run()
    assert second.history.episode_end_steps == whole.history.episode_end_steps
    assert second.history.episode_returns == whole.history.episode_returns
    assert np.array_equal(second.agent.q_network.params, whole.agent.q_network.params)

    drifted = run(drift=1.0)  # the replay ends elsewhere: the generator put back, a fresh episode at step 53
    drifted.load_checkpoint(ckpt)
    assert drifted._obs is None and drifted.env.np_random.bit_generator.state == ckpt.meta["env"]["copies"][0]["rng"]
    drifted.run()
    assert drifted.history.episode_end_steps[7:9] == [60, 67]


# ---- the replay buffer: optional, capped, and the file says so -----------------------------------------------


def test_buffer_can_be_left_out_or_capped_and_the_file_says_so(tmp_path):
    run = _run("cartpole", 3000)
    run.advance(max_steps=1500)
    per = 2 * 4 * 4 + 8 + 3 * 4  # obs + next_obs (4 float32 each), action int64, reward/terminated/truncated
    full = read_checkpoint(run.save_checkpoint(tmp_path / "full.npz"))
    none = read_checkpoint(run.save_checkpoint(tmp_path / "none.npz", replay_buffer=False))
    capped = read_checkpoint(run.save_checkpoint(tmp_path / "capped.npz", max_buffer_bytes=100 * per))
    assert full.meta["buffer"]["stored"] == "all" and full.meta["buffer"]["stored_transitions"] == 1500
    assert none.meta["buffer"]["stored"] == "none" and "buffer.obs" not in none.arrays
    assert capped.meta["buffer"]["stored"] == "newest" and capped.meta["buffer"]["stored_transitions"] == 100
    assert np.array_equal(capped.arrays["buffer.obs"], run.agent.replay_buffer.obs[1400:1500])
    assert os.path.getsize(tmp_path / "none.npz") < os.path.getsize(tmp_path / "full.npz") - 1500 * per + 4096

    resumed = _run("cartpole", 3000)
    resumed.load_checkpoint(capped)
    assert len(resumed.agent.replay_buffer) == 100
    assert np.array_equal(resumed.agent.replay_buffer.obs[:100], run.agent.replay_buffer.obs[1400:1500])
    resumed.run()
    assert resumed.steps == 3000 and np.all(np.isfinite(resumed.agent.q_network.params))

    run.advance(max_steps=800)  # 2300 transitions in a buffer of 2000: it wrapped, its newest start at row 1800
    wrapped = read_checkpoint(run.save_checkpoint(tmp_path / "wrapped.npz", max_buffer_bytes=500 * per))
    buf = run.agent.replay_buffer
    assert buf.full and buf.pos == 300
    assert np.array_equal(wrapped.arrays["buffer.obs"], np.concatenate([buf.obs[1800:], buf.obs[:300]]))


# ---- broken checkpoints --------------------------------------------------------------------------------------


def _two_checkpoints(tmp_path):
    path = tmp_path / "c.npz"
    run = _run("cartpole", 1000, checkpoint_interval=400, checkpoint_path="x",
               save_fn=lambda r, _: r.save_checkpoint(path))
    run.run()
    return path


def test_truncated_or_corrupted_checkpoints_are_refused(tmp_path):
    path = _two_checkpoints(tmp_path)
    assert read_checkpoint(path).steps == 800 and read_checkpoint(previous_path(path)).steps == 400
    data = path.read_bytes()

    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=f"{truncated} is not a usable DRLA checkpoint: the file is truncated "
                                              "or corrupted"):
        read_checkpoint(truncated)

    # one bit flipped inside the replay buffer's observations: the zip's CRC-32 catches it
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("buffer.obs.npy")
    flipped = bytearray(data)
    flipped[info.header_offset + 200 + info.file_size // 2] ^= 0x10
    corrupted = tmp_path / "corrupted.npz"
    corrupted.write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match="truncated or corrupted .*CRC"):
        read_checkpoint(corrupted)

    not_one = tmp_path / "model.npz"
    np.savez(not_one, weights=np.zeros(3))
    with pytest.raises(CheckpointError, match="has no checkpoint.json"):
        read_checkpoint(not_one)
    with pytest.raises(CheckpointError, match="no such checkpoint file"):
        read_checkpoint(tmp_path / "missing.npz")


def test_a_newer_version_or_edited_data_is_refused(tmp_path):
    path = _two_checkpoints(tmp_path)
    ckpt = read_checkpoint(path)
    meta = dict(ckpt.meta, version=2)
    members = {"checkpoint.json": np.frombuffer(json.dumps(meta).encode(), np.uint8), **ckpt.arrays}
    np.savez(tmp_path / "v2.npz", **members)
    with pytest.raises(CheckpointError, match="format version 2, this DRLA reads version 1 .a newer DRLA wrote it"):
        read_checkpoint(tmp_path / "v2.npz")

    # hand-edited data inside a well-formed file: refused with a message, not a traceback
    meta = json.loads(json.dumps(ckpt.meta))
    meta["agent"]["num_timesteps"] = "many"
    members = {"checkpoint.json": np.frombuffer(json.dumps(meta).encode(), np.uint8), **ckpt.arrays}
    np.savez(tmp_path / "edited.npz", **members)
    with pytest.raises(CheckpointError, match=r"edited.npz holds invalid data \(ValueError: invalid literal"):
        _run("cartpole", 1000).load_checkpoint(tmp_path / "edited.npz")


def test_read_latest_falls_back_to_the_previous_checkpoint_and_says_so(tmp_path):
    path = _two_checkpoints(tmp_path)
    path.write_bytes(path.read_bytes()[:1000])
    ckpt, note = read_latest(path)
    assert ckpt.steps == 400 and ckpt.path == previous_path(path)
    assert note.startswith(f"{path} is not a usable DRLA checkpoint: the file is truncated or corrupted")
    assert note.endswith(f"; using the previous checkpoint {previous_path(path)} (step 400) instead")
    previous_path(path).unlink()
    with pytest.raises(CheckpointError, match="truncated or corrupted"):
        read_latest(path)


def test_a_failed_write_leaves_the_last_good_checkpoint(tmp_path, monkeypatch):
    path = _two_checkpoints(tmp_path)
    before = path.read_bytes()
    run = _run("cartpole", 1000)
    run.advance(max_steps=100)

    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(OSError, match="No space left"):
        run.save_checkpoint(path)
    assert path.read_bytes() == before and read_checkpoint(path).steps == 800
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.npz", "c.prev.npz"]  # no temporary file left

    monkeypatch.undo()
    (tmp_path / ".c.npz.abc123.tmp").write_bytes(b"half a checkpoint, its writer killed")
    run.save_checkpoint(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.npz", "c.prev.npz"]
    assert read_checkpoint(path).steps == 100 and read_checkpoint(previous_path(path)).steps == 800


def test_cli_resume_from_a_truncated_checkpoint_uses_the_previous_one(tmp_path):
    model = tmp_path / "m.json"
    out = cli("train", "identity", "--steps", "600", "--checkpoint-interval", "200", "--eval-interval", "0",
              "--learning-starts", "100", "--quiet", "--out", model)
    assert out.returncode == 0, out.stderr
    ckpt = tmp_path / "m_ckpt.npz"
    assert read_checkpoint(ckpt).steps == 600 and read_checkpoint(previous_path(ckpt)).steps == 400
    ckpt.write_bytes(ckpt.read_bytes()[:5000])
    out = cli("train", "identity", "--resume", ckpt, "--steps", "800", "--quiet")
    assert out.returncode == 0, out.stderr
    assert f"warning: {ckpt} is not a usable DRLA checkpoint: the file is truncated or corrupted" in out.stderr
    assert f"using the previous checkpoint {previous_path(ckpt)} (step 400) instead" in out.stderr
    assert f"resuming {previous_path(ckpt)} at step 400 of 800" in out.stderr
    assert "trained 800 steps" in out.stdout and load_model(model).meta["training_steps"] == 800

    previous_path(ckpt).unlink()
    ckpt.write_bytes(b"not a zip")
    out = cli("train", "identity", "--resume", ckpt, "--quiet")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"error: --resume: {ckpt} is not a usable DRLA checkpoint: the file is truncated or corrupted" in out.stderr


# ---- settings changed on resume ------------------------------------------------------------------------------


def test_a_changed_learning_rate_applies_and_is_recorded(tmp_path):
    first = _run("cartpole", 3000)
    first.advance(max_steps=1500)
    path = first.save_checkpoint(tmp_path / "c.npz")
    same = _run("cartpole", 3000)
    same.load_checkpoint(path)
    same.run()
    changed = _run("cartpole", 4000, config=_config(4000, learning_rate=1e-4, exploration_final_eps=0.1))
    assert changed.load_checkpoint(path) == [("learning_rate", 2.3e-3, 1e-4), ("exploration_final_eps", 0.04, 0.1),
                                             ("total_steps", 3000, 4000)]
    assert changed.agent.optimizer.lr == 1e-4
    assert changed.history.setting_changes == [(1500, "learning_rate", 2.3e-3, 1e-4),
                                               (1500, "exploration_final_eps", 0.04, 0.1),
                                               (1500, "total_steps", 3000, 4000)]
    # epsilon follows the new schedule at once: 1500 of 4000 steps is past its 16 %
    assert changed.agent.epsilon == 0.1
    changed.run()
    assert changed.steps == 4000
    assert not np.array_equal(changed.agent.q_network.params, same.agent.q_network.params)
    # and a checkpoint after that carries the record on
    again = read_checkpoint(changed.save_checkpoint(tmp_path / "d.npz"))
    assert again.meta["history"]["setting_changes"][0] == [1500, "learning_rate", 2.3e-3, 1e-4]


@pytest.mark.slow
def test_cli_changed_learning_rate_is_listed_and_a_changed_network_refused(tmp_path):
    model = tmp_path / "m.json"
    out = cli("train", "identity", "--steps", "400", "--checkpoint-interval", "200", "--eval-interval", "0",
              "--learning-starts", "100", "--quiet", "--out", model)
    assert out.returncode == 0, out.stderr
    ckpt = tmp_path / "m_ckpt.npz"

    out = cli("train", "identity", "--resume", ckpt, "--hidden", "32", "--quiet")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert (f"error: cannot resume from {ckpt}: the network differs: the checkpoint has 4 -> 64 relu -> 64 relu -> "
            "4 linear, this run 4 -> 32 relu -> 4 linear; a resumed run keeps its network") in out.stderr

    out = cli("train", "cartpole", "--resume", ckpt, "--quiet")
    assert out.returncode == 2 and f"--resume: {ckpt} is a run on 'identity', not on 'cartpole'" in out.stderr
    out = cli("train", "identity", "--resume", ckpt, "--seed", "5", "--quiet")
    assert out.returncode == 2 and "--seed: a resumed run keeps its seed (0); drop --seed" in out.stderr

    out = cli("train", "identity", "--resume", ckpt, "--steps", "600", "--learning-rate", "0.0005", "--quiet")
    assert out.returncode == 0, out.stderr
    assert "learning_rate: 0.001 -> 0.0005 (from step 400)" in out.stderr
    assert "total_steps: 400 -> 600 (from step 400)" in out.stderr
    saved = read_checkpoint(ckpt)
    assert saved.steps == 600 and saved.config["learning_rate"] == 0.0005
    assert [400, "learning_rate", 0.001, 0.0005] in saved.meta["history"]["setting_changes"]
