"""The NEAT paper's tasks (issue 27, item 1): XOR and double-pole balancing as Stanley & Miikkulainen ran them,
NEAT's recurrent option, and the paper's preset. bench/neat_paper.py measures them against the paper."""

from __future__ import annotations

import math

import numpy as np
import pytest

from drla_core.envs import make
from drla_core.envs.double_pole import (
    FAILURE_ANGLE, START_STATE, DoublePole, damping_fitness, generalization_states, observe, outside_bounds,
    step_states)
from drla_core.envs.xor import XOR
from drla_core.evolve.neat import NEAT, NEATConfig
from drla_core.evolve.neat_tasks import RecurrentPopulation, balance, paper_distance, run_task
from drla_core.nn.graph_net import RecurrentGraphNetwork


# ---- a transcription of NEAT C++ 1.2.1's CartPole::step / rk4 / performAction (experiments.cpp) -------------

def _cpp_step(action: float, st: list[float]) -> list[float]:
    MUP, GRAVITY, MASSCART, MASSPOLE_1, LENGTH_1, MASSPOLE_2, LENGTH_2, FORCE_MAG = \
        0.000002, -9.8, 1.0, 0.1, 0.5, 0.01, 0.05, 10.0
    force = (action - 0.5) * FORCE_MAG * 2
    costheta_1, sintheta_1 = math.cos(st[2]), math.sin(st[2])
    gsintheta_1 = GRAVITY * sintheta_1
    costheta_2, sintheta_2 = math.cos(st[4]), math.sin(st[4])
    gsintheta_2 = GRAVITY * sintheta_2
    ml_1, ml_2 = LENGTH_1 * MASSPOLE_1, LENGTH_2 * MASSPOLE_2
    temp_1, temp_2 = MUP * st[3] / ml_1, MUP * st[5] / ml_2
    fi_1 = (ml_1 * st[3] * st[3] * sintheta_1) + (0.75 * MASSPOLE_1 * costheta_1 * (temp_1 + gsintheta_1))
    fi_2 = (ml_2 * st[5] * st[5] * sintheta_2) + (0.75 * MASSPOLE_2 * costheta_2 * (temp_2 + gsintheta_2))
    mi_1 = MASSPOLE_1 * (1 - (0.75 * costheta_1 * costheta_1))
    mi_2 = MASSPOLE_2 * (1 - (0.75 * costheta_2 * costheta_2))
    d = [0.0] * 6
    d[1] = (force + fi_1 + fi_2) / (mi_1 + mi_2 + MASSCART)
    d[3] = -0.75 * (d[1] * costheta_1 + gsintheta_1 + temp_1) / LENGTH_1
    d[5] = -0.75 * (d[1] * costheta_2 + gsintheta_2 + temp_2) / LENGTH_2
    return d


def _cpp_rk4(f: float, y: list[float], dydx: list[float]) -> list[float]:
    TAU = 0.01
    hh, h6 = TAU * 0.5, TAU / 6.0
    yt = [y[i] + hh * dydx[i] for i in range(6)]
    dyt = _cpp_step(f, yt)
    dyt[0], dyt[2], dyt[4] = yt[1], yt[3], yt[5]
    yt = [y[i] + hh * dyt[i] for i in range(6)]
    dym = _cpp_step(f, yt)
    dym[0], dym[2], dym[4] = yt[1], yt[3], yt[5]
    for i in range(6):
        yt[i] = y[i] + TAU * dym[i]
        dym[i] += dyt[i]
    dyt = _cpp_step(f, yt)
    dyt[0], dyt[2], dyt[4] = yt[1], yt[3], yt[5]
    return [y[i] + h6 * (dydx[i] + dyt[i] + 2.0 * dym[i]) for i in range(6)]


def _cpp_perform_action(output: float, state: list[float]) -> list[float]:
    for _ in range(2):
        dydx = _cpp_step(output, state)
        dydx[0], dydx[2], dydx[4] = state[1], state[3], state[5]
        state = _cpp_rk4(output, state, dydx)
    return state


