"""Blender glue for DRLA: node tree, nodes, operators, panels, scene environment.

Each module listed in ``MODULES`` may define ``classes`` (registered in order, unregistered
in reverse) and optional ``register()`` / ``unregister()`` hooks for menus, handlers and
properties. Add a module by adding its name here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

MODULES: tuple[str, ...] = (
    "sockets",
    "node_tree",
    "nodes",
    "node_menu",
    # UI (properties first: operators and panels read Scene.drla)
    "properties",
    "preferences",
    "live_curve",
    "session",
    "ik_runtime",  # unregister() removes the Learned IK follow handler
    "operators",
    "panels",
    "examples_menu",
)


def _modules() -> list[ModuleType]:
    return [importlib.import_module(f".{name}", __name__) for name in MODULES]


_registered = False


def register() -> None:
    import bpy

    global _registered
    for module in _modules():
        for cls in getattr(module, "classes", ()):
            bpy.utils.register_class(cls)
        if hasattr(module, "register"):
            module.register()
    _registered = True
    if not bpy.app.binary_path and bpy.app.version < (5, 0, 0):
        # The bpy 4.5 module (not Blender itself, which disables add-ons on quit) hangs forever at
        # interpreter exit while a class with a Python property callback (update, poll, dynamic enum
        # items) is registered: unregister first. atexit runs the newest first, bpy's own exit last.
        import atexit

        atexit.unregister(_unregister_at_exit)
        atexit.register(_unregister_at_exit)


def _unregister_at_exit() -> None:
    if _registered:
        try:
            unregister()
        except Exception:  # never turn an exit into a traceback
            pass


def unregister() -> None:
    import bpy

    global _registered
    _registered = False
    for module in reversed(_modules()):
        if hasattr(module, "unregister"):
            module.unregister()
        for cls in reversed(getattr(module, "classes", ())):
            if cls.is_registered:
                bpy.utils.unregister_class(cls)
