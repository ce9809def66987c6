"""A .blend's tree in any trainer (issue 25): ``gymnasium.make("drla/Scene-v0", blend=..., tree=...)``, its scene
copies through ``gymnasium.make_vec``, a multi-agent tree through ``drla.gym.parallel_env(blend=...)``; checked by
Gymnasium's and PettingZoo's own tests on every shipped scene tree, and trained by Stable-Baselines3."""

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install '.[gym]')")
pytest.importorskip("pettingzoo", reason="pettingzoo is not installed (pip install '.[gym]')")

import bpy  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402
from gymnasium.vector import AutoresetMode  # noqa: E402
from pettingzoo.test import parallel_api_test, parallel_seed_test  # noqa: E402

import drla.gym as dgym  # noqa: E402
from drla import gym_scene  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCENES = sorted((ROOT / "scenes").glob("*/*.blend"))
TANK = ROOT / "scenes" / "tank" / "tank.blend"
DUEL = ROOT / "scenes" / "tank_duel" / "tank_duel.blend"
CHASE = ROOT / "scenes" / "chase" / "chase.blend"
CARTPOLE_RB = ROOT / "scenes" / "cartpole_rb" / "cartpole_rb.blend"
ROBOT_ARM = ROOT / "scenes" / "robot_arm" / "robot_arm.blend"


def _trees(kind: str) -> list:
    """``(blend, tree)`` of every shipped scene's trees of ``kind`` ("single", "multi"), read from the files."""
    from drla.extension import register_extension

    register_extension()
    return [pytest.param(blend, name, id=f"{blend.parent.name}:{name}")
            for blend in SCENES for name, found in gym_scene.scene_trees(blend) if found == kind]


SINGLE = _trees("single")
MULTI = _trees("multi")
#: check_env's warnings about a Box without bounds: a location or a velocity sensor knows none
INFINITE = ("A Box observation space minimum value is -infinity", "A Box observation space maximum value is infinity")


@pytest.fixture(autouse=True)
def _no_scene_env_left_open():
    """Each test closes its environments; one a failing test left open is closed here, not held by the next."""
    yield
    held = gym_scene._OPEN
    if held is not None and held.users:
        for lease in list(held.users):
            lease.end()
        pytest.fail(f"an environment on {held.path.name} was left open")


def _value(v) -> str:
    """A custom property as text; a group by its contents (Blender 4.5 prints a group with its address)."""
    return str(v.to_dict() if hasattr(v, "to_dict") else v)


def _scene_state() -> dict:
    """Everything a run could leave changed: each object's transform, custom properties, visibility and parent;
    the scene's frame and custom properties; how many objects, collections and meshes there are."""
    scene = bpy.context.scene
    objects = {ob.name: (tuple(ob.location), tuple(ob.rotation_euler), tuple(ob.rotation_quaternion),
                         tuple(ob.scale), ob.rotation_mode, ob.hide_viewport, ob.hide_render,
                         ob.parent.name if ob.parent else None, {k: _value(ob[k]) for k in ob.keys()})
               for ob in scene.objects}
    return {"objects": objects, "frame": scene.frame_current, "props": {k: _value(scene[k]) for k in scene.keys()},
            "counts": (len(bpy.data.objects), len(bpy.data.collections), len(bpy.data.meshes))}


def _as_opened(blend: Path) -> dict:
    bpy.ops.wm.open_mainfile(filepath=str(blend), load_ui=False)
    return _scene_state()


# --------------------------------------------------------------------------- the libraries' own checkers

@pytest.mark.parametrize("blend, tree", SINGLE)
def test_gymnasium_s_checker_passes_on_every_single_agent_scene_tree(blend, tree):
    """No warning but the one Gymnasium gives for an unbounded Box, and only where a sensor knows no bound."""
    env = gymnasium.make("drla/Scene-v0", blend=str(blend), tree=tree, render_mode="rgb_array")
    try:
        space = env.observation_space
        unbounded = bool(np.isinf(space.low).any() or np.isinf(space.high).any())
        inner = env.unwrapped.inner
        readers_unbounded = any(np.isinf(reader.bounds).any() for reader, _, _ in inner.state._pairs)
        assert unbounded == (readers_unbounded and inner.state.clip <= 0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped)
        messages = [str(w.message) for w in caught]
        assert all(any(known in m for known in INFINITE) for m in messages), messages
        assert bool(messages) == unbounded, messages
        assert isinstance(env.action_space, (gymnasium.spaces.Discrete, gymnasium.spaces.Box))
    finally:
        env.close()


