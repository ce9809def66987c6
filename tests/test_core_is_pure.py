"""drla_core stays pure: numpy + stdlib, relative imports, importable with bpy and mathutils blocked."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "drla_core"
BLENDER_MODULES = {"bpy", "mathutils", "gpu", "bmesh", "bgl", "blf", "aud", "bpy_extras", "idprop", "freestyle"}
CORE_FILES = sorted(CORE.rglob("*.py"))


def _imports(path: Path) -> list[tuple[int, str, int]]:
    """(line, module, level) for every import in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.module or "", node.level))
    return found


def test_core_files_are_found() -> None:
    names = {p.relative_to(CORE).as_posix() for p in CORE_FILES}
    assert {"__init__.py", "base/spaces.py", "base/env.py", "envs/__init__.py", "io/model_io.py", "io/plot.py"} <= names


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: p.relative_to(CORE).as_posix())
def test_no_blender_or_absolute_core_imports(path: Path) -> None:
    for line, module, level in _imports(path):
        top = module.split(".")[0]
        where = f"{path.relative_to(ROOT)}:{line}"
        assert level > 0 or top not in BLENDER_MODULES, f"{where} imports {module} (drla_core must not use Blender)"
        assert level > 0 or top != "drla_core", f"{where}: use a relative import instead of 'drla_core'"
        third_party = level == 0 and top not in sys.stdlib_module_names and top != "numpy"
        assert not third_party, f"{where} imports {module}: drla_core may use only numpy and the standard library"


def test_dynamic_imports_are_relative() -> None:
    """``import_module``/``__import__`` calls in the core name relative modules ('.cartpole'), never Blender."""
    for path in CORE_FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            arg = node.args[0]
            if func in ("import_module", "__import__") and isinstance(arg, ast.Constant):
                top = str(arg.value).split(".")[0]
                assert top not in BLENDER_MODULES | {"drla_core"}, f"{path.relative_to(ROOT)}:{node.lineno}"


def test_core_imports_with_blender_modules_blocked() -> None:
    modules = ["drla_core"] + [
        "drla_core." + p.relative_to(CORE).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")
        for p in CORE_FILES if p.name != "__init__.py" or p.parent != CORE
    ]
    script = "\n".join([
        "import importlib, sys",
        f"for name in {sorted(BLENDER_MODULES)!r}:",
        "    sys.modules[name] = None  # any import of it now raises ImportError",
        f"for name in {modules!r}:",
        "    importlib.import_module(name)",
        "from drla_core.envs import ENV_NAMES, make",
        "for name in ENV_NAMES:",
        "    make(name).reset(seed=0)",
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {sorted(BLENDER_MODULES)!r} and sys.modules[m])",
        "assert not bad, bad",
        "print('ok', len(sys.modules))",
    ])
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")
