"""The batched vector CartPole (``drla/gym_vector.py``): the same observations, rewards, flags and infos as Gymnasium's
``SyncVectorEnv`` over the scalar ``drla/CartPole-v0``, step for step, in each autoreset mode, with both kernels and
on every exact-math path; Gymnasium's vector wrappers on it; and its errors."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

import drla.gym  # noqa: E402,F401  (registers drla/CartPole-v0)
from drla import gym_vector  # noqa: E402
from drla.gym_vector import PYTHON_KERNEL_MAX, CartPoleVectorEnv  # noqa: E402
from drla_core.envs import cartpole  # noqa: E402
from gymnasium.vector import AutoresetMode, SyncVectorEnv  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# numpy's AVX-512 dispatch targets, as tests/test_exact_math.py turns them off
NO_AVX512 = "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR AVX512_KNL AVX512_KNM"
MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]


def _sync(n, mode, max_steps=None):
    kwargs = {} if max_steps is None else {"max_episode_steps": max_steps}  # (a TimeLimit: truncated at max_steps)
    return SyncVectorEnv([lambda: gymnasium.make("drla/CartPole-v0", **kwargs) for _ in range(n)],
                         autoreset_mode=mode)


def _same_info(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if key == "final_obs":
            assert [None if o is None else o.tolist() for o in a[key]] == \
                   [None if o is None else o.tolist() for o in b[key]]
        elif isinstance(a[key], dict):
            _same_info(a[key], b[key])
        else:
            assert np.array_equal(a[key], b[key]), key


def _run_both(fast, sync, steps, seed=0, reset_at=()):
    """Step both with the same actions (a noisy balancing controller: long and short episodes); check every result;
    return how many episodes ended, how many were truncated and a digest of every observation."""
    n = fast.num_envs
    obs, info = fast.reset(seed=seed)
    expected, info_expected = sync.reset(seed=seed)
    assert np.array_equal(obs, expected) and obs.dtype == expected.dtype == np.float32
    rng = np.random.default_rng(seed)
    noise = np.linspace(0.5 if n == 1 else 0.0, 0.5, n)
    ended = truncations = 0
    digest = hashlib.sha256(obs.tobytes())
    done = np.zeros(n, bool)
    for t in range(steps):
        actions = ((obs[:, 2] + 0.5 * obs[:, 3] + 0.01 * obs[:, 1] > 0) ^ (rng.random(n) < noise)).astype(np.int64)
        if fast.autoreset_mode is AutoresetMode.DISABLED and done.any():
            options = {"reset_mask": done.copy()}
            obs, info = fast.reset(options=dict(options))
            expected, info_expected = sync.reset(options=dict(options))
            assert np.array_equal(obs, expected)
        elif t in reset_at:  # an explicit reset mid-run: no seed (each copy's generator goes on), custom bounds
            obs, info = fast.reset(options={"low": -0.1, "high": 0.1})
            expected, info_expected = sync.reset(options={"low": -0.1, "high": 0.1})
            assert np.array_equal(obs, expected)
        out = fast.step(actions)
        ref = sync.step(actions)
        for got, want in zip(out[:4], ref[:4]):
            assert got.shape == want.shape and got.dtype == want.dtype, t
            assert np.array_equal(got, want), t
        _same_info(out[4], ref[4])
        obs = out[0]
        done = out[2] | out[3]
        ended += int(done.sum())
        truncations += int(out[3].sum())
        digest.update(obs.tobytes() + out[1].tobytes() + out[2].tobytes() + out[3].tobytes())
    return ended, truncations, digest.hexdigest()


@pytest.mark.parametrize("kernel", ["python", "numpy"])
@pytest.mark.parametrize("mode", MODES, ids=[m.value for m in MODES])
def test_it_equals_sync_vector_env_step_for_step_in_each_autoreset_mode(kernel, mode):
    fast = CartPoleVectorEnv(24, max_episode_steps=40, autoreset_mode=mode, kernel=kernel)
    assert fast.metadata["autoreset_mode"] is mode and fast.kernel == kernel
    ended, truncations, _ = _run_both(fast, _sync(24, mode, 40), 400, seed=3, reset_at=(150,))
    assert ended > 150 and truncations > 20  # terminations and truncations both compared


@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("mode", MODES, ids=[m.value for m in MODES])
def test_one_or_a_few_copies_equal_sync_vector_env_too(n, mode):
    """(One copy has its own shortest path.)"""
    fast = CartPoleVectorEnv(n, max_episode_steps=25, autoreset_mode=mode)
    ended, truncations, _ = _run_both(fast, _sync(n, mode, 25), 300, seed=8, reset_at=(100,))
    assert ended > truncations > 0  # both kinds of ending compared


@pytest.mark.parametrize("kernel", ["python", "numpy"])
def test_made_by_make_vec_it_runs_whole_500_step_episodes_as_the_scalar_env(kernel):
    fast = gymnasium.make_vec("drla/CartPole-v0", num_envs=6, vectorization_mode="vector_entry_point", kernel=kernel)
    assert type(fast) is CartPoleVectorEnv and fast.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    sync = gymnasium.make_vec("drla/CartPole-v0", num_envs=6, vectorization_mode="sync")
    assert fast.observation_space == sync.observation_space and fast.action_space == sync.action_space
    _, truncations, _ = _run_both(fast, sync, 1100, seed=11)
    assert truncations >= 2  # the scalar env's own 500-step truncation, met by the steadiest copies


@pytest.mark.parametrize("kernel", ["python", "numpy"])
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP], ids=["NextStep", "SameStep"])
def test_start_states_drawn_ahead_are_drawn_again_and_wound_back_as_the_scalar_envs_draw_them(kernel, mode,
                                                                                            monkeypatch):
    """Blocks of 8 start states a copy (instead of 256): many used up and drawn again, and explicit resets (no seed)
    in the middle of blocks, which wind each copy's generator back to its first start not used."""
    monkeypatch.setattr(gym_vector, "_AHEAD", 2)
    fast = CartPoleVectorEnv(20 if kernel == "python" else 48, max_episode_steps=4, autoreset_mode=mode,
                             kernel=kernel)
    assert fast._ahead_n == 8
    ended, _, _ = _run_both(fast, _sync(fast.num_envs, mode, 4), 160, seed=21, reset_at=(37, 38, 90))
    assert ended >= 25 * fast.num_envs  # every copy through more than 3 blocks


