"""Learned inverse kinematics: a network maps a target position to joint angles, then DLS polishes.

``IKSolver`` holds an ``ArmDescription`` and an ``MLP`` whose input is the target position in
armature space, normalised as ``(target - root) / reach`` (the model file's ``obs_norm``), and
whose (linear) outputs are the joint angles in radians, clipped to the joint limits (so the
model file's ``act`` gives valid angles directly: its action space is the limits box).

Two ways to train it:

* ``train_self_supervised`` (fast, the default): sample reachable targets, and descend the
  differentiable forward-kinematics loss ``|FK(net(t)) - t|²`` through the analytic Jacobian
  (``loss="fk"``), or regress onto one damped Gauss-Newton step from the network's own answer
  (``loss="gauss_newton"``, a preconditioned version of the same loss). Unlike angle
  regression, neither averages the several solutions a redundant arm has for one target.
* ``train_reward`` (the reference material's way, learns from a reward signal only): the arm is
  sent candidate joint angles, first purely random, then more and more often the network's own
  (noisy) answer (a mixing schedule); each candidate's reward is a function of the end
  effector's distance to the target, and the network regresses onto the reward-weighted mean
  of the candidates: reward-weighted regression (Peters & Schaal, 2007; also the
  cross-entropy method amortised over targets). The reward function is pluggable, so it can
  come from a Blender scene instead of the numpy FK.

``solve_refined`` runs a few batched damped-least-squares steps from the network's answer: the
network gets close (millimetres to centimetres), Gauss-Newton converges quadratically from
there, and targets that still fail are retried from other starting poses.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import kinematics as kin
from ..io import plot
from ..io.png import write_png
from ..nn.mlp import MLP
from ..io.model_io import Model, load_model, save_model
from ..nn.optim import Adam
from ..base.schedules import linear_schedule
from ..base.spaces import Box

__all__ = ["IKSolver", "IKTrainResult", "distance_reward"]

RewardFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def distance_reward(arm: kin.ArmDescription) -> RewardFn:
    """The default reward: ``-distance(tip, target) / reach`` evaluated with the numpy FK.

    ``reward(targets (N, 3), angles (N, K, D)) -> (N, K)``.
    """

    def reward(targets: np.ndarray, angles: np.ndarray) -> np.ndarray:
        n, k, d = angles.shape
        tips = kin.forward_kinematics(arm, angles.reshape(n * k, d)).reshape(n, k, 3)
        return -np.linalg.norm(tips - targets[:, None, :], axis=2) / arm.reach

    return reward


def _build_atlas(arm: kin.ArmDescription, k: int, samples: int = 200_000, res: int = 24,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, int]:
    """Seed atlas: a ``res³`` grid over the cube of side ``2 × reach`` around the root; each cell
    keeps ``k`` sampled joint-angle vectors whose tip falls in it (random poses fill the rest),
    with their tips and Jacobians (so a seed's first refinement step needs no FK).
    Returns ``(angles (res³, k, D), tips (res³, k, 5), jacobians (res³, k, 5, D), low corner, cell size, res)``
    (float32; tips and Jacobians row-padded x, y, z, x, y like ``kinematics._fk_t``)."""
    rng = np.random.default_rng(seed)
    tips, angles = arm.sample_targets(samples, rng)
    low = arm.root - arm.reach
    size = 2.0 * arm.reach / res
    ijk = np.clip(((tips - low) / size).astype(np.int64), 0, res - 1)
    cell = (ijk[:, 0] * res + ijk[:, 1]) * res + ijk[:, 2]
    order = np.argsort(cell, kind="stable")
    cell_sorted = cell[order]
    rank = np.arange(samples) - np.searchsorted(cell_sorted, cell_sorted, side="left")
    keep = rank < k
    table = arm.sample_angles(res**3 * k, rng).reshape(res**3, k, arm.n_dofs)
    table[cell_sorted[keep], rank[keep]] = angles[order][keep]
    table = table.astype(np.float32).reshape(-1, arm.n_dofs)
    tip_t, jac_t = kin._fk_t(arm, table.T, True)
    return (table.reshape(res**3, k, -1), np.ascontiguousarray(tip_t.T).reshape(res**3, k, 5),
            np.ascontiguousarray(jac_t.transpose(2, 1, 0)).reshape(res**3, k, 5, -1), low, size, res)


class _ActiveClock:
    """Wall seconds spent running, not counting the time a training generator was suspended."""

    def __init__(self) -> None:
        self._total: float = 0.0
        self._since: float | None = time.perf_counter()  # None while paused

    def elapsed(self) -> float:
        return self._total + (time.perf_counter() - self._since if self._since is not None else 0.0)

    def pause(self) -> None:
        self._total, self._since = self.elapsed(), None

    def resume(self) -> None:
        self._since = time.perf_counter()


def _drain(gen: Generator[Any, None, IKTrainResult]) -> IKTrainResult:
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


@dataclass
class IKTrainResult:
    """What a training run did: steps, wall seconds, the validation error curve ``[(step, median_m, p90_m)]``,
    and the process CPU seconds (all threads; a fairer figure than wall time on a busy machine)."""

    steps: int
    seconds: float
    curve: list[tuple[int, float, float]]
    cpu_seconds: float = 0.0


def save_report(path: str | Path, curve: list[tuple[int, float, float]], summary: list[str],
                title: str = "Learned IK") -> Path:
    """A training report PNG: the validation tip error (median and p90, mm, log scale) per step, and
    ``summary`` lines (e.g. the accuracy of the network alone and with refinement)."""
    c = np.asarray(curve, dtype=np.float64).reshape(-1, 3)
    series = [plot.Series(c[:, 0], 1000 * c[:, 2], (235, 150, 150), "p90", "line", 2),
              plot.Series(c[:, 0], 1000 * c[:, 1], (200, 40, 40), "median", "line", 2)] if len(c) else []
    panels = [plot.Panel("Network alone: tip error (mm)", series, log_y=True),
              plot.Panel("Summary", text_lines=summary or ["no data"])]
    return write_png(path, plot.render_panels(panels, title))


class IKSolver:
    """Network IK for one arm, plus DLS refinement.

    Args:
        arm: the arm description (chain, rest matrices, joint limits).
        network: an existing ``MLP`` (3 inputs, ``arm.n_dofs`` linear outputs); built when None.
        hidden: hidden layers for a new network.
        seed: seed for a new network's weights and for training randomness.
    """

    def __init__(self, arm: kin.ArmDescription, network: MLP | None = None,
                 hidden: tuple[tuple[int, str], ...] = ((128, "tanh"), (128, "tanh")), seed: int = 0) -> None:
        self.arm = arm
        if network is None:
            network = MLP(3, list(hidden), arm.n_dofs, "linear", rng=seed)
            network.biases[-1][...] = arm.mid  # start at the middle of every joint range
        if network.input_size != 3 or network.output_size != arm.n_dofs:
            raise ValueError(f"IKSolver: network must map 3 -> {arm.n_dofs}, got {network!r}")
        self.network = network
        self.rng = np.random.default_rng(seed)
        self.norm_mean = arm.root.astype(np.float32)
        self.norm_std = np.full(3, arm.reach, dtype=np.float32)
        self.train_seconds = 0.0
        self.train_steps = 0
        self._atlas: tuple | None = None
        #: ``solve_refined``: targets the network misses by more than this × reach get atlas seeds at once
        #: (None: only stalled rows get seeds; on the example arms that was as accurate, and faster)
        self.seed_distance: float | None = None
        self.curve: list[tuple[int, float, float]] = []  # validation curve of the current/last training

    # ---- inference -------------------------------------------------------------------------
    def _inputs(self, targets: np.ndarray) -> np.ndarray:
        x = np.asarray(targets, dtype=np.float32).reshape(-1, 3)
        return (x - self.norm_mean) / self.norm_std

    def solve(self, targets: np.ndarray) -> np.ndarray:
        """Network only: targets ``(N, 3)`` in armature space -> joint angles ``(N, D)`` within the limits."""
        out = self.network.forward_into_cache(self._inputs(targets))
        return np.clip(out, self.arm.lower, self.arm.upper)  # float64 (limits are float64)

    def solve_refined(self, targets: np.ndarray, iters: int = 2, tol: float = 1e-4, restarts: int = 3,
                      restart_iters: int = 2, damping: float = 0.02, precise: bool = False) -> np.ndarray:
        """Network answer, then batched DLS (damped Gauss-Newton) steps until each target is within ``tol``.

        Two phases. The *fast phase* takes ``iters`` DLS steps on every target's row (a row: a
        target and a joint-angle guess) with no per-round bookkeeping beyond keeping each
        target's best answer: from the network's millimetre guess Gauss-Newton converges
        quadratically, so after two steps most targets are far within ``tol``, and carrying
        the few that are not costs less than compacting the batch every round. One FK then checks
        every row. The *careful phase* runs at most ``restart_iters`` more rounds over the few
        targets still outside ``tol`` (a shrinking row set: a row within ``tol`` leaves and ends
        its target). A network row that converged in every fast step (each step at least
        quartering its error) keeps stepping (and leaves when it stalls). Targets whose row
        stalled (the network parked it against a joint limit, or in a branch that does not
        reach: a few percent), and, if ``self.seed_distance`` is set, targets the network
        missed by more than ``seed_distance × reach``, get ``restarts`` seeds instead: the
        poses of the *seed atlas* (a grid over the workspace holding, per cell, joint angles
        whose tip lies in it, with their tips and Jacobians; built once from FK samples, ~0.2 s,
        on first use) nearest to the target, whose first step uses the stored Jacobian. A seed
        is a few centimetres from the target in a branch that reaches it and takes
        ``restart_iters + 1`` steps (the careful phase then has one round more); a target's seeds
        stop as soon as one of its rows is within ``tol``. A network row takes at most
        ``iters + restart_iters`` steps. Each target gets the best answer any of its rows reached (at worst the
        network's). The steps run in float32 (about 1e-7 m precision) unless ``precise``.
        Returns float64 ``(N, D)``.
        """
        arm = self.arm
        dtype = np.float64 if precise else np.float32
        targets = np.asarray(targets, dtype=np.float64).reshape(-1, 3)
        n = len(targets)
        out = self.solve(targets)  # (N, D) float64
        if n == 0 or iters + restart_iters <= 0:  # no refinement steps asked for: the network's answer
            return out
        iters, restart_iters = max(iters, 0), max(restart_iters, 0)
        goal = np.ascontiguousarray(targets.T[kin._ROW5], dtype=dtype)  # (5, N) row-padded
        ang = np.ascontiguousarray(out.T, dtype=dtype)  # (D, N): one column per target
        # ---- fast phase: `iters` unconditional steps on all rows, then one check
        best = best_ang = prev = stalled = None
        err = dist = jac = None
        for r in range(iters + 1):
            last = r == iters
            tip, jac = kin._fk_t(arm, ang, not last or restart_iters > 0)
            err, dist = kin._tip_error(tip, goal)
            if best is None:  # round 0: the network's answers
                best, best_ang = dist.copy(), ang  # (ang is replaced, not modified, by each step)
                if self.seed_distance is not None:
                    stalled = dist > self.seed_distance * arm.reach
            else:
                assert best_ang is not None and prev is not None
                np.copyto(best_ang, ang, where=dist < best)
                np.minimum(best, dist, out=best)
                slow = dist > 0.25 * prev  # not converging (quadratically)
                stalled = slow if stalled is None else np.logical_or(stalled, slow, out=stalled)
            if last:
                break
            assert jac is not None
            prev = dist
            ang = kin._dls_update(arm, ang, err, dist, jac, damping)
        assert best is not None and best_ang is not None and err is not None and dist is not None
        left = np.flatnonzero(best > tol) if restart_iters > 0 else best[:0].astype(np.intp)
        if left.size:
            assert jac is not None
            self._careful(targets, goal, left, ang, err, dist, jac, stalled, best, best_ang,
                          restarts, restart_iters, tol, damping)
        out = best_ang.T.astype(np.float64)
        np.clip(out, arm.lower, arm.upper, out=out)
        return out

    def _careful(self, targets: np.ndarray, goal_all: np.ndarray, left: np.ndarray, ang: np.ndarray,
                 err: np.ndarray, dist: np.ndarray, jac: np.ndarray, stalled: np.ndarray | None, best: np.ndarray,
                 best_ang: np.ndarray, restarts: int, rounds: int, tol: float, damping: float) -> None:
        """``solve_refined``'s careful phase over the targets ``left`` (their rows' FK already done:
        ``ang``, ``err``, ``dist``, ``jac`` over all targets); updates ``best`` / ``best_ang`` in place."""
        arm = self.arm
        sg = left[:0]
        if stalled is not None and restarts > 0:
            st = stalled[left]
            sg, left = left[st], left[~st]  # stalled targets: seeds replace the network row
        gid = left
        ang, err, dist, jac = ang[:, gid], err[:, gid], dist[gid], jac[:, :, gid]
        net_row: np.ndarray | None = None
        if sg.size:
            rows = (ang, err, dist, jac, gid, None)
            ang, err, dist, jac, gid, net_row = self._add_seeds(rows, targets, goal_all, sg, restarts)
        goal = goal_all[:, gid]
        if net_row is not None:  # seeds: their first step needs no FK (stored Jacobian); they get one round more
            rounds += 1
        for s in range(rounds):
            prev = dist
            ang = kin._dls_update(arm, ang, err, dist, jac, damping)
            last = s == rounds - 1
            tip, jac_next = kin._fk_t(arm, ang, not last)
            err, dist = kin._tip_error(tip, goal)
            li = np.flatnonzero(dist < best[gid])
            if li.size:
                if li.size > 1 and net_row is not None:  # several rows per target: smallest error written last
                    li = li[np.argsort(-dist[li])]
                lg = gid[li]
                best_ang[:, lg] = ang[:, li]
                best[lg] = dist[li]
            if last or jac_next is None:
                break
            jac = jac_next
            keep = best[gid] > tol  # a row within tol ends its target (and its target's other rows)
            if restarts > 0:  # a network row that stalls leaves (seeds had their chance in the fast phase)
                stall = dist > 0.25 * prev
                if net_row is not None:
                    stall &= net_row
                keep &= ~stall
            idx = np.flatnonzero(keep)
            if idx.size == 0:
                break
            if idx.size < gid.size:
                ang, err, dist, jac = ang[:, idx], err[:, idx], dist[idx], jac[:, :, idx]
                gid, goal = gid[idx], goal[:, idx]
                if net_row is not None:
                    net_row = net_row[idx]

    def _add_seeds(self, rows: tuple, targets: np.ndarray, goal_all: np.ndarray, sg: np.ndarray,
                   k: int) -> tuple:
        """Append to ``rows = (ang, err, dist, jac, gid, net_row)`` the seeds of targets ``sg``: the
        ``k`` atlas poses nearest to each, with their stored tips and Jacobians (so their first
        step needs no FK)."""
        ang, err, dist, jac, gid, net_row = rows
        dtype = ang.dtype
        s_ang, s_tip, s_jac = self._nearest_seeds(targets[sg], k)
        rep = np.repeat(sg, s_ang.shape[0] // sg.size)
        s_err, s_dist = kin._tip_error(s_tip.T.astype(dtype, copy=False), goal_all[:, rep])
        if net_row is None:
            net_row = np.ones(gid.size, dtype=bool)
        return (np.concatenate([ang, s_ang.T.astype(dtype, copy=False)], axis=1),
                np.concatenate([err, s_err], axis=1),
                np.concatenate([dist, s_dist]),
                np.concatenate([jac, s_jac.transpose(2, 1, 0).astype(dtype, copy=False)], axis=2),
                np.concatenate([gid, rep]),
                np.concatenate([net_row, np.zeros(rep.size, dtype=bool)]))

    def _atlas_for(self, k: int) -> tuple:
        if self._atlas is None or self._atlas[0].shape[1] < k:
            self._atlas = _build_atlas(self.arm, max(k, 8))
        return self._atlas

    def _nearest_seeds(self, targets: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``k`` atlas entries of each target's cell whose tips are nearest to it, flat over
        targets then seeds: ``(angles (N k, D), tips (N k, 5), jacobians (N k, 5, D))``."""
        table, tips, jacs, low, size, res = self._atlas_for(k)
        per = table.shape[1]
        q = ((targets - low) * (1.0 / size)).astype(np.int64)
        np.clip(q, 0, res - 1, out=q)
        cell = q @ np.array([res * res, res, 1])
        d = tips[cell][:, :, :3] - targets[:, None, :].astype(np.float32)
        d2 = np.einsum("nki,nki->nk", d, d)
        k = min(k, per)
        pick = np.argsort(d2, axis=1)[:, :k]
        pick += (cell * per)[:, None]
        pick = pick.ravel()
        n_d = table.shape[2]
        return (np.take(table.reshape(-1, n_d), pick, axis=0), np.take(tips.reshape(-1, 5), pick, axis=0),
                np.take(jacs.reshape(-1, 5 * n_d), pick, axis=0).reshape(-1, 5, n_d))

    def atlas_seeds(self, targets: np.ndarray, k: int) -> np.ndarray:
        """``(N, k, D)`` joint angles whose tips lie in the same atlas cell as each target, nearest first
        (random poses where a cell holds fewer); the atlas is built on first use."""
        targets = np.asarray(targets, np.float64).reshape(-1, 3)
        angles, _, _ = self._nearest_seeds(targets, k)
        return angles.astype(np.float64).reshape(len(targets), -1, self.arm.n_dofs)

    def errors(self, targets: np.ndarray, angles: np.ndarray) -> np.ndarray:
        """End-effector distance to each target, metres."""
        return np.linalg.norm(kin.forward_kinematics(self.arm, angles) - np.asarray(targets).reshape(-1, 3), axis=1)

    # ---- training: self-supervised through the FK ---------------------------------------------
    def train_self_supervised(self, steps: int = 32000, batch_size: int = 512, lr: float = 1e-2,
                              loss: str = "fk", max_seconds: float | None = None, eval_every: int = 1000,
                              hint_threshold: float | None = None, hint_start: float = 0.3, hint_weight: float = 0.2,
                              huber: float | None = 0.01,
                              callback: Callable[[int, float], bool | None] | None = None) -> IKTrainResult:
        """Train on targets made by FK of random joint angles (no labels needed, no Blender needed).

        Args:
            steps: Adam steps (the learning rate decays to ~0 over them, or over ``max_seconds``).
            batch_size: targets per step.
            lr: initial learning rate.
            loss: ``"fk"``: gradient of ``mean |FK(θ) - t|² / reach²`` via the analytic Jacobian;
                ``"gauss_newton"``: regress onto ``θ + Δθ_DLS`` (one damped Gauss-Newton step).
            max_seconds: wall-clock bound; training stops at whichever of steps/time comes first.
            eval_every: steps between validation points in the returned curve.
            huber: with ``loss="fk"``, a Huber loss on the distance (quadratic below ``huber × reach``,
                linear above), so targets in a hopeless branch do not dominate the batch. None = L2.
            hint_threshold: after ``hint_start`` of training, targets the network still misses by
                more than ``hint_threshold × reach`` with an output beyond a joint limit are also
                pulled (weight ``hint_weight``) toward the joint angles that
                generated them (a known solution, usually of another branch: a yaw beyond its
                limit needs the over-the-top pose), which the network otherwise parks against a joint
                limit where no local refinement recovers them. None = off (the default: on the
                example arms it raised the median error more than it cut the refinement's restarts).
            callback: ``callback(step, progress)``; returning False stops.
        """
        return _drain(self.iter_self_supervised(steps, batch_size, lr, loss, max_seconds, eval_every, hint_threshold,
                                                hint_start, hint_weight, huber, callback))

    def iter_self_supervised(self, steps: int = 32000, batch_size: int = 512, lr: float = 1e-2, loss: str = "fk",
                             max_seconds: float | None = None, eval_every: int = 1000,
                             hint_threshold: float | None = None, hint_start: float = 0.3, hint_weight: float = 0.2,
                             huber: float | None = 0.01,
                             callback: Callable[[int, float], bool | None] | None = None
                             ) -> Generator[tuple[int, float], None, IKTrainResult]:
        """``train_self_supervised`` one step at a time: yields ``(step, progress)`` after each step and
        returns the ``IKTrainResult`` (``StopIteration.value``). For time-boxed callers (Blender's
        modal timer): ``max_seconds`` counts only the time spent inside the generator, not the
        time it was suspended. ``curve`` in the result is also readable live as ``self.curve``."""
        if loss not in ("fk", "gauss_newton"):
            raise ValueError("loss must be 'fk' or 'gauss_newton'")
        arm, net = self.arm, self.network
        opt = Adam(net.params, lr=lr)
        val_targets, _ = arm.sample_targets(1000, 12345)
        curve: list[tuple[int, float, float]] = []
        self.curve = curve
        clock = _ActiveClock()
        cpu_start = time.process_time()
        pool, pool_angles = arm.sample_targets(min(steps * batch_size, 200_000), self.rng)  # one FK call
        step = 0
        for step in range(1, steps + 1):
            elapsed = clock.elapsed()
            progress = step / steps if max_seconds is None else max(step / steps, elapsed / max_seconds)
            if progress > 1.0:
                break
            opt.lr = lr * (1.0 - progress) ** 2 + lr * 1e-3
            idx = self.rng.integers(0, len(pool), batch_size)
            targets = pool[idx]
            y = net.forward_train(self._inputs(targets))
            theta = np.clip(y.astype(np.float64), arm.lower, arm.upper)
            inside = (y >= arm.lower) & (y <= arm.upper)
            if loss == "fk":
                tip, jac = kin.fk_jacobian(arm, theta)
                err = (tip - targets) / arm.reach**2
                grad = 2.0 * np.einsum("ni,nid->nd", err, jac) / batch_size
                miss = np.sqrt(np.einsum("ni,ni->n", err, err)) * arm.reach
                if huber is not None:  # Huber on the distance: far-off targets stop dominating the batch
                    grad *= (huber / np.maximum(miss, huber))[:, None]
            else:
                new, miss = kin.dls_step(arm, theta, targets)
                grad = (theta - new) / batch_size
                miss = miss / arm.reach
            if hint_threshold is not None and progress >= hint_start:
                far = (miss > hint_threshold) & ~inside.all(axis=1)  # missed, and parked on a limit
                if far.any():
                    grad[far] += hint_weight * (theta[far] - pool_angles[idx[far]]) / batch_size
            # clipped outputs: pass the gradient only where it pulls back inside the limits
            grad = np.where(inside | ((y > arm.upper) & (grad > 0)) | ((y < arm.lower) & (grad < 0)), grad, 0.0)
            net.backward(grad.astype(np.float32))
            opt.step(net.grad)
            if eval_every and step % eval_every == 0:
                e = self.errors(val_targets, self.solve(val_targets))
                curve.append((step, float(np.median(e)), float(np.percentile(e, 90))))
            self.train_steps += 1
            if callback is not None and callback(step, progress) is False:
                break
            clock.pause()
            yield step, progress
            clock.resume()
        seconds = clock.elapsed()
        self.train_seconds += seconds
        return IKTrainResult(step, seconds, curve, time.process_time() - cpu_start)

    # ---- training: from the reward only -------------------------------------------------------
    def train_reward(self, steps: int = 3000, batch_size: int = 256, candidates: int = 16, lr: float = 3e-3,
                     sigma: tuple[float, float] = (0.5, 0.05), mix_fraction: float = 0.5, temperature: float = 0.02,
                     reward_fn: RewardFn | None = None, max_seconds: float | None = None,
                     eval_every: int = 250) -> IKTrainResult:
        """Reward-weighted regression with the reference material's random→network mixing schedule.

        Each step draws ``batch_size`` targets; for each, ``candidates`` joint-angle vectors are
        sent to the arm: with probability ``p_net`` (0 → 1 linearly over the first
        ``mix_fraction`` of training) the network's answer plus Gaussian noise (std ``sigma``
        radians, shrinking from ``sigma[0]`` to ``sigma[1]``), otherwise uniform random angles.
        ``reward_fn(targets, candidates) -> rewards`` (default: minus the distance / reach) is the
        only feedback; the network regresses onto ``Σ softmax(r / temperature) · candidate``.
        """
        return _drain(self.iter_reward(steps, batch_size, candidates, lr, sigma, mix_fraction, temperature,
                                       reward_fn, max_seconds, eval_every))

    def iter_reward(self, steps: int = 3000, batch_size: int = 256, candidates: int = 16, lr: float = 3e-3,
                    sigma: tuple[float, float] = (0.5, 0.05), mix_fraction: float = 0.5, temperature: float = 0.02,
                    reward_fn: RewardFn | None = None, max_seconds: float | None = None,
                    eval_every: int = 250) -> Generator[tuple[int, float], None, IKTrainResult]:
        """``train_reward`` one step at a time (see ``iter_self_supervised``)."""
        arm, net = self.arm, self.network
        reward_fn = reward_fn or distance_reward(arm)
        opt = Adam(net.params, lr=lr)
        val_targets, _ = arm.sample_targets(1000, 12345)
        curve: list[tuple[int, float, float]] = []
        self.curve = curve
        clock = _ActiveClock()
        step = 0
        for step in range(1, steps + 1):
            elapsed = clock.elapsed()
            progress = step / steps if max_seconds is None else max(step / steps, elapsed / max_seconds)
            if progress > 1.0:
                break
            opt.lr = lr * (1.0 - 0.9 * progress)
            p_net = linear_schedule(0.0, 1.0, mix_fraction, progress)
            noise = sigma[0] + (sigma[1] - sigma[0]) * progress
            targets, _ = arm.sample_targets(batch_size, self.rng)
            y = net.forward_train(self._inputs(targets)).astype(np.float64)
            cand = arm.sample_angles(batch_size * candidates, self.rng).reshape(batch_size, candidates, -1)
            use_net = self.rng.random((batch_size, candidates)) < p_net
            explore = np.clip(y[:, None, :] + noise * self.rng.standard_normal(cand.shape), arm.lower, arm.upper)
            cand = np.where(use_net[:, :, None], explore, cand)
            reward = np.asarray(reward_fn(targets, cand), dtype=np.float64)
            w = np.exp((reward - reward.max(axis=1, keepdims=True)) / temperature)
            w /= w.sum(axis=1, keepdims=True)
            goal = np.einsum("nk,nkd->nd", w, cand)
            net.backward(((y - goal) / batch_size).astype(np.float32))
            opt.step(net.grad)
            if eval_every and step % eval_every == 0:
                e = self.errors(val_targets, self.solve(val_targets))
                curve.append((step, float(np.median(e)), float(np.percentile(e, 90))))
            self.train_steps += 1
            clock.pause()
            yield step, progress
            clock.resume()
        seconds = clock.elapsed()
        self.train_seconds += seconds
        return IKTrainResult(step, seconds, curve)

    # ---- model file ---------------------------------------------------------------------------
    def to_model(self, meta: dict[str, Any] | None = None) -> Any:
        """A ``model_io.Model`` of kind "ik": ``predict(target)`` gives the joint angles; ``extra["arm"]``
        holds the arm description."""
        arm = self.arm
        obs_space = Box(self.norm_mean - arm.reach, self.norm_mean + arm.reach, (3,))
        act_space = Box(arm.lower, arm.upper, (arm.n_dofs,))
        info = {"train_seconds": round(self.train_seconds, 3), "train_steps": self.train_steps, **(meta or {})}
        extra = {
            "arm": arm.to_dict(),
            "ik": {"input": "target position in armature space (metres)",
                   "output": "joint angles in radians, clipped to the limits", "dofs": arm.dof_names()},
        }
        return Model(self.network.copy(), obs_space, act_space, kind="ik",
                     obs_norm={"mean": self.norm_mean, "std": self.norm_std}, meta=info, extra=extra)

    @classmethod
    def from_model(cls, model: Any) -> IKSolver:
        if getattr(model, "kind", None) != "ik" or "arm" not in model.extra:
            raise ValueError("IKSolver.from_model: not an IK model (kind 'ik' with extra['arm'] needed)")
        arm = kin.ArmDescription.from_dict(model.extra["arm"])
        solver = cls(arm, network=model.network)
        if model.obs_norm is not None:
            solver.norm_mean = np.asarray(model.obs_norm["mean"], np.float32)
            solver.norm_std = np.asarray(model.obs_norm["std"], np.float32)
        solver.train_seconds = float(model.meta.get("train_seconds", 0.0))
        solver.train_steps = int(model.meta.get("train_steps", 0))
        return solver

    def save(self, path: str | Path, meta: dict[str, Any] | None = None) -> Path:
        return save_model(path, self.to_model(meta))

    @classmethod
    def load(cls, path: str | Path) -> IKSolver:
        return cls.from_model(load_model(path))
