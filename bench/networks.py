"""Watching and shaping networks (issue 15): growth speed and benefit, merging by distillation.

Prints ONE JSON line (per-seed details go to stderr):

- ``widen_ms``, ``deepen_ms``: median time of growing a 2x64 relu network to 2x128 (both layers
  widened, Net2Net) and to 3x64 (an identity layer inserted), as a DQN agent grows: q and target
  networks, Adam moments and keep-best parameters remapped.
- ``grow_cartpole_solved_seeds`` against ``fixed_2x4_solved_seeds``: DQN on CartPole from a 2x4
  network, with ``GrowthRule`` (each hidden layer x4 after 2 evaluations without a new best, up to
  64 units; new units "fresh": random in, zero out) against the same 2x4 network fixed, the same
  step budget; a seed is solved when an evaluation (5 greedy episodes) reaches a mean return of 475.
  ``grow_net2net_copies_solved_seeds``: the same growth with Net2Net's copied units instead.
- ``overlay_draw_ms``: one redraw of the viewport overlay for a 2x256 network, as Blender calls it at
  every viewport redraw: the picture cached in a texture drawn as one quad, and the GPU waited for
  (headless, offscreen, through bpy's gpu module: llvmpipe on a machine without a GPU, so the drawing
  itself is CPU time); ``overlay_draw_submit_ms``: the same without waiting (the main thread's share
  where a GPU draws); ``overlay_rebuild_ms``: one rebuild (the drawing with the strongest connections,
  the batches, rendered into the texture and waited for), done only when the weights or observation
  changed and at most ``overlay_rebuilds_per_s_max`` times a second; ``overlay_batches_draw_ms``: the
  batches drawn at every redraw (what a redraw cost before the texture cache), for comparison.
- ``merge_distill_s`` and ``merged_score_ratio`` (see ``merge_case``): two TankGrid arenas trained
  separately, one student distilled from both, its score over each teacher's.

    .venv/bin/python bench/networks.py [--quick] [--seeds 10] [--steps 40000] [--skip-grow] [--skip-merge]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drla_core.rl.dqn import DQNAgent, DQNConfig  # noqa: E402
from drla_core.envs.cartpole import CartPole  # noqa: E402
from drla_core.nets.growth import GrowthRule, grow_agent  # noqa: E402
from drla_core.rl.train import Callback, TrainingRun  # noqa: E402

SOLVED = 475.0
PATIENCE, FACTOR = 2, 4  # grow after 2 evaluations without a new best; x4 per growth (4 -> 16 -> 64)


def growth_timings(repeats: int = 30) -> dict:
    """Median milliseconds to widen a 2x64 DQN agent to 2x128 and to deepen it to 3x64."""
    env = CartPole()
    out = {}
    for name in ("widen", "deepen"):
        times = []
        for r in range(repeats):
            agent = DQNAgent(env.observation_space, env.action_space, DQNConfig(hidden=[64, 64]), seed=r)
            agent.best_params = agent.q_network.params.copy()
            t0 = time.perf_counter()
            if name == "widen":
                grow_agent(agent, "widen", 0, 128)
                grow_agent(agent, "widen", 1, 128)
            else:
                grow_agent(agent, "deepen", 1)
            times.append(1e3 * (time.perf_counter() - t0))
        out[f"{name}_ms"] = round(statistics.median(times), 3)
    return out


class Solved(Callback):
    """The first step at which an evaluation reaches SOLVED."""

    def __init__(self) -> None:
        self.step: int | None = None

    def on_eval(self, run: TrainingRun) -> None:
        if self.step is None and run.history.evals[-1][1] >= SOLVED:
            self.step = run.steps


def cartpole_seed(seed: int, steps: int, growing: bool, init: str = "fresh") -> dict:
    config = DQNConfig(hidden=[4, 4])
    env = CartPole()
    agent = DQNAgent(env.observation_space, env.action_space, config, seed=seed)
    solved = Solved()
    callbacks: list[Callback] = [solved]
    rule = GrowthRule(patience=PATIENCE, max_grows=4, how="widen", max_size=64, solved=SOLVED, factor=FACTOR,
                      init=init)
    if growing:
        callbacks.insert(0, rule)
    t0 = time.perf_counter()
    run = TrainingRun(env, agent, steps, seed=seed, eval_env=CartPole(), eval_interval=1000, eval_episodes=5,
                      callbacks=callbacks).run()
    return {"seed": seed, "growing": growing, "init": init, "solved_at": solved.step,
            "seconds": round(time.perf_counter() - t0, 1),
            "best_eval": max(r for _, r, _ in run.history.evals), "hidden": [h.size for h in agent.q_network.hidden],
            "grows_at": [g["step"] for g in rule.grows] if growing else []}


def overlay_timing(repeats: int = 20) -> dict:
    """Median ms of one overlay redraw (2x256 network, headless offscreen, bpy's gpu module), of the main
    thread's share of it, of a rebuild, and of drawing the batches at every redraw (the way before the cache)."""
    try:
        import bpy  # noqa: F401
    except ImportError:
        return {"overlay_draw_ms": None, "overlay_note": "no bpy"}
    import numpy as np

    from drla.extension import register_extension
    from drla_core.nn.mlp import MLP

    register_extension()
    from drla_ext.addon.ui import net_overlay  # type: ignore[import-not-found]

    net = MLP(8, [(256, "relu"), (256, "relu")], 4, rng=0)
    obs = np.ones(8, np.float32)
    net_overlay.render_offscreen(net, obs)  # GPU context and shaders
    t = net_overlay.overlay_timings(net, obs, repeats=repeats)
    return {"overlay_draw_ms": round(t["draw_ms"], 3), "overlay_draw_submit_ms": round(t["draw_submit_ms"], 3),
            "overlay_rebuild_ms": round(t["rebuild_ms"], 2),
            "overlay_rebuilds_per_s_max": round(1.0 / net_overlay.REBUILD_S, 1),
            "overlay_batches_draw_ms": round(t["batches_draw_ms"], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 seeds, fewer steps")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--skip-grow", action="store_true", help="no CartPole runs")
    parser.add_argument("--skip-merge", action="store_true", help="no tank merge case")
    parser.add_argument("--skip-overlay", action="store_true", help="no Blender overlay timing")
    args = parser.parse_args()
    seeds = args.seeds or (3 if args.quick else 10)
    steps = args.steps or (30_000 if args.quick else 40_000)
    result: dict = {"bench": "networks", "seeds": seeds, "steps": steps}
    result.update(growth_timings())
    if not args.skip_overlay:
        result.update(overlay_timing())
    if not args.skip_grow:
        cases = ((True, "fresh", "grow_cartpole_solved_seeds"), (False, "fresh", "fixed_2x4_solved_seeds"),
                 (True, "copy", "grow_net2net_copies_solved_seeds"))
        for growing, init, key in cases:
            rows = []
            for seed in range(seeds):
                row = cartpole_seed(seed, steps, growing, init)
                print(json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
            result[key] = sum(r["solved_at"] is not None for r in rows)
        result["grow_rule"] = f"widen x{FACTOR} after {PATIENCE} evaluations without a new best, up to 64 units"
    if not args.skip_merge:
        from merge_case import merge_case  # bench/merge_case.py: the tank arenas, trained and merged

        result.update(merge_case(quick=args.quick))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
