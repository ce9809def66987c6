"""Camera pixels as numbers: the display modes (RGB, gray, black/white, depth) and their conversions, the GPU
context a background session needs, and the render helpers both camera paths share."""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np


MODES = ('RGB', 'GRAY', 'BW', 'DEPTH')
METHODS = ('gpu', 'workbench')
COLOR_SOURCES = ('OBJECT', 'MATERIAL')
GEOMETRY_TYPES = frozenset({'MESH', 'CURVE', 'SURFACE', 'FONT', 'META'})
LUMA = np.array([0.2126, 0.7152, 0.0722], np.float32)


_BYTE_SCALE = np.float32(255.0)


def _byte_gray(px: np.ndarray) -> np.ndarray:
    """Rec.709 luma of 8-bit pixels (..., 4): ``(r * L0 + g * L1) + b * L2`` with each channel k / 255 in float32,
    the operations of ``gray_of`` on ``display_bytes``' RGB in the same order (so the same numbers), in place."""
    gray = np.divide(px[..., 0], _BYTE_SCALE, dtype=np.float32)
    gray *= LUMA[0]
    part = np.divide(px[..., 1], _BYTE_SCALE, dtype=np.float32)
    part *= LUMA[1]
    gray += part
    np.divide(px[..., 2], _BYTE_SCALE, out=part, dtype=np.float32)
    part *= LUMA[2]
    gray += part
    return gray


def display_values(px: np.ndarray, mode: str, threshold: float) -> np.ndarray:
    """``display_bytes`` before its conversion to float32: BW stays a bool array (cheaper to move about)."""
    if mode == 'RGB':
        rgb = np.empty(px.shape[:-1] + (3,), np.float32)
        for k in range(3):
            np.divide(px[..., k], _BYTE_SCALE, out=rgb[..., k], dtype=np.float32)
        return rgb
    gray = _byte_gray(px)
    if mode == 'GRAY':
        return gray
    return np.greater(gray, np.float32(threshold))


def display_bytes(px: np.ndarray, mode: str, threshold: float) -> np.ndarray:
    """``display_image`` of 8-bit pixels (..., h, w, 4), the same numbers (each channel k / 255 in float32, what
    the Workbench path's BMP gives too), without a float RGB block for GRAY and BW."""
    return display_values(px, mode, threshold).astype(np.float32, copy=False)


def gray_of(rgb: np.ndarray) -> np.ndarray:
    """Rec.709 luma of (..., 3) float32 display RGB, element by element (the same numbers for one
    picture or a stack of them)."""
    return rgb[..., 0] * LUMA[0] + rgb[..., 1] * LUMA[1] + rgb[..., 2] * LUMA[2]


def display_image(rgb: np.ndarray, mode: str, threshold: float) -> np.ndarray:
    """(..., h, w, 3) float32 display RGB as the mode's float32 picture(s) (RGB, GRAY or BW)."""
    if mode == 'RGB':
        return np.array(rgb, dtype=np.float32)  # a new array
    gray = gray_of(rgb)
    if mode == 'GRAY':
        return gray.astype(np.float32, copy=False)
    return (gray > np.float32(threshold)).astype(np.float32)
_WB_BACKGROUND_DEPTH = 1.0e9  # the Z pass writes 1e10 where nothing was hit

_gpu_context_ready = False


def srgb_encode(c: np.ndarray) -> np.ndarray:
    """Scene-linear to display sRGB (what the Standard view transform does), element-wise."""
    c = np.clip(np.asarray(c, np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * np.power(c, 1.0 / 2.4) - 0.055)


def _srgb1(x: float) -> float:
    x = min(max(float(x), 0.0), 1.0)
    return 12.92 * x if x <= 0.0031308 else 1.055 * math.pow(x, 1.0 / 2.4) - 0.055


def _display_rgba(c: Any) -> tuple[float, float, float, float]:
    """A scene-linear colour as the opaque display-sRGB RGBA the shader draws."""
    return (_srgb1(c[0]), _srgb1(c[1]), _srgb1(c[2]), 1.0)


def ensure_gpu_context() -> None:
    """Make sure the ``gpu`` module can draw (in background mode that needs one render first).

    Renders a 4x4 Workbench frame of a private temporary scene, which is removed at once; the
    user's scenes and their settings are not touched. Raises whatever ``gpu`` raises if an
    offscreen buffer still cannot be made.
    """
    global _gpu_context_ready
    if _gpu_context_ready:
        return
    import gpu

    try:
        gpu.types.GPUOffScreen(4, 4).free()
    except Exception:  # SystemError "GPU functions for drawing are not available in background mode"
        had_result = _render_results()
        tmp = bpy.data.scenes.new("__drla_gpu_init")
        cam_data = bpy.data.cameras.new("__drla_gpu_init")
        cam = bpy.data.objects.new("__drla_gpu_init", cam_data)
        try:
            tmp.collection.objects.link(cam)
            tmp.camera = cam
            tmp.render.engine = 'BLENDER_WORKBENCH'
            tmp.render.resolution_x = tmp.render.resolution_y = 4
            tmp.display.render_aa = 'OFF'
            bpy.ops.render.render(scene=tmp.name)
        finally:
            bpy.data.objects.remove(cam)
            bpy.data.cameras.remove(cam_data)
            bpy.data.scenes.remove(tmp)
            _remove_render_results(keep=had_result)
        gpu.types.GPUOffScreen(4, 4).free()
    _gpu_context_ready = True


def _render_results() -> set[int]:
    """The "Render Result" images there are now (a render makes one; it would be saved with the file)."""
    return {img.as_pointer() for img in bpy.data.images if img.type == 'RENDER_RESULT'}


def _remove_render_results(keep: set[int]) -> None:
    """Remove the "Render Result" images our own renders made (not one the user's render made)."""
    for img in [img for img in bpy.data.images if img.type == 'RENDER_RESULT' and img.as_pointer() not in keep]:
        bpy.data.images.remove(img)


def _render_visible(ob: Any, view_layer: Any, hidden_collections: set[str]) -> bool:
    if ob.type not in GEOMETRY_TYPES or ob.hide_render:
        return False
    colls = ob.users_collection
    return not colls or not all(c.name in hidden_collections for c in colls)


def _render_hidden_collections(view_layer: Any) -> set[str]:
    """Names of collections whose objects a render of ``view_layer`` leaves out."""
    hidden: set[str] = set()

    def walk(layer_coll: Any, parent_hidden: bool) -> None:
        coll = layer_coll.collection
        is_hidden = parent_hidden or layer_coll.exclude or coll.hide_render
        if is_hidden:
            hidden.add(coll.name)
        for child in layer_coll.children:
            walk(child, is_hidden)

    for child in view_layer.layer_collection.children:
        walk(child, False)
    return hidden  # an object also linked to a visible collection is still rendered


def _world_color(scene: Any) -> tuple[float, float, float]:
    world = scene.world
    if world is None:
        return (0.0, 0.0, 0.0)
    return tuple(float(x) for x in world.color)  # type: ignore[return-value]
