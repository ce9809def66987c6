"""Every DRLA operator headless (bpy.ops.drla.*), the session's time-boxed tick, Stop/Resume,
Play, Bake (keyframes equal a replayed episode) and error handling, on a real scene.

The scene: an empty "Mover" that can step left or right along X towards an empty "Goal";
rewarded for progress, done when it arrives. Small enough to train in a second.
"""

import os
import time

import pytest

bpy = pytest.importorskip("bpy")


def build_mover_tree(scene, total_steps=400, max_steps=12):
    mover = bpy.data.objects.new("Mover", None)
    goal = bpy.data.objects.new("Goal", None)
    goal.location = (2.0, 0.0, 0.0)
    mover.rotation_mode = 'XYZ'
    for ob in (mover, goal):
        scene.collection.objects.link(ob)
    tree = bpy.data.node_groups.new("Mover brain", "DRLA_NodeTree")
    tree.use_fake_user = True
    n = tree.nodes.new
    sensor = n("DRLA_TransformSensorNode")
    sensor.object = mover
    sensor.relative_to = goal
    state = n("DRLA_StateNode")
    tree.links.new(sensor.outputs["Sensor"], state.inputs["Sensors"])
    action_set = n("DRLA_ActionSetNode")
    for name, dx in (("left", -0.5), ("right", 0.5)):
        act = n("DRLA_ActionNode")
        act.action_name, act.kind, act.object = name, 'MOVE', mover
        act.vector = (dx, 0.0, 0.0)
        act.use_limits, act.limit_min, act.limit_max = True, (-3, -1, -1), (3, 1, 1)
        tree.links.new(act.outputs["Action"], action_set.inputs["Actions"])
    spin = n("DRLA_ActionNode")  # a rotation channel, so bake keys rotations too
    spin.action_name, spin.kind, spin.object, spin.vector = "spin", 'ROTATE', mover, (0.0, 0.0, 30.0)
    tree.links.new(spin.outputs["Action"], action_set.inputs["Actions"])
    env = n("DRLA_EnvironmentNode")
    env.max_steps = max_steps
    reward = n("DRLA_DistanceRewardNode")
    reward.object_a, reward.object_b = mover, goal
    done = n("DRLA_WithinDistanceNode")
    done.object_a, done.object_b, done.distance = mover, goal, 0.25
    tree.links.new(state.outputs["State"], env.inputs["State"])
    tree.links.new(action_set.outputs["Actions"], env.inputs["Actions"])
    tree.links.new(reward.outputs["Reward"], env.inputs["Rewards"])
    tree.links.new(done.outputs["Done"], env.inputs["Done"])
    agent = n("DRLA_DQNAgentNode")
    trainer = n("DRLA_TrainerNode")
    trainer.total_steps, trainer.output_path = total_steps, ""
    tree.links.new(env.outputs["Environment"], trainer.inputs["Environment"])
    tree.links.new(agent.outputs["Agent"], trainer.inputs["Agent"])
    scene.drla.tree = tree
    return tree


def scene_state(scene):
    """Every transform channel plus frame and custom props, to compare bit-exact."""
    from drla_ext.addon.runs import bake

    return bake.capture(scene), scene.frame_current, {ob.name: dict(ob.items()) for ob in scene.objects}


@pytest.fixture
def mover(empty_scene, tmp_path):
    tree = build_mover_tree(empty_scene)
    empty_scene.drla.output_dir = str(tmp_path)
    yield tree
    from drla_ext.addon.runs import sessions

    sessions.discard_all()


# --------------------------------------------------------------------------- train (headless)
def test_train_operator_runs_blocking_and_restores_the_scene(ext, mover, empty_scene, tmp_path):
    from drla_ext.addon.runs import model_store
    from drla_ext.addon.runs import sessions

    before = scene_state(empty_scene)
    assert bpy.ops.drla.train.poll()
    assert bpy.ops.drla.train(steps=300) == {'FINISHED'}
    s = empty_scene.drla
    assert s.error == ""
    assert s.steps_done == 300 and s.steps_total == 300 and s.progress == pytest.approx(1.0)
    assert s.episodes > 0 and "Trained 300 steps" in s.message
    assert model_store.has_model(mover)
    assert os.path.isfile(s.report_path) and s.report_path.startswith(str(tmp_path))
    assert scene_state(empty_scene) == before
    assert sessions.ui_state(empty_scene) == "TRAINED"


