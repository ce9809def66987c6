"""The pure Pendulum equals Gymnasium's Pendulum-v1 step for step (the SAC and PPO benchmarks' task)."""

import gymnasium
import numpy as np
import pytest

from drla_core.base.env import check_env
from drla_core.envs import make


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_pendulum_equals_gymnasium_pendulum_v1_given_twice_the_action(seed):
    ours, theirs = make("pendulum"), gymnasium.make("Pendulum-v1")
    obs, _ = ours.reset(seed=seed)
    ref, _ = theirs.reset(seed=seed)
    np.testing.assert_array_equal(obs, ref)
    actions = np.random.default_rng(seed).uniform(-1.5, 1.5, size=(200, 1)).astype(np.float32)  # some beyond 1
    for t, action in enumerate(actions):
        obs, reward, term, trunc, _ = ours.step(action)
        ref, ref_reward, ref_term, ref_trunc, _ = theirs.step(action * np.float32(2))
        np.testing.assert_array_equal(obs, ref)
        assert reward == float(ref_reward)
        assert (term, trunc) == (ref_term, ref_trunc), t
    assert trunc  # 200 steps: Gymnasium's TimeLimit


def test_pendulum_passes_the_env_checker():
    check_env(make("pendulum"))
