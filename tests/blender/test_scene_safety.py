"""Training, Play and Bake leave the user's scene alone: baked physics caches, RNA properties
the actions write (``data.energy``, ``color[0]``), registered (``bpy.props``) properties."""

import bpy
import pytest


@pytest.fixture
def reach(empty_scene, monkeypatch, tmp_path):
    """The Reach example tree on the empty scene (exports go to a temporary folder)."""
    from drla_ext.addon.ui import examples

    monkeypatch.chdir(tmp_path)
    tree = examples.build_transform_tree(empty_scene, total_steps=300)
    empty_scene.drla.tree = tree
    return tree


def _add_action(tree, name, ob, prop, kind, value):
    n = tree.nodes.new("DRLA_ActionNode")
    n.action_name, n.kind, n.object, n.property, n.value = name, kind, ob, prop, value
    aset = next(x for x in tree.nodes if x.bl_idname == "DRLA_ActionSetNode")
    tree.links.new(n.outputs[0], aset.inputs["Actions"])
    return n


# --------------------------------------------------------------------------- baked caches
@pytest.fixture
def baked(reach, empty_scene):
    """A baked rigid body (frames 1-20) and a baked cloth (frames 1-20)."""
    scene = empty_scene
    bpy.ops.rigidbody.world_add()
    bpy.ops.mesh.primitive_cube_add(location=(6, 6, 10))
    bpy.ops.rigidbody.object_add(type='ACTIVE')
    bpy.ops.mesh.primitive_plane_add(location=(10, 10, 5))
    plane = bpy.context.active_object
    plane.name = "Cloth"
    mod = plane.modifiers.new("Cloth", 'CLOTH')
    mod.point_cache.frame_end = 20
    scene.rigidbody_world.point_cache.frame_end = 20
    with bpy.context.temp_override(scene=scene):
        bpy.ops.ptcache.bake_all(bake=True)
    scene.frame_set(7)
    caches = (scene.rigidbody_world.point_cache, mod.point_cache)
    assert all(c.is_baked for c in caches)
    return caches


def _cache_state(caches):
    return [(c.is_baked, c.frame_start, c.frame_end) for c in caches]


@pytest.mark.parametrize("op", ["train", "play", "bake"])
def test_baked_caches_stay_baked(ext, baked, empty_scene, op):
    before = _cache_state(baked)
    cube = empty_scene.objects["Cube"]
    cube_matrix = tuple(map(tuple, cube.matrix_world))
    if op != "train":
        assert bpy.ops.drla.train(mode='BLOCKING', steps=100) == {'FINISHED'}
        assert _cache_state(baked) == before
    kw = {"steps": 5} if op == "play" else {"mode": 'BLOCKING', "steps": 100} if op == "train" else {}
    assert getattr(bpy.ops.drla, op)(**kw) == {'FINISHED'}, empty_scene.drla.error
    assert _cache_state(baked) == before
    assert empty_scene.frame_current == 7
    assert tuple(map(tuple, cube.matrix_world)) == cube_matrix


def test_prepare_and_restore_never_touch_a_baked_rigid_body_cache(ext, baked, empty_scene):
    from drla_ext.addon.scene import snapshot

    before = _cache_state(baked)
    with snapshot.restored_scene(empty_scene):
        assert _cache_state(baked) == before  # prepare_for_training left the bake alone
        snapshot.free_rigid_body_cache(empty_scene)
        assert _cache_state(baked) == before
    assert _cache_state(baked) == before


def test_unbaked_rigid_body_cache_range_is_restored_exactly(ext, reach, empty_scene):
    from drla_ext.addon.scene import snapshot

    bpy.ops.rigidbody.world_add()
    cache = empty_scene.rigidbody_world.point_cache
    cache.frame_start, cache.frame_end = 3, 77
    with snapshot.restored_scene(empty_scene):
        assert cache.frame_end > 77  # long episodes may simulate past the user's range
    assert (cache.frame_start, cache.frame_end) == (3, 77)


def test_training_keeps_another_objects_baked_cloth(ext, reach, empty_scene):
    """Only the rigid-body cache is ever invalidated, never another object's bake."""
    bpy.ops.rigidbody.world_add()
    bpy.ops.mesh.primitive_plane_add(location=(10, 10, 5))
    mod = bpy.context.active_object.modifiers.new("Cloth", 'CLOTH')
    mod.point_cache.frame_end = 10
    with bpy.context.temp_override(scene=empty_scene, point_cache=mod.point_cache):
        bpy.ops.ptcache.bake(bake=True)
    assert mod.point_cache.is_baked and not empty_scene.rigidbody_world.point_cache.is_baked
    assert bpy.ops.drla.train(mode='BLOCKING', steps=100) == {'FINISHED'}
    assert mod.point_cache.is_baked and mod.point_cache.frame_end == 10


# --------------------------------------------------------------------------- RNA property actions
@pytest.fixture
def rna_actions(reach, empty_scene):
    agent = empty_scene.objects["Agent"]
    ld = bpy.data.lights.new("L", 'POINT')
    lamp = bpy.data.objects.new("Lamp", ld)
    empty_scene.collection.objects.link(lamp)
    ld.energy = 100.0
    agent.color = (0.25, 0.5, 0.75, 1.0)
    _add_action(reach, "dim", lamp, "data.energy", 'ADD_PROPERTY', 10.0)
    _add_action(reach, "tint", agent, "color[0]", 'ADD_PROPERTY', -0.5)
    return agent, lamp


