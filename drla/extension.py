"""Import the DRLA extension outside Blender's extension system (CLI and tests).

The extension is a package (``__init__.py``, ``addon/``, ``drla_core/``, ``scenes/``), imported under
the stable name ``drla_ext``; ``addon``'s relative imports (``from ..drla_core import dqn``) then resolve
exactly as they do inside Blender under ``bl_ext.<repo>.drla``. Where it lies (``ROOT``):

- in a checkout (a clone, ``make setup``'s editable install): the repository root, beside ``drla/``;
- installed from the wheel (``pip install .``): the installed package ``drla_ext`` (setup.py ships it
  with the example scenes and the web demo).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path
from types import ModuleType

PACKAGE = "drla_ext"


def _extension_root() -> Path:
    """The folder of the extension package: this checkout's root, else the installed ``drla_ext``."""
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "blender_manifest.toml").is_file() and (checkout / "addon").is_dir():
        return checkout
    spec = importlib.util.find_spec(PACKAGE)  # finds, never imports: load_extension must share the core first
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).resolve()
    return checkout  # neither: load_extension says so


ROOT = _extension_root()
#: The example scenes (``scenes/<name>/<name>.blend``): the zip, the checkout and the wheel all ship them.
SCENES = ROOT / "scenes"


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
    if not (ROOT / "__init__.py").is_file() or not (ROOT / "addon").is_dir():
        raise ModuleNotFoundError(f"the DRLA extension ({PACKAGE}: __init__.py and addon/) is neither beside "
                                  f"{Path(__file__).resolve().parent} nor installed: reinstall drla (pip install .)")
    spec = importlib.util.spec_from_file_location(PACKAGE, ROOT / "__init__.py", submodule_search_locations=[str(ROOT)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    if ROOT == Path(__file__).resolve().parent.parent and str(ROOT) not in sys.path:  # a checkout: its drla_core
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


def triton_first() -> None:
    """Load Triton (PyTorch's compiler) now, where it is installed, before Blender makes its GPU context.

    Mesa's llvmpipe (the GPU context of a camera or ``render()``) and Triton each load an LLVM; Triton loaded
    after the GPU context kills the process with a segmentation fault, and every ``torch.optim`` optimizer loads
    it (through ``torch._dynamo``), so a trainer built after the scene crashed. Loaded first, both work.
    """
    if importlib.util.find_spec("triton") is not None:
        with contextlib.suppress(Exception):
            importlib.import_module("triton")
