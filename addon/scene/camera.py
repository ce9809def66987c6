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

import atexit
import math
import os
import tempfile
import warnings
from typing import Any

import bpy
import numpy as np

from .batch import ObjectArrays

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


#: Entries (one object's triangles of one colour) per uniform block of the camera shader: a mat4 and a vec4 each,
#: 10 KiB, within the 16 KiB every OpenGL implementation gives a uniform block.
BLOCK_ENTRIES = 128

_camera_shader: Any = None


def camera_shader() -> Any:
    """The shader every gpu camera draws with. Its arithmetic is the built-in ``UNIFORM_COLOR`` shader's
    (``gl_Position = ModelViewProjectionMatrix * vec4(pos, 1.0)``, one flat colour out), but the matrix and the
    colour come per vertex, by the vertex's entry number, from a uniform block: one draw call draws all of a
    camera's objects, where the built-in shader needs one call per object (llvmpipe spends about 30 us on each)."""
    global _camera_shader
    if _camera_shader is None:
        import gpu

        info = gpu.types.GPUShaderCreateInfo()
        info.typedef_source(f"struct DrlaCameraEntries {{ mat4 mvp[{BLOCK_ENTRIES}]; vec4 color[{BLOCK_ENTRIES}]; }};")
        info.uniform_buf(0, "DrlaCameraEntries", "entries")
        info.push_constant('INT', "first")
        info.vertex_in(0, 'VEC3', "pos")
        info.vertex_in(1, 'FLOAT', "entry")
        iface = gpu.types.GPUStageInterfaceInfo("drla_camera_iface")
        iface.flat('VEC4', "entry_color")
        info.vertex_out(iface)
        info.fragment_out(0, 'VEC4', "fragColor")
        info.vertex_source(
            "void main()\n"
            "{\n"
            "  int i = first + int(entry);\n"
            "  gl_Position = entries.mvp[i] * vec4(pos, 1.0);\n"
            "  entry_color = entries.color[i];\n"
            "}\n"
        )
        info.fragment_source("void main()\n{\n  fragColor = entry_color;\n}\n")
        _camera_shader = gpu.shader.create_from_info(info)
        atexit.register(_free_camera_shader)
    return _camera_shader


def _free_camera_shader() -> None:
    """Let the shader go while Blender's GPU module still runs: freed at interpreter teardown, after
    Blender's own exit, it crashes the process (exit status 139)."""
    global _camera_shader
    _camera_shader = None


