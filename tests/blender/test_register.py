"""Registration of the DRLA tree, sockets, nodes and Add menu, and drawing nodes headless."""

from unittest.mock import MagicMock

import bpy
import pytest


def test_register_unregister_register(ext):
    from drla_ext.addon import nodes
    from drla_ext.addon.tree import node_tree

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


def test_add_menu_lists_categories_with_labels(ext, empty_scene):
    """Every node is in a category and its menu item reads its label, never an idname.

    The menu as drawn in a real window (where 5.2 once showed "DRLA_CameraSensorNode") is
    checked by make test-gui, which reads the Add menu's pixels."""
    from drla_ext.addon.ui import node_menu
    from drla_ext.addon import nodes

    categories = [menu.bl_label for menu in node_menu.MENUS]
    listed = {i for category in categories for i in node_menu.node_ids(category)}
    assert {c.bl_idname for c in nodes.classes} <= listed
    assert {"Sensors", "Actions", "Rewards", "Agent", "Network", "Output"} <= set(categories)
    assert not node_menu.node_ids("Other")
    for idname in listed:
        label = node_menu.label_of(idname)
        assert label == bpy.types.Node.bl_rna_get_subclass_py(idname).bl_label
        assert "DRLA" not in label and "Node" not in label
    assert {m.bl_idname for m in node_menu.MENUS} <= set(dir(bpy.types))  # registered
