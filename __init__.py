"""DRLA: deep reinforcement learning agents trained inside a Blender scene.

The extension root is deliberately thin: the Blender glue lives in ``addon`` and the
pure-numpy learning library in ``drla_core``.
"""

from .addon import register, unregister

__all__ = ["register", "unregister"]
