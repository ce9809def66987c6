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
