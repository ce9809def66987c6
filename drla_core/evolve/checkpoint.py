"""Evolution checkpoints as files: the format's name and version, the generator state a run resumes
with, and the reader that ``--resume`` and the panel's Resume share (one population, or a co-evolution's two)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

CHECKPOINT_FORMAT = "drla-evolution"
CHECKPOINT_VERSION = 1


def rng_state(rng: np.random.Generator) -> dict[str, Any]:
    return dict(rng.bit_generator.state)


def rng_from_state(state: Mapping[str, Any]) -> np.random.Generator:
    if state.get("bit_generator") != "PCG64":
        raise ValueError(f"checkpoint RNG {state.get('bit_generator')!r} is not PCG64")
    rng = np.random.default_rng()
    rng.bit_generator.state = dict(state)
    return rng



def check_evolution_checkpoint(data: Any) -> None:
    """Raise ``ValueError`` unless ``data`` is an evolution checkpoint this version reads."""
    if not isinstance(data, Mapping) or data.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"not a DRLA evolution checkpoint (format must be {CHECKPOINT_FORMAT!r})")
    if data.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"unsupported evolution checkpoint version {data.get('version')!r}: "
                         f"this DRLA reads version {CHECKPOINT_VERSION}")


@dataclass
class EvolutionCheckpoint:
    """An evolution checkpoint read back, with the surface ``--resume`` and the panel's Resume read of a DQN
    ``checkpoint.Checkpoint``: ``meta`` (``kind`` and ``run``: seed, steps, total_steps), ``settings``, ``steps``;
    ``config`` is None (no DQN configuration)."""

    path: Path
    data: dict[str, Any]
    config: None = None

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.data.get("settings") or {})

    @property
    def steps(self) -> int:
        return int(self.data["generation"])

    @property
    def meta(self) -> dict[str, Any]:
        d = self.data
        if d.get("format") == COEVOLUTION_CHECKPOINT_FORMAT:  # each side's config holds the generations
            total = int(next(iter(d["sides"].values()))["config"]["generations"])
            kind = "coevolution"
        else:
            total, kind = int(d["config"]["generations"]), d.get("kind", "evolution")
        return {"kind": kind, "run": {
            "seed": int(d["seed"]), "steps": int(d["generation"]), "total_steps": total,
            "checkpoint_interval": int(self.settings.get("checkpoint_interval", 0))}}


#: A co-evolution's checkpoint (``coevolution``): the same reader serves both.
COEVOLUTION_CHECKPOINT_FORMAT = "drla-coevolution"


def read_evolution_checkpoint(path: str | os.PathLike[str]) -> EvolutionCheckpoint:
    """Read and check an evolution checkpoint file (one population, or a co-evolution's two); ``ValueError``
    names what is wrong."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read {p}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{p} is not a JSON evolution checkpoint: {exc}") from None
    if not (isinstance(data, dict) and data.get("format") == COEVOLUTION_CHECKPOINT_FORMAT):
        check_evolution_checkpoint(data)
    ckpt = EvolutionCheckpoint(p, data)
    try:
        if ckpt.meta["run"]["total_steps"] < 1:
            raise ValueError("generations must be at least 1")
    except (KeyError, TypeError, ValueError) as exc:
        what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ValueError(f"broken evolution checkpoint {p}: {what}") from None
    return ckpt


