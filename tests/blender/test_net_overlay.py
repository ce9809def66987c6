"""The network overlay: renders headless to a non-empty picture, follows a training run, leaves the scene untouched."""

from types import SimpleNamespace

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")


def _data_counts() -> dict[str, int]:
    return {name: len(getattr(bpy.data, name)) for name in ("objects", "meshes", "images", "scenes", "materials",
                                                             "node_groups", "texts", "collections")}


def test_overlay_renders_offscreen_and_leaves_the_scene_untouched(ext):
    from drla_ext.addon.ui import net_overlay
    from drla_ext.drla_core.nn.mlp import MLP

    net = MLP(6, [(32, "relu"), (32, "relu")], 3, rng=0)
    net.weights[1][:] = 0.0
    net.weights[1][4, 7] = 3.0  # one strong connection: white-hot
    net_overlay.render_offscreen(net, np.ones(6, np.float32), 64, 48)  # (creates the GPU context if needed)
    before = _data_counts()
    pixels, ms = net_overlay.render_offscreen(net, np.ones(6, np.float32), 240, 160)
    assert pixels.shape == (160, 240, 4) and ms > 0
    rgb = pixels[..., :3]
    backdrop = np.isclose(rgb, net_overlay.BACKDROP[:3], atol=0.02).all(axis=2)
    assert (~backdrop).mean() > 0.01  # lines and points drawn over the backdrop
    assert (rgb.min(axis=2) > 0.9).any()  # the strongest connection, white
    assert _data_counts() == before  # nothing added to the file's data


def test_toggle_adds_and_removes_the_draw_handler_and_finds_the_training_network(ext, empty_scene):
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.ui import net_overlay
    from drla_ext.drla_core.nn.mlp import MLP

    before = _data_counts()
    assert not net_overlay.enabled()
    assert net_overlay.toggle() is True and net_overlay.enabled()
    assert net_overlay.toggle() is False and not net_overlay.enabled()
    bpy.ops.drla.network_overlay()
    assert net_overlay.enabled()
    bpy.ops.drla.network_overlay()
    assert _data_counts() == before
    scene = bpy.context.scene
    assert net_overlay.current_network(scene) == (None, None)
    net = MLP(3, [(4, "relu")], 2, rng=0)
    job = SimpleNamespace(agent=SimpleNamespace(q_network=net), _obs=np.zeros(3, np.float32))
    sessions._sessions[scene.session_uid] = SimpleNamespace(job=job, close=lambda: None)
    try:
        found, obs = net_overlay.current_network(scene)
        assert found is net and obs.shape == (3,)
    finally:
        sessions._sessions.clear()


def test_a_redraw_draws_the_cached_picture_and_rebuilds_only_when_the_network_changes(ext):
    import gpu

    from drla_ext.addon.ui import net_overlay
    from drla_ext.drla_core.nn.mlp import MLP

    net = MLP(5, [(64, "relu"), (64, "tanh")], 3, rng=1)
    obs = np.linspace(-1, 1, 5).astype(np.float32)
    cached, _ = net_overlay.render_offscreen(net, obs, 200, 120)
    off = gpu.types.GPUOffScreen(200, 120)  # the batches drawn directly, as every redraw did before the cache
    try:
        with off.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=(0.0, 0.0, 0.0, 0.0))
            with gpu.matrix.push_pop():
                net_overlay._pixel_projection(200, 120)
                net_overlay.draw_batches(net_overlay.build_batches(net, obs, 0, 0, 200, 120))
            direct = np.array(fb.read_color(0, 0, 200, 120, 4, 0, 'FLOAT').to_list(), np.float32).reshape(120, 200, 4)
    finally:
        off.free()
    assert np.abs(cached - direct).max() <= 1 / 255 + 1e-6  # the same picture (8-bit texture)
    assert (np.abs(direct[..., :3] - net_overlay.BACKDROP[:3]).max(axis=2) > 0.05).mean() > 0.02

    cache = net_overlay.OverlayCache()
    try:
        key = net_overlay.fingerprint(net, obs)
        cache.rebuild(net, obs, 64, 48, key)
        later = cache.built + 10 * net_overlay.REBUILD_S
        assert not cache.stale(key, (64, 48), later)  # nothing changed: never rebuilt
        assert cache.stale(key, (80, 48), cache.built)  # the box changed size: at once
        net.weights[1][3, 4] += 1.0
        changed = net_overlay.fingerprint(net, obs)
        assert changed != key and net_overlay.fingerprint(net, obs * 2) != changed
        assert not cache.stale(changed, (64, 48), cache.built + net_overlay.REBUILD_S / 2)  # at most 4 a second
        assert cache.stale(changed, (64, 48), cache.built + net_overlay.REBUILD_S)
    finally:
        cache.free()


