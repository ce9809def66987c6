"""Vector environments: N copies equal N single envs, autoreset keeps the final observation, the checker
catches broken vector envs; DQN's batched act/observe; VectorTrainingRun's per-copy accounting."""

import math

import numpy as np
import pytest

from drla_core.rl.base import TrainingJob
from drla_core.rl.dqn import DQNAgent, DQNConfig
from drla_core.base.env import Env, EnvCheckError
from drla_core.envs import make
from drla_core.envs.cartpole import CartPole
from drla_core.envs.identity import IdentityEnv
from drla_core.nn.mlp import LayerSpec
from drla_core.rl.replay_buffer import ReplayBuffer
from drla_core.base.spaces import Box, Discrete, MultiDiscrete
from drla_core.rl.train import Callback, TrainingRun
from drla_core.rl.vector_train import VectorTrainingRun
from drla_core.base.vector_env import (
    SyncVectorEnv,
    VectorEnv,
    add_info,
    autoreset_step,
    batch_space,
    check_vector_env,
    copy_seeds,
    real_next_obs,
    vector_info_values,
)

ENVS = {"cartpole": lambda: CartPole(), "tank_grid": lambda: make("tank_grid", max_steps=30),
        "evacuation": lambda: make("evacuation", max_steps=20)}


def _single_runs(make_env, n, seed, actions):
    """N single envs seeded seed + i, stepped with actions[t, i], reset by hand where they end."""
    envs = [make_env() for _ in range(n)]
    obs = [env.reset(seed=seed + i)[0] for i, env in enumerate(envs)]
    trace = [np.stack(obs)]
    for t in range(len(actions)):
        step_obs, finals = [], []
        for i, env in enumerate(envs):
            o, r, term, trunc, info = env.step(actions[t, i])
            finals.append(o if term or trunc else None)
            if term or trunc:
                o, _ = env.reset()
            step_obs.append(o)
        trace.append((np.stack(step_obs), finals))
    return trace


@pytest.mark.parametrize("name", sorted(ENVS))
def test_sync_vector_env_equals_n_single_envs_with_the_same_seeds(name):
    make_env, n, seed = ENVS[name], 4, 7
    venv = SyncVectorEnv([make_env] * n)
    rng = np.random.default_rng(0)
    actions = np.stack([[venv.single_action_space.sample(rng) for _ in range(n)] for _ in range(80)])
    expected = _single_runs(make_env, n, seed, actions)
    obs, _ = venv.reset(seed=seed)
    np.testing.assert_array_equal(obs, expected[0])
    ended_any = False
    for t in range(len(actions)):
        obs, rewards, terminated, truncated, infos = venv.step(actions[t])
        step_obs, finals = expected[t + 1]
        np.testing.assert_array_equal(obs, step_obs)
        for i, final in enumerate(finals):
            assert (final is not None) == bool(terminated[i] or truncated[i])
            if final is not None:
                ended_any = True
                assert infos["_final_obs"][i]
                np.testing.assert_array_equal(infos["final_obs"][i], final)
    assert ended_any
    check_vector_env(venv, steps=60, make_env=make_env)


def test_autoreset_keeps_final_obs_and_final_info():
    venv = SyncVectorEnv([lambda: make("evacuation", max_steps=3)] * 2)
    venv.reset(seed=0)
    for _ in range(2):
        _, _, terminated, truncated, infos = venv.step(np.array([0, 0]))
        if not (terminated | truncated).any():
            assert "final_obs" not in infos
    obs, rewards, terminated, truncated, infos = venv.step(np.array([0, 0]))  # third step: the time limit
    ended = terminated | truncated
    assert ended.all()
    assert infos["_final_obs"].tolist() == [True, True] and infos["_final_info"].tolist() == [True, True]
    assert infos["final_obs"].shape == obs.shape and infos["final_obs"].dtype == np.float32
    # the final observation is the ended episode's last one, obs the new episode's first
    single = make("evacuation", max_steps=3)
    single.reset(seed=0)
    for _ in range(3):
        last, *_ = single.step(0)
    np.testing.assert_array_equal(infos["final_obs"][0], last)
    first, _ = single.reset()
    np.testing.assert_array_equal(obs[0], first)
    # the ended step's info is under final_info, with the task metric; real_next_obs puts final_obs back
    values, present = vector_info_values(infos, "escaped", ended)
    assert present.all() and values.tolist() == infos["final_info"]["escaped"].tolist()
    np.testing.assert_array_equal(real_next_obs(obs, infos), infos["final_obs"])


