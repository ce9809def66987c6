"""Add-on preferences: where training checkpoints and reports go by default.

``bl_idname`` is the extension's root package (``bl_ext.<repo>.drla`` inside Blender,
``drla_ext`` in tests), i.e. this package's parent.
"""

from __future__ import annotations

import os
import tempfile

import bpy
from bpy.props import StringProperty

#: The extension's root package name: what Blender keys add-on preferences by.
ROOT_PACKAGE = __package__.rpartition(".")[0]


class DRLA_AddonPreferences(bpy.types.AddonPreferences):
    bl_idname = ROOT_PACKAGE

    checkpoint_dir: StringProperty(
        name="Checkpoint Folder",
        description="Default folder for models, training states and report pictures. Empty: a folder next to "
        "the .blend ('<file>_drla'), or 'DRLA' in your documents folder for a file not saved yet",
        subtype='DIR_PATH',
        default="",
    )

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "checkpoint_dir")
        layout.label(text="Empty: '<file>_drla' next to the .blend, or for a file not saved yet "
                          f"{os.path.join(documents_dir(), 'DRLA')}", icon='INFO')


def get_preferences(context=None):
    """The preferences of this extension, or None when it is not enabled through Blender (tests, CLI)."""
    context = context or bpy.context
    addon = context.preferences.addons.get(ROOT_PACKAGE)
    return addon.preferences if addon is not None else None


def documents_dir() -> str:
    """The user's documents folder (``~/Documents`` where it exists, else the home folder)."""
    home = os.path.expanduser("~")
    docs = os.path.join(home, "Documents")
    return docs if os.path.isdir(docs) else home


def default_checkpoint_dir(create: bool = True) -> str:
    """Where a run writes when nothing says otherwise: a visible folder a person finds.

    Next to the saved .blend, ``<folder of the .blend>/<file name>_drla``; for a file never saved (or one in a
    folder this user cannot write to) ``DRLA`` in the user's documents folder. Never inside the extension, never
    a hidden folder under Blender's configuration; the system temp folder only where no home folder is writable.
    """
    candidates = []
    if bpy.data.filepath:
        folder, name = os.path.split(bpy.path.abspath(bpy.data.filepath))
        candidates.append((folder, os.path.join(folder, f"{os.path.splitext(name)[0]}_drla")))
    docs = documents_dir()
    candidates.append((docs, os.path.join(docs, "DRLA")))
    candidates.append((tempfile.gettempdir(), os.path.join(tempfile.gettempdir(), "drla")))
    for parent, path in candidates:
        if os.path.isdir(path) or os.access(parent, os.W_OK):
            if create:
                try:
                    os.makedirs(path, exist_ok=True)
                except OSError:
                    continue
            return path
    return candidates[-1][1]


def checkpoint_dir(context=None, override: str = "", create: bool = True) -> str:
    """The folder a run writes to: ``override`` (the scene setting), else the preference, else the default."""
    for candidate in (override, getattr(get_preferences(context), "checkpoint_dir", "")):
        if candidate:
            if candidate.startswith("//") and not bpy.data.filepath:
                # "next to the .blend" in a file never saved: not the current directory (Blender's own folder)
                path = os.path.join(default_checkpoint_dir(create=create), candidate[2:])
            else:
                path = bpy.path.abspath(candidate)
            if create:
                os.makedirs(path, exist_ok=True)
            return path
    return default_checkpoint_dir(create=create)



def resolve_output_path(path: str) -> str:
    """An absolute path for a file DRLA writes (an Export node's file, a Trainer's folder).

    ``//`` means "next to the .blend"; in a file never saved there is no such folder, and
    ``bpy.path.abspath`` would silently write into the current directory, so those go to the
    checkpoint folder of the preferences (never the extension's own folder).
    """
    if not path:
        return ""
    if path.startswith("//") and not bpy.data.filepath:
        return os.path.join(checkpoint_dir(), path[2:])
    return bpy.path.abspath(path)

classes = (DRLA_AddonPreferences,)
