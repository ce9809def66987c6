"""An expert library: a folder of model files and an ``index.json`` describing them, shareable as a folder.

    experts/
      index.json          {"format": "drla-experts", "version": 1, "experts": [{name, file, task,
                           observation_space, action_space, score, scene, kind, added}, ...]}
      tank_arena_a.json   the model files, copied in (file names relative: the folder moves as one)

The index is data only (read with the model file's strict JSON reader, checked entry by entry);
every model is loaded with ``load_model`` and so checked as any model file.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

from .experts import ExpertSwitcher, check_experts
from ..io.model_io import Model, ModelFormatError, load_model, parse_model_json

__all__ = ["ExpertLibrary", "LibraryError", "INDEX"]

INDEX = "index.json"
FORMAT = "drla-experts"
VERSION = 1
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ENTRY_KEYS = ("name", "file", "task", "observation_space", "action_space", "score", "scene", "kind", "added")


class LibraryError(ValueError):
    """A library folder, index or entry that cannot be used; the message says what and where."""


class ExpertLibrary:
    """The library in ``folder`` (created on the first ``add``)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.index_path = self.folder / INDEX

    # ---- the index ----------------------------------------------------------------------------------

    def entries(self) -> list[dict[str, Any]]:
        """The experts in the index, in the order they were added (an absent index: none)."""
        if not self.index_path.exists():
            return []
        try:
            data = parse_model_json(self.index_path.read_bytes())
        except (ModelFormatError, ValueError, OSError) as exc:
            raise LibraryError(f"{self.index_path}: not a readable index ({exc})") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("experts"), list):
            raise LibraryError(f"{self.index_path}: not a DRLA expert index (format {FORMAT!r} with an experts list)")
        if data.get("version") != VERSION:
            raise LibraryError(f"{self.index_path}: index version {data.get('version')!r}, this DRLA reads {VERSION}")
        entries = []
        for i, e in enumerate(data["experts"]):
            if not isinstance(e, dict) or not isinstance(e.get("name"), str) or not NAME.match(e["name"]):
                raise LibraryError(f"{self.index_path}: entry {i} has no valid name")
            file = e.get("file")
            if not isinstance(file, str) or Path(file).name != file or not file.endswith(".json") or file == INDEX:
                raise LibraryError(f"{self.index_path}: expert {e['name']!r} names no model file inside the folder")
            entries.append({key: e.get(key) for key in ENTRY_KEYS})
        return entries

    def _write(self, entries: list[dict[str, Any]]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.index_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps({"format": FORMAT, "version": VERSION, "experts": entries}, indent=1))
        tmp.replace(self.index_path)

    def get(self, name: str) -> dict[str, Any]:
        for e in self.entries():
            if e["name"] == name:
                return e
        known = ", ".join(e["name"] for e in self.entries()) or "none"
        raise LibraryError(f"no expert named {name!r} in {self.folder} (experts: {known})")

    # ---- changes ------------------------------------------------------------------------------------

    def add(self, model_path: str | Path, name: str | None = None, task: str | None = None,
            score: float | None = None, scene: str | None = None, replace: bool = False) -> dict[str, Any]:
        """Copy a model file into the library and index it; task and scene default to what the model records."""
        model = load_model(model_path)  # checked like any model file before it goes in
        name = name or Path(model_path).stem
        if not NAME.match(name):
            raise LibraryError(f"expert name {name!r}: use letters, digits, '_', '-' or '.' (64 at most)")
        entries = self.entries()
        if any(e["name"] == name for e in entries):
            if not replace:
                raise LibraryError(f"an expert named {name!r} is already in {self.folder} (remove it first)")
            entries = [e for e in entries if e["name"] != name]
        file = f"{name}.json"
        entry = {
            "name": name, "file": file,
            "task": task or model.meta.get("env") or model.meta.get("task") or model.meta.get("tree"),
            "observation_space": model.observation_space.to_dict(), "action_space": model.action_space.to_dict(),
            "score": score if score is not None else _recorded_score(model),
            "scene": scene or model.meta.get("scene") or model.meta.get("blend"), "kind": model.kind,
            "added": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(model_path, self.folder / file)
        self._write(entries + [entry])
        return entry

    def remove(self, name: str) -> dict[str, Any]:
        """Drop an expert from the index and delete its model file."""
        entry = self.get(name)
        self._write([e for e in self.entries() if e["name"] != name])
        (self.folder / entry["file"]).unlink(missing_ok=True)
        return entry

    # ---- use ----------------------------------------------------------------------------------------

    def load(self, name: str) -> Model:
        entry = self.get(name)
        path = self.folder / entry["file"]
        try:
            return load_model(path)
        except (ModelFormatError, OSError) as exc:
            raise LibraryError(f"expert {name!r}: {exc}") from exc

    def combine(self, names: list[str], rule: Any = None, selector: Any = None) -> ExpertSwitcher:
        """A switcher over these experts (their spaces checked: ``ExpertError`` says which one differs)."""
        models = [self.load(n) for n in names]
        check_experts(models, names)
        return ExpertSwitcher(models, rule=rule, names=names, selector=selector)


def _recorded_score(model: Model) -> float | None:
    """The last evaluation's mean return when the model records one (``drla train`` writes ``meta["eval"]``)."""
    for key in ("final_eval", "eval", "score", "mean_return"):
        value = model.meta.get(key)
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, dict) and isinstance(value.get("mean_return"), (int, float)):
            return float(value["mean_return"])
    return None
