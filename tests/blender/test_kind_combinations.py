"""Every agent kind a tree can train (``runs.kinds.KINDS``) with every command and every DRLA button (issue 23,
item 3): it works, or it refuses with its reason: on the command line one ``error:`` line (exit status 2), in the
panel a greyed-out button whose tooltip says why (``poll_message_set``), or the panel's error line; never a
traceback, never a silent no-op.

Generated from the registries: each kind is tried on the first example scene whose tree trains it (a kind no scene
trains fails the test), with every row of tests/test_combinations.py's ``COMMANDS`` (the parser's subcommands) and
every ``drla.*`` operator (an operator not in ``BUTTONS`` or ``NOT_A_TREE_BUTTON`` fails). Tiny runs (two steps or
generations) keep it bounded. The Property Sensor's bounds are checked here too.
"""

from __future__ import annotations

import importlib.util
import math
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("combinations_table", ROOT / "tests" / "test_combinations.py")
combos = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = combos  # (dataclasses look their module up)
_spec.loader.exec_module(combos)

#: Every kind's tiny run: two steps (generations for evolution), and for the first run a checkpoint after the first
#: step so --resume has one (the other rows run without it).
TINY = ["--quiet", "--steps", "2", "--eval-interval", "0"]
INTERVAL = ["--checkpoint-interval", "1"]


def _addon(name):
    from drla.scene import addon_module

    return addon_module(name)


