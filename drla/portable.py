"""One model file, the same outputs everywhere: numpy (headless), Blender (the add-on's runtime path) and
a headless Chromium running ``web/drla.js``. Shared by ``tests/web/`` and ``bench/portable.py``.

The tolerance rule (docs/model-format.md, "Conformance"): over a model's inputs, every output ``y`` of a
runtime and the numpy output ``y_ref`` satisfy ``|y - y_ref| <= 1e-6 * max(1, max |y_ref|)``; greedy actions
are equal; IK solves put the tip within 1e-6 m of where numpy's solve puts it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from drla_core import kinematics as kin
from drla_core.rl.ik import IKSolver
from drla_core.envs import make
from drla_core.io.model_io import Model, load_model
from drla_core.base.spaces import Discrete

ROOT = Path(__file__).resolve().parents[1]
WEB = ROOT / "web"
DRIVER = ROOT / "tests" / "web" / "browser.mjs"
CHROMIUM_CANDIDATES = ("chromium", "chromium-browser")
TOLERANCE = 1e-6
IK_TOLERANCE_M = 1e-6
#: The refinement every runtime shares (web/drla.js ports solve_refined without the atlas restarts).
IK_OPTIONS = {"restarts": 0, "precise": True}


@dataclass
class Case:
    """One model and its inputs: ``obs`` (N, input_size) float32; for IK also ``targets`` (N, 3)."""

    name: str
    path: Path
    tree: str = ""  # the robot_arm.blend tree (IK) whose armature Blender's runtime path reads
    obs: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    targets: np.ndarray | None = None


def _rollout_obs(env_name: str, n: int, seed: int) -> np.ndarray:
    """``n`` observations an agent meets: a random policy's rollouts (restarting at episode ends)."""
    env = make(env_name)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    rows = []
    while len(rows) < n:
        rows.append(np.asarray(obs, np.float32).ravel())
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            obs, _ = env.reset()
    return np.array(rows, np.float32)


def _recorded_obs(path: Path, n: int, seed: int) -> np.ndarray:
    """``n`` observations from a recorded episode (web/demos/record_tank.py), each with a few of its picture's
    pixels flipped so that they are not all the same ones."""
    data = json.loads(path.read_text())
    rec = np.asarray(data["obs"], np.float32)
    rng = np.random.default_rng(seed)
    obs = rec[rng.integers(len(rec), size=n)]
    pixels = data["rows"] * data["cols"]
    flip = rng.random((n, pixels)) < 0.02
    obs[:, :pixels] = np.where(flip, 1.0 - obs[:, :pixels], obs[:, :pixels])
    return obs


def cases(n: int = 1000, seed: int = 0) -> list[Case]:
    """The models of each kind the product ships: CartPole and tank DQNs (the demos' models: TankGrid's and
    the Blender tank scene's, ``drla demo``), the two
    example IK arms, and an MLP with normalised 2D observations from the conformance set."""
    demo = WEB / "demos" / "models"
    out = [Case("dqn_cartpole", demo / "cartpole.json", obs=_rollout_obs("cartpole", n, seed)),
           Case("dqn_tank", demo / "tank.json", obs=_rollout_obs("tank_grid", n, seed)),
           Case("dqn_tank_scene", demo / "tank_scene.json",
                obs=_recorded_obs(demo / "tank_sequence_211.json", n, seed))]
    mlp = load_model(WEB / "conformance" / "mlp_box_2d_obs.json")
    rng = np.random.default_rng(seed)
    out.append(Case("mlp_obs_norm", WEB / "conformance" / "mlp_box_2d_obs.json",
                    obs=rng.uniform(-1, 1, size=(n, mlp.network.input_size)).astype(np.float32)))
    for arm in ("arm3", "arm6"):
        path = ROOT / "scenes" / "robot_arm" / f"{arm}_ik.json"
        solver = IKSolver.from_model(load_model(path))
        targets, _ = solver.arm.sample_targets(n, seed)
        targets = targets.astype(np.float32).astype(np.float64)  # the same numbers in every runtime
        out.append(Case(f"ik_{arm}", path, tree=arm.capitalize(), obs=targets.astype(np.float32), targets=targets))
    return out


def _results(model: Model, outputs: np.ndarray, obs: np.ndarray, solver: IKSolver | None,
             targets: np.ndarray | None) -> dict[str, np.ndarray]:
    res = {"outputs": np.asarray(outputs, np.float64).reshape(len(obs), -1)}
    if isinstance(model.action_space, Discrete):
        res["actions"] = np.array([model.act(o) for o in obs])  # one call per step, as play.py does
    if solver is not None and targets is not None:
        angles = solver.solve_refined(targets, **IK_OPTIONS)
        res["angles"] = angles
        res["tips"] = kin.forward_kinematics(solver.arm, angles)
    return res


def run_numpy(case: Case) -> dict[str, np.ndarray]:
    """Headless numpy: ``load_model`` and ``Model.predict`` / ``act``; ``IKSolver.solve_refined``."""
    model = load_model(case.path)
    solver = IKSolver.from_model(model) if case.targets is not None else None
    return _results(model, model.predict(case.obs.reshape(len(case.obs), *model.observation_space.shape)),
                    case.obs, solver, case.targets)


