"""The reference camera path: a real Workbench render, its settings swapped in only while rendering and put
back after (``_WorkbenchPath``)."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import bpy
import numpy as np

from .camera_pixels import _WB_BACKGROUND_DEPTH, _remove_render_results, _render_results


def _resolve(root: Any, path: str) -> tuple[Any, str]:
    *parents, attr = path.split(".")
    owner = root
    for p in parents:
        owner = getattr(owner, p)
    return owner, attr


class _WorkbenchPath:
    """Reference renderer: a real Workbench render, settings swapped in only while rendering."""

    def __init__(self, cam: Any) -> None:
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
