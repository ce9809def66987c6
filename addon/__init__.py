"""Blender glue for DRLA: node tree, nodes, operators, panels, scene environment."""

classes: tuple = ()


def register() -> None:
    import bpy

    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    import bpy

    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
