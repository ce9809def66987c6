"""Keyframes: numpy values become F-curves of an action (the bake's one way into bpy animation).

Handles the action APIs of every supported Blender: slotted actions with a channelbag per slot
(4.4+; 4.5 has no ``action_ensure_channelbag_for_slot`` and a ``fcurves.new`` without
``group_name``), which 5.0 wraps in helpers.
"""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np
from mathutils import Euler, Quaternion


def rotation_path(mode: str) -> str:
    """The rotation property a rotation mode keys: quaternion, axis-angle or Euler."""
    return {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(mode, "rotation_euler")


def data_path(bone: str, prop: str) -> str:
    """The F-curve data path of an object's ``prop`` (``bone`` empty) or a pose bone's."""
    return f'pose.bones["{bpy.utils.escape_identifier(bone)}"].{prop}' if bone else prop


def fcurves_for(ob, action):
    """The F-curve collection ``ob`` animates through ``action`` (slotted actions on 4.4+, legacy before)."""
    if hasattr(action, "slots"):
        from bpy_extras import anim_utils  # Blender's own helper module, loaded only when a bake writes

        slot = ob.animation_data.action_slot
        if slot is None:
            slot = action.slots.new(id_type='OBJECT', name=ob.name)
            ob.animation_data.action_slot = slot
        if hasattr(anim_utils, "action_ensure_channelbag_for_slot"):
            return anim_utils.action_ensure_channelbag_for_slot(action, slot).fcurves
        # 4.5 has no such helper (its Action.fcurves would key a slot the object does not use): the same by hand
        layer = action.layers[0] if action.layers else action.layers.new("Layer")
        strip = layer.strips[0] if layer.strips else layer.strips.new(type='KEYFRAME')
        return strip.channelbag(slot, ensure=True).fcurves
    return action.fcurves


def new_fcurve(fcurves, path: str, index: int, group: str):
    """``fcurves.new`` in the F-curve group ``group`` (5.0 takes ``group_name``; a 4.5 channelbag takes no group)."""
    if "group_name" in fcurves.bl_rna.functions["new"].parameters:
        return fcurves.new(path, index=index, group_name=group)
    fc = fcurves.new(path, index=index)
    bag = fcurves.data  # the channelbag
    fc.group = bag.groups.get(group) or bag.groups.new(group)
    return fc


def write_channel(fcurves, bone: str, prop: str, frames: list[int], values: list[tuple[float, ...]],
                  group: str) -> None:
    """LINEAR keys of one channel (every index of ``prop``) at ``frames``, in the F-curve group ``group``."""
    for index in range(len(values[0])):
        fc = new_fcurve(fcurves, data_path(bone, prop), index, group)
        fc.keyframe_points.add(len(frames))
        fc.keyframe_points.foreach_set("co", [c for f, v in zip(frames, values) for c in (float(f), float(v[index]))])
        for kp in fc.keyframe_points:
            kp.interpolation = 'LINEAR'
        fc.update()


def rotation_values(quats: np.ndarray, mode: str, start: Any) -> list[tuple[float, ...]]:
    """Per-frame quaternions ``(F, 4)`` as values of a bone's rotation mode, continuous from frame to frame.

    ``start`` is ``(quaternion, euler)`` of the bone now: the first key takes the same hemisphere and
    Euler branch, so the curves do not flip."""
    out: list[tuple[float, ...]] = []
    prev_q = np.asarray(start[0], dtype=np.float64)
    prev_e = Euler(start[1], mode if mode not in ("QUATERNION", "AXIS_ANGLE") else "XYZ")
    for q in quats:
        q = np.asarray(q, dtype=np.float64)
        if float(np.dot(q, prev_q)) < 0.0:
            q = -q  # the same rotation, without a flip between keys
        prev_q = q
        if mode == "QUATERNION":
            out.append(tuple(float(v) for v in q))
        elif mode == "AXIS_ANGLE":
            axis, angle = Quaternion(q.tolist()).to_axis_angle()
            out.append((float(angle), float(axis[0]), float(axis[1]), float(axis[2])))
        else:
            prev_e = Quaternion(q.tolist()).to_euler(mode, prev_e)
            out.append(tuple(float(v) for v in prev_e))
    return out
