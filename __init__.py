"""DRLA: deep reinforcement learning agents trained inside a Blender scene.

The extension root is deliberately thin: the Blender glue lives in ``addon`` and the
pure-numpy learning library in ``drla_core``.
"""

if __package__:  # Blender loads the extension as a package. pytest, collecting a checkout whose folder
    # name is no identifier (``ci-clone``), imports this file as a plain module: nothing to register then.
    from .addon import register, unregister

__all__ = ["register", "unregister"]
