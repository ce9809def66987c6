"""restored_scene: the user's scene comes back bit for bit after training, a stop, or a crash."""

import math

import bpy
import pytest


def _plain(v):
    if hasattr(v, "to_dict"):
        return v.to_dict()
    if hasattr(v, "to_list"):
        return v.to_list()
    return v


def _props(owner):
    return {k: _plain(owner[k]) for k in owner.keys()}


_ATTRS = ("location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale", "delta_location",
          "delta_rotation_euler", "delta_rotation_quaternion", "delta_scale")


def full_dump(scene):
    """Every transform, matrix, property, visibility and selection state: compared with ==, bit for bit."""
    vl = bpy.context.view_layer
    # The user's custom properties of the scene. Blender 4.5 keeps an add-on's property group as an ID property
    # too (scene["drla"]): that is DRLA's own sidebar state (progress, the last message), which a run updates.
    scene_props = {k: v for k, v in _props(scene).items() if k != "drla"}
    out = {"frame": (scene.frame_current, scene.frame_subframe), "scene_props": scene_props,
           "active": vl.objects.active.name if vl.objects.active else None, "objects": {},
           "rb_cache": (tuple(scene.rigidbody_world.point_cache.frame_start for _ in [0])
                        + (scene.rigidbody_world.point_cache.frame_end,)) if scene.rigidbody_world else None}
    for ob in scene.objects:
        d = {a: tuple(getattr(ob, a)) for a in _ATTRS}
        d.update(mode=ob.rotation_mode, matrix_world=tuple(map(tuple, ob.matrix_world)),
                 matrix_basis=tuple(map(tuple, ob.matrix_basis)), props=_props(ob),
                 hide=(ob.hide_viewport, ob.hide_render, ob.hide_select, ob.hide_get()), select=ob.select_get())
        if ob.pose is not None:
            d["bones"] = {pb.name: ({a: tuple(getattr(pb, a)) for a in _ATTRS[:5]}, pb.rotation_mode,
                                    tuple(map(tuple, pb.matrix)), _props(pb)) for pb in ob.pose.bones}
        out["objects"][ob.name] = d
    return out


@pytest.fixture
def busy_scene(empty_scene):
    """Objects in every rotation mode, a parent, an armature pose, custom properties, selection,
    hidden objects, a rigid body, and a frame other than the start; plus a tree acting on them."""
    scene = empty_scene
    from drla_ext.addon.ui import examples

    agent, goal = examples.build_transform_scene(scene)
    agent.rotation_mode = 'QUATERNION'
    agent.rotation_quaternion = (0.9, 0.1, 0.3, 0.2)
    agent["energy"] = 1.5
    agent["tags"] = [1, 2, 3]
    agent["meta"] = {"team": "red", "level": 3}
    goal.rotation_mode = 'AXIS_ANGLE'
    goal.rotation_axis_angle = (0.7, 0.0, 0.6, 0.8)
    child = bpy.data.objects.new("Child", None)
    scene.collection.objects.link(child)
    child.parent, child.rotation_mode, child.rotation_euler = agent, 'ZYX', (0.1, 0.2, 0.3)
    child.location, child.scale = (1, 0, 0), (2, 2, 2)
    arm = bpy.data.objects.new("Arm", bpy.data.armatures.new("Arm"))
    scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode='EDIT')
    for i, name in enumerate(("Upper", "Lower")):
        bone = arm.data.edit_bones.new(name)
        bone.head, bone.tail = (0, 0, i), (0, 0, i + 1)
    bpy.ops.object.mode_set(mode='OBJECT')
    arm.pose.bones["Upper"].rotation_quaternion = (0.8, 0.6, 0.0, 0.0)
    arm.pose.bones["Lower"].rotation_mode = 'XZY'
    arm.pose.bones["Lower"].rotation_euler = (0.3, 0.0, 0.1)
    arm.pose.bones["Lower"]["stiff"] = 0.25
    bpy.ops.rigidbody.world_add()
    bpy.ops.mesh.primitive_cube_add(location=(6, 6, 10))
    bpy.ops.rigidbody.object_add(type='ACTIVE')
    faller = bpy.context.active_object
    faller.name = "Faller"
    scene["difficulty"] = 2
    child.hide_set(True)
    goal.hide_render = True
    agent.select_set(True)
    faller.select_set(False)
    bpy.context.view_layer.objects.active = goal
    for frame in range(scene.frame_start, 8):  # played to frame 7: the body has fallen a little
        scene.frame_set(frame)

    tree = examples.build_transform_tree(scene)
    actions = tree.nodes["Action Set"]
    for kind, extra in (('ROTATE', {"object": agent, "vector": (10, 0, 5)}),
                        ('BONE_ROTATE', {"object": arm, "bone": "Lower", "vector": (0, 15, 0)}),
                        ('ADD_PROPERTY', {"object": agent, "property": "energy", "value": 0.5}),
                        ('ROTATE', {"object": goal, "vector": (0, 0, 30)})):
        item = tree.nodes.new("DRLA_ActionNode")
        item.kind, item.action_name = kind, f"{kind.lower()}_{len(actions.inputs[0].links)}"
        for key, value in extra.items():
            setattr(item, key, value)
        tree.links.new(item.outputs[0], actions.inputs[0])
    return scene, tree


def test_restored_bit_exact_after_training(busy_scene):
    from drla_ext.addon.runs.build import train_tree

    scene, tree = busy_scene
    before = full_dump(scene)
    run, agent, compiled = train_tree(tree, scene, total_steps=400)
    assert run.steps == 400 and len(compiled.env.actions) == 9
    after = full_dump(scene)
    assert after == before


def test_restored_bit_exact_after_error_mid_episode(busy_scene):
    from drla_ext.addon.runs.build import build_env
    from drla_ext.addon.tree.compiler import compile_tree
    from drla_ext.addon.scene.snapshot import restored_scene

    scene, tree = busy_scene
    before = full_dump(scene)
    compiled = compile_tree(tree, scene)
    with pytest.raises(RuntimeError, match="boom"):
        with restored_scene(scene):
            env = build_env(compiled, scene)
            env.reset(seed=0)
            for action in range(env.action_space.n):
                env.step(action)
            assert full_dump(scene) != before  # the run really changed things
            raise RuntimeError("boom")
    assert full_dump(scene) == before


def test_snapshot_restores_rotation_modes_and_props(busy_scene):
    from drla_ext.addon.scene.snapshot import SceneSnapshot

    scene, _ = busy_scene
    before = full_dump(scene)
    snap = SceneSnapshot.capture(scene)
    agent = scene.objects["Agent"]
    agent.rotation_mode = 'XYZ'
    agent["energy"] = 99.0
    agent["new"] = 1
    del agent["tags"]
    scene["difficulty"] = 5
    scene.objects["Goal"].hide_render = False
    scene.objects["Child"].hide_set(False)
    bpy.context.view_layer.objects.active = agent
    scene.objects["Arm"].pose.bones["Upper"].rotation_quaternion = (1, 0, 0, 0)
    scene.frame_set(100)
    snap.restore()
    assert full_dump(scene) == before
    assert math.isclose(scene.objects["Agent"]["energy"], 1.5)
