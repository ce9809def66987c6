"""MLP: gradient check against finite differences, layout, init, copies and state dicts."""

import numpy as np
import pytest

from drla_core.nn.mlp import ACTIVATIONS, MLP, LayerSpec


def _loss_and_grad_y(y, target):
    diff = y - target
    return 0.5 * float(np.sum(diff * diff)), diff


def _numeric_grad(net, x, target, eps=1e-3):
    """Central differences on a float64 copy of the computation (float32 is too coarse for it)."""
    params64 = net.params.astype(np.float64)

    def loss_at(p):
        h = x.astype(np.float64)
        off = 0
        for fan_in, fan_out, act in zip(net.sizes[:-1], net.sizes[1:], net.activations):
            w = p[off:off + fan_in * fan_out].reshape(fan_in, fan_out)
            off += fan_in * fan_out
            b = p[off:off + fan_out]
            off += fan_out
            z = h @ w + b
            h = {"relu": np.maximum(z, 0), "tanh": np.tanh(z), "leaky_relu": np.where(z > 0, z, 0.01 * z),
                 "linear": z, "sigmoid": 1 / (1 + np.exp(-z))}[act]
        return 0.5 * np.sum((h - target) ** 2)

    grad = np.zeros_like(params64)
    for k in range(params64.size):
        p = params64.copy()
        p[k] += eps
        up = loss_at(p)
        p[k] -= 2 * eps
        grad[k] = (up - loss_at(p)) / (2 * eps)
    return grad


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_backward_matches_finite_differences(activation):
    rng = np.random.default_rng(0)
    net = MLP(3, [LayerSpec(5, activation), (4, activation)], 2, output_activation=activation, rng=1)
    x = rng.normal(size=(6, 3)).astype(np.float32)
    target = rng.normal(size=(6, 2))
    y = net.forward_train(x)
    np.testing.assert_allclose(y, net.forward(x), rtol=1e-6, atol=1e-6)
    _, grad_y = _loss_and_grad_y(y.astype(np.float64), target)
    grad = net.backward(grad_y.astype(np.float32))
    assert grad.dtype == np.float32 and grad.shape == net.params.shape
    numeric = _numeric_grad(net, x, target)
    np.testing.assert_allclose(grad, numeric, rtol=2e-2, atol=2e-3)


def test_mixed_activations_gradient():
    rng = np.random.default_rng(3)
    net = MLP(4, [(8, "relu"), (6, "tanh"), (5, "sigmoid"), (3, "leaky_relu")], 2, rng=2)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    target = rng.normal(size=(5, 2))
    y = net.forward_train(x)
    grad = net.backward((y - target).astype(np.float32))
    np.testing.assert_allclose(grad, _numeric_grad(net, x, target), rtol=2e-2, atol=2e-3)


def test_flat_params_and_views():
    net = MLP(4, [(64, "relu"), (64, "relu")], 2, rng=0)
    assert net.params.dtype == np.float32
    assert net.params.size == 4 * 64 + 64 + 64 * 64 + 64 + 64 * 2 + 2
    assert [w.shape for w in net.weights] == [(4, 64), (64, 64), (64, 2)]
    for w in net.weights + net.biases:
        assert np.shares_memory(w, net.params)
    net.params[:] = 0
    assert not net.weights[1].any()
    x = np.ones(4, dtype=np.float32)
    net.biases[-1][:] = [1.0, 2.0]
    np.testing.assert_array_equal(net.forward(x), [1.0, 2.0])
    assert net.forward(np.ones((3, 4))).shape == (3, 2)
    assert net.forward(np.ones((3, 4))).dtype == np.float32


def test_init_he_and_xavier_bounds():
    net = MLP(100, [(200, "relu"), (200, "tanh")], 50, rng=0)
    assert np.abs(net.weights[0]).max() <= np.sqrt(6 / 100)
    assert np.abs(net.weights[0]).max() > 0.9 * np.sqrt(6 / 100)  # He, not Xavier
    assert np.abs(net.weights[1]).max() <= np.sqrt(6 / 400)  # tanh: Xavier
    assert np.abs(net.weights[2]).max() <= np.sqrt(6 / 250)  # linear output: Xavier
    assert not any(b.any() for b in net.biases)


