"""addon.camera: the gpu-module camera renderer agrees with the Workbench reference."""

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")


@pytest.fixture
def camera_mod(ext):
    from drla_ext.addon.scene import camera

    return camera


def _add_box(scene, name, location, size, color):
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=location)
    ob = bpy.context.active_object
    ob.name = name
    ob.scale = size
    ob.color = color
    return ob


@pytest.fixture
def stand_in(empty_scene):
    """A plane, a red box, a blue sphere, a world colour and a perspective camera."""
    sc = empty_scene
    bpy.ops.mesh.primitive_plane_add(size=10)
    ground = bpy.context.active_object
    ground.name, ground.color = "Ground", (0.2, 0.5, 0.2, 1.0)
    _add_box(sc, "Box", (-2.0, 1.0, 0.5), (1.0, 1.5, 1.0), (0.8, 0.1, 0.1, 1.0))
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0, location=(2.0, -1.0, 1.0))
    sphere = bpy.context.active_object
    sphere.name, sphere.color = "Sphere", (0.1, 0.2, 0.9, 1.0)
    cam = bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam"))
    sc.collection.objects.link(cam)
    cam.location = (7.0, -7.0, 6.0)
    cam.rotation_euler = (1.0, 0.0, math.radians(45.0))
    world = bpy.data.worlds.new("W")
    world.color = (0.05, 0.05, 0.05)
    sc.world = world
    bpy.context.view_layer.update()
    return sc, cam


def _pair(camera_mod, sc, cam, mode, **kw):
    with camera_mod.CameraRenderer(sc, cam, 64, 64, mode, 'gpu', **kw) as g:
        a = g.read()
        assert g.method == 'gpu'
    with camera_mod.CameraRenderer(sc, cam, 64, 64, mode, 'workbench', **kw) as w:
        b = w.read()
    return a, b


@pytest.mark.parametrize(
    "mode, shape", [('RGB', (48, 64, 3)), ('GRAY', (48, 64)), ('BW', (48, 64)), ('DEPTH', (48, 64))]
)
@pytest.mark.parametrize("method", ['gpu', 'workbench'])
def test_shapes_dtypes_ranges(camera_mod, stand_in, mode, shape, method):
    sc, cam = stand_in
    with camera_mod.CameraRenderer(sc, cam, 64, 48, mode, method) as r:
        a = r.read()
        assert r.shape == shape
    assert a.shape == shape and a.dtype == np.float32
    assert 0.0 <= a.min() and a.max() <= 1.0
    if mode == 'BW':
        assert set(np.unique(a)) <= {0.0, 1.0}


@pytest.mark.parametrize("mode", ['RGB', 'GRAY', 'BW', 'DEPTH'])
def test_gpu_agrees_with_workbench(camera_mod, stand_in, mode):
    sc, cam = stand_in
    a, b = _pair(camera_mod, sc, cam, mode)
    if mode == 'BW':
        assert (a == b).mean() >= 0.97
        assert 0.05 < a.mean() < 0.95  # the picture is not trivially uniform
    elif mode == 'DEPTH':
        assert np.abs(a - b).max() < 1e-3
    else:
        assert np.corrcoef(a.ravel(), b.ravel())[0, 1] > 0.99
        assert (np.abs(a - b) < 0.02).mean() >= 0.97


def test_material_colours_agree(camera_mod, stand_in):
    sc, cam = stand_in
    mat = bpy.data.materials.new("M")
    mat.diffuse_color = (0.9, 0.8, 0.1, 1.0)
    sc.objects["Box"].data.materials.append(mat)  # the sphere and ground have no material: grey
    a, b = _pair(camera_mod, sc, cam, 'RGB', color_source='MATERIAL')
    assert (np.abs(a - b) < 0.02).mean() >= 0.97
    assert np.any(np.all(np.abs(a - camera_mod.srgb_encode([0.9, 0.8, 0.1])) < 0.01, axis=-1))


def test_depth_units_and_background(camera_mod, stand_in):
    sc, cam = stand_in
    cam.rotation_euler = (math.radians(80), 0.0, math.radians(45.0))  # horizon in view: background pixels
    bpy.context.view_layer.update()
    with camera_mod.CameraRenderer(sc, cam, 32, 32, 'DEPTH', normalize_depth=False) as r:
        d = r.read()
    assert d.max() == pytest.approx(cam.data.clip_end)  # nothing hit
    hit = d[d < cam.data.clip_end]
    assert hit.size and 3.0 < hit.min() < 15.0  # the scene is about 10 units away