def test_train_mode_blocking_uses_the_tree_steps(ext, mover, empty_scene):
    mover.nodes["Trainer"].total_steps = 120
    assert bpy.ops.drla.train('INVOKE_DEFAULT', mode='BLOCKING') == {'FINISHED'}
    assert empty_scene.drla.steps_done == 120


# --------------------------------------------------------------------------- the modal tick
def test_tick_advances_training_within_its_time_box(ext, mover, empty_scene):
    """Each tick hands its whole budget to ``TrainingRun.advance`` (which ends the slice at the first
    step past the deadline: test_train.py checks that on a stand-in clock) and always makes
    progress, however little a slice of wall time does on a busy machine. Nothing here depends on
    how many steps fit in a slice."""
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs import train as train_session

    sess = train_session.TrainSession(empty_scene, mover, total_steps=1_000_000).start()
    assert sess.state == sessions.RUNNING and sess.steps == 0
    boxes = []
    advance = sess.job.advance

    def spy(max_steps=None, max_seconds=None):
        boxes.append(max_seconds)
        return advance(max_steps=max_steps, max_seconds=max_seconds)

    sess.job.advance = spy
    steps = [0]
    for _ in range(30):
        assert sess.tick(0.03)
        steps.append(sess.steps)
    assert all(b > a for a, b in zip(steps, steps[1:])), "every tick advances training"
    assert boxes == [0.03] * 30, "each tick hands its whole budget to TrainingRun.advance"
    assert empty_scene.drla.steps_done == sess.steps
    assert 0.0 < empty_scene.drla.progress < 1.0
    # an empty box still makes progress, exactly one step (the deadline is checked after each step)
    before = sess.steps
    sess.tick(0.0)
    assert sess.steps - before == 1
    sess.stop()


def test_stop_keeps_the_run_and_resume_continues_it(ext, mover, empty_scene):
    from drla_ext.addon.runs import model_store
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs import train as train_session

    before = scene_state(empty_scene)
    sess = train_session.TrainSession(empty_scene, mover, total_steps=400).start()
    for _ in range(150):
        sess.tick(0.0)  # one step each: the same run on any machine, however busy
    assert sess.steps == 150
    assert scene_state(empty_scene) != before or True  # the agent may or may not have moved yet
    assert bpy.ops.drla.stop.poll()
    assert bpy.ops.drla.stop() == {'FINISHED'}
    assert sess.state == sessions.STOPPED
    assert scene_state(empty_scene) == before, "Stop restores the scene exactly"
    assert model_store.has_model(mover), "the model so far is kept (Play works while stopped)"
    assert sessions.ui_state(empty_scene) == "STOPPED"
    stopped_at, agent = sess.steps, sess.job.agent
    assert bpy.ops.drla.resume.poll()
    assert bpy.ops.drla.resume() == {'FINISHED'}
    assert sess.state == sessions.DONE and sess.steps == 400 and sess.job.agent is agent
    assert sess.steps > stopped_at
    assert scene_state(empty_scene) == before


