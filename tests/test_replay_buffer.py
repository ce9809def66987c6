"""ReplayBuffer: wraparound, sample shapes and dtypes, terminated vs truncated."""

import numpy as np
import pytest

from drla_core.rl.replay_buffer import Batch, ReplayBuffer


def _fill(buf, n, start=0):
    for k in range(start, start + n):
        buf.add(np.full(3, k, np.float32), k % 2, float(k), np.full(3, k + 1, np.float32),
                terminated=(k % 5 == 4), truncated=(k % 7 == 6))


def test_len_and_wraparound_overwrites_oldest():
    buf = ReplayBuffer(5, (3,))
    assert len(buf) == 0
    _fill(buf, 3)
    assert len(buf) == 3 and not buf.full
    _fill(buf, 4, start=3)  # 7 transitions into 5 slots
    assert len(buf) == 5 and buf.full and buf.pos == 2
    assert sorted(buf.rewards.tolist()) == [2.0, 3.0, 4.0, 5.0, 6.0]
    np.testing.assert_array_equal(buf.obs[0], [5, 5, 5])  # slot 0 now holds transition 5
    np.testing.assert_array_equal(buf.next_obs[1], [7, 7, 7])


def test_sample_shapes_and_dtypes():
    buf = ReplayBuffer(100, (4,))
    for _ in range(10):
        buf.add(np.ones(4), 1, 1.0, np.ones(4), False, False)
    batch = buf.sample(32, np.random.default_rng(0))
    assert isinstance(batch, Batch)
    assert batch.obs.shape == (32, 4) and batch.obs.dtype == np.float32
    assert batch.next_obs.shape == (32, 4) and batch.next_obs.dtype == np.float32
    assert batch.actions.shape == (32,) and batch.actions.dtype == np.int64
    for field in (batch.rewards, batch.terminated, batch.truncated):
        assert field.shape == (32,) and field.dtype == np.float32


def test_image_and_continuous_action_buffers():
    buf = ReplayBuffer(8, (6, 5), obs_dtype=np.uint8, action_shape=(2,), action_dtype=np.float32)
    buf.add(np.full((6, 5), 255), np.array([0.5, -0.5]), 0.0, np.zeros((6, 5)), False, True)
    batch = buf.sample(4, np.random.default_rng(0))
    assert batch.obs.dtype == np.uint8 and batch.obs.shape == (4, 6, 5)
    assert batch.actions.shape == (4, 2) and batch.actions.dtype == np.float32


def test_sample_only_filled_slots_and_is_seeded():
    buf = ReplayBuffer(50, (3,))
    _fill(buf, 4)
    b1 = buf.sample(200, np.random.default_rng(1))
    b2 = buf.sample(200, np.random.default_rng(1))
    assert set(b1.rewards.tolist()) == {0.0, 1.0, 2.0, 3.0}
    np.testing.assert_array_equal(b1.obs, b2.obs)
    # every field of a sampled row belongs to the same transition
    np.testing.assert_array_equal(b1.obs[:, 0], b1.rewards)
    np.testing.assert_array_equal(b1.next_obs[:, 0], b1.rewards + 1)
    np.testing.assert_array_equal(b1.actions, b1.rewards.astype(int) % 2)


def test_terminated_kept_apart_from_truncated():
    buf = ReplayBuffer(20, (3,))
    _fill(buf, 14)
    np.testing.assert_array_equal(np.flatnonzero(buf.terminated[:14]), [4, 9])
    np.testing.assert_array_equal(np.flatnonzero(buf.truncated[:14]), [6, 13])


def test_empty_sample_and_bad_capacity():
    with pytest.raises(ValueError):
        ReplayBuffer(10, (2,)).sample(4, np.random.default_rng(0))
    with pytest.raises(ValueError):
        ReplayBuffer(0, (2,))
