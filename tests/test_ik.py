"""drla_core.rl.ik: learned IK trains (both ways), refinement converges, model file round trip."""

import numpy as np
import pytest

from drla_core import kinematics as kin
from drla_core.rl.ik import IKSolver, distance_reward


@pytest.fixture(scope="module")
def trained_arm3():
    solver = IKSolver(kin.arm3(), hidden=((64, "tanh"), (64, "tanh")), seed=1)
    result = solver.train_self_supervised(steps=4000, batch_size=256, lr=3e-3, huber=None, eval_every=1000)
    return solver, result


def test_untrained_solver_answers_within_limits():
    arm = kin.arm6()
    solver = IKSolver(arm, seed=0)
    targets, _ = arm.sample_targets(50, 0)
    angles = solver.solve(targets)
    assert angles.shape == (50, arm.n_dofs) and angles.dtype == np.float64
    assert np.all(angles >= arm.lower) and np.all(angles <= arm.upper)
    with pytest.raises(ValueError):
        IKSolver(arm, network=IKSolver(kin.arm3()).network)


@pytest.mark.slow
def test_self_supervised_training_gets_close(trained_arm3):
    solver, result = trained_arm3
    assert result.steps == 4000 and len(result.curve) == 4
    targets, _ = solver.arm.sample_targets(500, 99)
    err = solver.errors(targets, solver.solve(targets))
    assert np.median(err) < 0.10  # 10 cm after a few seconds; the benchmark network gets ~1-3 cm
    assert result.curve[-1][1] < result.curve[0][1]


@pytest.mark.slow
def test_refinement_converges(trained_arm3):
    solver, _ = trained_arm3
    targets, _ = solver.arm.sample_targets(500, 98)
    raw = solver.errors(targets, solver.solve(targets))
    refined = solver.errors(targets, solver.solve_refined(targets, iters=3))
    assert np.mean(refined < 1e-3) >= 0.99
    assert np.mean(refined < 1e-4) >= 0.98  # the default tol: rows stop once within it
    assert np.median(refined) < 5e-5 and np.median(raw) > 1e-3


def test_reward_training_beats_random():
    arm = kin.arm3()
    solver = IKSolver(arm, hidden=((64, "tanh"), (64, "tanh")), seed=2)
    targets, _ = arm.sample_targets(500, 97)
    random_err = solver.errors(targets, arm.sample_angles(500, 3))
    calls = []

    def reward(t, cand):  # the only feedback the learner gets
        calls.append(cand.shape)
        return distance_reward(arm)(t, cand)

    solver.train_reward(steps=400, batch_size=128, candidates=16, reward_fn=reward, eval_every=0)
    err = solver.errors(targets, solver.solve(targets))
    assert len(calls) == 400 and calls[0] == (128, 16, arm.n_dofs)
    assert np.median(err) < 0.6 * np.median(random_err)


def test_model_file_round_trip(tmp_path, trained_arm3):
    model_io = pytest.importorskip("drla_core.io.model_io")
    solver, _ = trained_arm3
    path = solver.save(tmp_path / "arm3_ik.json", meta={"note": "test"})
    again = IKSolver.load(path)
    targets, _ = solver.arm.sample_targets(100, 96)
    np.testing.assert_array_equal(again.solve(targets), solver.solve(targets))
    np.testing.assert_array_equal(again.arm.rest_local, solver.arm.rest_local)
    model = model_io.load_model(path)
    assert model.kind == "ik" and model.meta["note"] == "test"
    np.testing.assert_allclose(model.act(targets), solver.solve(targets).astype(np.float32), atol=1e-6)
    with pytest.raises(ValueError):
        IKSolver.from_model(model_io.Model(solver.network, model.observation_space, model.action_space, kind="mlp"))


def test_iter_self_supervised_steps_like_train_and_pauses_without_losing_time(monkeypatch):
    """The generator steps exactly like ``train_self_supervised``, and the time it spends suspended
    (Blender redrawing between modal ticks) counts neither in its seconds nor against its
    ``max_seconds``: on a stand-in clock that moves 1 ms per reading and jumps 100 s during a pause."""
    import types

    from drla_core.rl import ik as ik_mod
    from drla_core import kinematics as kin
    from drla_core.rl.ik import IKSolver

    clock = {"now": 0.0}

    def perf_counter():
        clock["now"] += 0.001
        return clock["now"]

    monkeypatch.setattr(ik_mod, "time", types.SimpleNamespace(perf_counter=perf_counter,
                                                               process_time=ik_mod.time.process_time))
    arm = kin.arm3()
    a, b = IKSolver(arm, hidden=((16, "tanh"),), seed=3), IKSolver(arm, hidden=((16, "tanh"),), seed=3)
    ra = a.train_self_supervised(steps=60, batch_size=32, eval_every=20)
    gen = b.iter_self_supervised(steps=60, batch_size=32, eval_every=20, max_seconds=30.0)
    seen = []
    try:
        while True:
            seen.append(next(gen)[0])
            if len(seen) == 10:
                clock["now"] += 100.0  # suspended: not training time
    except StopIteration as stop:
        rb = stop.value
    assert seen == list(range(1, 61)) and rb.steps == ra.steps == 60  # the 100 s did not use up the 30 s
    assert b.train_steps == a.train_steps == 60 and len(b.curve) == 3
    np.testing.assert_array_equal(a.network.params, b.network.params)
    assert rb.seconds < 1.0 and ra.seconds < 1.0  # a few hundred 1 ms readings, not the 100 s pause
    gen = a.iter_reward(steps=5, batch_size=8, candidates=4, eval_every=0)
    assert [s for s, _ in gen] == [1, 2, 3, 4, 5] and a.train_steps == 65


def test_zero_refinement_steps_is_the_network_alone():
    from drla_core import kinematics as kin
    from drla_core.rl.ik import IKSolver

    solver = IKSolver(kin.arm3(), seed=0)
    targets, _ = solver.arm.sample_targets(20, 1)
    np.testing.assert_array_equal(solver.solve_refined(targets, iters=0, restart_iters=0), solver.solve(targets))
