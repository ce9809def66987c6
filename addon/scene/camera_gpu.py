"""The fast camera path: the scene's meshes drawn flat with the ``gpu`` module into an offscreen buffer, one
tile of an atlas per camera (``CameraAtlas``: many copies' cameras in one draw and one readback)."""

from __future__ import annotations

import atexit
import math
from typing import Any

import bpy
import numpy as np

from .batch import ObjectArrays
from .camera_pixels import (
    GEOMETRY_TYPES,
    _display_rgba,
    _render_hidden_collections,
    _render_visible,
    _world_color,
    display_bytes,
    display_values,
    ensure_gpu_context,
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

    def __init__(self, cam: Any) -> None:
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
