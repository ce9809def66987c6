"""One NEAT genome on one double-pole cart in plain Python floats: ``neat_tasks.balance``'s last few carts.

``balance`` steps a whole population through numpy; once only a few carts are left (at the end, the one network
of the 100,000-step success test) numpy's per-call cost is all that is left of that path, and the episode goes
faster one cart at a time in Python floats: ``ScalarNetwork`` is the genome compiled once into lists (the same
packed node numbering as ``NEAT._pack``: inputs, outputs, hidden nodes in id order) and ``finish`` runs the
episode on from the cart's state: observe, network, the force clamp, two RK4 steps, the bounds and the damping
fitness's jiggle.

* The network: feed-forward genomes in topological order (``v[t] = act(sum w v[s] + b)``, exactly what
  ``NEAT.policy()``'s level iterations compute); recurrent genomes by ``neat_tasks.RecurrentPopulation``'s rule
  (every node's new value from the previous step's values, one activation per step), continuing from the row's
  current state. Weights and biases are the float32 values the batched path packs, but the sums, the
  activations and the inputs are float64 (the batched path's are float32): a trajectory may differ from the
  batched one in the last bits after the switch, so a cart near a failure edge may fail a step sooner or later.
  Results stay deterministic for a seed (the switch happens at the same row count every time).
* The physics: ``two_steps`` is ``envs.double_pole._rk4_one`` twice, fused and without lists: the same
  operations in the same order, so the states are bit for bit those of ``step_states``.

Plain loops over lists: no code is generated or executed from a genome.
"""

from __future__ import annotations

import math

import numpy as np

from ..envs.double_pole import (FAILURE_ANGLE, FORCE_MAG, GRAVITY, LENGTH_1, LENGTH_2, MASSCART, MASSPOLE_1,
                                MASSPOLE_2, MUP, TAU, TRACK_EDGE)
from ..nn.mlp import LEAKY_SLOPE
from .neat_genome import Genome

__all__ = ["ScalarNetwork", "two_steps", "finish"]

_ML_1, _ML_2 = LENGTH_1 * MASSPOLE_1, LENGTH_2 * MASSPOLE_2  # (double_pole's _ML_1, _MP_1, ...)
_MP_1, _MP_2 = 0.75 * MASSPOLE_1, 0.75 * MASSPOLE_2
_LINEAR, _TANH, _RELU, _LEAKY, _SIGMOID = range(5)
_CODES = {"linear": _LINEAR, "tanh": _TANH, "relu": _RELU, "leaky_relu": _LEAKY, "sigmoid": _SIGMOID}
_SLOPE = float(LEAKY_SLOPE)


def _f32(x: float) -> float:
    return float(np.float32(x))


class ScalarNetwork:
    """A genome as lists: ``nodes`` ``(index, bias, activation code, [(source index, weight), ...])``, in
    topological order (feed-forward) or index order (recurrent); ``values`` every node's value by packed index."""

    def __init__(self, genome: Genome, n_in: int, n_out: int, recurrent: bool,
                 state: list[float] | None = None) -> None:
        n_io = n_in + n_out
        index = {node: node for node in range(n_io)}
        index.update({node: n_io + k for k, node in enumerate(sorted(nd for nd in genome.nodes if nd >= n_io))})
        sources: dict[int, list[tuple[int, float]]] = {index[node]: [] for node in genome.nodes}
        for s, t, w, enabled in genome.conns.values():
            if enabled:
                sources[index[t]].append((index[s], _f32(w)))
        info = {index[node]: (_f32(b), _CODES[a]) for node, (b, a) in genome.nodes.items()}
        order = sorted(sources) if recurrent else _topological(sources, n_in)
        self.nodes = [(t, info[t][0], info[t][1], sorted(sources[t])) for t in order]
        self.n_in, self.n_out, self.recurrent = n_in, n_out, recurrent
        size = n_in + len(genome.nodes)
        self.values = [0.0] * size
        if state is not None:  # a recurrent row's state (RecurrentPopulation.values' row; padding beyond is 0)
            self.values[:] = [float(v) for v in state[:size]]

    def step(self, inputs: list[float]) -> list[float]:
        """The outputs for ``inputs`` (a recurrent network advances its state one activation)."""
        v = self.values
        v[:self.n_in] = inputs
        new = v[:] if self.recurrent else v  # recurrent: every node from the previous step's values
        for t, b, a, srcs in self.nodes:
            z = 0.0
            for s, w in srcs:
                z += v[s] * w
            new[t] = _activate(z + b, a)
        self.values = new
        return new[self.n_in:self.n_in + self.n_out]


