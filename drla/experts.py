"""The expert library (``drla experts``): in ``drla_core.nets.expert_library``, so Blender's sidebar lists it too."""

from drla_core.nets.expert_library import INDEX, ExpertLibrary, LibraryError

__all__ = ["ExpertLibrary", "LibraryError", "INDEX"]
