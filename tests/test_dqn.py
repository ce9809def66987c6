"""DQN: the TD target's terminated/truncated handling, target updates, keep-best, learning tests; CartPole."""

import math

import numpy as np
import pytest

from drla_core.rl.dqn import DQNAgent, DQNConfig
from drla_core.base.env import check_env
from drla_core.envs.cartpole import CartPole
from drla_core.nn.mlp import LayerSpec
from drla_core.base.spaces import Box, Discrete
from drla_core.rl.train import Callback, TrainingRun

OBS = Box(-1.0, 1.0, (3,))
ACTIONS = Discrete(2)


def _constant_q_agent(c, gamma=0.9, double_dqn=False, loss="mse"):
    """An agent whose networks output Q = c for every state and action, and that cannot learn (lr 0)."""
    cfg = DQNConfig(learning_rate=0.0, gamma=gamma, batch_size=1, buffer_size=4, double_dqn=double_dqn, loss=loss,
                    hidden=[LayerSpec(4, "relu")], max_grad_norm=1e9)
    agent = DQNAgent(OBS, ACTIONS, cfg, seed=0)
    for net in (agent.q_network, agent.target_network):
        net.params[:] = 0.0
        net.biases[-1][:] = c
    return agent


@pytest.mark.parametrize("double_dqn", [False, True])
def test_td_target_terminated_stops_bootstrap_truncated_does_not(double_dqn):
    c, r, gamma = 2.0, 0.5, 0.9
    obs = np.zeros(3, dtype=np.float32)
    cases = [
        ((False, False), r + gamma * c),
        ((True, False), r),             # terminal state: no bootstrap
        ((False, True), r + gamma * c),  # time limit: the next state still has value
        ((True, True), r),
    ]
    for (terminated, truncated), td_target in cases:
        agent = _constant_q_agent(c, gamma, double_dqn)
        agent.replay_buffer.add(obs, 1, r, obs, terminated, truncated)
        loss = agent.update(gradient_steps=1)
        assert loss == pytest.approx((c - td_target) ** 2, rel=1e-5), (terminated, truncated)


def test_gradient_only_flows_through_the_taken_action():
    agent = _constant_q_agent(0.0)
    agent.config.learning_rate = 0.1
    agent.optimizer.lr = 0.1
    obs = np.ones(3, dtype=np.float32)
    agent.replay_buffer.add(obs, 1, 1.0, obs, True, False)
    before = agent.q_network.biases[-1].copy()
    agent.update(gradient_steps=1)
    after = agent.q_network.biases[-1]
    assert after[0] == before[0] and after[1] > before[1]  # Q(s, 1) moved towards the reward only


def test_hard_and_soft_target_updates():
    agent = DQNAgent(OBS, ACTIONS, DQNConfig(tau=1.0), seed=0)
    agent.q_network.params += 1.0
    agent.num_timesteps = 10
    agent.update_target()
    np.testing.assert_array_equal(agent.target_network.params, agent.q_network.params)

    soft = DQNAgent(OBS, ACTIONS, DQNConfig(tau=0.5), seed=0)
    start = soft.target_network.params.copy()
    soft.q_network.params[:] = start + 4.0
    soft.update_target(syncs=2)  # two Polyak steps in a row: 1 - 0.5^2 = 0.75 of the way
    np.testing.assert_allclose(soft.target_network.params, start + 3.0, rtol=1e-6, atol=1e-6)


def test_target_network_is_synced_after_phases_only():
    cfg = DQNConfig(learning_starts=10, train_freq=8, gradient_steps=4, target_update_interval=10, batch_size=4,
                    hidden=[LayerSpec(8)])
    agent = DQNAgent(OBS, ACTIONS, cfg, seed=0)
    rng = np.random.default_rng(0)
    initial = agent.target_network.params.copy()
    for step in range(1, 25):
        obs = rng.uniform(-1, 1, 3).astype(np.float32)
        out = agent.observe(obs, step % 2, 1.0, obs, False, False)
        if step < 16:
            assert out == {} and np.array_equal(agent.target_network.params, initial)
        if step == 16:  # first phase: 4 gradient steps, then the target catches up
            assert "loss" in out and math.isfinite(out["loss"])
            assert agent.n_updates == 4
            np.testing.assert_array_equal(agent.target_network.params, agent.q_network.params)
            assert not np.array_equal(agent.q_network.params, initial)


