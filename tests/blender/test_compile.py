"""compile_tree: plain data out, one message per problem on the right node, the scene untouched."""

import dataclasses

import bpy
import pytest


def scene_state(scene):
    """Everything a compile could conceivably change, as plain values."""
    out = {"frame": scene.frame_current, "props": dict(scene.items())}
    for ob in scene.objects:
        out[ob.name] = (tuple(ob.location), tuple(ob.rotation_euler), tuple(ob.scale),
                        tuple(tuple(r) for r in ob.matrix_world), dict(ob.items()), ob.select_get())
    return out


@pytest.fixture
def reach(empty_scene):
    from drla_ext.addon.ui import examples

    tree = examples.build_transform_tree(empty_scene)
    return tree, empty_scene


def compile_errors(tree, scene):
    from drla_ext.addon.tree.compiler import CompileError
    from drla_ext.addon.tree.compiler import compile_tree

    before = scene_state(scene)
    with pytest.raises(CompileError) as info:
        compile_tree(tree, scene)
    assert scene_state(scene) == before, "compiling changed the scene"
    for name, message in info.value.errors:
        if name:
            assert message in tree.nodes[name].drla_error
    return info.value.errors


def _is_plain(value):
    if isinstance(value, (str, int, float, bool, type(None))):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return False


def test_example_compiles_to_plain_data(reach):
    from drla_ext.addon.tree.compiler import compile_tree

    tree, scene = reach
    before = scene_state(scene)
    compiled = compile_tree(tree, scene)
    assert scene_state(scene) == before
    assert _is_plain(dataclasses.asdict(compiled))
    env = compiled.env
    assert env.state.size == 4 and env.action_names == ["right", "left", "front", "back", "wait"]
    assert [r.kind for r in env.rewards] == ["distance", "step_cost"]
    assert [d.kind for d in env.dones] == ["within_distance", "out_of_bounds"]
    assert env.random_objects == ["Agent", "Goal"]
    assert compiled.agent.hidden == [(64, "relu"), (64, "relu")]
    assert compiled.trainer.total_steps == 6000
    assert all(not n.drla_error for n in tree.nodes)


def test_missing_link(reach):
    tree, scene = reach
    env = tree.nodes["Environment"]
    tree.links.remove(env.inputs["State"].links[0])
    assert ("Environment", "nothing is linked to its State input") in compile_errors(tree, scene)


def test_wrong_socket_type(reach):
    tree, scene = reach
    reward = tree.nodes.new("DRLA_StepCostNode")
    tree.links.new(reward.outputs[0], tree.nodes["State"].inputs["Sensors"])
    errors = compile_errors(tree, scene)
    assert [n for n, _ in errors] == ["State"]
    assert errors[0][1] == f"its Sensors input takes a Sensor, but '{reward.name}' gives a Reward"


def test_cycle(reach):
    tree, scene = reach
    a, b = tree.nodes["Hidden Layer"], tree.nodes["Hidden Layer.001"]
    tree.links.new(b.outputs[0], a.inputs["Previous"])  # a -> b already exists
    errors = compile_errors(tree, scene)
    assert {n for n, m in errors if "loop of links" in m} == {a.name, b.name}


def test_missing_object(reach):
    tree, scene = reach
    tree.nodes["Transform Sensor"].object = None
    assert ("Transform Sensor", "choose an object") in compile_errors(tree, scene)
    tree.nodes["Distance Sensor"].object_b = None
    assert ("Distance Sensor", "choose an object for To") in compile_errors(tree, scene)


def test_object_from_another_scene(reach):
    tree, scene = reach
    other = bpy.data.scenes.new("Other")
    ob = bpy.data.objects.new("Elsewhere", None)
    other.collection.objects.link(ob)
    tree.nodes["Distance Sensor"].object_b = ob
    errors = compile_errors(tree, scene)
    assert errors == [("Distance Sensor", f"To 'Elsewhere' is not in the scene '{scene.name}'")]