# --------------------------------------------------------------------------- what Show Network draws, per tree kind
def _sizes(network):
    return [network.weights[0].shape[0]] + [w.shape[1] for w in network.weights]


def _tick_until(sess, pred, ticks=400):
    for _ in range(ticks):
        if pred():
            return True
        sess.tick(0.2)
    return pred()


def test_show_network_says_why_when_there_is_nothing_to_draw(ext, empty_scene):
    from drla_ext.addon.ui import net_overlay

    assert net_overlay.networks(empty_scene) == ([], "", "No RL tree picked: pick one in the DRLA panel")
    tree = bpy.data.node_groups.new("Brain", "DRLA_NodeTree")
    empty_scene.drla.tree = tree
    entries, _, why = net_overlay.networks(empty_scene)
    assert entries == [] and why == "No network yet for 'Brain': Train, or Import a model"
    net_overlay.toggle()
    try:
        bpy.ops.drla.network_overlay()  # off
        bpy.ops.drla.network_overlay()  # on: the sidebar says why at once
        assert net_overlay.status() == why
    finally:
        net_overlay.toggle()
    assert net_overlay.status() == ""


def test_show_network_draws_the_stored_model_after_import_and_follows_a_new_one(ext, empty_scene, tmp_path):
    """No run in this Blender (a reopened file, after Play, Import or Export): the model stored in the file."""
    from drla_ext.addon.runs import model_store
    from drla_ext.addon.ui import net_overlay
    from drla_ext.drla_core.base import spaces
    from drla_ext.drla_core.io import model_io
    from drla_ext.drla_core.nn import mlp

    tree = bpy.data.node_groups.new("Brain", "DRLA_NodeTree")
    empty_scene.drla.tree = tree
    path = tmp_path / "m.json"
    model_io.save_model(path, model_io.Model(mlp.MLP(4, [(16, "relu")], 3, rng=0), spaces.Box(-1, 1, (4,)),
                                             spaces.Discrete(3)))
    model_store.import_model(tree, str(path))
    entries, source, why = net_overlay.networks(empty_scene, now=0.0)
    assert [(t, _sizes(n)) for t, n, _ in entries] == [("", [4, 16, 3])] and source == "stored model" and not why
    model_store.store_model(tree, model_io.Model(mlp.MLP(4, [(8, "relu"), (8, "relu")], 3, rng=1),
                                                 spaces.Box(-1, 1, (4,)), spaces.Discrete(3)))
    later = 10 * net_overlay.STORED_CHECK_S
    assert [_sizes(n) for _, n, _ in net_overlay.networks(empty_scene, now=later)[0]] == [[4, 8, 8, 3]]
    model_store.find_text(tree).from_string("{ not json")
    entries, _, why = net_overlay.networks(empty_scene, now=2 * later)
    assert entries == [] and why.startswith("The stored model 'DRLA model: Brain' is damaged")


