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
        description="Default folder for training checkpoints and report pictures. "
        "Empty: the extension's user folder (never inside the extension itself)",
        subtype='DIR_PATH',
        default="",
    )

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "checkpoint_dir")
        layout.label(text=f"Empty uses: {default_checkpoint_dir(create=False)}", icon='INFO')


def get_preferences(context=None):
    """The preferences of this extension, or None when it is not enabled through Blender (tests, CLI)."""
    context = context or bpy.context
    addon = context.preferences.addons.get(ROOT_PACKAGE)
    return addon.preferences if addon is not None else None


def default_checkpoint_dir(create: bool = True) -> str:
    """The extension's user folder ``.../extensions/.user/<repo>/drla/checkpoints``, or a user/temp folder.

    ``bpy.utils.extension_path_user`` only works for a real extension package; the tests load the
    extension as ``drla_ext``, where it raises, so fall back to Blender's user data folder and then
    to the system temp folder.
    """
    try:
        return bpy.utils.extension_path_user(ROOT_PACKAGE, path="checkpoints", create=create)
    except (ValueError, AttributeError, OSError):
        pass
    try:
        path = bpy.utils.user_resource('DATAFILES', path=os.path.join("drla", "checkpoints"), create=create)
        if path:
            return path
    except (ValueError, OSError):
        pass
    path = os.path.join(tempfile.gettempdir(), "drla", "checkpoints")
    if create:
        os.makedirs(path, exist_ok=True)
    return path


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