def test_a_tree_whose_sensors_all_know_their_bounds_passes_with_warnings_as_errors():
    env = gymnasium.make("drla/Scene-v0", blend=str(TANK), tree="Tank", render_mode="rgb_array")
    try:
        assert np.isfinite(env.observation_space.low).all() and np.isfinite(env.observation_space.high).all()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)
    finally:
        env.close()


@pytest.mark.parametrize("blend, tree", MULTI)
def test_pettingzoo_s_parallel_seed_and_aec_tests_pass_on_every_multi_agent_scene_tree(blend, tree):
    from pettingzoo.test import api_test
    from pettingzoo.utils.conversions import parallel_to_aec

    env = dgym.parallel_env(blend=str(blend), tree=tree)
    parallel_api_test(env, num_cycles=60)
    env.close()
    aec = parallel_to_aec(dgym.parallel_env(blend=str(blend), tree=tree))
    api_test(aec, num_cycles=30)
    aec.close()
    parallel_seed_test(lambda: dgym.parallel_env(blend=str(blend), tree=tree), num_cycles=60)
    assert gym_scene._OPEN is None  # (the seed test closes both)


def test_the_shipped_scenes_hold_trees_of_both_kinds():
    assert {(b.parent.name, t) for b, t in (p.values for p in SINGLE)} >= {("tank", "Tank"), ("walker", "Walker")}
    assert {(b.parent.name, t) for b, t in (p.values for p in MULTI)} >= {("tank_duel", "Duel"), ("chase", "Chase"),
                                                                       ("pacman", "PacMan")}


# --------------------------------------------------------------------------- one process, one .blend

def test_two_environments_on_one_file_each_play_as_if_alone():
    """Gymnasium's SyncVectorEnv over two scene environments (their objects swapped in turn) steps each exactly as
    one environment alone does with the same seed and actions."""
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 8, (40, 2))
    envs = gymnasium.make_vec("drla/Scene-v0", num_envs=2, vectorization_mode="sync", blend=str(TANK), tree="Tank")
    obs, _ = envs.reset(seed=11)
    together = [obs]
    for a in actions:
        together.append(envs.step(a)[0])
    envs.close()
    assert gym_scene._OPEN is None
    for i in range(2):
        env = gymnasium.make("drla/Scene-v0", blend=str(TANK), tree="Tank")
        alone, ended = [env.reset(seed=11 + i)[0]], False
        for a in actions[:, i]:
            if ended:  # SyncVectorEnv's next-step autoreset: this step resets the copy
                o, ended = env.reset()[0], False
            else:
                o, _, term, trunc, _ = env.step(a)
                ended = term or trunc
            alone.append(o)
        env.close()
        assert any(not np.array_equal(alone[k], alone[0]) for k in range(len(alone)))
        assert all(np.array_equal(row[i], alone[k]) for k, row in enumerate(together))


def test_another_file_is_refused_while_an_environment_holds_one_and_opens_after_close():
    env = gymnasium.make("drla/Scene-v0", blend=str(TANK), tree="Tank")
    with pytest.raises(gym_scene.SceneFileError, match=r"this process has .*tank\.blend open for 1 environment\(s\) "
                       r"and bpy holds one \.blend per process: close them first \(env\.close\(\)\), or make the "
                       r"environment on walker\.blend in another process"):
        gymnasium.make("drla/Scene-v0", blend=str(ROOT / "scenes" / "walker" / "walker.blend"), tree="Walker")
    env.reset(seed=0)
    env.step(0)  # the refusal left the open file alone
    env.close()
    other = gymnasium.make("drla/Scene-v0", blend=str(ROOT / "scenes" / "walker" / "walker.blend"), tree="Walker")
    assert other.unwrapped.file.path.name == "walker.blend"
    other.close()


