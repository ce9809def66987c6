"""The extension zip: built and validated with the wheel's blender_ext.py, then installed.

The install runs in a subprocess with its own user folders under tmp_path: this process has
already registered the extension as ``drla_ext``, and the installed copy
(``bl_ext.user_default.drla``) would clash with it ("already registered").
"""

import json
import os
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
EXT_ID, VERSION = MANIFEST["id"], MANIFEST["version"]

# What ships: the package, its manifest and notices, and the example scenes' .blend files.
TOP_LEVEL_ALLOWED = {"__init__.py", "blender_manifest.toml", "LICENSE", "README.md", "CHANGELOG.md"}
PACKAGES = ("addon/", "drla_core/")
REQUIRED = {"__init__.py", "blender_manifest.toml", "LICENSE", "addon/__init__.py", "addon/scene/camera.py",
            "drla_core/__init__.py", "scenes/tank/tank.blend"}
FORBIDDEN_PREFIXES = ("tests/", "bench/", "docs/", "drla/", "dist/", ".venv/", ".git/", "out/", "tmp/")
FORBIDDEN_FILES = {"Makefile", "pyproject.toml", "setup.py", "requirements-dev.txt", "requirements-demo.txt",
                   "scenes/tank/build_tank.py"}


def blender_ext_cli() -> Path:
    path = Path(bpy.utils.system_resource('SCRIPTS')) / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"
    assert path.is_file(), path
    return path


