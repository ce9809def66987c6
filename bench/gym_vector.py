"""Vector CartPole: steps per second, summed over copies, of DRLA's batched CartPole ``VectorEnv`` beside its peers,
all in one run on one machine.

For each N (copies, default 1 4 16 64 256), random actions drawn beforehand (one (steps, N) int64 array per timed run,
split into each step's (N,) array, or into Python ints for the loop, before the clock starts) drive, one after the
other:

- ``drla``: ``gymnasium.make_vec("drla/CartPole-v0", num_envs=N, vectorization_mode="vector_entry_point")``, DRLA's
  batched CartPole (``drla/gym_vector.py``), bit for bit the scalar env per copy, autoreset included;
- ``gymnasium``: Gymnasium's own numpy ``CartPoleVectorEnv`` (``make_vec("CartPole-v1", ...,
  vectorization_mode="vector_entry_point")``; not bit for bit its scalar env);
- ``sync``: Gymnasium's ``SyncVectorEnv`` over ``drla/CartPole-v0``;
- ``loop``: a plain Python loop over N of DRLA's scalar ``drla_core`` CartPoles (no Gymnasium wrappers), each reset
  when its episode ends;
- ``envpool``: EnvPool's ``CartPole-v1`` (``env_type="gymnasium"``, synchronous), skipped with the reason printed
  when it will not import (``pip install -r bench/requirements-bench.txt``).

Each figure is the best of ``--repeats`` timed runs of ``--seconds`` each (after a short warm-up): the fastest run
is the one other work on the machine disturbed least; the same per CPU second of this process (``steps_per_cpu_s``,
EnvPool's worker threads included) is what a busy machine disturbs least. Prints the tables on stderr and ONE JSON
line on stdout.

    .venv/bin/python bench/gym_vector.py [--copies 1 4 16 64 256] [--seconds 0.3] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402

import drla.gym  # noqa: E402,F401  (registers drla/CartPole-v0)
from drla_core.envs.cartpole import EXACT_MATH_CHOICE, CartPole  # noqa: E402

CONTENDERS = ("drla", "gymnasium", "sync", "loop", "envpool")
# (EnvPool's spaces are float64 boxes that Gymnasium casts to float32, with a warning each)
warnings.filterwarnings("ignore", message=r".*Box (low|high)'s precision lowered")


def _vector_runner(envs):
    envs.reset(seed=0)
    step = envs.step

    def run(actions: list[np.ndarray]) -> None:
        for a in actions:
            step(a)

    return list, run  # (each step's actions: one int64 array, split from the block beforehand)


def _loop_runner(n: int):
    envs = [CartPole() for _ in range(n)]
    for i, e in enumerate(envs):
        e.reset(seed=i)

    def run(actions: list[list[int]]) -> None:
        for row in actions:
            for env, a in zip(envs, row):
                _, _, terminated, truncated, _ = env.step(a)
                if terminated or truncated:
                    env.reset()

    return np.ndarray.tolist, run  # (Python ints, converted beforehand)


def _envpool_runner(n: int):
    import envpool

    envs = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=n, seed=0)
    envs.reset()
    step = envs.step

    def run(actions: list[np.ndarray]) -> None:
        for a in actions:
            step(a)

    return list, run


def make_runner(name: str, n: int):
    if name in ("drla", "gymnasium"):
        env_id = "drla/CartPole-v0" if name == "drla" else "CartPole-v1"
        return _vector_runner(gymnasium.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point"))
    if name == "sync":
        return _vector_runner(gymnasium.make_vec("drla/CartPole-v0", num_envs=n, vectorization_mode="sync"))
    if name == "loop":
        return _loop_runner(n)
    return _envpool_runner(n)


def measure(runner, n: int, seconds: float, repeats: int, rng: np.random.Generator) -> tuple[float, float]:
    """Best steps/s (summed over the n copies) of ``repeats`` runs of about ``seconds`` each, per second of wall time
    and per CPU second of this process (all its threads: EnvPool's workers too)."""
    prepare, run = runner
    warm = prepare(rng.integers(0, 2, (50, n)))
    t0 = time.perf_counter()
    run(warm)
    per_step = max((time.perf_counter() - t0) / 50, 1e-7)
    steps = max(20, int(seconds / per_step))
    best = best_cpu = 0.0
    for _ in range(repeats):
        actions = prepare(rng.integers(0, 2, (steps, n)))  # drawn beforehand, outside the timed part
        t0, c0 = time.perf_counter(), time.process_time()
        run(actions)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        best, best_cpu = max(best, steps * n / wall), max(best_cpu, steps * n / max(cpu, 1e-9))
    return best, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 4, 16, 64, 256])
    parser.add_argument("--seconds", type=float, default=0.3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=CONTENDERS, default=list(CONTENDERS))
    args = parser.parse_args()

    skipped: dict[str, str] = {}
    if "envpool" in args.only:
        try:
            import envpool

            envpool.make("CartPole-v1", env_type="gymnasium", num_envs=1)
        except Exception as err:  # (an import error, or a wheel without this platform's binary)
            skipped["envpool"] = f"{type(err).__name__}: {err}"
            print(f"envpool skipped: {skipped['envpool']}", file=sys.stderr)
    names = [c for c in args.only if c not in skipped]
    rng = np.random.default_rng(0)
    figures: dict[str, dict[str, float]] = {c: {} for c in names}
    per_cpu: dict[str, dict[str, float]] = {c: {} for c in names}
    for n in args.copies:
        for name in names:
            wall, cpu = measure(make_runner(name, n), n, args.seconds, args.repeats, rng)
            figures[name][str(n)], per_cpu[name][str(n)] = round(wall), round(cpu)
    width = max(len(c) for c in names) + 2
    for title, table in (("", figures), (" per CPU second", per_cpu)):
        print(f"steps/s{title} summed over copies (best of {args.repeats} runs of ~{args.seconds:.1f} s)",
              file=sys.stderr)
        print("N".ljust(width) + "".join(f"{n:>12}" for n in args.copies), file=sys.stderr)
        for name in names:
            print(name.ljust(width) + "".join(f"{table[name][str(n)]:>12,}" for n in args.copies), file=sys.stderr)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    versions = {"numpy": np.__version__, "gymnasium": gymnasium.__version__}
    if "envpool" in names:
        import envpool

        versions["envpool"] = envpool.__version__
    print(json.dumps({"bench": "gym_vector", "steps_per_s": figures, "steps_per_cpu_s": per_cpu, "skipped": skipped,
                      "exact_math": EXACT_MATH_CHOICE, "versions": versions, "load_1min": load,
                      "cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(),
                      "date": time.strftime("%Y-%m-%d")}))


if __name__ == "__main__":
    main()
