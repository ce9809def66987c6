"""PNG files with numpy and zlib only: Blender ships numpy but not Pillow.

``encode_png``/``write_png`` write the report pictures and the live curve; ``read_png`` reads back what
they (and Blender's renders) write, for tests and for the example pictures. 8-bit, non-interlaced.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import numpy as np

from ..base.files import atomic_write

__all__ = ["encode_png", "write_png", "read_png"]


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG colour type (grey, grey+alpha, RGB, RGBA)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes for a uint8 image ``(H, W)``, ``(H, W, 1|2|3|4)``; floats in [0, 1] are scaled to 0..255."""
    img = np.asarray(image)
    if img.dtype != np.uint8:
        img = (np.clip(np.nan_to_num(img.astype(np.float64)), 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    if img.ndim == 2:
        img = img[:, :, None]
    if img.ndim != 3 or img.shape[2] not in _COLOR_TYPES or img.shape[0] < 1 or img.shape[1] < 1:
        raise ValueError(f"write_png: expected an (H, W, 1-4) image, got shape {np.shape(image)}")
    height, width, channels = img.shape
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPES[channels], 0, 0, 0)
    raw = np.zeros((height, 1 + width * channels), dtype=np.uint8)  # filter byte 0 (None) per row
    raw[:, 1:] = img.reshape(height, width * channels)
    return (_PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
            + _chunk(b"IEND", b""))


def write_png(path: str | os.PathLike[str], image: np.ndarray) -> Path:
    """Write ``image`` (see ``encode_png``) to ``path`` atomically; returns the path."""
    return atomic_write(path, encode_png(image))


def _unfilter(raw: np.ndarray, height: int, stride: int, bpp: int) -> np.ndarray:
    rows = raw.reshape(height, stride + 1)
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:].astype(np.int32)
        if kind == 0:
            cur = line
        elif kind == 2:
            cur = (line + prev) & 0xFF
        elif kind == 1:  # Sub: a running sum per channel
            cur = line.copy()
            for i in range(bpp, stride):
                cur[i] = (cur[i] + cur[i - bpp]) & 0xFF
        elif kind in (3, 4):
            cur = line.copy()
            for i in range(stride):
                a = cur[i - bpp] if i >= bpp else 0
                b = prev[i]
                if kind == 3:
                    cur[i] = (cur[i] + (a + b) // 2) & 0xFF
                else:
                    c = prev[i - bpp] if i >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                    cur[i] = (cur[i] + pred) & 0xFF
        else:
            raise ValueError(f"read_png: bad filter type {kind} in row {y}")
        out[y] = cur
        prev = cur
    return out


def read_png(path: str | os.PathLike[str]) -> np.ndarray:
    """Read an 8-bit, non-interlaced grey/RGB/RGBA PNG (such as ``write_png``'s) into ``(H, W, C)`` uint8."""
    data = Path(path).read_bytes()
    if not data.startswith(_PNG_SIGNATURE):
        raise ValueError("read_png: not a PNG file")
    pos, idat, header = len(_PNG_SIGNATURE), [], None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if zlib.crc32(kind + body) & 0xFFFFFFFF != struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]:
            raise ValueError(f"read_png: bad CRC in chunk {kind!r}")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None:
        raise ValueError("read_png: no IHDR chunk")
    width, height, depth, color_type, _, _, interlace = header
    channels = {v: k for k, v in _COLOR_TYPES.items()}.get(color_type)
    if depth != 8 or channels is None or interlace:
        raise ValueError("read_png: only 8-bit, non-interlaced grey/RGB/RGBA images are supported")
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8)
    return _unfilter(raw, height, width * channels, channels).reshape(height, width, channels)
