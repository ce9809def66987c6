"""The expert switcher: routes by its rule, checks spaces, and learns a selector with DQN."""

import numpy as np
import pytest

from drla_core.envs.identity import IdentityEnv
from drla_core.nets.experts import (
    ExpertError,
    ExpertSwitcher,
    SelectorEnv,
    ThresholdRule,
    check_experts,
    train_selector,
)
from drla_core.nn.mlp import MLP
from drla_core.io.model_io import Model
from drla_core.base.spaces import Box, Discrete
from drla_core.rl.train import evaluate


def constant_expert(action, n=4, obs_size=None):
    """A model that always picks ``action`` (zero weights, the bias says which)."""
    net = MLP(obs_size or n, [(4, "relu")], n, rng=0)
    net.params[:] = 0.0
    net.biases[-1][action] = 1.0
    return Model(net, Box(0.0, 1.0, (obs_size or n,)), Discrete(n), kind="dqn")


def test_switcher_routes_by_its_rule():
    experts = [constant_expert(0), constant_expert(3)]
    switch = ExpertSwitcher(experts, ThresholdRule(index=2, threshold=0.5, above="right", below="left"),
                            names=["left", "right"])
    assert switch.act(np.array([0, 0, 1, 0], np.float32)) == 3 and switch.last_choice == 1
    assert switch.act(np.array([1, 0, 0, 0], np.float32)) == 0 and switch.last_choice == 0
    assert switch.counts.tolist() == [1, 1]
    by_index = ExpertSwitcher(experts, lambda obs: int(obs[0] > 0))
    assert by_index.act(np.array([1, 0, 0, 0], np.float32)) == 3
    bad = ExpertSwitcher(experts, lambda obs: "middle", names=["left", "right"])
    with pytest.raises(ExpertError, match="the rule chose 'middle', which is none of the experts"):
        bad.act(np.zeros(4, np.float32))


def test_spaces_are_checked_when_experts_are_combined():
    with pytest.raises(ExpertError, match=r"b acts in Discrete\(3\), a in Discrete\(4\)"):
        check_experts([constant_expert(0), constant_expert(0, n=3, obs_size=4)], ["a", "b"])
    with pytest.raises(ExpertError, match=r"expert 1 reads observations of shape \(5,\)"):
        ExpertSwitcher([constant_expert(0), constant_expert(0, obs_size=5)], lambda obs: 0)
    with pytest.raises(ExpertError, match="a rule or a selector"):
        ExpertSwitcher([constant_expert(0)])
    with pytest.raises(ExpertError, match="spaces differ from the environment's"):
        SelectorEnv(IdentityEnv(n=3), [constant_expert(0)])


def test_a_learnt_selector_picks_the_right_expert():
    """Each expert knows one light; the DQN selector learns which expert to ask for each light."""
    env = IdentityEnv(n=4, ep_length=50)
    experts = [constant_expert(i) for i in range(4)]
    switch, run = train_selector(env, experts, 3000, seed=0)
    result = evaluate(IdentityEnv(n=4, ep_length=50), switch, episodes=5, seed=7)
    assert result.mean_return >= 48  # of 50; a random pick gets 12.5
    assert switch.counts.min() > 0
