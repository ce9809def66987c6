"""The example trees read left to right by role and no two nodes overlap.

Headless Blender has no drawn node sizes, so this checks the layout's own estimates (from the rows
each node's ``draw`` makes); ``make test-gui`` checks the real drawn rectangles in a window.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import bpy
import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = {name: ROOT / f"scenes/{name}/{name}.blend"
           for name in ("tank", "robot_arm", "pacman", "tank_duel", "chase", "cartpole_rb", "walker")}


def _rects(examples, tree) -> dict[str, tuple[float, float, float, float]]:
    """name -> (left, top, right, bottom) in the editor's coordinates (y up)."""
    return {n.name: (n.location.x, n.location.y, n.location.x + examples.node_width(n),
                     n.location.y - examples.estimated_height(n)) for n in tree.nodes}


def _overlaps(rects) -> list[tuple[str, str]]:
    out = []
    for (a, (l1, t1, r1, b1)), (b, (l2, t2, r2, b2)) in itertools.combinations(sorted(rects.items()), 2):
        if l1 < r2 and l2 < r1 and b1 < t2 and b2 < t1:
            out.append((a, b))
    return out


def _check_tree(examples, tree) -> None:
    """No two nodes overlap; every wire runs left to right (none runs back: a chain of hidden layers too)."""
    rects = _rects(examples, tree)
    assert not _overlaps(rects), f"{tree.name}: overlapping nodes {_overlaps(rects)}"
    for link in tree.links:
        a, b = rects[link.from_node.name], rects[link.to_node.name]
        assert a[2] <= b[0], \
            f"{tree.name}: '{link.from_node.name}' is not left of '{link.to_node.name}', which it feeds"
    width = max(r[2] for r in rects.values()) - min(r[0] for r in rects.values())
    height = max(r[1] for r in rects.values()) - min(r[3] for r in rects.values())
    assert height <= examples.MAX_COLUMN_HEIGHT + 100 and height < width, f"{tree.name}: {width} x {height}"


@pytest.mark.parametrize("scene_name", sorted(SHIPPED))
def test_shipped_trees_have_no_overlapping_nodes_and_flow_left_to_right(ext, scene_name):
    from drla_ext.addon.ui import examples

    bpy.ops.wm.open_mainfile(filepath=str(SHIPPED[scene_name]))
    trees = [t for t in bpy.data.node_groups if t.bl_idname == "DRLA_NodeTree"]
    assert trees
    for tree in trees:
        _check_tree(examples, tree)


def test_every_example_builder_lays_its_tree_out(ext, empty_scene):
    from drla_ext.addon.ui import examples

    bpy.ops.wm.open_mainfile(filepath=str(SHIPPED["tank"]))
    tree = examples.build_tank_tree(bpy.context.scene, name="Tank with target", target_sensor=True)
    _check_tree(examples, tree)
    tree = examples.build_transform_tree(bpy.context.scene)
    _check_tree(examples, tree)


@pytest.mark.parametrize("name", ["Tank", "Reach (transform)", "Robot Arm 6 (Learned IK)", "Robot Arm 3 (Learned IK)",
                                  "Chase (two agents)", "Tank Duel (two agents)", "Cart-Pole (rigid body)", "Walker",
                                  "Pac-Man (co-evolution)"])
def test_every_example_from_the_add_menu_reads_left_to_right_with_no_wire_running_back(ext, empty_scene, name):
    from drla_ext.addon.ui import examples

    assert bpy.ops.drla.add_example(name=name) == {'FINISHED'}
    tree = bpy.context.scene.drla.tree
    _check_tree(examples, tree)


def test_the_height_estimate_follows_what_the_node_draws(ext, empty_scene):
    """A Wait action draws two rows, a Move action with limits many more: the estimate sees it."""
    from drla_ext.addon.ui import examples

    tree = bpy.data.node_groups.new("Heights", "DRLA_NodeTree")
    action = tree.nodes.new("DRLA_ActionNode")
    action.kind = 'WAIT'
    wait = examples.estimated_height(action)
    action.kind = 'MOVE'
    move = examples.estimated_height(action)
    action.use_limits = True
    limited = examples.estimated_height(action)
    assert wait < move < limited
    assert limited - move == 24 * 4  # Min and Max side by side: a label and three rows, once


