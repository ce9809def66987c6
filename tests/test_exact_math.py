"""Every machine-picked path, forced on every machine: ``CartPoleBatch``'s exact-math functions (numpy's SIMD
``cos``/``sin`` where they match C's ``libm`` and numpy's ``x * x`` made C's ``pow(x, 2)``, a per-element Python
fallback where they do not, as on AVX-512 CPUs) give the same bits whichever path runs, so no test and no result
depends on the CPU.

The paths are forced in-process (``use_exact_math``), through ``DRLA_EXACT_MATH`` in a subprocess, and a CPU
without AVX-512 is stood in for by numpy's own ``NPY_DISABLE_CPU_FEATURES``.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from drla_core.envs import cartpole
from drla_core.envs.cartpole import CartPole, CartPoleBatch, exact_math, use_exact_math

ROOT = Path(__file__).resolve().parent.parent
# numpy's AVX-512 dispatch targets (numpy 1.26): turned off, numpy runs the AVX2 kernels an older CPU runs
NO_AVX512 = "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR AVX512_KNL AVX512_KNM"


@pytest.fixture
def exact_path(request):
    """Force ``request.param`` for the test, then restore what the module chose at import."""
    before = dict(cartpole.EXACT_MATH_CHOICE)
    chosen = use_exact_math(request.param)
    yield chosen
    use_exact_math()
    assert cartpole.EXACT_MATH_CHOICE == before


def _trajectories(n=120, seed=5):
    """Every row of a batch stepped to its end beside the scalar CartPole, from a good controller (500 steps) to a
    poor one (ends early): (whether every step agreed bit for bit, steps run, each episode's length)."""
    seeds = [int(s) for s in np.random.default_rng(seed).integers(0, 2**31 - 1, n)]
    batch = CartPoleBatch(n)
    obs = batch.reset(seeds)
    envs = [CartPole() for _ in range(n)]
    same = np.array_equal(obs, np.stack([e.reset(seed=s)[0] for e, s in zip(envs, seeds)]))
    rng = np.random.default_rng(0)
    noise = np.linspace(0.0, 0.6, n)
    rows, steps, lengths = np.arange(n), 0, []
    while rows.size:
        good = obs[:, 2] + 0.5 * obs[:, 3] + 0.01 * obs[:, 1] > 0
        actions = (good ^ (rng.random(rows.size) < noise[rows])).astype(np.int64)
        obs, rewards, terminated, truncated = batch.step(actions)
        steps += 1
        for j, i in enumerate(rows):
            o, r, te, tr, _ = envs[i].step(int(actions[j]))
            same = same and np.array_equal(o, obs[j]) and (r, te, tr) == (rewards[j], terminated[j], truncated)
        ended = terminated | truncated
        lengths += [steps] * int(ended.sum())
        batch.keep(~ended)
        rows, obs = rows[~ended], obs[~ended]
    return bool(same), steps, lengths


@pytest.mark.parametrize("exact_path", ["python", "auto"], indirect=True)
def test_batch_follows_the_scalar_env_bit_for_bit_on_the_exact_paths(exact_path):
    same, steps, lengths = _trajectories()
    assert same and steps == 500 and min(lengths) < 50  # both long and short episodes were compared


@pytest.mark.parametrize("exact_path", ["numpy"], indirect=True)
def test_the_numpy_path_forced_runs_and_is_exact_where_the_probe_says_so(exact_path):
    assert exact_path == {"cos": "numpy", "sin": "numpy", "square": "numpy"}
    same, steps, _ = _trajectories()
    assert steps == 500
    if all(cartpole._probe_numpy_is_exact().values()):
        assert same


@pytest.mark.parametrize("shape", [(7,), (2, 5), (3, 1, 4)])
def test_the_fallbacks_take_every_shape_numpy_does(shape):
    """The AVX-512 crash: the fallback took only 2-d arrays while ``CartPoleBatch.step`` passes 1-d ones."""
    v = np.random.default_rng(1).normal(0.0, 2.0, shape)
    cos, sin, square, which = exact_math("python")
    assert set(which.values()) == {"python"}
    np.testing.assert_array_equal(cos(v, np.empty_like(v)), np.vectorize(math.cos)(v))
    np.testing.assert_array_equal(sin(v, np.empty_like(v)), np.vectorize(math.sin)(v))
    assert square(v, np.full_like(v, 2.0), np.empty_like(v)).ravel().tolist() == [t**2 for t in v.ravel().tolist()]


def test_a_wrong_path_name_says_which_ones_exist(monkeypatch):
    monkeypatch.setenv("DRLA_EXACT_MATH", "fast")
    with pytest.raises(ValueError, match="DRLA_EXACT_MATH='fast': expected one of auto, numpy, python"):
        exact_math()


def _run(code, **env):
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["ga", "neat", "novelty"])
def test_evolution_on_cartpole_gives_the_same_bits_on_every_path_and_cpu(agent, tmp_path):
    """``drla train cartpole --agent ga|neat|novelty``: the same model file byte for byte with the fallback
    forced, numpy forced where it is exact, and on a stand-in for a CPU without AVX-512."""
    outputs = {}
    runs = {"auto": {}, "python": {"DRLA_EXACT_MATH": "python"},
            "no-avx512": {"NPY_DISABLE_CPU_FEATURES": NO_AVX512}}
    for name, env in runs.items():
        out = tmp_path / f"{name}.json"
        proc = subprocess.run([sys.executable, "-m", "drla", "train", "cartpole", "--agent", agent, "--steps", "3",
                               "--population", "24", "--seed", "2", "--out", str(out), "--quiet"], cwd=ROOT,
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(ROOT), **env})
        assert proc.returncode == 0, proc.stderr
        model = json.loads(out.read_text())
        model["meta"] = {k: v for k, v in model.get("meta", {}).items() if k != "created" and "second" not in k}
        outputs[name] = model
    assert outputs["python"] == outputs["auto"]
    assert outputs["no-avx512"] == outputs["auto"]


