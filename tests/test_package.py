"""The package as a user installs it: the wheel ``pip install .`` builds, installed into a fresh virtual
environment (no system site-packages, no PYTHONPATH, run from a folder outside the checkout).

Its ``drla`` trains CartPole; with the ``blender`` extra it trains the tank scene the wheel ships, in this
process and with a worker process. Packages are found by setup.py, so every package folder of the
checkout must be in the wheel. The wheel is built once per run (about 15 s); pip fetches numpy, setuptools
and bpy from the configured index (its cache makes a second run quick). Where pip cannot reach an index the
tests that install are skipped with pip's own words, never passed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Not part of the source a user builds from: outputs, environments, caches.
IGNORED = shutil.ignore_patterns(".git", ".venv*", "node_modules", "out", "dist", "build", "*.egg-info",
                                 "__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", ".ruff_cache")
#: What pip prints when it cannot reach an index (then the test is skipped with these words).
NO_INDEX = re.compile(r"Failed to establish a new connection|Temporary failure in name resolution|"
                      r"Network is unreachable|Connection refused|ProxyError|Max retries exceeded")


def clean_env() -> dict[str, str]:
    """This process's environment without anything that would let the installed copy see the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def pip(python: Path | str, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """``python -m pip ARGS``; skips the test when pip could not reach an index, fails on any other error."""
    r = subprocess.run([str(python), "-m", "pip", *args], capture_output=True, text=True, timeout=timeout,
                       env=clean_env(), cwd="/")
    if r.returncode != 0:
        found = NO_INDEX.search(r.stdout + r.stderr)
        if found:
            pytest.skip(f"pip cannot reach a package index ({found.group(0)}): {(r.stderr or r.stdout)[-400:]}")
        pytest.fail(f"pip {' '.join(args)} failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the checkout (so no build/ or egg-info lands in it)."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    shutil.copytree(ROOT, src, ignore=IGNORED)
    pip(sys.executable, "wheel", "--no-deps", "--quiet", "--wheel-dir", str(base / "dist"), str(src))
    (found,) = (base / "dist").glob("drla-*.whl")
    return found


def fresh_venv(path: Path) -> Path:
    """A new virtual environment (the base interpreter's, without system site-packages); its python."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120, env=clean_env())
    return path / "bin" / "python"


def run(command: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    r = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=clean_env())
    assert r.returncode == 0, f"{' '.join(command)} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def source_packages() -> set[str]:
    """Every package folder of the checkout's three code trees, as a path (``drla_core/agents``)."""
    return {str(init.parent.relative_to(ROOT)) for tree in ("drla", "drla_core", "addon")
            for init in (ROOT / tree).rglob("__init__.py") if "__pycache__" not in init.parts}


def test_wheel_holds_every_package_the_extension_and_its_scenes(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    folders = {name.rsplit("/", 1)[0] for name in names if name.endswith("/__init__.py")}
    for package in source_packages():
        shipped = f"drla_ext/{package}" if package.startswith("addon") else package
        assert shipped in folders, f"{package} (a package folder of the checkout) is missing from {wheel.name}"
        if package.startswith("drla_core"):  # the extension's own core, as in the zip make build writes
            assert f"drla_ext/{package}" in folders, f"the extension's copy of {package} is missing"
    assert "drla_ext/__init__.py" in names and "drla_ext/blender_manifest.toml" in names
    assert "drla_core/io/model_schema.json" in names
    for blend in (ROOT / "scenes").glob("*/*.blend"):
        assert f"drla_ext/{blend.relative_to(ROOT)}" in names, f"{blend.name} is not in the wheel"
    assert "drla_ext/web/drla.js" in names and "drla_ext/web/demos/cartpole.html" in names  # drla web
    assert not any(name.startswith(("tests/", "bench/", "drla_ext/tests", "drla_ext/bench")) for name in names)
    (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert 'Requires-Dist: bpy==5.0.1; extra == "blender"' in text, text[:1500]
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert "drla = drla.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.slow
def test_installed_wheel_trains_cartpole(wheel, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    pip(python, "install", "--quiet", str(wheel))
    work = tmp_path / "work"
    work.mkdir()
    where = run([str(python), "-c", "import drla, drla_core.rl.dqn; print(drla.__file__)"], work)
    assert Path(where.stdout.strip()).is_relative_to(tmp_path / "venv"), where.stdout  # the installed copy
    drla = str(tmp_path / "venv" / "bin" / "drla")
    run([drla, "train", "cartpole", "--steps", "1500", "--seed", "0", "--out", "out/cartpole.json"], work)
    model = json.loads((work / "out" / "cartpole.json").read_text())
    assert model["format"] == "drla-model" and model["meta"]["training_steps"] == 1500
    assert (work / "out" / "cartpole_report.png").is_file()
    evaluated = run([drla, "eval", "out/cartpole.json", "--episodes", "3"], work)
    assert "mean return" in evaluated.stdout
    scene = subprocess.run([drla, "train", "nothing.blend"], cwd=work, capture_output=True, text=True,
                           timeout=60, env=clean_env())
    assert scene.returncode == 2 and "no such .blend file: nothing.blend" in scene.stderr
    demo = subprocess.run([drla, "demo", "--out", "out"], cwd=work, capture_output=True, text=True, timeout=60,
                          env=clean_env())  # the tank scene is in the wheel; bpy is not (no blender extra)
    assert demo.returncode == 2 and "Blender scenes need the bpy module" in demo.stderr, demo.stderr
    served = serve_once([drla, "web", "out/cartpole.json", "--no-browser"], work)
    assert served["/model.json"] == (work / "out" / "cartpole.json").read_bytes()
    assert b"cartpole" in served["page"] and b"export" in served["/web/drla.js"]  # the web demo the wheel ships


def serve_once(command: list[str], cwd: Path) -> dict[str, bytes]:
    """Start ``drla web``, fetch its demo page, the model and drla.js, stop it with Ctrl-C."""
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=clean_env())
    try:
        first = proc.stdout.readline() if proc.stdout else ""
        url = re.search(r"http://[^/\s]+", first)
        assert url, first
        page = re.search(r"http://\S+", first)
        assert page
        fetched = {"page": urllib.request.urlopen(page[0], timeout=30).read()}
        for path in ("/model.json", "/web/drla.js"):
            fetched[path] = urllib.request.urlopen(url[0] + path, timeout=30).read()
        return fetched
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


@pytest.mark.slow
def test_installed_wheel_with_blender_extra_trains_the_shipped_tank(wheel, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    pip(python, "install", "--quiet", f"{wheel}[blender]")  # bpy 5.0.1 (about 370 MB, from pip's cache if there)
    work = tmp_path / "work"
    work.mkdir()
    drla = str(tmp_path / "venv" / "bin" / "drla")
    listed = run([drla, "envs"], work).stdout
    scenes = [Path(line.strip()) for line in listed.splitlines() if line.strip().endswith(".blend")]
    tank = next(path for path in scenes if path.name == "tank.blend")
    assert tank.is_file() and tank.is_relative_to(tmp_path / "venv"), listed  # the wheel's own example scenes
    demo = run([drla, "demo", "--steps", "200", "--out", "out"], work, timeout=600)
    assert "scenes/tank/tank.blend" in demo.stdout, demo.stdout[-2000:]
    assert json.loads((work / "out" / "tank.json").read_text())["meta"]["training_steps"] == 200
    workers = run([drla, "train", str(tank), "--workers", "1", "--steps", "300", "--out", "out/w.json"], work,
                  timeout=600)
    assert "workers keep dying" not in workers.stderr
    assert json.loads((work / "out" / "w.json").read_text())["meta"]["training_steps"] == 300


def test_a_checkout_in_a_folder_that_is_no_identifier_still_collects():
    """pytest imports the root ``__init__.py`` as a plain module when the checkout's folder is ``ci-clone``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("__init__", ROOT / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # raised "attempted relative import with no known parent package" before
    assert not hasattr(module, "register")