def test_epsilon_schedule_and_greedy_act():
    cfg = DQNConfig(exploration_initial_eps=1.0, exploration_final_eps=0.1, exploration_fraction=0.5,
                    learning_starts=10**9)
    agent = DQNAgent(OBS, ACTIONS, cfg, seed=0)
    agent.on_training_start(100)
    obs = np.zeros(3, dtype=np.float32)
    assert agent.epsilon == 1.0
    for _ in range(25):
        agent.observe(obs, 0, 0.0, obs, False, False)
    assert agent.epsilon == pytest.approx(0.55)
    for _ in range(50):
        agent.observe(obs, 0, 0.0, obs, False, False)
    assert agent.epsilon == pytest.approx(0.1)
    greedy = agent.predict(obs)
    assert all(agent.act(obs, explore=False) == greedy for _ in range(20))
    agent.epsilon = 1.0
    assert {agent.act(obs) for _ in range(100)} == {0, 1}
    assert isinstance(agent.act(obs), int)


def test_keep_best_restores_best_evaluated_params():
    agent = DQNAgent(OBS, ACTIONS, DQNConfig(keep_best=True), seed=0)
    best = agent.q_network.params.copy()
    agent.on_evaluation(100, 50.0)
    agent.q_network.params += 1.0
    agent.on_evaluation(200, 10.0)  # worse: not kept
    agent.on_training_end()
    np.testing.assert_array_equal(agent.q_network.params, best)
    np.testing.assert_array_equal(agent.target_network.params, best)


def test_config_validation_and_dict():
    with pytest.raises(ValueError, match="loss"):
        DQNConfig(loss="l1")
    with pytest.raises(ValueError, match="tau"):
        DQNConfig(tau=0.0)
    cfg = DQNConfig(hidden=[(32, "tanh"), 16])
    assert cfg.hidden == [LayerSpec(32, "tanh"), LayerSpec(16, "relu")]
    assert cfg.to_dict()["hidden"] == [{"size": 32, "activation": "tanh"}, {"size": 16, "activation": "relu"}]
    with pytest.raises(TypeError):
        DQNAgent(OBS, Box(-1, 1, (2,)))


def test_image_observations_are_flattened():
    obs_space = Box(0, 255, (5, 6), dtype=np.uint8)
    cfg = DQNConfig(batch_size=4, learning_starts=4, train_freq=4, gradient_steps=2, hidden=[LayerSpec(8)])
    agent = DQNAgent(obs_space, Discrete(3), cfg, seed=0)
    assert agent.q_network.input_size == 30
    rng = np.random.default_rng(0)
    for _ in range(8):
        img = rng.integers(0, 256, (5, 6), dtype=np.uint8)
        agent.observe(img, agent.act(img), 0.0, img, False, False)
    assert agent.replay_buffer.obs.dtype == np.uint8
    assert agent.n_updates == 2


def test_to_model_predicts_like_the_agent():
    model_io = pytest.importorskip("drla_core.io.model_io")
    agent = DQNAgent(OBS, ACTIONS, DQNConfig(hidden=[LayerSpec(8, "tanh")]), seed=3)
    model = agent.to_model({"note": "test"})
    assert isinstance(model, model_io.Model)
    x = np.random.default_rng(0).uniform(-1, 1, (10, 3)).astype(np.float32)
    for row in x:
        assert model.act(row) == agent.predict(row)


def test_learns_identity_env():
    identity = pytest.importorskip("drla_core.envs.identity")
    env, eval_env = identity.IdentityEnv(n=4, ep_length=50), identity.IdentityEnv(n=4, ep_length=50)
    cfg = DQNConfig(learning_rate=1e-3, learning_starts=200, train_freq=16, gradient_steps=8, batch_size=32,
                    target_update_interval=100, exploration_fraction=0.3, hidden=[LayerSpec(32)])
    agent = DQNAgent(env.observation_space, env.action_space, cfg, seed=0)
    run = TrainingRun(env, agent, 2000, seed=0, eval_env=eval_env, eval_interval=1000, eval_episodes=5).run()
    assert run.history.final_eval[1] >= 45  # of 50


class _StopAfterSolved(Callback):
    """Stops ``more_evals`` evaluations after the first one that reaches ``solved``."""

    def __init__(self, solved, more_evals):
        self.solved, self.more_evals = solved, more_evals

    def on_step(self, run):
        evals = run.history.evals
        first = next((i for i, (_, mean, _) in enumerate(evals) if mean >= self.solved), None)
        return first is None or len(evals) - 1 - first < self.more_evals


