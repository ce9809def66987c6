"""One file for the models of several named agents (format ``drla-team``, version 1).

A multi-agent tree (two tanks, a hero and its target, pac-man and the ghost) acts with one model per
named agent. A team file holds them all, by name, each in the ``drla-model`` v1 layout, so one file
plays, bakes or imports the whole tree. Like a model file it is pure data, read strictly: the size is
capped before reading, every member is checked by ``model_io.model_from_dict`` (its errors name the
agent), and nothing in it is executed. Documented in ``docs/model-format.md`` ("Several agents").
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import __version__
from ..base.files import atomic_write
from .model_io import (
    Model,
    ModelFormatError,
    _check_depth,
    _json_data,
    _keys,
    _now_iso,
    _obj,
    _type_name,
    model_from_dict,
    model_to_dict,
    parse_model_json,
    read_model_bytes,
)

__all__ = ["TEAM_FORMAT", "TEAM_VERSION", "MAX_AGENTS", "MAX_NAME_CHARS", "team_to_dict", "team_from_dict",
           "save_team", "load_team", "read_models", "is_team"]

TEAM_FORMAT = "drla-team"
TEAM_VERSION = 1
#: At most this many agents in one file, and this many characters in an agent's name.
MAX_AGENTS = 64
MAX_NAME_CHARS = 256


def is_team(data: Any) -> bool:
    """Whether parsed JSON ``data`` says it is a team file (its ``format``)."""
    return isinstance(data, dict) and data.get("format") == TEAM_FORMAT


def team_to_dict(models: Mapping[str, Model], meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The models, by agent name and in that order, as plain JSON data; ``team_from_dict`` is its inverse."""
    if not models:
        raise ModelFormatError("a team file needs at least one agent's model")
    for name in models:
        _name(name, "agents")
    info = {"drla_version": __version__, "created": _now_iso(), **dict(meta or {})}
    return {"format": TEAM_FORMAT, "version": TEAM_VERSION, "agents": {n: model_to_dict(m) for n, m in models.items()},
            "meta": _json_data(info, "meta")}


def _name(name: Any, field: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ModelFormatError(f"{field}: an agent's name must be a non-empty string, got {name!r:.40}")
    if len(name) > MAX_NAME_CHARS:
        raise ModelFormatError(f"{field}: an agent's name of {len(name)} characters, more than the limit of "
                               f"{MAX_NAME_CHARS}")
    return name


def team_from_dict(d: Any) -> dict[str, Model]:
    """Every agent's ``Model`` from team plain data, each checked as a model file; raises ``ModelFormatError``."""
    if not isinstance(d, dict):
        raise ModelFormatError(f"a team file must be a JSON object, got {_type_name(d)}")
    if d.get("format") != TEAM_FORMAT:
        raise ModelFormatError(f"format is {d.get('format')!r:.40}, expected {TEAM_FORMAT!r}: not a DRLA team file")
    version = d.get("version")
    if type(version) is not int:
        raise ModelFormatError(f"version must be an integer, got {_type_name(version)} ({version!r:.40})")
    if version != TEAM_VERSION:
        newer = " (a newer DRLA wrote it; update DRLA)" if version > TEAM_VERSION else ""
        raise ModelFormatError(f"unsupported team file version {version}: this DRLA reads version "
                               f"{TEAM_VERSION}{newer}")
    _keys(d, "team", ("format", "version", "agents"), ("meta",))
    agents = _obj(d["agents"], "agents")
    if not agents:
        raise ModelFormatError("agents: no agent in the file")
    if len(agents) > MAX_AGENTS:
        raise ModelFormatError(f"agents: {len(agents)} agents, more than the limit of {MAX_AGENTS}")
    meta = _obj(d.get("meta", {}), "meta")
    _check_depth(meta, "meta")
    out: dict[str, Model] = {}
    for name, member in agents.items():
        _name(name, "agents")
        try:
            out[name] = model_from_dict(member)
        except ModelFormatError as exc:
            raise ModelFormatError(f"agent {name!r:.60}: {exc}") from None
    return out


def read_models(data: bytes | str) -> dict[str, Model] | Model:
    """A team file's models by name, or the one ``Model`` of a model file (the bytes of either)."""
    parsed = parse_model_json(data)
    return team_from_dict(parsed) if is_team(parsed) else model_from_dict(parsed)


def load_any(path: str | os.PathLike[str]) -> dict[str, Model] | Model:
    """The models of a team file (a dict by name) or the model of a model file; ``ModelFormatError`` otherwise
    (``OSError`` when it cannot be read)."""
    return read_models(read_model_bytes(path))


def load_team(path: str | os.PathLike[str]) -> dict[str, Model]:
    """The models of the team file at ``path``; a plain model file is refused with a message that says so."""
    parsed = parse_model_json(read_model_bytes(path))
    if not is_team(parsed):
        raise ModelFormatError("this is one agent's model file, not a team file (format 'drla-team') holding "
                               "every agent's model")
    return team_from_dict(parsed)


def save_team(path: str | os.PathLike[str], models: Mapping[str, Model],
              meta: Mapping[str, Any] | None = None) -> Path:
    """Write every agent's model into one team file, atomically."""
    text = json.dumps(team_to_dict(models, meta), allow_nan=False, separators=(",", ":"))
    return atomic_write(path, (text + "\n").encode("utf-8"))
