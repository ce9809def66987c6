"""Benchmark: scene copies (issue 11): environment steps per second summed over N copies, one process.

Prints ONE JSON line:

- ``transform_steps_per_s``: {N: steps/s} for N = 1, 4, 16, 64 copies of a transform-only scene (an
  agent moving towards a randomly placed goal; Transform and Distance sensors, Within Distance end).
- ``camera_steps_per_s``: {N: steps/s} for the tank scene's tree with its camera sensor at 64x64 (BW,
  gpu path), N = 1, 4, 16 (64 with ``--all``).
- ``tank_copies16_hit_rate`` / ``tank_copies16_wall_s`` and ``tank_copies1_*``: with ``--train``, the
  greedy hit rate (over at least 100 shots, checked every 2000 steps) of the tank agent trained with 16
  copies and with one, and the wall seconds to the first check at >= 90 %, the checks included (median
  over ``--seeds``); null where a run never got there. ``*_probe_s``: the part of that wall the checks
  took. A check plays the same greedy episodes either way (episode k seeded 10,000 + k, blocks of 16
  until 100 shots): one after another on one copy, side by side on the 16 copies (``greedy_hit_rate``).

Every step is one batched greedy action choice (``DQNAgent.act_batch``, one network call for all
copies) plus ``SceneVectorEnv.step`` (one frame advance for all copies); copies reset on their own.
Targets: transform >= 200,000 steps/s at 64 copies, camera >= 10,000 at 16.
Run: ``.venv/bin/python bench/copies.py [--steps N] [--only transform|camera] [--train] [--seeds 0,1,2,3,4]``.
"""

from __future__ import annotations

import argparse
import json
import platform
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

TANK_BLEND = ROOT / "scenes" / "tank" / "tank.blend"


def transform_tree(scene):
    """The transform-only scene of ``bench/scene_env.py``'s kind, built as a node tree."""
    from drla_ext.addon.ui import examples

    return examples.build_transform_tree(scene)


def timed(venv, agent, vector_steps: int) -> float:
    """Environment steps per second (summed over copies): median of 5 chunks."""
    obs, _ = venv.reset(seed=0)
    rates = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(vector_steps):
            obs, *_ = venv.step(agent.act_batch(obs, explore=False))
        rates.append(vector_steps * venv.num_envs / (time.perf_counter() - t0))
    return float(np.median(rates))


