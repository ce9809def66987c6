"""The Tank tree of scenes/tank/tank.blend learns: a short real DQN run shoots better than chance."""

import time
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

TANK_BLEND = Path(__file__).resolve().parents[2] / "scenes" / "tank" / "tank.blend"
TRAIN_STEPS = 15_000  # the whole run, however long it takes (no time box: the same run on a busy box)


def shots(env, policy, n_shots, max_episodes, seed):
    """Play ``policy`` until ``n_shots`` fire actions (at most ``max_episodes`` episodes): (hits, shots)."""
    hits = fired = episodes = 0
    obs, _ = env.reset(seed=seed)
    while fired < n_shots and episodes < max_episodes:
        obs, _r, terminated, truncated, info = env.step(policy(obs))
        if "hit" in info:
            fired += 1
            hits += info["hit"]
        if terminated or truncated:
            episodes += 1
            obs, _ = env.reset()
    return hits, fired


@pytest.mark.slow
@pytest.mark.skipif(not TANK_BLEND.exists(), reason="scenes/tank/tank.blend not built yet")
def test_short_training_hits_more_often_than_random(ext):
    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler
    from drla_ext.addon.scene.snapshot import restored_scene

    bpy.ops.wm.open_mainfile(filepath=str(TANK_BLEND))
    scene = bpy.context.scene
    compiled = compiler.compile_tree(bpy.data.node_groups["Tank"], scene)
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            rng = np.random.default_rng(0)
            r_hits, r_shots = shots(env, lambda obs: int(rng.integers(env.action_space.n)), 200, 40, seed=123)
            random_rate = r_hits / r_shots

            agent = build.build_agent(compiled, env, seed=0, total_steps=TRAIN_STEPS)
            # learning alone: no Trainer evaluations (at this short budget keep-best would choose among 3 noisy ones)
            run = build.build_run(compiled, env, agent, TRAIN_STEPS, seed=0, eval_interval=0)
            start = time.perf_counter()
            run.run()
            g_hits, g_shots = shots(env, agent.predict, 100, 20, seed=456)
        finally:
            env.close()
    greedy_rate = g_hits / max(g_shots, 1)
    print(f"tank: random {r_hits}/{r_shots} = {random_rate:.3f}; after {run.steps} steps "
          f"({time.perf_counter() - start:.1f} s) greedy {g_hits}/{g_shots} = {greedy_rate:.3f}")
    assert r_shots == 200 and random_rate < 0.2
    assert run.steps == TRAIN_STEPS
    assert g_shots >= 20, "the trained agent should fire"
    assert greedy_rate >= 0.5 and greedy_rate > 2 * random_rate
    assert scene.objects["TankA"]["score"] == 0  # the scene is restored