def test_double_pole_steps_like_the_reference_code():
    env = DoublePole()
    obs, _ = env.reset()
    ref = list(START_STATE)
    assert np.allclose(obs, np.array(ref) / [4.8, 2, 0.52, 2, 0.52, 2])
    rng = np.random.default_rng(3)
    for t in range(60):
        out = float(rng.uniform(0.0, 1.0))  # a network output in [0, 1]: (out - 0.5) * 20 newtons
        obs, reward, terminated, truncated, info = env.step(np.array([(out - 0.5) * 2.0]))
        ref = _cpp_perform_action(out, ref)
        assert np.allclose(env.state[0], ref, rtol=1e-13, atol=1e-15), t
        if terminated:
            break
        assert reward == 1.0 and info == {"balanced": 1} and not truncated


def test_double_pole_acceleration_by_hand():
    # at rest, upright, 10 N: each pole's effective mass m (1 - 3/4) adds to the cart's 1 kg
    xacc = 10.0 / (1.0 + 0.1 * 0.25 + 0.01 * 0.25)
    state = step_states(np.zeros((1, 6)), np.array([10.0]))[0]
    # constant accelerations while the poles barely move: x'' t after 0.02 s, theta'' = -0.75 x'' / l
    assert state[1] == pytest.approx(xacc * 0.02, rel=1e-3)
    assert state[3] == pytest.approx(-0.75 * xacc / 0.5 * 0.02, rel=1e-2)
    assert state[5] == pytest.approx(-0.75 * xacc / 0.05 * 0.02, rel=5e-2)
    # with no force and everything at zero nothing moves, exactly
    assert np.array_equal(step_states(np.zeros((3, 6)), np.zeros(3)), np.zeros((3, 6)))


def test_many_carts_step_like_one():
    rng = np.random.default_rng(0)
    states, force = rng.normal(0, 0.2, (9, 6)), rng.uniform(-10, 10, 9)
    many = step_states(states, force)  # more than SCALAR_ROWS: numpy columns
    one = np.concatenate([step_states(states[i:i + 1], force[i:i + 1]) for i in range(9)])
    assert np.array_equal(many, one)


def test_double_pole_bounds_and_unbalanced_fall():
    s = np.zeros((4, 6))
    s[0, 2], s[1, 4], s[2, 0], s[3, 2] = FAILURE_ANGLE + 1e-6, -FAILURE_ANGLE - 1e-6, 2.41, FAILURE_ANGLE - 1e-6
    assert outside_bounds(s).tolist() == [True, True, True, False]
    env = DoublePole()
    env.reset()
    total, steps, done = 0.0, 0, False
    while not done:  # no force: the long pole, 4 degrees off, falls
        _, r, terminated, truncated, _ = env.step(np.array([0.0]))
        total, steps, done = total + r, steps + 1, terminated or truncated
    assert terminated and 10 < steps < 500 and total == steps - 1


def test_no_velocity_task_returns_the_damping_fitness():
    env = make("double_pole_nv")
    obs, _ = env.reset()
    assert obs.shape == (3,) and env.max_steps == 1000
    total, steps, done = 0.0, 0, False
    while not done:
        _, r, terminated, truncated, info = env.step(np.array([0.0]))
        total, steps, done = total + r, steps + 1, terminated or truncated
    assert total == pytest.approx(damping_fitness(steps - 1, 1.0))  # under 100 steps: f1 alone
    assert damping_fitness(500, 7.5) == pytest.approx(0.1 * 0.5 + 0.9 * 0.1)
    assert damping_fitness(100, 7.5) == pytest.approx(0.01)


def test_generalization_states():
    g = generalization_states()
    assert g.shape == (625, 6) and len({tuple(r) for r in g}) == 625
    assert g[:, 0].min() == pytest.approx(-1.944) and g[:, 0].max() == pytest.approx(1.944)
    assert g[:, 3].max() == pytest.approx(0.95 * 0.30019504 - 0.15009752)
    assert not g[:, 4:].any()
    env = DoublePole(velocities=False)
    obs, _ = env.reset(options={"state": g[7]})
    assert np.array_equal(env.state[0], g[7]) and np.allclose(obs, observe(g[7:8], False)[0])