def test_same_seed_same_weights():
    a = MLP(4, [16], 2, rng=7)
    b = MLP(4, [16], 2, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(a.params, b.params)
    assert not np.array_equal(a.params, MLP(4, [16], 2, rng=8).params)


def test_architecture_copy_and_state_dict_roundtrip():
    net = MLP(3, [LayerSpec(8, "tanh"), (5, "leaky_relu")], 2, output_activation="linear", rng=0)
    arch = net.architecture()
    assert arch == {"input_size": 3, "hidden": [{"size": 8, "activation": "tanh"},
                                                {"size": 5, "activation": "leaky_relu"}],
                    "output_size": 2, "output_activation": "linear"}
    clone = net.copy()
    assert clone.architecture() == arch
    np.testing.assert_array_equal(clone.params, net.params)
    assert not np.shares_memory(clone.params, net.params)

    sd = net.state_dict()
    assert list(sd) == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
                        "layers.2.weight", "layers.2.bias"]
    assert sd["layers.0.weight"].shape == (8, 3)  # torch layout (out, in)
    other = MLP(3, [LayerSpec(8, "tanh"), (5, "leaky_relu")], 2, rng=99)
    other.load_state_dict(sd)
    np.testing.assert_array_equal(other.params, net.params)
    x = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    np.testing.assert_array_equal(other.forward(x), net.forward(x))
    # torch convention: y = x @ W.T + b
    h = np.tanh(x @ sd["layers.0.weight"].T + sd["layers.0.bias"])
    h = h @ sd["layers.1.weight"].T + sd["layers.1.bias"]
    h = np.where(h > 0, h, 0.01 * h)
    np.testing.assert_allclose(h @ sd["layers.2.weight"].T + sd["layers.2.bias"], net.forward(x), rtol=1e-5, atol=1e-6)

    other.params[:] = 0
    other.copy_params_from(net)
    np.testing.assert_array_equal(other.params, net.params)


def test_load_state_dict_rejects_bad_input():
    net = MLP(3, [4], 2, rng=0)
    sd = net.state_dict()
    before = net.params.copy()
    bad = dict(sd, **{"layers.1.weight": np.zeros((3, 4))})
    with pytest.raises(ValueError, match="layers.1.weight"):
        net.load_state_dict(bad)
    with pytest.raises(ValueError, match="missing"):
        net.load_state_dict({k: v for k, v in sd.items() if k != "layers.0.bias"})
    with pytest.raises(ValueError, match="unexpected"):
        net.load_state_dict(dict(sd, extra=np.zeros(1)))
    with pytest.raises(ValueError, match="NaN"):
        net.load_state_dict(dict(sd, **{"layers.0.bias": np.full(4, np.nan)}))
    np.testing.assert_array_equal(net.params, before)
    with pytest.raises(ValueError, match="architectures differ"):
        net.copy_params_from(MLP(3, [5], 2))


def test_bad_activation_rejected():
    with pytest.raises(ValueError, match="unknown activation"):
        MLP(3, [(4, "gelu")], 2)
    with pytest.raises(ValueError, match="unknown activation"):
        MLP(3, [4], 2, output_activation="softmax")


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_single_observation_path_matches_batch(activation):
    net = MLP(5, [(7, activation), (6, "relu")], 3, output_activation=activation, rng=4)
    x = np.random.default_rng(1).normal(size=(4, 5)).astype(np.float32)
    batch = net.forward(x)
    for row, expected in zip(x, batch):
        np.testing.assert_allclose(net.forward(row), expected, rtol=1e-5, atol=1e-6)
    net.params *= 0.5  # the single-observation views follow in-place parameter changes
    np.testing.assert_allclose(net.forward(x[0]), net.forward(x)[0], rtol=1e-5, atol=1e-6)
    assert net.forward(x[0].astype(np.float64)).dtype == np.float32


def test_large_batches_go_block_by_block_and_match_small_ones():
    net = MLP(4, [(16, "relu"), (8, "tanh")], 3, rng=5)
    x = np.random.default_rng(2).normal(size=(2500, 4)).astype(np.float32)  # two full 1024-row blocks + a partial
    whole = net.forward(x)
    assert whole.shape == (2500, 3) and whole.dtype == np.float32
    parts = np.concatenate([net.forward(x[i:i + 100]) for i in range(0, 2500, 100)])
    np.testing.assert_allclose(whole, parts, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.forward(x.reshape(50, 50, 4)), whole.reshape(50, 50, 3), rtol=1e-6, atol=1e-6)
    y = net.forward_train(x[:64])  # training work arrays are separate from the inference ones
    net.forward(x)
    np.testing.assert_array_equal(y, net.forward_train(x[:64]))
