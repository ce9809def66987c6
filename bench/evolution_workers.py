"""Benchmark: an Evolution tree's populations on worker processes (issue 27, item 4), on the rigid-body walker.

Prints a ratio line (stderr) and ONE JSON line (stdout): ``generations_per_min`` {label: generations per minute}
in this process alone ("0") and with 1 and 2 worker processes, timed over the generations between the first and
the last (the workers' start, a Blender each opening the file, is in ``first_generation_s``; after the last, the
workers close); ``cpu_s_per_generation`` (learner and workers together over the same generations: what the
workers add besides the episodes), split into ``learner_cpu_s_per_generation`` (the part the workers cannot
overlap: breeding, bookkeeping, sending) and each worker's ``worker_cpu_s_per_generation``; ``speedup_2_vs_1``
(wall: target >= 1.7; it needs two free cores); ``speedup_2_vs_1_from_cpu`` (what the wall ratio would be with a
core per process: the one worker's CPU time a generation over the busiest of the two's, each plus the learner's
CPU time); ``same_run``: whether every run evolved the same history and champion as the one in this process
(it must). The walker's tree with a population of 24 (a GA; one 240-step episode each).
Run: ``make bench-evolution-workers`` or ``.venv/bin/python bench/evolution_workers.py [--generations N]
[--population P]`` (about a minute on an idle two-core machine).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def run(workers: int, generations: int, population: int, copy: str) -> dict[str, Any]:
    """One run on ``copy``: generations per minute after the first (``rate``), seconds to the first (``first``),
    CPU seconds per generation after the first of the learner and of each worker, the run's history and champion
    as text (``same``)."""
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
            pids = [w.handle[0].pid for w in job.farm.workers] if workers else []
            t1, l1, w1 = time.perf_counter(), time.process_time(), [cpu_seconds([p]) for p in pids]
            job.advance(max_steps=generations - 2)
            t2, l2, w2 = time.perf_counter(), time.process_time(), [cpu_seconds([p]) for p in pids]
            if workers:
                assert pids == [w.handle[0].pid for w in job.farm.workers], "a worker was restarted"
            job.advance()
            job.finish()
        finally:
            env.close()
    g = generations - 2
    return {"rate": 60.0 * g / (t2 - t1), "first": t1 - t0, "learner_cpu": (l2 - l1) / g,
            "worker_cpu": [(b - a) / g for a, b in zip(w1, w2)],
            "same": json.dumps([{k: v for k, v in job.history.items() if k != "seconds"}, job.champion_fitness])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--generations", type=int, default=6)
    parser.add_argument("--population", type=int, default=24)
    args = parser.parse_args()
    register_extension()
    with tempfile.TemporaryDirectory() as folder:
        bpy.ops.wm.open_mainfile(filepath=str(WALKER), load_ui=False)
        node = next(n for n in bpy.data.node_groups["Walker"].nodes if n.bl_idname == "DRLA_EvolutionAgentNode")
        node.population_size = args.population
        copy = os.path.join(folder, "walker.blend")
        bpy.ops.wm.save_as_mainfile(filepath=copy, copy=True, compress=False)
        runs = {w: run(w, args.generations, args.population, copy) for w in (0, 1, 2)}
    r0, r1, r2 = runs[0], runs[1], runs[2]
    cpu = {str(w): round(r["learner_cpu"] + sum(r["worker_cpu"]), 3) for w, r in runs.items()}
    # what the wall ratio would be with a core per process: a generation takes its busiest worker's CPU time
    # plus the learner's (it breeds while the workers wait); messages' latency and a worker's wait for the
    # other at a generation's end are not in it
    one = sum(r1["worker_cpu"]) + r1["learner_cpu"]
    two = max(r2["worker_cpu"]) + r2["learner_cpu"]
    ratio, estimate, load = r2["rate"] / r1["rate"], one / two, os.getloadavg()[0]
    print(f"generations per minute, 2 workers / 1 worker: {ratio:.2f}x wall (target >= 1.7; "
          f"{'needs an idle machine: ' if load > 0.5 else ''}load {load:.1f} on {os.cpu_count()} cores); "
          f"{estimate:.2f}x from CPU time (each worker's CPU per generation, as if it had a core of its own); "
          f"same run as one process: {r1['same'] == r0['same'] and r2['same'] == r0['same']}", file=sys.stderr)
    print(json.dumps({"bench": "evolution_workers", "scene": "walker", "population": args.population,
                      "generations": args.generations, "cpus": os.cpu_count(), "load": round(load, 1),
                      "generations_per_min": {str(w): round(r["rate"], 2) for w, r in runs.items()},
                      "first_generation_s": {str(w): round(r["first"], 2) for w, r in runs.items()},
                      "cpu_s_per_generation": cpu,
                      "learner_cpu_s_per_generation": {str(w): round(r["learner_cpu"], 4) for w, r in runs.items()},
                      "worker_cpu_s_per_generation": {str(w): [round(c, 3) for c in r["worker_cpu"]]
                                                      for w, r in runs.items() if w},
                      "speedup_2_vs_1": round(ratio, 2), "speedup_2_vs_1_from_cpu": round(estimate, 2),
                      "same_run": r1["same"] == r0["same"] and r2["same"] == r0["same"]}))


if __name__ == "__main__":
    main()
