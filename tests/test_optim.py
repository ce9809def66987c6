"""Optimisers, losses, gradient clipping and schedules."""

import numpy as np
import pytest

from drla_core.nn.losses import clip_grad_norm, huber, mse
from drla_core.nn.mlp import MLP
from drla_core.nn.optim import SGD, Adam
from drla_core.base.schedules import linear_schedule


def _quadratic(x):
    """f(x) = 0.5 * sum(a * (x - c)^2) with an ill-conditioned diagonal a."""
    a = np.linspace(0.5, 5.0, x.size, dtype=np.float32)
    c = np.arange(x.size, dtype=np.float32) / x.size
    return 0.5 * float(np.sum(a * (x - c) ** 2)), (a * (x - c)).astype(np.float32)


@pytest.mark.parametrize("make", [
    lambda p: SGD(p, lr=0.1),
    lambda p: SGD(p, lr=0.05, momentum=0.9),
    lambda p: Adam(p, lr=0.05),
])
def test_optimisers_decrease_a_quadratic(make):
    params = np.full(10, 3.0, dtype=np.float32)
    view = params[2:5]
    opt = make(params)
    start, _ = _quadratic(params)
    losses = []
    for _ in range(200):
        loss, grad = _quadratic(params)
        losses.append(loss)
        opt.step(grad)
    assert losses[-1] < 1e-2 * start
    assert params.dtype == np.float32
    assert np.shares_memory(view, params)  # updated in place: views stay valid


def test_adam_matches_reference_formula():
    rng = np.random.default_rng(0)
    p = rng.normal(size=5).astype(np.float32)
    ref = p.astype(np.float64)
    m = np.zeros(5)
    v = np.zeros(5)
    opt = Adam(p, lr=0.01, betas=(0.9, 0.999), eps=1e-8)
    for t in range(1, 4):
        g = rng.normal(size=5).astype(np.float32)
        opt.step(g)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g.astype(np.float64) ** 2
        ref -= 0.01 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    np.testing.assert_allclose(p, ref, rtol=1e-5, atol=1e-6)


def test_optimiser_trains_an_mlp_and_state_roundtrip():
    rng = np.random.default_rng(0)
    net = MLP(2, [(16, "tanh")], 1, rng=0)
    opt = Adam(net.params, lr=0.02)
    x = rng.uniform(-1, 1, size=(64, 2)).astype(np.float32)
    y = (x[:, :1] * x[:, 1:]).astype(np.float32)
    first = None
    for _ in range(300):
        loss, grad = mse(net.forward_train(x), y)
        first = loss if first is None else first
        opt.step(net.backward(grad))
    assert loss < 0.2 * first
    state = opt.state_dict()
    other = Adam(net.params.copy(), lr=1.0)
    other.load_state_dict(state)
    assert other.t == opt.t and other.lr == opt.lr
    np.testing.assert_allclose(other.m, opt.m, rtol=1e-6)
    np.testing.assert_allclose(other.v, opt.v, rtol=1e-6)


def test_adam_moments_are_the_usual_ones_and_betas_are_checked():
    rng = np.random.default_rng(1)
    opt = Adam(np.zeros(4, dtype=np.float32), lr=0.01, betas=(0.8, 0.99))
    m, v = np.zeros(4), np.zeros(4)
    for _ in range(3):
        g = rng.normal(size=4).astype(np.float32)
        opt.step(g)
        m, v = 0.8 * m + 0.2 * g, 0.99 * v + 0.01 * g.astype(np.float64) ** 2
    state = opt.state_dict()  # stored scaled inside, reported as the textbook moments
    np.testing.assert_allclose(state["m"], m, rtol=1e-5)
    np.testing.assert_allclose(state["v"], v, rtol=1e-5)
    with pytest.raises(ValueError, match="betas"):
        Adam(np.zeros(2, dtype=np.float32), betas=(0.9, 1.0))


def test_optimiser_rejects_non_flat_float32():
    with pytest.raises(TypeError):
        Adam(np.zeros((2, 2), dtype=np.float32))
    with pytest.raises(TypeError):
        SGD(np.zeros(3))


def test_huber_and_mse_values_and_gradients():
    pred = np.array([0.0, 0.5, 3.0, -4.0], dtype=np.float32)
    target = np.zeros(4, dtype=np.float32)
    loss, grad = huber(pred, target)
    assert loss == pytest.approx((0 + 0.125 + 2.5 + 3.5) / 4)
    np.testing.assert_allclose(grad, [0, 0.125, 0.25, -0.25])
    loss, grad = mse(pred, target)
    assert loss == pytest.approx((0 + 0.25 + 9 + 16) / 4)
    np.testing.assert_allclose(grad, 2 * pred / 4)
    assert grad.dtype == np.float32
    # finite-difference check of huber with delta != 1
    p = np.array([0.3, -2.0, 1.5], dtype=np.float64)
    t = np.zeros(3)
    _, g = huber(p.astype(np.float32), t, delta=0.7)
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1e-3
        num = (huber((p + e).astype(np.float32), t, 0.7)[0] - huber((p - e).astype(np.float32), t, 0.7)[0]) / 2e-3
        assert g[k] == pytest.approx(num, abs=1e-3)


def test_clip_grad_norm():
    g = np.array([3.0, 4.0], dtype=np.float32)
    out, norm = clip_grad_norm(g, 1.0)
    assert norm == pytest.approx(5.0)
    assert out is g and np.linalg.norm(g) == pytest.approx(1.0, rel=1e-5)
    g = np.array([0.3, 0.4], dtype=np.float32)
    _, norm = clip_grad_norm(g, 1.0)
    np.testing.assert_array_equal(g, np.array([0.3, 0.4], dtype=np.float32))


def test_linear_schedule():
    assert linear_schedule(1.0, 0.05, 0.1, 0.0) == 1.0
    assert linear_schedule(1.0, 0.0, 0.5, 0.25) == pytest.approx(0.5)
    assert linear_schedule(1.0, 0.05, 0.1, 0.1) == 0.05
    assert linear_schedule(1.0, 0.05, 0.1, 0.9) == 0.05
    assert linear_schedule(1.0, 0.05, 0.0, 0.0) == 0.05