@pytest.mark.parametrize("ticks", [0, 1])
def test_stop_right_after_train_leaves_a_run_that_resume_continues(ext, mover, empty_scene, ticks):
    """On a busy machine Stop can come before any tick has trained a step: the run is still
    stopped (not lost), its model so far is stored, and Resume continues the same run."""
    from drla_ext.addon.runs import model_store
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs import train as train_session

    before = scene_state(empty_scene)
    sess = train_session.TrainSession(empty_scene, mover, total_steps=200).start()
    for _ in range(ticks):
        assert sess.tick(0.0)
    assert sess.steps == ticks
    assert bpy.ops.drla.stop() == {'FINISHED'}
    assert sess.state == sessions.STOPPED and empty_scene.drla.error == ""
    assert f"Stopped at step {ticks} of 200" in empty_scene.drla.message
    assert sessions.ui_state(empty_scene) == "STOPPED" and model_store.has_model(mover)
    assert scene_state(empty_scene) == before
    agent = sess.job.agent
    # Resume, tick: the same run advances
    assert bpy.ops.drla.resume.poll()
    assert sess.resume() is sess and sess.state == sessions.RUNNING
    assert sess.tick(0.0) and sess.steps == ticks + 1
    sess.stop()
    assert sess.state == sessions.STOPPED and scene_state(empty_scene) == before
    # Resume from the panel (blocking headless): to the end of the same run
    assert bpy.ops.drla.resume.poll()
    assert bpy.ops.drla.resume() == {'FINISHED'}
    assert sess.state == sessions.DONE and sess.steps == 200 and sess.job.agent is agent
    assert empty_scene.drla.steps_done == 200 and empty_scene.drla.error == ""
    assert scene_state(empty_scene) == before


def test_compile_error_is_shown_in_the_panel_and_nothing_changes(ext, mover, empty_scene):
    from drla_ext.addon.runs import model_store

    before = scene_state(empty_scene)
    mover.nodes["Action"].object = None
    with pytest.raises(RuntimeError, match="Action"):
        bpy.ops.drla.train(steps=50)
    assert "Action" in empty_scene.drla.error
    assert not model_store.has_model(mover)
    assert scene_state(empty_scene) == before


def test_error_mid_run_restores_the_scene(ext, mover, empty_scene):
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs import train as train_session

    before = scene_state(empty_scene)
    sess = train_session.TrainSession(empty_scene, mover, total_steps=1000).start()
    assert sess.tick(0.0) and sess.steps == 1  # mid-run, however fast the machine

    def boom(*_a, **_k):
        raise ValueError("the env broke")

    sess.job.advance = boom
    with pytest.raises(sessions.SessionError, match="the env broke"):
        sess.tick(0.01)
    assert sess.state == sessions.ERROR
    assert "the env broke" in empty_scene.drla.error
    assert scene_state(empty_scene) == before


def test_no_undo_steps_while_training(ext, mover, empty_scene):
    from drla_ext.addon.ui import operators

    for cls in (operators.DRLA_OT_train, operators.DRLA_OT_resume, operators.DRLA_OT_stop, operators.DRLA_OT_play):
        assert 'UNDO' not in cls.bl_options


# --------------------------------------------------------------------------- play
def test_play_operator_acts_and_restores(ext, mover, empty_scene):
    from drla_ext.addon.runs import play as play_session
    from drla_ext.addon.runs import sessions

    assert not bpy.ops.drla.play.poll()
    bpy.ops.drla.train(steps=300)
    before = scene_state(empty_scene)
    assert bpy.ops.drla.play(steps=5) == {'FINISHED'}
    assert "Played 5 steps" in empty_scene.drla.message
    assert scene_state(empty_scene) == before
    # the live path: a play session moves the objects until stopped
    sess = play_session.PlaySession(empty_scene, mover, fps=1000).start()
    assert sessions.ui_state(empty_scene) == "PLAYING"
    sess.tick(float("inf"), now=time.perf_counter() + 0.01)  # no time box: every step due by then
    assert sess.steps >= 11  # 10 ms at 1000 steps/s, and the first
    moved = scene_state(empty_scene)[0] != before[0]
    bpy.ops.drla.stop()
    assert moved and scene_state(empty_scene) == before


# --------------------------------------------------------------------------- bake
def store_scripted_model(tree):
    """A linear policy: step right while far from the goal, then spin (moves and turns are both keyed)."""
    from drla_ext.addon.runs import model_store
    from drla_ext.drla_core.io import model_io
    from drla_ext.drla_core.nn import mlp

    trained = model_store.load_stored_model(tree)
    net = mlp.MLP(trained.network.input_size, [], 3, rng=0)
    net.params[:] = 0.0
    net.weights[0][0, 0], net.weights[0][0, 1] = 1.0, -1.0   # obs[0] = x relative to the goal (negative: left of it)
    net.biases[0][2] = 0.6                                   # spin once closer than 0.6
    model_store.store_model(tree, model_io.Model(net, trained.observation_space, trained.action_space))