def test_workbench_restores_every_setting(camera_mod, stand_in):
    sc, cam = stand_in
    sc.render.engine = 'CYCLES'
    sc.render.image_settings.file_format = 'JPEG'
    sc.render.resolution_x, sc.render.resolution_y = 1234, 567
    sc.display.shading.light = 'STUDIO'
    sc.camera = None
    before = _snapshot(sc)
    groups, images = len(bpy.data.node_groups), {i.name for i in bpy.data.images if i.name != "Render Result"}
    for mode in ('RGB', 'DEPTH'):
        with camera_mod.CameraRenderer(sc, cam, 32, 32, mode, 'workbench') as r:
            r.read()
            r.read()
        assert _snapshot(sc) == before
    assert len(bpy.data.node_groups) == groups
    assert {i.name for i in bpy.data.images if i.name != "Render Result"} == images
    assert [s.name for s in bpy.data.scenes] == [sc.name]


def _snapshot(sc):
    def props(struct):
        out = {}
        for p in struct.bl_rna.properties:
            if p.type in {'COLLECTION', 'POINTER'} or p.identifier == "rna_type":
                continue
            v = getattr(struct, p.identifier)
            out[p.identifier] = tuple(v) if hasattr(v, "__len__") and not isinstance(v, str) else v
        return out

    r = sc.render
    return {
        "render": props(r),
        "image_settings": props(r.image_settings),
        "display": props(sc.display),
        "shading": props(sc.display.shading),
        "view": props(sc.view_settings),
        "display_settings": props(sc.display_settings),
        "view_layer": props(sc.view_layers[0]),
        "camera": sc.camera,
        "compositing": getattr(sc, "compositing_node_group", None),
    }


def test_gpu_sees_moves_additions_removals_and_hiding(camera_mod, stand_in):
    sc, cam = stand_in
    with camera_mod.CameraRenderer(sc, cam, 64, 64, 'RGB') as r:
        base = r.read()
        box = sc.objects["Box"]
        box.location.x += 1.5
        bpy.context.view_layer.update()
        moved = r.read()
        assert np.abs(moved - base).max() > 0.1
        box.location.x -= 1.5
        bpy.context.view_layer.update()
        np.testing.assert_allclose(r.read(), base, atol=1e-6)

        new = _add_box(sc, "New", (0.0, 0.0, 2.5), (1.0, 1.0, 1.0), (1.0, 1.0, 0.0, 1.0))
        bpy.context.view_layer.update()
        with_new = r.read()
        assert (np.abs(with_new - base).max(axis=-1) > 0.1).sum() > 10

        new.hide_render = True
        np.testing.assert_allclose(r.read(), base, atol=1e-6)
        new.hide_render = False
        np.testing.assert_allclose(r.read(), with_new, atol=1e-6)

        bpy.data.objects.remove(sc.objects["Sphere"])
        bpy.data.objects.remove(new)
        without = r.read()
        assert not np.allclose(without, base)
        with camera_mod.CameraRenderer(sc, cam, 64, 64, 'RGB', 'workbench') as w:
            assert (np.abs(without - w.read()) < 0.02).mean() >= 0.97


def test_colour_changes_are_seen_each_read(camera_mod, stand_in):
    sc, cam = stand_in
    with camera_mod.CameraRenderer(sc, cam, 32, 32, 'GRAY') as r:
        a = r.read()
        sc.objects["Box"].color = (1.0, 1.0, 1.0, 1.0)
        assert r.read().max() > a.max()


def test_bw_threshold_is_a_property(camera_mod, stand_in):
    sc, cam = stand_in
    with camera_mod.CameraRenderer(sc, cam, 32, 32, 'BW', threshold=0.01) as r:
        assert r.read().mean() == 1.0
        r.threshold = 0.999
        assert r.read().mean() == 0.0


def test_fallback_to_workbench(camera_mod, stand_in, monkeypatch):
    sc, cam = stand_in

    def no_gpu(owner):
        raise SystemError("GPU functions for drawing are not available")

    monkeypatch.setattr(camera_mod, "_GpuPath", no_gpu)
    with pytest.warns(RuntimeWarning, match="Workbench"):
        r = camera_mod.CameraRenderer(sc, cam, 16, 16, 'GRAY', 'gpu')
    with r:
        assert r.method == 'workbench' and "not available" in r.fallback_reason
        assert r.read().shape == (16, 16)


