"""Benchmark: SceneEnv steps per second, including the agent's (greedy DQN) action choice.

Prints ONE JSON line:

- ``tank_steps_per_s``: the tank scene (``scenes/tank/tank.blend``) with a 64x64 'BW' camera
  observation through the gpu camera (target >= 1000).
- ``transform_steps_per_s``: a transform-only scene (agent + target locations; target >= 5000).
- ``*_best``: the fastest of the 5 timed chunks (the median is the headline figure).
- ``camera_ms``: one ``CameraRenderer.read()`` of the tank scene at 64x64, per method and mode.
- ``tank_env_source``: ``"node_tree ..."`` when the file's "Tank" tree (``addon.examples``)
  compiled (its camera sensor is set to 64x64 for the bench; the tree's own size is noted),
  else ``"spec"``: an equivalent hand-written ``EnvSpec`` (camera state, move/wait/cannon
  actions, no FIRE).

Every step is ``agent.act(obs, explore=False)`` (one MLP forward pass) + ``env.step(action)``,
with ``env.reset()`` at episode ends; no learning updates (so a small replay buffer: acting never
touches it). The headline rate is the median of 5 timed chunks.
llvmpipe note: ``LP_NUM_THREADS=0`` (rasterise in the calling thread) made 64x64 gpu reads
faster on a loaded 2-core box (0.12-0.19 ms against 0.16-0.33 ms); the bench leaves it unset. Run:
``.venv/bin/python bench/scene_env.py [--steps N]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
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


def _modules():
    register_extension()
    from drla_ext.addon.scene import camera
    from drla_ext.addon.scene import scene_env
    from drla_ext.drla_core.rl import dqn

    return camera, None, scene_env, dqn


def tank_env(comp, scene_env):
    """The tank env from the file's node tree when it compiles, else an equivalent spec."""
    from drla_ext.addon import specs
    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler

    bpy.ops.wm.open_mainfile(filepath=str(TANK_BLEND))
    scene = bpy.context.scene
    tree = bpy.data.node_groups.get("Tank")
    if tree is not None:
        try:
            compiled = compiler.compile_tree(tree, scene)
        except Exception as exc:  # report and fall back; the bench is about speed
            print(f"bench: the Tank tree did not compile ({exc}); using a hand-written spec", file=sys.stderr)
        else:
            tree_cams = []
            for sensor in compiled.env.state.sensors:
                if sensor.kind == "camera":  # the bench measures a 64x64 camera, whatever the tree says
                    o = sensor.options
                    tree_cams.append(f"{o['width']}x{o['height']} {o['mode']}")
                    o["width"] = o["height"] = 64
                    sensor.size = 64 * 64 * (3 if o["mode"] == 'RGB' else 1)
            return build.build_env(compiled, scene), "node_tree (camera " + ", ".join(tree_cams) + " -> 64x64)"
    cam = specs.SensorSpec("camera", "Camera", 64 * 64, obj="Camera", options={
        "width": 64, "height": 64, "mode": 'BW', "threshold": 0.5, "max_depth": 20.0, "method": "gpu"})
    score = specs.SensorSpec("property", "Score", 1, obj="TankA", path='["score"]', options={"source": 'OBJECT'})
    actions = [specs.ActionSpec('MOVE', name, "Move", obj="TankA", vector=v, space='WORLD',
                               limits=((-4.5, -4.5, 0.0), (4.5, 4.5, 0.0)))
               for name, v in (("move_right", (0.2, 0, 0)), ("move_left", (-0.2, 0, 0)),
                               ("move_front", (0, 0.2, 0)), ("move_back", (0, -0.2, 0)))]
    actions.append(specs.ActionSpec('WAIT', "wait", "Wait"))
    actions += [specs.ActionSpec('ROTATE', name, "Cannon", obj="Cannon", vector=(a, 0, 0), space='LOCAL',
                                limits=((0.0, 0, 0), (math.radians(60), 0, 0)))
                for name, a in (("canon_up", 0.1), ("canon_down", -0.1))]
    spec = specs.EnvSpec("Environment", specs.StateSpec("State", [cam, score]), actions,
                        rewards=[specs.RewardSpec("step_cost", "Step", options={"cost": 0.0})], max_steps=200)
    return scene_env.SceneEnv(spec, scene), "spec"