def test_spaces_seeds_and_infos():
    venv = SyncVectorEnv([lambda: make("tank_grid")] * 3)
    assert venv.action_space == MultiDiscrete([8, 8, 8]) and venv.observation_space.shape == (3, 133)
    assert venv.task_metric == "hit" and len(venv) == 3
    assert batch_space(Box(-1.0, 2.0, (2,)), 2) == Box(np.full((2, 2), -1.0), np.full((2, 2), 2.0))
    assert copy_seeds(5, 3) == [5, 6, 7] and copy_seeds(None, 2) == [None, None]
    with pytest.raises(ValueError, match="2 seeds for 3 copies"):
        copy_seeds([1, 2], 3)
    a, _ = venv.reset(seed=[9, 3, 4])
    b, _ = venv.reset(seed=3)
    np.testing.assert_array_equal(a[1:], b[:2])
    infos = add_info({}, {"hit": 1, "name": "x"}, 1, 3)
    assert infos["hit"].tolist() == [0, 1, 0] and infos["_hit"].tolist() == [False, True, False]
    assert infos["name"].dtype == object
    with pytest.raises(ValueError, match="actions of shape"):
        venv.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="other spaces"):
        SyncVectorEnv([lambda: make("tank_grid"), lambda: make("tank_grid", width=4)])


def test_autoreset_step_for_copies_stepped_at_once():
    """What a scene with N copies does: step all copies, then reset the ended ones one by one."""
    obs = np.arange(6, dtype=np.float32).reshape(3, 2)
    resets = []

    def reset_copy(i):
        resets.append(i)
        return np.full(2, -i, dtype=np.float32), {"start": i}

    out_obs, rewards, term, trunc, infos = autoreset_step(
        obs.copy(), np.array([1.0, 2.0, 3.0]), np.array([False, True, False]), np.array([False, False, True]),
        [{"hit": 1}, {"hit": 0}, {}], reset_copy)
    assert resets == [1, 2]
    np.testing.assert_array_equal(out_obs, [[0, 1], [-1, -1], [-2, -2]])
    np.testing.assert_array_equal(infos["final_obs"][1:], obs[1:])
    assert infos["_final_obs"].tolist() == [False, True, True]
    assert infos["start"].tolist() == [0, 1, 2] and infos["_start"].tolist() == [False, True, True]
    assert infos["final_info"]["hit"].tolist() == [0, 0, 0] and infos["final_info"]["_hit"].tolist() == [False, True,
                                                                                                         False]
    values, present = vector_info_values(infos, "hit", term | trunc)
    assert values.tolist() == [1, 0, 0] and present.tolist() == [True, True, False]


class _SharedRngEnv(Env):
    """A broken copy: every instance draws from ONE generator, so copies are not independent."""

    shared = np.random.default_rng(0)

    def __init__(self):
        self.observation_space = Box(0.0, 1.0, (1,))
        self.action_space = Discrete(2)

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            type(self).shared = np.random.default_rng(seed)
        return np.array([type(self).shared.random()], dtype=np.float32), {}

    def step(self, action):
        return np.array([type(self).shared.random()], dtype=np.float32), 0.0, False, False, {}


class _NoAutoreset(SyncVectorEnv):
    """A broken vector env: ended copies are not reset and no final_obs is kept."""

    def step(self, actions):
        obs = np.stack([np.asarray(e.step(a)[0]) for e, a in zip(self.envs, actions)])
        ended = np.array([e.state is not None and e.elapsed_steps >= 5 for e in self.envs])
        return obs, np.ones(self.num_envs), ended, np.zeros(self.num_envs, bool), {}


def test_check_vector_env_catches_broken_envs():
    with pytest.raises(EnvCheckError, match="not independent"):
        check_vector_env(SyncVectorEnv([_SharedRngEnv] * 2))
    with pytest.raises(EnvCheckError, match="final_obs"):
        check_vector_env(_NoAutoreset([CartPole] * 2))

    class WrongDtype(SyncVectorEnv):
        def step(self, actions):
            obs, r, te, tr, info = super().step(actions)
            return obs, r.astype(np.float32), te, tr, info

    with pytest.raises(EnvCheckError, match="rewards must be a"):
        check_vector_env(WrongDtype([CartPole] * 2))

    class ReusesItsBuffer(SyncVectorEnv):
        def step(self, actions):
            obs, *rest = super().step(actions)
            if not hasattr(self, "buffer"):
                self.buffer = obs
            self.buffer[...] = obs
            return (self.buffer, *rest)

    with pytest.raises(EnvCheckError, match="wrote into the observation array"):
        check_vector_env(ReusesItsBuffer([CartPole] * 2))

    # one copy differing from the single env it claims to be
    with pytest.raises(EnvCheckError, match="differs from a single environment"):
        check_vector_env(SyncVectorEnv([lambda: CartPole(max_episode_steps=5)] * 2), make_env=CartPole)


