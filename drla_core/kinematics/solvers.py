"""IK solvers on the batched FK: damped least squares (``dls_step``, ``dls_solve``) and FABRIK."""

from __future__ import annotations


import numpy as np

from .chain import _ROW5, ArmDescription, _as_batch, _fk_t, _tip_error, joint_positions

def _dls_delta5(jac: np.ndarray, err: np.ndarray, lam2: np.ndarray) -> np.ndarray:
    """``Jᵀ (J Jᵀ + λ² I)⁻¹ e`` with row-padded ``jac`` (D, 5, M), ``err`` (5, M), ``lam2`` (M,) -> (D, M).

    The symmetric 3x3 normal matrix is solved per column by cofactors, on stacked rows."""
    m = err.shape[1]
    dtype = err.dtype
    j3 = jac[:, :3]
    dg = np.empty((5, m), dtype)  # diagonal, padded: (m00, m11, m22, m00, m11)
    of = np.empty((5, m), dtype)  # off-diagonal, padded: (m01, m12, m20, m01, m12)
    np.einsum("dim,dim->im", j3, j3, out=dg[:3])
    np.einsum("dim,dim->im", j3, jac[:, 1:4], out=of[:3])
    dg[:3] += lam2
    dg[3:] = dg[:2]
    of[3:] = of[:2]
    cd = dg[1:4] * dg[2:5]  # diagonal cofactors
    cd -= of[1:4] * of[1:4]
    co = np.empty((5, m), dtype)  # off-diagonal cofactors (c01, c12, c20), padded
    np.multiply(of[2:5], of[1:4], out=co[:3])
    co[:3] -= of[:3] * dg[2:5]
    co[3:] = co[:2]
    det = dg[0] * cd[0]
    det += of[0] * co[0]
    det += of[2] * co[2]
    # SPD, so det > 0 in exact arithmetic; float32 can round it to 0 when every joint is frozen
    np.maximum(det, np.finfo(dtype).tiny, out=det)
    x = cd * err[:3]
    x += co[:3] * err[1:4]
    x += co[2:5] * err[2:5]
    x /= det
    return np.einsum("dim,im->dm", j3, x)


def _limits(arm: ArmDescription, dtype) -> tuple[np.ndarray, np.ndarray]:
    cache = arm.__dict__.setdefault("_limit_cache", {})
    key = np.dtype(dtype).char
    if key not in cache:  # rounded inward, so that clipped float32 angles are within the float64 limits
        lo, hi = arm.lower.astype(dtype), arm.upper.astype(dtype)
        lo = np.where(lo < arm.lower, np.nextafter(lo, lo.dtype.type(np.inf)), lo)
        hi = np.where(hi > arm.upper, np.nextafter(hi, hi.dtype.type(-np.inf)), hi)
        cache[key] = (lo[:, None], hi[:, None])
    return cache[key]


def _dls_update(arm: ArmDescription, ang: np.ndarray, err: np.ndarray, dist: np.ndarray, jac: np.ndarray,
                damping: float = 0.02, max_step: float = 0.2) -> np.ndarray:
    """One clamped, damped least-squares step on transposed data: ``ang`` (D, M), ``err`` (5, M) target
    minus tip (modified in place), ``dist`` (M,) its norm, ``jac`` (D, 5, M) -> new angles (D, M)."""
    reach = arm.reach
    lim = max_step * reach
    if dist.size and dist.max() > lim:
        err *= np.minimum(1.0, lim / np.maximum(dist, 1e-30))
    lam2 = np.minimum(dist * (10.0 * damping), damping * reach)
    lam2 *= lam2
    lam2 += 1e-12
    lo, hi = _limits(arm, ang.dtype)
    # joints at a limit that the descent direction (Jᵀe) pushes further out are frozen (their
    # Jacobian column zeroed), so the other joints compensate instead of the clip eating the step
    at_lo, at_hi = ang <= lo, ang >= hi
    blocked = None
    if at_lo.any() or at_hi.any():
        grad = np.einsum("dim,im->dm", jac[:, :3], err[:3])
        blocked = at_lo & (grad < 0)
        blocked |= at_hi & (grad > 0)
    if blocked is not None and blocked.any():
        free = ~blocked
        free = free.astype(ang.dtype)
        new = _dls_delta5(jac * free[:, None, :], err, lam2)
        new *= free
    else:
        new = _dls_delta5(jac, err, lam2)
    new += ang
    np.maximum(new, lo, out=new)
    np.minimum(new, hi, out=new)
    return new