def test_show_network_for_a_team_draws_each_agent_live_and_stored(ext, empty_scene, tmp_path):
    """The tank duel: while it trains, and after it, one box per agent, titled with the agent's name."""
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.ui import net_overlay

    assert bpy.ops.drla.add_example(name="Tank Duel (two agents)") == {'FINISHED'}
    scene = bpy.context.scene
    scene.drla.output_dir = str(tmp_path)
    sess = TrainSession(scene, scene.drla.tree, total_steps=5000).start()
    try:
        assert _tick_until(sess, lambda: sess.steps > 5)
        entries, source, _ = net_overlay.networks(scene)
        assert [t for t, _, _ in entries] == ["tank_a", "tank_b"] and source == "training run"
        assert all(obs is None or np.size(obs) == n.weights[0].shape[0] for _, n, obs in entries)
        sess.stop()  # each agent's model so far stored in the file
        sessions.discard_all()  # a reopened file: only what is stored
        entries, source, _ = net_overlay.networks(scene)
        assert [t for t, _, _ in entries] == ["tank_a", "tank_b"] and source == "stored model"
        from drla_ext.addon.runs.play import PlaySession

        play = PlaySession(scene, scene.drla.tree, seed=0).start()  # Play: the models it runs, with what they see
        play.step()
        entries, source, _ = net_overlay.networks(scene)
        assert [t for t, _, _ in entries] == ["tank_a", "tank_b"] and source == "model playing"
        assert all(obs is not None and np.size(obs) == n.weights[0].shape[0] for _, n, obs in entries)
        play.stop()
        # both drawn, one box each side by side: ink in the left and the right box, none in the gap
        cache = net_overlay.OverlayCache()
        from drla_ext.addon.scene.camera import ensure_gpu_context

        ensure_gpu_context()
        gap = net_overlay.GAP
        try:
            cache.rebuild_many(entries, 120, 80)
            assert cache.size == (240 + gap, 80) and cache.titles == ["tank_a", "tank_b"]
            px = np.array(cache.offscreen.texture_color.read().to_list(), np.float32).reshape(80, 240 + gap, 4)
        finally:
            cache.free()
        assert cache.size == (0, 0)  # freed
        ink = px[..., 3] > 0.5
        assert ink[:, :120].mean() > 0.3 and ink[:, 120 + gap:].mean() > 0.3 and not ink[:, 121:119 + gap].any()
    finally:
        sessions.discard_all()


def test_show_network_for_learned_ik_and_co_evolution_while_they_train(ext, empty_scene, tmp_path):
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.ui import net_overlay

    assert bpy.ops.drla.add_example(name="Robot Arm 3 (Learned IK)") == {'FINISHED'}
    scene = bpy.context.scene
    scene.drla.output_dir = str(tmp_path)
    sess = TrainSession(scene, scene.drla.tree, total_steps=300).start()
    try:
        assert _tick_until(sess, lambda: sess.steps > 0)
        entries, source, why = net_overlay.networks(scene)
        assert [t for t, _, _ in entries] == ["Learned IK"] and source == "training run" and not why
        assert entries[0][1] is sess.job.solver.network
        sess.stop()
        assert net_overlay.networks(scene)[1] == "stopped run"
    finally:
        sessions.discard_all()

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert bpy.ops.drla.add_example(name="Pac-Man (co-evolution)") == {'FINISHED'}
    scene = bpy.context.scene
    scene.drla.output_dir = str(tmp_path)
    sess = TrainSession(scene, scene.drla.tree, total_steps=1).start()
    try:
        entries, source, _ = net_overlay.networks(scene)
        assert [t for t, _, _ in entries] == ["pacman champion", "ghost champion"] and source == "training run"
    finally:
        sessions.discard_all()


def test_show_network_for_an_evolution_run_waits_for_its_first_champion(ext, empty_scene, tmp_path):
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs.train import TrainSession
    from drla_ext.addon.ui import net_overlay

    assert bpy.ops.drla.add_example(name="Cart-Pole (rigid body)") == {'FINISHED'}
    scene = bpy.context.scene
    scene.drla.output_dir = str(tmp_path)
    sess = TrainSession(scene, scene.drla.tree, total_steps=2).start()
    try:
        assert net_overlay.networks(scene) == ([], "training run",
                                               "No champion yet: the first generation is being evaluated")
        assert _tick_until(sess, lambda: sess.job.champion is not None, ticks=2000)
        entries, source, _ = net_overlay.networks(scene)
        assert [t for t, _, _ in entries] == ["champion"] and source in ("training run", "trained run")
    finally:
        sessions.discard_all()
