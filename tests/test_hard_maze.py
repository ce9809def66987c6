"""Lehman and Stanley's maze (``drla_core/envs/hard_maze.py``): the maps, the sensors against hand-computed
values, collisions, the episode's fitness and behaviour, the novelty archive's C++ options, and novelty search
spreading further than fitness on the medium map."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from drla.cli import main
from drla_core.base.env import check_env
from drla_core.envs import make
from drla_core.envs.hard_maze import MAPS, HardMaze, HardMazeBatch, MazeMap, rangefinders, wall_distance
from drla_core.evolve.neat import NEAT, NEATConfig
from drla_core.evolve.novelty import NoveltyArchive, NoveltyConfig, novelty_scores
from drla_core.io.model_io import load_model


def robot(maze: str, x: float, y: float, heading: float, n: int = 1) -> HardMazeBatch:
    b = HardMazeBatch(n, maze)
    b.state[:] = [x, y, heading, 0.0, 0.0]
    return b


def test_the_maps_are_the_c_files():
    medium, hard = MAPS["medium"], MAPS["hard"]
    assert (len(medium.walls), medium.start, medium.heading, medium.goal) == (11, (30.0, 22.0), 0.0, (270.0, 100.0))
    assert (len(hard.walls), hard.start, hard.heading, hard.goal) == (13, (36.0, 184.0), 0.0, (31.0, 20.0))
    assert medium.walls[4].tolist() == [241, 130, 58, 65] and hard.walls[-1].tolist() == [56, 55, 133, 30]
    env = make("hard_maze", map="medium")
    assert isinstance(env, HardMaze) and env.maze is medium
    with pytest.raises(ValueError, match="unknown maze map 'easy'; choose medium or hard"):
        HardMaze(map="easy")
    with pytest.raises(ValueError, match="unknown inputs 'both'; choose paper or code"):
        HardMaze(inputs="both")
    with pytest.raises(ValueError, match="a maze file with 1 walls has 3 numbers after its header, not 4"):
        MazeMap("1  0 0  0  5 5  1 2 3")


def test_rangefinders_read_the_distance_to_the_wall_hand_computed():
    # medium map, at the start (30, 22) heading 0 (+x): the forward ray meets wall (114, 7)-(73, 42) where y = 22,
    # x = 114 - 41 * 15 / 35; the rear ray meets wall (6, 134)-(8, 5) where y = 22, x = 8 - 2 * 17 / 129
    b = robot("medium", 30, 22, 0)
    r = rangefinders(b.maze.walls, b.state[:, 0], b.state[:, 1], b.state[:, 2])[0]
    assert r[2] == pytest.approx(114 - 41 * 15 / 35 - 30, abs=1e-6)
    assert r[5] == pytest.approx(30 - (8 - 2 * 17 / 129), abs=1e-4)
    # facing the top wall (8, 5)-(292, 7) from (30, 13.5): the perpendicular distance
    b = robot("medium", 30, 13.5, 270)
    r = rangefinders(b.maze.walls, b.state[:, 0], b.state[:, 1], b.state[:, 2])[0]
    wall_y = 5 + 2 * 22 / 284
    assert r[2] == pytest.approx(13.5 - wall_y, abs=1e-4)  # straight up (heading 270 = -y)
    # hard map, at the start (36, 184): nothing within 100 straight up (x = 36 crosses no wall from y 84 to 184)
    h = robot("hard", 36, 184, 0)
    assert h.observe()[0, 1] == 1.0  # the -90 degree ray, normalised: out of range reads 1
    # the observation is the bias, the six rangefinders / 100, the radar
    obs = robot("medium", 30, 22, 0).observe()[0]
    assert obs[0] == 1.0 and obs[3] == pytest.approx((114 - 41 * 15 / 35 - 30) / 100, abs=1e-6)


def test_the_radar_slice_of_the_goal_hand_computed():
    # medium: the goal (270, 100) from (30, 22) is atan(78 / 240) = 18 degrees off +x: ahead at heading 0;
    # at heading 90 it is at -72 = 288 (slice [225, 315)), at 180: 198 ([135, 225)), at 270: 108 ([45, 135))
    assert math.degrees(math.atan2(78, 240)) == pytest.approx(18.0, abs=0.01)
    b = robot("medium", 30, 22, 0, n=4)
    b.state[:, 2] = [0, 90, 180, 270]
    assert b.observe()[:, 7:].tolist() == [[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0]]
    # hard: the goal (31, 20) from the start (36, 184) is at atan(164 / 5) + 180 = 268.3 degrees: slice [225, 315)
    assert make("hard_maze").reset()[0][7:].tolist() == [0, 0, 0, 1]


def test_the_code_s_input_layout_puts_the_radar_over_the_rear_rangefinder():
    paper = HardMaze(map="medium").reset()[0]
    code = HardMaze(map="medium", inputs="code").reset()[0]
    assert np.array_equal(code[:6], paper[:6])  # bias and the first five rangefinders
    assert np.array_equal(code[6:10], paper[7:11]) and code[10] == 0.0  # radar from index 6; input 10 unwritten


def test_a_move_into_a_wall_is_cancelled_and_the_robot_keeps_its_speed_and_turns():
    b = robot("medium", 30, 13.5, 270)  # 8.34 below the top wall, facing it
    assert wall_distance(b.maze.walls, b.state[:, 0], b.state[:, 1]).min() == pytest.approx(8.345, abs=1e-3)
    b.step([[0.0, 1.0]])  # speed 0.5: the robot would end 7.85 from the wall, inside its radius 8
    assert b.state[0].tolist() == [30.0, 13.5, 270.0, 0.5, 0.0]
    b.step([[1.0, 0.0]])  # still blocked (the velocity uses the heading before the turn), but it turns 0.5 degree
    assert b.state[0, :2].tolist() == [30.0, 13.5] and b.state[0, 2] == 270.5 and b.state[0, 4] == 0.5
    b = robot("medium", 30, 13.5, 90)  # facing away: it moves
    b.step([[0.0, 1.0]])
    assert b.state[0, 1] == pytest.approx(14.0) and b.state[0, 0] == pytest.approx(30.0)


def test_speed_and_turning_are_clamped_and_the_heading_wraps():
    b = robot("medium", 150, 100, 359)
    for _ in range(10):
        b.step([[1.0, -1.0]])
    assert b.state[0, 4] == 3.0 and b.state[0, 3] == -3.0  # each held in [-3, 3]
    assert 0 <= b.state[0, 2] <= 360


def test_an_episode_ends_at_400_steps_with_the_paper_s_fitness_and_the_final_position():
    env = HardMaze(map="medium")
    obs, info = env.reset(seed=1)
    assert info["behavior"].tolist() == [30.0, 22.0]
    total, steps, done = 0.0, 0, False
    while not done:
        obs, r, terminated, truncated, info = env.step(np.array([0.2, 0.3]))
        total, steps, done = total + r, steps + 1, terminated or truncated
        if not done:
            assert r == 0.0
    assert steps == 400 and truncated and not terminated
    x, y = info["behavior"]
    assert total == pytest.approx(300 - math.hypot(x - 270, y - 100)) and info["distance"] == pytest.approx(300 - total)


def test_within_five_units_of_the_goal_is_solved_and_the_robot_stops():
    env = HardMaze(map="hard")
    env.reset()
    env.state = [31.0, 26.0, 270.0, 0.0, 0.0]  # 6 below the goal (31, 20), facing it
    _, r, terminated, _, info = env.step([0.0, 1.0])  # moves 0.5: 5.5 away
    assert not terminated and r == 0.0
    _, r, terminated, _, info = env.step([0.0, 1.0])  # speed 1: 4.5 away, within 5
    assert terminated and info["solved"] and r == pytest.approx(300 - 4.5)
    b = HardMazeBatch(1, "hard")
    b.state[:] = env.state
    b.reached[:] = True
    before = b.state.copy()
    b.step([[1.0, 1.0]])
    assert np.array_equal(b.state[:, :3], before[:, :3])  # Update returns once the goal is reached


def test_the_env_is_the_batch_step_for_step_and_passes_check_env():
    check_env(HardMaze(), steps=300)
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (3, 120, 2))
    batch = HardMazeBatch(3, "medium")
    envs = [HardMaze(map="medium") for _ in range(3)]
    for e in envs:
        e.reset()
    for t in range(120):
        obs = batch.step(actions[:, t])
        for i, e in enumerate(envs):
            o, *_ = e.step(actions[i, t])
            assert np.array_equal(o, obs[i])
    assert np.array_equal(batch.position, np.stack([e.state[0, :2] for e in envs]))


@pytest.mark.parametrize("agent", ["neat", "novelty"])
def test_drla_train_hard_maze_evolves_and_dqn_is_refused_in_one_line(agent, tmp_path, capsys):
    out = tmp_path / "maze.json"
    assert main(["train", "hard_maze", "--agent", agent, "--steps", "1", "--population", "4", "--quiet",
                 "--out", str(out)]) == 0
    model = load_model(out)
    assert model.observation_space.shape == (11,) and model.action_space.shape == (2,)
    config = json.loads((tmp_path / "maze_population.json").read_text())["config"]
    assert config["target_return"] == 295.0  # stops once a robot ends within 5 of the goal
    if agent == "novelty":  # the archive as Lehman's code keeps it
        assert {k: config["novelty"][k] for k in ("k", "threshold", "distance", "admit", "lower_after")} == \
            {"k": 15, "threshold": 6.0, "distance": "mean_abs", "admit": "nearest", "lower_after": 10}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["train", "hard_maze", "--steps", "10"]) == 2
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("error: hard_maze has continuous actions (Box(shape=(2,), dtype=float32)) and DQN needs "
                       "discrete ones: train it with --agent ppo or --agent sac or --agent ga or --agent neat or "
                       "--agent es or --agent cmaes or --agent novelty")
    assert not list(Path(tmp_path).glob("hard_maze*"))  # nothing written


# ---- novelty search as Lehman's code runs it ----------------------------------------------------------------


def test_the_code_s_novelty_distance_is_the_mean_absolute_difference():
    b = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 0.0]])
    assert novelty_scores(b, None, 1, "mean_abs").tolist() == [3.0, 3.5, 3.0]  # (|dx| + |dy|) / 2 to the nearest
    assert novelty_scores(b, None, 1).tolist() == [5.0, 5.0, 5.0]  # Euclidean (the default)
    with pytest.raises(ValueError, match="unknown novelty distance 'l3'; choose euclidean or mean_abs"):
        NoveltyArchive(NoveltyConfig(distance="l3"))
    with pytest.raises(ValueError, match="unknown archive admission 'best'; choose novelty or nearest"):
        NoveltyArchive(NoveltyConfig(admit="best"))


def test_nearest_admission_seeds_the_archive_then_admits_far_behaviours_one_by_one():
    arch = NoveltyArchive(NoveltyConfig(k=2, threshold=6.0, distance="mean_abs", admit="nearest"))
    rng = np.random.default_rng(0)
    arch.score(np.array([[0.0, 0.0], [4.0, 4.0], [20.0, 0.0], [22.0, 0.0]]), np.zeros(4), rng)
    # (0, 0) seeds the empty archive; (4, 4) is 4 from it; (20, 0) is 10 away: in; (22, 0) is 1 from (20, 0)
    assert arch.items == [[0.0, 0.0], [20.0, 0.0]] and arch.threshold == 6.0


def test_the_threshold_falls_after_lower_after_quiet_generations_and_not_below_the_floor():
    arch = NoveltyArchive(NoveltyConfig(k=1, threshold=0.3, admit="nearest", lower_after=3, threshold_floor=0.28))
    rng = np.random.default_rng(0)
    same = np.zeros((5, 2))  # the first seeds the archive (not an addition); the rest are at distance 0
    thresholds = []
    for _ in range(7):
        arch.score(same, np.zeros(5), rng)
        thresholds.append(arch.threshold)
    # -5 % after every 3rd generation in a row that adds nothing: 0.285, then 0.27075, held at the floor 0.28
    assert thresholds == [0.3, 0.3, pytest.approx(0.285), pytest.approx(0.285), pytest.approx(0.285), 0.28, 0.28]
    arch.score(np.arange(20.0).reshape(10, 2) * 10, np.zeros(10), rng)  # 10 far behaviours: raised 20 %
    assert arch.threshold == pytest.approx(0.28 * 1.2) and len(arch.items) == 11
    restored = NoveltyArchive(arch.config)
    restored.load_state(arch.state())
    assert (restored.threshold, restored.items, restored.quiet) == (arch.threshold, arch.items, arch.quiet)


def _final_positions(method: str, generations: int, seed: int, population: int) -> np.ndarray:
    """Every final position of a NEAT run on the medium map, scored by fitness or by novelty."""
    rng = np.random.default_rng(seed)
    neat = NEAT(11, 2, NEATConfig(population_size=population), rng, output_activation="tanh")
    arch = NoveltyArchive(NoveltyConfig(k=15, threshold=6.0, distance="mean_abs", admit="nearest",
                                        lower_after=10, threshold_floor=0.25)) if method == "novelty" else None
    ends = []
    for _ in range(generations):
        robots = HardMazeBatch(len(neat), "medium")
        obs, policy, rows = robots.reset(), neat.policy(), np.arange(len(neat))
        for _ in range(400):
            obs = robots.step(np.clip(policy(rows, obs), -1, 1))
        ends.append(robots.position)
        fitness = robots.fitness()
        neat.tell(fitness if arch is None else arch.score(robots.position, fitness, rng)[0])
    return np.concatenate(ends)


def test_novelty_search_spreads_over_more_of_the_medium_maze_than_fitness_and_ends_nearer_the_goal():
    """20 generations of 60 (seed 1): the squares of 20 x 20 units that final positions fell in, over the run and
    over its last 5 generations (where the population is by then: novelty keeps it spread, fitness gathers it in
    the dead end), and the closest any robot ended to the goal."""
    spread, closest = {}, {}
    for method in ("novelty", "fitness"):
        ends = _final_positions(method, generations=20, seed=1, population=60)
        spread[method] = [len({(int(x // 20), int(y // 20)) for x, y in part}) for part in (ends, ends[-5 * 60:])]
        closest[method] = float(np.hypot(ends[:, 0] - 270, ends[:, 1] - 100).min())
    assert spread["novelty"][0] > spread["fitness"][0] and spread["novelty"][1] > spread["fitness"][1], spread
    assert closest["novelty"] < closest["fitness"], closest


# ---- the batched maze is the plain one, bit for bit ------------------------------------------------------------


def _plain_observe(maze: MazeMap, s: np.ndarray) -> np.ndarray:
    """The maze's sensors written the plain way (robots first, one broadcast per quantity): DRLA's first code."""
    x, y, heading = s[:, 0], s[:, 1], s[:, 2]
    angles = np.array([-90.0, -45.0, 0.0, 45.0, 90.0, -180.0]) / 180.0 * 3.1415926
    h = heading / 180.0 * 3.1415926
    ch, sh = np.cos(h)[:, None], np.sin(h)[:, None]
    rx, ry = np.cos(angles) * 100.0, np.sin(angles) * 100.0
    dx, dy = (ch * rx - sh * ry)[:, :, None], (sh * rx + ch * ry)[:, :, None]
    w = maze.walls
    ax, ay, ex, ey = w[:, 0], w[:, 1], w[:, 2] - w[:, 0], w[:, 3] - w[:, 1]
    acx, acy = (ax - x[:, None])[:, None, :], (ay - y[:, None])[:, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (acy * dx - acx * dy) / (ex * dy - ey * dx)
        t = (acy * ex - acx * ey) / (ex * dy - ey * dx)
    t = np.where((r > 0) & (r < 1) & (t > 0), t, 1.0)
    ranges = np.minimum(t.min(axis=2), 1.0) * 100.0
    h = -heading / 180.0 * 3.1415926
    gx, gy = maze.goal[0] - x, maze.goal[1] - y
    tx, ty = np.cos(h) * gx - np.sin(h) * gy, np.sin(h) * gx + np.cos(h) * gy
    with np.errstate(divide="ignore", invalid="ignore"):
        ang = np.arctan(ty / tx) / 3.1415926 * 180.0
    ang = np.where(tx == 0, np.where(ty > 0, 90.0, 270.0), np.where(tx > 0, ang, ang + 180.0))[:, None]
    lo, hi = np.array([315.0, 45.0, 135.0, 225.0]), np.array([405.0, 135.0, 225.0, 315.0])
    radar = ((ang >= lo) & (ang < hi)) | ((ang + 360 >= lo) & (ang + 360 < hi))
    return np.concatenate([np.ones((len(s), 1)), ranges / 100.0, radar], axis=1).astype(np.float32)


def _plain_step(maze: MazeMap, s: np.ndarray, reached: np.ndarray, a: np.ndarray) -> None:
    a = np.clip(a, -1.0, 1.0)
    s[:, 4] = np.clip(s[:, 4] + a[:, 0] * 0.5, -3.0, 3.0)
    s[:, 3] = np.clip(s[:, 3] + a[:, 1] * 0.5, -3.0, 3.0)
    move = ~reached
    h = s[:, 2] / 180.0 * 3.1415926
    vx, vy = np.cos(h) * s[:, 3], np.sin(h) * s[:, 3]
    heading = s[:, 2] + s[:, 4]
    heading = np.where(heading > 360, heading - 360, heading)
    heading = np.where(heading < 0, heading + 360, heading)
    s[:, 2] = np.where(move, heading, s[:, 2])
    nx, ny = s[:, 0] + vx, s[:, 1] + vy
    w = maze.walls
    ax, ay, ex, ey = w[:, 0], w[:, 1], w[:, 2] - w[:, 0], w[:, 3] - w[:, 1]
    px, py = nx[:, None] - ax, ny[:, None] - ay
    u = np.clip((px * ex + py * ey) / (ex * ex + ey * ey), 0.0, 1.0)
    d2 = (px - u * ex) ** 2 + (py - u * ey) ** 2
    free = move & ~(d2 < 64.0).any(axis=1)
    s[:, 0], s[:, 1] = np.where(free, nx, s[:, 0]), np.where(free, ny, s[:, 1])
    reached |= np.hypot(s[:, 0] - maze.goal[0], s[:, 1] - maze.goal[1]) < 5.0


@pytest.mark.parametrize("name", ["medium", "hard"])
def test_the_batch_steps_bit_for_bit_as_the_plain_broadcast_code(name):
    """300 robots (random linear policies on the sensors, some driving into walls, some aimed along a wall or
    straight at a wall's end) for 400 steps: every state and observation the same bits as the plain code."""
    rng = np.random.default_rng(7)
    n = 300
    batch = HardMazeBatch(n, name)
    maze = batch.maze
    s, reached = batch.state.copy(), batch.reached.copy()
    weights = rng.normal(0, 2, (n, 11, 2))
    weights[:20] = 0.0
    weights[:20, 0, 1] = 1.0  # straight ahead, full speed: into the first wall
    obs = batch.observe()
    for t in range(400):
        plain = _plain_observe(maze, s)
        assert np.array_equal(obs, plain), t
        act = np.tanh(np.einsum("ni,nio->no", obs.astype(np.float64), weights))
        obs = batch.step(act)
        _plain_step(maze, s, reached, act)
        assert np.array_equal(batch.state, s) and np.array_equal(batch.reached, reached), t
    # headings that put a ray exactly parallel to a wall or at 0 / 90 / 180 / 270, and the goal dead ahead
    s = np.tile(batch.state[:1], (8, 1))
    s[:, 2] = [0.0, 90.0, 180.0, 270.0, 360.0, 45.0, 135.0, 315.0]
    s[7, :2] = maze.goal[0] - 20.0, maze.goal[1]
    small = HardMazeBatch(8, name)
    small.state = s.copy()
    assert np.array_equal(small.observe(), _plain_observe(maze, s))


@pytest.mark.parametrize("distance", ["mean_abs", "euclidean"])
def test_nearest_admission_matches_trying_the_behaviours_one_by_one(distance):
    """The vectorised admission against the plain rule (each behaviour's nearest archived one, the archive
    growing as they go in), over 40 generations of scattered and of clustered, duplicated positions."""
    config = NoveltyConfig(k=15, threshold=6.0, distance=distance, admit="nearest", lower_after=10,
                           threshold_floor=0.25)
    arch, items, threshold, quiet = NoveltyArchive(config), [], 6.0, 0
    rng = np.random.default_rng(3)
    for g in range(40):
        b = rng.uniform(0, 200, (120, 2)) if g % 3 else np.round(rng.uniform(0, 30, (120, 2)))
        arch.score(b, np.zeros(len(b)), rng)
        added = 0
        for point in b:  # the plain rule
            if not items:
                items.append(point.tolist())
                continue
            diff = np.abs(np.asarray(items) - point)
            d = diff.mean(-1) if distance == "mean_abs" else np.sqrt((diff ** 2).sum(-1))
            if d.min() > threshold:
                items.append(point.tolist())
                added += 1
        quiet = 0 if added else quiet + 1
        if added > 4:
            threshold *= 1.2
        elif quiet >= 10:
            threshold, quiet = max(threshold * 0.95, 0.25), 0
        assert arch.items == items and arch.threshold == threshold, g
    assert 100 < len(items) < 40 * 120  # some admitted, some refused


def test_the_bench_s_runs_in_lockstep_take_the_course_they_take_alone():
    """bench/novelty_maze.py steps several runs' robots in one batch: each run's every generation (so its
    evaluations, closest distance and end) is what it is alone, and a time limit cuts the runs still going."""
    from bench.novelty_maze import run_all
    tasks = [(maze, method, 5, 240, 30, "code", "paper", 2) for maze in ("medium", "hard")
             for method in ("novelty", "fitness")]

    def course(lockstep: int) -> dict:
        return {task: {k: v for k, v in r.items() if k != "seconds"} for task, r in run_all(tasks, lockstep)}

    alone, together = course(1), course(4)
    assert alone == together and len(alone) == 4
    assert all(r["generations"] == 8 and r["evals"] == 240 for r in alone.values())  # 8 generations of 30
    cut = list(run_all(tasks, 2, time_limit=0.0))
    assert [task for task, _ in cut] == tasks[:2] and all(r == {"cut": True, "evals": 0, "generations": 0}
                                                          for _, r in cut)
