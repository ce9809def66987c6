"""Layers that grow and shrink: Net2Net widen/deepen keep the function, prune removes what it says, Adam follows."""

import numpy as np
import pytest

from drla_core.rl.dqn import DQNAgent, DQNConfig
from drla_core.rl.checkpoint import read_checkpoint, save_checkpoint
from drla_core.rl.restore import restore_run
from drla_core.envs.cartpole import CartPole
from drla_core.nets.growth import GrowthRule, deepen, grow, grow_agent, prune, remap_adam, unit_strength, widen
from drla_core.nn.mlp import MLP
from drla_core.io.model_io import load_model, save_model
from drla_core.nn.optim import Adam
from drla_core.rl.train import TrainingRun


def _net(hidden=((64, "relu"), (64, "relu")), seed=0):
    return MLP(5, list(hidden), 3, rng=seed)


def _inputs(n=256, seed=1):
    return np.random.default_rng(seed).normal(size=(n, 5)).astype(np.float32)


ACT64 = {"relu": lambda z: np.maximum(z, 0), "tanh": np.tanh, "linear": lambda z: z,
         "sigmoid": lambda z: 1 / (1 + np.exp(-z)), "leaky_relu": lambda z: np.maximum(z, 0.01 * z)}


def _forward64(net, x):
    """The function the (float32) parameters define, computed in float64: free of float32 summation noise."""
    h = np.asarray(x, dtype=np.float64)
    for w, b, act in zip(net.weights, net.biases, net.activations):
        h = ACT64[act](h @ w.astype(np.float64) + b.astype(np.float64))
    return h


def assert_same_function(grown, net, x):
    """Every output within 1e-6 (float64 evaluation of both), and float32 forwards within float32 rounding."""
    np.testing.assert_allclose(_forward64(grown, x), _forward64(net, x), rtol=0, atol=1e-6)
    np.testing.assert_allclose(grown.forward(x), net.forward(x), rtol=0, atol=1e-5)


@pytest.mark.parametrize("activation", ["relu", "tanh", "sigmoid", "leaky_relu", "linear"])
@pytest.mark.parametrize("layer", [0, 1])
def test_widen_keeps_every_output(activation, layer):
    net = _net(((64, activation), (64, activation)))
    x = _inputs()
    remap = widen(net, layer, 128, rng=3)
    grown = remap.apply_net(net)
    assert grown.hidden[layer].size == 128 and grown.hidden[1 - layer].size == 64
    assert_same_function(grown, net, x)
    assert sorted(set(remap.record["units"])) == sorted(remap.record["units"])  # each unit at most doubled


def test_widen_more_than_double_and_chosen_units():
    net = _net(((4, "relu"), (4, "tanh")))
    x = _inputs()
    for remap in (widen(net, 0, 11, rng=0), widen(net, 1, 6, units=[3, 3])):
        assert_same_function(remap.apply_net(net), net, x)
    with pytest.raises(ValueError, match="units must be 2 indices"):
        widen(net, 1, 6, units=[4, 0])
    with pytest.raises(ValueError, match="new_size must be larger"):
        widen(net, 0, 4)
    with pytest.raises(ValueError, match="hidden layer 2 does not exist"):
        widen(net, 2, 8)


def test_widened_copies_are_not_identical_after_training():
    """The random split of the outgoing weights lets gradient descent tell a unit from its copy."""
    net = _net(((3, "relu"),))
    remap = widen(net, 0, 6, units=[0, 1, 2], rng=0)
    grown = remap.apply_net(net)
    opt = Adam(grown.params, lr=1e-2)
    x = _inputs(64)
    target = np.random.default_rng(2).normal(size=(64, 3)).astype(np.float32)
    for _ in range(20):
        y = grown.forward_train(x)
        opt.step(grown.backward((y - target) / len(x)))
    w = grown.weights[0]
    assert np.abs(w[:, :3] - w[:, 3:]).max() > 1e-3