def test_the_kernel_is_chosen_by_the_number_of_copies():
    assert CartPoleVectorEnv(PYTHON_KERNEL_MAX).kernel == "python"
    assert CartPoleVectorEnv(PYTHON_KERNEL_MAX + 1).kernel == "numpy"


@pytest.mark.parametrize("path", ["auto", "numpy", "python"])
def test_the_numpy_kernel_is_exact_on_every_exact_math_path(path):
    """``DRLA_EXACT_MATH`` forced in-process (the suite's other paths run through ``use_exact_math``)."""
    chosen = cartpole.use_exact_math(path)
    try:
        if path != "auto":
            assert set(chosen.values()) == {path}
        fast = CartPoleVectorEnv(64, max_episode_steps=60, kernel="numpy")
        ended, _, _ = _run_both(fast, _sync(64, AutoresetMode.NEXT_STEP, 60), 250, seed=5)
        assert ended > 300
    finally:
        cartpole.use_exact_math()


_DIGEST = """
import hashlib, json, sys
sys.path.insert(0, {root!r})
import numpy as np
from drla.gym_vector import CartPoleVectorEnv
from drla_core.envs.cartpole import EXACT_MATH_CHOICE
from numpy.core._multiarray_umath import __cpu_features__ as f
env = CartPoleVectorEnv(64, max_episode_steps=60, kernel="numpy")
obs, _ = env.reset(seed=5)
rng, h = np.random.default_rng(5), hashlib.sha256(obs.tobytes())
for _ in range(250):
    obs, r, te, tr, _ = env.step(rng.integers(0, 2, 64))
    h.update(obs.tobytes() + r.tobytes() + te.tobytes() + tr.tobytes())
print(json.dumps({{"digest": h.hexdigest(), "avx512": bool(f["AVX512F"]), "choice": EXACT_MATH_CHOICE}}))
"""


def test_a_cpu_without_avx512_gives_the_same_bits():
    """numpy's own ``NPY_DISABLE_CPU_FEATURES`` stands in for an older CPU (tests/test_exact_math.py's stand-in): the
    numpy kernel's run is the same byte for byte there, with the per-element fallback forced, and here."""
    runs = {}
    for name, env in {"here": {}, "no-avx512": {"NPY_DISABLE_CPU_FEATURES": NO_AVX512},
                      "python": {"DRLA_EXACT_MATH": "python"}}.items():
        out = subprocess.run([sys.executable, "-c", _DIGEST.format(root=str(ROOT))], capture_output=True, text=True,
                             timeout=300, env={**os.environ, **env})
        assert out.returncode == 0, out.stderr
        runs[name] = json.loads(out.stdout.strip().splitlines()[-1])
    assert runs["no-avx512"]["avx512"] is False and runs["python"]["choice"]["square"] == "python"
    assert runs["here"]["digest"] == runs["no-avx512"]["digest"] == runs["python"]["digest"]


