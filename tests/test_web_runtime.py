"""The portable runtime (issue 14): the conformance set in Python, and the JavaScript module's own tests in
Node (``node --test web/test/``), which fail this test when they fail."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from drla_core.rl.ik import IKSolver
from drla_core.io.model_io import ModelFormatError, load_model

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = ROOT / "web" / "conformance"
INDEX = json.loads((CONFORMANCE / "index.json").read_text())


def within_tolerance(got: np.ndarray, expected: np.ndarray) -> tuple[bool, float, float]:
    """docs/model-format.md, "Conformance": ``|y - y_ref| <= 1e-6 * max(1, max |y_ref|)`` over a model's cases."""
    scale = max(1.0, float(np.max(np.abs(expected))))
    worst = float(np.max(np.abs(np.asarray(got, np.float64) - expected)))
    return worst <= 1e-6 * scale, worst, scale


@pytest.mark.parametrize("entry", INDEX["models"], ids=[m["name"] for m in INDEX["models"]])
def test_python_passes_the_conformance_set(entry: dict) -> None:
    model = load_model(CONFORMANCE / f"{entry['name']}.json")
    cases = json.loads((CONFORMANCE / f"{entry['name']}.cases.json").read_text())
    x = np.asarray(cases["inputs"], np.float32).reshape(-1, *model.observation_space.shape)
    ok, worst, scale = within_tolerance(model.predict(x), np.asarray(cases["outputs"]))
    assert ok, f"outputs differ by {worst} (scale {scale})"
    if "actions" in cases:
        assert model.act(x).tolist() == cases["actions"]
    if entry["solve"]:
        solver = IKSolver.from_model(model)
        angles = solver.solve_refined(np.asarray(cases["targets"]), restarts=0, precise=True)
        from drla_core import kinematics as kin

        tips = kin.forward_kinematics(solver.arm, angles)
        assert np.max(np.linalg.norm(tips - np.asarray(cases["tips"]), axis=1)) <= 1e-6


@pytest.mark.parametrize("name", INDEX["bad"])
def test_python_refuses_every_bad_conformance_file(name: str) -> None:
    expected = json.loads((CONFORMANCE / "bad" / "expected.json").read_text())[name]
    with pytest.raises(ModelFormatError) as err:
        load_model(CONFORMANCE / "bad" / f"{name}.json")
    assert expected in str(err.value)


def test_the_conformance_set_covers_every_kind_and_activation() -> None:
    from drla_core.nn.mlp import ACTIVATIONS
    from drla_core.io.model_io import KINDS

    kinds = {m["kind"] for m in INDEX["models"]}
    assert kinds == set(KINDS)
    used = set()
    for m in INDEX["models"]:
        arch = json.loads((CONFORMANCE / f"{m['name']}.json").read_text())["architecture"]
        used |= {h["activation"] for h in arch["hidden"]} | {arch["output_activation"]}
    assert used == set(ACTIVATIONS)
    assert any(m["solve"] for m in INDEX["models"])
    assert any(json.loads((CONFORMANCE / f"{m['name']}.json").read_text())["obs_norm"] for m in INDEX["models"])


def test_node_runs_the_javascript_tests() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the JavaScript runtime (web/drla.js) was NOT tested; install Node >= 18")
    out = subprocess.run([node, "--test", "test/"], cwd=ROOT / "web", capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "# fail 0" in out.stdout and "# pass " in out.stdout
