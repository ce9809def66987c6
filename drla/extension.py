"""Import the DRLA extension outside Blender's extension system (CLI and tests).

The repository root is the extension package, so it is imported under the stable name
``drla_ext``; ``addon``'s relative imports (``from ..drla_core import dqn``) then resolve
exactly as they do inside Blender under ``bl_ext.<repo>.drla``.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "drla_ext"


def _share_core() -> None:
    """Make ``drla_ext.drla_core[.x]`` the very modules ``drla_core[.x]``.

    Without this the core would be imported twice (once per name), and an agent built by the
    add-on would fail ``isinstance`` checks in the CLI's copy of ``model_io`` and vice versa.
    """
    import drla_core

    for info in pkgutil.walk_packages(drla_core.__path__, "drla_core."):
        importlib.import_module(info.name)
    for name, module in list(sys.modules.items()):
        if name == "drla_core" or name.startswith("drla_core."):
            sys.modules[f"{PACKAGE}.{name}"] = module


def load_extension() -> ModuleType:
    """Return the extension package (importing it once); needs ``bpy`` importable."""
    if PACKAGE in sys.modules:
        return sys.modules[PACKAGE]
    spec = importlib.util.spec_from_file_location(PACKAGE, ROOT / "__init__.py", submodule_search_locations=[str(ROOT)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    _share_core()
    module.drla_core = sys.modules["drla_core"]  # type: ignore[attr-defined]
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
