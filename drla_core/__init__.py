"""drla_core: the pure-numpy learning library behind DRLA (never imports bpy)."""

__version__ = "0.1.0"
