"""drla_core.kinematics: FK against an independent 4x4 implementation, Jacobian, solvers, serialisation."""

import json

import numpy as np
import pytest

from drla_core import kinematics as kin

ARMS = {"arm6": kin.arm6, "arm3": kin.arm3}


def _quat_matrix(q):
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def _reference_fk(arm, angles):
    """blender-notes §6 literally: Π(rest_local_i @ q_i) applied to (0, length, 0), with 4x4 matrices."""
    quats = kin.angles_to_quaternions(arm, angles)
    m = np.eye(4)
    for i in range(arm.n_bones):
        q = np.eye(4)
        q[:3, :3] = _quat_matrix(quats[i])
        m = m @ arm.rest_local[i] @ q
    return (m @ np.array([0.0, arm.lengths[-1], 0.0, 1.0]))[:3]


@pytest.fixture(params=sorted(ARMS))
def arm(request):
    return ARMS[request.param]()


def test_fk_matches_reference_product(arm):
    angles = arm.sample_angles(50, 0)
    tips = kin.forward_kinematics(arm, angles)
    for a, t in zip(angles, tips):
        np.testing.assert_allclose(t, _reference_fk(arm, a), atol=1e-12)
    np.testing.assert_allclose(kin.forward_kinematics(arm, angles[0]), tips[0])  # unbatched input
    np.testing.assert_allclose(kin.forward_kinematics(arm, np.zeros(arm.n_dofs)), [0, 0, arm.reach], atol=1e-12)


def test_joint_positions_keep_bone_lengths(arm):
    pts, rots = kin.joint_positions(arm, arm.sample_angles(20, 1))
    lengths = np.linalg.norm(np.diff(pts, axis=1), axis=2)
    np.testing.assert_allclose(lengths, np.broadcast_to(arm.lengths, (20, arm.n_bones)), atol=1e-12)
    np.testing.assert_allclose(rots @ rots.transpose(0, 1, 3, 2), np.broadcast_to(np.eye(3), rots.shape), atol=1e-12)


def test_float32_fk_is_close(arm):
    angles = arm.sample_angles(100, 2)
    np.testing.assert_allclose(kin.forward_kinematics(arm, angles.astype(np.float32)),
                               kin.forward_kinematics(arm, angles), atol=1e-5)


def test_jacobian_matches_finite_differences(arm):
    angles = arm.sample_angles(30, 3)
    tip, jac = kin.fk_jacobian(arm, angles)
    np.testing.assert_allclose(tip, kin.forward_kinematics(arm, angles))
    eps = 1e-6
    for k in range(arm.n_dofs):
        d = np.zeros(arm.n_dofs)
        d[k] = eps
        num = (kin.forward_kinematics(arm, angles + d) - kin.forward_kinematics(arm, angles - d)) / (2 * eps)
        np.testing.assert_allclose(jac[:, :, k], num, atol=1e-8)


def test_quaternions_are_unit_and_match_axes(arm):
    angles = arm.sample_angles(10, 4)
    q = kin.angles_to_quaternions(arm, angles)
    assert q.shape == (10, arm.n_bones, 4)
    np.testing.assert_allclose(np.linalg.norm(q, axis=2), 1.0, atol=1e-12)
    k = 1
    b, ax = arm.dof_bone[k], arm.dof_axis[k]
    np.testing.assert_allclose(q[:, b, 1 + ax], np.sin(angles[:, k] / 2), atol=1e-12)


def test_description_round_trips_through_json(arm):
    again = kin.ArmDescription.from_dict(json.loads(json.dumps(arm.to_dict())))
    angles = arm.sample_angles(10, 5)
    np.testing.assert_array_equal(kin.forward_kinematics(again, angles), kin.forward_kinematics(arm, angles))
    assert again.bones == arm.bones and again.dof_names() == arm.dof_names()
    np.testing.assert_array_equal(again.base, arm.base)


def test_world_local_round_trip():
    arm = kin.arm3()
    p = np.random.default_rng(0).normal(size=(5, 3))
    np.testing.assert_allclose(arm.world_to_local(arm.local_to_world(p)), p, atol=1e-12)


def test_bad_descriptions_raise():
    d = kin.arm3().to_dict()
    d["dofs"][0]["axis"] = "W"
    with pytest.raises(ValueError):
        kin.ArmDescription.from_dict(d)
    d = kin.arm3().to_dict()
    d["dofs"] = d["dofs"][::-1]
    with pytest.raises(ValueError, match="sorted"):
        kin.ArmDescription.from_dict(d)
    with pytest.raises(ValueError):
        kin.forward_kinematics(kin.arm3(), np.zeros((2, 4)))