@pytest.mark.slow
def test_learns_cartpole():
    """CartPole is solved (an evaluation of 10 episodes averages 400 or more) within the benchmark
    protocol's 50k steps, and keep-best hands back the best evaluated network: three evaluations
    after the first solved one the run stops, and the final evaluation (same evaluation seed) scores
    like the best.

    Deterministic (fixed seed, no wall clock, not load dependent), but the trajectory changes with
    float32 rounding, and OpenBLAS rounds differently on different CPUs: its kernel is chosen per
    CPU at run time. At seed 6 the best of the first 16k steps was 500 with the SkylakeX (AVX-512)
    kernels and 294.9 with the Haswell/Zen (AVX2) ones (``OPENBLAS_CORETYPE=Haswell``), which is why
    a test that stopped at 16k failed on some machines. Within 50k steps every seed 0-8 is solved on
    both (Haswell 24-43k steps, SkylakeX 7-43k; Prescott, Nehalem and Sandybridge solve seed 6 too);
    a DQN that does not learn never reaches 400.
    """
    env, eval_env = CartPole(), CartPole()
    agent = DQNAgent(env.observation_space, env.action_space, DQNConfig(), seed=6)
    run = TrainingRun(env, agent, 50_000, seed=6, eval_env=eval_env, eval_interval=1024, eval_episodes=10,
                      callbacks=[_StopAfterSolved(400, more_evals=3)]).run()
    means = [m for _, m, _ in run.history.evals]
    best = max(means)
    assert best >= 400, f"not solved in {run.steps} steps; evaluations {means}"
    assert run.history.final_eval[1] == pytest.approx(best)


# ---- CartPole -------------------------------------------------------------------------------------


def test_cartpole_passes_check_env():
    check_env(CartPole())


def test_cartpole_reset_matches_gymnasium():
    # gymnasium.make("CartPole-v1").reset(seed=123, options={"low": 0, "high": 1}), from Gymnasium's docstring
    obs, info = CartPole().reset(seed=123, options={"low": 0, "high": 1})
    np.testing.assert_array_equal(obs, np.array([0.6823519, 0.05382102, 0.22035988, 0.18437181], dtype=np.float32))
    assert obs.dtype == np.float32 and info == {}


def _reference_step(state, action):
    """Gymnasium CartPole-v1 step written out independently (float64, explicit Euler)."""
    x, x_dot, theta, theta_dot = state
    force = 10.0 if action == 1 else -10.0
    total_mass, polemass_length = 1.1, 0.05
    temp = (force + polemass_length * theta_dot**2 * math.sin(theta)) / total_mass
    thetaacc = (9.8 * math.sin(theta) - math.cos(theta) * temp) / (
        0.5 * (4.0 / 3.0 - 0.1 * math.cos(theta) ** 2 / total_mass))
    xacc = temp - polemass_length * thetaacc * math.cos(theta) / total_mass
    return (x + 0.02 * x_dot, x_dot + 0.02 * xacc, theta + 0.02 * theta_dot, theta_dot + 0.02 * thetaacc)


def test_cartpole_dynamics_and_episode_end():
    env = CartPole()
    env.reset(seed=0)
    state = env.state
    rng = np.random.default_rng(1)
    for _ in range(200):
        action = int(rng.integers(2))
        state = _reference_step(state, action)
        obs, reward, terminated, truncated, info = env.step(action)
        assert env.state == state
        np.testing.assert_array_equal(obs, np.array(state, dtype=np.float32))
        assert reward == 1.0 and not truncated and info == {}
        expected_end = abs(state[0]) > 2.4 or abs(state[2]) > 12 * 2 * math.pi / 360
        assert terminated == expected_end
        if terminated:
            break
    assert terminated  # random pushes drop the pole well before 200 steps


def test_cartpole_truncates_at_500():
    env = CartPole()
    env.reset(seed=0)
    env.theta_threshold_radians = env.x_threshold = float("inf")  # never terminate
    for t in range(1, 501):
        _, _, terminated, truncated, _ = env.step(t % 2)
        assert not terminated and truncated == (t == 500)
    with pytest.raises(ValueError):
        env.step(2)
