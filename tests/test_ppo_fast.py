"""PPO's fast paths give the same numbers as the plain ones: one Adam over the parameters laid side by side
(``AdamGroup``), networks living in given buffers, epochs over a pre-shuffled rollout, the heads without an
entropy term; and one update equals Stable-Baselines3's ``PPO.train`` on the same rollout from the same weights."""

from __future__ import annotations

import numpy as np
import pytest

from drla_core.base.spaces import Box, Discrete, MultiDiscrete
from drla_core.nn.mlp import MLP
from drla_core.nn.optim import Adam, AdamGroup
from drla_core.rl.policies import CategoricalHead, GaussianHead
from drla_core.rl.ppo import PPOAgent, PPOConfig


def test_adam_group_steps_bit_for_bit_as_separate_adams():
    rng = np.random.default_rng(0)
    sizes = [5, 7, 3]
    flat = rng.standard_normal(sum(sizes)).astype(np.float32)
    ends = np.cumsum([0] + sizes)
    views = [flat[a:b] for a, b in zip(ends[:-1], ends[1:])]
    alone = [v.copy() for v in views]
    parts = [Adam(v, lr=1e-2, eps=1e-5) for v in views]
    group = AdamGroup(flat, parts)
    ref = [Adam(v, lr=1e-2, eps=1e-5) for v in alone]

    def step_all():
        grad = rng.standard_normal(flat.size).astype(np.float32)
        group.step(grad)
        for opt, (a, b) in zip(ref, zip(ends[:-1], ends[1:])):
            opt.step(grad[a:b].copy())

    for _ in range(3):
        step_all()
    g0 = rng.standard_normal(sizes[0]).astype(np.float32)
    parts[0].step(g0)  # one part stepped on its own (as behaviour cloning steps the actor's Adam)
    ref[0].step(g0)
    for _ in range(2):  # the counts now differ: stepped part by part
        step_all()
    for opt in parts + ref:
        opt.lr = 3e-3
    step_all()
    for v, r, opt, ropt in zip(views, alone, parts, ref):
        assert np.array_equal(v, r)
        assert np.array_equal(opt.m, ropt.m) and np.array_equal(opt.v, ropt.v) and opt.t == ropt.t
    assert [p.t for p in parts] == [7, 6, 6]


def test_adam_group_rejects_parts_that_do_not_tile_the_buffer():
    flat = np.zeros(10, dtype=np.float32)
    with pytest.raises(ValueError, match="must lie one after another"):
        AdamGroup(flat, [Adam(flat[5:]), Adam(flat[:5])])
    with pytest.raises(ValueError, match="must cover params"):
        AdamGroup(flat, [Adam(flat[:4])])


def test_mlp_in_given_buffers_is_the_same_network():
    plain = MLP(4, [(16, "tanh"), (8, "relu")], 3, rng=5)
    n = MLP.param_count(4, [(16, "tanh"), (8, "relu")], 3)
    assert n == plain.params.size
    params, grad = np.full(n + 2, 7.0, dtype=np.float32), np.zeros(n + 2, dtype=np.float32)
    net = MLP(4, [(16, "tanh"), (8, "relu")], 3, rng=5, buffers=(params[1:-1], grad[1:-1]))
    assert np.array_equal(net.params, plain.params) and params[0] == 7.0 and params[-1] == 7.0
    assert np.shares_memory(net.weights[1], params) and np.shares_memory(net.biases[2], params)
    x = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32)
    assert np.array_equal(net.forward_train(x), plain.forward_train(x))
    g = np.ones((6, 3), dtype=np.float32)
    assert np.array_equal(net.backward(g), plain.backward(g))
    assert np.array_equal(grad[1:-1], plain.grad)
    with pytest.raises(ValueError, match=f"contiguous float32 vectors of {n} elements"):
        MLP(4, [(16, "tanh"), (8, "relu")], 3, buffers=(params[:n - 1], grad[:n - 1]))


@pytest.mark.parametrize("space", [Discrete(3), MultiDiscrete([2, 3]), Box(-1.0, 1.0, (2,))])
def test_ppo_parameters_lie_in_one_vector(space):
    agent = PPOAgent(Box(-1.0, 1.0, (3,)), space, PPOConfig(n_steps=4, batch_size=8), seed=0)
    vectors = agent._param_vectors()
    assert sum(v.size for v in vectors) == agent._flat_params.size
    assert all(np.shares_memory(v, agent._flat_params) for v in vectors)
    assert all(np.shares_memory(opt._m, agent._adam.joint._m) for opt in agent.optimizers)


