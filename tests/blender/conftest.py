"""Fixtures for the tests that run on real Blender (the ``bpy`` wheel, headless)."""

import pytest

bpy = pytest.importorskip("bpy")

from drla.extension import register_extension  # noqa: E402


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
