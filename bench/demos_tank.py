"""Benchmark: the tank (``scenes/tank/tank.blend``, tree "Tank") trained by DQN with and without a demonstration
of 20 episodes: environment steps to a 90 % greedy hit rate (target of issue 26: at most half with it).

The demonstration is made by a scripted aiming policy played through the tree's own environment (recording it by
hand in the viewport is not possible on a headless machine; the file is the same format a keyboard recording
writes, ``recorded_by: "script"``): drive TankA sideways until it is in line with TankB (within ``--aim``),
then fire. It reads the objects' positions from the scene, not the agent's camera.

Each seed trains twice on the same settings (the tree's DQN, ``bench/tank_training.py``'s goal checks): without
the demonstration, and with it (``drla_core.rl.bc.imitation``: DQfD pre-training, then the transitions in the
replay; exploration starts at ``--demo-eps`` instead of the tree's 1.0, as DQfD explores little). The greedy
policy is checked before training and every ``--check-every`` steps (at an episode's end), as tank_training
does; a seed reaches the goal after ``--confirm`` passing checks in a row, at the first one's step count.

Prints ONE JSON line. Run: ``.venv/bin/python bench/demos_tank.py [--seeds 3] [--max-steps 30000]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tank_training import EVAL_SEED, TANK_BLEND, shots_evaluation  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def expert_policy(scene, aim: float):
    tank, target = scene.objects["TankA"], scene.objects["TankB"]

    def act(_obs) -> int:
        dx = target.matrix_world.translation.x - tank.matrix_world.translation.x
        if dx > aim:
            return 0  # right
        if dx < -aim:
            return 1  # left
        return 7  # fire
    return act


def record_demo(env, scene, episodes: int, aim: float, seed: int = 10_000):
    """``episodes`` episodes of the scripted policy through ``env``: a Demonstration and its hit rate."""
    import numpy as np

    from drla_ext.drla_core.io.demos import Demonstration

    policy = expert_policy(scene, aim)
    rows: dict[str, list] = {k: [] for k in ("obs", "actions", "rewards", "terminated", "truncated")}
    hits = shots = 0
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        while True:
            a = policy(obs)
            nxt, r, term, trunc, info = env.step(a)
            if "hit" in info:
                shots += 1
                hits += info["hit"]
            for k, v in zip(rows, (obs, a, r, term, trunc and not term)):
                rows[k].append(v)
            obs = nxt
            if term or trunc:
                break
    demo = Demonstration(env.observation_space, env.action_space, np.asarray(rows["obs"]), rows["actions"],
                         rows["rewards"], rows["terminated"], rows["truncated"],
                         source={"blend": "tank.blend", "tree": "Tank"}, recorded_by="script")
    return demo, hits / max(shots, 1)


def train(env, compiled, seed: int, args, demo=None) -> dict:
    from drla_ext.addon.runs import build
    from drla_ext.drla_core.rl import bc
    from drla_ext.drla_core.rl.dqn import DQNAgent
    from drla_ext.drla_core.rl.train import Callback, TrainingRun

    config = build.dqn_config(compiled, args.max_steps)
    if demo is not None:
        config = dataclasses.replace(config, exploration_initial_eps=args.demo_eps)
    agent = DQNAgent(env.observation_space, env.action_space, config, seed=seed)
    t0 = time.perf_counter()
    figures = bc.imitation(agent, demo, seed=seed) if demo is not None else {}
    pretrain_s = time.perf_counter() - t0
    checks: list[tuple[int, float, int]] = []
    state = {"in_a_row": 0, "first": None, "reached": None}

    def check(steps: int, run=None) -> None:
        r = shots_evaluation(env, agent.predict, args.shots, args.check_episodes,
                             seed=EVAL_SEED + 1000 * seed + len(checks))
        checks.append((steps, round(r["hit_rate"], 3), r["shots"]))  # (fewer shots than --shots: not passed)
        ok = r["shots"] >= args.shots and r["hit_rate"] >= args.goal
        state["in_a_row"] = state["in_a_row"] + 1 if ok else 0
        if ok and state["in_a_row"] == 1:
            state["first"] = steps
        if state["in_a_row"] >= args.confirm:
            state["reached"] = state["first"]
            if run is not None:
                run.stop()

    class GoalCheck(Callback):
        def __init__(self) -> None:
            self.next = args.check_every

        def on_episode_end(self, run: TrainingRun) -> None:
            if run.steps >= self.next and state["reached"] is None:
                self.next = run.steps + args.check_every
                check(run.steps, run)

    check(0)  # the policy before any environment step (the pre-trained one, with the demonstration)
    run = TrainingRun(env, agent, args.max_steps, seed=seed, callbacks=[GoalCheck()])
    if state["reached"] is None:
        run.run()
    return {"steps_to_goal": state["reached"], "steps": run.steps, "checks": checks,
            "pretrain_s": round(pretrain_s, 1), "wall_s": round(time.perf_counter() - t0, 1),
            **{k: round(float(v), 3) for k, v in figures.items()}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--episodes", type=int, default=20, help="demonstration episodes (default 20)")
    p.add_argument("--max-steps", type=int, default=30_000)
    p.add_argument("--check-every", type=int, default=1000)
    p.add_argument("--confirm", type=int, default=2)
    p.add_argument("--shots", type=int, default=50)
    p.add_argument("--check-episodes", type=int, default=10)
    p.add_argument("--goal", type=float, default=0.9)
    p.add_argument("--aim", type=float, default=0.2, help="the scripted aimer fires within this x distance")
    p.add_argument("--demo-eps", type=float, default=0.1, help="initial exploration with the demonstration")
    p.add_argument("--only", choices=("both", "demo", "plain"), default="both")
    args = p.parse_args(argv)

    import bpy

    from drla.extension import register_extension

    register_extension()
    from drla_ext.addon.runs import build
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler
    from drla_ext.drla_core.io.demos import load_demo, save_demo

    bpy.ops.wm.open_mainfile(filepath=str(TANK_BLEND), load_ui=False)
    scene = bpy.context.scene
    compiled = compiler.compile_tree(bpy.data.node_groups["Tank"], scene)
    rows = []
    with restored_scene(scene):
        env = build.build_env(compiled, scene)
        try:
            t0 = time.perf_counter()
            demo, expert_rate = record_demo(env, scene, args.episodes, args.aim)
            with tempfile.TemporaryDirectory() as tmp:  # through the file, as drla train --demo reads it
                demo = load_demo(save_demo(Path(tmp) / "tank_demo.npz", demo))
            record_s = time.perf_counter() - t0
            for seed in range(args.seeds):
                row: dict = {"seed": seed}
                if args.only in ("both", "plain"):
                    row["plain"] = train(env, compiled, seed, args)
                if args.only in ("both", "demo"):
                    row["demo"] = train(env, compiled, seed, args, demo)
                print("SEED " + json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
        finally:
            env.close()

    def steps(kind):
        return [r[kind]["steps_to_goal"] for r in rows if kind in r]
    print(json.dumps({"bench": "demos_tank", "goal": f"greedy hit rate >= {args.goal:.0%} over {args.shots} shots",
                      "demo_steps": len(demo), "demo_episodes": demo.n_episodes,
                      "expert_hit_rate": round(expert_rate, 3),
                      "record_s": round(record_s, 1), "steps_to_goal_plain": steps("plain"),
                      "steps_to_goal_demo": steps("demo"), "max_steps": args.max_steps, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