# ---- solvers -------------------------------------------------------------------------------
def dls_step(
    arm: ArmDescription, angles: np.ndarray, targets: np.ndarray, damping: float = 0.02, max_step: float = 0.2
) -> tuple[np.ndarray, np.ndarray]:
    """One damped-least-squares (Levenberg-Marquardt) step; returns ``(new_angles, error_before (N,))``.

    ``dθ = Jᵀ (J Jᵀ + λ² I)⁻¹ e`` with the error ``e`` clamped to ``max_step × reach`` (Buss'
    clamped DLS) and ``λ = damping × reach × min(1, |e| / (0.1 reach))`` so that near the
    solution the step becomes Gauss-Newton (quadratic convergence). The normal equations are
    3x3 (position targets), solved per target by cofactors. Joints sitting at a limit that the
    descent direction ``Jᵀe`` pushes further out are frozen (left out of the solve), so the
    others compensate; angles are clipped to the limits afterwards. ``angles``
    ``(N, D)`` float64, or float32 for a faster, float32-precise step.
    """
    single, angles = _as_batch(arm, angles)
    ang_t = angles.T
    tip, jac = _fk_t(arm, ang_t, True)
    goal = np.asarray(targets, dtype=ang_t.dtype).reshape(-1, 3).T[_ROW5]
    err, dist = _tip_error(tip, goal)
    new = _dls_update(arm, ang_t, err, dist, jac, damping, max_step).T
    return (new[0], dist[0]) if single else (new, dist)


def dls_solve(
    arm: ArmDescription,
    targets: np.ndarray,
    init: np.ndarray | None = None,
    iters: int = 50,
    tol: float = 1e-5,
    damping: float = 0.02,
    max_step: float = 0.2,
) -> np.ndarray:
    """Batched damped-least-squares IK for positions (armature space): ``(N, 3) -> (N, D)``.

    Starts from ``init`` (default: the middle of every joint range) and stops early once every
    target is within ``tol``; targets already converged keep being updated (cheaper than masking
    for the batch sizes we use, and harmless: a converged step is tiny).
    """
    targets = np.asarray(targets, dtype=np.float64).reshape(-1, 3)
    n = targets.shape[0]
    angles = np.broadcast_to(arm.mid, (n, arm.n_dofs)).copy() if init is None else np.array(init, np.float64)
    for _ in range(iters):
        new, dist = dls_step(arm, angles, targets, damping, max_step)
        if dist.max() < tol:
            break
        angles = new
    return angles


def fabrik_solve(
    arm: ArmDescription, targets: np.ndarray, init: np.ndarray | None = None, iters: int = 20, tol: float = 1e-5
) -> np.ndarray:
    """Batched FABRIK (Aristidou & Lasenby 2011) on the joint positions; returns ``(N, B+1, 3)`` points.

    Plain FABRIK: ball joints, no hinge axes, no limits (the reason learned IK or DLS is used
    for the real arm); the root head stays fixed. The tip is ``points[:, -1]``. Comparison only.
    """
    targets = np.asarray(targets, dtype=np.float64).reshape(-1, 3)
    n = targets.shape[0]
    angles = np.broadcast_to(arm.mid, (n, arm.n_dofs)) if init is None else init
    pts, _ = joint_positions(arm, angles)
    pts = pts.copy()
    seg = arm.lengths
    root = pts[:, 0].copy()
    m = pts.shape[1]
    for _ in range(iters):
        if np.max(np.linalg.norm(pts[:, -1] - targets, axis=1)) < tol:
            break
        pts[:, -1] = targets
        for i in range(m - 2, -1, -1):
            d = pts[:, i] - pts[:, i + 1]
            pts[:, i] = pts[:, i + 1] + d * (seg[i] / np.maximum(np.linalg.norm(d, axis=1), 1e-12))[:, None]
        pts[:, 0] = root
        for i in range(m - 1):
            d = pts[:, i + 1] - pts[:, i]
            pts[:, i + 1] = pts[:, i] + d * (seg[i] / np.maximum(np.linalg.norm(d, axis=1), 1e-12))[:, None]
    return pts