def test_training_restores_rna_properties_the_actions_write(ext, rna_actions, empty_scene):
    agent, lamp = rna_actions
    before = (lamp.data.energy, tuple(agent.color))
    assert bpy.ops.drla.train(mode='BLOCKING', steps=300) == {'FINISHED'}, empty_scene.drla.error
    assert (lamp.data.energy, tuple(agent.color)) == before
    assert bpy.ops.drla.play(steps=20) == {'FINISHED'}
    assert (lamp.data.energy, tuple(agent.color)) == before
    assert bpy.ops.drla.bake() == {'FINISHED'}
    assert (lamp.data.energy, tuple(agent.color)) == before


def test_every_episode_starts_from_the_same_rna_values(ext, rna_actions, empty_scene):
    from drla_ext.addon.runs import build
    from drla_ext.addon.tree import compiler
    from drla_ext.addon.scene import snapshot

    agent, lamp = rna_actions
    before = (lamp.data.energy, tuple(agent.color))
    compiled = compiler.compile_tree(empty_scene.drla.tree, empty_scene)
    with snapshot.restored_scene(empty_scene):
        env = build.build_env(compiled, empty_scene)
        names = env.action_space.names
        for _ in range(2):
            env.reset(seed=0)
            assert (lamp.data.energy, tuple(agent.color)) == before
            env.step(names.index("dim"))
            env.step(names.index("tint"))
            assert lamp.data.energy == pytest.approx(110.0)
            assert agent.color[0] == 0.0  # clamped by the colour's range
        env.close()
    assert (lamp.data.energy, tuple(agent.color)) == before


def test_snapshot_restores_tracked_paths_and_property_setter_paths(ext, empty_scene):
    from drla_ext.addon.scene import actuators
    from drla_ext.addon.scene import snapshot

    ld = bpy.data.lights.new("L", 'POINT')
    lamp = bpy.data.objects.new("Lamp", ld)
    empty_scene.collection.objects.link(lamp)
    ld.energy, ld["gain"] = 5.0, 2
    with snapshot.restored_scene(empty_scene) as snap:
        assert snapshot.active_snapshots(empty_scene) == [snap]
        for path in ("data.energy", 'data["gain"]', "location.z", "location[1]"):
            snap.track("Lamp", path, snapshot.capture_path(lamp, path))
        actuators.property_setter(lamp, "data.energy")(9.0)
        actuators.property_setter(lamp, 'data["gain"]')(7.9)
        actuators.property_setter(lamp, "location.z")(3.0)
        actuators.property_setter(lamp, "location[1]")(4.0)
        assert (ld.energy, ld["gain"], tuple(lamp.location)) == (9.0, 7, (0.0, 4.0, 3.0))
    assert (ld.energy, ld["gain"], tuple(lamp.location)) == (5.0, 2, (0.0, 0.0, 0.0))
    assert snapshot.active_snapshots(empty_scene) == []


# --------------------------------------------------------------------------- registered properties
class _FakeRNA:
    properties = {"drla": None, "cycles": None, "name": None}


class _FakeOwner(dict):
    """Blender 4.x: ``keys()`` also lists properties registered with ``bpy.props``."""

    bl_rna = _FakeRNA()


def test_registered_rna_properties_are_never_captured_or_deleted():
    from drla_ext.addon.scene import snapshot

    owner = _FakeOwner(drla={"message": "keep"}, cycles={"samples": 64}, mine=1)
    assert snapshot._get_props(owner) == {"mine": 1}
    snapshot._set_props(owner, {})
    assert owner == {"drla": {"message": "keep"}, "cycles": {"samples": 64}}


@pytest.mark.skipif(bpy.app.version < (5, 0, 0), reason="before Blender 5.0 a registered property IS the ID "
                    "property of its name: scene['drla'] = 5 cannot coexist with scene.drla")
def test_scene_keys_named_like_registered_properties_survive_restore(ext, empty_scene):
    from drla_ext.addon.scene import snapshot

    empty_scene.drla.message = "keep me"
    empty_scene["drla"] = 5  # an ID property with a registered property's name (Blender 5 keeps both)
    assert "drla" in empty_scene.bl_rna.properties
    with snapshot.restored_scene(empty_scene) as snap:
        assert "drla" not in snap.scene_props
        empty_scene["extra"] = 1
    assert "extra" not in empty_scene.keys()
    assert empty_scene["drla"] == 5 and empty_scene.drla.message == "keep me"


# --------------------------------------------------------------------------- the scene by name
def test_restore_finds_the_scene_by_name_or_address(ext, empty_scene):
    from drla_ext.addon.scene import snapshot

    ob = bpy.data.objects.new("E", None)
    empty_scene.collection.objects.link(ob)
    snap = snapshot.SceneSnapshot.capture(empty_scene)
    ob.location = (1, 2, 3)
    snap.scene = None  # a stored pointer is not needed
    snap.restore()
    assert tuple(ob.location) == (0, 0, 0)
    ob.location = (1, 2, 3)
    empty_scene.name = "Renamed"
    snap.restore()
    assert tuple(ob.location) == (0, 0, 0)