def test_a_base_vector_env_must_implement_reset_and_step():
    with pytest.raises(NotImplementedError):
        VectorEnv().reset()


# ---- replay and DQN batches -----------------------------------------------------------------------


def test_replay_add_batch_equals_single_adds_across_the_wrap():
    rng = np.random.default_rng(0)
    one, many = ReplayBuffer(7, (2,)), ReplayBuffer(7, (2,))
    for n in (3, 5, 9, 1):
        obs = rng.normal(size=(n, 2)).astype(np.float32)
        acts, rew = rng.integers(0, 3, n), rng.normal(size=n)
        term, trunc = rng.random(n) < 0.3, rng.random(n) < 0.3
        for i in range(n):
            one.add(obs[i], acts[i], rew[i], obs[i] + 1, term[i], trunc[i])
        many.add_batch(obs, acts, rew, obs + 1, term, trunc)
        assert (one.pos, one.full) == (many.pos, many.full)
        for field in ("obs", "next_obs", "actions", "rewards", "terminated", "truncated"):
            np.testing.assert_array_equal(getattr(one, field), getattr(many, field))


def _config(**kw):
    return DQNConfig(**{"learning_starts": 20, "train_freq": 8, "gradient_steps": 4, "batch_size": 8,
                        "target_update_interval": 10, "hidden": [LayerSpec(16)], **kw})


def test_observe_batch_of_one_copy_is_observe():
    obs_space, acts = Box(-1.0, 1.0, (3,)), Discrete(2)
    single, batched = DQNAgent(obs_space, acts, _config(), seed=1), DQNAgent(obs_space, acts, _config(), seed=1)
    for agent in (single, batched):
        agent.on_training_start(200)
    rng = np.random.default_rng(0)
    for _ in range(60):
        o, o2 = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
        a, r, term = int(rng.integers(2)), float(rng.normal()), bool(rng.random() < 0.1)
        out1 = single.observe(o, a, r, o2, term, False)
        out2 = batched.observe_batch(o[None], np.array([a]), np.array([r]), o2[None], np.array([term]),
                                     np.array([False]))
        assert out1.keys() == out2.keys() and single.epsilon == batched.epsilon
    assert single.n_updates == batched.n_updates > 0
    np.testing.assert_array_equal(single.q_network.params, batched.q_network.params)
    np.testing.assert_array_equal(single.target_network.params, batched.target_network.params)


