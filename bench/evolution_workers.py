"""Benchmark: an Evolution tree's populations on worker processes (issue 27, item 4), on the rigid-body walker.

Prints ONE JSON line: ``generations_per_min`` {label: generations per minute} in this process alone ("0") and with
1 and 2 worker processes, timed over the generations between the first and the last (the workers' start, a
Blender each opening the file, is in ``first_generation_s``; after the last, the workers close),
``cpu_s_per_generation`` (learner and workers together over the same generations: what the workers add besides
the episodes), ``speedup_2_vs_1`` (target >= 1.7; it needs two free cores) and ``same_run``: whether every run
evolved the same history and champion as the one in this process (it must).
The walker's tree as shipped: a GA of 24 networks, one 240-step episode each.
Run: ``.venv/bin/python bench/evolution_workers.py [--generations N] [--population P]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import drla  # noqa: E402,F401  (one BLAS thread per process, before numpy: see drla/__init__.py)

import bpy  # noqa: E402

from drla.extension import register_extension  # noqa: E402

WALKER = ROOT / "scenes" / "walker" / "walker.blend"


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes so far (Linux ``/proc``; 0 elsewhere)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def run(workers: int, generations: int, population: int, copy: str) -> tuple[float, float, float, str]:
    """(generations per minute after the first, seconds to the first, CPU seconds per generation after the first,
    learner and workers together, the run's history and champion as text)."""
    from drla_ext.addon.runs import build, evolution_workers
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree.compiler import compile_tree

    bpy.ops.wm.open_mainfile(filepath=copy, load_ui=False)
    scene = bpy.context.scene
    compiled = compile_tree(bpy.data.node_groups["Walker"], scene)
    with restored_scene(scene):
        env = build.build_env(compiled, scene, copies=1)
        try:
            t0 = time.perf_counter()
            if workers:
                job = evolution_workers.build_job(compiled, env, copy, workers=workers, copies=1, seed=0,
                                                  total_steps=generations)
            else:
                job = build.build_job(compiled, env, seed=0, total_steps=generations)
            job.advance(max_steps=1)
            pids = [os.getpid(), *(w.handle[0].pid for w in job.farm.workers)] if workers else [os.getpid()]
            t1, c1 = time.perf_counter(), cpu_seconds(pids)
            job.advance(max_steps=generations - 2)
            if workers:
                pids = [os.getpid(), *(w.handle[0].pid for w in job.farm.workers)]  # (none restarted: the same)
            t2, c2 = time.perf_counter(), cpu_seconds(pids)
            job.advance()
            job.finish()
        finally:
            env.close()
    same = json.dumps([{k: v for k, v in job.history.items() if k != "seconds"}, job.champion_fitness])
    return 60.0 * (generations - 2) / (t2 - t1), t1 - t0, (c2 - c1) / (generations - 2), same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--generations", type=int, default=5)
    parser.add_argument("--population", type=int, default=24)
    args = parser.parse_args()
    register_extension()
    with tempfile.TemporaryDirectory() as folder:
        bpy.ops.wm.open_mainfile(filepath=str(WALKER), load_ui=False)
        node = next(n for n in bpy.data.node_groups["Walker"].nodes if n.bl_idname == "DRLA_EvolutionAgentNode")
        node.population_size = args.population
        copy = os.path.join(folder, "walker.blend")
        bpy.ops.wm.save_as_mainfile(filepath=copy, copy=True, compress=False)
        rates, first, cpu, runs = {}, {}, {}, {}
        for workers in (0, 1, 2):
            key = str(workers)
            rates[key], first[key], cpu[key], runs[workers] = run(workers, args.generations, args.population, copy)
    print(json.dumps({"bench": "evolution_workers", "scene": "walker", "population": args.population,
                      "generations": args.generations, "cpus": os.cpu_count(),
                      "load": round(os.getloadavg()[0], 1),
                      "generations_per_min": {k: round(v, 2) for k, v in rates.items()},
                      "first_generation_s": {k: round(v, 2) for k, v in first.items()},
                      "cpu_s_per_generation": {k: round(v, 2) for k, v in cpu.items()},
                      "speedup_2_vs_1": round(rates["2"] / rates["1"], 2),
                      "same_run": runs[1] == runs[0] and runs[2] == runs[0]}))


if __name__ == "__main__":
    main()