def measure(compiled, scene, counts, steps_per_chunk: int) -> dict[int, float]:
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene

    out = {}
    for n in counts:
        with restored_scene(scene):
            venv = SceneVectorEnv(compiled.env, scene, n)
            try:
                agent = build.build_agent(compiled, venv, seed=0)
                out[n] = round(timed(venv, agent, max(4, steps_per_chunk // n)), 1)
            finally:
                venv.close()
    return out


def tank_compiled():
    from drla_ext.addon.tree import compiler

    bpy.ops.wm.open_mainfile(filepath=str(TANK_BLEND))
    scene = bpy.context.scene
    compiled = compiler.compile_tree(bpy.data.node_groups["Tank"], scene)
    for sensor in compiled.env.state.sensors:
        if sensor.kind == "camera":
            o = sensor.options
            o["width"] = o["height"] = 64
            sensor.size = 64 * 64 * (3 if o["mode"] == 'RGB' else 1)
    return compiled, scene


#: Episodes per block of the greedy probe; the probe stops after the first block that brings the shots to 100.
PROBE_BLOCK = 16
PROBE_EPISODES = 208  # 13 blocks


def greedy_hit_rate(env, agent, shots: int = 100, max_episodes: int = PROBE_EPISODES) -> float:
    """Hits per shot of the greedy policy over at least ``shots`` shots (0 when it shoots fewer in
    ``max_episodes`` episodes: an agent that rarely fires has not learnt the game).

    Episode ``k`` starts from seed ``10_000 + k``, blocks of ``PROBE_BLOCK`` episodes until the shots reach
    ``shots``. On one scene (``SceneEnv``) the episodes run one after another; on scene copies
    (``SceneVectorEnv``) a block's episodes run side by side, copy i playing episode k + i: the same
    episodes (a copy seeded s is the single scene seeded s), the same greedy policy, so the same count."""
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.drla_core.rl.train import evaluate

    hits = count = 0
    for start in range(0, max_episodes, PROBE_BLOCK):
        if isinstance(env, SceneVectorEnv):
            h, c = _episodes_side_by_side(env, agent, range(start, start + PROBE_BLOCK))
        else:
            h = c = 0
            for k in range(start, start + PROBE_BLOCK):
                result = evaluate(env, agent, episodes=1, seed=10_000 + k)
                h, c = h + result.metric_sum, c + result.metric_count
        hits, count = hits + h, count + c
        if count >= shots:
            return hits / count
    return 0.0


def _episodes_side_by_side(venv, agent, episodes: range) -> tuple[float, int]:
    """Hits and shots of the greedy policy in ``episodes`` (episode k seeded 10_000 + k), ``venv.num_envs``
    at a time, each copy's first episode only."""
    from drla_ext.drla_core.base.vector_env import vector_info_values

    hits, count, n = 0.0, 0, venv.num_envs
    for first in range(episodes.start, episodes.stop, n):
        obs, _ = venv.reset(seed=[10_000 + first + i for i in range(n)])
        running = np.array([first + i < episodes.stop for i in range(n)])
        while running.any():
            obs, _, terminated, truncated, infos = venv.step(agent.act_batch(obs, explore=False))
            ended = terminated | truncated
            values, present = vector_info_values(infos, "hit", ended)
            counted = present & running
            hits, count = hits + float(values[counted].sum()), count + int(counted.sum())
            running &= ~ended
    return hits, count


def train_to_goal(copies: int, seed: int, max_steps: int, check_every: int) -> tuple[float | None, float, float]:
    """Train the shipped tank tree with ``copies``; wall seconds to a greedy hit rate >= 90 % over 100 shots
    (probes included), the best rate, and the seconds of that wall the probes took."""
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    bpy.ops.wm.open_mainfile(filepath=str(TANK_BLEND))
    scene = bpy.context.scene
    compiled = compiler.compile_tree(bpy.data.node_groups["Tank"], scene)
    compiled.env.copies = copies
    compiled.trainer.eval_interval = 0
    best, reached, probing = 0.0, None, 0.0
    with restored_scene(scene):
        env = SceneVectorEnv(compiled.env, scene, copies) if copies > 1 else build.build_env(compiled, scene)
        try:
            job = build.build_job(compiled, env, seed=seed, total_steps=max_steps)
            t0 = time.perf_counter()
            while not job.done:
                job.advance(max_steps=check_every)
                t1 = time.perf_counter()
                rate = greedy_hit_rate(env, job.agent)
                probing += time.perf_counter() - t1
                best = max(best, rate)
                if rate >= 0.9:
                    reached = time.perf_counter() - t0
                    break
                job.resume(env)  # the probe reset the copies: their cut episodes are dropped
        finally:
            env.close()
    return reached, best, probing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000, help="env steps per timed chunk (summed over copies)")
    parser.add_argument("--all", action="store_true", help="also the camera at 64 copies")
    parser.add_argument("--train", action="store_true", help="also train the tank with 16 copies and with one")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--only", choices=("transform", "camera"), help="measure only this part (and --train)")
    parser.add_argument("--max-train-steps", type=int, default=120_000)
    args = parser.parse_args()
    register_extension()
    from drla_ext.addon.tree import compiler

    result: dict = {}
    if args.only in (None, "transform"):
        bpy.ops.wm.read_homefile(use_empty=True)
        scene = bpy.context.scene
        tree = transform_tree(scene)
        compiled = compiler.compile_tree(tree, scene)
        result["transform_steps_per_s"] = measure(compiled, scene, (1, 4, 16, 64), args.steps)
    if args.only in (None, "camera"):
        compiled, scene = tank_compiled()
        result["camera_steps_per_s"] = measure(compiled, scene, (1, 4, 16, 64) if args.all else (1, 4, 16),
                                               max(400, args.steps // 4))
    if args.train:
        for copies in (16, 1):
            walls, rates, probes = [], [], []
            for seed in (int(s) for s in args.seeds.split(",")):
                wall, best, probing = train_to_goal(copies, seed, args.max_train_steps, 2000)
                walls.append(wall)
                rates.append(best)
                probes.append(probing)
            reached = [w for w in walls if w is not None]
            result[f"tank_copies{copies}_wall_s"] = round(float(np.median(reached)), 1) if reached else None
            result[f"tank_copies{copies}_hit_rate"] = round(float(np.median(rates)), 3)
            result[f"tank_copies{copies}_reached_seeds"] = len(reached)
            result[f"tank_copies{copies}_probe_s"] = round(float(np.median(probes)), 1)
    result["machine"] = f"{platform.machine()}, {platform.python_version()}, bpy {bpy.app.version_string}"
    print(json.dumps(result))


if __name__ == "__main__":
    main()