def _activate(z: float, a: int) -> float:
    """``nn.mlp._activate`` on one float."""
    if a == _TANH:
        return math.tanh(z)
    if a == _LINEAR:
        return z
    if a == _RELU:
        return z if z > 0.0 else 0.0
    if a == _LEAKY:
        return max(z, z * _SLOPE)
    return 0.5 * (math.tanh(0.5 * z) + 1.0)


def _topological(sources: dict[int, list[tuple[int, float]]], n_in: int) -> list[int]:
    """The nodes of an acyclic genome, each after all its sources (lowest index first among the ready ones)."""
    pending = {t: {s for s, _ in srcs if s >= n_in} for t, srcs in sources.items()}
    order: list[int] = []
    while pending:
        ready = sorted(t for t, need in pending.items() if not need)
        if not ready:
            raise ValueError("ScalarNetwork: the feed-forward genome has a cycle")
        for t in ready:
            del pending[t]
        for need in pending.values():
            need.difference_update(ready)
        order.extend(ready)
    return order


def two_steps(f: float, y0: float, y1: float, y2: float, y3: float, y4: float, y5: float) \
        -> tuple[float, float, float, float, float, float]:
    """``_rk4_one(f, _rk4_one(f, y))``: one action held for two RK4 steps of ``TAU``, the same float operations in
    the same order (the derivatives' stage inputs for x are skipped: ``_derivs_one`` never reads them)."""
    hh, h6, tau, g, mup, mc = TAU * 0.5, TAU / 6.0, TAU, GRAVITY, MUP, MASSCART
    ml_1, ml_2, mp_1, mp_2, m_1, m_2, l_1, l_2 = _ML_1, _ML_2, _MP_1, _MP_2, MASSPOLE_1, MASSPOLE_2, LENGTH_1, LENGTH_2
    cos, sin = math.cos, math.sin
    for _ in (0, 1):
        # a: the slope at y (_derivs_one: fi_i, mi_i, xacc and the poles' accelerations)
        c1, s1, c2, s2 = cos(y2), sin(y2), cos(y4), sin(y4)
        g1, g2 = g * s1, g * s2
        t1, t2 = mup * y3 / ml_1, mup * y5 / ml_2
        xa = (f + ((ml_1 * y3 * y3 * s1) + (mp_1 * c1 * (t1 + g1)))
              + ((ml_2 * y5 * y5 * s2) + (mp_2 * c2 * (t2 + g2)))) \
            / (m_1 * (1 - (0.75 * c1 * c1)) + m_2 * (1 - (0.75 * c2 * c2)) + mc)
        p1a, p2a = -0.75 * (xa * c1 + g1 + t1) / l_1, -0.75 * (xa * c2 + g2 + t2) / l_2
        # b: at y + hh * a
        b1, b2, b3, b4, b5 = y1 + hh * xa, y2 + hh * y3, y3 + hh * p1a, y4 + hh * y5, y5 + hh * p2a
        c1, s1, c2, s2 = cos(b2), sin(b2), cos(b4), sin(b4)
        g1, g2 = g * s1, g * s2
        t1, t2 = mup * b3 / ml_1, mup * b5 / ml_2
        xb = (f + ((ml_1 * b3 * b3 * s1) + (mp_1 * c1 * (t1 + g1)))
              + ((ml_2 * b5 * b5 * s2) + (mp_2 * c2 * (t2 + g2)))) \
            / (m_1 * (1 - (0.75 * c1 * c1)) + m_2 * (1 - (0.75 * c2 * c2)) + mc)
        p1b, p2b = -0.75 * (xb * c1 + g1 + t1) / l_1, -0.75 * (xb * c2 + g2 + t2) / l_2
        # m: at y + hh * b
        m1, m2, m3, m4, m5 = y1 + hh * xb, y2 + hh * b3, y3 + hh * p1b, y4 + hh * b5, y5 + hh * p2b
        c1, s1, c2, s2 = cos(m2), sin(m2), cos(m4), sin(m4)
        g1, g2 = g * s1, g * s2
        t1, t2 = mup * m3 / ml_1, mup * m5 / ml_2
        xm = (f + ((ml_1 * m3 * m3 * s1) + (mp_1 * c1 * (t1 + g1)))
              + ((ml_2 * m5 * m5 * s2) + (mp_2 * c2 * (t2 + g2)))) \
            / (m_1 * (1 - (0.75 * c1 * c1)) + m_2 * (1 - (0.75 * c2 * c2)) + mc)
        p1m, p2m = -0.75 * (xm * c1 + g1 + t1) / l_1, -0.75 * (xm * c2 + g2 + t2) / l_2
        # t: at y + TAU * m
        e1, e2, e3, e4, e5 = y1 + tau * xm, y2 + tau * m3, y3 + tau * p1m, y4 + tau * m5, y5 + tau * p2m
        c1, s1, c2, s2 = cos(e2), sin(e2), cos(e4), sin(e4)
        g1, g2 = g * s1, g * s2
        t1, t2 = mup * e3 / ml_1, mup * e5 / ml_2
        xe = (f + ((ml_1 * e3 * e3 * s1) + (mp_1 * c1 * (t1 + g1)))
              + ((ml_2 * e5 * e5 * s2) + (mp_2 * c2 * (t2 + g2)))) \
            / (m_1 * (1 - (0.75 * c1 * c1)) + m_2 * (1 - (0.75 * c2 * c2)) + mc)
        p1e, p2e = -0.75 * (xe * c1 + g1 + t1) / l_1, -0.75 * (xe * c2 + g2 + t2) / l_2
        # y + h6 * (a + t + 2 (m + b)), the slopes' x, theta1, theta2 rows being their stage's velocities
        y0, y1, y2, y3, y4, y5 = (y0 + h6 * (y1 + e1 + 2.0 * (m1 + b1)), y1 + h6 * (xa + xe + 2.0 * (xm + xb)),
                                  y2 + h6 * (y3 + e3 + 2.0 * (m3 + b3)), y3 + h6 * (p1a + p1e + 2.0 * (p1m + p1b)),
                                  y4 + h6 * (y5 + e5 + 2.0 * (m5 + b5)), y5 + h6 * (p2a + p2e + 2.0 * (p2m + p2b)))
    return y0, y1, y2, y3, y4, y5


