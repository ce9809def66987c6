"""Merging: averaging only relatives (refusals say why), distillation reproduces a teacher's greedy actions."""

import numpy as np
import pytest

from drla_core.rl.dqn import DQNAgent, DQNConfig
from drla_core.envs.cartpole import CartPole
from drla_core.nets.merge import MergeError, agreement, average, check_average, distill, record_states
from drla_core.io.model_io import load_model, save_model
from drla_core.base.spaces import Box, Discrete
from drla_core.rl.train import TrainingRun


def _trained(seed=0, steps=6000, hidden=(64, 64), train_seed=None):
    """A CartPole DQN: ``seed`` fixes the initial weights, ``train_seed`` (default: seed) the experience."""
    cfg = DQNConfig(hidden=list(hidden), learning_starts=500, train_freq=64, gradient_steps=32)
    agent = DQNAgent(CartPole().observation_space, CartPole().action_space, cfg, seed=seed)
    if train_seed is not None:
        agent.rng = np.random.default_rng(train_seed)
    TrainingRun(CartPole(), agent, steps, seed=train_seed if train_seed is not None else seed).run()
    return agent.to_model({"env": "cartpole"})


@pytest.fixture(scope="module")
def teacher():
    return _trained(seed=0, steps=3000)


def test_averaging_relatives_is_the_mean_of_the_weights(tmp_path):
    a = _trained(seed=3, steps=1500, train_seed=11)
    b = _trained(seed=3, steps=1500, train_seed=12)  # the same initial weights, other experience
    assert a.meta["ancestry"]["origin"] == b.meta["ancestry"]["origin"]
    assert a.meta["ancestry"]["id"] != b.meta["ancestry"]["id"]
    merged = average([a, b])
    np.testing.assert_allclose(merged.network.params, (a.network.params + b.network.params) / 2, atol=1e-7)
    assert merged.meta["ancestry"]["parents"] == [a.meta["ancestry"]["id"], b.meta["ancestry"]["id"]]
    save_model(tmp_path / "m.json", merged)
    assert load_model(tmp_path / "m.json").meta["merge"]["method"] == "average"
    weighted = average([a, b], weights=[3, 1])
    np.testing.assert_allclose(weighted.network.params, 0.75 * a.network.params + 0.25 * b.network.params, atol=1e-6)


def test_averaging_refuses_mismatched_networks_with_the_reason():
    a = _trained(seed=3, steps=600)
    with pytest.raises(MergeError, match="do not share an ancestor"):
        check_average([a, _trained(seed=4, steps=600)])
    with pytest.raises(MergeError, match=r"another shape \(4 -> 32 relu -> 32 relu -> 2 linear\)"):
        check_average([a, _trained(seed=3, steps=600, hidden=(32, 32))])
    orphan = _trained(seed=3, steps=600)
    del orphan.meta["ancestry"]
    with pytest.raises(MergeError, match="network 2 has no ancestry record"):
        average([a, orphan])
    with pytest.raises(MergeError, match="at least two"):
        average([a])
    with pytest.raises(MergeError, match="weights must be 2 non-negative"):
        average([a, _trained(seed=3, steps=600, train_seed=5)], weights=[1, -1])


def test_distillation_reproduces_the_teachers_greedy_actions(teacher):
    train_states = record_states(teacher, CartPole(), 5000, seed=1)
    held_out = record_states(teacher, CartPole(), 1000, seed=2)  # states the student never trained on
    student, info = distill([teacher], [train_states], seed=0)
    assert info["agreement"][0] >= 0.95
    assert agreement(student, teacher, held_out) >= 0.95
    assert student.meta["merge"]["method"] == "distill"
    assert student.meta["ancestry"]["parents"] == [teacher.meta["ancestry"]["id"]]


def test_distillation_refuses_other_spaces(teacher):
    from drla_core.envs.identity import IdentityEnv

    env = IdentityEnv()
    agent = DQNAgent(env.observation_space, env.action_space, DQNConfig(hidden=[8]), seed=0)
    other = agent.to_model()
    with pytest.raises(MergeError, match=r"network 2 acts in Discrete\(4\), network 1 in Discrete\(2\)"):
        distill([teacher, other], [np.zeros((4, 4)), np.zeros((4, 4))])
    wide = DQNAgent(Box(-1.0, 1.0, (6,)), Discrete(2), DQNConfig(hidden=[8]), seed=0).to_model()
    with pytest.raises(MergeError, match=r"network 2 reads observations of shape \(6,\), network 1 of shape \(4,\)"):
        distill([teacher, wide], [np.zeros((4, 4)), np.zeros((4, 6))])