def test_gymnasium_s_vector_wrappers_work_on_it():
    from gymnasium.wrappers.vector import NormalizeObservation, RecordEpisodeStatistics

    fast = NormalizeObservation(RecordEpisodeStatistics(CartPoleVectorEnv(16, kernel="numpy")))
    sync = NormalizeObservation(RecordEpisodeStatistics(_sync(16, AutoresetMode.NEXT_STEP)))
    a, _ = fast.reset(seed=2)
    b, _ = sync.reset(seed=2)
    assert np.array_equal(a, b)
    rng, episodes = np.random.default_rng(2), 0
    for _ in range(200):
        actions = rng.integers(0, 2, 16)
        a, ra, ta, tra, info_a = fast.step(actions)
        b, rb, tb, trb, info_b = sync.step(actions)
        assert np.array_equal(a, b) and np.array_equal(ra, rb) and np.array_equal(ta | tra, tb | trb)
        assert info_a.keys() == info_b.keys()
        if "episode" in info_a:
            mask = info_a["_episode"]
            assert np.array_equal(mask, info_b["_episode"]) and np.array_equal(mask, ta | tra)
            # CartPole pays 1 a step: an episode's return is its length
            assert np.array_equal(info_a["episode"]["r"][mask], info_a["episode"]["l"][mask].astype(float))
            assert np.array_equal(info_a["episode"]["r"], info_b["episode"]["r"])
            episodes += int(mask.sum())
    assert episodes > 50 and abs(float(np.mean(a))) < 1.0  # (normalised observations)


@pytest.mark.parametrize("kernel", ["python", "numpy"])
def test_the_arrays_step_returns_are_the_caller_s(kernel):
    env = CartPoleVectorEnv(8, kernel=kernel)
    obs, _ = env.reset(seed=0)
    first, rewards, terminated, truncated, _ = env.step(np.ones(8, np.int64))
    kept = first.copy()
    env.step(np.zeros(8, np.int64))
    assert np.array_equal(first, kept)  # not overwritten by the next step
    first[:] = 99.0  # and the caller may write to them
    again, *_ = env.step(np.zeros(8, np.int64))
    assert np.abs(again).max() < 10
    if not terminated.any() and not truncated.any():  # a quiet step's shared arrays cannot be written
        with pytest.raises(ValueError, match="read-only"):
            rewards[0] = 5.0


@pytest.mark.parametrize("kernel", ["python", "numpy"])
def test_bad_actions_are_refused_before_any_copy_moves(kernel):
    env = CartPoleVectorEnv(4, kernel=kernel)
    obs, _ = env.reset(seed=1)
    for bad in ([0, 1, 2, 0], [0, -1, 1, 1], np.array([0.0, 0.5, 1.0, 0.0]), [[0, 1, 1, 0]], [0, 1], ["0"] * 4):
        with pytest.raises(ValueError, match="step: actions must be 4 zeros and ones"):
            env.step(bad)
    expected = SyncVectorEnv([lambda: gymnasium.make("drla/CartPole-v0") for _ in range(4)])
    expected.reset(seed=1)
    assert np.array_equal(env.step([0, 1, True, False])[0], expected.step(np.array([0, 1, 1, 0]))[0])
    # numbers equal to 0 or 1 are actions, as the scalar env (and so SyncVectorEnv) takes them
    assert np.array_equal(env.step(np.array([1.0, 0.0, 1.0, 1.0]))[0], expected.step(np.array([1.0, 0.0, 1.0, 1.0]))[0])


def test_misuse_says_what_is_wrong():
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        CartPoleVectorEnv(3).step([0, 0, 0])
    with pytest.raises(ValueError, match="kernel 'gpu': expected 'auto', 'python' or 'numpy'"):
        CartPoleVectorEnv(3, kernel="gpu")
    with pytest.raises(ValueError, match="num_envs must be at least 1, got 0"):
        CartPoleVectorEnv(0)
    env = CartPoleVectorEnv(3, autoreset_mode=AutoresetMode.DISABLED, max_episode_steps=2)
    with pytest.raises(ValueError, match=r"reset every copy \(no reset_mask\) before resetting some"):
        env.reset(options={"reset_mask": np.array([True, False, False])})
    env.reset(seed=0)
    env.step([0, 0, 0])
    env.step([0, 0, 0])  # every copy truncated
    with pytest.raises(RuntimeError, match=r"copies \[0, 1, 2\] ended their episodes; reset them first"):
        env.step([0, 0, 0])
    with pytest.raises(ValueError, match=r"options\['reset_mask'\] must be a bool array of shape \(3,\) with a True"):
        env.reset(options={"reset_mask": np.zeros(3, bool)})
    with pytest.raises(ValueError, match="reset: 2 seeds for 3 copies"):
        env.reset(seed=[1, 2])
