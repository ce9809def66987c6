"""The trained network lives in the .blend: one text datablock per RL tree.

The text ``"DRLA model: <tree name>"`` holds the model JSON in the v1 format of
``drla_core.model_io`` (the same bytes Export writes), with a fake user so saving the file
keeps it. Import validates with ``model_io`` before touching anything, so a bad file leaves
the stored model as it was.
"""

from __future__ import annotations

import json
import bpy

from ...drla_core import model_io, team_model
from ...drla_core.model_io import Model
from . import outputs

PREFIX = "DRLA model: "


def text_name(tree, agent: str = "") -> str:
    """The text datablock's name for ``tree`` (a tree or a tree name); a named agent of a multi-agent
    tree has its own: ``"DRLA model: Duel [tank_a]"``."""
    return PREFIX + (tree if isinstance(tree, str) else tree.name) + (f" [{agent}]" if agent else "")


def find_text(tree, agent: str = ""):
    """The text datablock holding ``tree``'s model (or its agent's), or None."""
    if tree is None:
        return None
    return bpy.data.texts.get(text_name(tree, agent))


def has_model(tree) -> bool:
    text = find_text(tree)
    return text is not None and bool(text.as_string().strip())


def model_json(model: Model) -> str:
    # One value per line: Blender's text datablocks are quadratic in the length of a line (a 0.8 MB
    # single-line JSON takes 20+ s to store), and linear in the number of lines (30 ms).
    return json.dumps(model_io.model_to_dict(model), allow_nan=False, indent=0, separators=(",", ":"))


def store_model(tree, model: Model, agent: str = ""):
    """Write ``model`` into ``tree``'s text datablock (or its agent's; created with a fake user); return the text."""
    return store_json(tree, model_json(model), agent)


def store_json(tree, text_json: str, agent: str = ""):
    name = text_name(tree, agent)
    text = bpy.data.texts.get(name) or bpy.data.texts.new(name)
    if "\n" not in text_json[:100_000] and len(text_json) > 100_000:
        try:
            text_json = json.dumps(json.loads(text_json), indent=0, separators=(",", ":"))  # see model_json
        except ValueError:
            pass  # not JSON: stored as given (loading will report it)
    if hasattr(text, "from_string"):
        text.from_string(text_json)
    else:  # pragma: no cover - older Blender
        text.clear()
        text.write(text_json)
    text.use_fake_user = True
    return text


def load_stored_model(tree, agent: str = "") -> Model:
    """The model stored for ``tree`` (or its agent); raises ``ModelFormatError`` (a readable message) when
    absent or corrupt."""
    text = find_text(tree, agent)
    if text is None:
        whose = f"agent '{agent}' of '{tree.name}'" if agent else f"'{tree.name}'"
        raise model_io.ModelFormatError(f"No trained model stored for {whose} yet: train or import one")
    try:
        return model_io.model_from_dict(model_io.parse_model_json(text.as_string()))
    except model_io.ModelFormatError as exc:
        raise model_io.ModelFormatError(f"The stored model '{text.name}' is damaged: {exc}") from None


def export_model(tree, filepath: str) -> None:
    """Write ``tree``'s stored model to ``filepath`` (validated: a corrupt stored text raises)."""
    outputs.write_model(filepath, load_stored_model(tree))


def import_model(tree, filepath: str, check=None) -> Model:
    """Read and validate ``filepath``, then store it for ``tree``; raise ``ModelFormatError`` before any change.

    ``check(model)`` may raise ``ModelFormatError`` too (e.g. the spaces don't match the tree).
    """
    try:
        model = model_io.load_model(filepath)
    except model_io.ModelFormatError:
        raise
    except OSError as exc:
        raise model_io.ModelFormatError(f"Cannot read '{filepath}': {exc.strerror or exc}") from exc
    if check is not None:
        check(model)
    store_model(tree, model)
    return model


# --------------------------------------------------------------------------- several named agents
def has_team_models(tree, names: list[str]) -> bool:
    """Whether every named agent of a multi-agent tree has a stored model."""
    return bool(names) and all(find_text(tree, name) is not None for name in names)


def stored_team(tree, names: list[str]) -> dict[str, Model]:
    """Every named agent's stored model, by name; ``ModelFormatError`` names the first one missing or damaged."""
    return {name: load_stored_model(tree, name) for name in names}


def export_team(tree, names: list[str], filepath: str) -> str:
    """Write every named agent's stored model into one team file (``drla_core.team_model``); returns the path."""
    return outputs.write_team(filepath, stored_team(tree, names), {"tree": tree.name})


def _agent_of(model: Model) -> str:
    """The agent a single model file says it belongs to (``meta.agent``; a co-evolution's ``meta.side``, whose
    ``meta.agent`` names its algorithm)."""
    who = model.meta.get("side", model.meta.get("agent", ""))
    return who if isinstance(who, str) else ""


def import_models(tree, filepath: str, names: list[str]) -> list[str]:
    """Read ``filepath`` for a multi-agent tree whose agents are ``names``, then store what it holds; returns the
    agents imported. A team file stores each of its agents (every name must be one of the tree's); a single
    model file stores the agent its ``meta.agent`` names. Everything is checked before anything is stored."""
    try:
        loaded = team_model.load_any(filepath)
    except OSError as exc:
        raise model_io.ModelFormatError(f"Cannot read '{filepath}': {exc.strerror or exc}") from exc
    if isinstance(loaded, Model):
        who = _agent_of(loaded)
        if who not in names:
            named = f"is agent '{who}'s model" if who else "names no agent (meta.agent)"
            raise model_io.ModelFormatError(f"this model file {named}, and tree '{tree.name}' has agents "
                                            f"{', '.join(names)}: import a team file holding every agent's "
                                            "model (Export on a multi-agent tree writes one), or one agent's model")
        loaded = {who: loaded}
    unknown = [name for name in loaded if name not in names]
    if unknown:
        raise model_io.ModelFormatError(f"the file holds agent '{unknown[0]}', but tree '{tree.name}' has agents "
                                        f"{', '.join(names)}")
    for name, model in loaded.items():
        store_model(tree, model, name)
    first = next(name for name in names if name in loaded)
    store_model(tree, loaded[first])  # the tree's own text: it has a model (what Play and Bake look for)
    return [name for name in names if name in loaded]


def remove_model(tree) -> None:
    text = find_text(tree)
    if text is not None:
        bpy.data.texts.remove(text)
