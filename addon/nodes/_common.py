"""Shared property helpers for DRLA nodes (pointer polls, axis enum)."""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, PointerProperty


def object_pointer(name: str, description: str = "", kind: str | None = None):
    """A pointer to an object, optionally restricted to one object type ('CAMERA', 'ARMATURE')."""
    if kind is None:
        return PointerProperty(type=bpy.types.Object, name=name, description=description)
    return PointerProperty(type=bpy.types.Object, name=name, description=description,
                           poll=lambda self, ob: ob.type == kind)


AXES = [('POS_X', "+X", ""), ('NEG_X', "-X", ""), ('POS_Y', "+Y", ""), ('NEG_Y', "-Y", ""),
        ('POS_Z', "+Z", ""), ('NEG_Z', "-Z", "")]


def axis_enum(name: str = "Axis", default: str = 'POS_Y', description: str = "Local axis of the object"):
    return EnumProperty(name=name, items=AXES, default=default, description=description)
