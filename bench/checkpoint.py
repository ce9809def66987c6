"""Benchmark: how long a full training checkpoint of the tank agent takes to write, and how big it is.

Opens ``scenes/tank/tank.blend`` (tree "Tank", headless bpy), builds its DQN run as the CLI does and
trains ``--steps`` steps, then writes ``drla_core.rl.checkpoint`` files (``TrainingRun.save_checkpoint``)
``--repeats`` times each: without the replay buffer, with the buffer as it is after those steps, and
with the buffer full (its capacity, what a long run writes). Also times reading one back
(``read_checkpoint``, every CRC checked). Target (issue 13): a checkpoint without the buffer writes
in <= 50 ms.

Prints ONE JSON line: ``checkpoint_write_ms`` and ``checkpoint_bytes`` (each a dict: ``without_buffer``,
``with_buffer``, ``with_full_buffer``), ``checkpoint_read_ms`` likewise, and what was measured.
Times are medians; the disk is the one ``--dir`` is on (default: a temporary folder).

Run: ``.venv/bin/python bench/checkpoint.py [--steps 2000] [--repeats 5] [--dir DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 2)


def measure(run, path: Path, name: str, with_buffer: bool, repeats: int, result: dict) -> None:
    """Median write and read times of ``run``'s checkpoint at ``path``, and its size, into ``result``."""
    from drla_core.rl.checkpoint import read_checkpoint

    result["checkpoint_write_ms"][name] = timed_ms(lambda: run.save_checkpoint(path, replay_buffer=with_buffer),
                                                   repeats)
    result["checkpoint_bytes"][name] = path.stat().st_size
    result["checkpoint_read_ms"][name] = timed_ms(lambda: read_checkpoint(path), repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="training steps before the checkpoints")
    parser.add_argument("--repeats", type=int, default=5, help="writes (and reads) timed per case")
    parser.add_argument("--dir", help="folder to write into (default: a temporary one)")
    args = parser.parse_args()

    from drla import scene as cli_scene

    with cli_scene.quiet_egl():
        bpy, ext, tree, scene = cli_scene.open_scene(cli_scene.TANK_SCENE, "Tank")
        compiled = cli_scene.compile_or_explain(ext, tree, scene)
    build = cli_scene.addon_module("runs.build")
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="drla_ckpt_bench_"))
    folder.mkdir(parents=True, exist_ok=True)
    result: dict = {"bench": "checkpoint", "scene": "tank.blend/Tank", "steps_trained": args.steps,
                    "python": platform.python_version(), "cpus": os.cpu_count(),
                    "checkpoint_write_ms": {}, "checkpoint_bytes": {}, "checkpoint_read_ms": {}}
    with cli_scene.addon_module("scene.snapshot").restored_scene(scene):
        with cli_scene.quiet_egl():
            env = build.build_env(compiled, scene)
        try:
            run = build.build_job(compiled, env, seed=0, total_steps=max(args.steps * 10, 20_000), eval_interval=0)
            while run.steps < args.steps:
                run.advance(max_steps=args.steps - run.steps)
            buf = run.agent.replay_buffer
            result.update(observation_size=int(run.agent.obs_size), parameters=int(run.agent.q_network.params.size),
                          buffer_capacity=buf.capacity, buffer_transitions=len(buf))
            for name, with_buffer in (("without_buffer", False), ("with_buffer", True), ("with_full_buffer", True)):
                if name == "with_full_buffer":
                    buf.full = True  # as after a long run: every row of the buffer goes into the file
                measure(run, folder / f"{name}.npz", name, with_buffer, args.repeats, result)
        finally:
            env.close()
    if not args.dir:
        for f in folder.iterdir():
            f.unlink()
        folder.rmdir()
    result["target_without_buffer_ms"] = 50
    result["meets_target"] = result["checkpoint_write_ms"]["without_buffer"] <= 50
    print(json.dumps(result))


if __name__ == "__main__":
    main()
