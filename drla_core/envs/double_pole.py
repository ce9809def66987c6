"""Double-pole balancing as Stanley & Miikkulainen (2002) ran it for NEAT: Wieland's cart with two poles.

The dynamics, the inputs, the fitness and the tests follow NEAT C++ 1.2.1's ``experiments.cpp``
(``CartPole::step``, ``CartPole::rk4``, ``CartPole::performAction``, ``CartPole::evalNet``,
``pole2_epoch``; Stanley's code, copyright 2001 The University of Texas at Austin, Apache 2.0, whose
physics Faustino Gomez wrote from Wieland's equations and integrated with Runge-Kutta; read from a copy
in the search index, e.g. ``inakiFernandez/roborobo3`` ``learnFunction/NEAT/experiments.cpp``):

* poles of half-length 0.5 and 0.05 m and mass 0.1 and 0.01 kg on a 1 kg cart, gravity -9.8, hinge
  friction ``MUP = 0.000002`` (the code defines a cart friction ``MUC`` but its step never uses it, so
  neither does this one); the force is ``(output - 0.5) * 2 * 10`` N for a network output in [0, 1],
  i.e. ``10 * y`` for a tanh output ``y`` in [-1, 1] (the action here: ``y``, the force in units of 10 N);
* each action is held for two RK4 steps of ``TAU = 0.01`` s (0.02 s);
* failure: the cart beyond +-2.4 m or either pole beyond +-0.628329 rad (36 degrees);
* start: every variable 0 but the long pole at 0.07 rad (4 degrees);
* inputs: ``x / 4.8, x' / 2, theta1 / 0.52, theta1' / 2, theta2 / 0.52, theta2' / 2`` with velocities
  (Markovian), ``x / 4.8, theta1 / 0.52, theta2 / 0.52`` without (the code's constant 0.5 bias input is
  left out: DRLA's nodes have biases);
* Markovian task: reward 1 per step balanced; solved at 100,000 steps (``max_steps``);
* non-Markovian task (``velocities=False``): 1000-step episodes scored with the damping fitness
  ``0.1 f1 + 0.9 f2``, ``f1 = steps balanced / 1000`` and ``f2 = 0.75 / sum of |x| + |x'| + |theta1| +
  |theta1'|`` over the 100 steps before the episode ended (only when more than 100 steps were balanced):
  the return of an episode is that fitness (0.0001 for each balanced step, f2's part at the end). A
  champion is then tested for 100,000 steps from the start state and on the 625 start states of
  ``generalization_states`` (``pole2_epoch``): solved when it balances >= 200 of them for 1000 steps.

``step_states`` advances any number of carts at once (rows of a ``(n, 6)`` float64 array): the environment
steps one with it, ``evolve.neat_tasks`` a whole population. ``reset(options={"state": s})`` starts from ``s``
(the generalisation test's starts). The task has no randomness: every episode from one start is the same.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base.env import Env
from ..base.spaces import Box

__all__ = ["DoublePole", "DoublePoleNoVelocity", "step_states", "outside_bounds", "observe", "START_STATE",
           "generalization_states", "FAILURE_ANGLE", "damping_fitness"]

MUP = 0.000002
GRAVITY = -9.8
MASSCART = 1.0
MASSPOLE_1, LENGTH_1 = 0.1, 0.5
MASSPOLE_2, LENGTH_2 = 0.01, 0.05
FORCE_MAG = 10.0
TAU = 0.01
FAILURE_ANGLE = 0.628329  # the code's thirty_six_degrees
TRACK_EDGE = 2.4
#: x, x', theta1, theta1', theta2, theta2' at the start of an episode (``CartPole::init``).
START_STATE = (0.0, 0.0, 0.07, 0.0, 0.0, 0.0)
_SCALE_MARKOV = np.array([4.8, 2.0, 0.52, 2.0, 0.52, 2.0])
_NO_VELOCITY = [0, 2, 4]
#: Most carts ``step_states`` steps one by one in Python floats.
SCALAR_ROWS = 4


_ML = np.array([[LENGTH_1 * MASSPOLE_1], [LENGTH_2 * MASSPOLE_2]])
_MP = np.array([[0.75 * MASSPOLE_1], [0.75 * MASSPOLE_2]])
_MASS = np.array([[MASSPOLE_1], [MASSPOLE_2]])
_LEN = np.array([[LENGTH_1], [LENGTH_2]])


def _derivs(force: np.ndarray, st: np.ndarray) -> np.ndarray:
    """``CartPole::step`` for states ``st`` (6, n) (one column a cart) under ``force`` (n,): the derivatives,
    both poles at once (rows 0 and 1 of each (2, n) temporary)."""
    angles, speeds = st[2::2], st[3::2]  # theta1, theta2; theta1', theta2'
    cos, sin = np.cos(angles), np.sin(angles)
    gsin = GRAVITY * sin
    temp = MUP * speeds / _ML
    fi = (_ML * speeds * speeds * sin) + (_MP * cos * (temp + gsin))
    mi = _MASS * (1 - (0.75 * cos * cos))
    d = np.empty_like(st)
    d[0::2] = st[1::2]
    xacc = d[1] = (force + fi[0] + fi[1]) / (mi[0] + mi[1] + MASSCART)
    d[3::2] = -0.75 * (xacc * cos + gsin + temp) / _LEN
    return d


def _rk4(force: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``CartPole::rk4``: one Runge-Kutta step of ``TAU`` (the velocity rows of each slope are the state's)."""
    hh, h6 = TAU * 0.5, TAU / 6.0
    dydx = _derivs(force, y)
    dyt = _derivs(force, y + hh * dydx)
    dym = _derivs(force, y + hh * dyt)
    yt = y + TAU * dym
    dym += dyt
    dyt = _derivs(force, yt)
    return y + h6 * (dydx + dyt + 2.0 * dym)


