"""Portable runtime figures (issue 14): drla.js in headless Chromium against numpy, and the three-way equality.

Prints ONE JSON line: ``js_forward_us`` (the tank scene's DQN, 211 inputs, one observation),
``js_batch_1000_ms`` (CartPole DQN, 1000 observations through ``forwardBatch``), ``js_ik_solve_1000_ms``
(arm6: network + DLS refinement, 1000 targets, ``solveBatch``), ``numpy_ik_solve_1000_ms``
(``IKSolver.solve_refined`` on the same targets with the refinement drla.js ports: ``restarts=0,
precise=True``) and ``numpy_ik_solve_default_1000_ms`` (the add-on's default: float32 steps, atlas restarts),
``js_ik_vs_numpy`` (the ratio; target <= 3), and ``max_abs_diff`` per model kind: the largest output
difference from numpy's of Blender's runtime path and of the browser (IK: also the tip difference in metres).
Timings are medians of repeats; on a shared machine they are noisy.

    .venv/bin/python bench/portable.py      (needs chromium and web/node_modules: make setup-browser)
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drla import portable  # noqa: E402
from drla_core.rl.ik import IKSolver  # noqa: E402
from drla_core.io.model_io import load_model  # noqa: E402


def _median_ms(f, repeats: int = 7) -> float:
    f()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(1000 * (time.perf_counter() - t0))
    return statistics.median(times)


def main() -> None:
    cases = {c.name: c for c in portable.cases(1000)}
    found, why = portable.find_browser()
    if found is None:
        print(json.dumps({"error": f"headless Chromium not available: {why}"}))
        sys.exit(1)
    tank, cart, arm6 = cases["dqn_tank_scene"], cases["dqn_cartpole"], cases["ik_arm6"]
    bench = [{"type": "bench", "model": str(c.path.relative_to(portable.ROOT)), "n": len(c.obs),
              "inputs": c.obs.astype(float).ravel().tolist(),
              **({"targets": c.targets.ravel().tolist()} if c.targets is not None else {})} for c in (tank, cart, arm6)]
    runs = [portable.run_task(c) for c in cases.values()]
    raw = portable.run_browser(bench + runs)
    js_tank, js_cart, js_arm = raw[:3]
    solver = IKSolver.from_model(load_model(arm6.path))
    numpy_ik = _median_ms(lambda: solver.solve_refined(arm6.targets, **portable.IK_OPTIONS))
    numpy_ik_default = _median_ms(lambda: solver.solve_refined(arm6.targets))
    reference = {name: portable.run_numpy(c) for name, c in cases.items()}
    blender = portable.run_blender(list(cases.values()))
    diffs = {}
    for (name, case), r in zip(cases.items(), raw[3:]):
        b = portable.compare(reference[name], blender[name])
        w = portable.compare(reference[name], portable.browser_results(case, r))
        diffs[name] = {"blender": b["max_abs_diff"], "browser": w["max_abs_diff"], "scale": w["scale"]}
        if "tip_diff_m" in w:
            diffs[name].update(blender_tip_m=b["tip_diff_m"], browser_tip_m=w["tip_diff_m"])
    print(json.dumps({
        "js_forward_us": round(js_tank["forward_us"], 3),
        "js_batch_1000_ms": round(js_cart["batch_ms"], 3),
        "js_ik_solve_1000_ms": round(js_arm["solve_ms"], 3),
        "numpy_ik_solve_1000_ms": round(numpy_ik, 3),
        "numpy_ik_solve_default_1000_ms": round(numpy_ik_default, 3),
        "js_ik_vs_numpy": round(js_arm["solve_ms"] / numpy_ik, 3),
        "max_abs_diff": diffs,
        "browser": "Debian chromium, headless, via playwright-core",
        "cpu_count": os.cpu_count(),
    }))


if __name__ == "__main__":
    main()
