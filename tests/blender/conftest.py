"""Fixtures for the tests that run on real Blender (the ``bpy`` wheel, headless)."""

import pytest

bpy = pytest.importorskip("bpy")

from pathlib import Path  # noqa: E402

from drla.extension import register_extension  # noqa: E402

ROBOT_ARM_SCENE = Path(__file__).resolve().parents[2] / "scenes" / "robot_arm" / "robot_arm.blend"


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.blender)


@pytest.fixture(scope="session")
def ext():
    """The extension package ``drla_ext``, registered once for the session."""
    return register_extension()


@pytest.fixture
def empty_scene(ext):
    """A fresh empty file; keeps our registered classes (read_homefile does)."""
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    yield bpy.context.scene


@pytest.fixture
def arm3_scene(ext, tmp_path):
    """``scenes/robot_arm`` opened with its Arm3 tree picked, writing only into ``tmp_path``."""
    from drla_ext.addon import ik_runtime, session

    bpy.ops.wm.open_mainfile(filepath=str(ROBOT_ARM_SCENE))
    scene = bpy.context.scene
    tree = bpy.data.node_groups["Arm3"]
    next(n for n in tree.nodes if n.bl_idname == "DRLA_ExportJSONNode").filepath = str(tmp_path / "arm3.json")
    scene.drla.tree = tree
    scene.drla.output_dir = str(tmp_path)
    yield scene
    ik_runtime.disable_follow(restore=False)
    session.discard_all()