def test_xor_env_scores_like_the_paper():
    env = XOR()
    for answers, fitness, solved in (([0, 1, 1, 0], 16.0, 1), ([0.5] * 4, 4.0, 0), ([0.2, 0.9, 0.6, 0.4], None, 1)):
        obs, _ = env.reset()
        seen = [obs.tolist()]
        for i, a in enumerate(answers):
            obs, r, terminated, _, info = env.step(np.array([a]))
            if i < 3:
                seen.append(obs.tolist())
                assert r == 0.0 and not terminated
        assert seen == [[0, 0], [0, 1], [1, 0], [1, 1]] and terminated and info["solved"] == solved
        want = fitness if fitness is not None else (4 - (0.2 + 0.1 + 0.4 + 0.4)) ** 2
        assert r == pytest.approx(want)
    with pytest.raises(RuntimeError, match="step after the episode ended"):
        env.step(np.array([0.0]))


# ---- NEAT ---------------------------------------------------------------------------------------------------

def test_paper_preset():
    c = NEATConfig.paper()
    assert (c.population_size, c.compatibility, c.disjoint_coefficient, c.weight_coefficient,
            c.compatibility_threshold) == (150, "paper", 1.0, 0.4, 3.0)
    assert (c.add_node_prob, c.add_connection_prob, c.add_connection_tries, c.max_stagnation) == (0.03, 0.05, 20, 15)
    assert c.weight_mutate_rate + c.weight_replace_rate == pytest.approx(0.8) and not c.recurrent
    assert NEATConfig.paper(recurrent=True).recurrent
    assert not NEATConfig().recurrent and NEATConfig().compatibility == "neat-python"
    with pytest.raises(ValueError, match="unknown compatibility 'x'; choose neat-python or paper"):
        NEAT(2, 1, NEATConfig(compatibility="x"), np.random.default_rng(0))


def test_paper_distance():
    neat = NEAT(2, 1, NEATConfig.paper(weight_scale=1.0), np.random.default_rng(0), output_activation="tanh")
    a, b = neat.genomes[0].copy(), neat.genomes[1].copy()
    for k in b.conns:
        b.conns[k][2] = a.conns[k][2] + 1.0
    b.nodes[2][0] = a.nodes[2][0] + 1.0
    # two matching connections and one matching node, each 1 apart: W = 1; no disjoint gene
    assert paper_distance(a, b, neat.config) == pytest.approx(0.4)
    b.conns[99] = [0, 2, 0.0, True]  # one unmatched gene in genomes under 20 genes: N = 1
    assert paper_distance(a, b, neat.config) == pytest.approx(1.0 + 0.4)
    # the preset's weights are NEAT C++'s times its sigmoid's steepness over tanh's: W in NEAT C++'s units
    assert paper_distance(a, b, NEATConfig.paper()) == pytest.approx(1.0 + 0.4 / (4.924273 / 2))


def test_recurrent_graph_network_steps_once_per_call():
    # input 0 -> hidden 2 -> output 1, and a linear hidden node 3 that sums input 0 over time (self loop 1)
    net = RecurrentGraphNetwork(1, 1, "linear", ["linear", "linear"], [(0, 2), (2, 1), (0, 3), (3, 3), (3, 1)],
                                [1.0, 1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0])
    outs = [float(net.step(np.array([x]))[0]) for x in (1.0, 2.0, 3.0)]
    assert outs == [0.0, 1.0, 2.0]  # the output reads the hidden node's previous value: one step late
    assert net.values[0, 3] == 6.0  # the self loop summed 1 + 2 + 3
    net.reset()
    assert float(net.step(np.array([5.0]))[0]) == 0.0 and net.values[0, 3] == 5.0
    with pytest.raises(ValueError, match=r"connection \[0, 0\] must end at a non-input node"):
        RecurrentGraphNetwork(1, 1, "linear", [], [(0, 0)], [1.0], [0.0])