def scenes_by_kind(folder: Path) -> dict[str, tuple[Path, str]]:
    """kind name -> (the first example .blend, its tree) that trains it, from copies of the shipped scenes' folders
    in ``folder`` (a tree's Export node writes beside its .blend: never into the checkout)."""
    from drla.extension import register_extension

    register_extension()
    found: dict[str, tuple[Path, str]] = {}
    for original in sorted((ROOT / "scenes").glob("*/*.blend")):
        copy = folder / original.parent.name
        if not copy.exists():
            shutil.copytree(original.parent, copy, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
        blend = copy / original.name
        bpy.ops.wm.open_mainfile(filepath=str(blend), load_ui=False)
        kinds = _addon("runs.kinds")
        for tree in bpy.data.node_groups:
            if tree.bl_idname == "DRLA_NodeTree":
                found.setdefault(kinds.of_tree(tree).name, (blend, tree.name))
    return found


@pytest.fixture(scope="module")
def kinds_trained(ext, tmp_path_factory):
    """Each kind's tiny CLI run on its scene, shared by the command rows."""
    where = scenes_by_kind(tmp_path_factory.mktemp("scenes"))
    missing = sorted(set(_addon("runs.kinds").KINDS) - set(where))
    assert not missing, f"no example scene trains the agent kind(s) {missing}: add one to scenes/"
    runs = {}
    for kind, (blend, tree) in sorted(where.items()):
        scene = (str(blend), "--tree", tree)
        folder = tmp_path_factory.mktemp(f"kind_{kind}")
        t = combos.train_once(kind, ["train", *scene, *TINY, *INTERVAL], folder, more_steps="3", scene=scene)
        verdict, why = combos.outcome(t.train)
        if verdict == "refused" and why.startswith("--checkpoint-interval:"):  # a kind whose runs cannot resume
            INTERVAL_REFUSED[kind] = why
            t = combos.train_once(kind, ["train", *scene, *TINY], folder, more_steps="3", scene=scene)
        t.base = ["train", *scene, *TINY]
        runs[kind] = t
    return runs


#: kind -> why ``--checkpoint-interval`` was refused (its runs cannot be resumed), filled by ``kinds_trained``
INTERVAL_REFUSED: dict[str, str] = {}


@pytest.mark.slow
def test_every_kind_with_every_command(kinds_trained, capsys):
    rows = {}
    for kind, t in kinds_trained.items():
        for command in combos.COMMANDS:
            rows[(kind, command)] = combos.run_row(t, command)
        rows[(kind, "train --checkpoint-interval")] = (("refused", INTERVAL_REFUSED[kind]) if kind in INTERVAL_REFUSED
                                                       else ("works", f"{t.state.name} written"))
        if kind not in INTERVAL_REFUSED:
            assert t.state.is_file(), (kind, "--checkpoint-interval 1 wrote no resumable state")
    with capsys.disabled():
        print("\n" + combos.table_text(rows, "drla commands x tree agent kinds"))
    broken = {k: v for k, v in rows.items() if v[0] == "BROKEN"}
    assert not broken, combos.table_text(broken, "BROKEN")
    onnx_missing = importlib.util.find_spec("onnx") is None  # (Debian's Blender in make test-matrix has none)
    for kind in kinds_trained:  # every kind trains from the command line and its model file is a model
        for command in ("train", "inspect", "export-onnx", "experts add"):
            if command == "export-onnx" and onnx_missing:  # refused, saying what to install
                assert rows[(kind, command)][0] == "refused" and "needs the onnx package" in rows[(kind, command)][1]
                continue
            assert rows[(kind, command)][0] == "works", (kind, command, rows[(kind, command)])
    assert rows[("dqn", "train --resume")][0] == "works" and rows[("dqn", "play")][0] == "works"
    assert rows[("dqn", "train --copies")][0] == "works"
    assert rows[("evolution", "train --workers")][0] == "works"  # its population evaluated on the worker (issue 27)


# ---- the panel's buttons ----------------------------------------------------------------------------------------


def _operator_classes() -> dict[str, type]:
    """``drla.NAME`` operator classes by NAME."""
    out, todo = {}, list(bpy.types.Operator.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        idname = getattr(cls, "bl_idname", "")
        if idname.startswith("drla."):
            out[idname.split(".", 1)[1]] = cls
    return out


#: Button -> the keyword arguments it is pressed with (``tmp``: a folder), in the order a user presses them.
BUTTONS = {
    "train": lambda tmp: {"steps": 2},
    "export_model": lambda tmp: {"filepath": str(tmp / "exported.json")},
    "play": lambda tmp: {"steps": 2},
    "bake": lambda tmp: {"steps": 2},
    "network_overlay": lambda tmp: {},
    "grow": lambda tmp: {},
    "ik_follow": lambda tmp: {},
    "stop": lambda tmp: {},
    "resume": lambda tmp: {"steps": 1},
    "import_model": lambda tmp: {"filepath": str(tmp / "exported.json")},
    "clear_error": lambda tmp: {},
}
#: Buttons that act on one node (the node they are drawn on names itself), on no tree, or that record a
#: demonstration (from the keyboard or keyframes: not a run of the kind): where they are tested.
NOT_A_TREE_BUTTON = {
    "add_example": "adds an example tree and its objects (tests/blender/test_operators.py)",
    "expert_add": "the Expert Library node's button (tests/blender/test_switcher_merge.py)",
    "expert_remove": "the Expert Library node's button (tests/blender/test_switcher_merge.py)",
    "merge_models": "the Merge node's button (tests/blender/test_switcher_merge.py)",
    "merge_slots": "the Merge node's button (tests/blender/test_switcher_merge.py)",
    "switcher_check": "the Expert Switcher node's button (tests/blender/test_switcher_merge.py)",
    "switcher_slots": "the Expert Switcher node's button (tests/blender/test_switcher_merge.py)",
    "switcher_train_selector": "the Expert Switcher node's button (tests/blender/test_switcher_merge.py)",
    "record_demonstration": "drives the agent from the keyboard (modal; tests/blender/test_demos_record.py)",
    "record_keyframes": "infers a demonstration from keyframes (tests/blender/test_demos_keyframes.py)",
}


def test_every_button_is_in_the_table(ext):
    names = set(_operator_classes())
    missing = sorted(names - set(BUTTONS) - set(NOT_A_TREE_BUTTON))
    assert not missing, f"DRLA buttons the combination table does not press: {missing}"
    assert not sorted((set(BUTTONS) | set(NOT_A_TREE_BUTTON)) - names)


def press(name: str, cls: type, kwargs: dict) -> tuple[str, str]:
    """Poll the button as the panel does (its greyed-out reason captured), then press it."""
    reasons: list[str] = []
    probe = type(f"Probe_{name}", (cls,), {"poll_message_set": classmethod(lambda c, m, *a: reasons.append(m))})
    if hasattr(probe, "poll") and not probe.poll(bpy.context):  # (a button without poll is always enabled)
        return ("refused", reasons[0]) if reasons and reasons[0] else ("BROKEN", "greyed out without a reason")
    s = bpy.context.scene.drla
    s.error = s.message = ""
    try:
        result = getattr(bpy.ops.drla, name)(**kwargs)
    except RuntimeError as exc:  # the operator reported an error (or raised: a traceback is in the text)
        text = str(exc).strip()
        if "Traceback" in text:
            return "BROKEN", "traceback: " + text.splitlines()[-1]
        return "refused", text.splitlines()[-1].removeprefix("Error: ")
    if result == {'FINISHED'}:
        return "works", s.message[:100] or "(done; no panel message)"
    return ("refused", s.error) if s.error else ("BROKEN", f"{result} without a message")


@pytest.mark.slow
def test_every_kind_with_every_button(ext, tmp_path, capsys):
    where = scenes_by_kind(tmp_path / "scenes")
    ops = _operator_classes()
    rows = {}
    for kind, (blend, tree_name) in sorted(where.items()):
        bpy.ops.wm.open_mainfile(filepath=str(blend), load_ui=False)
        scene = bpy.context.scene
        scene.drla.tree = bpy.data.node_groups[tree_name]
        scene.drla.output_dir = str(tmp_path / kind)
        for name, kwargs in BUTTONS.items():
            rows[(kind, name)] = press(name, ops[name], kwargs(tmp_path / kind))
            if rows[(kind, name)][0] == "works" and name == "network_overlay":  # off again
                press(name, ops[name], {})
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    with capsys.disabled():
        print("\n" + combos.table_text(rows, "DRLA buttons x tree agent kinds"))
    broken = {k: v for k, v in rows.items() if v[0] == "BROKEN"}
    assert not broken, combos.table_text(broken, "BROKEN")
    for kind in where:
        assert rows[(kind, "train")][0] == "works" and rows[(kind, "export_model")][0] == "works", kind
        assert rows[(kind, "stop")] == ("refused", rows[(kind, "stop")][1])  # nothing runs after a blocking train


# ---- the Property Sensor's bounds -------------------------------------------------------------------------------


def test_property_sensor_bounds_make_a_finite_space_and_clip(ext, tmp_path):
    """The tank's observation space is finite (the Property Sensors' Min/Max, whose defaults an old file gets);
    a value beyond Max reads as Max; Min >= Max is a message on the node."""
    from drla.scene import compile_or_explain, open_scene

    shutil.copytree(combos.TANK.parent, tmp_path / "tank", ignore=shutil.ignore_patterns("*.py"))
    _, ext_mod, tree, scene = open_scene(tmp_path / "tank" / combos.TANK.name, "Tank")
    sensors = [n for n in tree.nodes if n.bl_idname == "DRLA_PropertySensorNode"]
    assert sensors and all((n.value_min, n.value_max) == (-1000.0, 1000.0) for n in sensors)
    compiled = compile_or_explain(ext_mod, tree, scene)
    env = _addon("runs.build").build_env(compiled, scene, copies=1)
    try:
        space = env.observation_space
        assert np.isfinite(space.low).all() and np.isfinite(space.high).all()
        obs, _ = env.reset(seed=0)
        assert space.contains(obs)
        score = next(n for n in sensors if n.property == "score")
        owner = score.object
        reader_index = [s.node for s in compiled.env.state.sensors].index(score.name)
        offset = sum(s.size for s in compiled.env.state.sensors[:reader_index])
        owner["score"] = 5000.0  # beyond Max: read as Max, times the node's Scale
        reader = _addon("scene.sensors").StateReader(compiled.env.state, scene)
        assert math.isclose(float(reader.read()[offset]), 1000.0 * score.scale, rel_tol=1e-6)
        assert space.high[offset] == pytest.approx(1000.0 * score.scale)
    finally:
        env.close()
    score.value_min = score.value_max
    with pytest.raises(_addon("specs").CompileError) as caught:
        _addon("tree.compiler").compile_tree(tree, scene)
    assert any("Min (1000) must be below Max (1000)" in message for _, message in caught.value.errors)
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