def test_an_environment_dropped_without_close_lets_go_of_the_file():
    import gc

    env = gymnasium.make("drla/Scene-v0", blend=str(TANK))
    env.reset(seed=0)
    env.step(1)
    moved = _scene_state()
    del env
    gc.collect()
    assert gym_scene._OPEN is None
    assert moved != _scene_state() == _as_opened(TANK)  # and the scene is back as the file opened it
    other = gymnasium.make("drla/Scene-v0", blend=str(ROOT / "scenes" / "walker" / "walker.blend"), tree="Walker")
    other.close()
    with pytest.raises(RuntimeError, match=r"this DRLA scene environment \(tree 'Walker' of walker\.blend\) is "
                       "closed"):
        other.reset(seed=0)


def test_on_a_physics_scene_an_interrupted_episode_must_be_reset_and_a_vector_env_takes_the_file_alone():
    first = gymnasium.make("drla/Scene-v0", blend=str(CARTPOLE_RB))
    first.reset(seed=0)
    first.step(first.action_space.sample())
    second = gymnasium.make("drla/Scene-v0", blend=str(CARTPOLE_RB))
    second.reset(seed=0)
    with pytest.raises(RuntimeError, match=r"another environment used cartpole_rb\.blend since this one's reset, and "
                       r"a rigid-body simulation cannot be saved for it: reset\(\) this one again"):
        first.step(first.action_space.sample())
    second.close()
    a, _ = first.reset(seed=4)
    b = [first.step(np.full(1, 0.5, np.float32))[0] for _ in range(5)]
    first.close()
    alone = gymnasium.make("drla/Scene-v0", blend=str(CARTPOLE_RB))
    assert np.array_equal(alone.reset(seed=4)[0], a)
    assert all(np.array_equal(alone.step(np.full(1, 0.5, np.float32))[0], o) for o in b)
    alone.close()
    envs = gymnasium.make_vec("drla/Scene-v0", num_envs=2, vectorization_mode="vector_entry_point", blend=str(TANK))
    with pytest.raises(gym_scene.SceneFileError, match="a vector environment's copies fill the scene: close that one "
                       r"first \(env\.close\(\)\), or make this one in another process"):
        gymnasium.make("drla/Scene-v0", blend=str(TANK))
    envs.close()


@pytest.mark.parametrize("make", ["single", "vector", "parallel", "physics"])
def test_the_scene_is_as_the_file_opened_it_after_close(make):
    blend = {"single": TANK, "vector": TANK, "parallel": DUEL, "physics": CARTPOLE_RB}[make]
    if make in ("single", "physics"):
        env = gymnasium.make("drla/Scene-v0", blend=str(blend), render_mode="rgb_array")
        env.reset(seed=1)
        env.action_space.seed(1)  # unseeded samples made the physics case flaky
        for _ in range(30):
            *_, term, trunc, _ = env.step(env.action_space.sample())
            if term or trunc:
                env.reset()
        env.render()
    elif make == "vector":
        env = gymnasium.make_vec("drla/Scene-v0", num_envs=3, vectorization_mode="vector_entry_point",
                                 blend=str(blend))
        env.reset(seed=1)
        env.action_space.seed(1)
        for _ in range(30):
            env.step(env.action_space.sample())
    else:
        env = dgym.parallel_env(blend=str(blend))
        env.reset(seed=1)
        for agent in env.possible_agents:
            env.action_space(agent).seed(1)
        for _ in range(30):
            if not env.agents:
                env.reset()
            env.step({a: env.action_space(a).sample() for a in env.agents})
    moved = _scene_state()
    env.close()
    after = _scene_state()
    assert after == _as_opened(blend)
    assert moved != after  # the run did change the scene


# --------------------------------------------------------------------------- errors