def _rollout(agent: PPOAgent, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(agent.config.n_steps - 1):
        x = rng.standard_normal((n, 3)).astype(np.float32)
        a = agent.act_batch(x)
        agent.observe_batch(x, a, rng.standard_normal(n), x, rng.random(n) < 0.1, np.zeros(n, dtype=bool))


@pytest.mark.parametrize("space,kw", [(Discrete(3), {}), (Box(-1.0, 1.0, (2,)), {"ent_coef": 0.01}),
                                      (MultiDiscrete([2, 3]), {"shared_trunk": True, "clip_range_vf": 0.1})])
def test_epochs_over_a_shuffled_copy_equal_minibatches_picked_by_index(space, kw):
    """``update`` (the rollout shuffled once per epoch, minibatches as slices) learns exactly what PPO's
    minibatches picked by index from the same permutations learn; 100 rows in minibatches of 32: a short last one."""
    config = PPOConfig(n_steps=25, batch_size=32, n_epochs=3, **kw)
    fast, plain = (PPOAgent(Box(-1.0, 1.0, (3,)), space, config, seed=3) for _ in range(2))
    for agent in (fast, plain):
        _rollout(agent, 4, seed=9)
    x = np.random.default_rng(10).standard_normal((4, 3)).astype(np.float32)
    last = fast._values(x)
    loss = fast.observe_batch(x, fast.act_batch(x), np.ones(4), x, np.zeros(4, dtype=bool),
                              np.zeros(4, dtype=bool))["loss"]
    plain.act_batch(x)  # the last step as observe_batch records it, without its update
    plain.buf_rewards[-1], plain.buf_dones[-1], plain.pos = 1.0, 0.0, 0
    adv, returns = plain.advantages(last)
    m = 100
    data = (plain.buf_obs.reshape(m, 3), plain.buf_actions.reshape((m,) + plain.buf_actions.shape[2:]),
            plain.buf_logp.reshape(m), plain.buf_values.reshape(m), adv.reshape(m), returns.reshape(m))
    plain.num_timesteps = fast.num_timesteps
    losses = []
    for _ in range(3):
        order = plain.rng.permutation(m)
        for start in range(0, m, 32):
            idx = order[start:start + 32]
            losses.append(plain.minibatch_step(*(a[idx] for a in data), 0.2)[0])
    assert np.array_equal(fast._flat_params, plain._flat_params)
    assert loss == pytest.approx(np.mean(losses), rel=1e-12)


@pytest.mark.parametrize("head", [CategoricalHead([3]), CategoricalHead([2, 3], multi=True),
                                  GaussianHead(-np.ones(2), np.ones(2))])
def test_heads_without_an_entropy_term_equal_a_zero_weight(head):
    rng = np.random.default_rng(2)
    out = rng.standard_normal((5, head.n_outputs)).astype(np.float32)
    actions = head.sample(out, rng)
    head.evaluate(out, actions)
    g = rng.standard_normal(5).astype(np.float32)
    with_zero = head.backward(g, np.zeros(5, dtype=np.float32))
    without = head.backward(g, None)
    for a, b in zip(with_zero, without):
        assert (a is None and b is None) or np.array_equal(a, b)


def test_one_update_equals_stable_baselines3_ppo_train():
    """The same weights and the same rollout (SB3's, CartPole, rl-zoo's settings): DRLA's advantages equal SB3's
    and its 20 epochs end at SB3's weights to float32 rounding (one full-batch minibatch per epoch)."""
    sb3 = pytest.importorskip("stable_baselines3")
    torch = pytest.importorskip("torch")
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    zoo = dict(n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0)
    model = sb3.PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=8, seed=0), **zoo, seed=0, device="cpu",
                    learning_rate=lambda p: 1e-3 * p, clip_range=lambda p: 0.2 * p)
    model._setup_learn(100_000)

    class Nothing(BaseCallback):
        def _on_step(self) -> bool:
            return True

    callback = Nothing()
    callback.init_callback(model)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, 32)
    model._update_current_progress_remaining(model.num_timesteps, 100_000)
    rb = model.rollout_buffer
    agent = PPOAgent(Box(-5.0, 5.0, (4,)), Discrete(2), PPOConfig(**zoo, learning_rate=1e-3, lr_schedule="linear",
                                                                 clip_schedule="linear"), seed=0)
    state = {k: v.detach().clone().numpy() for k, v in model.policy.state_dict().items()}

    def layers(prefix: str, out: str) -> list[tuple[str, str]]:
        return [(f"mlp_extractor.{prefix}.{i}.weight", f"mlp_extractor.{prefix}.{i}.bias") for i in (0, 2)] + [
            (f"{out}.weight", f"{out}.bias")]

    nets = ((agent.actor, layers("policy_net", "action_net")), (agent.critic, layers("value_net", "value_net")))
    for net, names in nets:
        for i, (w, b) in enumerate(names):
            net.weights[i][...] = state[w].T
            net.biases[i][...] = state[b]
    agent._buffer(8)
    agent.buf_obs[...] = rb.observations.reshape(32, 8, 4)
    agent.buf_actions[...] = rb.actions.reshape(32, 8)
    agent.buf_logp[...], agent.buf_values[...], agent.buf_rewards[...] = rb.log_probs, rb.values, rb.rewards
    agent.buf_dones[:-1] = rb.episode_starts[1:]
    agent.buf_dones[-1] = model._last_episode_starts
    with torch.no_grad():
        last = model.policy.predict_values(torch.as_tensor(model._last_obs)).numpy().ravel()
    adv, returns = agent.advantages(last)
    assert np.allclose(adv, rb.advantages, atol=1e-6) and np.allclose(returns, rb.returns, atol=1e-6)
    agent.num_timesteps = model.num_timesteps
    agent.update(last)
    model.train()
    after = {k: v.detach().numpy() for k, v in model.policy.state_dict().items()}
    assert agent.stats["learning_rate"] == pytest.approx(model.policy.optimizer.param_groups[0]["lr"])
    moved = 0.0
    for net, names in nets:
        for i, (w, b) in enumerate(names):
            assert np.allclose(net.weights[i], after[w].T, atol=2e-6)
            assert np.allclose(net.biases[i], after[b], atol=2e-6)
            moved = max(moved, float(np.abs(after[w] - state[w]).max()))
    assert moved > 1e-3  # the update did move the weights, far beyond the tolerance