def test_bad_arguments(camera_mod, stand_in):
    sc, cam = stand_in
    with pytest.raises(ValueError, match="mode"):
        camera_mod.CameraRenderer(sc, cam, 8, 8, 'HSV')
    with pytest.raises(ValueError, match="method"):
        camera_mod.CameraRenderer(sc, cam, 8, 8, 'GRAY', 'cycles')
    with pytest.raises(ValueError, match="camera"):
        camera_mod.CameraRenderer(sc, sc.objects["Box"], 8, 8)
    r = camera_mod.CameraRenderer(sc, cam, 8, 8)
    r.close()
    r.close()
    with pytest.raises(RuntimeError, match="closed"):
        r.read()


def test_gpu_reads_reuse_their_batches(camera_mod, stand_in, monkeypatch):
    """What makes the gpu path fast (bench/scene_env.py times it against Workbench): meshes become
    gpu batches once; reads of a scene whose objects only move redraw those batches, rebuilding
    nothing. A new object, or ``invalidate()``, rebuilds."""
    sc, cam = stand_in
    with camera_mod.CameraRenderer(sc, cam, 64, 64, 'GRAY', 'gpu') as r:
        first = r.read()
        impl = r._impl
        builds = []
        build = impl._build
        monkeypatch.setattr(impl, "_build", lambda: (builds.append(1), build())[1])
        box = sc.objects["Box"]
        for _ in range(5):
            box.location.x += 0.3
            r.read()
        assert builds == [], "moving objects must not rebuild the batches"
        assert not np.array_equal(r.read(), first), "the moves are seen"
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, 3.0))
        r.read()
        assert builds == [1]
        r.invalidate()
        r.read()
        r.read()
        assert builds == [1, 1]


def _builtin_picture(camera_mod, sc, cam, width, height, color_source):
    """The reference: every object drawn on its own with the built-in UNIFORM_COLOR shader under the
    ``gpu.matrix`` stack (one draw call per object and material slot, what the gpu path did before it drew each
    camera with one call). Colour (h, w, 4) uint8 and depth (h, w), bottom row first."""
    import gpu
    from gpu_extras.batch import batch_for_shader

    shader = gpu.shader.from_builtin('UNIFORM_COLOR')
    dg = bpy.context.evaluated_depsgraph_get()
    draws = []
    for ob in bpy.context.view_layer.objects:
        if ob.type != 'MESH' or ob.hide_render:
            continue
        mesh = ob.evaluated_get(dg).to_mesh()
        mesh.calc_loop_triangles()
        co = np.empty(len(mesh.vertices) * 3, np.float32)
        mesh.vertices.foreach_get("co", co)
        tri = np.empty(len(mesh.loop_triangles) * 3, np.int32)
        mesh.loop_triangles.foreach_get("vertices", tri)
        mat_idx = np.empty(len(mesh.loop_triangles), np.int32)
        mesh.loop_triangles.foreach_get("material_index", mat_idx)
        ob.evaluated_get(dg).to_mesh_clear()
        tri = tri.reshape(-1, 3)
        for slot in (np.unique(mat_idx) if color_source == 'MATERIAL' else [0]):
            t = tri[mat_idx == slot] if color_source == 'MATERIAL' else tri
            if color_source == 'OBJECT':
                c = ob.color
            else:
                mat = ob.material_slots[slot].material if slot < len(ob.material_slots) else None
                c = mat.diffuse_color if mat is not None else (0.8, 0.8, 0.8, 1.0)
            color = camera_mod._display_rgba(c)
            draws.append((ob.matrix_world, color, batch_for_shader(shader, 'TRIS', {"pos": co.reshape(-1, 3)},
                                                                  indices=t)))
    off = gpu.types.GPUOffScreen(width, height, format='RGBA8')
    color_buf = gpu.types.Buffer('UBYTE', width * height * 4)
    depth_buf = gpu.types.Buffer('FLOAT', width * height)
    try:
        with off.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=camera_mod._display_rgba(sc.world.color), depth=1.0)
            gpu.state.depth_test_set('LESS_EQUAL')
            gpu.state.depth_mask_set(True)
            with gpu.matrix.push_pop(), gpu.matrix.push_pop_projection():
                gpu.matrix.load_matrix(cam.matrix_world.inverted())
                gpu.matrix.load_projection_matrix(cam.calc_matrix_camera(dg, x=width, y=height))
                shader.bind()
                for mw, color, batch in draws:
                    with gpu.matrix.push_pop():
                        gpu.matrix.multiply_matrix(mw)
                        shader.uniform_float("color", color)
                        batch.draw(shader)
            fb.read_color(0, 0, width, height, 4, 0, 'UBYTE', data=color_buf)
            fb.read_depth(0, 0, width, height, data=depth_buf)
            gpu.state.depth_test_set('NONE')
    finally:
        off.free()
    return (np.array(color_buf, np.uint8).reshape(height, width, 4), np.array(depth_buf, np.float32).reshape(height,
                                                                                                           width))


