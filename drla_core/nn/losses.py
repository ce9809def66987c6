"""Regression losses for TD learning, each returning ``(loss, dloss/dpred)``, and gradient clipping.

Both losses average over the batch, like ``torch.nn.functional.smooth_l1_loss`` / ``mse_loss``
with ``reduction="mean"``, so learning rates carry over from SB3/CleanRL settings.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["huber", "mse", "clip_grad_norm"]


def huber(pred: np.ndarray, target: np.ndarray, delta: float = 1.0) -> tuple[float, np.ndarray]:
    """Huber loss: quadratic within ``delta``, linear outside (robust to large TD errors)."""
    diff = np.subtract(pred, target, dtype=np.float32)
    n = diff.size
    abs_diff = np.abs(diff)
    quad = np.minimum(abs_diff, delta)
    # mean(0.5 * quad^2 + delta * (|diff| - quad)), written as reductions
    loss = (0.5 * float(np.dot(quad.ravel(), quad.ravel())) + delta * float(abs_diff.sum() - quad.sum())) / n
    np.minimum(diff, delta, out=diff)
    np.maximum(diff, -delta, out=diff)
    diff *= np.float32(1.0 / n)
    return loss, diff


def mse(pred: np.ndarray, target: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean squared error."""
    diff = np.subtract(pred, target, dtype=np.float32)
    loss = float(np.dot(diff.ravel(), diff.ravel())) / diff.size
    diff *= np.float32(2.0 / diff.size)
    return loss, diff


def clip_grad_norm(grad: np.ndarray, max_norm: float) -> tuple[np.ndarray, float]:
    """Scale ``grad`` in place so its L2 norm is at most ``max_norm``; returns (grad, norm before clipping)."""
    flat = grad.ravel()
    norm = math.sqrt(float(np.dot(flat, flat)))
    if norm > max_norm:
        grad *= np.float32(max_norm / (norm + 1e-6))
    return grad, norm
