"""Nothing DRLA makes for its own use stays in the user's file: after training the shipped Tank
tree (and Playing it) in a freshly opened scenes/tank/tank.blend, ``bpy.data`` holds exactly the
datablocks it held before, plus the stored model text (the one intended exception).

It runs in a fresh process, as a user's first training in a Blender session: one-time set-up
work (the first render that makes the ``gpu`` module usable headless) happens only there.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
TANK = ROOT / "scenes" / "tank" / "tank.blend"

SCRIPT = r'''
import json, sys
import bpy
from drla.extension import register_extension

register_extension()
blend, out, method, steps = sys.argv[-4], sys.argv[-3], sys.argv[-2], int(sys.argv[-1])
bpy.ops.wm.open_mainfile(filepath=blend)
scene = bpy.context.scene
tree = scene.drla.tree or next(t for t in bpy.data.node_groups if t.bl_idname == "DRLA_NodeTree")
for node in tree.nodes:  # everything DRLA writes goes to the test's folder, not next to the .blend
    if node.bl_idname == "DRLA_ExportJSONNode":
        node.filepath = out + "/model.json"
    if node.bl_idname == "DRLA_TrainerNode":
        node.output_path = out
    if node.bl_idname == "DRLA_CameraSensorNode":
        node.method = method


def names():
    """Datablock names per kind (all_ids, Blender 5.2's view of every kind at once, would count each twice)."""
    found = {}
    for attr in dir(bpy.data):
        coll = getattr(bpy.data, attr, None)
        if isinstance(coll, bpy.types.bpy_prop_collection) and attr not in {"window_managers", "screens",
                                                                          "workspaces", "all_ids"}:
            found[attr] = sorted(item.name for item in coll)
    return found


before = names()
scene.drla.tree = tree
scene.drla.output_dir = out
assert bpy.ops.drla.train(steps=steps, mode='BLOCKING') == {'FINISHED'}, scene.drla.error
message = scene.drla.message
assert bpy.ops.drla.play() == {'FINISHED'}, scene.drla.error
after = names()
print("RESULT " + json.dumps({"before": before, "after": after, "message": message}))
'''


def _train_in_a_fresh_blender(tmp_path, method: str, steps: int) -> dict:
    script = tmp_path / "leak.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(script), str(TANK), str(tmp_path), method, str(steps)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


@pytest.mark.slow
@pytest.mark.skipif(not TANK.is_file(), reason="scenes/tank/tank.blend not built")
@pytest.mark.parametrize("method,steps", [("GPU", 300), ("WORKBENCH", 40)])
def test_training_the_tank_leaves_no_datablock_behind(tmp_path, method, steps):
    result = _train_in_a_fresh_blender(tmp_path, method, steps)
    before, after = result["before"], result["after"]
    assert "Trained" in result["message"]
    model_text = "DRLA model: Tank"
    assert after["texts"] == sorted(before["texts"] + [model_text])
    changed = {kind: (before.get(kind), names) for kind, names in after.items()
               if kind != "texts" and before.get(kind) != names}
    assert changed == {}, f"left behind in the user's file: {changed}"
    assert not (TANK.parent / "model.json").exists()
