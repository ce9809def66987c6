"""CartPole: the classic control benchmark, with Gymnasium CartPole-v1 dynamics exactly.

The state is kept in Python floats (float64) and integrated with explicit Euler, as in
Gymnasium's ``cartpole.py``, so the same seed and actions give the same trajectory as
``gymnasium.make("CartPole-v1")``; only the observation is float32.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..env import Env
from ..spaces import Box, Discrete

__all__ = ["CartPole"]


class CartPole(Env):
    """Balance a pole on a cart by pushing the cart left or right.

    ## Description
    The cart-pole problem of Barto, Sutton and Anderson, "Neuronlike Adaptive Elements That Can
    Solve Difficult Learning Control Problems" (1983). A pole is attached by an un-actuated joint
    to a cart moving along a frictionless track. The pole starts upright and the goal is to keep
    it balanced by applying forces to the cart. Physics: gravity 9.8, cart mass 1.0, pole mass
    0.1, pole half-length 0.5, force 10.0, time step 0.02 s, explicit Euler integration.

    ## Action Space
    ``Discrete(2)``: ``0`` pushes the cart to the left, ``1`` pushes it to the right. The change in
    velocity is not fixed: it depends on the angle of the pole.

    ## Observation Space
    ``Box((4,), float32)``:

    | Num | Observation           | Min                 | Max               |
    |-----|-----------------------|---------------------|-------------------|
    | 0   | Cart Position         | -4.8                | 4.8               |
    | 1   | Cart Velocity         | -Inf                | Inf               |
    | 2   | Pole Angle            | ~ -0.418 rad (-24°) | ~ 0.418 rad (24°) |
    | 3   | Pole Angular Velocity | -Inf                | Inf               |

    (The velocity bounds are float32's largest finite value, as in Gymnasium.) The episode ends
    well inside the position and angle bounds: at ±2.4 and ±12°.

    ## Rewards
    ``+1`` for every step taken, the terminating step included, so the best return is 500.

    ## Starting State
    All four state variables uniform in ``(-0.05, 0.05)``, drawn from ``self.np_random``.

    ## Episode End
    1. Termination: the pole angle leaves ±12° (±0.2095 rad).
    2. Termination: the cart position leaves ±2.4 (the cart centre reaches the edge of the display).
    3. Truncation: the episode reaches ``max_episode_steps`` (500, as in CartPole-v1).
    """

    metadata = {"render_fps": 50}

    episode_attrs = ("state", "elapsed_steps")

    def __init__(self, max_episode_steps: int = 500) -> None:
        self.gravity = 9.8
        self.masscart = 1.0
        self.masspole = 0.1
        self.total_mass = self.masspole + self.masscart
        self.length = 0.5  # half the pole's length
        self.polemass_length = self.masspole * self.length
        self.force_mag = 10.0
        self.tau = 0.02  # seconds between state updates
        self.theta_threshold_radians = 12 * 2 * math.pi / 360
        self.x_threshold = 2.4
        self.max_episode_steps = int(max_episode_steps)

        high = np.array([self.x_threshold * 2, np.finfo(np.float32).max, self.theta_threshold_radians * 2,
                         np.finfo(np.float32).max], dtype=np.float32)
        self.observation_space = Box(-high, high, dtype=np.float32)
        self.action_space = Discrete(2, names=["push_left", "push_right"])
        self.state: tuple[float, float, float, float] | None = None
        self.elapsed_steps = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        low, high = -0.05, 0.05
        if options:  # Gymnasium's maybe_parse_reset_bounds: custom start bounds
            low, high = float(options.get("low", low)), float(options.get("high", high))
        x, x_dot, theta, theta_dot = (float(v) for v in self.np_random.uniform(low, high, size=(4,)))
        self.state = (x, x_dot, theta, theta_dot)
        self.elapsed_steps = 0
        return np.array(self.state, dtype=np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self.state is None:
            raise RuntimeError("CartPole: call reset() before step()")
        if action != 0 and action != 1:
            raise ValueError(f"CartPole: action must be 0 or 1, got {action!r}")
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        costheta = math.cos(theta)
        sintheta = math.sin(theta)

        # Equations of motion: https://coneural.org/florian/papers/05_cart_pole.pdf
        temp = (force + self.polemass_length * theta_dot**2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta**2 / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass

        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        self.state = (x, x_dot, theta, theta_dot)
        self.elapsed_steps += 1

        terminated = (x < -self.x_threshold or x > self.x_threshold
                      or theta < -self.theta_threshold_radians or theta > self.theta_threshold_radians)
        truncated = self.elapsed_steps >= self.max_episode_steps
        return np.array(self.state, dtype=np.float32), 1.0, terminated, truncated, {}