_ML_1, _ML_2 = LENGTH_1 * MASSPOLE_1, LENGTH_2 * MASSPOLE_2
_MP_1, _MP_2 = 0.75 * MASSPOLE_1, 0.75 * MASSPOLE_2


def _derivs_one(f: float, st: list[float]) -> list[float]:
    """``_derivs`` for one cart in Python floats (a few carts step faster this way than through numpy)."""
    cos1, sin1, cos2, sin2 = math.cos(st[2]), math.sin(st[2]), math.cos(st[4]), math.sin(st[4])
    gsin1, gsin2 = GRAVITY * sin1, GRAVITY * sin2
    ml_1, ml_2 = _ML_1, _ML_2  # (the same products, computed once)
    temp_1, temp_2 = MUP * st[3] / ml_1, MUP * st[5] / ml_2
    fi_1 = (ml_1 * st[3] * st[3] * sin1) + (_MP_1 * cos1 * (temp_1 + gsin1))
    fi_2 = (ml_2 * st[5] * st[5] * sin2) + (_MP_2 * cos2 * (temp_2 + gsin2))
    mi_1 = MASSPOLE_1 * (1 - (0.75 * cos1 * cos1))
    mi_2 = MASSPOLE_2 * (1 - (0.75 * cos2 * cos2))
    xacc = (f + fi_1 + fi_2) / (mi_1 + mi_2 + MASSCART)
    return [st[1], xacc, st[3], -0.75 * (xacc * cos1 + gsin1 + temp_1) / LENGTH_1,
            st[5], -0.75 * (xacc * cos2 + gsin2 + temp_2) / LENGTH_2]


def _rk4_one(f: float, y: list[float]) -> list[float]:
    """``_rk4`` for one cart in Python floats: the same operations, element by element, without lists."""
    hh, h6 = TAU * 0.5, TAU / 6.0
    y0, y1, y2, y3, y4, y5 = y
    a0, a1, a2, a3, a4, a5 = _derivs_one(f, y)
    b0, b1, b2, b3, b4, b5 = _derivs_one(f, [y0 + hh * a0, y1 + hh * a1, y2 + hh * a2, y3 + hh * a3,
                                             y4 + hh * a4, y5 + hh * a5])
    m0, m1, m2, m3, m4, m5 = _derivs_one(f, [y0 + hh * b0, y1 + hh * b1, y2 + hh * b2, y3 + hh * b3,
                                             y4 + hh * b4, y5 + hh * b5])
    t0, t1, t2, t3, t4, t5 = _derivs_one(f, [y0 + TAU * m0, y1 + TAU * m1, y2 + TAU * m2, y3 + TAU * m3,
                                             y4 + TAU * m4, y5 + TAU * m5])
    return [y0 + h6 * (a0 + t0 + 2.0 * (m0 + b0)), y1 + h6 * (a1 + t1 + 2.0 * (m1 + b1)),
            y2 + h6 * (a2 + t2 + 2.0 * (m2 + b2)), y3 + h6 * (a3 + t3 + 2.0 * (m3 + b3)),
            y4 + h6 * (a4 + t4 + 2.0 * (m4 + b4)), y5 + h6 * (a5 + t5 + 2.0 * (m5 + b5))]


def step_states(states: np.ndarray, force: np.ndarray) -> np.ndarray:
    """The states (n, 6) after one action: ``force`` (n,) newtons held for two RK4 steps (0.02 s).

    Up to ``SCALAR_ROWS`` carts step in Python floats, more as numpy columns: the same operations in the
    same order either way (equal up to the last bit of ``sin``/``cos``)."""
    s = np.asarray(states, dtype=np.float64)
    f = np.asarray(force, dtype=np.float64).reshape(-1)
    if len(s) <= SCALAR_ROWS:
        rows = []
        for row, fr in zip(s.tolist(), f.tolist()):
            rows.append(_rk4_one(fr, _rk4_one(fr, row)))
        return np.array(rows, dtype=np.float64).reshape(s.shape)
    return _rk4(f, _rk4(f, s.T.copy())).T.copy()


def outside_bounds(states: np.ndarray) -> np.ndarray:
    """``CartPole::outsideBounds`` for each row: the cart off the track or a pole past 36 degrees."""
    s = np.asarray(states)
    return ((np.abs(s[:, 0]) > TRACK_EDGE) | (np.abs(s[:, 2]) > FAILURE_ANGLE)
            | (np.abs(s[:, 4]) > FAILURE_ANGLE))