def finish(net: ScalarNetwork, state: list[float], first: int, max_steps: int, velocities: bool,
           jiggle: np.ndarray | None = None) -> tuple[int, int, list[float]]:
    """``balance``'s episode for one cart from ``state`` (after ``first - 1`` steps) to failure or ``max_steps``:
    (steps balanced, steps run, the last state). ``jiggle``: the row's jiggle record (``balance``'s: step ``k``
    written at ``k - 1`` while ``k`` is below its length), or None."""
    y0, y1, y2, y3, y4, y5 = state
    edge, angle, force = TRACK_EDGE, FAILURE_ANGLE, FORCE_MAG
    record = 0 if jiggle is None else len(jiggle) - 1
    net_step = net.step
    for step in range(first, max_steps + 1):
        out = net_step([y0 / 4.8, y1 / 2.0, y2 / 0.52, y3 / 2.0, y4 / 0.52, y5 / 2.0] if velocities
                       else [y0 / 4.8, y2 / 0.52, y4 / 0.52])[0]
        y0, y1, y2, y3, y4, y5 = two_steps(force * min(max(out, -1.0), 1.0), y0, y1, y2, y3, y4, y5)
        if step <= record:
            jiggle[step - 1] = abs(y0) + abs(y1) + abs(y2) + abs(y3)  # type: ignore[index]
        if abs(y0) > edge or abs(y2) > angle or abs(y4) > angle:
            return step - 1, step, [y0, y1, y2, y3, y4, y5]
    return max_steps, max_steps, [y0, y1, y2, y3, y4, y5]
