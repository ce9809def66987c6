"""The floors of addon/ (docs/architecture.md): a lower floor never imports a higher one.

An AST scan of every import, function-local ones included, like test_core_is_pure.py does for
drla_core: ``scene`` and ``tree`` never import ``runs`` or ``ui``; ``runs`` never imports ``ui``;
the bottom floor (specs, words, properties, preferences) imports none of them; ``drla_core``
never imports ``addon``.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ADDON = ROOT / "addon"

#: floor -> the addon packages/modules it must never import
FORBIDDEN = {
    "specs": {"scene", "tree", "nodes", "runs", "ui"},
    "words": {"scene", "tree", "nodes", "runs", "ui"},
    "properties": {"scene", "tree", "nodes", "runs", "ui"},
    "preferences": {"scene", "tree", "nodes", "runs", "ui"},
    "scene": {"tree", "nodes", "runs", "ui"},
    "tree": {"scene", "nodes", "runs", "ui"},
    "nodes": {"runs", "ui"},
    "runs": {"ui"},
}


def _floor(path: Path) -> str:
    rel = path.relative_to(ADDON)
    return rel.parts[0].removesuffix(".py")


def _addon_imports(path: Path) -> set[str]:
    """The addon packages/modules (first part below ``addon``) that ``path`` imports."""
    tree = ast.parse(path.read_text(), filename=str(path))
    depth = len(path.relative_to(ADDON).parts)  # addon/x.py: 1, addon/runs/x.py: 2
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.level > depth:  # above addon: drla_core
                continue
            if node.level == depth:  # from ..x import / from . import x, at addon's level
                parts = (node.module or "").split(".") if node.module else []
                if parts and parts[0]:
                    found.add(parts[0])
                else:
                    found.update(alias.name for alias in node.names)
            elif node.level < depth:  # inside the same package
                found.add(path.relative_to(ADDON).parts[0].removesuffix(".py"))
    return found


FILES = sorted(p for p in ADDON.rglob("*.py") if p.parent != ADDON or p.name != "__init__.py")


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_lower_floors_never_import_higher_ones(path):
    floor = _floor(path)
    bad = _addon_imports(path) & FORBIDDEN.get(floor, set())
    assert not bad, f"{path.relative_to(ROOT)} ({floor}) imports {sorted(bad)}"


def test_the_scan_sees_imports():
    """The scan is not blind: known imports are found."""
    assert "runs" in _addon_imports(ADDON / "ui" / "operators.py")
    assert "tree" in _addon_imports(ADDON / "runs" / "build.py")
    assert "specs" in _addon_imports(ADDON / "tree" / "compiler.py")


def test_no_import_circles():
    """../shared/tools/import_circles.py finds none in addon/, drla/ and drla_core/."""
    import subprocess
    import sys

    tool = ROOT.parent / "shared" / "tools" / "import_circles.py"
    if not tool.is_file():
        pytest.skip("the shared import-circle tool is not on this machine")
    out = subprocess.run([sys.executable, str(tool), "addon", "drla", "drla_core"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.strip().startswith("0 import circle"), out.stdout + out.stderr


# ---- no agent-kind branches above runs/ -----------------------------------------------------------

KIND_NAMES = {"dqn", "ik", "DQN", "IK"}
KIND_FREE = sorted([*(ADDON / "ui").rglob("*.py"), ROOT / "drla" / "scene.py"])


def _kind_branches(path: Path) -> list[str]:
    """Comparisons with an agent kind's name and imports of one kind's agent module in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if isinstance(side, ast.Constant) and side.value in KIND_NAMES:
                    found.append(f"line {node.lineno}: compares with {side.value!r}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[-1] in {"dqn", "ik"}:
            found.append(f"line {node.lineno}: imports {node.module}")
    return found


@pytest.mark.parametrize("path", KIND_FREE, ids=lambda p: str(p.relative_to(ROOT)))
def test_ui_and_the_scene_cli_never_branch_on_the_agent_kind(path):
    """What differs between agent kinds is asked of ``runs.kinds`` or of the job, never by name."""
    assert _kind_branches(path) == []


def test_the_kind_scan_sees_a_branch(tmp_path):
    sample = tmp_path / "x.py"
    sample.write_text("from ..drla_core.rl.ik import IKSolver\nif kind.name == 'ik':\n    pass\n")
    assert len(_kind_branches(sample)) == 2
