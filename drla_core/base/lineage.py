"""Where a network comes from: an ancestry record kept in the model's ``meta["ancestry"]``.

``origin`` is a digest of the network's initial weights: two networks trained from the same
initial weights (same architecture and seed, or one copied from the other) share it, and only
such networks can be averaged weight by weight (``merge.average``); ``id`` is a digest of the
weights as saved, ``parents`` the ids a merged network was made from. Digests, not random ids:
the same run writes the same file.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

__all__ = ["params_digest", "ancestry_record"]


def params_digest(params: np.ndarray) -> str:
    """16 hex digits identifying a float32 parameter vector."""
    return hashlib.sha256(np.ascontiguousarray(params, dtype=np.float32).tobytes()).hexdigest()[:16]


def ancestry_record(origin: str, params: np.ndarray, parents: list[str] | None = None) -> dict[str, Any]:
    """``{"origin", "id", "parents"}`` for a network with these (current) parameters."""
    return {"origin": origin, "id": params_digest(params), "parents": list(parents or [])}