def test_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^no such \.blend file: nowhere/x\.blend$"):
        gymnasium.make("drla/Scene-v0", blend="nowhere/x.blend", tree="Tank")
    with pytest.raises(gym_scene.SceneFileError, match=r"^drla/Scene-v0 needs blend=PATH"):
        gymnasium.make("drla/Scene-v0")
    with pytest.raises(gym_scene.SceneFileError, match=r"^no DRLA tree named 'Tnak' in .*tank\.blend; it has: Tank$"):
        gymnasium.make("drla/Scene-v0", blend=str(TANK), tree="Tnak")
    with pytest.raises(gym_scene.SceneFileError, match=r"^tree 'Duel' in tank_duel\.blend has several agents "
                       r"\(tank_a, tank_b\): use drla\.gym\.parallel_env\(blend=\.\.\., tree='Duel'\), a PettingZoo "
                       r"ParallelEnv$"):
        gymnasium.make("drla/Scene-v0", blend=str(DUEL), tree="Duel")
    with pytest.raises(gym_scene.SceneFileError, match=r"^tree 'Arm3' in robot_arm\.blend trains Learned IK"):
        gymnasium.make("drla/Scene-v0", blend=str(ROBOT_ARM))  # no tree named: the panel's RL Tree, Arm3
    with pytest.raises(gym_scene.SceneFileError, match=r"^tree 'Arm3' in robot_arm\.blend trains Learned IK, which "
                       "has no environment to step"):
        gymnasium.make("drla/Scene-v0", blend=str(ROBOT_ARM), tree="Arm3")
    with pytest.raises(gym_scene.SceneFileError, match=r"^tree 'Tank' in tank\.blend has one agent: use "
                       r"gymnasium\.make\(\"drla/Scene-v0\", blend=\.\.\., tree='Tank'\)$"):
        dgym.parallel_env(blend=str(TANK), tree="Tank")
    with pytest.raises(gym_scene.SceneFileError, match=r"^num_envs=2: 'Cart' is a rigid body: copies of a physics "
                       "scene restart together"):
        gymnasium.make_vec("drla/Scene-v0", num_envs=2, vectorization_mode="vector_entry_point",
                           blend=str(CARTPOLE_RB))
    with pytest.raises(TypeError, match="give a built-in game's name"):
        dgym.parallel_env("pacman", blend=str(DUEL))
    assert gym_scene._OPEN is None  # nothing refused keeps the file

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    broken = bpy.data.node_groups.new("Broken", "DRLA_NodeTree")
    broken.use_fake_user = True
    broken.nodes.new("DRLA_EnvironmentNode")
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "broken.blend"))
    with pytest.raises(gym_scene.SceneFileError, match=r"^tree 'Broken' in broken\.blend does not compile: node "
                       r"'Environment': [^\n]+$"):
        gymnasium.make("drla/Scene-v0", blend=str(tmp_path / "broken.blend"))


# --------------------------------------------------------------------------- rendering

def test_rgb_array_is_the_scene_camera_s_picture():
    env = gymnasium.make("drla/Scene-v0", blend=str(TANK), tree="Tank", render_mode="rgb_array")
    env.reset(seed=3)
    picture = env.render()
    scene = bpy.context.scene
    assert picture.shape == (scene.render.resolution_y, scene.render.resolution_x, 3) and picture.dtype == np.uint8
    from drla_ext.addon.scene.camera import CameraRenderer

    with CameraRenderer(scene, scene.camera, 64, 64, 'RGB') as camera:
        assert np.array_equal(picture, np.rint(camera.read() * 255).astype(np.uint8))
    assert len(np.unique(picture.reshape(-1, 3), axis=0)) > 1
    env.close()
    wide = gymnasium.make("drla/Scene-v0", blend=str(ROOT / "scenes" / "walker" / "walker.blend"), tree="Walker",
                          render_mode="rgb_array")
    wide.reset(seed=0)
    assert wide.render().shape == (144, 256, 3)  # 1920 x 1080 scaled to 256 pixels a side
    wide.close()
    sized = gymnasium.make("drla/Scene-v0", blend=str(TANK), render_mode="rgb_array", render_size=(32, 16))
    sized.reset(seed=0)
    assert sized.render().shape == (16, 32, 3)
    sized.close()
    with pytest.raises(ValueError, match=r"render_size must be two positive numbers of pixels, got \(0, 16\)"):
        gymnasium.make("drla/Scene-v0", blend=str(TANK), render_mode="rgb_array", render_size=(0, 16))
    with pytest.raises(ValueError, match=r"render_mode 'ansi': a scene renders \['rgb_array'\]"):
        gymnasium.make("drla/Scene-v0", blend=str(TANK), render_mode="ansi")
    duel = dgym.parallel_env(blend=str(DUEL), render_mode="rgb_array")
    duel.reset(seed=0)
    first = duel.render()
    for _ in range(5):
        duel.step({a: 0 for a in duel.agents})  # both tanks drive forward: the picture changes
    assert first.shape == (64, 64, 3) and not np.array_equal(first, duel.render())
    duel.close()


# --------------------------------------------------------------------------- the vector environment