def transform_env(comp, scene_env):
    """An agent cube that moves towards a target cube: observation = both locations."""
    from drla_ext.addon import specs

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    for name, loc in (("Agent", (0.0, 0.0, 0.0)), ("Target", (3.0, 2.0, 0.0))):
        ob = bpy.data.objects.new(name, bpy.data.meshes.new(name))
        scene.collection.objects.link(ob)
        ob.location = loc
    bpy.context.view_layer.update()
    loc = {"location": True, "rotation": False, "rotation_format": 'EULER'}
    sensors = [specs.SensorSpec("transform", "Agent", 3, obj="Agent", options=loc),
               specs.SensorSpec("transform", "Target", 3, obj="Target", options=loc)]
    actions = [specs.ActionSpec('MOVE', name, "Move", obj="Agent", vector=v, space='WORLD')
               for name, v in (("right", (0.1, 0, 0)), ("left", (-0.1, 0, 0)), ("front", (0, 0.1, 0)),
                               ("back", (0, -0.1, 0)))]
    actions.append(specs.ActionSpec('WAIT', "wait", "Wait"))
    spec = specs.EnvSpec(
        "Environment", specs.StateSpec("State", sensors), actions,
        rewards=[specs.RewardSpec("distance", "Distance", obj="Agent", other="Target",
                                 options={"mode": 'PROGRESS', "weight": 1.0})],
        dones=[specs.DoneSpec("within_distance", "Reached", obj="Agent", other="Target", reward=1.0,
                             options={"distance": 0.3}),
               specs.DoneSpec("out_of_bounds", "Out", obj="Agent", reward=-1.0,
                             options={"min": (-5.0, -5.0, -1.0), "max": (5.0, 5.0, 1.0)})],
        max_steps=200)
    return scene_env.SceneEnv(spec, scene)


def steps_per_second(env, dqn, steps: int, seed: int = 0) -> tuple[float, float]:
    """(median, best) steps/s over 5 timed chunks of ``steps // 5`` steps."""
    agent = dqn.DQNAgent(env.observation_space, env.action_space, dqn.DQNConfig(buffer_size=1000), seed)
    obs, _ = env.reset(seed=seed)
    for _ in range(20):  # warm-up: first draws, caches
        obs, _, term, trunc, _ = env.step(agent.act(obs, explore=False))
        if term or trunc:
            obs, _ = env.reset()
    rates = []  # 5 chunks; the median resists bursts of load from other processes
    chunk = max(1, steps // 5)
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(chunk):
            obs, _, term, trunc, _ = env.step(agent.act(obs, explore=False))
            if term or trunc:
                obs, _ = env.reset()
        rates.append(chunk / (time.perf_counter() - t))
    return float(np.median(rates)), float(np.max(rates))


def camera_ms(camera, n: int = 50) -> dict[str, float]:
    bpy.ops.wm.open_mainfile(filepath=str(TANK_BLEND))
    scene = bpy.context.scene
    out = {}
    for method, modes, reps in (('gpu', ('BW', 'RGB', 'DEPTH'), n), ('workbench', ('BW', 'DEPTH'), max(5, n // 5))):
        for mode in modes:
            with camera.CameraRenderer(scene, scene.objects["Camera"], 64, 64, mode, method) as r:
                r.read()
                ts = []
                for _ in range(reps):
                    t = time.perf_counter()
                    r.read()
                    ts.append(time.perf_counter() - t)
            out[f"{method}_{mode}"] = round(1e3 * float(np.median(ts)), 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="timed env steps per scene")
    args = parser.parse_args(argv)
    # Blender logs ("Read blend: ...") to the C-level stdout; keep stdout for the one JSON line.
    sys.stdout.flush()
    real_stdout = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        result = run(args.steps)
    finally:
        sys.stdout.flush()
        os.dup2(real_stdout, 1)
        os.close(devnull)
        os.close(real_stdout)
    print(json.dumps(result))
    return 0


def run(steps: int) -> dict[str, object]:
    camera, comp, scene_env, dqn = _modules()
    result: dict[str, object] = {"bench": "scene_env", "resolution": "64x64"}
    result["camera_ms"] = camera_ms(camera)
    env, source = tank_env(comp, scene_env)
    try:
        median, best = steps_per_second(env, dqn, steps)
        result["tank_steps_per_s"], result["tank_steps_per_s_best"] = round(median, 1), round(best, 1)
        result["tank_env_source"] = source
        result["tank_obs_size"] = int(env.observation_space.shape[0])
    finally:
        env.close()
    env = transform_env(comp, scene_env)
    try:
        median, best = steps_per_second(env, dqn, steps * 5)
        result["transform_steps_per_s"], result["transform_steps_per_s_best"] = round(median, 1), round(best, 1)
    finally:
        env.close()
    result["targets"] = {"tank_steps_per_s": 1000, "transform_steps_per_s": 5000}
    result["gpu"] = bpy.context.preferences.system.gpu_backend if hasattr(bpy.context.preferences.system,
                                                                           "gpu_backend") else None
    result["machine"] = f"{platform.machine()} {platform.python_version()} bpy {bpy.app.version_string}"
    return result


if __name__ == "__main__":
    sys.exit(main())
