"""Blender glue for DRLA, in floors (docs/architecture.md): ``specs``, ``words``, ``properties``,
``preferences`` at the bottom; ``scene`` (bpy <-> numpy) and ``tree`` (node tree, compiler);
``nodes``; ``runs`` (build, train, play, bake); ``ui`` (operators, panels, menus) on top. A lower
floor never imports a higher one (tests/test_layers.py).

Each module listed in ``MODULES`` may define ``classes`` (registered in order, unregistered
in reverse) and optional ``register()`` / ``unregister()`` hooks for menus, handlers and
properties; they are registered floor by floor. Add a module by adding its name here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

MODULES: tuple[str, ...] = (
    "tree.sockets",
    "tree.node_tree",
    "nodes",
    "properties",  # before runs and ui: they read Scene.drla
    "preferences",
    "runs.sessions",  # file handlers; its unregister() also ends Learned IK follow
    "ui.node_menu",
    "ui.live_curve",
    "ui.net_overlay",
    "ui.operators",
    "ui.demo_operators",  # Record Demonstration, Record from Keyframes (issue 26)
    "ui.panels",
    "ui.net_operators",  # Grow, Merge, Expert Switcher, Expert Library (issue 15)
    "ui.net_panels",
    "ui.examples_menu",
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
