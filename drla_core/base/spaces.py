"""Observation and action spaces with Gymnasium semantics.

Only the two spaces DRLA needs: ``Box`` (a float vector or image) and ``Discrete``
(named actions). Both sample from a caller-supplied ``np.random.Generator`` so that
all randomness flows from one seed, and both round-trip through plain dicts for the
model file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["Box", "Discrete", "MultiDiscrete", "Space", "space_from_dict"]


class Space:
    """Base class: a set of valid values with a ``sample`` and a ``contains``."""

    shape: tuple[int, ...]
    dtype: np.dtype

    def sample(self, rng: np.random.Generator) -> Any:
        raise NotImplementedError

    def contains(self, x: Any) -> bool:
        raise NotImplementedError

    def __contains__(self, x: Any) -> bool:
        return self.contains(x)

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError


class Box(Space):
    """A box in R^n: ``low <= x <= high`` element-wise (bounds may be infinite).

    Args:
        low: lower bound, a scalar broadcast to ``shape`` or an array.
        high: upper bound, same rules as ``low``.
        shape: the shape; inferred from ``low`` when it is an array.
        dtype: float32 by default, as in Gymnasium.
    """

    def __init__(
        self,
        low: float | Sequence[float] | np.ndarray,
        high: float | Sequence[float] | np.ndarray,
        shape: Sequence[int] | None = None,
        dtype: Any = np.float32,
    ) -> None:
        self.dtype = np.dtype(dtype)
        if shape is None:
            shape = np.shape(low) if np.ndim(low) else np.shape(high)
        self.shape = tuple(int(s) for s in shape)
        self.low = np.broadcast_to(np.asarray(low, dtype=self.dtype), self.shape).copy()
        self.high = np.broadcast_to(np.asarray(high, dtype=self.dtype), self.shape).copy()
        if np.any(self.low > self.high):
            raise ValueError("Box: low must be <= high everywhere")

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """Uniform where bounded, normal where unbounded, exponential where half-bounded."""
        low, high = self.low.astype(np.float64), self.high.astype(np.float64)
        out = np.empty(self.shape, dtype=np.float64)
        bounded = np.isfinite(low) & np.isfinite(high)
        only_low = np.isfinite(low) & ~np.isfinite(high)
        only_high = ~np.isfinite(low) & np.isfinite(high)
        unbounded = ~np.isfinite(low) & ~np.isfinite(high)
        out[bounded] = rng.uniform(low[bounded], high[bounded])
        out[only_low] = low[only_low] + rng.exponential(size=int(only_low.sum()))
        out[only_high] = high[only_high] - rng.exponential(size=int(only_high.sum()))
        out[unbounded] = rng.normal(size=int(unbounded.sum()))
        return out.astype(self.dtype)

    def contains(self, x: Any) -> bool:
        if not isinstance(x, np.ndarray):
            try:
                x = np.asarray(x, dtype=self.dtype)
            except (TypeError, ValueError):
                return False
        return bool(
            x.shape == self.shape
            and np.can_cast(x.dtype, self.dtype, casting="same_kind")
            and np.all(x >= self.low)
            and np.all(x <= self.high)
        )

    def to_dict(self) -> dict[str, Any]:
        def bound(a: np.ndarray) -> Any:
            # JSON has no infinity: infinite bounds are written as null.
            flat = [None if not np.isfinite(v) else float(v) for v in a.ravel()]
            if all(v == flat[0] for v in flat):
                return flat[0]
            return flat

        return {"type": "box", "shape": list(self.shape), "low": bound(self.low), "high": bound(self.high),
                "dtype": self.dtype.name}

    def __repr__(self) -> str:
        return f"Box(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Box) and self.shape == other.shape and self.dtype == other.dtype
                and np.array_equal(self.low, other.low) and np.array_equal(self.high, other.high))


class Discrete(Space):
    """The integers ``0 .. n-1``, optionally with a name per action (``"fire"``).

    Args:
        n: number of actions.
        names: one human-readable name per action, shown in the UI and saved in models.
    """

    def __init__(self, n: int, names: Sequence[str] | None = None) -> None:
        if int(n) <= 0:
            raise ValueError("Discrete: n must be positive")
        self.n = int(n)
        self.shape = ()
        self.dtype = np.dtype(np.int64)
        if names is not None and len(names) != self.n:
            raise ValueError(f"Discrete: {len(names)} names for {self.n} actions")
        self.names = list(names) if names is not None else [f"action_{i}" for i in range(self.n)]

    def sample(self, rng: np.random.Generator) -> int:
        return int(rng.integers(self.n))

    def contains(self, x: Any) -> bool:
        if isinstance(x, np.ndarray):
            if x.shape != () or not np.issubdtype(x.dtype, np.integer):
                return False
            x = int(x)
        return isinstance(x, (int, np.integer)) and not isinstance(x, bool) and 0 <= int(x) < self.n

    def to_dict(self) -> dict[str, Any]:
        return {"type": "discrete", "n": self.n, "names": list(self.names)}

    def __repr__(self) -> str:
        return f"Discrete({self.n})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Discrete) and self.n == other.n and self.names == other.names


class MultiDiscrete(Space):
    """A vector of independent discrete choices, entry ``i`` in ``0 .. nvec[i]-1``: N copies' ``Discrete`` actions.

    Gymnasium batches ``Discrete(n)`` over N copies into ``MultiDiscrete([n] * N)``; the vector
    environments use it as their batched action space. Not a model-file space.
    """

    def __init__(self, nvec: Sequence[int] | np.ndarray) -> None:
        self.nvec = np.asarray(nvec, dtype=np.int64)
        if self.nvec.ndim != 1 or len(self.nvec) == 0 or np.any(self.nvec <= 0):
            raise ValueError("MultiDiscrete: nvec must be a non-empty list of positive counts")
        self.shape = (len(self.nvec),)
        self.dtype = np.dtype(np.int64)

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(self.nvec)

    def contains(self, x: Any) -> bool:
        if not isinstance(x, np.ndarray):
            try:
                x = np.asarray(x)
            except (TypeError, ValueError):
                return False
        return bool(x.shape == self.shape and np.issubdtype(x.dtype, np.integer)
                    and np.all(x >= 0) and np.all(x < self.nvec))

    def to_dict(self) -> dict[str, Any]:
        return {"type": "multi_discrete", "nvec": [int(n) for n in self.nvec]}

    def __repr__(self) -> str:
        return f"MultiDiscrete({self.nvec.tolist()})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MultiDiscrete) and np.array_equal(self.nvec, other.nvec)


def space_from_dict(d: dict[str, Any]) -> Space:
    """Inverse of ``Space.to_dict``; raises ``ValueError`` with a readable message."""
    kind = d.get("type")
    if kind == "discrete":
        return Discrete(int(d["n"]), d.get("names"))
    if kind == "box":
        shape = tuple(int(s) for s in d["shape"])

        def bound(v: Any, inf: float) -> np.ndarray:
            arr = np.array([inf if x is None else x for x in v] if isinstance(v, list) else
                           (inf if v is None else v), dtype=np.float64)
            return np.broadcast_to(arr, shape) if arr.ndim == 0 else arr.reshape(shape)

        return Box(bound(d["low"], -np.inf), bound(d["high"], np.inf), shape, d.get("dtype", "float32"))
    if kind == "multi_discrete":
        return MultiDiscrete([int(n) for n in d["nvec"]])
    raise ValueError(f"unknown space type {kind!r} (expected 'box', 'discrete' or 'multi_discrete')")