# --------------------------------------------------------------------------- where an example goes
def _default_file():
    """Blender's default file: the Cube at the origin, a camera and a light."""
    bpy.ops.wm.read_homefile(use_empty=False, use_factory_startup=True)
    scene = bpy.context.scene
    assert "Cube" in scene.objects
    return scene


@pytest.mark.parametrize("name, objects", [("Tank", ("TankA", "Ground")), ("Pac-Man (co-evolution)", ("PacMan",)),
                                           ("Robot Arm 3 (Learned IK)", ("Arm3",))])
def test_an_example_goes_to_a_new_scene_when_the_default_cube_is_in_its_way(ext, name, objects):
    scene = _default_file()
    before = {ob.name for ob in scene.objects}
    assert bpy.ops.drla.add_example(name=name) == {'FINISHED'}
    new = [s for s in bpy.data.scenes if s != scene]
    assert len(new) == 1 and new[0].drla.tree is not None
    assert all(n in new[0].objects for n in objects) and "Cube" not in new[0].objects
    assert {ob.name for ob in scene.objects} == before and not scene.objects["Cube"].hide_get()
    assert f"in a new scene '{new[0].name}' ('Cube' in the way)" in new[0].drla.message
    window = bpy.context.window_manager.windows[0] if bpy.context.window_manager.windows else None
    if bpy.context.window is not None and window is not None:
        assert window.scene == new[0]  # the window shows the example


def test_an_example_goes_into_this_scene_when_nothing_is_in_its_way(ext):
    scene = _default_file()
    scene.objects["Cube"].location = (200.0, 0.0, 0.0)  # far from the arena
    assert bpy.ops.drla.add_example(name="Tank") == {'FINISHED'}
    assert list(bpy.data.scenes) == [scene] and "TankA" in scene.objects
    assert not scene.objects["Cube"].hide_get() and "new scene" not in scene.drla.message


def test_an_example_put_in_this_scene_hides_and_names_what_is_in_its_way(ext):
    scene = _default_file()
    assert bpy.ops.drla.add_example(name="Tank", place='HERE') == {'FINISHED'}
    assert list(bpy.data.scenes) == [scene] and "TankA" in scene.objects
    assert scene.objects["Cube"].hide_get() and "hid 'Cube'" in scene.drla.message
    assert not scene.objects["Camera"].hide_get()  # a camera or a light hides nothing


def test_an_example_in_a_new_scene_by_choice(ext, empty_scene):
    assert bpy.ops.drla.add_example(name="Reach (transform)", place='NEW_SCENE') == {'FINISHED'}
    new = [s for s in bpy.data.scenes if s != empty_scene]
    assert len(new) == 1 and "Agent" in new[0].objects and "Agent" not in empty_scene.objects
    assert "in a new scene 'Reach'" in new[0].drla.message


def test_the_examples_menu_reads_as_written(ext):
    from drla_ext.addon.ui import examples_menu

    assert examples_menu.label("Robot Arm 6 (Learned IK)") == "Robot Arm 6 (Learned IK)"


def test_an_example_in_a_new_scene_gets_its_own_objects_where_the_file_has_others_of_those_names(ext, tmp_path):
    """Tank, then Tank Duel, in Blender's default file: the duel's TankB (with its score) is its own copy, not the
    Tank example's TankB (a target without one); the duel's tree compiles and trains on its copies."""
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.tree.compiler import compile_tree

    _default_file()
    assert bpy.ops.drla.add_example(name="Tank") == {'FINISHED'}
    tank_scene = bpy.data.scenes["Tank"]
    assert "score" not in tank_scene.objects["TankB"]
    assert bpy.ops.drla.add_example(name="Tank Duel (two agents)") == {'FINISHED'}
    duel = bpy.data.scenes["Tank Duel"]
    tank_b = next(ob for ob in duel.objects if ob.name.startswith("TankB") and ob.type == 'MESH'
                  and not ob.name.startswith("TankBCamera"))
    assert tank_b.name != "TankB" and tank_b["score"] == 0 and "TankA" not in tank_scene.objects["TankB"].name
    assert not set(duel.objects) & set(tank_scene.objects)  # nothing shared between the two scenes
    compiled = compile_tree(duel.drla.tree, duel)
    assert len(compiled.team) == 2
    duel.drla.output_dir = str(tmp_path)
    with bpy.context.temp_override(scene=duel):
        assert bpy.ops.drla.train(steps=30) == {'FINISHED'}, duel.drla.error
    sessions.discard_all()