def _evolved(recurrent: bool, generations: int = 25) -> NEAT:
    cfg = NEATConfig(population_size=30, recurrent=recurrent, add_connection_prob=0.9, add_node_prob=0.4)
    neat = NEAT(3, 1, cfg, np.random.default_rng(1), output_activation="tanh")
    rng = np.random.default_rng(2)
    for _ in range(generations):
        neat.tell(rng.normal(size=len(neat)))
    return neat


def _has_cycle(neat: NEAT) -> bool:
    from drla_core.evolve.neat_genome import reaches as _reaches
    return any(_reaches(g, t, s) for g in neat.genomes for s, t, _, e in g.conns.values())


def test_recurrent_option_evolves_cycles_and_runs_them_step_by_step():
    neat = _evolved(True)
    assert _has_cycle(neat)
    assert not _has_cycle(_evolved(False))
    rows = np.arange(len(neat))
    pop = RecurrentPopulation(neat, rows)
    nets = [neat.genome_network(g) for g in neat.genomes]
    policy = neat.policy()  # the Evolution job's: a state per task (episode)
    assert policy.keeps_state
    tasks = rows[::-1] + 5  # any numbering: each task's state is its own
    obs = np.random.default_rng(5).normal(size=(6, len(neat), 3)).astype(np.float32)
    for t in range(6):
        got = pop.step(obs[t])
        want = np.array([net.step(obs[t, i]) for i, net in enumerate(nets)])
        assert np.allclose(got, want, atol=1e-5), t
        assert np.array_equal(policy(rows, obs[t], tasks), got), t
    # a new task starts from zero state: its first output is the first step's, whatever the others ran
    first = RecurrentPopulation(neat, rows[:1]).step(obs[0, :1])
    assert np.array_equal(policy(rows[:1], obs[0, :1], np.array([1000])), first)


def test_default_neat_is_unchanged_by_the_options():
    # the new options' defaults (tries 1, not recurrent, neat-python distance) draw nothing more: a run with
    # them spelled out is the run without them, genome for genome
    a = NEAT(4, 2, NEATConfig(population_size=40), np.random.default_rng(7))
    b = NEAT(4, 2, NEATConfig(population_size=40, add_connection_tries=1, recurrent=False,
                              compatibility="neat-python"), np.random.default_rng(7))
    rng = np.random.default_rng(8)
    for _ in range(10):
        f = rng.normal(size=40)
        a.tell(f)
        b.tell(f)
    assert a.state() == b.state()


@pytest.mark.parametrize("scalar_rows", [0, 12])  # all numpy; all in Python floats (neat_scalar)
def test_balance_matches_the_environment(scalar_rows):
    neat = NEAT(6, 1, NEATConfig.paper(population_size=12), np.random.default_rng(4), output_activation="tanh")
    steps, fitness = balance(neat, np.arange(12), np.tile(START_STATE, (12, 1)), 300, True, scalar_rows=scalar_rows)
    for i in range(12):
        net, env = neat.genome_network(neat.genomes[i]), DoublePole(max_steps=300)
        obs, _ = env.reset()
        n, done = 0, False
        while not done:
            obs, _, terminated, truncated, _ = env.step(np.clip(net(obs), -1, 1))
            n, done = n + 1, terminated or truncated
        assert fitness[i] == n and steps[i] == (n - 1 if terminated else n)


def test_xor_solved_with_a_fixed_seed():
    r = run_task("xor", 6, max_generations=100)
    assert r["solved"] and r["generations"] <= 100 and r["hidden"] >= 1
    assert r["evaluations"] <= 150 * r["generations"]


def test_observe_drops_the_velocities():
    s = np.array([[0.48, 0.2, 0.052, 0.4, -0.104, 1.0]])
    assert np.allclose(observe(s, True), [[0.1, 0.1, 0.1, 0.2, -0.2, 0.5]])
    assert np.allclose(observe(s, False), [[0.1, 0.1, -0.2]])