def _cli(*args):
    return subprocess.run([sys.executable, str(blender_ext_cli()), *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def built_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    r = _cli("build", "--source-dir", str(ROOT), "--output-dir", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    path = out / f"{EXT_ID}-{VERSION}.zip"
    assert path.is_file(), r.stdout
    return path


def test_manifest_and_zip_validate(built_zip):
    for target in (ROOT, built_zip):
        r = _cli("validate", str(target))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "Success" in r.stdout


def test_zip_contents(built_zip):
    names = set(zipfile.ZipFile(built_zip).namelist())
    files = {n for n in names if not n.endswith("/")}
    assert REQUIRED <= files, REQUIRED - files
    if (ROOT / "README.md").exists():
        assert "README.md" in files
    for name in files:
        assert not name.startswith(FORBIDDEN_PREFIXES), name
        assert name not in FORBIDDEN_FILES, name
        assert "__pycache__" not in name and not name.endswith((".pyc", ".blend1")), name
        allowed = (
            name in TOP_LEVEL_ALLOWED
            or name.startswith(PACKAGES)
            or (name.startswith("scenes/") and name.endswith(".blend"))
        )
        assert allowed, f"unexpected file in the extension zip: {name}"
    # every source file of the package ships
    for pkg in PACKAGES:
        for src in (ROOT / pkg).rglob("*.py"):
            if "__pycache__" not in src.parts:
                assert src.relative_to(ROOT).as_posix() in files, src


INSTALL_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import bpy, addon_utils
    zip_path, ext_id = sys.argv[1], sys.argv[2]
    result = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default", enable_on_install=True)
    module = f"bl_ext.user_default.{ext_id}"
    repo = next(r for r in bpy.context.preferences.extensions.repos if r.module == "user_default")
    mod = sys.modules.get(module)
    tree_cls = bpy.types.NodeTree.bl_rna_get_subclass_py("DRLA_NodeTree")
    print("RESULT " + json.dumps({
        "op": sorted(result),
        "enabled": module in {a.module for a in bpy.context.preferences.addons},
        "loaded": addon_utils.check(module),
        "file": getattr(mod, "__file__", None),
        "repo_dir": repo.directory,
        "tree_registered": tree_cls is not None,
        "tree_module": getattr(tree_cls, "__module__", None),
    }))
    """
)


def test_install_into_isolated_user_repository(built_zip, tmp_path):
    home = tmp_path / "home"
    env = dict(
        os.environ,
        HOME=str(home),
        BLENDER_USER_EXTENSIONS=str(tmp_path / "extensions"),
        BLENDER_USER_CONFIG=str(tmp_path / "config"),
        BLENDER_USER_SCRIPTS=str(tmp_path / "scripts"),
    )
    env.pop("PYTHONPATH", None)  # the installed copy must not see the repository's drla_ext
    script = tmp_path / "install.py"
    script.write_text(INSTALL_SCRIPT)
    r = subprocess.run(
        [sys.executable, str(script), str(built_zip), EXT_ID], capture_output=True, text=True, timeout=300,
        env=env, cwd=str(tmp_path),
    )
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stdout[-3000:] + r.stderr[-3000:]
    info = json.loads(lines[-1][len("RESULT "):])
    assert info["op"] == ["FINISHED"], info
    assert info["enabled"] and info["loaded"] == [True, True], info
    installed = Path(info["file"]).resolve()
    assert installed.is_relative_to(tmp_path.resolve()), info  # isolated: nothing written to the real user dirs
    assert (installed.parent / "blender_manifest.toml").is_file()
    assert not (installed.parent / "tests").exists()
    if (ROOT / "addon" / "node_tree.py").exists():
        assert info["tree_registered"], info
        assert info["tree_module"].startswith(f"bl_ext.user_default.{EXT_ID}."), info


NEW_USER_SCRIPT = textwrap.dedent('''
    """A new user's first session with the installed zip: example, train, stop, resume, play, bake, export, import."""
    import json, os, sys
    import bpy

    zip_path, ext_id, work = sys.argv[1], sys.argv[2], sys.argv[3]
    bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default", enable_on_install=True)
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    out = {}
    out["example"] = list(bpy.ops.drla.add_example(name="Tank"))
    out["objects"] = sorted(ob.name for ob in scene.objects)
    before = {ob.name: (tuple(ob.matrix_world.col[3]), dict(ob.items())) for ob in scene.objects}
    module = sys.modules[f"bl_ext.user_default.{ext_id}.addon.runs.train"]
    sess = module.TrainSession(scene, scene.drla.tree, total_steps=600, output_dir=work).start()
    sess.tick(0.0)  # one step (an empty time box still takes one): the same on a busy machine
    out["ticked"] = [sess.steps, sess.state, scene.drla.error]
    sess.stop()  # Stop right after Train: the run stays resumable
    out["stopped"] = [sess.steps, sess.state, scene.drla.error]
    out["resume"] = list(bpy.ops.drla.resume())
    out["trained_steps"] = scene.drla.steps_done
    out["play"] = list(bpy.ops.drla.play(steps=20))
    out["bake"] = list(bpy.ops.drla.bake(steps=10))
    out["actions"] = sorted(a.name for a in bpy.data.actions)
    model = os.path.join(work, "tank.json")
    out["export"] = list(bpy.ops.drla.export_model(filepath=model))
    out["import"] = list(bpy.ops.drla.import_model(filepath=model))
    after = {ob.name: (tuple(ob.matrix_world.col[3]), dict(ob.items())) for ob in scene.objects}
    out["scene_restored"] = {k: v for k, v in after.items() if k != "Cannon"} == {
        k: v for k, v in before.items() if k != "Cannon"}  # Bake keys the Cannon: its frame-1 pose is kept
    out["error"] = scene.drla.error
    print("RESULT " + json.dumps(out))
''')


def test_a_new_user_session_with_the_installed_zip(built_zip, tmp_path):
    """The zip as shipped (scenes inside, no repository): everything a first session does works."""
    env = dict(os.environ, HOME=str(tmp_path / "home"), BLENDER_USER_EXTENSIONS=str(tmp_path / "extensions"),
               BLENDER_USER_CONFIG=str(tmp_path / "config"), BLENDER_USER_SCRIPTS=str(tmp_path / "scripts"))
    env.pop("PYTHONPATH", None)
    script = tmp_path / "new_user.py"
    script.write_text(NEW_USER_SCRIPT)
    r = subprocess.run([sys.executable, str(script), str(built_zip), EXT_ID, str(tmp_path)], capture_output=True,
                       text=True, timeout=300, env=env, cwd=str(tmp_path))
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stdout[-3000:] + r.stderr[-3000:]
    info = json.loads(lines[-1][len("RESULT "):])
    assert info["example"] == ["FINISHED"] and {"TankA", "TankB", "TankCamera"} <= set(info["objects"])
    assert info["ticked"] == [1, "RUNNING", ""], info
    assert info["stopped"] == [1, "STOPPED", ""], info
    assert info["resume"] == ["FINISHED"] and info["trained_steps"] == 600, info
    assert info["play"] == info["bake"] == info["export"] == info["import"] == ["FINISHED"], info
    assert any(name.startswith("DRLA Bake") for name in info["actions"])
    assert info["scene_restored"] and info["error"] == "", info
