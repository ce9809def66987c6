"""Learned IK trees: compile (IK Agent [-> Trainer -> Export JSON], per-node errors), the panel's
Train / Learned IK follow / Bake on an IK tree, headless on real bpy."""

import importlib
import json
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

SCENE = Path(__file__).resolve().parents[2] / "scenes" / "robot_arm" / "robot_arm.blend"


def make_chain(scene, name="Chain", branch=False):
    """A 3-bone chain armature (0.4 m bones along +Z); ``branch`` adds a second child to the root."""
    data = bpy.data.armatures.new(name)
    ob = bpy.data.objects.new(name, data)
    scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode='EDIT')
    parent, z = None, 0.0
    for i in range(3):
        eb = data.edit_bones.new(f"B{i}")
        eb.head, eb.tail = (0, 0, z), (0, 0, z + 0.4)
        if parent is not None:
            eb.parent, eb.use_connect = parent, True
        parent, z = eb, z + 0.4
    if branch:
        eb = data.edit_bones.new("Side")
        eb.head, eb.tail = (0, 0, 0.4), (0.3, 0, 0.4)
        eb.parent = data.edit_bones["B0"]
    bpy.ops.object.mode_set(mode='OBJECT')
    return ob


def ik_tree(scene, arm=None, target=None, with_trainer=True, name="IK"):
    tree = bpy.data.node_groups.new(name, "DRLA_NodeTree")
    tree.use_fake_user = True
    agent = tree.nodes.new("DRLA_IKAgentNode")
    if arm is not None:
        agent.armature = arm
    if target is not None:
        agent.target = target
    if with_trainer:
        trainer = tree.nodes.new("DRLA_TrainerNode")
        trainer.output_path = ""
        tree.links.new(agent.outputs["Agent"], trainer.inputs["Agent"])
        export = tree.nodes.new("DRLA_ExportJSONNode")
        tree.links.new(trainer.outputs["Model"], export.inputs["Model"])
    return tree, agent


@pytest.fixture
def compile_mod(ext):
    return importlib.import_module(f"{ext.__name__}.addon.tree.compiler")


def _errors(compile_mod, tree, scene):
    with pytest.raises(compile_mod.CompileError) as info:
        compile_mod.compile_tree(tree, scene)
    return info.value.errors


@pytest.mark.parametrize("with_trainer", [True, False])
def test_ik_tree_compiles_without_environment(compile_mod, empty_scene, tmp_path, with_trainer):
    arm = make_chain(empty_scene)
    target = bpy.data.objects.new("T", None)
    empty_scene.collection.objects.link(target)
    tree, agent = ik_tree(empty_scene, arm, target, with_trainer)
    agent.method, agent.train_steps, agent.refine_iters = 'REWARD', 123, 4
    agent.output_path = str(tmp_path / "ik.json")
    compiled = compile_mod.compile_tree(tree, empty_scene)
    assert compiled.env is None and compiled.is_ik
    spec = compiled.agent
    assert spec.kind == "ik" and spec.node == agent.name
    assert spec.config["armature"] == "Chain" and spec.config["target"] == "T"
    assert spec.config["bones"] == ["B0", "B1", "B2"]
    assert (spec.config["method"], spec.config["train_steps"], spec.config["refine_iters"]) == ('REWARD', 123, 4)
    assert spec.config["output_path"] == str(tmp_path / "ik.json")
    assert (compiled.trainer is not None) == with_trainer
    if with_trainer:
        assert len(compiled.trainer.exports) == 1
    assert agent.drla_error == ""


def test_ik_tree_errors_per_node(compile_mod, empty_scene):
    tree, agent = ik_tree(empty_scene)
    errors = _errors(compile_mod, tree, empty_scene)
    assert (agent.name, "choose an armature") in errors
    assert (agent.name, "choose an object for Target") in errors
    assert "choose an armature" in agent.drla_error

    branched = make_chain(empty_scene, "Branched", branch=True)
    agent.armature, agent.target = branched, branched
    msgs = [m for n, m in _errors(compile_mod, tree, empty_scene) if n == agent.name]
    assert any("branches; learned IK needs a chain" in m for m in msgs)
    assert any("Target must be another object" in m for m in msgs)


