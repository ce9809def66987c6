"""Import the DRLA extension outside Blender's extension system (CLI and tests).

The repository root is the extension package, so it is imported under the stable name
``drla_ext``; ``addon``'s relative imports (``from ..drla_core import dqn``) then resolve
exactly as they do inside Blender under ``bl_ext.<repo>.drla``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "drla_ext"


def load_extension() -> ModuleType:
    """Return the extension package (importing it once); needs ``bpy`` importable."""
    if PACKAGE in sys.modules:
        return sys.modules[PACKAGE]
    spec = importlib.util.spec_from_file_location(PACKAGE, ROOT / "__init__.py", submodule_search_locations=[str(ROOT)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[PACKAGE]
        raise
    return module


def register_extension() -> ModuleType:
    """Load the extension and register its Blender classes (idempotent)."""
    ext = load_extension()
    if not getattr(ext, "_drla_registered", False):
        ext.register()
        ext._drla_registered = True
    return ext


def unregister_extension() -> None:
    ext = sys.modules.get(PACKAGE)
    if ext is not None and getattr(ext, "_drla_registered", False):
        ext.unregister()
        ext._drla_registered = False