def test_bake_keyframes_equal_a_replayed_episode(ext, mover, empty_scene):
    from drla_ext.addon.runs import bake
    from drla_ext.addon.scene import keyframes

    bpy.ops.drla.train(steps=50)
    store_scripted_model(mover)
    before = scene_state(empty_scene)
    assert bpy.ops.drla.bake.poll()
    assert bpy.ops.drla.bake() == {'FINISHED'}
    assert "Baked" in empty_scene.drla.message
    mover_ob = empty_scene.objects["Mover"]
    action = mover_ob.animation_data.action
    assert action is not None and action.name.startswith("DRLA Bake: Mover brain")
    # the live scene is as before (only the new action was added)
    assert scene_state(empty_scene)[0] == before[0]
    assert empty_scene.objects["Goal"].animation_data is None

    replay = bake.record_episode(empty_scene, mover)
    keys = replay.changed_keys()
    assert keys == [("Mover", "", "location"), ("Mover", "", "rotation_euler")]
    assert replay.actions[:4] == [1, 1, 1, 2] and len(replay.samples) == 13   # 12 steps (truncated) + start
    from bpy_extras import anim_utils

    fcurves = anim_utils.action_get_channelbag_for_slot(action, mover_ob.animation_data.action_slot).fcurves
    start = empty_scene.frame_start
    checked = 0
    for ob_name, bone, prop in keys:
        for index in range(len(replay.samples[0][(ob_name, bone, prop)])):
            fc = fcurves.find(keyframes.data_path(bone, prop), index=index)
            assert fc is not None, (prop, index)
            for i, sample in enumerate(replay.samples):
                assert fc.evaluate(start + i) == pytest.approx(sample[(ob_name, bone, prop)][index], abs=1e-6)
                checked += 1
    assert checked >= 2 * len(replay.samples)


def test_bake_keeps_a_previous_action(ext, mover, empty_scene):
    bpy.ops.drla.train(steps=200)
    ob = empty_scene.objects["Mover"]
    ob.keyframe_insert("location", frame=1)
    old = ob.animation_data.action
    bpy.ops.drla.bake(steps=4)
    assert ob.animation_data.action is not old
    assert old.use_fake_user and old.name in bpy.data.actions


# --------------------------------------------------------------------------- polls while running
def test_buttons_are_greyed_while_training(ext, mover, empty_scene):
    from drla_ext.addon.runs import train as train_session

    bpy.ops.drla.train(steps=100)
    sess = train_session.TrainSession(empty_scene, mover, total_steps=1000).start()
    assert not bpy.ops.drla.train.poll() and not bpy.ops.drla.play.poll()
    assert not bpy.ops.drla.bake.poll() and not bpy.ops.drla.import_model.poll()
    assert bpy.ops.drla.stop.poll() and bpy.ops.drla.export_model.poll()
    sess.stop()
    assert bpy.ops.drla.train.poll() and bpy.ops.drla.resume.poll()


# --------------------------------------------------------------------------- the shipped examples
def test_reach_example_end_to_end(ext, empty_scene, tmp_path):
    """Add > DRLA Examples > Reach, then Train, Play, Bake, Export from the operators."""
    from drla_ext.addon.ui import examples_menu
    from drla_ext.addon.runs import model_store
    from drla_ext.addon.runs import sessions

    assert "Reach (transform)" in examples_menu._examples()
    assert bpy.ops.drla.add_example(name="Reach (transform)") == {'FINISHED'}
    tree = empty_scene.drla.tree
    assert tree is not None and sessions.ui_state(empty_scene) == "IDLE"
    empty_scene.drla.output_dir = str(tmp_path)
    before = scene_state(empty_scene)
    assert bpy.ops.drla.train(steps=600) == {'FINISHED'}
    assert model_store.has_model(tree) and scene_state(empty_scene) == before
    assert bpy.ops.drla.play(steps=10) == {'FINISHED'} and scene_state(empty_scene) == before
    assert bpy.ops.drla.bake(steps=10) == {'FINISHED'}
    assert empty_scene.objects["Agent"].animation_data.action.name.startswith("DRLA Bake")
    assert bpy.ops.drla.export_model(filepath=str(tmp_path / "reach.json")) == {'FINISHED'}
    assert (tmp_path / "reach.json").stat().st_size > 1000
    sessions.discard_all()