def test_ik_tree_rejects_non_armature_and_locked_chain(compile_mod, empty_scene):
    mesh_ob = bpy.data.objects.new("NotAnArm", bpy.data.meshes.new("m"))
    empty_scene.collection.objects.link(mesh_ob)
    target = bpy.data.objects.new("T", None)
    empty_scene.collection.objects.link(target)
    tree, agent = ik_tree(empty_scene, None, target)
    agent.armature = mesh_ob  # the pointer's poll only filters the UI picker
    if agent.armature is not None:
        msgs = [m for n, m in _errors(compile_mod, tree, empty_scene) if n == agent.name]
        assert any("is not an armature (it is a mesh)" in m for m in msgs)
    arm = make_chain(empty_scene)
    for pb in arm.pose.bones:
        pb.lock_ik_x = pb.lock_ik_y = pb.lock_ik_z = True
    agent.armature = arm
    msgs = [m for n, m in _errors(compile_mod, tree, empty_scene) if n == agent.name]
    assert any("every joint axis is locked" in m for m in msgs)


def test_ik_agent_with_an_environment_is_an_error_and_dqn_trees_still_compile(compile_mod, empty_scene):
    from tests.blender.test_operators import build_mover_tree

    tree = build_mover_tree(empty_scene)
    assert compile_mod.compile_tree(tree, empty_scene).agent.kind == "dqn"
    arm = make_chain(empty_scene)
    ik = tree.nodes.new("DRLA_IKAgentNode")
    ik.armature, ik.target = arm, bpy.data.objects["Goal"]
    assert compile_mod.compile_tree(tree, empty_scene).agent.kind == "dqn"  # an unlinked IK node is ignored
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_TrainerNode")
    for link in list(trainer.inputs["Agent"].links):
        tree.links.remove(link)
    tree.links.new(ik.outputs["Agent"], trainer.inputs["Agent"])
    errors = _errors(compile_mod, tree, empty_scene)
    assert any(n == trainer.name and "unlink the Environment" in m for n, m in errors)


def test_robot_arm_scene_has_compiling_ik_trees(compile_mod):
    bpy.ops.wm.open_mainfile(filepath=str(SCENE))
    scene = bpy.context.scene
    for name, bones in (("Arm6", 6), ("Arm3", 3)):
        compiled = compile_mod.compile_tree(bpy.data.node_groups[name], scene)
        assert compiled.is_ik and compiled.env is None
        assert compiled.agent.config["armature"] == name and compiled.agent.config["target"] == f"{name}Target"
        assert len(compiled.agent.config["bones"]) == bones and compiled.agent.hidden == [(128, "tanh"), (128, "tanh")]
        assert compiled.trainer.exports and compiled.trainer.exports[0].endswith(f"{name.lower()}_ik_model.json")


# --------------------------------------------------------------------------- panel: train / follow / bake
def _world_points(arm, n, seed):
    return arm.local_to_world(arm.sample_targets(n, seed)[0])


def _transforms(scene):
    out = {}
    for ob in scene.objects:
        out[ob.name] = [tuple(ob.matrix_world.col[i]) for i in range(4)]
        if ob.type == 'ARMATURE':
            out[ob.name] += [tuple(pb.rotation_quaternion) for pb in ob.pose.bones]
    return out


