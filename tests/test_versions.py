"""The Blender versions the manifest admits are versions a test runs on (claim only what is proven).

``make test-matrix`` (tests/matrix/matrix.py) runs the Blender suite on each version in its
``MATRIX``; the manifest's minimum must be the oldest of them, its wheel pinned, and the README's
"Supported Blender versions" must say the same. Pure Python: the matrix script is read, not run.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MATRIX_SCRIPT = ROOT / "tests" / "matrix" / "matrix.py"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def _minimum() -> str:
    return tomllib.loads((ROOT / "blender_manifest.toml").read_text())["blender_version_min"]


def _matrix_versions() -> list[str]:
    """The keys of ``MATRIX = {...}`` in tests/matrix/matrix.py."""
    for node in ast.parse(MATRIX_SCRIPT.read_text()).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (node.targets[0] if isinstance(node, ast.Assign)
                                                                      else None)
        if isinstance(target, ast.Name) and target.id == "MATRIX":
            return list(ast.literal_eval(node.value))
    raise AssertionError("tests/matrix/matrix.py has no MATRIX")


def _pinned_bpy(requirements: Path) -> tuple[int, ...]:
    pinned = re.search(r"^bpy==([\d.]+)$", requirements.read_text(), re.M)
    assert pinned, f"{requirements.relative_to(ROOT)} pins no bpy wheel"
    return _version(pinned.group(1))


def test_matrix_lists_versions():
    versions = _matrix_versions()
    assert versions and all(re.fullmatch(r"\d+\.\d+", v) for v in versions), versions
    assert versions == sorted(versions, key=_version), "list the matrix oldest first"


def test_manifest_minimum_is_the_oldest_version_the_matrix_runs():
    minimum = _version(_minimum())
    versions = [_version(v) for v in _matrix_versions()]
    assert minimum[:2] in versions, (_minimum(), _matrix_versions())
    assert minimum[:2] == min(versions), f"the matrix runs nothing as old as {_minimum()}, or something older"


def test_the_wheels_the_matrix_runs_are_those_versions():
    """4.5 runs on tests/matrix/requirements-bpy45.txt's wheel, 5.0 on requirements-demo.txt's (make demo)."""
    minimum = _version(_minimum())
    bpy45 = _pinned_bpy(ROOT / "tests" / "matrix" / "requirements-bpy45.txt")
    bpy50 = _pinned_bpy(ROOT / "requirements-demo.txt")
    assert bpy45[:2] == minimum[:2] and bpy45 >= minimum, (bpy45, _minimum())
    assert f"{bpy45[0]}.{bpy45[1]}" in _matrix_versions() and f"{bpy50[0]}.{bpy50[1]}" in _matrix_versions()


def test_readme_states_the_manifest_minimum_and_the_matrix():
    major_minor = ".".join(_minimum().split(".")[:2])
    readme = (ROOT / "README.md").read_text()
    assert "## Supported Blender versions" in readme
    section = readme.split("## Supported Blender versions", 1)[1].split("\n## ", 1)[0]
    assert f"Blender **{major_minor} and newer**" in section
    rows = re.findall(r"^\| *(\d+\.\d+)\b", section, re.M)
    assert rows == _matrix_versions(), f"the README's table lists {rows}, the matrix runs {_matrix_versions()}"
    assert "make test-matrix" in section
    assert "4.2+" not in readme and "Blender 5.0 and newer" not in readme
