"""The Blender versions the manifest admits are versions a test runs on (claim only what is proven)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def test_manifest_minimum_is_the_tested_bpy_wheel():
    """``make test`` runs the suite on the pinned ``bpy`` wheel: the manifest's minimum is its minor release."""
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
    minimum = _version(manifest["blender_version_min"])
    pinned = re.search(r"^bpy==([\d.]+)$", (ROOT / "requirements-dev.txt").read_text(), re.M)
    assert pinned, "requirements-dev.txt pins no bpy wheel"
    tested = _version(pinned.group(1))
    assert minimum[:2] == tested[:2] and minimum <= tested, (manifest["blender_version_min"], pinned.group(1))


def test_readme_states_the_manifest_minimum():
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
    major_minor = ".".join(manifest["blender_version_min"].split(".")[:2])
    readme = (ROOT / "README.md").read_text()
    assert f"Blender **{major_minor} and newer**" in readme
    assert "4.2+" not in readme