def observe(states: np.ndarray, velocities: bool) -> np.ndarray:
    """The network inputs of each row (float32): six scaled values, or three without the velocities."""
    scaled = np.asarray(states) / _SCALE_MARKOV
    return (scaled if velocities else scaled[:, _NO_VELOCITY]).astype(np.float32)


def generalization_states() -> np.ndarray:
    """The 625 start states of ``pole2_epoch``'s generalisation test: x, x', theta1, theta1' each at 5
    levels (0.05, 0.25, 0.5, 0.75, 0.95 of +-2.16 m, +-1.35 m/s, +-3.6 and +-8.6 degrees), short pole still."""
    levels = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
    a, b, c, d = np.meshgrid(levels, levels, levels, levels, indexing="ij")
    out = np.zeros((625, 6))
    out[:, 0] = a.reshape(-1) * 4.32 - 2.16
    out[:, 1] = b.reshape(-1) * 2.70 - 1.35
    out[:, 2] = c.reshape(-1) * 0.12566304 - 0.06283152
    out[:, 3] = d.reshape(-1) * 0.30019504 - 0.15009752
    return out


def damping_fitness(balanced: int, jiggle: float) -> float:
    """``evalNet``'s non-Markovian fitness from the steps balanced and the last 100 steps' jiggle sum."""
    f = 0.1 * balanced / 1000.0
    return f + 0.9 * (0.75 / jiggle) if balanced > 100 else f


class DoublePole(Env):
    """Balance two poles of different lengths on one cart (Wieland 1991; NEAT's benchmark).

    ## Action Space
    ``Box(-1, 1, (1,), float32)``: the force on the cart in units of 10 N (normalised, as Gymnasium's checker
    asks of a Box action space).

    ## Observation Space
    ``Box(-max, max, (6,), float32)`` (float32's largest) with velocities (``x/4.8, x'/2, theta1/0.52,
    theta1'/2, theta2/0.52, theta2'/2``); ``(3,)`` without them (``velocities=False``: ``x/4.8,
    theta1/0.52, theta2/0.52``).

    ## Rewards
    With velocities 1 per step balanced. Without, 0.0001 per step balanced and, at the end of an episode
    that balanced more than 100 steps, ``0.9 * 0.75 / jiggle``: the return is the paper's damping fitness.

    ## Starting State
    The long pole at 0.07 rad, everything else 0 (deterministic: the paper's task has no random start).

    ## Episode End
    * Termination: the cart beyond +-2.4 m or a pole beyond +-36 degrees.
    * Truncation: after ``max_steps`` (100,000 with velocities, 1000 without).

    ``info["balanced"]`` is 1 on a step that ends in bounds; it is the task metric.
    """

    task_metric = "balanced"
    episode_attrs = ("state", "steps", "jiggle")

    def __init__(self, velocities: bool = True, max_steps: int | None = None) -> None:
        self.velocities = bool(velocities)
        self.max_steps = int(max_steps if max_steps is not None else (100_000 if self.velocities else 1000))
        if self.max_steps < 1:
            raise ValueError("DoublePole: max_steps must be at least 1")
        n = 6 if self.velocities else 3
        big = float(np.finfo(np.float32).max)  # (finite bounds, as Gymnasium's CartPole gives its velocities)
        self.observation_space = Box(-big, big, (n,), np.float32)
        self.action_space = Box(-1.0, 1.0, (1,), np.float32)
        self.state = np.array([START_STATE])
        self.steps = 0
        self.jiggle: list[float] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        start = (options or {}).get("state", START_STATE)
        self.state = np.array([start], dtype=np.float64).reshape(1, 6)
        self.steps = 0
        self.jiggle = []
        return observe(self.state, self.velocities)[0], {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        force = FORCE_MAG * float(np.clip(np.asarray(action, dtype=np.float64).reshape(-1)[0], -1.0, 1.0))
        self.state = step_states(self.state, np.array([force]))
        self.steps += 1
        s = self.state[0]
        self.jiggle = (self.jiggle + [abs(s[0]) + abs(s[1]) + abs(s[2]) + abs(s[3])])[-101:]
        failed = bool(outside_bounds(self.state)[0])
        truncated = not failed and self.steps >= self.max_steps
        reward = 1.0 if not failed else 0.0
        if not self.velocities:
            reward *= 0.0001
            if failed or truncated:
                balanced = self.steps - 1 if failed else self.steps
                # the 100 steps before the last one when the cart failed, the last 100 when time ran out
                window = self.jiggle[-101:-1] if failed else self.jiggle[-100:]
                if self.steps > 100 and balanced > 100:
                    reward += 0.9 * (0.75 / sum(window))
        return observe(self.state, self.velocities)[0], reward, failed, truncated, {"balanced": int(not failed)}


class DoublePoleNoVelocity(DoublePole):
    """``DoublePole(velocities=False)``: the non-Markovian task (3 inputs, damping fitness, 1000 steps)."""

    def __init__(self, max_steps: int | None = None) -> None:
        super().__init__(velocities=False, max_steps=max_steps)