def _crowd(sc, count):
    """``count`` small boxes in front of the stand-in (more entries than one uniform block holds), and a
    cylinder whose faces alternate between two materials."""
    rng = np.random.default_rng(3)
    for i in range(count):
        box = _add_box(sc, f"Crowd{i}", tuple(rng.uniform((-3, -3, 0), (3, 3, 2))), tuple(rng.uniform(0.1, 0.5, 3)),
                       (*rng.uniform(0, 1, 3), 1.0))
        box.rotation_euler = tuple(rng.uniform(-3, 3, 3))
    bpy.ops.mesh.primitive_cylinder_add(location=(1.0, 2.0, 1.0))
    cyl = bpy.context.active_object
    for k, col in enumerate([(1.0, 0.0, 0.0, 1.0), (0.0, 0.3, 1.0, 1.0)]):
        mat = bpy.data.materials.new(f"Cyl{k}")
        mat.diffuse_color = col
        cyl.data.materials.append(mat)
    for i, poly in enumerate(cyl.data.polygons):
        poly.material_index = i % 2
    bpy.context.view_layer.update()


def _aim(cam, rng):
    """Put ``cam`` somewhere around the stand-in, looking at a point near its middle."""
    from mathutils import Vector

    cam.location = (rng.uniform(-9, 9), rng.uniform(-9, 9), rng.uniform(2, 9))
    target = Vector(tuple(rng.uniform((-1, -1, 0), (1, 1, 1))))
    cam.rotation_euler = (target - cam.location).to_track_quat('-Z', 'Y').to_euler()
    cam.data.lens = rng.uniform(25, 70)
    bpy.context.view_layer.update()


@pytest.mark.parametrize("color_source", ['OBJECT', 'MATERIAL'])
def test_one_draw_per_camera_draws_what_the_builtin_shader_draws(camera_mod, stand_in, color_source):
    """The gpu path draws each camera's objects with one call (their MVPs worked out in numpy): its colour
    and depth buffers are the built-in shader's, byte for byte, from many poses (with more objects than one
    uniform block holds, so several batches and blocks)."""
    sc, cam = stand_in
    _crowd(sc, camera_mod.BLOCK_ENTRIES + 20)
    rng = np.random.default_rng(0)
    with camera_mod.CameraRenderer(sc, cam, 61, 47, 'DEPTH', color_source=color_source) as r:
        assert r.method == 'gpu'
        for _ in range(6):
            _aim(cam, rng)
            color, depth = r._impl._pixels()
            ref_color, ref_depth = _builtin_picture(camera_mod, sc, cam, 61, 47, color_source)
            seen = len(np.unique(ref_color.reshape(-1, 4), axis=0))  # many objects (or slots) in view
            assert seen > (10 if color_source == 'OBJECT' else 2)
            np.testing.assert_array_equal(color, ref_color)
            np.testing.assert_array_equal(depth, ref_depth)
        assert len(r._impl.groups) == 2


def test_atlas_tiles_are_each_cameras_own_picture(camera_mod, stand_in):
    """Three cameras as tiles of one atlas (their entries spread over several uniform blocks): each tile is
    what that camera draws alone, and what the built-in shader draws."""
    sc, cam = stand_in
    _crowd(sc, 60)
    rng = np.random.default_rng(1)
    cams = [cam]
    for i in range(2):
        other = bpy.data.objects.new(f"Cam{i}", bpy.data.cameras.new(f"Cam{i}"))
        sc.collection.objects.link(other)
        cams.append(other)
    for c in cams:
        _aim(c, rng)
    atlas = camera_mod.CameraAtlas(40, 40, 3)
    tiles = [camera_mod.CameraRenderer(sc, c, 40, 40, 'RGB', atlas=(atlas, i)) for i, c in enumerate(cams)]
    try:
        for _ in range(3):
            pictures = [t.read() for t in tiles]  # the first read draws all three
            assert len(atlas._layout.blocks) == 2
            for c, picture in zip(cams, pictures):
                with camera_mod.CameraRenderer(sc, c, 40, 40, 'RGB') as alone:
                    np.testing.assert_array_equal(picture, alone.read())
                ref = _builtin_picture(camera_mod, sc, c, 40, 40, 'OBJECT')[0]
                np.testing.assert_array_equal(picture, camera_mod.display_bytes(ref[::-1], 'RGB', 0.5))
            for c in cams:
                _aim(c, rng)
    finally:
        for t in tiles:
            t.close()
