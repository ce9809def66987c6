"""Optimisers over one flat float32 parameter vector, updated in place.

The vector is usually ``MLP.params``; updating it in place keeps the network's per-layer
views valid. Moment buffers are allocated once, so a step allocates nothing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["Adam", "SGD", "Optimizer"]


class Optimizer:
    """Base: holds the parameter vector and a learning rate; ``step(grad)`` updates in place."""

    def __init__(self, params: np.ndarray, lr: float) -> None:
        if not isinstance(params, np.ndarray) or params.dtype != np.float32 or params.ndim != 1:
            raise TypeError("optimisers work on one flat float32 parameter vector (MLP.params)")
        self.params = params
        self.lr = float(lr)
        self._tmp = np.empty_like(params)

    def step(self, grad: np.ndarray) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def load_state_dict(self, state: dict[str, Any]) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent with optional (heavy-ball, torch-style) momentum."""

    def __init__(self, params: np.ndarray, lr: float = 1e-2, momentum: float = 0.0) -> None:
        super().__init__(params, lr)
        self.momentum = float(momentum)
        self.velocity = np.zeros_like(params)

    def step(self, grad: np.ndarray) -> None:
        if self.momentum:
            self.velocity *= self.momentum
            self.velocity += grad
            grad = self.velocity
        np.multiply(grad, self.lr, out=self._tmp)
        self.params -= self._tmp

    def state_dict(self) -> dict[str, Any]:
        return {"lr": self.lr, "momentum": self.momentum, "velocity": self.velocity.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.lr, self.momentum = float(state["lr"]), float(state["momentum"])
        np.copyto(self.velocity, state["velocity"])


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015) with torch's bias correction and epsilon placement."""

    def __init__(self, params: np.ndarray, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        super().__init__(params, lr)
        self.beta1, self.beta2 = float(betas[0]), float(betas[1])
        self.eps = float(eps)
        self.m = np.zeros_like(params)
        self.v = np.zeros_like(params)
        self.t = 0

    def step(self, grad: np.ndarray) -> None:
        self.t += 1
        tmp = self._tmp
        # m = beta1 * m + (1 - beta1) * g ;  v = beta2 * v + (1 - beta2) * g^2
        self.m *= self.beta1
        np.multiply(grad, 1.0 - self.beta1, out=tmp)
        self.m += tmp
        self.v *= self.beta2
        np.multiply(grad, grad, out=tmp)
        tmp *= 1.0 - self.beta2
        self.v += tmp
        # params -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
        #         == lr * s / (1 - beta1^t) * m / (sqrt(v) + eps * s),  s = sqrt(1 - beta2^t)  (one op fewer)
        s = math.sqrt(1.0 - self.beta2 ** self.t)
        np.sqrt(self.v, out=tmp)
        tmp += self.eps * s
        np.divide(self.m, tmp, out=tmp)
        tmp *= self.lr * s / (1.0 - self.beta1 ** self.t)
        self.params -= tmp

    def state_dict(self) -> dict[str, Any]:
        return {"lr": self.lr, "betas": (self.beta1, self.beta2), "eps": self.eps, "t": self.t,
                "m": self.m.copy(), "v": self.v.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.lr, self.eps, self.t = float(state["lr"]), float(state["eps"]), int(state["t"])
        self.beta1, self.beta2 = (float(b) for b in state["betas"])
        np.copyto(self.m, state["m"])
        np.copyto(self.v, state["v"])
