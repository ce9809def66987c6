"""The arm and its batched forward kinematics: bones (``BoneSpec``: rest frame, length, rotational DOFs and
their limits), ``ArmDescription``, and tips, frames, the Jacobian and bone quaternions for ``(N, D)`` angles."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

import numpy as np


AXES = ("X", "Y", "Z")


def bone_matrix(head: Sequence[float], tail: Sequence[float], roll: float = 0.0) -> np.ndarray:
    """A bone's rest matrix in armature space (``bone.matrix_local``) from head, tail and roll.

    Port of Blender's ``vec_roll_to_mat3_normalized`` (armature.cc): the Y axis points from
    head to tail, and ``roll`` turns the X/Z axes about it.
    """
    head_v = np.asarray(head, dtype=np.float64)
    vec = np.asarray(tail, dtype=np.float64) - head_v
    length = float(np.linalg.norm(vec))
    if length <= 0.0:
        raise ValueError("bone_matrix: head and tail coincide")
    x, y, z = vec / length
    theta = 1.0 + y
    theta_alt = x * x + z * z
    safe, critical = 1.0e-5, 1.0e-10
    if theta > safe or theta_alt > critical:
        if theta <= safe:
            theta = 0.5 * theta_alt + 0.125 * theta_alt * theta_alt
        # Blender writes rMatrix[col][row]; here rows are rows.
        rot = np.array(
            [
                [1.0 - x * x / theta, x, -x * z / theta],
                [-x, y, -z],
                [-x * z / theta, z, 1.0 - z * z / theta],
            ]
        )
    else:
        rot = np.diag([-1.0, -1.0, 1.0])
    mat = np.eye(4)
    mat[:3, :3] = _axis_angle_matrix(np.array([x, y, z]), roll) @ rot
    mat[:3, 3] = head_v
    return mat


def _axis_angle_matrix(axis: np.ndarray, angle: float) -> np.ndarray:
    x, y, z = axis
    c, s = math.cos(angle), math.sin(angle)
    t = 1.0 - c
    return np.array(
        [
            [t * x * x + c, t * x * y - s * z, t * x * z + s * y],
            [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
            [t * x * z - s * y, t * y * z + s * x, t * z * z + c],
        ]
    )


@dataclass
class BoneSpec:
    """How to build one bone (used by the example arms and by the scene build script).

    Attributes:
        name: bone name.
        head: head position in armature space.
        tail: tail position in armature space.
        roll: bone roll in radians.
        dofs: ``[(axis, lower, upper), ...]`` with axis in "X", "Y", "Z" and limits in radians;
            Blender's IK limits need ``lower <= 0 <= upper``.
    """

    name: str
    head: tuple[float, float, float]
    tail: tuple[float, float, float]
    roll: float = 0.0
    dofs: list[tuple[str, float, float]] = field(default_factory=list)


@dataclass
class ArmDescription:
    """A serial chain of bones, as numbers: everything FK and IK need, and nothing from bpy.

    Attributes:
        name: the armature's name.
        bones: bone names, root first; ``bones[i]``'s parent is ``bones[i-1]``.
        rest_local: ``(B, 4, 4)`` rest matrix of each bone relative to its parent's rest
            (the root's is ``bone.matrix_local``).
        lengths: ``(B,)`` bone lengths; the end effector is the last bone's tail.
        dof_bone: ``(D,)`` bone index of each DOF (non-decreasing).
        dof_axis: ``(D,)`` local axis of each DOF, 0/1/2 for X/Y/Z (increasing within a bone).
        lower: ``(D,)`` lower limits, radians.
        upper: ``(D,)`` upper limits, radians.
        base: ``(4, 4)`` armature object's world matrix (``matrix_world``).
    """

    name: str
    bones: list[str]
    rest_local: np.ndarray
    lengths: np.ndarray
    dof_bone: np.ndarray
    dof_axis: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    base: np.ndarray = field(default_factory=lambda: np.eye(4))

    def __post_init__(self) -> None:
        self.bones = [str(b) for b in self.bones]
        self.rest_local = np.asarray(self.rest_local, dtype=np.float64).reshape(-1, 4, 4)
        self.lengths = np.asarray(self.lengths, dtype=np.float64).reshape(-1)
        self.dof_bone = np.asarray(self.dof_bone, dtype=np.int64).reshape(-1)
        self.dof_axis = np.asarray(self.dof_axis, dtype=np.int64).reshape(-1)
        self.lower = np.asarray(self.lower, dtype=np.float64).reshape(-1)
        self.upper = np.asarray(self.upper, dtype=np.float64).reshape(-1)
        self.base = np.asarray(self.base, dtype=np.float64).reshape(4, 4)
        n_bones, n_dofs = len(self.bones), len(self.dof_bone)
        if n_bones == 0 or self.rest_local.shape[0] != n_bones or self.lengths.shape[0] != n_bones:
            raise ValueError("ArmDescription: bones, rest_local and lengths must have one entry per bone")
        if not (len(self.dof_axis) == len(self.lower) == len(self.upper) == n_dofs) or n_dofs == 0:
            raise ValueError("ArmDescription: dof_bone, dof_axis, lower and upper must have one entry per DOF")
        order = self.dof_bone * 3 + self.dof_axis
        if np.any(np.diff(order) <= 0) or self.dof_bone.min() < 0 or self.dof_bone.max() >= n_bones:
            raise ValueError("ArmDescription: DOFs must be sorted by bone, then axis X<Y<Z, with valid bone indices")
        if np.any(self.dof_axis < 0) or np.any(self.dof_axis > 2) or np.any(self.lower > self.upper):
            raise ValueError("ArmDescription: bad DOF axis or limits")
        # FK fast-path data: which rest rotations are the identity (skipped), per-bone DOF lists
        self._rest_identity = [bool(np.array_equal(r[:3, :3], np.eye(3))) for r in self.rest_local]
        self._bone_dofs = [[(int(k), int(self.dof_axis[k])) for k in np.flatnonzero(self.dof_bone == b)]
                           for b in range(n_bones)]
        self._prog = _compile_chain(self)

    # ---- derived quantities -------------------------------------------------------------
    @property
    def n_dofs(self) -> int:
        return int(len(self.dof_bone))

    @property
    def n_bones(self) -> int:
        return len(self.bones)

    @property
    def mid(self) -> np.ndarray:
        """Centre of each joint range."""
        return 0.5 * (self.lower + self.upper)

    @property
    def half_range(self) -> np.ndarray:
        return 0.5 * (self.upper - self.lower)

    @property
    def reach(self) -> float:
        """Upper bound of the distance from the root bone's head to the tip: the chain's length."""
        return float(self.lengths.sum())

    @property
    def root(self) -> np.ndarray:
        """Root bone head in armature space."""
        return self.rest_local[0, :3, 3].copy()

    def dof_names(self) -> list[str]:
        return [f"{self.bones[b]}.{AXES[a]}" for b, a in zip(self.dof_bone, self.dof_axis)]

    def clip(self, angles: np.ndarray) -> np.ndarray:
        return np.clip(angles, self.lower, self.upper)

    def sample_angles(self, n: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``(n, D)`` joint angles uniform within the limits."""
        rng = np.random.default_rng(rng)
        return rng.uniform(self.lower, self.upper, size=(n, self.n_dofs))

    def sample_targets(self, n: int, rng: np.random.Generator | int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Reachable targets: ``(targets (n, 3) armature space, angles (n, D))`` from uniform joint angles."""
        angles = self.sample_angles(n, rng)
        return forward_kinematics(self, angles), angles

    def world_to_local(self, points: np.ndarray) -> np.ndarray:
        """World-space points ``(..., 3)`` to armature space."""
        inv = np.linalg.inv(self.base)
        return np.asarray(points, dtype=np.float64) @ inv[:3, :3].T + inv[:3, 3]

    def local_to_world(self, points: np.ndarray) -> np.ndarray:
        return np.asarray(points, dtype=np.float64) @ self.base[:3, :3].T + self.base[:3, 3]

    # ---- serialisation ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (goes into the model file's ``extra["arm"]``)."""
        return {
            "name": self.name,
            "bones": list(self.bones),
            "rest_local": self.rest_local.tolist(),
            "lengths": self.lengths.tolist(),
            "dofs": [
                {"bone": int(b), "axis": AXES[int(a)], "lower": float(lo), "upper": float(hi)}
                for b, a, lo, hi in zip(self.dof_bone, self.dof_axis, self.lower, self.upper)
            ],
            "base": self.base.tolist(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ArmDescription:
        try:
            dofs = d["dofs"]
            return cls(
                name=d["name"],
                bones=d["bones"],
                rest_local=np.array(d["rest_local"], dtype=np.float64),
                lengths=np.array(d["lengths"], dtype=np.float64),
                dof_bone=np.array([int(x["bone"]) for x in dofs]),
                dof_axis=np.array([AXES.index(x["axis"]) for x in dofs]),
                lower=np.array([float(x["lower"]) for x in dofs], dtype=np.float64),
                upper=np.array([float(x["upper"]) for x in dofs], dtype=np.float64),
                base=np.array(d.get("base", np.eye(4)), dtype=np.float64),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"ArmDescription.from_dict: bad arm description ({exc})") from exc

    @classmethod
    def from_bone_specs(cls, name: str, specs: Sequence[BoneSpec], base: np.ndarray | None = None) -> ArmDescription:
        """Build a chain from head/tail/roll specs, exactly as Blender would compute its rest matrices."""
        local = [bone_matrix(s.head, s.tail, s.roll) for s in specs]
        rest = [local[0]] + [np.linalg.inv(local[i - 1]) @ local[i] for i in range(1, len(local))]
        dof_bone, dof_axis, lower, upper = [], [], [], []
        for i, s in enumerate(specs):
            for axis, lo, hi in sorted(s.dofs, key=lambda t: AXES.index(t[0])):
                dof_bone.append(i)
                dof_axis.append(AXES.index(axis))
                lower.append(lo)
                upper.append(hi)
        lengths = [float(np.linalg.norm(np.subtract(s.tail, s.head))) for s in specs]
        return cls(name, [s.name for s in specs], np.array(rest), np.array(lengths), np.array(dof_bone),
                   np.array(dof_axis), np.array(lower), np.array(upper), np.eye(4) if base is None else base)



# ---- forward kinematics --------------------------------------------------------------------
@dataclass
class _ChainProgram:
    """The chain compiled for the fast kernels: the constant frame before the first DOF, then per DOF
    the constant transform from the previous DOF's frame (translation components, optional rotation)
    and the axis, and the tip offset in the last DOF's frame. Rows are padded to 5 (x, y, z, x, y)
    so that cross products and the 3x3 cofactors are plain slices: ``a[1:4] * b[2:5] - a[2:5] * b[1:4]``."""

    rot0: np.ndarray  # (3 columns, 5 rows) frame before DOF 0
    pos0: np.ndarray  # (5,)
    steps: list  # [(pre_rot_T (3, 3) or None, [(component, value), ...], axis)] per DOF
    tail: list  # [(component, value), ...]: tip = pivot_last + Σ value × column[component]


_ROW5 = np.array([0, 1, 2, 0, 1])
#: the (u, v) columns a rotation about X, Y, Z mixes, as a slice of the column axis (Y: columns 2, 0)
_PAIR = (slice(1, 3), slice(2, None, -2), slice(0, 2))


def _compile_chain(arm: ArmDescription) -> _ChainProgram:
    frame = np.eye(4)
    steps: list = []
    rot0: np.ndarray | None = None
    pos0: np.ndarray | None = None
    for b in range(arm.n_bones):
        frame = frame @ arm.rest_local[b]
        for _, ax in arm._bone_dofs[b]:
            if rot0 is None:
                rot0, pos0 = frame[:3, :3].T[:, _ROW5].copy(), frame[_ROW5, 3].copy()
                steps.append((None, [], ax))
            else:
                r = frame[:3, :3]
                pre = None if np.array_equal(r, np.eye(3)) else r.T.copy()
                steps.append((pre, [(j, float(frame[j, 3])) for j in range(3) if frame[j, 3] != 0.0], ax))
            frame = np.eye(4)
    tip = frame @ np.array([0.0, arm.lengths[-1], 0.0, 1.0])
    assert rot0 is not None and pos0 is not None  # ArmDescription requires at least one DOF
    return _ChainProgram(rot0, pos0, steps, [(j, float(tip[j])) for j in range(3) if tip[j] != 0.0])


@overload
def _fk_t(arm: ArmDescription, ang: np.ndarray, jacobian: Literal[True]) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def _fk_t(arm: ArmDescription, ang: np.ndarray, jacobian: Literal[False]) -> tuple[np.ndarray, None]: ...
@overload
def _fk_t(arm: ArmDescription, ang: np.ndarray, jacobian: bool) -> tuple[np.ndarray, np.ndarray | None]: ...
def _fk_t(arm: ArmDescription, ang: np.ndarray, jacobian: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Fast FK on transposed angles ``ang`` (D, M) (float32 or float64, any strides).

    Returns the tip ``(5, M)`` (rows x, y, z, x, y) and, with ``jacobian``, the position Jacobian
    ``(D, 5, M)`` (same row padding); without it the tip is ``(3, M)`` and the Jacobian None.
    A handful of numpy calls per DOF, whatever M.
    """
    prog = arm._prog
    dtype = ang.dtype
    n_d, m = ang.shape
    cos = np.cos(ang)
    sin2 = np.empty((n_d, 2, 1, m), dtype)  # per DOF (s, -s), broadcast over a column's rows
    np.sin(ang, out=sin2[:, 0, 0])
    np.negative(sin2[:, 0], out=sin2[:, 1])
    rot = np.empty((3, 3, m), dtype)  # rot[c] = column c of the current frame
    rot[...] = prog.rot0[:, :3, None]
    rows = 5 if jacobian else 3
    piv = np.empty((n_d, rows, m), dtype)  # each DOF's pivot
    piv[0, :3] = prog.pos0[:3, None]
    axes: np.ndarray | None = np.empty((n_d, 5, m), dtype) if jacobian else None  # None iff not jacobian
    tmp = np.empty((3, m), dtype)
    tmp2 = np.empty((2, 3, m), dtype)
    for k, (pre, trans, ax) in enumerate(prog.steps):
        if k > 0:
            p, q = piv[k - 1, :3], piv[k, :3]
            if not trans:
                q[...] = p
            for i, (j, t) in enumerate(trans):
                np.multiply(rot[j], t, out=tmp)
                np.add(p if i == 0 else q, tmp, out=q)
            if pre is not None:
                rot = np.matmul(pre.astype(dtype), rot.reshape(3, -1)).reshape(3, 3, m)
        if axes is not None:
            axes[k, :3] = rot[ax]
        pair = rot[_PAIR[ax]]  # (2, 3, M) view: columns (u, v) -> (c u + s v, c v - s u)
        np.multiply(pair[::-1], sin2[k], out=tmp2)
        pair *= cos[k]
        pair += tmp2
    tip = np.empty((rows, m), dtype)
    tip[:3] = piv[n_d - 1, :3]
    for j, t in prog.tail:
        np.multiply(rot[j], t, out=tmp)
        tip[:3] += tmp
    if axes is None:
        return tip, None
    tip[3:] = tip[:2]
    axes[:, 3:] = axes[:, :2]
    piv[:, 3:] = piv[:, :2]
    d = tip - piv  # (D, 5, M) pivot -> tip
    jac = np.empty((n_d, 5, m), dtype)
    np.multiply(axes[:, 1:4], d[:, 2:5], out=jac[:, :3])
    jac[:, :3] -= axes[:, 2:5] * d[:, 1:4]
    jac[:, 3:] = jac[:, :2]
    return tip, jac



def _tip_error(tip: np.ndarray, goal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``err = goal - tip`` (row-padded (5, M), or (3, M) for a 3-row tip) and its norm (M,)."""
    err = goal[:len(tip)] - tip
    d2 = err[0] * err[0]
    d2 += err[1] * err[1]
    d2 += err[2] * err[2]
    return err, np.sqrt(d2, out=d2)


def _as_batch(arm: ArmDescription, angles: np.ndarray) -> tuple[bool, np.ndarray]:
    angles = np.asarray(angles)
    if angles.dtype != np.float32:
        angles = angles.astype(np.float64, copy=False)
    single = angles.ndim == 1
    if single:
        angles = angles[None]
    if angles.ndim != 2 or angles.shape[-1] != arm.n_dofs:
        raise ValueError(f"angles: expected (N, {arm.n_dofs}), got {angles.shape}")
    return single, angles


def _chain(arm: ArmDescription, angles: np.ndarray, want_frames: bool, want_jacobian: bool):
    """Shared FK core in a structure-of-arrays layout: ``rot`` is (3, 3, N) with ``rot[:, j]``
    the j-th column of every pose matrix, so each update is a few contiguous vector ops."""
    angles = np.asarray(angles)
    if angles.dtype != np.float32:
        angles = angles.astype(np.float64, copy=False)
    dtype = angles.dtype
    single = angles.ndim == 1
    if single:
        angles = angles[None]
    if angles.ndim != 2 or angles.shape[-1] != arm.n_dofs:
        raise ValueError(f"angles: expected (N, {arm.n_dofs}), got {angles.shape}")
    n = angles.shape[0]
    ang_t = np.ascontiguousarray(angles.T)
    cos, sin = np.cos(ang_t), np.sin(ang_t)
    rest = arm.rest_local.astype(dtype, copy=False)
    rot = np.empty((3, 3, n), dtype)
    rot[:] = rest[0, :3, :3, None]
    pos = np.empty((3, n), dtype)
    pos[:] = rest[0, :3, 3, None]
    frames: list[tuple[np.ndarray, np.ndarray]] = []
    n_jac = n if want_jacobian else 0
    axes = np.empty((3, arm.n_dofs, n_jac), dtype)
    pivots = np.empty((3, arm.n_dofs, n_jac), dtype)
    for b in range(arm.n_bones):
        if b > 0:
            for j in range(3):  # pos += rot @ t, skipping zero components (chains are mostly (0, L, 0))
                if arm.rest_local[b, j, 3] != 0.0:
                    pos = pos + rest[b, j, 3] * rot[:, j]
            if not arm._rest_identity[b]:
                rot = np.matmul(rest[b, :3, :3].T, rot)
            elif want_frames:
                rot = rot.copy()
        for k, ax in arm._bone_dofs[b]:
            if want_jacobian:
                axes[:, k] = rot[:, ax]
                pivots[:, k] = pos
            u, v = ((1, 2), (2, 0), (0, 1))[ax]
            c, s = cos[k], sin[k]
            cu, cv = rot[:, u], rot[:, v]
            new_u = c * cu + s * cv
            rot[:, v] = c * cv - s * cu
            rot[:, u] = new_u
        if want_frames:
            frames.append((rot, pos))
    tip = pos + arm.lengths[-1] * rot[:, 1]  # (3, N)
    jac = axes
    if want_jacobian:
        d = tip[:, None, :] - pivots  # (3, D, N)
        jac = np.empty_like(d)
        jac[0] = axes[1] * d[2] - axes[2] * d[1]
        jac[1] = axes[2] * d[0] - axes[0] * d[2]
        jac[2] = axes[0] * d[1] - axes[1] * d[0]
    return single, tip, frames, jac


def forward_kinematics(arm: ArmDescription, angles: np.ndarray) -> np.ndarray:
    """End-effector (last bone's tail) positions in armature space: ``(N, D) -> (N, 3)``."""
    single, angles = _as_batch(arm, angles)
    tip, _ = _fk_t(arm, angles.T, False)
    return tip[:, 0] if single else tip.T


def fk_jacobian(arm: ArmDescription, angles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tip positions ``(N, 3)`` and the analytic position Jacobian ``d tip / d angles`` ``(N, 3, D)``."""
    single, angles = _as_batch(arm, angles)
    tip, jac = _fk_t(arm, angles.T, True)
    tip, jac = tip[:3].T, jac[:, :3].transpose(2, 1, 0)
    return (tip[0], jac[0]) if single else (tip, jac)


def joint_positions(arm: ArmDescription, angles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every bone's head and tail in armature space, ``(N, B, 3)`` each, plus pose rotations.

    Returns ``(heads_and_tip (N, B+1, 3), pose_rotations (N, B, 3, 3))``: the heads of all bones
    followed by the last tail; ``pose_rotations[:, i]`` is Blender's ``pose_bone.matrix`` rotation.
    """
    single, tip, frames, _ = _chain(arm, angles, True, False)
    heads = np.stack([p.T for _, p in frames], axis=1)
    rots = np.stack([r.transpose(2, 0, 1) for r, _ in frames], axis=1)
    pts = np.concatenate([heads, tip.T[:, None]], axis=1)
    return (pts[0], rots[0]) if single else (pts, rots)


def angles_to_quaternions(arm: ArmDescription, angles: np.ndarray) -> np.ndarray:
    """Per-bone ``rotation_quaternion`` values (w, x, y, z): ``(N, D) -> (N, B, 4)``.

    Bones without a DOF get the identity; a bone's DOFs compose as ``q_x * q_y * q_z``.
    """
    angles = np.asarray(angles, dtype=np.float64)
    single = angles.ndim == 1
    if single:
        angles = angles[None]
    n = angles.shape[0]
    quats = np.zeros((n, arm.n_bones, 4))
    quats[:, :, 0] = 1.0
    for k in range(arm.n_dofs):
        b, ax = int(arm.dof_bone[k]), int(arm.dof_axis[k])
        h = 0.5 * angles[:, k]
        q = np.zeros((n, 4))
        q[:, 0] = np.cos(h)
        q[:, 1 + ax] = np.sin(h)
        quats[:, b] = _quat_mul(quats[:, b], q)
    return quats[0] if single else quats


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w1, x1, y1, z1 = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    w2, x2, y2, z2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ],
        axis=-1,
    )