def test_dls_reaches_targets_within_limits(arm):
    targets, _ = arm.sample_targets(300, 6)
    angles = kin.dls_solve(arm, targets, iters=60, tol=1e-6)
    assert np.all(angles >= arm.lower) and np.all(angles <= arm.upper)
    err = np.linalg.norm(kin.forward_kinematics(arm, angles) - targets, axis=1)
    assert np.mean(err < 1e-4) > 0.9


def test_dls_from_a_nearby_start_converges_quadratically(arm):
    targets, truth = arm.sample_targets(200, 7)
    start = arm.clip(truth + np.random.default_rng(0).normal(scale=0.02, size=truth.shape))
    angles = kin.dls_solve(arm, targets, start, iters=3, tol=0)
    err = np.linalg.norm(kin.forward_kinematics(arm, angles) - targets, axis=1)
    assert np.mean(err < 1e-6) > 0.97


def test_fabrik_keeps_lengths_and_reaches(arm):
    targets, _ = arm.sample_targets(200, 8)
    pts = kin.fabrik_solve(arm, targets, iters=50)
    np.testing.assert_allclose(np.linalg.norm(np.diff(pts, axis=1), axis=2),
                               np.broadcast_to(arm.lengths, (200, arm.n_bones)), atol=1e-9)
    np.testing.assert_allclose(pts[:, 0], np.broadcast_to(arm.root, (200, 3)))
    err = np.linalg.norm(pts[:, -1] - targets, axis=1)
    assert np.median(err) < 1e-4


def _odd_chain():
    """Bent bones with rolls, a bone with three DOFs, a bone without any, a DOF-less last bone."""
    specs = [
        kin.BoneSpec("A", (0.1, 0.0, 0.0), (0.1, 0.05, 0.2), 0.3, [("Z", -2.0, 2.0)]),
        kin.BoneSpec("B", (0.1, 0.05, 0.2), (0.2, 0.1, 0.45), -0.7,
                     [("X", -1.5, 1.5), ("Y", -1.0, 1.0), ("Z", -2.5, 2.5)]),
        kin.BoneSpec("C", (0.2, 0.1, 0.45), (0.2, 0.3, 0.5), 1.1, []),
        kin.BoneSpec("D", (0.2, 0.3, 0.5), (0.05, 0.35, 0.6), 0.0, [("Y", -3.0, 3.0)]),
        kin.BoneSpec("E", (0.05, 0.35, 0.6), (0.0, 0.4, 0.62), 0.2, []),
    ]
    return kin.ArmDescription.from_bone_specs("Odd", specs)


def test_general_chain_fk_and_jacobian():
    arm = _odd_chain()
    angles = arm.sample_angles(20, 9)
    tips = kin.forward_kinematics(arm, angles)
    for a, t in zip(angles, tips):
        np.testing.assert_allclose(t, _reference_fk(arm, a), atol=1e-12)
    tip, jac = kin.fk_jacobian(arm, angles)
    np.testing.assert_allclose(tip, tips, atol=1e-12)
    eps = 1e-6
    for k in range(arm.n_dofs):
        d = np.zeros(arm.n_dofs)
        d[k] = eps
        num = (kin.forward_kinematics(arm, angles + d) - kin.forward_kinematics(arm, angles - d)) / (2 * eps)
        np.testing.assert_allclose(jac[:, :, k], num, atol=1e-8)
    pts, _ = kin.joint_positions(arm, angles)
    np.testing.assert_allclose(pts[:, -1], tips, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dls_step_stays_within_limits_and_improves(arm, dtype):
    targets, truth = arm.sample_targets(200, 11)
    start = arm.clip(truth + np.random.default_rng(1).normal(scale=0.3, size=truth.shape)).astype(dtype)
    new, dist = kin.dls_step(arm, start, targets)
    assert new.dtype == dtype and new.shape == start.shape and dist.shape == (200,)
    assert np.all(new >= arm.lower) and np.all(new <= arm.upper)  # float32 limits are rounded inward
    after = np.linalg.norm(kin.forward_kinematics(arm, new.astype(np.float64)) - targets, axis=1)
    assert np.median(after) < 0.5 * np.median(dist)


def test_dls_step_with_every_joint_frozen_stays_finite():
    """All Jacobian columns zeroed (every joint blocked at a limit): no step, and no NaN or inf."""
    err = np.full((5, 4), 1e-3, dtype=np.float32)
    delta = kin._dls_delta5(np.zeros((3, 5, 4), np.float32), err, np.full(4, 1e-12, np.float32))
    assert np.all(np.isfinite(delta)) and np.all(delta == 0)