def test_train_ik_tree_from_the_panel_follow_and_bake(arm3_scene, tmp_path):
    from unittest.mock import MagicMock

    from drla_ext.addon.runs import ik_follow
    from drla_ext.addon.scene import armature
    from drla_ext.addon.runs import model_store
    from drla_ext.addon.ui import panels
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs import train as train_session

    scene = arm3_scene
    tree = scene.drla.tree
    before = _transforms(scene)
    assert bpy.ops.drla.train(steps=400) == {'FINISHED'}
    assert _transforms(scene) == before  # restored exactly
    sess = sessions.get(scene)
    assert isinstance(sess, train_session.TrainSession) and sess.state == sessions.DONE and sess.steps == 400
    model = model_store.load_stored_model(tree)
    assert model.kind == "ik" and model.extra["arm"]["bones"] == ["Base", "Upper", "Fore"]
    data = json.loads((tmp_path / "arm3.json").read_text())
    assert data["kind"] == "ik" and "arm" in data["extra"]
    assert (tmp_path / "Arm3_report.png").is_file()
    assert "under 1 mm" in scene.drla.message and sessions.ui_state(scene) == "TRAINED"
    assert not bpy.ops.drla.play.poll()  # IK trees follow instead of playing

    # Learned IK follow mode: the tip reaches the moved target after an update
    ob, target = bpy.data.objects["Arm3"], bpy.data.objects["Arm3Target"]
    arm = armature.arm_description(ob)
    view_layer = bpy.context.view_layer
    assert bpy.ops.drla.ik_follow() == {'FINISHED'} and ik_follow.follow_active(ob)
    for p in _world_points(arm, 3, 7):
        target.location = p.tolist()
        view_layer.update()  # the handler solves and sets the bones
        view_layer.update()  # evaluate the new pose
        assert np.linalg.norm(armature.tip_world(ob, arm) - p) < 1e-3

    layout = MagicMock()
    panels.draw_model(layout, bpy.context)
    ops = [c.args[0] for c in layout.mock_calls if c[0].endswith("operator")]
    assert "drla.ik_follow" in ops and "drla.bake" in ops and "drla.play" not in ops
    follow = next(c for c in layout.mock_calls if c[0].endswith("operator") and c.args[0] == "drla.ik_follow")
    assert follow.kwargs["depress"] is True
    assert bpy.ops.drla.ik_follow() == {'FINISHED'} and not ik_follow.follow_active(ob)
    assert ik_follow._on_depsgraph_update not in bpy.app.handlers.depsgraph_update_post
    panels.draw_main(MagicMock(), bpy.context)

    # bake: the target's animation over the scene's frame range -> joint keyframes
    a, b = _world_points(arm, 2, 8)
    for frame, p in ((1, a), (10, b)):
        target.location = p.tolist()
        target.keyframe_insert("location", frame=frame)
    scene.frame_start, scene.frame_end = 1, 10
    assert bpy.ops.drla.bake() == {'FINISHED'}
    assert "Baked 10 frames" in scene.drla.message
    assert ob.animation_data is not None and ob.animation_data.action is not None
    for frame in (1, 4, 10):
        scene.frame_set(frame)
        want = np.array(target.matrix_world.translation)
        assert np.linalg.norm(armature.tip_world(ob, arm) - want) < 1e-3


@pytest.mark.parametrize("ticks", [0, 1])
def test_ik_session_ticks_stop_and_resume(arm3_scene, ticks):
    """Stop right after Train (no step yet) or after a tick: Resume continues the same run to its end."""
    from drla_ext.addon.runs import model_store
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs import train as train_session

    scene = arm3_scene
    sess = train_session.TrainSession(scene, scene.drla.tree, total_steps=300).start()
    assert isinstance(sess, train_session.TrainSession) and sess.state == sessions.RUNNING
    for _ in range(ticks):
        assert sess.tick(0.0) is True  # an empty time box: exactly one step, on any machine
    assert sess.steps == ticks
    assert bpy.ops.drla.stop() == {'FINISHED'}
    assert sess.state == sessions.STOPPED and model_store.has_model(scene.drla.tree)
    assert sessions.ui_state(scene) == "STOPPED" and scene.drla.error == ""
    solver = sess.job.solver
    assert bpy.ops.drla.resume() == {'FINISHED'}
    assert sess.state == sessions.DONE and sess.steps == 300 and sess.job.solver is solver
    assert scene.drla.steps_done == 300


def test_ik_buttons_need_a_model(arm3_scene):
    from drla_ext.addon.runs import model_store

    model_store.remove_model(arm3_scene.drla.tree)
    assert not bpy.ops.drla.ik_follow.poll() and not bpy.ops.drla.bake.poll()
