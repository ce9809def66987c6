"""Shared helpers for DRLA nodes: pointer polls, the axis enum, and the node categories' looks."""

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


#: Each node's ``drla_category`` -> (body colour, header icon). Blender draws a Python node's header in
#: the theme's "Input" colour whatever the node (``node_type_base_custom`` gives every Python node
#: type the input class, and no Python API changes it up to 5.2), so a category shows as the tint
#: of the node's body (``Node.color``, set when the node is added) and as an icon in its header.
CATEGORIES: dict[str, tuple[tuple[float, float, float], str]] = {
    "sensor": ((0.30, 0.26, 0.14), 'HIDE_OFF'),
    "state": ((0.14, 0.24, 0.33), 'WORLD'),
    "action": ((0.33, 0.21, 0.12), 'HAND'),
    "reward": ((0.14, 0.29, 0.17), 'SOLO_ON'),
    "ending": ((0.33, 0.14, 0.19), 'TRIA_RIGHT_BAR'),
    "network": ((0.25, 0.17, 0.33), 'NODETREE'),
    "agent": ((0.12, 0.27, 0.28), 'USER'),
    "output": ((0.23, 0.23, 0.27), 'TIME'),
}


def tooltip(doc: str | None) -> str:
    """A node's docstring as the tooltip a person reads (Blender shows ``bl_description``, else the docstring as
    written): its lines joined into sentences, the search words ("Triggers: ...") left out."""
    lines = [line.strip() for line in (doc or "").strip().splitlines()]
    kept = [line for line in lines if not line.startswith("Triggers:")]
    paragraphs = " ".join(line if line else "\n" for line in kept).split("\n")
    return "\n".join(" ".join(p.split()) for p in paragraphs if p.strip())


def apply_categories(classes) -> None:
    """Give every node class its category's body colour and header icon (a class may keep its own icon), and
    its tooltip (``tooltip`` of its docstring)."""
    for cls in classes:
        if "bl_description" not in vars(cls):
            cls.bl_description = tooltip(cls.__doc__)
        color, icon = CATEGORIES[cls.drla_category]
        cls.drla_color = color
        if "bl_icon" not in vars(cls):
            cls.bl_icon = icon