@pytest.mark.parametrize("activation", ["relu", "linear"])
def test_deepen_keeps_every_output_for_idempotent_activations(activation):
    net = _net(((64, activation), (64, activation)))
    x = _inputs()
    for layer in (0, 1):
        grown = deepen(net, layer).apply_net(net)
        assert [h.size for h in grown.hidden] == [64, 64, 64]
        assert grown.hidden[layer + 1].activation == activation
        assert_same_function(grown, net, x)


def test_deepen_tanh_is_refused_unless_linear_or_inexact():
    net = _net(((64, "tanh"), (64, "tanh")))
    x = _inputs()
    with pytest.raises(ValueError, match=r"not function-preserving \(tanh\(tanh\(x\)\) != tanh\(x\)\)"):
        deepen(net, 0)
    exact = deepen(net, 0, activation="linear").apply_net(net)
    assert_same_function(exact, net, x)
    inexact = deepen(net, 0, exact=False).apply_net(net)
    assert np.abs(inexact.forward(x) - net.forward(x)).max() > 1e-3  # what the docstring warns about


def test_prune_removes_the_weakest_units():
    net = _net(((8, "relu"), (6, "relu")))
    net.weights[1][:, 2] *= 1e-3  # unit 2 of the second hidden layer: by far the weakest
    net.weights[1][:, 4] *= 1e-2  # unit 4: the second weakest
    remap = prune(net, 1, 2)
    assert remap.record["removed"] == [2, 4] and remap.record["kept"] == [0, 1, 3, 5]
    small = remap.apply_net(net)
    assert [h.size for h in small.hidden] == [8, 4]
    # the same as the original with those two units silenced
    silenced = net.copy()
    silenced.weights[2][[2, 4], :] = 0.0
    x = _inputs()
    assert_same_function(small, silenced, x)
    strength = unit_strength(net, 1)
    assert strength[[2, 4]].max() < strength[[0, 1, 3, 5]].min()
    with pytest.raises(ValueError, match="remove between 1 and 5"):
        prune(net, 1, 6)


def test_adam_moments_follow_the_units():
    net = _net(((4, "relu"), (4, "relu")))
    opt = Adam(net.params, lr=1e-3)
    x = _inputs(32)
    for _ in range(5):
        y = net.forward_train(x)
        opt.step(net.backward(y / len(x)))
    remap = widen(net, 0, 6, units=[1, 3], rng=0)
    grown = remap.apply_net(net)
    new = remap_adam(opt, grown.params, remap)
    assert new.t == opt.t and new.params is grown.params
    (old_w0, old_b0), (old_w1, _) = [(w.copy(), b.copy()) for w, b in zip(*_moment_views(net, opt.m))][:2]
    (new_w0, new_b0), (new_w1, _) = [(w, b) for w, b in zip(*_moment_views(grown, new.m))][:2]
    mapping = [0, 1, 2, 3, 1, 3]
    share = np.array([1, 0.5, 1, 0.5, 0.5, 0.5], dtype=np.float32)
    np.testing.assert_allclose(new_w0, old_w0[:, mapping] * share, rtol=1e-6)  # incoming: the share of the gradient
    np.testing.assert_allclose(new_b0, old_b0[mapping] * share, rtol=1e-6)
    np.testing.assert_allclose(new_w1, old_w1[mapping, :], rtol=1e-6)  # outgoing: the same gradient
    deeper = deepen(net, 0)
    new_deep = remap_adam(opt, deeper.apply_net(net).params, deeper)
    w_new, b_new = _moment_views(deeper.apply_net(net), new_deep.m)
    assert not w_new[1].any() and not b_new[1].any()  # the inserted layer starts with no history


def _moment_views(net, flat):
    """Per-layer (weights, biases) views of a flat vector in ``net``'s params layout."""
    probe = MLP.from_architecture(net.architecture(), rng=0)
    probe.params[...] = flat
    return [w.copy() for w in probe.weights], [b.copy() for b in probe.biases]


