"""The trained network lives in the .blend; Import/Export read and write the v1 model format."""

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")


@pytest.fixture
def core(ext):
    import drla_ext.drla_core as core  # noqa: F401
    from drla_ext.drla_core.base import spaces
    from drla_ext.drla_core.io import model_io
    from drla_ext.drla_core.nn import mlp

    return mlp, model_io, spaces


@pytest.fixture
def tree(empty_scene):
    tree = bpy.data.node_groups.new("Tank brain", "DRLA_NodeTree")
    tree.use_fake_user = True
    empty_scene.drla.tree = tree
    return tree


def make_model(core, seed=0):
    mlp, model_io, spaces = core
    net = mlp.MLP(4, [(8, "relu")], 3, rng=seed)
    return model_io.Model(net, spaces.Box(-1.0, 1.0, (4,)), spaces.Discrete(3, names=["a", "b", "c"]))


OBS = np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4)


def test_store_and_load_round_trip(ext, core, tree):
    from drla_ext.addon.runs import model_store

    assert not model_store.has_model(tree)
    model = make_model(core)
    text = model_store.store_model(tree, model)
    assert text.name == "DRLA model: Tank brain"
    assert text.use_fake_user
    loaded = model_store.load_stored_model(tree)
    np.testing.assert_array_equal(loaded.predict(OBS), model.predict(OBS))
    assert json.loads(text.as_string())["format"] == "drla-model"


def test_model_survives_save_and_reopen(ext, core, tree, tmp_path):
    from drla_ext.addon.runs import model_store

    model = make_model(core, seed=3)
    model_store.store_model(tree, model)
    path = str(tmp_path / "scene.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert "DRLA model: Tank brain" not in bpy.data.texts
    bpy.ops.wm.open_mainfile(filepath=path)
    tree = bpy.data.node_groups["Tank brain"]
    assert bpy.context.scene.drla.tree == tree
    reopened = model_store.load_stored_model(tree)
    np.testing.assert_array_equal(reopened.predict(OBS), model.predict(OBS))
    assert reopened.action_space.names == ["a", "b", "c"]


def test_export_operator_writes_the_v1_file(ext, core, tree, tmp_path):
    _, model_io, _ = core
    from drla_ext.addon.runs import model_store

    assert not bpy.ops.drla.export_model.poll()
    model = make_model(core)
    model_store.store_model(tree, model)
    assert bpy.ops.drla.export_model.poll()
    path = tmp_path / "brain.json"
    assert bpy.ops.drla.export_model(filepath=str(path)) == {'FINISHED'}
    again = model_io.load_model(path)
    np.testing.assert_array_equal(again.predict(OBS), model.predict(OBS))
    assert "Exported" in bpy.context.scene.drla.message


def test_import_operator_stores_a_valid_file(ext, core, tree, tmp_path):
    _, model_io, _ = core
    from drla_ext.addon.runs import model_store

    model = make_model(core, seed=7)
    path = tmp_path / "in.json"
    model_io.save_model(path, model)
    assert bpy.ops.drla.import_model(filepath=str(path)) == {'FINISHED'}
    np.testing.assert_array_equal(model_store.load_stored_model(tree).predict(OBS), model.predict(OBS))
    assert bpy.context.scene.drla.error == ""


@pytest.mark.parametrize("content, expected", [
    ("{not json", "not a JSON model file"),
    ('{"format": "drla-model", "version": 99}', "version"),
    ("", "not a JSON model file"),
])
def test_import_rejects_a_corrupt_file_and_changes_nothing(ext, core, tree, tmp_path, content, expected):
    from drla_ext.addon.runs import model_store

    model = make_model(core, seed=1)
    model_store.store_model(tree, model)
    before = model_store.find_text(tree).as_string()
    nodes_before = [n.name for n in tree.nodes]
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(RuntimeError, match=expected):  # bpy.ops raises on an ERROR report
        bpy.ops.drla.import_model(filepath=str(bad))
    error = bpy.context.scene.drla.error
    assert "bad.json" in error and expected in error
    assert model_store.find_text(tree).as_string() == before
    assert [n.name for n in tree.nodes] == nodes_before
    # a missing file is reported the same way
    with pytest.raises(RuntimeError, match="No such file"):
        bpy.ops.drla.import_model(filepath=str(tmp_path / "missing.json"))


def test_damaged_stored_text_gives_a_readable_error(ext, core, tree):
    _, model_io, _ = core
    from drla_ext.addon.runs import model_store

    model_store.store_json(tree, '{"format": "drla-model"')
    with pytest.raises(model_io.ModelFormatError, match="damaged"):
        model_store.load_stored_model(tree)