def test_the_cpu_stand_in_changes_numpy_s_dispatch():
    """The stand-in is real: with AVX-512 turned off numpy's probe result is the one an AVX2 CPU gives, and
    the module reports which path each function took (numpy or the fallback)."""
    here = _run("import json; from drla_core.envs import cartpole as c; print(json.dumps(c.EXACT_MATH_CHOICE))")
    forced = _run("import json; from drla_core.envs import cartpole as c; print(json.dumps(c.EXACT_MATH_CHOICE))",
                  DRLA_EXACT_MATH="python")
    assert forced == {"cos": "python", "sin": "python", "square": "python"}
    assert set(here) == {"cos", "sin", "square"} and set(here.values()) <= {"numpy", "python"}
    stand_in = _run("import json, numpy; from numpy.core._multiarray_umath import __cpu_features__ as f; "
                    "print(json.dumps(bool(f['AVX512F'])))", NPY_DISABLE_CPU_FEATURES=NO_AVX512)
    assert stand_in is False


def _python_squares(v):
    return np.array([t**2 for t in v.ravel().tolist()]).reshape(v.shape)


def test_the_product_square_gives_c_pow_s_bits_where_it_rounds_unlike_the_product():
    """Python's ``x**2`` is C's ``pow``, which (unlike ``x * x``) is not correctly rounded: where the exact square lies
    next to the midpoint between two doubles they can differ. ``_ProductSquare`` gives ``pow``'s bits there, on the
    values found to differ (the test is void without them), on those nearest the midpoints it leaves to numpy, and
    at the edges of its range."""
    rng = np.random.default_rng(2024)
    values = np.concatenate([rng.normal(0.0, 3.0, 200_000), rng.uniform(0.95, 1.0, 100_000),
                             rng.normal(0.0, 1e-4, 20_000), rng.normal(0.0, 1e5, 20_000)])
    python = _python_squares(values)
    differ = values[values * values != python]
    square = cartpole._ProductSquare(small=0)
    if differ.size:  # (a C library with a correctly rounded pow has none: nothing to redo there)
        assert not np.array_equal(differ * differ, _python_squares(differ))
        np.testing.assert_array_equal(square(differ, None, np.empty_like(differ)), _python_squares(differ))
    near = cartpole._near_the_midpoints(values)
    assert near.size > 1000
    np.testing.assert_array_equal(square(near, None, np.empty_like(near)), _python_squares(near))
    np.testing.assert_array_equal(square(values, None, np.empty_like(values)), python)
    tiny, huge = 2.0**-20, 2.0**20
    edges = np.array([0.0, -0.0, 5e-324, 1e-300, 2.0**-511, 2.0**-537, 1.0, 2.0, 0.5, 2.0**0.5, 2.0**-0.5, tiny,
                      np.nextafter(tiny, 0), np.nextafter(tiny, 1), huge, np.nextafter(huge, 0),
                      np.nextafter(huge, 1e9), 3e150, -3e150, np.nextafter(1.0, 0), np.nextafter(2.0**0.5, 2)])
    edges = np.concatenate([edges, -edges])
    np.testing.assert_array_equal(square(edges, None, np.empty_like(edges)), _python_squares(edges))


@pytest.mark.parametrize("layout", ["strided", "2-d", "small"])
def test_the_product_square_takes_any_layout(layout):
    v = np.random.default_rng(3).normal(0.0, 2.0, (40, 30))
    if layout == "strided":
        v = v[:, ::3]
    square = cartpole._ProductSquare(small=10**6 if layout == "small" else 0)
    np.testing.assert_array_equal(square(v, None, np.empty_like(v)), _python_squares(v))
