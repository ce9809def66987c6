"""Registration of the DRLA tree, sockets, nodes and Add menu, and drawing nodes headless."""

from types import SimpleNamespace
from unittest.mock import MagicMock

import bpy
import pytest


def test_register_unregister_register(ext):
    from drla_ext.addon import nodes, node_tree

    assert node_tree.DRLA_NodeTree.is_registered
    ext.unregister()
    assert not node_tree.DRLA_NodeTree.is_registered
    assert not any(c.is_registered for c in nodes.classes)
    ext.register()
    assert node_tree.DRLA_NodeTree.is_registered
    assert all(c.is_registered for c in nodes.classes)


def test_every_node_adds_and_draws(ext, empty_scene):
    from drla_ext.addon import nodes

    tree = bpy.data.node_groups.new("T", "DRLA_NodeTree")
    for cls in nodes.classes:
        assert cls.bl_idname.startswith("DRLA_") and cls.bl_idname.endswith("Node")
        assert cls.__doc__, f"{cls.__name__} needs a docstring (its tooltip)"
        node = tree.nodes.new(cls.bl_idname)
        layout = MagicMock()
        node.draw_buttons(bpy.context, layout)
        assert "draw failed" not in str(layout.mock_calls)
    assert len(tree.nodes) == len(nodes.classes)


def test_nodes_refuse_other_trees(ext, empty_scene):
    mat = bpy.data.materials.new("M")
    mat.use_nodes = True
    with pytest.raises(RuntimeError):
        mat.node_tree.nodes.new("DRLA_StateNode")


def test_error_is_drawn_in_red_with_icon(ext, empty_scene):
    tree = bpy.data.node_groups.new("T", "DRLA_NodeTree")
    node = tree.nodes.new("DRLA_TransformSensorNode")
    node.drla_error = "choose an object"
    layout = MagicMock()
    node.draw_buttons(bpy.context, layout)
    col = layout.column.return_value
    assert col.alert is True
    col.label.assert_any_call(text="choose an object", icon='ERROR')


def test_state_node_shows_observation_size(ext, empty_scene):
    tree = bpy.data.node_groups.new("T", "DRLA_NodeTree")
    state = tree.nodes.new("DRLA_StateNode")
    cam = tree.nodes.new("DRLA_CameraSensorNode")
    cam.width, cam.height, cam.mode = 8, 4, 'RGB'
    dist = tree.nodes.new("DRLA_DistanceSensorNode")
    tree.links.new(cam.outputs[0], state.inputs[0])
    tree.links.new(dist.outputs[0], state.inputs[0])
    assert state.inputs[0].is_multi_input
    assert state.summary() == "observation size 97"


def test_add_menu_lists_categories(ext, empty_scene):
    from drla_ext.addon import node_menu, nodes

    listed = {i for ids in node_menu.CATEGORIES.values() for i in ids}
    assert {c.bl_idname for c in nodes.classes} <= listed
    assert {"Sensors", "Actions", "Rewards", "Agent", "Network", "Output"} <= set(node_menu.CATEGORIES)
    fake = SimpleNamespace(layout=MagicMock())
    node_menu.draw_add_menu(fake, SimpleNamespace(space_data=SimpleNamespace(tree_type="DRLA_NodeTree")))
    menus = [c.args[0] for c in fake.layout.menu.call_args_list]
    assert "DRLA_MT_add_sensors" in menus and "DRLA_MT_add_other" not in menus
    other = SimpleNamespace(layout=MagicMock())
    node_menu.draw_add_menu(other, SimpleNamespace(space_data=SimpleNamespace(tree_type="ShaderNodeTree")))
    assert not other.layout.menu.called
    sensors_menu = next(m for m in node_menu.MENUS if m.bl_label == "Sensors")
    menu_self = SimpleNamespace(layout=MagicMock())
    sensors_menu.draw(menu_self, bpy.context)
    assert menu_self.layout.mock_calls  # one add item per sensor node
