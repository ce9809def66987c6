"""Resume after saving, closing and opening the .blend again (issue 13): a stopped run writes its full training
state and the tree remembers where; in a new session Resume continues from the stopped step with the same curve,
and a setting the user changed since applies; without a state the button says why."""

import bpy
import numpy as np



def test_resume_continues_after_the_file_is_reopened(ext, tmp_path):
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.ui import examples

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    tree = examples.build_transform_tree(scene, total_steps=900)
    scene.drla.tree = tree
    scene.drla.output_dir = str(tmp_path / "runs")
    sess = TrainSession(scene, tree, output_dir=scene.drla.output_dir).start()
    while sess.steps < 300:  # by steps: the whole run may fit into one tick of a fast machine
        sess.tick(None, max_steps=300 - sess.steps)
    sess.stop()
    stopped_at, episodes = sess.steps, list(sess.job.history.episode_returns)
    assert stopped_at == 300 and sess.state == "STOPPED"
    weights = sess.job.agent.q_network.params.copy()
    assert tree.drla_last_checkpoint.endswith("Reach_resume.npz")
    blend = tmp_path / "reach.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    bpy.ops.wm.open_mainfile(filepath=str(blend))  # a new session: nothing of the run is left in memory
    scene = bpy.context.scene
    assert sessions.get(scene) is None
    tree = scene.drla.tree
    agent = next(n for n in tree.nodes if n.bl_idname == "DRLA_DQNAgentNode")
    agent.learning_rate = 5e-4  # changed since the run stopped: applies from here, and is recorded
    assert bpy.ops.drla.resume.poll()
    resumed = TrainSession.from_checkpoint(scene, tree, output_dir=scene.drla.output_dir)
    assert resumed.steps == stopped_at
    assert np.array_equal(resumed.job.agent.q_network.params, weights)
    assert resumed.job.history.episode_returns == episodes  # the curve goes on
    assert "learning_rate" in resumed.message
    resumed.run_blocking()
    assert resumed.state == "DONE" and resumed.steps == 900, scene.drla.error
    sessions.discard_all()


def test_resume_without_a_stopped_run_or_a_saved_state_says_why(ext, tmp_path):
    from drla_ext.addon.ui import examples

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    scene.drla.tree = examples.build_transform_tree(scene)
    assert not bpy.ops.drla.resume.poll()
    scene.drla.tree.drla_last_checkpoint = str(tmp_path / "gone.npz")  # a state file deleted since
    assert not bpy.ops.drla.resume.poll()
