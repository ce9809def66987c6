"""Camera pixels as numpy arrays: a fast ``gpu``-module renderer and a Workbench reference.

``CameraRenderer(scene, camera_obj, width, height, mode, method)`` returns what a scene
camera sees as a float32 array (row 0 is the top of the image):

============  ==========  =====================================================================
mode          shape       values
============  ==========  =====================================================================
``'RGB'``     (h, w, 3)   display-referred colour (view transform Standard, sRGB), 0..1
``'GRAY'``    (h, w)      Rec.709 luma of the display RGB: 0.2126 R + 0.7152 G + 0.0722 B, 0..1
``'BW'``      (h, w)      1.0 where GRAY > ``threshold`` (default 0.5), else 0.0
``'DEPTH'``   (h, w)      depth along the camera's view axis (planar, not Euclidean). With
                          ``normalize_depth=True`` (default) divided by ``clip_end``: 0..1 and
                          1.0 where nothing was hit; with ``False`` in scene units, and
                          ``clip_end`` where nothing was hit.
============  ==========  =====================================================================

Both methods draw every object as one flat colour (no lighting), so their pictures agree:

- ``method='gpu'`` (default, about 0.2 ms at 64x64 on llvmpipe): the scene's meshes are drawn
  with the ``gpu`` module into a ``GPUOffScreen`` from the camera's view and projection
  matrices. The meshes (each material slot's part with ``color_source='MATERIAL'``) are merged
  into one batch once, each vertex numbered by its object; every ``read()`` reads the object
  matrices and colours again (one ``foreach_get`` for all), works out the ModelViewProjection
  matrices in numpy with the ``gpu.matrix`` stack's float32 arithmetic (``mul_m4``) and draws
  the batch with ONE draw call (``camera_shader``): the built-in ``UNIFORM_COLOR`` shader's
  pixels, byte for byte, without its one call per object. Scene copies' cameras draw as tiles
  of one shared picture (``CameraAtlas``). Depth comes from the depth buffer. Geometry is
  captured when the batches are built: rigid motion is seen at once, and added, removed or
  render-hidden (``hide_render``) objects are noticed automatically, but a mesh edited in place
  (modifiers, shape keys, edit mode) or a collection's render visibility toggled is only seen
  after ``invalidate()``. Collection instances and particles are not drawn.
- ``method='workbench'`` (reference, about 2.3 ms at 64x64): a real Workbench render with
  FLAT lighting, anti-aliasing off, view transform Standard and dithering off, saved to
  ``/dev/shm`` and parsed. Every render setting it changes is changed only for the duration of
  the render and then restored, so the user's scene is exactly as before (a "Render Result"
  image the renders made is removed by ``close()``; one the user had holds the last picture).
  DEPTH uses the compositor's Z pass through a private compositor node group (Blender 5.0 API),
  removed again by ``close()``.

Colours: ``color_source='OBJECT'`` (default) uses the object's colour (Object Properties >
Viewport Display > Color, ``ob.color``); ``'MATERIAL'`` uses each material slot's viewport
display colour (``material.diffuse_color``). The background is the world colour
(``scene.world.color``; black without a world). Colours are scene-linear and go through the
sRGB transform, as Workbench's Standard view transform does.

The ``gpu`` module needs a GPU context, which a background (``bpy`` module) session only has
after one render: the first ``CameraRenderer`` does one tiny Workbench render of a private
temporary scene (removed at once) to create it. If an offscreen buffer still cannot be made,
the renderer falls back to ``'workbench'`` and says why in ``fallback_reason`` (and a warning).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .camera_gpu import BLOCK_ENTRIES, CameraAtlas, _GpuPath, camera_shader, mul_m4
from .camera_pixels import (
    COLOR_SOURCES,
    GEOMETRY_TYPES,
    LUMA,
    METHODS,
    MODES,
    _display_rgba,
    display_bytes,
    display_image,
    display_values,
    ensure_gpu_context,
    gray_of,
    srgb_encode,
)
from .camera_workbench import _WorkbenchPath

#: what callers import from here (the gpu path, the Workbench path and the pixel helpers live beside it)
__all__ = ["CameraRenderer", "CameraAtlas", "BLOCK_ENTRIES", "camera_shader", "mul_m4", "COLOR_SOURCES",
           "GEOMETRY_TYPES", "LUMA", "METHODS", "MODES", "display_bytes", "display_image", "display_values",
           "ensure_gpu_context", "gray_of", "srgb_encode", "_display_rgba"]


class CameraRenderer:
    """Read a camera's picture as a float32 array (see the module docstring for the modes).

    Args:
        scene: the scene to draw.
        camera_obj: a camera object (need not be ``scene.camera``).
        width, height: image size in pixels.
        mode: ``'RGB'``, ``'GRAY'``, ``'BW'`` or ``'DEPTH'``.
        method: ``'gpu'`` (fast) or ``'workbench'`` (reference render).
        threshold: GRAY level above which a ``'BW'`` pixel is white.
        color_source: ``'OBJECT'`` (object colour) or ``'MATERIAL'`` (material viewport colour).
        normalize_depth: ``'DEPTH'`` divided by ``clip_end`` (0..1) if true, scene units if not.
        view_layer: the view layer whose visibility counts (default: the scene's first one).
        objects: names of the only objects drawn (a scene copy's own; default: every visible object).
            The Workbench path renders the whole scene whatever this says.
        atlas: ``(CameraAtlas, tile)``: draw this camera as one tile of a shared picture that all the
            scene copies' cameras draw at once (``method='gpu'`` only), one readback for all of them.

    Use as a context manager, or call ``close()`` when done.
    """

    def __init__(
        self,
        scene: Any,
        camera_obj: Any,
        width: int = 64,
        height: int = 64,
        mode: str = 'GRAY',
        method: str = 'gpu',
        *,
        threshold: float = 0.5,
        color_source: str = 'OBJECT',
        normalize_depth: bool = True,
        view_layer: Any = None,
        objects: Any = None,
        atlas: tuple[CameraAtlas, int] | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if color_source not in COLOR_SOURCES:
            raise ValueError(f"color_source must be one of {COLOR_SOURCES}, got {color_source!r}")
        if camera_obj is None or camera_obj.type != 'CAMERA':
            raise ValueError(f"camera_obj must be a camera object, got {camera_obj!r}")
        if int(width) < 1 or int(height) < 1:
            raise ValueError(f"width and height must be positive, got {width}x{height}")
        self.scene = scene
        self.camera = camera_obj
        self.width, self.height = int(width), int(height)
        self.mode = mode
        self.threshold = float(threshold)
        self.color_source = color_source
        self.normalize_depth = bool(normalize_depth)
        self.view_layer = view_layer if view_layer is not None else scene.view_layers[0]
        self.objects = frozenset(objects) if objects is not None else None
        self.fallback_reason: str | None = None
        self._impl: _GpuPath | _WorkbenchPath
        if method == 'gpu':
            try:
                self._impl = _GpuPath(self)
                if atlas is not None:
                    self._impl.share(*atlas)
            except Exception as exc:  # no GPU context / no offscreen support on this machine
                reason = f"{type(exc).__name__}: {exc}"
                self.fallback_reason = f"gpu offscreen drawing unavailable ({reason}); using Workbench"
                warnings.warn(f"DRLA camera: {self.fallback_reason}", RuntimeWarning, stacklevel=2)
                method = 'workbench'
        if method == 'workbench':
            self._impl = _WorkbenchPath(self)
        self.method = method

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.height, self.width, 3) if self.mode == 'RGB' else (self.height, self.width)

    def read(self) -> np.ndarray:
        """Draw the camera's view of the scene as it is now; returns a new float32 array."""
        if self._impl is None:
            raise RuntimeError("CameraRenderer is closed")
        if self.mode == 'DEPTH':
            depth = self._impl.read_depth()  # planar depth in scene units, clip_end where empty
            if self.normalize_depth:
                depth = depth / np.float32(self.camera.data.clip_end)
            return depth.astype(np.float32, copy=False)
        if self.method == 'gpu':
            return self._impl.read_display(self.mode, self.threshold)  # type: ignore[union-attr]
        rgb = self._impl.read_rgb()  # (h, w, 3) float32 display-referred 0..1
        return display_image(rgb, self.mode, self.threshold)

    def invalidate(self) -> None:
        """Rebuild the gpu batches on the next read (after editing a mesh in place)."""
        if isinstance(self._impl, _GpuPath):
            self._impl.dirty = True

    def close(self) -> None:
        """Free the offscreen buffer / temporary files and data; safe to call twice."""
        impl, self._impl = self._impl, None  # type: ignore[assignment]
        if impl is not None:
            impl.close()

    def __enter__(self) -> CameraRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"CameraRenderer({self.camera.name!r}, {self.width}x{self.height}, mode={self.mode!r}, "
            f"method={self.method!r})"
        )