def test_unknown_example_reports(ext, empty_scene):
    with pytest.raises(RuntimeError, match="Unknown example"):
        bpy.ops.drla.add_example(name="nope")
    assert empty_scene.drla.tree is None


def test_tank_example_in_an_empty_scene_brings_its_objects(ext, empty_scene, tmp_path):
    """An installed extension has no repository: the objects come from the scene shipped in the zip."""
    from drla_ext.addon.tree import compiler
    from drla_ext.addon.runs import sessions

    assert bpy.ops.drla.add_example(name="Tank") == {'FINISHED'}
    for name in ("Ground", "TankA", "TankB", "Cannon", "Muzzle", "TankCamera"):
        assert name in empty_scene.objects
    assert empty_scene.objects["TankA"]["score"] == 0
    assert empty_scene.objects["Cannon"].parent is not None
    assert "added" in empty_scene.drla.message
    compiled = compiler.compile_tree(empty_scene.drla.tree, empty_scene)
    assert compiled.env.action_names[-1] == "fire"
    empty_scene.drla.output_dir = str(tmp_path)
    assert bpy.ops.drla.train(steps=200) == {'FINISHED'}
    sessions.discard_all()


TANK_BLEND = os.path.join(os.path.dirname(__file__), "..", "..", "scenes", "tank", "tank.blend")


@pytest.mark.skipif(not os.path.isfile(TANK_BLEND), reason="scenes/tank/tank.blend not built")
def test_tank_example_trains_in_ticks_and_stop_restores_the_scene(ext, tmp_path):
    """The shipped Tank (camera observations) in modal-sized ticks: every tick trains (camera renders
    included), a run stopped mid-way puts the scene back. How many steps a tick fits is bench/'s."""
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs import train as train_session

    bpy.ops.wm.open_mainfile(filepath=os.path.abspath(TANK_BLEND))
    scene = bpy.context.scene
    tree = next((t for t in bpy.data.node_groups if t.bl_idname == "DRLA_NodeTree"), None)
    if tree is None:
        assert bpy.ops.drla.add_example(name="Tank") == {'FINISHED'}
    else:
        scene.drla.tree = tree
    scene.drla.output_dir = str(tmp_path)
    before = scene_state(scene)
    sess = train_session.TrainSession(scene, scene.drla.tree, total_steps=50_000).start()
    steps = [0]
    for _ in range(200):  # a bound on ticks, not on time
        assert sess.tick(sessions.TICK_BUDGET_S)
        steps.append(sess.steps)
        if sess.steps >= 100:
            break
    assert sess.steps >= 100 and all(b > a for a, b in zip(steps, steps[1:]))
    assert scene.drla.steps_done == sess.steps
    sess.stop()
    assert sess.state == sessions.STOPPED
    assert scene_state(scene) == before
    sessions.discard_all()


# --------------------------------------------------------------------------- the modal wrapper
def test_modal_step_ticks_on_timers_and_esc_stops_cleanly(ext, mover, empty_scene):
    """The modal operator's decisions, on a real session (no stand-in events: timers never fire
    headless, so ``modal`` hands the event's real RNA values to ``modal_step``; the real window
    path is covered by ``make test-gui``)."""
    from drla_ext.addon.ui import operators
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs import train as train_session

    before = scene_state(empty_scene)
    sess = train_session.TrainSession(empty_scene, mover, total_steps=1_000_000).start()
    assert operators.modal_step(sess, 'TIMER', 'NOTHING', False) == (operators.TICKED, "")
    assert sess.steps > 0
    assert "step" in sess.status_line()
    # ordinary events pass through without training
    steps = sess.steps
    assert operators.modal_step(sess, 'MOUSEMOVE', 'NOTHING', False) == (operators.PASS, "")
    assert operators.modal_step(sess, 'ESC', 'RELEASE', False) == (operators.PASS, "")
    assert sess.steps == steps
    # Ctrl+Z is swallowed while running (undo would pull the scene from under the run)
    outcome, message = operators.modal_step(sess, 'Z', 'PRESS', True)
    assert outcome == operators.UNDO_BLOCKED and "Undo is off" in message
    # Esc: stop, restore the scene, the run stays resumable
    assert operators.modal_step(sess, 'ESC', 'PRESS', False) == (operators.STOPPED_BY_ESC, "")
    assert sess.state == sessions.STOPPED
    assert scene_state(empty_scene) == before
    # a timer event after the end does nothing
    assert operators.modal_step(sess, 'TIMER', 'NOTHING', False) == (operators.PASS, "")
    assert sess.steps == steps
    sessions.discard_all()