@pytest.mark.parametrize("n", [3, 16, 40])
def test_observe_batch_counts_env_steps_for_every_schedule(n):
    """N copies: updates per env step are one copy's (gradient_steps / train_freq), whatever N."""
    agent = DQNAgent(Box(-1.0, 1.0, (3,)), Discrete(2), _config(), seed=0)
    agent.on_training_start(1000)
    obs = np.zeros((n, 3), dtype=np.float32)
    calls = 0
    while agent.num_timesteps + n <= 400:
        agent.observe_batch(obs, np.zeros(n, np.int64), np.zeros(n), obs, np.zeros(n, bool), np.zeros(n, bool))
        calls += 1
    steps = agent.num_timesteps
    assert steps == calls * n
    # one copy: a phase of 4 gradient steps at every multiple of 8 above learning_starts (20)
    assert agent.n_updates == 4 * (steps // 8 - 20 // 8)
    assert agent.epsilon == pytest.approx(1.0 - (1.0 - 0.04) * steps / 1000 / 0.16 if steps < 160 else 0.04)
    assert agent.replay_buffer.pos == steps


def test_act_batch_is_one_greedy_call_and_explores_per_copy():
    agent = DQNAgent(Box(-1.0, 1.0, (3,)), Discrete(4), _config(), seed=0)
    obs = np.random.default_rng(1).uniform(-1, 1, (50, 3)).astype(np.float32)
    greedy = agent.act_batch(obs, explore=False)
    assert greedy.dtype == np.int64 and greedy.shape == (50,)
    assert greedy.tolist() == [agent.predict(o) for o in obs]
    agent.epsilon = 0.5
    explored = agent.act_batch(obs)
    differs = explored != greedy
    assert 0 < differs.sum() < 50  # some copies explored, others did not
    agent.epsilon = 0.0
    assert agent.act_batch(obs).tolist() == greedy.tolist()


# ---- the vector training run --------------------------------------------------------------------------


def _identity_run(n, total=600, seed=0, **kw):
    venv = SyncVectorEnv([lambda: IdentityEnv(n=3, ep_length=10)] * n)
    agent = DQNAgent(venv.single_observation_space, venv.single_action_space,
                     _config(learning_starts=50, train_freq=4, gradient_steps=2), seed=seed)
    return VectorTrainingRun(venv, agent, total, seed=seed, **kw)


def test_vector_run_records_every_copys_episodes():
    run = _identity_run(4, total=400).run()
    h = run.history
    assert run.steps == 400 == h.steps and run.episodes == 40  # 4 copies x 100 steps / 10 per episode
    assert h.episode_lengths == [10] * 40 and h.episode_end_steps[:4] == [40] * 4
    assert all(0 <= r <= 10 for r in h.episode_returns)
    assert h.task_metric == "correct" and len(h.episode_metric_counts) == 40
    assert all(c == 10 for c in h.episode_metric_counts)  # identity reports 'correct' on every step
    np.testing.assert_allclose(h.episode_metric_sums, h.episode_returns)
    assert run.status()["Copies"] == "4" and run.agent.n_updates == 2 * (400 // 4 - 50 // 4)
    assert run.to_model().meta["copies"] == 4 and isinstance(run, TrainingJob)


def test_vector_run_is_reproducible_and_slices_do_not_matter():
    whole = _identity_run(3, total=300).run()
    sliced = _identity_run(3, total=300)
    while not sliced.done:
        sliced.advance(max_steps=7)
    assert whole.history.episode_returns == sliced.history.episode_returns
    np.testing.assert_array_equal(whole.agent.q_network.params, sliced.agent.q_network.params)


def test_vector_run_evaluates_on_a_single_env_and_resumes():
    calls = []

    class Count(Callback):
        def on_eval(self, run):
            calls.append(run.steps)

    run = _identity_run(4, total=400, eval_env=IdentityEnv(n=3, ep_length=10), eval_interval=100,
                        eval_episodes=2, callbacks=[Count()])
    assert run.advance(max_steps=10) == 12  # whole vector steps: 3 of 4 copies
    run.resume(SyncVectorEnv([lambda: IdentityEnv(n=3, ep_length=10)] * 4))
    run.run()
    assert calls == [100, 200, 300, 400] and run.history.final_eval is not None
    assert math.isfinite(run.history.evals[-1][1])
    with pytest.raises(ValueError, match="pass eval_env"):
        _identity_run(2, eval_interval=10)
    with pytest.raises(TypeError, match="needs a VectorEnv"):
        VectorTrainingRun(CartPole(), None, 10)
    with pytest.raises(ValueError, match="4 copies"):
        run.resume(SyncVectorEnv([CartPole]))


def test_single_env_training_run_is_unchanged_by_the_stride():
    env = IdentityEnv(n=3, ep_length=10)
    agent = DQNAgent(env.observation_space, env.action_space, _config(), seed=0)
    run = TrainingRun(env, agent, 50, seed=0)
    assert run.advance(max_steps=7) == 7 and run.steps == 7


@pytest.mark.slow
def test_vector_dqn_learns_cartpole_per_env_step_like_one_copy():
    """8 copies, the default (rl-zoo) DQN settings: CartPole reaches an evaluation of 400+ within 40k env
    steps, like the single-env test: the schedules count env steps, so N copies need no retuning."""
    venv = SyncVectorEnv([CartPole] * 8)
    agent = DQNAgent(venv.single_observation_space, venv.single_action_space, DQNConfig(), seed=1)

    class StopSolved(Callback):
        def on_step(self, run):
            return not any(m >= 400 for _, m, _ in run.history.evals)

    run = VectorTrainingRun(venv, agent, 40_000, seed=1, eval_env=CartPole(), eval_interval=1024, eval_episodes=10,
                            callbacks=[StopSolved()]).run()
    best = max(m for _, m, _ in run.history.evals)
    assert best >= 400, f"not solved in {run.steps} env steps: {[round(m) for _, m, _ in run.history.evals]}"