def test_missing_bone(reach):
    tree, scene = reach
    arm = bpy.data.objects.new("Arm", bpy.data.armatures.new("Arm"))
    scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode='EDIT')
    bone = arm.data.edit_bones.new("Bone")
    bone.tail = (0, 0, 1)
    bpy.ops.object.mode_set(mode='OBJECT')
    sensor = tree.nodes.new("DRLA_BoneRotationsSensorNode")
    sensor.armature, sensor.bones = arm, "Bone, Nope"
    tree.links.new(sensor.outputs[0], tree.nodes["State"].inputs["Sensors"])
    assert compile_errors(tree, scene) == [(sensor.name, "armature 'Arm' has no bone 'Nope'")]
    sensor.bones = "Bone"
    from drla_ext.addon.tree.compiler import compile_tree

    assert compile_tree(tree, scene).env.state.size == 8
    assert sensor.drla_error == ""


def test_missing_camera(reach):
    tree, scene = reach
    cam = tree.nodes.new("DRLA_CameraSensorNode")
    tree.links.new(cam.outputs[0], tree.nodes["State"].inputs["Sensors"])
    assert (cam.name, "choose a camera") in compile_errors(tree, scene)
    cam.camera = scene.objects["Goal"]  # an empty is not a camera
    assert (cam.name, "Camera 'Goal' is not a camera (it is an empty)") in compile_errors(tree, scene)


def test_empty_action_set(reach):
    tree, scene = reach
    action_set = tree.nodes["Action Set"]
    for link in list(action_set.inputs[0].links):
        tree.links.remove(link)
    assert ("Action Set", "the action set is empty: link Action nodes into it") in compile_errors(tree, scene)


def test_missing_property_and_duplicate_names(reach):
    tree, scene = reach
    prop = tree.nodes.new("DRLA_PropertySensorNode")
    prop.object, prop.property = scene.objects["Agent"], "score"
    tree.links.new(prop.outputs[0], tree.nodes["State"].inputs["Sensors"])
    tree.nodes["Action.001"].action_name = "right"
    errors = compile_errors(tree, scene)
    assert (prop.name, "'Agent' has no property 'score'") in errors
    assert ("Action.001", "two actions are named 'right'") in errors


def test_errors_clear_when_fixed(reach):
    from drla_ext.addon.tree.compiler import compile_tree

    tree, scene = reach
    node = tree.nodes["Transform Sensor"]
    goal = node.object
    node.object = None
    compile_errors(tree, scene)
    assert node.drla_error
    node.object = goal
    compile_tree(tree, scene)
    assert node.drla_error == ""


def test_blend_roundtrip_keeps_tree(reach, tmp_path):
    from drla_ext.addon.tree.compiler import compile_tree

    tree, scene = reach
    tree.nodes["Environment"].max_steps = 77
    expected = compile_tree(tree, scene)
    links = sorted((lk.from_node.name, lk.to_node.name, lk.to_socket.identifier) for lk in tree.links)
    path = str(tmp_path / "reach.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert "Reach" not in bpy.data.node_groups
    bpy.ops.wm.open_mainfile(filepath=path)
    tree = bpy.data.node_groups["Reach"]
    assert tree.bl_idname == "DRLA_NodeTree"
    assert sorted((lk.from_node.name, lk.to_node.name, lk.to_socket.identifier) for lk in tree.links) == links
    assert tree.nodes["Environment"].max_steps == 77
    assert tree.nodes["Transform Sensor"].object.name == "Goal"
    again = compile_tree(tree, bpy.context.scene)
    assert (again.env, again.agent) == (expected.env, expected.agent)
    assert again.trainer.exports == [str(tmp_path / "reach_model.json")]  # "//" is now the file's folder


def test_trainer_evaluations_reach_the_run_so_keep_best_can_work(ext, empty_scene):
    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler
    from drla_ext.addon.ui import examples

    examples.build_transform_scene(empty_scene)
    tree = examples.build_transform_tree(empty_scene)
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_TrainerNode")
    trainer.eval_interval, trainer.eval_episodes = 300, 2
    compiled = compiler.compile_tree(tree, empty_scene)
    env = build.build_env(compiled, empty_scene)
    try:
        agent = build.build_agent(compiled, env, total_steps=900)
        assert agent.config.keep_best
        run = build.build_run(compiled, env, agent, 900)
        assert (run.eval_interval, run.eval_episodes) == (300, 2)
        run.run()
        steps = [step for step, *_ in run.history.evals]  # on the training env: at the next episode end
        assert len(steps) >= 2 and 300 <= steps[0] < 350 and 600 <= steps[1] < 650
        assert run.history.final_eval is not None
    finally:
        env.close()
