"""The built-in environments as native Gymnasium and PettingZoo environments (``drla.gym``, issue 25): each passes
the libraries' own checkers, CartPole follows Gymnasium's own CartPole-v1 bit for bit, and Gymnasium's vector
and PettingZoo's AEC tools take them as they are."""

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install '.[gym]')")
pettingzoo = pytest.importorskip("pettingzoo", reason="pettingzoo is not installed (pip install '.[gym]')")

import drla.gym as dgym  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402
from pettingzoo.test import parallel_api_test  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("env_id", sorted(dgym.ENV_IDS))
def test_every_built_in_env_passes_gymnasium_s_own_checker_without_a_warning(env_id):
    env = gymnasium.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a space without bounds, a wrong dtype, a non-deterministic reset: all fail
        check_env(env.unwrapped)
    assert isinstance(env.observation_space, gymnasium.spaces.Box)
    assert isinstance(env.action_space, (gymnasium.spaces.Discrete, gymnasium.spaces.Box))


def test_cartpole_follows_gymnasium_s_cartpole_v1_bit_for_bit():
    ours, theirs = gymnasium.make("drla/CartPole-v0"), gymnasium.make("CartPole-v1")
    rng = np.random.default_rng(0)
    for seed in (0, 7, 123):
        a, _ = ours.reset(seed=seed)
        b, _ = theirs.reset(seed=seed)
        assert np.array_equal(a, b) and a.dtype == b.dtype
        done, steps = False, 0
        while not done:
            action = int(rng.integers(2)) if steps % 3 else int(a[2] + a[3] > 0)
            a, ra, ta, tra, _ = ours.step(action)
            b, rb, tb, trb, _ = theirs.step(action)
            assert np.array_equal(a, b) and (ra, ta, tra) == (rb, tb, trb)
            done, steps = ta or tra, steps + 1
    assert ours.spec.id == "drla/CartPole-v0"


def test_seeding_is_gymnasium_s():
    env = gymnasium.make("drla/TankGrid-v0")
    first = env.reset(seed=5)[0]
    assert np.array_equal(first, env.reset(seed=5)[0])
    env.action_space.seed(3)
    actions = [env.action_space.sample() for _ in range(5)]
    env.action_space.seed(3)
    assert actions == [env.action_space.sample() for _ in range(5)]


def test_gymnasium_s_vector_envs_and_wrappers_take_them():
    envs = gymnasium.make_vec("drla/CartPole-v0", num_envs=4, vectorization_mode="sync")
    obs, _ = envs.reset(seed=1)
    assert obs.shape == (4, 4) and obs.dtype == np.float32
    envs.action_space.seed(1)
    total, resets, ended = np.zeros(4), np.zeros(4, int), np.zeros(4, bool)
    for _ in range(60):
        resets += ended  # Gymnasium's next-step autoreset: the step after an episode's end resets it, paying 0
        obs, rewards, terminated, truncated, _ = envs.step(envs.action_space.sample())
        total += rewards
        ended = terminated | truncated
    assert resets.sum() > 0 and np.array_equal(total, 60 - resets)  # CartPole pays 1 for every other step
    wrapped = gymnasium.wrappers.RecordEpisodeStatistics(gymnasium.make("drla/Identity-v0"))
    wrapped.reset(seed=0)
    for _ in range(200):
        *_, term, trunc, info = wrapped.step(wrapped.action_space.sample())
        if term or trunc:
            assert "episode" in info
            break
    else:
        pytest.fail("the identity env never ended an episode")


def test_the_module_prefixed_id_registers_the_envs_itself():
    code = ("import gymnasium; e = gymnasium.make('drla.gym:drla/CartPole-v0'); o, _ = e.reset(seed=0); "
            "print(o.shape, e.spec.id)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(4,) drla/CartPole-v0"


def test_render_modes_are_checked():
    env = gymnasium.make("drla/Evacuation-v0", render_mode="ansi")
    env.reset(seed=0)
    assert isinstance(env.render(), str) and env.render()
    with pytest.raises(ValueError, match=r"render_mode 'rgb_array': this environment renders \['ansi'\]"):
        dgym.env("evacuation", render_mode="rgb_array")


@pytest.mark.parametrize("name", sorted(dgym.PARALLEL_GAMES))
def test_every_multi_agent_game_passes_pettingzoo_s_parallel_and_aec_tests(name):
    from pettingzoo.test import api_test
    from pettingzoo.utils.conversions import parallel_to_aec

    parallel_api_test(dgym.parallel_env(name), num_cycles=300)
    api_test(parallel_to_aec(dgym.parallel_env(name)), num_cycles=100)


def test_a_parallel_game_is_seeded_and_plays_to_its_end():
    env = dgym.parallel_env("chase", target="agent")
    assert env.possible_agents == ["hero", "target"]
    obs, _ = env.reset(seed=4)
    again, _ = dgym.parallel_env("chase", target="agent").reset(seed=4)
    assert all(np.array_equal(obs[a], again[a]) for a in obs)
    steps = 0
    while env.agents:
        obs, rewards, terms, truncs, _ = env.step({a: env.action_space(a).sample() for a in env.agents})
        steps += 1
    assert 0 < steps <= 30
    with pytest.raises(KeyError, match="unknown multi-agent game 'tag'; known: chase, pacman, tank_duel"):
        dgym.parallel_env("tag")


@pytest.mark.parametrize("exact", ["auto", "python"])
def test_the_batched_cartpole_vector_env_equals_sync_vector_env_step_for_step(exact):
    """``vectorization_mode="vector_entry_point"`` gives one numpy CartPole for all copies: the same observations,
    rewards and flags as ``SyncVectorEnv`` over the scalar env, autoresets included, on every exact-math path."""
    from drla_core.envs.cartpole import use_exact_math

    use_exact_math(exact)
    try:
        fast = gymnasium.make_vec("drla/CartPole-v0", num_envs=12, vectorization_mode="vector_entry_point")
        sync = gymnasium.make_vec("drla/CartPole-v0", num_envs=12, vectorization_mode="sync")
        assert type(fast).__name__ == "CartPoleVectorEnv" and fast.observation_space == sync.observation_space
        a, _ = fast.reset(seed=3)
        b, _ = sync.reset(seed=3)
        assert np.array_equal(a, b)
        rng, ended = np.random.default_rng(0), 0
        for t in range(800):
            actions = rng.integers(0, 2, 12) if t % 4 else (a[:, 2] + a[:, 3] > 0).astype(np.int64)
            a, ra, ta, tra, _ = fast.step(actions)
            b, rb, tb, trb, _ = sync.step(actions)
            assert np.array_equal(a, b) and np.array_equal(ra, rb), t
            assert np.array_equal(ta, tb) and np.array_equal(tra, trb), t
            ended += int(ta.sum() + tra.sum())
        assert ended > 100
        with pytest.raises(ValueError, match="step: actions must be 12 zeros and ones"):
            fast.step(np.full(12, 2))
    finally:
        use_exact_math()
