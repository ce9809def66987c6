"""Benchmark: worker processes and Ray actors on the tank scene with copies (issue 13).

Prints ONE JSON line: ``steps_per_s`` {W: environment steps per second, learner included} for 1 and 2
worker processes (4 copies each), ``worker_start_s`` (spawn to the first chunk learnt), ``ray_steps_per_s``
with 2 Ray actors (when ray is installed), and ``learner_steps_per_s``: how many environment steps per second
the learner alone absorbs (DQN updates included), the ceiling of any number of workers.
Run: ``.venv/bin/python bench/workers.py [--steps N]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import drla  # noqa: E402,F401  (one BLAS thread per process, before numpy: see drla/__init__.py)

import bpy  # noqa: E402
import numpy as np  # noqa: E402

from drla.extension import register_extension  # noqa: E402

TANK = ROOT / "scenes" / "tank" / "tank.blend"


def agent_and_spaces(steps: int):
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    bpy.ops.wm.open_mainfile(filepath=str(TANK))
    scene = bpy.context.scene
    compiled = compiler.compile_tree(bpy.data.node_groups["Tank"], scene)
    with restored_scene(scene):
        env = build.build_env(compiled, scene, copies=1)
        try:
            agent = build.build_agent(compiled, env, seed=0, total_steps=steps)
            metric = env.task_metric
        finally:
            env.close()
    return agent, metric


def run(workers: int, steps: int, ray: str | None = None) -> tuple[float, float]:
    from drla.workers import workers_run

    agent, metric = agent_and_spaces(steps)
    job = workers_run(agent, str(TANK), "Tank", steps, workers=workers, copies=4, seed=0, task_metric=metric,
                      ray=ray)
    job.log = lambda text: None
    t0 = None
    start_steps = 0
    while not job.done:
        job.advance(max_seconds=0.2)
        if t0 is None and job.steps > 0:
            t0, start_steps = time.perf_counter(), job.steps
    wall = time.perf_counter() - t0
    return (job.steps - start_steps) / wall, float(job.first_step_s or 0.0)


def learner_rate(steps: int) -> float:
    """Environment steps per second the learner absorbs alone: observe_batch on ready-made transitions."""
    agent, _ = agent_and_spaces(steps)
    rng = np.random.default_rng(0)
    n = 4
    obs = rng.integers(0, 2, (64, n, agent.obs_size)).astype(np.float32)
    t0 = time.perf_counter()
    done = 0
    while done < steps:
        i = (done // n) % 64
        agent.observe_batch(obs[i], rng.integers(0, agent.n_actions, n), rng.normal(size=n), obs[(i + 1) % 64],
                            np.zeros(n, bool), np.zeros(n, bool))
        done += n
    return steps / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6000)
    args = parser.parse_args()
    register_extension()
    result: dict = {"steps_per_s": {}}
    for w in (1, 2):
        rate, start = run(w, args.steps)
        result["steps_per_s"][w] = round(rate, 1)
        result.setdefault("worker_start_s", round(start, 2))
    try:
        import ray  # noqa: F401
    except ImportError:
        result["ray_steps_per_s"] = None
    else:
        result["ray_steps_per_s"] = round(run(2, args.steps, ray="local")[0], 1)
    result["learner_steps_per_s"] = round(learner_rate(args.steps), 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