def _cartpole_run(hidden, steps, callbacks=(), seed=0):
    cfg = DQNConfig(hidden=hidden, learning_starts=200, train_freq=64, gradient_steps=16)
    agent = DQNAgent(CartPole().observation_space, CartPole().action_space, cfg, seed=seed)
    return TrainingRun(CartPole(), agent, steps, seed=seed, eval_env=CartPole(), eval_interval=300,
                       eval_episodes=2, callbacks=callbacks)


def test_agent_grows_in_place_and_keeps_its_greedy_values():
    run = _cartpole_run([(4, "relu"), (4, "relu")], 600)
    run.run()
    agent = run.agent
    x = _inputs(64)[:, :4]
    q_before, target_before = agent.q_network.forward(x), agent.target_network.forward(x)
    grow(agent)  # both layers doubled
    grow_agent(agent, "deepen")
    assert [h.size for h in agent.q_network.hidden] == [8, 8, 8]
    assert agent.target_network.architecture() == agent.q_network.architecture()
    assert agent.optimizer.params is agent.q_network.params
    assert agent.best_params is not None and agent.best_params.shape == agent.q_network.params.shape
    np.testing.assert_allclose(agent.q_network.forward(x), q_before, rtol=0, atol=1e-5)
    np.testing.assert_allclose(agent.target_network.forward(x), target_before, rtol=0, atol=1e-5)
    assert [r["op"] for r in agent.growth_history] == ["widen", "widen", "deepen"]
    agent.update(gradient_steps=4)  # trains on the grown network
    assert np.all(np.isfinite(agent.q_network.params))


def test_growth_rule_grows_on_a_plateau_then_saves_loads_and_resumes(tmp_path):
    rule = GrowthRule(patience=1, max_grows=2, min_delta=1e9)  # every eval after the first is a "plateau"
    run = _cartpole_run([(4, "relu"), (4, "relu")], 3000, callbacks=[rule], seed=1)
    run.advance(max_steps=1500)
    assert [h.size for h in run.agent.q_network.hidden] == [16, 16]  # grown twice, then the maximum is reached
    assert [r["hidden"] for r in rule.grows] == [[8, 8], [16, 16]]

    # a model grown mid-run saves and loads with the same outputs and its history in meta
    path = tmp_path / "grown.json"
    save_model(path, run.agent.to_model({"env": "cartpole"}))
    loaded = load_model(path)
    x = _inputs(64)[:, :4]
    np.testing.assert_allclose(loaded.network.forward(x), run.agent.q_network.forward(x), rtol=0, atol=1e-6)
    assert [r["hidden"] for r in loaded.meta["growth"] if r["op"] == "widen"] == [[8, 4], [8, 8], [16, 8], [16, 16]]

    # ... and the run resumes from a checkpoint bit-exact with the run never stopped
    ckpt_path = save_checkpoint(tmp_path / "grown_ckpt.npz", run)
    ckpt = read_checkpoint(ckpt_path)
    resumed = _cartpole_run(ckpt.config["hidden"], 3000, seed=1)
    restore_run(resumed, ckpt)
    assert resumed.agent.growth_history == run.agent.growth_history
    run.run()
    resumed.run()
    np.testing.assert_array_equal(resumed.agent.q_network.params, run.agent.q_network.params)
    assert resumed.history.episode_returns == run.history.episode_returns


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_fresh_widen_keeps_every_output_and_adds_new_features(activation):
    net = _net(((16, activation), (16, activation)))
    x = _inputs()
    remap = widen(net, 0, 40, rng=0, init="fresh")
    grown = remap.apply_net(net)
    assert_same_function(grown, net, x)
    assert not grown.weights[1][16:].any() and grown.weights[0][:, 16:].std() > 0.05
    with pytest.raises(ValueError, match="init must be 'copy'"):
        widen(net, 0, 40, init="zeros")
