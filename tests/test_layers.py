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


# ---- drla_core's floors ------------------------------------------------------------------------------------

CORE = ROOT / "drla_core"
#: drla_core's floors, bottom up; a module may import its own floor and the ones below, never one above, and
#: floors on one level (``nn`` and ``kinematics``; ``rl`` and ``evolve``) never import each other.
CORE_FLOORS = {"base": 0, "nn": 1, "kinematics": 1, "io": 2, "envs": 3, "rl": 4, "evolve": 4, "nets": 5}
CORE_FILES = sorted(p for p in CORE.rglob("*.py") if p != CORE / "__init__.py")


def _core_floor(path: Path) -> str:
    return path.relative_to(CORE).parts[0].removesuffix(".py")


def _core_imports(path: Path) -> set[str]:
    """The drla_core floors ``path`` imports (relative imports resolved; function-local ones included)."""
    package = list(path.relative_to(ROOT).parts[:-1])  # ["drla_core", "rl"]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            target = base + (node.module.split(".") if node.module else [])
            if target[:1] != ["drla_core"]:
                continue
            if len(target) == 1:  # from .. import x (a floor, or __version__ from the root)
                found.update(a.name for a in node.names if a.name in CORE_FLOORS)
            else:
                found.add(target[1])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("drla_core"):
            found.add((node.module.split(".") + [""])[1])
    return found - {""}


def test_every_core_module_sits_on_a_floor():
    """No module lies loose at drla_core's top: each is on a floor (``__init__`` only holds the version and the
    0.1 names' forwarding)."""
    loose = [p.name for p in CORE.glob("*.py") if p.name != "__init__.py"]
    assert loose == []
    assert {p.relative_to(CORE).parts[0] for p in CORE_FILES} <= set(CORE_FLOORS)


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_core_floors_import_only_their_own_floor_or_lower(path):
    floor = _core_floor(path)
    above = {f for f in _core_imports(path) - {floor} if CORE_FLOORS[f] >= CORE_FLOORS[floor]}
    assert not above, f"{path.relative_to(ROOT)} (floor {floor!r}) imports {sorted(above)}: a floor above or beside"


@pytest.mark.parametrize("path", [p for p in CORE_FILES if p.stat().st_size], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_core_module_is_over_about_550_lines(path):
    """A module a reader can take in top to bottom (issue 24); a longer one is split where its jobs split."""
    assert len(path.read_text().splitlines()) <= 560


def test_the_core_floors_test_sees_a_violation(tmp_path):
    """The scan is real: a base module importing the training loop is caught."""
    fake = CORE / "base" / "_layer_probe.py"
    try:
        fake.write_text("from ..rl.train import TrainingRun\n")
        assert _core_imports(fake) == {"rl"}
    finally:
        fake.unlink()


def _old_names_used(path: Path) -> set[str]:
    """The 0.1 module names (``drla_core.MOVED``) a file imports, through any prefix (``drla_ext.drla_core``)."""
    from drla_core import MOVED

    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            parts = node.module.split(".")
            if "drla_core" in parts:
                rest = ".".join(parts[parts.index("drla_core") + 1:])
                if rest in MOVED:
                    found.add(rest)
                elif not rest:
                    found.update(a.name for a in node.names if a.name in MOVED)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if "drla_core" in parts and ".".join(parts[parts.index("drla_core") + 1:]) in MOVED:
                    found.add(alias.name)
    return found


REPO_FILES = sorted(p for top in ("drla", "addon", "tests", "bench", "scenes", "web")
                    for p in (ROOT / top).rglob("*.py") if "node_modules" not in p.parts)


def test_nothing_in_the_repository_uses_the_0_1_module_names():
    """The forwarding of old names is for users' code only: every import here names a module where it lives."""
    used = {str(p.relative_to(ROOT)): sorted(_old_names_used(p)) for p in REPO_FILES}
    assert {k: v for k, v in used.items() if v and k != "tests/test_layers.py"} == {}


def test_the_0_1_module_names_give_the_modules_at_their_floors_with_a_warning():
    import importlib
    import warnings

    from drla_core import MOVED

    for old, new in MOVED.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = importlib.import_module(f"drla_core.{old}")
        assert module is importlib.import_module(f"drla_core.{new}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import sys

        sys.modules.pop("drla_core.evolution", None)
        from drla_core.evolution import EvolutionJob  # the name issue 24 promised keeps working
    from drla_core.evolve.evolution import EvolutionJob as moved

    assert EvolutionJob is moved
    assert any("drla_core.evolution moved to drla_core.evolve.evolution" in str(w.message) for w in caught)