def run_blender(all_cases: list[Case]) -> dict[str, dict[str, np.ndarray]]:
    """Inside Blender (the ``bpy`` module), through the add-on: the model is stored in the .blend's text
    datablock and read back as Play does (``model_store``), observations go one at a time through
    ``model.predict`` / ``model.act``; IK models are imported into robot_arm.blend's trees and solved by
    ``runs.ik.solver_for`` on the armature (its arm read from Blender's bones, as Bake and Follow do)."""
    import bpy

    from drla.extension import register_extension

    ext = register_extension()
    model_store = ext.addon.runs.model_store
    ik_runs = ext.addon.runs.ik
    bpy.ops.wm.open_mainfile(filepath=str(ROOT / "scenes" / "robot_arm" / "robot_arm.blend"))
    out = {}
    for case in all_cases:
        if case.targets is not None:
            tree = bpy.data.node_groups[case.tree]
            model_store.import_model(tree, str(case.path))
            model = model_store.load_stored_model(tree)
            solver = ik_runs.solver_for(bpy.data.objects[case.tree], model)
        else:
            model_store.store_json(f"portable {case.name}", case.path.read_text())
            model = model_store.load_stored_model(f"portable {case.name}")
            solver = None
        outputs = np.array([model.predict(o.reshape(model.observation_space.shape)) for o in case.obs])
        out[case.name] = _results(model, outputs, case.obs, solver, case.targets)
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    return out


# ---- the browser -------------------------------------------------------------------------------------------


def find_browser() -> tuple[dict[str, str] | None, str]:
    """``({"node", "chromium"}, "")`` when the browser test can run, else ``(None, why not)``."""
    node = shutil.which("node")
    if node is None:
        return None, "node is not installed (make setup-browser installs what it can)"
    chromium = os.environ.get("DRLA_CHROMIUM") or next(
        (p for p in (shutil.which(c) for c in CHROMIUM_CANDIDATES) if p), None)
    if chromium is None:
        return None, "Debian's chromium is not installed (run: make setup-browser, as root: apt-get install chromium)"
    if not (WEB / "node_modules" / "playwright-core" / "package.json").exists():
        return None, "web/node_modules/playwright-core is missing (run: make setup-browser, i.e. npm ci in web/)"
    return {"node": node, "chromium": chromium}, ""


def run_browser(tasks: list[dict[str, Any]], timeout: float = 300.0) -> list[dict[str, Any]]:
    """Run ``tests/web/browser.mjs`` tasks in headless Chromium; raises ``RuntimeError`` with its output."""
    found, why = find_browser()
    if found is None:
        raise RuntimeError(why)
    with tempfile.TemporaryDirectory(prefix="drla-web-") as tmp:
        job, result = Path(tmp) / "job.json", Path(tmp) / "result.json"
        job.write_text(json.dumps({"chromium": found["chromium"], "tasks": tasks}))
        proc = subprocess.run([found["node"], str(DRIVER), str(job), str(result)], cwd=ROOT, capture_output=True,
                              text=True, timeout=timeout)
        if proc.returncode != 0 or not result.exists():
            raise RuntimeError(f"the browser driver failed ({proc.returncode}):\n"
                               f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        data = json.loads(result.read_text())
    if data["errors"]:
        raise RuntimeError("errors in the page: " + "; ".join(data["errors"][:5]))
    return data["results"][1:]  # [0] is the user agent


def run_task(case: Case) -> dict[str, Any]:
    task: dict[str, Any] = {"type": "run", "model": str(case.path.relative_to(ROOT)),
                            "inputs": case.obs.astype(np.float64).ravel().tolist(), "n": len(case.obs)}
    if case.targets is not None:
        task["targets"] = case.targets.ravel().tolist()
    return task


def browser_results(case: Case, raw: dict[str, Any]) -> dict[str, np.ndarray]:
    res = {"outputs": np.asarray(raw["outputs"], np.float64).reshape(len(case.obs), -1)}
    if "actions" in raw:
        res["actions"] = np.asarray(raw["actions"])
    if "angles" in raw:
        res["angles"] = np.asarray(raw["angles"]).reshape(len(case.obs), -1)
        res["tips"] = np.asarray(raw["tips"]).reshape(-1, 3)
    return res


# ---- comparing -----------------------------------------------------------------------------------------------


def compare(reference: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> dict[str, Any]:
    """The tolerance rule applied: ``{"max_abs_diff", "scale", "outputs_ok", "actions_equal", "tip_diff_m"}``."""
    ref, got = reference["outputs"], other["outputs"]
    scale = max(1.0, float(np.max(np.abs(ref))))
    diff = float(np.max(np.abs(got - ref)))
    out: dict[str, Any] = {"max_abs_diff": diff, "scale": scale, "outputs_ok": diff <= TOLERANCE * scale}
    if "actions" in reference:
        out["actions_equal"] = bool(np.array_equal(reference["actions"], other["actions"]))
    if "tips" in reference:
        out["tip_diff_m"] = float(np.max(np.linalg.norm(other["tips"] - reference["tips"], axis=1)))
    return out
