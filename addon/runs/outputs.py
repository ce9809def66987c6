"""Every file a run writes goes through here: model files, checkpoints, reports, and their names.

``write_model`` is the one way a model reaches a file (``drla_core.io.model_io.save_model`` picks the
format by the file's suffix); the folders come from the scene setting, the preferences, or the
Trainer node (``preferences.resolve_output_path``).
"""

from __future__ import annotations

import os
import re

from ...drla_core.io import model_io, team_model
from ..preferences import checkpoint_dir


def safe_name(name: str) -> str:
    """A tree's name as a file name: letters, digits, '.', '_' and '-' only."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "tree"


def write_model(path: str, model) -> str:
    """Write ``model`` to ``path`` (folders created); returns the path."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    model_io.save_model(path, model)
    return path


def write_team(path: str, models, meta=None) -> str:
    """Every named agent's model (a dict name -> model) in one team file at ``path`` (folders created)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    team_model.save_team(path, models, meta)
    return path


def write_models(paths: list[str], model) -> list[str]:
    """``model`` to every path of ``paths``; returns the paths written."""
    return [write_model(path, model) for path in paths]


def export_paths(compiled) -> list[str]:
    """Where a finished run exports its model: the Export nodes' files, then the agent's own Save To."""
    paths = list(compiled.trainer.exports) if compiled.trainer else []
    own = compiled.agent.config.get("output_path", "") if compiled.agent is not None else ""
    if own:
        paths.append(own)
    return paths


def member_path(compiled, name: str, output_dir: str = "") -> str:
    """Where one named agent of a multi-agent run is exported: ``<folder>/<tree>_<agent>.json``, the
    folder being the run's (the sidebar's Output), else the Trainer's Output, else the preferences'."""
    folder = output_dir or (compiled.trainer.output_path if compiled.trainer is not None else "")
    return os.path.join(checkpoint_dir(override=folder), f"{safe_name(compiled.tree)}_{safe_name(name)}.json")


def report_path(tree_name: str, output_dir: str = "") -> str:
    """The training report PNG of a tree, in the run's folder."""
    return os.path.join(checkpoint_dir(override=output_dir), f"{safe_name(tree_name)}_report.png")


def resume_path(tree_name: str, output_dir: str = "", suffix: str = ".npz") -> str:
    """The full training state a stopped run writes so that Resume works after the file is reopened (``suffix``:
    the job's ``checkpoint_suffix``, ``.json`` for an evolution run's population)."""
    return os.path.join(checkpoint_dir(override=output_dir), f"{safe_name(tree_name)}_resume{suffix}")


def checkpoint_path(folder: str, tree_name: str) -> str:
    """The checkpoint file a run overwrites every Checkpoint Every steps."""
    return os.path.join(folder, f"{safe_name(tree_name)}_checkpoint.json")


def folder_words(path: str) -> str:
    """A folder as a person reads it in a message: the home folder as ``~``."""
    home = os.path.expanduser("~")
    path = os.path.abspath(path)
    return "~" + path[len(home):] if home not in ("", "/") and (path + os.sep).startswith(home + os.sep) else path


def files_words(paths: list[str]) -> str:
    """Files named with their folders, each folder once: ``"a.json, b.json in ~/Documents/DRLA"``."""
    by_folder: dict[str, list[str]] = {}
    for p in paths:
        by_folder.setdefault(os.path.dirname(os.path.abspath(p)), []).append(os.path.basename(p))
    return "; ".join(f"{', '.join(names)} in {folder_words(folder)}" for folder, names in by_folder.items())
