"""Reads of many objects at once, and the arithmetic the scene copies share with a single scene.

``ObjectArrays(objects, prop, width)`` reads one property (``matrix_world``, ``location``) of a list of
objects with ONE ``foreach_get`` over ``bpy.data.objects`` (about 30 us for 200 objects, against about
1.5 us per object read one at a time), the rows picked by each object's ``session_uid`` (checked on
every read, so a rename, an added or a removed object is noticed and the rows found again).

The formulas below (distance, location relative to an origin or another object) are written once
for float64 numpy arrays (``SceneVectorEnv``'s batched step, N copies) and again in plain Python floats
(a single scene's sensors, rewards and endings), element by element with the same IEEE operations in
the same order: a copy's values are bit-identical to what the single scene computes from the same
float32 matrices.
"""

from __future__ import annotations

import math

import bpy
import numpy as np


#: ``foreach_get`` reads every object of the file; past this many objects per object needed (a user's large
#: file, few objects in the environment) reading the needed ones one at a time is faster.
WHOLE_FILE_RATIO = 16


class ObjectArrays:
    """``prop`` (``width`` values each) of ``objects``, all read in one go; ``read()`` -> (k, width) ``dtype``
    (float32, or bool for a flag such as ``hide_render``). In a file with many more objects than these
    (``WHOLE_FILE_RATIO``) each is read on its own instead (the same values, in ``foreach_get``'s order)."""

    def __init__(self, objects, prop: str = "matrix_world", width: int = 16, dtype=np.float32) -> None:
        self.objects = list(objects)
        self.prop, self.width, self.dtype = prop, int(width), dtype
        self.one_by_one = len(bpy.data.objects) > WHOLE_FILE_RATIO * len(self.objects) + 256
        if not self.one_by_one:
            self._locate()

    def _locate(self) -> None:
        data = bpy.data.objects
        uids = np.empty(len(data), np.int32)
        data.foreach_get("session_uid", uids)
        row_of = {u: i for i, u in enumerate(uids.tolist())}
        try:
            self.uids = np.array([ob.session_uid for ob in self.objects], np.int32)
            self._uid_bytes = self.uids.tobytes()
            self.rows = np.array([row_of[u] for u in self.uids.tolist()], np.intp)
        except KeyError as exc:  # an object of the scene copies was deleted
            raise ReferenceError("an object the environment reads was removed") from exc
        self._uid_buf = uids
        self._all = np.empty(len(uids) * self.width, self.dtype)
        self._also: dict[str, np.ndarray] = {}

    def _read_each(self) -> np.ndarray:
        out = np.empty((len(self.objects), self.width), self.dtype)
        matrix = self.prop == "matrix_world"
        for i, ob in enumerate(self.objects):  # a removed object raises ReferenceError, as _locate does
            value = getattr(ob, self.prop)
            # a matrix column after column, as foreach_get gives it
            out[i] = np.array(value, self.dtype).T.reshape(-1) if matrix else np.array(value, self.dtype)
        return out

    def read(self) -> np.ndarray:
        if self.one_by_one:
            return self._read_each()
        data = bpy.data.objects
        if len(data) != self._uid_buf.size:
            self._locate()
        else:
            data.foreach_get("session_uid", self._uid_buf)
            if self._uid_buf[self.rows].tobytes() != self._uid_bytes:  # (np.array_equal costs 4x more)
                self._locate()
        data.foreach_get(self.prop, self._all)
        return self._all.reshape(-1, self.width)[self.rows]

    def read_also(self, prop: str, width: int, dtype=np.float32) -> np.ndarray:
        """(k, width) ``prop`` of the same objects, right after a ``read()`` (which checked that the rows still
        hold them): one more ``foreach_get``, no second check."""
        if self.one_by_one:
            return np.array([np.array(getattr(ob, prop), dtype).reshape(width) for ob in self.objects], dtype)
        buf = self._also.get(prop)
        if buf is None or buf.size != self._uid_buf.size * width:
            buf = self._also[prop] = np.empty(self._uid_buf.size * width, dtype)
        bpy.data.objects.foreach_get(prop, buf)
        return buf.reshape(-1, width)[self.rows]


