"""The Velocity sensor: metres and radians per second from an object's motion between steps, zero
at the start of each episode, in world or local axes; a node asking for nothing says so."""

import math

import numpy as np
import pytest

from test_sensors_actions import Tree, cube, with_wait


def velocity_env(scene, ob, frames_per_step: int = 1, **props):
    t = with_wait(Tree(scene))
    t.env_node.frames_per_step = frames_per_step
    node = t.sensor("DRLA_VelocitySensorNode", object=ob, **props)
    return t, node


def test_linear_velocity_is_the_move_over_the_step_time(empty_scene):
    scene = empty_scene
    fps = scene.render.fps / scene.render.fps_base
    ob = cube(scene, "Walker")
    t, _ = velocity_env(scene, ob)
    env = t.env()
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs, [0.0, 0.0, 0.0])  # no motion yet in this episode
    ob.location.x += 0.5
    obs, *_ = env.step(0)
    np.testing.assert_allclose(obs, [0.5 * fps, 0.0, 0.0], rtol=1e-5)
    ob.location.y -= 0.25
    obs, *_ = env.step(0)
    np.testing.assert_allclose(obs, [0.0, -0.25 * fps, 0.0], rtol=1e-5, atol=1e-4)
    obs, _ = env.reset()  # a new episode starts at rest, wherever the object was
    np.testing.assert_array_equal(obs, [0.0, 0.0, 0.0])


def test_frames_per_step_and_scale_enter_the_reading(empty_scene):
    scene = empty_scene
    fps = scene.render.fps / scene.render.fps_base
    ob = cube(scene, "Walker")
    t, _ = velocity_env(scene, ob, frames_per_step=3, scale=0.1)
    env = t.env()
    env.reset(seed=0)
    ob.location.z += 0.3
    obs, *_ = env.step(0)
    np.testing.assert_allclose(obs, [0.0, 0.0, 0.1 * 0.3 * fps / 3], rtol=1e-5, atol=1e-6)


def test_angular_velocity_and_local_axes(empty_scene):
    scene = empty_scene
    fps = scene.render.fps / scene.render.fps_base
    ob = cube(scene, "Walker")
    ob.rotation_euler.z = math.pi / 2  # the object's own +X points along the world's +Y
    t, _ = velocity_env(scene, ob, use_linear=True, use_angular=True, space='LOCAL')
    env = t.env()
    obs, _ = env.reset(seed=0)
    assert obs.shape == (6,)
    ob.location.y += 0.5  # forward along its own X
    ob.rotation_euler.z += math.radians(5)  # turning left about Z (Z is the same axis in both spaces)
    obs, *_ = env.step(0)
    turn = math.radians(5)  # local axes are the object's axes as it is turned now, 5 degrees on
    np.testing.assert_allclose(obs[:3], [0.5 * fps * math.cos(turn), -0.5 * fps * math.sin(turn), 0.0],
                               rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(obs[3:], [0.0, 0.0, math.radians(5) * fps], rtol=1e-4, atol=1e-4)
    ob.rotation_euler.z -= math.radians(10)  # turning right: negative spin, the short way round
    obs, *_ = env.step(0)
    assert obs[5] == pytest.approx(-math.radians(10) * fps, rel=1e-4)


def test_a_velocity_sensor_reading_nothing_says_so(empty_scene):
    from drla_ext.addon.specs import CompileError
    from drla_ext.addon.tree import compiler

    ob = cube(empty_scene, "Walker")
    t, node = velocity_env(empty_scene, ob, use_linear=False, use_angular=False)
    with pytest.raises(CompileError):
        compiler.compile_tree(t.b.tree, empty_scene)
    assert node.drla_error == "choose Linear and/or Angular"