def mul_m4(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A B`` for stacks of float32 4x4 matrices stored as Blender stores them (``m[column][row]``, what
    ``foreach_get`` gives for ``matrix_world``), with the arithmetic of Blender's ``mul_m4_m4m4`` (SSE2):
    column i of the product is ``(B[i][0] A[0] + B[i][1] A[1]) + (B[i][2] A[2] + B[i][3] A[3])``. The ``gpu.matrix``
    stack makes the built-in shaders' ModelViewProjectionMatrix so (``projection (view model)``): these are its
    float32 roundings, so the pictures are the ones the built-in shader draws, bit for bit."""
    return ((b[..., :, 0:1] * a[..., None, 0, :] + b[..., :, 1:2] * a[..., None, 1, :])
            + (b[..., :, 2:3] * a[..., None, 2, :] + b[..., :, 3:4] * a[..., None, 3, :]))


def _stored(matrices: list[Any]) -> np.ndarray:
    """mathutils 4x4 matrices as Blender stores them (``m[column][row]``), (k, 4, 4) float32."""
    return np.array(matrices, np.float32).transpose(0, 2, 1)


class _GpuPath:
    """Flat-colour drawing of the scene's meshes with the ``gpu`` module: the camera is one tile of a
    ``CameraAtlas``, its own one-tile atlas or the scene copies' shared picture (``share``)."""

    def __init__(self, cam: CameraRenderer) -> None:
        import gpu

        ensure_gpu_context()
        self.cam = cam
        self.gpu = gpu
        camera_shader()  # compiled now (a failure here falls back to Workbench); not kept: see _free_camera_shader
        self.atlas: tuple[CameraAtlas, int] | None = None  # the scene copies' shared picture, once shared
        self._own: CameraAtlas | None = CameraAtlas(cam.width, cam.height, 1, depth=cam.mode == 'DEPTH')
        self._own.attach(0, self)
        # One entry per object (per material slot with color_source MATERIAL), in drawing order; the entries'
        # triangles merged into batches of at most BLOCK_ENTRIES entries, each vertex numbered by its entry.
        self.objects: list[Any] = []
        self.slots: list[int] = []
        self.groups: list[tuple[Any, int, int]] = []  # (batch, first entry, entries)
        self.hidden_objects: list[Any] = []
        self._signature: tuple[int, int] = (-1, -1)
        self._color_cache: dict[tuple[float, float, float], tuple[float, float, float, float]] = {}
        self.dirty = True
        self.builds = 0  # how many times the batches were built (an atlas lays its blocks out again after one)
        self.layer = cam.view_layer.as_pointer()  # cameras of one view layer share its evaluation

    def share(self, atlas: CameraAtlas, index: int) -> None:
        """Draw as tile ``index`` of ``atlas`` from now on (its own one-tile atlas is freed)."""
        atlas.attach(index, self)
        self.atlas = (atlas, index)
        own, self._own = self._own, None
        if own is not None:
            own.detach(0)

    # -- batches ---------------------------------------------------------------------------
    def _scene_signature(self) -> tuple[int, int]:
        return (len(self.cam.view_layer.objects), len(bpy.data.meshes))

    def _build(self) -> None:
        from gpu_extras.batch import batch_for_shader

        cam = self.cam
        depsgraph = self._depsgraph()
        hidden = _render_hidden_collections(cam.view_layer)
        objects: list[Any] = []
        slots: list[int] = []
        parts: list[tuple[np.ndarray, np.ndarray]] = []  # per entry: vertex positions, triangles
        self.hidden_objects = []
        for ob in cam.view_layer.objects:
            if cam.objects is not None and ob.name not in cam.objects:
                continue
            if not _render_visible(ob, cam.view_layer, hidden):
                if ob.type in GEOMETRY_TYPES and ob.hide_render:
                    self.hidden_objects.append(ob)  # watched: un-hiding it triggers a rebuild
                continue
            ob_eval = ob.evaluated_get(depsgraph)
            try:
                mesh = ob_eval.to_mesh()
            except RuntimeError:
                continue
            try:
                mesh.calc_loop_triangles()
                n_tri = len(mesh.loop_triangles)
                if n_tri == 0:
                    continue
                co = np.empty(len(mesh.vertices) * 3, np.float32)
                mesh.vertices.foreach_get("co", co)
                tri = np.empty(n_tri * 3, np.int32)
                mesh.loop_triangles.foreach_get("vertices", tri)
                tri = tri.reshape(-1, 3)
                co = co.reshape(-1, 3)
                if cam.color_source == 'MATERIAL':
                    mat_idx = np.empty(n_tri, np.int32)
                    mesh.loop_triangles.foreach_get("material_index", mat_idx)
                    for slot in np.unique(mat_idx):
                        used, local = np.unique(tri[mat_idx == slot], return_inverse=True)
                        objects.append(ob)
                        slots.append(int(slot))
                        parts.append((co[used], local.reshape(-1, 3).astype(np.int32)))
                else:
                    objects.append(ob)
                    slots.append(0)
                    parts.append((co, tri))
            finally:
                ob_eval.to_mesh_clear()
        groups = []
        for first in range(0, len(parts), BLOCK_ENTRIES):
            chunk = parts[first:first + BLOCK_ENTRIES]
            starts = np.cumsum([0] + [len(co) for co, _ in chunk])
            batch = batch_for_shader(camera_shader(), 'TRIS', {
                "pos": np.concatenate([co for co, _ in chunk]),
                "entry": np.concatenate([np.full(len(co), k, np.float32) for k, (co, _) in enumerate(chunk)]),
            }, indices=np.concatenate([tri + np.int32(s) for (_, tri), s in zip(chunk, starts)]))
            groups.append((batch, first, len(chunk)))
        self.objects, self.slots, self.groups = objects, slots, groups
        self._signature = self._scene_signature()
        self.dirty = False
        self.builds += 1

    def _depsgraph(self) -> Any:
        cam, ctx = self.cam, bpy.context
        if cam.scene == ctx.scene and cam.view_layer == ctx.view_layer:
            return ctx.evaluated_depsgraph_get()  # also brings matrix_world up to date
        return cam.view_layer.depsgraph

    def _color_of(self, ob: Any, slot: int) -> tuple[float, float, float, float]:
        if self.cam.color_source == 'OBJECT':
            c = ob.color
        else:
            slots = ob.material_slots
            mat = slots[slot].material if slot < len(slots) else None
            c = mat.diffuse_color if mat is not None else (0.8, 0.8, 0.8, 1.0)  # Workbench default grey
        return self.display_color((c[0], c[1], c[2]))

    def display_color(self, key: tuple[float, float, float]) -> tuple[float, float, float, float]:
        rgba = self._color_cache.get(key)
        if rgba is None:
            if len(self._color_cache) > 1024:
                self._color_cache.clear()
            rgba = self._color_cache[key] = _display_rgba(key)
        return rgba

    def watched(self) -> bool:
        """Whether every object the batches were built from still exists (a removed one raises)."""
        try:
            return all(ob.name is not None for ob in (*self.objects, *self.hidden_objects))
        except ReferenceError:
            return False

    # -- reading ---------------------------------------------------------------------------
    def _pixels(self) -> tuple[np.ndarray, np.ndarray]:
        """This camera's colour (h, w, 4) uint8 and depth (h, w) readback, bottom row first."""
        atlas, index = self.atlas if self.atlas is not None else (self._own, 0)
        return atlas.tile(index)  # type: ignore[union-attr]

    def read_display(self, mode: str, threshold: float) -> np.ndarray:
        """The mode's picture (RGB, GRAY or BW), a new float32 array."""
        return display_bytes(self._pixels()[0][::-1], mode, threshold)

    def read_rgb(self) -> np.ndarray:
        return display_bytes(self._pixels()[0][::-1], 'RGB', 0.0)

    def read_depth(self) -> np.ndarray:
        d = self._pixels()[1][::-1].astype(np.float32)
        cd = self.cam.camera.data
        n, f = float(cd.clip_start), float(cd.clip_end)
        if cd.type == 'ORTHO':
            lin = n + d * (f - n)
        else:
            lin = (2.0 * n * f) / (f + n - (2.0 * d - 1.0) * (f - n))
        lin[d >= 1.0] = f
        return lin.astype(np.float32)

    def close(self) -> None:
        self.objects, self.groups = [], []
        own, self._own = self._own, None
        if own is not None:
            own.detach(0)
        if self.atlas is not None:
            self.atlas[0].detach(self.atlas[1])


class _depth_state:
    """Depth test on (LESS_EQUAL, writing depth, no culling) for a block; the old state back after."""

    def __init__(self, gpu: Any) -> None:
        self.gpu = gpu

    def __enter__(self) -> None:
        state = self.gpu.state
        self.old = (state.depth_test_get(), state.depth_mask_get())
        state.depth_test_set('LESS_EQUAL')
        state.depth_mask_set(True)
        state.face_culling_set('NONE')

    def __exit__(self, *exc: object) -> None:
        self.gpu.state.depth_test_set(self.old[0])
        self.gpu.state.depth_mask_set(self.old[1])


class _Layout:
    """What an atlas draws with for one set of cameras and their batches: every entry's place in the uniform
    blocks, the object reads that fill them (one ``foreach_get`` each for the matrices, the object colours and the
    render flags of all the cameras' objects), and each camera's draws ``(batch, block, first slot)``."""

    def __init__(self, live: list[tuple[int, _GpuPath]]) -> None:
        import gpu

        self.key = _layout_key(live)
        self.draws: list[list[tuple[Any, int, int]]] = []
        block, fill = 0, 0
        places: list[tuple[int, int]] = []
        entries: list[tuple[_GpuPath, Any, int]] = []  # (camera, object, material slot)
        entry_path: list[int] = []
        for k, (_, path) in enumerate(live):
            draws = []
            for batch, _first, count in path.groups:
                if fill + count > BLOCK_ENTRIES:
                    block, fill = block + 1, 0
                draws.append((batch, block, fill))
                places += [(block, fill + e) for e in range(count)]
                fill += count
            self.draws.append(draws)
            entries += [(path, ob, slot) for ob, slot in zip(path.objects, path.slots)]
            entry_path += [k] * len(path.objects)
        objects = [ob for _, ob, _ in entries]
        self.data = np.zeros((block + 1, BLOCK_ENTRIES * 20), np.float32)  # std140: mat4 mvp[128]; vec4 color[128]
        self.mvp = self.data[:, :BLOCK_ENTRIES * 16].reshape(block + 1, BLOCK_ENTRIES, 4, 4)
        self.rgba = self.data[:, BLOCK_ENTRIES * 16:].reshape(block + 1, BLOCK_ENTRIES, 4)
        self.blocks = [gpu.types.GPUUniformBuf(row) for row in self.data]
        where = np.array(places, np.intp).reshape(-1, 2)
        self.block_of, self.slot_of = where[:, 0], where[:, 1]
        self.entry_path = np.array(entry_path, np.intp)
        self.entries = len(objects)
        # One read of every object the cameras watch: the drawn ones (matrices, colours) and the hidden ones.
        # Drawn objects must stay visible and hidden ones hidden, or their camera builds again.
        hidden = [(k, ob) for k, (_, p) in enumerate(live) for ob in p.hidden_objects]
        watched = objects + [ob for _, ob in hidden]
        self.reader = ObjectArrays(watched) if watched else None
        self.flag_path = np.array(entry_path + [k for k, _ in hidden], np.intp)
        self.flag_expected = np.array([False] * len(objects) + [True] * len(hidden), bool)
        self.flag_bytes = self.flag_expected.tobytes()
        # colours: the OBJECT-colour entries read at once; MATERIAL ones (slot colours) each on its own
        self.object_entries = np.array([e for e, (path, _, _) in enumerate(entries)
                                        if path.cam.color_source == 'OBJECT'], np.intp)
        self.material_entries = [(e, path, ob, slot) for e, (path, ob, slot) in enumerate(entries)
                                 if path.cam.color_source != 'OBJECT']
        self._raw_colors = b""  # the object colours the blocks hold, as read

    def fill(self, live: list[tuple[int, _GpuPath]]) -> None:
        """Every entry's ModelViewProjection matrix and display colour into the blocks (and the blocks to the
        gpu), from the objects as they are now. Raises ``ReferenceError`` after marking ``dirty`` the cameras
        whose objects were removed, hidden or shown since their batches were built."""
        views, projections, which = [], [], []  # which: each camera's projection, by number
        depsgraphs: dict[int, Any] = {}
        known: dict[tuple[int, int, int], int] = {}
        for _, path in live:
            cam = path.cam
            cam_ob = cam.camera
            depsgraph = depsgraphs.get(path.layer)
            if depsgraph is None:  # evaluates what changed: the matrices read below are up to date
                depsgraph = depsgraphs[path.layer] = path._depsgraph()
            # the projection depends only on the camera data (and the size): copies share it
            key = (cam_ob.data.as_pointer(), cam.width, cam.height)
            number = known.get(key)
            if number is None:
                number = known[key] = len(projections)
                projections.append(cam_ob.calc_matrix_camera(depsgraph, x=cam.width, y=cam.height))
            which.append(number)
            views.append(cam_ob.matrix_world.inverted())
        if self.reader is None:
            return
        try:
            models = self.reader.read()[:self.entries].reshape(-1, 4, 4)
        except ReferenceError:  # an object was removed
            for _, path in live:
                if not path.watched():
                    path.dirty = True
            raise
        flags = self.reader.read_also("hide_render", 1, bool)[:, 0]
        if flags.tobytes() != self.flag_bytes:
            changed = flags != self.flag_expected
            for k in set(self.flag_path[changed].tolist()):
                live[k][1].dirty = True
            raise ReferenceError("render visibility changed")
        stored = _stored(views + projections)
        view, projection = stored[:len(live)], stored[len(live):]
        if len(live) > 1:  # each entry its camera's matrices (one camera: broadcast)
            view, projection = view[self.entry_path], projection[np.array(which, np.intp)[self.entry_path]]
        self.mvp[self.block_of, self.slot_of] = mul_m4(projection, mul_m4(view, models))
        if self.object_entries.size:
            raw = self.reader.read_also("color", 4)[self.object_entries]
            if raw.tobytes() != self._raw_colors:
                paths = [live[k][1] for k in self.entry_path[self.object_entries].tolist()]
                rgba = np.array([p.display_color((c[0], c[1], c[2])) for p, c in zip(paths, raw.tolist())],
                                np.float32)
                e = self.object_entries
                self.rgba[self.block_of[e], self.slot_of[e]] = rgba
                self._raw_colors = raw.tobytes()
        for i, path, ob, slot in self.material_entries:
            self.rgba[self.block_of[i], self.slot_of[i]] = path._color_of(ob, slot)
        for block, row in zip(self.blocks, self.data):
            block.update(row)


def _layout_key(live: list[tuple[int, _GpuPath]]) -> tuple:
    return tuple((i, id(p), p.builds) for i, p in live)


class CameraAtlas:
    """Several cameras of one size drawn as tiles of one offscreen picture and read back at once: the
    scene copies' cameras, one batch per step instead of N renders (N binds, clears and readbacks). A single
    camera draws through a one-tile atlas of its own.

    A tile's picture is what that camera alone would draw (same projection, same viewport size, same
    arithmetic): each camera draws all its objects with one draw call (``camera_shader``) in its tile's
    viewport. The picture is drawn again when a tile that was already read is asked for again (every copy
    reads its tile once per step: the first read of a step draws them all).
    """

    def __init__(self, width: int, height: int, count: int, depth: bool = False) -> None:
        import gpu

        ensure_gpu_context()
        self.gpu = gpu
        self.width, self.height, self.count, self.depth = int(width), int(height), int(count), bool(depth)
        self.columns = math.ceil(math.sqrt(self.count))
        self.rows = math.ceil(self.count / self.columns)
        w, h = self.columns * self.width, self.rows * self.height
        self.offscreen = gpu.types.GPUOffScreen(w, h, format='RGBA8')
        self._color_buf = gpu.types.Buffer('UBYTE', w * h * 4)
        self._depth_buf = gpu.types.Buffer('FLOAT', w * h)
        self._color = np.asarray(self._color_buf).reshape(h, w, 4)
        self._depth = np.asarray(self._depth_buf).reshape(h, w)
        self.paths: list[_GpuPath | None] = [None] * self.count
        self._read = [True] * self.count  # tiles read since the last draw
        self._layout: _Layout | None = None

    def attach(self, index: int, path: _GpuPath) -> None:
        self.paths[index] = path

    def detach(self, index: int) -> None:
        self.paths[index] = None
        self._layout = None
        if not any(self.paths) and self.offscreen is not None:
            self.offscreen.free()
            self.offscreen = None

    def _origin(self, index: int) -> tuple[int, int]:
        return (index % self.columns) * self.width, (index // self.columns) * self.height

    def _prepare(self, live: list[tuple[int, _GpuPath]]) -> _Layout:
        """Build what must be built (a camera marked dirty, or whose view layer gained or lost objects or the
        file meshes), lay the blocks out again after a build, and fill them."""
        for _ in range(8):
            signatures: dict[int, tuple[int, int]] = {}
            for _, path in live:
                signature = signatures.get(path.layer)
                if signature is None:
                    signature = signatures[path.layer] = path._scene_signature()
                if path.dirty or signature != path._signature:
                    path._build()
            layout = self._layout
            if layout is None or layout.key != _layout_key(live):
                layout = self._layout = _Layout(live)
            try:
                layout.fill(live)
                return layout
            except ReferenceError:  # objects removed, hidden or shown: those cameras build again
                continue
        raise RuntimeError("DRLA camera: the scene kept changing while its objects were read")

    def draw(self) -> None:
        gpu = self.gpu
        live = [(i, p) for i, p in enumerate(self.paths) if p is not None]
        layout = self._prepare(live) if live else None
        bg = _display_rgba(_world_color(live[0][1].cam.scene)) if live else (0.0, 0.0, 0.0, 1.0)
        w, h = self.columns * self.width, self.rows * self.height
        with self.offscreen.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=bg, depth=1.0)
            with _depth_state(gpu):
                if layout is not None:
                    try:
                        self._draw_tiles(live, layout)
                    finally:
                        gpu.state.viewport_set(0, 0, w, h)
                fb.read_color(0, 0, w, h, 4, 0, 'UBYTE', data=self._color_buf)
                if self.depth:
                    fb.read_depth(0, 0, w, h, data=self._depth_buf)
        self._read = [False] * self.count

    def _draw_tiles(self, live: list[tuple[int, _GpuPath]], layout: _Layout) -> None:
        shader, viewport_set = camera_shader(), self.gpu.state.viewport_set
        shader.bind()
        bound = -1
        for (i, _), draws in zip(live, layout.draws):
            x, y = self._origin(i)
            viewport_set(x, y, self.width, self.height)
            for batch, block, first in draws:
                if block != bound:
                    shader.uniform_block("entries", layout.blocks[block])
                    bound = block
                shader.uniform_int("first", first)
                batch.draw(shader)

    def tile(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Camera ``index``'s colour (h, w, 4) uint8 and depth (h, w), bottom row first (as a readback is)."""
        if self._read[index]:
            self.draw()
        self._read[index] = True
        x, y = self._origin(index)
        rows, cols = slice(y, y + self.height), slice(x, x + self.width)
        return self._color[rows, cols], self._depth[rows, cols]

    def tiles(self, indices: np.ndarray) -> np.ndarray:
        """The colour of the tiles ``indices`` (k, h, w, 4) uint8, top row first, drawn now (for every
        camera at once: ``SceneVectorEnv``'s batched read); those tiles count as read."""
        self.draw()
        return self._pick(self._color, indices)

    def pictures(self, indices: np.ndarray, mode: str, threshold: float, out: np.ndarray | None = None) -> np.ndarray:
        """``display_bytes(tiles(indices), mode, threshold)``, the same numbers, into ``out`` if given (any array
        of k pictures' size): the whole picture converted at once, then cut into tiles."""
        self.draw()
        picked = self._pick(display_values(self._color, mode, threshold), indices)
        if out is None:
            return picked.astype(np.float32)
        out[...] = picked.reshape(out.shape)  # picked is a new array: reshaped as a view, converted as written
        return out

    def _pick(self, full: np.ndarray, indices: np.ndarray) -> np.ndarray:
        """Tiles ``indices`` of a (rows h, columns w, ...) array, top row first; those tiles count as read."""
        h, w = self.height, self.width
        grid = full.reshape(self.rows, h, self.columns, w, *full.shape[2:]).swapaxes(1, 2)
        at = np.asarray(indices, np.intp)
        for i in at.tolist():
            self._read[i] = True
        return grid[at // self.columns, at % self.columns, ::-1]


def _resolve(root: Any, path: str) -> tuple[Any, str]:
    *parents, attr = path.split(".")
    owner = root
    for p in parents:
        owner = getattr(owner, p)
    return owner, attr


class _WorkbenchPath:
    """Reference renderer: a real Workbench render, settings swapped in only while rendering."""

    def __init__(self, cam: CameraRenderer) -> None:
        self.cam = cam
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
        stem = os.path.join(shm, f"drla_cam_{os.getpid()}_{id(self):x}")
        self.bmp_path = stem + ".bmp"
        self.exr_path = stem + ".exr"
        self._depth_tree: Any = None
        self._depth_image: Any = None
        self._had_render_result = _render_results()
        # Blender 5.0 routes the Depth pass through a compositor node group of our own; older versions
        # (4.5: scene.use_nodes / scene.node_tree, the user's own compositor) save the render's passes
        # as a multilayer EXR instead and read its Depth channel, leaving the compositor alone.
        self._exr_passes = not hasattr(cam.scene, "compositing_node_group")

    def _settings(self, depth: bool) -> list[tuple[Any, str, Any]]:
        cam, sc = self.cam, self.cam.scene
        want: list[tuple[str, Any]] = [
            ("camera", cam.camera),
            ("render.engine", 'BLENDER_WORKBENCH'),
            ("render.resolution_x", cam.width),
            ("render.resolution_y", cam.height),
            ("render.resolution_percentage", 100),
            ("render.pixel_aspect_x", 1.0),
            ("render.pixel_aspect_y", 1.0),
            ("render.use_border", False),
            ("render.film_transparent", False),
            ("render.use_compositing", depth and not self._exr_passes),
            ("render.use_sequencer", False),
            ("render.dither_intensity", 0.0),
            ("render.use_single_layer", True),
            ("render.use_freestyle", False),
            ("render.use_motion_blur", False),
            ("render.use_multiview", False),
            ("display.render_aa", 'OFF'),
            ("display.shading.light", 'FLAT'),
            ("display.shading.color_type", cam.color_source),
            ("display.shading.show_cavity", False),
            ("display.shading.show_object_outline", False),
            ("display.shading.show_shadows", False),
            ("display.shading.show_xray", False),
            ("display.shading.use_dof", False),
            ("display.shading.show_backface_culling", False),
            ("view_settings.view_transform", 'Standard'),
            ("view_settings.look", 'None'),
            ("view_settings.exposure", 0.0),
            ("view_settings.gamma", 1.0),
            ("view_settings.use_curve_mapping", False),
            ("display_settings.display_device", 'sRGB'),
            ("render.image_settings.media_type", 'IMAGE'),
        ]
        if depth and self._exr_passes:
            want += [
                ("render.image_settings.file_format", 'OPEN_EXR_MULTILAYER'),
                ("render.image_settings.color_depth", '32'),
                ("render.image_settings.exr_codec", 'NONE'),
            ]
        elif depth:
            want += [
                ("render.image_settings.file_format", 'OPEN_EXR'),
                ("render.image_settings.color_mode", 'RGB'),
                ("render.image_settings.color_depth", '32'),
                ("render.image_settings.exr_codec", 'NONE'),
                ("compositing_node_group", self._depth_node_group()),
            ]
        else:
            want += [
                ("render.image_settings.file_format", 'BMP'),
                ("render.image_settings.color_mode", 'RGB'),
            ]
        want.append(("render.image_settings.color_management", 'FOLLOW_SCENE'))
        out = []
        for path, value in want:
            owner, attr = _resolve(sc, path)
            if hasattr(owner, attr):  # skip settings an older Blender does not have
                out.append((owner, attr, value))
        if depth:
            out.append((cam.view_layer, "use_pass_z", True))
        return out

    def _depth_node_group(self) -> Any:
        if self._depth_tree is None:
            tree = bpy.data.node_groups.new("__drla_depth", "CompositorNodeTree")
            tree.interface.new_socket("Image", in_out='OUTPUT', socket_type='NodeSocketColor')
            rl = tree.nodes.new("CompositorNodeRLayers")
            rl.scene = self.cam.scene
            rl.layer = self.cam.view_layer.name
            tree.nodes.new("NodeGroupOutput")
            self._depth_tree = tree  # linked in _render, once the view layer has its Depth pass
        return self._depth_tree

    def _link_depth(self) -> None:
        tree = self._depth_tree
        if not tree.links:
            rl = tree.nodes["Render Layers"]
            tree.links.new(rl.outputs["Depth"], tree.nodes["Group Output"].inputs[0])

    def _render(self, depth: bool) -> None:
        settings = self._settings(depth)
        saved: list[tuple[Any, str, Any]] = []
        try:
            for owner, attr, value in settings:
                old = getattr(owner, attr)
                if old != value:
                    saved.append((owner, attr, old))
                    setattr(owner, attr, value)
            if depth and not self._exr_passes:
                self._link_depth()
            bpy.ops.render.render(scene=self.cam.scene.name, layer=self.cam.view_layer.name)
            result = bpy.data.images["Render Result"]
            result.save_render(self.exr_path if depth else self.bmp_path, scene=self.cam.scene)
        finally:
            _restore(saved)

    def read_rgb(self) -> np.ndarray:
        self._render(depth=False)
        return _read_bmp(self.bmp_path).astype(np.float32) / np.float32(255.0)

    def read_depth(self) -> np.ndarray:
        self._render(depth=True)
        cam = self.cam
        if self._exr_passes:
            z = _read_exr_channel(self.exr_path, ".Depth.Z")
        else:
            z = self._read_depth_image()
        clip_end = np.float32(cam.camera.data.clip_end)
        z[z >= _WB_BACKGROUND_DEPTH] = clip_end
        return np.minimum(z, clip_end)

    def _read_depth_image(self) -> np.ndarray:
        if self._depth_image is None:
            self._depth_image = bpy.data.images.load(self.exr_path, check_existing=False)
            self._depth_image.name = "__drla_depth"
        else:
            self._depth_image.reload()
        img = self._depth_image
        w, h = img.size
        px = np.empty(w * h * 4, np.float32)
        img.pixels.foreach_get(px)
        return px.reshape(h, w, 4)[::-1, :, 0].copy()

    def close(self) -> None:
        for path in (self.bmp_path, self.exr_path):
            try:
                os.remove(path)
            except OSError:
                pass
        if self._depth_image is not None:
            bpy.data.images.remove(self._depth_image)
            self._depth_image = None
        if self._depth_tree is not None:
            bpy.data.node_groups.remove(self._depth_tree)
            self._depth_tree = None
        _remove_render_results(keep=self._had_render_result)


def _restore(saved: list[tuple[Any, str, Any]]) -> None:
    """Put settings back in reverse order; retry in forward order where one enum limits another."""
    for owner, attr, old in reversed(saved):
        try:
            setattr(owner, attr, old)
        except (TypeError, ValueError):
            pass
    for owner, attr, old in saved:
        if getattr(owner, attr) != old:
            setattr(owner, attr, old)


def _read_exr_channel(path: str, suffix: str) -> np.ndarray:
    """The first channel named ``*suffix`` of an uncompressed scanline OpenEXR, top-down ``(h, w)`` float32."""
    raw = np.fromfile(path, dtype=np.uint8).tobytes()
    if raw[:4] != b"v/1\x01":
        raise ValueError(f"{path} is not an OpenEXR file")
    pos, header = 8, {}
    while raw[pos] != 0:
        name_end = raw.index(b"\0", pos)
        type_end = raw.index(b"\0", name_end + 1)
        size = int.from_bytes(raw[type_end + 1 : type_end + 5], "little")
        header[raw[pos:name_end].decode()] = raw[type_end + 5 : type_end + 5 + size]
        pos = type_end + 5 + size
    pos += 1  # the header's closing null byte; the scanline offset table follows
    if header["compression"] != b"\0":
        raise ValueError(f"{path}: only uncompressed OpenEXR is read")
    channels, chl = [], header["channels"]
    while chl and chl[0] != 0:
        end = chl.index(b"\0")
        pixel_type = int.from_bytes(chl[end + 1 : end + 5], "little")  # 0 UINT, 1 HALF, 2 FLOAT
        channels.append((chl[:end].decode(), pixel_type))
        chl = chl[end + 17 :]
    x0, y0, x1, y1 = np.frombuffer(header["dataWindow"], "<i4")
    w, h = int(x1 - x0 + 1), int(y1 - y0 + 1)
    offsets = np.frombuffer(raw, "<u8", h, pos)
    index = next(i for i, c in enumerate(channels) if c[0].endswith(suffix))
    kind = channels[index][1]
    skip = sum(w * (2 if t == 1 else 4) for _, t in channels[:index])  # a row holds the channels in list order
    dtype = {0: "<u4", 1: "<f2", 2: "<f4"}[kind]
    out = np.empty((h, w), np.float32)
    for off in map(int, offsets):  # one scanline per chunk: int32 y, int32 size, then each channel's row
        y = int.from_bytes(raw[off : off + 4], "little", signed=True)
        out[y - y0] = np.frombuffer(raw, dtype, w, off + 8 + skip)
    return out


def _read_bmp(path: str) -> np.ndarray:
    """A 24/32-bit BMP as a top-down (h, w, 3) uint8 RGB array."""
    raw = np.fromfile(path, dtype=np.uint8)
    off = int.from_bytes(raw[10:14].tobytes(), "little")
    w = int.from_bytes(raw[18:22].tobytes(), "little")
    h = int.from_bytes(raw[22:26].tobytes(), "little", signed=True)
    bpp = int.from_bytes(raw[28:30].tobytes(), "little") // 8
    stride = (w * bpp + 3) & ~3
    rows = abs(h)
    px = raw[off : off + stride * rows].reshape(rows, stride)[:, : w * bpp].reshape(rows, w, bpp)
    if h > 0:  # bottom-up
        px = px[::-1]
    return px[:, :, [2, 1, 0]]