def test_the_addon_reads_only_real_event_properties(ext):
    """Every ``event.X`` the add-on reads must be a property of Blender's real ``bpy.types.Event``
    (a stand-in event with a ``timer`` attribute once hid a Train button that never worked)."""
    import ast
    import pathlib

    real = {p.identifier for p in bpy.types.Event.bl_rna.properties}
    used = {}
    root = pathlib.Path(__file__).resolve().parents[2] / "addon"
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "event":
                used.setdefault(node.attr, f"{path.name}:{node.lineno}")
    assert used, "the modal operators read no event at all?"
    unknown = {attr: where for attr, where in used.items() if attr not in real}
    assert not unknown, f"not properties of bpy.types.Event: {unknown}"


def test_saving_the_file_stops_a_run_first(ext, mover, empty_scene, tmp_path):
    from drla_ext.addon.runs import model_store
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs import train as train_session

    before = scene_state(empty_scene)
    sess = train_session.TrainSession(empty_scene, mover, total_steps=1_000_000).start()
    sess.tick(0.02)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "saved.blend"))
    assert sess.state == sessions.STOPPED and model_store.has_model(mover)
    assert scene_state(empty_scene) == before
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "saved.blend"))
    assert scene_state(bpy.context.scene)[0] == before[0]
    assert model_store.has_model(bpy.context.scene.drla.tree)


def test_play_with_a_model_from_another_tree_reports_and_restores(ext, mover, empty_scene, tmp_path):
    from drla_ext.drla_core.base import spaces
    from drla_ext.drla_core.io import model_io
    from drla_ext.drla_core.nn import mlp

    wrong = model_io.Model(mlp.MLP(7, [(4, "relu")], 2, rng=0), spaces.Box(-1, 1, (7,)), spaces.Discrete(2))
    model_io.save_model(tmp_path / "other.json", wrong)
    assert bpy.ops.drla.import_model(filepath=str(tmp_path / "other.json")) == {'FINISHED'}
    before = scene_state(empty_scene)
    with pytest.raises(RuntimeError, match="different tree"):
        bpy.ops.drla.play(steps=3)
    assert "different tree" in empty_scene.drla.error
    assert scene_state(empty_scene) == before
    with pytest.raises(RuntimeError, match="different tree"):
        bpy.ops.drla.bake()
    assert empty_scene.objects["Mover"].animation_data is None


def test_relative_output_folder_of_an_unsaved_file_is_not_the_current_directory(ext, empty_scene, tmp_path,
                                                                                 monkeypatch):
    from drla_ext.addon import preferences

    monkeypatch.chdir(tmp_path)
    assert not bpy.data.filepath
    path = preferences.checkpoint_dir(override="//runs", create=False)
    assert os.path.isabs(path) and not path.startswith(str(tmp_path))
    assert path.startswith(preferences.default_checkpoint_dir(create=False))


def test_tick_budget_follows_slow_redraws_within_bounds(ext):
    """A fast UI keeps the base budget; a slow redraw (software GL) gets a matching tick, capped."""
    from drla_ext.addon.ui import operators
    from drla_ext.addon.runs import sessions

    assert operators.tick_budget(sessions.TIMER_INTERVAL_S + 0.005) == sessions.TICK_BUDGET_S
    assert operators.tick_budget(sessions.TIMER_INTERVAL_S + 0.12) == pytest.approx(0.12)
    assert operators.tick_budget(5.0) == operators.MAX_TICK_BUDGET_S