def world_matrices(flat: np.ndarray) -> np.ndarray:
    """(k, 16) ``matrix_world`` as ``foreach_get`` gives it (column after column) -> (k, 4, 4) float64, row-major."""
    return flat.reshape(-1, 4, 4).transpose(0, 2, 1).astype(np.float64)


def distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distances between (k, 3) float64 points, ``sqrt((dx dx + dy dy) + dz dz)``."""
    d = a - b
    return np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2])


def distance(a, b) -> float:
    """``distances`` for two objects' origins, in plain floats (the same IEEE operations, in the same order)."""
    p, q = a.matrix_world.translation, b.matrix_world.translation
    dx, dy, dz = p[0] - q[0], p[1] - q[1], p[2] - q[2]
    return math.sqrt(dx * dx + dy * dy + dz * dz)


def _cofactors(a00, a01, a02, a10, a11, a12, a20, a21, a22):
    """The 3x3 matrix's adjugate (row-major) and determinant; works on floats and on float64 arrays alike."""
    c00 = a11 * a22 - a12 * a21
    c01 = a02 * a21 - a01 * a22
    c02 = a01 * a12 - a02 * a11
    c10 = a12 * a20 - a10 * a22
    c11 = a00 * a22 - a02 * a20
    c12 = a02 * a10 - a00 * a12
    c20 = a10 * a21 - a11 * a20
    c21 = a01 * a20 - a00 * a21
    c22 = a00 * a11 - a01 * a10
    det = a00 * c00 + a01 * c10 + a02 * c20
    return (c00, c01, c02, c10, c11, c12, c20, c21, c22), det


def relative_location(ref, point) -> tuple[float, float, float]:
    """``relative_locations`` for one mathutils ``Matrix`` ``ref`` and one point, in plain floats (the same
    IEEE operations in the same order as the arrays' version: bit-identical)."""
    r0, r1, r2 = ref[0], ref[1], ref[2]
    x, y, z = point[0] - r0[3], point[1] - r1[3], point[2] - r2[3]
    (c00, c01, c02, c10, c11, c12, c20, c21, c22), det = _cofactors(r0[0], r0[1], r0[2], r1[0], r1[1], r1[2],
                                                                    r2[0], r2[1], r2[2])
    if det == 0.0:
        return x, y, z
    return ((c00 * x + c01 * y + c02 * z) / det, (c10 * x + c11 * y + c12 * z) / det,
            (c20 * x + c21 * y + c22 * z) / det)


def relative_locations(ref: np.ndarray, point: np.ndarray) -> np.ndarray:
    """(k, 3): ``point`` (k, 3) in the frames of the (k, 4, 4) matrices ``ref``: ``A^-1 (point - t)`` with
    ``A`` the 3x3 part and ``t`` the translation, by Cramer's rule written out (a singular ``A``, an object
    scaled to zero, gives the point itself minus ``t``, as a "safe" inverse would for a zero frame)."""
    a = ref[:, :3, :3]
    v = point - ref[:, :3, 3]
    (c00, c01, c02, c10, c11, c12, c20, c21, c22), det = _cofactors(
        a[:, 0, 0], a[:, 0, 1], a[:, 0, 2], a[:, 1, 0], a[:, 1, 1], a[:, 1, 2], a[:, 2, 0], a[:, 2, 1], a[:, 2, 2])
    singular = det == 0.0
    det = np.where(singular, 1.0, det)
    x, y, z = v[:, 0], v[:, 1], v[:, 2]
    out = np.empty_like(v)
    out[:, 0] = (c00 * x + c01 * y + c02 * z) / det
    out[:, 1] = (c10 * x + c11 * y + c12 * z) / det
    out[:, 2] = (c20 * x + c21 * y + c22 * z) / det
    if singular.any():
        out[singular] = v[singular]
    return out