def test_double_pole_with_velocities_solved_with_a_fixed_seed():
    # 10,000 steps instead of the paper's 100,000 to keep the test short (this seed's winner holds 100,000 too:
    # the bench runs that)
    r = run_task("double_pole", 2, max_generations=30, long_steps=10_000)
    assert r["solved"] and r["generations"] <= 30
    assert 1 <= r["evaluations"] - 150 * (r["generations"] - 1) <= 150  # NEAT C++'s count: the winner's number
    neat = NEAT(6, 1, NEATConfig.paper(), np.random.default_rng(2), output_activation="tanh")
    steps, _ = balance(neat, np.arange(len(neat)), np.tile(START_STATE, (len(neat), 1)), 10_000, True)
    assert steps.max() < 10_000  # the first generation does not balance: evolution did it


def _loop_speciate(genomes, species, c, next_id, generation, dist):
    """The plain loops ``neat_species.speciate`` replaces (NEAT's speciation before numpy)."""
    unassigned = set(range(len(genomes)))
    new_species = []
    for sp in species:
        if not unassigned:
            break
        dists = {i: dist(sp["representative"], genomes[i], c) for i in sorted(unassigned)}
        best = min(dists, key=lambda i: (dists[i], i))
        sp["representative"] = genomes[best].copy()
        sp["members"] = [best]
        unassigned.discard(best)
        new_species.append(sp)
    for i in sorted(unassigned):
        g = genomes[i]
        best_sp, best_d = None, math.inf
        for sp in new_species:
            d = dist(sp["representative"], g, c)
            if d < c.compatibility_threshold and d < best_d:
                best_sp, best_d = sp, d
        if best_sp is None:
            best_sp = {"id": next_id, "representative": g.copy(), "members": [], "best": -math.inf,
                       "last_improved": generation}
            next_id += 1
            new_species.append(best_sp)
        best_sp["members"].append(i)
    return [sp for sp in new_species if sp["members"]], next_id


@pytest.mark.parametrize("compatibility", ["neat-python", "paper"])
def test_numpy_speciation_decides_as_the_loops(compatibility):
    # evolving populations (with recurrent links, so genomes of many shapes), plus ties on purpose: copies of
    # one genome (distance 0 to several representatives) and a threshold equal to a distance that occurs
    from drla_core.evolve.neat import compatibility_distance
    from drla_core.evolve.neat_species import speciate

    dist = paper_distance if compatibility == "paper" else compatibility_distance
    cfg = NEATConfig(population_size=60, recurrent=True, add_connection_prob=0.7, add_node_prob=0.3,
                     compatibility=compatibility)
    neat = NEAT(3, 2, cfg, np.random.default_rng(11))
    rng = np.random.default_rng(12)
    compared = 0
    for gen in range(25):
        neat.tell(rng.normal(size=len(neat)))
        genomes = [g.copy() for g in neat.genomes]
        genomes[5:9] = [genomes[4].copy() for _ in range(4)]
        for thr in (cfg.compatibility_threshold, dist(genomes[0], genomes[1], cfg)):
            c = NEATConfig(**{**cfg.__dict__, "compatibility_threshold": max(thr, 1e-6)})
            old = [{**sp, "representative": sp["representative"].copy(), "members": list(sp["members"])}
                   for sp in neat.species]
            twin = [{**sp, "representative": sp["representative"].copy(), "members": list(sp["members"])}
                    for sp in neat.species]
            got, got_id = speciate(genomes, old, c, 100, gen, dist)
            want, want_id = _loop_speciate(genomes, twin, c, 100, gen, dist)
            assert got_id == want_id
            assert [(sp["id"], sp["members"], sp["representative"].to_data()) for sp in got] == \
                [(sp["id"], sp["members"], sp["representative"].to_data()) for sp in want]
            compared += len(got)
    assert compared > 100
