"""Every DRLA node class, one node per file (``nodes/<name>.py``: its properties, ``draw``,
``compile(ctx)``, ``drla_category`` for its colour and header icon, ``menu_category`` and
``menu_order`` for its place in the Add menu). A new file here is a new node: the modules of this
package are found and imported when the add-on loads, so adding a node edits no other file.
"""

import importlib
import pkgutil

import bpy

from ._common import apply_categories

#: The order of the Add menu's submenus (each node's ``menu_category``).
MENU_CATEGORIES = ("Environment", "Sensors", "Actions", "Rewards", "Agent", "Network", "Output", "Other")


def _node_modules() -> list:
    """Every node module of this package (files starting with ``_`` are shared helpers)."""
    return [importlib.import_module(f".{info.name}", __name__)
            for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name)
            if not info.name.startswith("_")]


def _collect() -> tuple:
    """Every ``bpy.types.Node`` class the node modules define, in Add-menu order."""
    found = {cls for module in _node_modules() for name, cls in vars(module).items()
             if name.startswith("DRLA_") and isinstance(cls, type) and issubclass(cls, bpy.types.Node)
             and cls.__module__ == module.__name__}
    return tuple(sorted(found, key=lambda c: (MENU_CATEGORIES.index(c.menu_category), c.menu_order, c.bl_label)))


classes = _collect()
apply_categories(classes)
