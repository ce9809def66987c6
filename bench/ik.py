"""Learned IK benchmark: Blender's IK (LEGACY, iTaSC) vs numpy DLS, FABRIK, the network, network + DLS.

    .venv/bin/python bench/ik.py            # train the networks if their files are missing, then bench
    .venv/bin/python bench/ik.py --train    # (re)train scenes/robot_arm/arm{6,3}_ik.json first

Prints ONE JSON line. For each arm ("Arm6", "Arm3" from scenes/robot_arm/robot_arm.blend) and
1000 random reachable targets (FK of uniform joint angles within the limits, seed 2024):
milliseconds per 1000 solves batched (all targets in one call: the median, and the min, of 21 calls
after one untimed call on other targets) and microseconds per solve single (one target per call,
200 targets), and the end-effector error (median / p90 / max, metres) with the share under
1 mm. Blender's solvers run through bpy: the muted ``BlenderIK`` constraint is un-muted, the target
empty moved, ``view_layer.update()`` called and the tip read (blender-notes §6); its time includes
that update and read. FABRIK is plain (ball joints, no hinge axes or limits), so its error is not
comparable to the others' angle-based answers: it is given for its speed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from drla_core import kinematics as kin  # noqa: E402
from drla_core.rl.ik import IKSolver  # noqa: E402

SCENE = ROOT / "scenes" / "robot_arm"
ARMS = {"Arm6": kin.arm6, "Arm3": kin.arm3}
#: Fixed step count (reproducible); about 1 ms per step on 2 idle cores: ~50 s per arm, ~1.7 min for both.
#: 64 x 64 rather than 128 x 128: inference 2.4x faster (0.25 against 0.6 ms per 1000 targets), and with
#: 1.5x the steps in less time it is more accurate too (Arm6 median 3.6 against 4.8 mm, Arm3 4.3 against 5.0).
TRAIN = {"hidden": ((64, "tanh"), (64, "tanh")), "batch_size": 512, "lr": 1e-2, "loss": "fk", "huber": 0.01,
         "steps": 48000, "max_seconds": None}
N_TARGETS = 1000
N_SINGLE = 200


def model_path(name: str, folder: Path = SCENE) -> Path:
    return folder / f"{name.lower()}_ik.json"


def train(name: str, folder: Path = SCENE) -> tuple[IKSolver, float]:
    """Train the benchmark network for one arm and save it as ``<folder>/<name>_ik.json``."""
    arm = ARMS[name]()
    solver = IKSolver(arm, hidden=TRAIN["hidden"], seed=0)
    result = solver.train_self_supervised(steps=TRAIN["steps"], batch_size=TRAIN["batch_size"], lr=TRAIN["lr"],
                                          loss=TRAIN["loss"], huber=TRAIN["huber"], max_seconds=TRAIN["max_seconds"],
                                          eval_every=0)
    solver.save(model_path(name, folder), meta={"trained_by": "bench/ik.py", "recipe": TRAIN,
                                                "train_cpu_seconds": round(result.cpu_seconds, 1)})
    return solver, result.seconds


def stats(err: np.ndarray) -> dict[str, float]:
    return {"median_m": float(np.median(err)), "p90_m": float(np.percentile(err, 90)), "max_m": float(err.max()),
            "under_1mm": float(np.mean(err < 1e-3))}


def timed(fn, targets: np.ndarray, warmup: np.ndarray | None = None, repeat: int = 21):
    """Median and min wall time (seconds) of ``repeat`` whole batched calls, and the last result.

    ``warmup`` (other targets) is solved once first, untimed: it builds what a solver makes on first
    use for the arm (the refinement's seed atlas), nothing about the benchmark's targets."""
    if warmup is not None:
        fn(warmup)
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(targets)
        times.append(time.perf_counter() - t)
    return float(np.median(times)), float(np.min(times)), out


def bench_numpy(solver: IKSolver, targets: np.ndarray) -> dict[str, dict]:
    arm = solver.arm
    n = len(targets)
    err = lambda a: np.linalg.norm(kin.forward_kinematics(arm, a) - targets, axis=1)  # noqa: E731
    rows: dict[str, dict] = {}
    methods = {
        "numpy_dls": lambda t: kin.dls_solve(arm, t, iters=50, tol=1e-5),
        "fabrik": lambda t: kin.fabrik_solve(arm, t, iters=20, tol=1e-5),
        "network": solver.solve,
        "network_dls": solver.solve_refined,  # DLS rounds + atlas-seeded restarts of the stalled (defaults)
        "network_dls_norestart": lambda t: solver.solve_refined(t, iters=2, restarts=0),  # the speed end
    }
    warmup, _ = arm.sample_targets(n, 7)
    for name, fn in methods.items():
        sec, best, out = timed(fn, targets, warmup)
        e = np.linalg.norm(out[:, -1] - targets, axis=1) if name == "fabrik" else err(out)
        t0 = time.perf_counter()
        for i in range(N_SINGLE):
            fn(targets[i:i + 1])
        single = (time.perf_counter() - t0) / N_SINGLE
        rows[name] = {"ms_per_1000_batched": round(sec / n * 1e6, 3),
                      "ms_per_1000_batched_min": round(best / n * 1e6, 3),
                      "us_per_solve_single": round(single * 1e6, 1), **stats(e)}
    return rows


def bench_blender(name: str, arm: kin.ArmDescription, targets: np.ndarray) -> dict[str, dict]:
    import bpy

    bpy.ops.wm.open_mainfile(filepath=str(SCENE / "robot_arm.blend"))
    ob = bpy.data.objects[name]
    target = bpy.data.objects[f"{name}Target"]
    ik = ob.pose.bones[arm.bones[-1]].constraints["BlenderIK"]
    ik.mute = False
    view_layer = bpy.context.view_layer
    tail = ob.pose.bones[arm.bones[-1]]
    world = arm.local_to_world(targets)
    rows = {}
    for solver_name in ("LEGACY", "ITASC"):
        ob.pose.ik_solver = solver_name
        view_layer.update()
        tips = np.empty_like(world)
        times = np.empty(len(world))
        for i, p in enumerate(world):
            t0 = time.perf_counter()
            target.location = p.tolist()
            view_layer.update()
            tip = ob.matrix_world @ tail.tail
            times[i] = time.perf_counter() - t0
            tips[i] = tip
        e = np.linalg.norm(tips - world, axis=1)
        rows[f"blender_{solver_name.lower()}"] = {"us_per_solve_single": round(float(np.median(times)) * 1e6, 1),
                                                  "us_per_solve_p90": round(float(np.percentile(times, 90)) * 1e6, 1),
                                                  **stats(e)}
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description="learned IK benchmark (one JSON line)")
    parser.add_argument("--train", action="store_true", help="retrain the networks before benchmarking")
    parser.add_argument("--no-blender", action="store_true", help="skip Blender's IK (no bpy needed)")
    parser.add_argument("--models", type=Path, default=SCENE, help="folder of the <arm>_ik.json files")
    parser.add_argument("--train-only", choices=sorted(ARMS), help="train this arm's network, print its time, exit")
    args = parser.parse_args(argv)
    if args.train_only:
        _, seconds = train(args.train_only, args.models)
        print(json.dumps({"trained": args.train_only, "seconds": round(seconds, 1)}))
        return {}
    result: dict = {"bench": "ik", "n_targets": N_TARGETS, "arms": {}}
    for name, factory in ARMS.items():
        arm = factory()
        train_seconds = None
        if args.train or not model_path(name, args.models).exists():
            solver, train_seconds = train(name, args.models)
        solver = IKSolver.load(model_path(name, args.models))
        targets, _ = arm.sample_targets(N_TARGETS, 2024)
        dist = np.linalg.norm(arm.sample_targets(100_000, 1)[0] - arm.root, axis=1)
        row = {"dofs": arm.n_dofs, "reach_m": round(arm.reach, 4), "max_tip_distance_m": round(float(dist.max()), 4),
               "train_seconds": round(train_seconds if train_seconds is not None else solver.train_seconds, 1),
               "train_steps": solver.train_steps, **bench_numpy(solver, targets)}
        if not args.no_blender:
            row.update(bench_blender(name, arm, targets))
        result["arms"][name] = row
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
