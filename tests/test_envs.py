"""Every registered environment passes check_env; the reference games follow their rules."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from drla_core.base.env import check_env
from drla_core.envs import ENV_NAMES, PARALLEL_ENV_NAMES, make
from drla_core.envs.evacuation import EvacuationGrid
from drla_core.envs.identity import IdentityEnv
from drla_core.envs.tank_grid import CANON_DOWN, CANON_UP, FIRE, MOVE_FRONT, TANK_ACTIONS, WAIT, TankGrid


def _available(name: str) -> bool:
    return name != "cartpole" or importlib.util.find_spec("drla_core.envs.cartpole") is not None


@pytest.mark.parametrize("name", ENV_NAMES)
def test_check_env_on_every_registered_env(name: str) -> None:
    if not _available(name):
        pytest.skip("drla_core/envs/cartpole.py has not landed yet")
    env = make(name)
    check_env(env, steps=300)
    assert env.task_metric is None or isinstance(env.task_metric, str)
    env.close()


@pytest.mark.parametrize("kwargs", [{"camera": "top"}, {"width": 3, "depth": 4, "elevations": 2}, {"max_steps": 5}])
def test_check_env_on_tank_variants(kwargs: dict) -> None:
    check_env(TankGrid(**kwargs), steps=200)


def test_registry() -> None:
    assert set(ENV_NAMES) == {"cartpole", "deceptive_maze", "hard_maze", "evacuation", "tank_grid", "identity",
                              "pendulum", "xor", "double_pole", "double_pole_nv", "trap_corridor"}
    assert isinstance(make("tank_grid", width=4), TankGrid) and make("tank_grid", width=4).width == 4
    assert set(PARALLEL_ENV_NAMES) == {"pacman"}
    with pytest.raises(KeyError, match="unknown environment 'pong'; known: cartpole.*pacman"):
        make("pong")


def test_seeding_reproduces_and_differs() -> None:
    env = EvacuationGrid()
    starts = {env.reset(seed=s)[0].argmax() for s in range(30)}
    assert len(starts) > 5  # the start cell is random
    assert np.array_equal(env.reset(seed=4)[0], env.reset(seed=4)[0])


# ---- TankGrid ---------------------------------------------------------------------------------


def aimed_tank(gap: int = 2) -> TankGrid:
    """A tank with the target ``gap`` cells straight ahead and the elevation set for it."""
    env = TankGrid()
    env.reset(seed=0)
    env.agent, env.target, env.elevation = (2, 1), (2, 1 + gap), gap - 1
    return env


def test_tank_action_names() -> None:
    assert TankGrid().action_space.names == ["move_right", "move_left", "move_front", "move_back", "wait",
                                             "canon_up", "canon_down", "fire"]
    assert tuple(TankGrid().action_space.names) == TANK_ACTIONS


def test_tank_hit_gives_plus_one_and_moves_the_target() -> None:
    env = aimed_tank(2)
    obs, reward, terminated, truncated, info = env.step(FIRE)
    assert reward == 1.0 and info["hit"] == 1 and info["score"] == 1 and env.score == 1
    assert not terminated and not truncated
    assert env.target != env.agent and env.target[1] >= 1
    assert obs[-1] == pytest.approx(0.1)  # the score, normalised by score_scale=10
    # The target moves to a random cell: over many hits it visits several cells.
    cells = set()
    for _ in range(20):
        env.agent, env.elevation = (env.target[0], env.target[1] - 1), 0
        assert env.step(FIRE)[1] == 1.0
        cells.add(env.target)
    assert len(cells) > 3


@pytest.mark.parametrize("elevation, target", [(0, (2, 3)), (2, (2, 3)), (1, (3, 3)), (1, (2, 0))])
def test_tank_miss_gives_minus_one(elevation: int, target: tuple[int, int]) -> None:
    env = aimed_tank(2)
    env.elevation, env.target = elevation, target
    _, reward, _, _, info = env.step(FIRE)
    assert reward == -1.0 and info["hit"] == 0 and env.score == 0 and env.target == target


def test_tank_hit_info_only_on_fire() -> None:
    env = aimed_tank(2)
    for action in range(7):
        _, reward, _, _, info = env.step(action)
        assert "hit" not in info and reward == 0.0


def test_tank_cannon_and_moves_are_clamped_and_blocked() -> None:
    env = aimed_tank(1)
    for _ in range(5):
        env.step(CANON_UP)
    assert env.elevation == env.elevations - 1
    for _ in range(5):
        env.step(CANON_DOWN)
    assert env.elevation == 0
    env.step(MOVE_FRONT)  # the target blocks the way
    assert env.agent == (2, 1)


def test_tank_picture_shows_target_offset_and_gauge() -> None:
    env = aimed_tank(2)
    pic = env.picture()
    assert pic.shape == env.picture_shape and set(np.unique(pic)) <= {0.0, 1.0}
    assert pic[env.depth - 1 - 2, env.width - 1] == 1.0  # two rows above the centre: the target
    assert pic[-1].sum() == env.elevation + 1  # the cannon gauge
    assert pic[:-1].sum() == 1.0
    env.step(WAIT)
    obs = env.step(CANON_UP)[0]
    assert obs[: pic.size].reshape(pic.shape)[-1].sum() == 3


def test_tank_truncates_at_max_steps() -> None:
    env = TankGrid(max_steps=3)
    env.reset(seed=1)
    flags = [env.step(WAIT)[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]


def test_tank_is_solvable_by_a_scripted_policy() -> None:
    """Walk behind the target, set the elevation, fire: every shot hits."""
    env = TankGrid()
    env.reset(seed=3)
    hits = shots = 0
    for _ in range(400):
        (ax, ay), (tx, ty) = env.agent, env.target
        gap = ty - ay
        if gap < 1:  # level with or ahead of the target: step aside, then back
            action = (0 if ax + 1 < env.width else 1) if ax == tx else 3
        elif ax != tx:
            action = 0 if tx > ax else 1
        elif gap > env.elevations:
            action = MOVE_FRONT
        elif env.elevation != gap - 1:
            action = CANON_UP if env.elevation < gap - 1 else CANON_DOWN
        else:
            action = FIRE
        _, reward, _, truncated, info = env.step(action)
        if "hit" in info:
            shots += 1
            hits += info["hit"]
        if truncated:
            env.reset()
    assert shots > 20 and hits == shots


# ---- EvacuationGrid ---------------------------------------------------------------------------


def test_evacuation_exit_gives_plus_one() -> None:
    env = EvacuationGrid()
    env.reset(seed=0)
    env.pos = (1, 5)  # just below the exit in the top wall
    _, reward, terminated, truncated, info = env.step(0)  # up
    assert reward == 1.0 and terminated and not truncated and info["escaped"] == 1


def test_evacuation_fire_terminates_with_minus_one() -> None:
    env = EvacuationGrid()
    env.reset(seed=0)
    env.pos = (2, 1)  # the fire is to the right, at (2, 2)
    _, reward, terminated, truncated, info = env.step(3)  # right
    assert reward == -1.0 and terminated and not truncated and info["escaped"] == 0


def test_evacuation_walls_block_and_steps_cost() -> None:
    env = EvacuationGrid()
    env.reset(seed=0)
    env.pos = (1, 1)
    obs, reward, terminated, truncated, info = env.step(0)  # up, into the wall
    assert env.pos == (1, 1) and reward == pytest.approx(-0.01) and not terminated and info == {}
    walls = obs[64:73].reshape(3, 3)
    assert walls[0].all() and walls[1, 0] == 1 and walls[1, 1] == 0


def test_evacuation_truncates() -> None:
    env = EvacuationGrid(max_steps=4)
    env.reset(seed=0)
    env.pos = (1, 1)
    results = [env.step(0) for _ in range(4)]
    assert [r[3] for r in results] == [False, False, False, True]
    assert results[-1][4] == {"escaped": 0} and not results[-1][2]


def test_evacuation_custom_building_and_errors() -> None:
    env = EvacuationGrid(building=["#E#", "#.#", "###"])
    assert env.observation_space.shape == (9 + 27,)
    env.reset(seed=0)
    assert env.step(0)[1] == 1.0
    with pytest.raises(ValueError, match="unknown map characters"):
        EvacuationGrid(building=["#X#"])
    with pytest.raises(ValueError, match="at least one floor cell and one exit"):
        EvacuationGrid(building=["###", "#.#", "###"])


# ---- IdentityEnv ------------------------------------------------------------------------------


def test_identity_rewards_the_right_answer() -> None:
    env = IdentityEnv(n=3, ep_length=10)
    obs, _ = env.reset(seed=0)
    total = 0.0
    for t in range(10):
        obs, reward, terminated, truncated, info = env.step(int(obs.argmax()))
        total += reward
        assert info["correct"] == 1 and not terminated and truncated == (t == 9)
    assert total == 10.0
    obs, _ = env.reset(seed=0)
    assert env.step((int(obs.argmax()) + 1) % 3)[1] == 0.0


@pytest.mark.parametrize("name", ["evacuation", "tank_grid", "identity"])
def test_invalid_actions_are_refused(name: str) -> None:
    env = make(name)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="invalid action"):
        env.step(99)


@pytest.mark.slow
def test_dqn_learns_to_escape() -> None:
    """A 2x64 DQN finds the exits of the default building within a few thousand steps."""
    dqn = pytest.importorskip("drla_core.rl.dqn")
    train = pytest.importorskip("drla_core.rl.train")
    env, eval_env = make("evacuation"), make("evacuation")
    config = dqn.DQNConfig(learning_starts=500, train_freq=4, gradient_steps=1, target_update_interval=500,
                           learning_rate=1e-3, exploration_fraction=0.3, exploration_final_eps=0.05)
    agent = dqn.DQNAgent(env.observation_space, env.action_space, config, seed=0)
    train.train(env, agent, 8000, seed=0, eval_env=eval_env, eval_interval=1000, eval_episodes=10)
    result = train.evaluate(make("evacuation"), agent.predict, episodes=30, seed=1)
    assert result.metric >= 0.8 and result.mean_return > 0.5