@pytest.mark.parametrize("autoreset", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_the_vector_env_follows_gymnasium_s_autoreset_exactly(autoreset):
    """``vector_entry_point`` (one scene, its copies) against Gymnasium's own SyncVectorEnv in the same autoreset mode
    over as many scene environments: the same observations, rewards, endings, infos (the tank's hits) and final
    observations, step for step, through many episodes' ends."""
    n, steps = 3, 130
    rng = np.random.default_rng(1)
    actions = rng.integers(0, 8, (steps, n))
    runs = []
    kwargs = {} if autoreset == AutoresetMode.SAME_STEP else {"autoreset_mode": autoreset}
    for mode, kw in (("vector_entry_point", kwargs), ("sync", {"vector_kwargs": {"autoreset_mode": autoreset}})):
        envs = gymnasium.make_vec("drla/Scene-v0", num_envs=n, vectorization_mode=mode, blend=str(TANK), tree="Tank",
                                  **kw)
        assert envs.metadata["autoreset_mode"] == autoreset
        obs, _ = envs.reset(seed=5)
        run = [(obs,)]
        for a in actions:
            run.append(envs.step(a))
        envs.close()
        runs.append(run)
    fast, sync = runs
    assert np.array_equal(fast[0][0], sync[0][0])
    ended = 0
    for t in range(1, steps + 1):
        (o1, r1, te1, tr1, i1), (o2, r2, te2, tr2, i2) = fast[t], sync[t]
        assert np.array_equal(o1, o2) and np.array_equal(r1, r2), t
        assert np.array_equal(te1, te2) and np.array_equal(tr1, tr2), t
        assert sorted(i1) == sorted(i2), t
        for key in ("hit", "_hit"):
            if key in i1:
                assert np.array_equal(i1[key], i2[key]), t
        ended += int((te1 | tr1).sum()) if autoreset == AutoresetMode.NEXT_STEP else 0
        if "_final_obs" in i1:
            assert np.array_equal(i1["_final_obs"], te1 | tr1)
            assert i1["final_obs"].dtype == object and np.array_equal(i1["_final_info"], i2["_final_info"])
            for i in range(n):
                if i1["_final_obs"][i]:
                    assert np.array_equal(i1["final_obs"][i], i2["final_obs"][i])
                else:
                    assert i1["final_obs"][i] is None and i2["final_obs"][i] is None
            ended += int((te1 | tr1).sum())
    assert ended >= n  # every copy's first episode ended (at most 100 steps each)


def test_gymnasium_s_record_episode_statistics_counts_the_scene_copies_episodes():
    envs = gymnasium.wrappers.vector.RecordEpisodeStatistics(
        gymnasium.make_vec("drla/Scene-v0", num_envs=4, vectorization_mode="vector_entry_point", blend=str(TANK)))
    obs, _ = envs.reset(seed=2)
    envs.action_space.seed(2)
    returns, lengths, episodes = np.zeros(4), np.zeros(4, int), []
    for _ in range(120):
        obs, rewards, term, trunc, infos = envs.step(envs.action_space.sample())
        returns += rewards
        lengths += 1
        done = term | trunc
        if done.any():
            assert np.array_equal(infos["_episode"], done)
            for i in np.flatnonzero(done):
                assert infos["episode"]["r"][i] == pytest.approx(returns[i])
                assert infos["episode"]["l"][i] == lengths[i]
                episodes.append(i)
            returns[done], lengths[done] = 0.0, 0
    assert len(episodes) >= 4
    envs.close()


def test_gymnasium_s_observation_wrappers_take_the_next_step_copies_and_the_single_env():
    """Gymnasium's vector NormalizeObservation refuses same-step autoreset; the next-step copies take it (and
    NormalizeReward), and the single environment takes FrameStackObservation."""
    same = gymnasium.make_vec("drla/Scene-v0", num_envs=2, vectorization_mode="vector_entry_point", blend=str(TANK))
    with pytest.raises(ValueError, match="Expected autoreset_mode to be NEXT_STEP or DISABLED"):
        gymnasium.wrappers.vector.NormalizeObservation(same)
    same.close()
    envs = gymnasium.wrappers.vector.NormalizeReward(gymnasium.wrappers.vector.NormalizeObservation(
        gymnasium.make_vec("drla/Scene-v0", num_envs=2, vectorization_mode="vector_entry_point", blend=str(TANK),
                           autoreset_mode="NextStep")))
    obs, _ = envs.reset(seed=0)
    envs.action_space.seed(0)
    for _ in range(30):
        obs, rewards, *_ = envs.step(envs.action_space.sample())
    assert obs.shape == (2, 211) and np.isfinite(obs).all() and np.abs(obs).max() > 0
    assert envs.env.obs_rms.count > 30  # the running statistics saw every step's observations
    envs.close()
    stacked = gymnasium.wrappers.FrameStackObservation(gymnasium.make("drla/Scene-v0", blend=str(TANK)), 4)
    first, _ = stacked.reset(seed=0)
    assert first.shape == (4, 211)
    later = stacked.step(0)[0]
    assert np.array_equal(later[:3], first[1:])
    stacked.close()


# --------------------------------------------------------------------------- trainers

def _reach_blend(path: Path) -> Path:
    """The add-on's Reach example (Add > DRLA Examples: a cube, a goal, transform and distance sensors), saved."""
    from drla_ext.addon.ui import examples

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    examples.build_transform_scene(scene)
    examples.build_transform_tree(scene)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


@pytest.mark.slow
def test_stable_baselines3_ppo_learns_to_reach_the_goal_in_a_blend(tmp_path):
    """10,000 steps of SB3's PPO through ``gymnasium.make`` (25 to 45 s on the loaded 2-core machine): the greedy
    policy's mean return over 20 episodes goes from below 0 (it walks off or waits; -2.27 here) to above 2 (it
    reaches the goal: +1, plus the progress; 3.67 here)."""
    torch = pytest.importorskip("torch")
    sb3 = pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.evaluation import evaluate_policy

    torch.set_num_threads(1)
    blend = _reach_blend(tmp_path / "reach.blend")
    env = gymnasium.make("drla/Scene-v0", blend=str(blend), tree="Reach")
    model = sb3.PPO("MlpPolicy", env, seed=0, n_steps=512, batch_size=64, n_epochs=4, gamma=0.95, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # evaluate_policy: "not wrapped with a Monitor"
        before, _ = evaluate_policy(model, env, n_eval_episodes=20, deterministic=True)
        model.learn(10_000)
        after, _ = evaluate_policy(model, env, n_eval_episodes=20, deterministic=True)
    env.close()
    assert before < 0.0 and after > 2.0, (before, after)


@pytest.mark.slow
def test_the_cleanrl_example_runs_ppo_updates_on_the_tank_copies(tmp_path):
    """``examples/cleanrl_ppo_scene.py`` end to end, as a user runs it: 2 updates of 4 copies x 32 steps on the tank
    through ``make_vec`` (with a camera in the scene: PyTorch's optimizer loads Triton after Blender's GPU context,
which crashed the process before ``drla.gym_scene`` loaded Triton first); it prints each update's line and exits 0
(about 40 s on the loaded 2-core machine, most of it importing torch)."""
    pytest.importorskip("torch", reason="the example trains with PyTorch (requirements-dev.txt; not in the 4.5 leg)")
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "cleanrl_ppo_scene.py"), "--blend", str(TANK),
                          "--tree", "Tank", "--num-envs", "4", "--num-steps", "32", "--total-timesteps", "256",
                          "--seed", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line for line in out.stdout.splitlines() if line.startswith("update ")]
    assert [line.split()[1] for line in lines] == ["1/2", "2/2"], out.stdout
    assert "steps 256" in lines[-1]


@pytest.mark.slow
def test_async_vector_env_with_spawn_puts_each_environment_in_its_own_process():
    """The way to another file, or to more cores: Gymnasium's AsyncVectorEnv, each copy a spawned process that
    imports bpy itself (bpy's script folders, which the parent's sys.path hands down, are dropped first); it steps
    as the in-process SyncVectorEnv does (about 15 s, most of it the processes starting)."""
    actions = np.random.default_rng(3).integers(0, 8, (15, 2))
    runs = []
    for mode, kw in (("async", {"vector_kwargs": {"context": "spawn"}}), ("sync", {})):
        envs = gymnasium.make_vec("drla/Scene-v0", num_envs=2, vectorization_mode=mode, blend=str(TANK), **kw)
        try:
            run = [envs.reset(seed=3)[0]] + [envs.step(a)[:4] for a in actions]
        finally:
            envs.close()
        runs.append(run)
    assert np.array_equal(runs[0][0], runs[1][0])
    for a, b in zip(runs[0][1:], runs[1][1:]):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
