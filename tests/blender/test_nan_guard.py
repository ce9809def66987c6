"""NaN from the user's scene stops training with a message naming the node; nothing else changes."""

import math

import bpy
import pytest


@pytest.fixture
def reach(ext, empty_scene, tmp_path):
    from drla_ext.addon.ui import examples

    examples.build_transform_scene(empty_scene)
    tree = examples.build_transform_tree(empty_scene)
    agent = empty_scene.objects["Agent"]
    agent["fuel"] = 1.0
    fuel = tree.nodes.new("DRLA_PropertySensorNode")
    fuel.name = "Fuel"
    fuel.object, fuel.property = agent, "fuel"
    state = next(n for n in tree.nodes if n.bl_idname == "DRLA_StateNode")
    tree.links.new(fuel.outputs[0], state.inputs["Sensors"])
    empty_scene.drla.tree = tree
    empty_scene.drla.output_dir = str(tmp_path)
    yield tree
    from drla_ext.addon.runs import sessions

    sessions.discard_all()


def _state(scene):
    return {ob.name: (tuple(ob.location), tuple(ob.rotation_euler), dict(ob.items())) for ob in scene.objects}


def test_non_finite_sensor_names_the_node(reach, empty_scene):
    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler
    from drla_ext.addon.scene import sensors

    empty_scene.objects["Agent"]["fuel"] = math.nan
    compiled = compiler.compile_tree(reach, empty_scene)
    env = build.build_env(compiled, empty_scene)
    try:
        with pytest.raises(sensors.NonFiniteError, match=r"Sensor 'Fuel' read nan \(not a finite number\)"):
            env.reset(seed=0)
    finally:
        env.close()


def test_train_button_reports_nan_in_the_panel_and_changes_nothing(reach, empty_scene):
    from drla_ext.addon.runs import model_store

    empty_scene.objects["Agent"]["fuel"] = math.nan
    before = _state(empty_scene)
    with pytest.raises(RuntimeError):
        bpy.ops.drla.train(steps=300)
    assert "not a finite number" in empty_scene.drla.error
    assert _state(empty_scene).keys() == before.keys()
    for name, (loc, rot, props) in _state(empty_scene).items():  # NaN != NaN: compare the rest exactly
        assert (loc, rot) == before[name][:2]
        assert {k: v for k, v in props.items() if k != "fuel"} == {k: v for k, v in before[name][2].items()
                                                                    if k != "fuel"}
    assert not model_store.has_model(reach)
