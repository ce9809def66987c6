"""``neat_tasks.balance``'s last carts in Python floats (``evolve.neat_scalar``, issue 27): the physics bit for bit
``step_states``'s, the networks the batched numpy forward's to float32 precision, and ``balance`` the same with
the float path forced on (``scalar_rows``) and off (0)."""

from __future__ import annotations

import numpy as np
import pytest

from drla_core.envs.double_pole import START_STATE, _rk4_one, generalization_states, step_states
from drla_core.evolve import neat_tasks
from drla_core.evolve.neat import NEAT, NEATConfig
from drla_core.evolve.neat_genome import Genome
from drla_core.evolve.neat_scalar import ScalarNetwork, finish, two_steps
from drla_core.evolve.neat_tasks import RecurrentPopulation, balance, run_task
from drla_core.nn.mlp import ACTIVATIONS


def test_two_steps_is_the_reference_physics_bit_for_bit():
    rng = np.random.default_rng(0)
    states = rng.normal(size=(2000, 6)) * [1.0, 1.0, 0.3, 1.0, 0.3, 2.0]
    forces = rng.uniform(-10, 10, size=2000)
    for y, f in zip(states.tolist(), forces.tolist()):
        assert list(two_steps(f, *y)) == _rk4_one(f, _rk4_one(f, y))
    many = step_states(states[:50], forces[:50])  # the numpy columns (more carts than step_states' scalar rows)
    assert np.allclose(many, [two_steps(f, *y) for y, f in zip(states[:50].tolist(), forces[:50].tolist())],
                       rtol=0, atol=1e-12)


def _population(recurrent: bool, n_in: int = 3, seed: int = 1) -> NEAT:
    """Evolved with random fitness (hidden nodes, cycles when recurrent), then every node given a random
    activation among all NEAT can use (mixed within a genome: the batched path's masks)."""
    cfg = NEATConfig(population_size=30, recurrent=recurrent, add_connection_prob=0.9, add_node_prob=0.4)
    neat = NEAT(n_in, 1, cfg, np.random.default_rng(seed), output_activation="tanh")
    rng = np.random.default_rng(seed + 1)
    for _ in range(20):
        neat.tell(rng.normal(size=len(neat)))
    for g in neat.genomes:
        for node in g.nodes.values():
            node[1] = ACTIVATIONS[int(rng.integers(len(ACTIVATIONS)))]
            node[0] = float(rng.normal())
        for gene in g.conns.values():
            gene[2] = float(rng.normal())  # (weights of 1: long linear chains stay in float32's precision)
    return neat


def test_population_covers_every_activation_and_hidden_nodes():
    for recurrent in (False, True):
        neat = _population(recurrent)
        assert {a for g in neat.genomes for _, a in g.nodes.values()} == set(ACTIVATIONS)
        assert max(len(g.nodes) for g in neat.genomes) >= 4


def test_feed_forward_network_matches_the_batched_forward():
    neat = _population(False)
    rows = np.arange(len(neat))
    forward = neat.policy()
    nets = [ScalarNetwork(g, neat.n_in, neat.n_out, False) for g in neat.genomes]
    obs = np.random.default_rng(3).uniform(-2, 2, size=(100, len(neat), 3)).astype(np.float32)
    for t in range(len(obs)):
        want = forward(rows, obs[t])[:, 0]
        got = [net.step(obs[t, i].tolist())[0] for i, net in enumerate(nets)]
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5), t


def test_recurrent_network_matches_the_batched_steps_and_continues_a_row_state():
    neat = _population(True)
    rows = np.arange(len(neat))
    pop = RecurrentPopulation(neat, rows)
    obs = np.random.default_rng(4).uniform(-1, 1, size=(60, len(neat), 3)).astype(np.float32)
    for t in range(10):
        pop.step(obs[t])
    # from the batched rows' state after 10 steps, 50 more each way
    nets = [ScalarNetwork(g, neat.n_in, neat.n_out, True, pop.values[i, 0].tolist())
            for i, g in enumerate(neat.genomes)]
    moved = 0
    for t in range(10, 60):
        want = pop.step(obs[t])[:, 0]
        got = [net.step(obs[t, i].tolist())[0] for i, net in enumerate(nets)]
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5), t
        moved += int(np.abs(np.diff(want)).sum() > 0)
    assert moved == 50  # (the outputs change with the inputs: the comparison is not of constants)
    # from zero state too: the first step reads nothing of an earlier one
    fresh = RecurrentPopulation(neat, rows).step(obs[0])[:, 0]
    assert np.allclose([ScalarNetwork(g, 3, 1, True).step(obs[0, i].tolist())[0]
                        for i, g in enumerate(neat.genomes)], fresh, rtol=1e-5, atol=1e-5)


def test_a_cycle_in_a_feed_forward_network_is_refused():
    g = Genome({3: [0.0, "tanh"], 4: [0.0, "tanh"]}, {0: [0, 4, 1.0, True], 1: [4, 3, 1.0, True],
                                                      2: [3, 4, 0.5, True]})
    assert ScalarNetwork(g, 3, 1, True).step([1.0, 0.0, 0.0]) == [0.0]  # (recurrent: the output reads 4's old 0)
    with pytest.raises(ValueError, match="the feed-forward genome has a cycle"):
        ScalarNetwork(g, 3, 1, False)


@pytest.mark.parametrize("task", ["double_pole", "double_pole_nv"])
def test_balance_counts_the_same_with_and_without_the_float_path(task):
    """Genomes of 12 generations on 300-step episodes: the steps balanced agree row for row whether the float
    path runs every row from the start, takes over mid-episode (16 left), or never runs (0), except on chaotic
    trajectories: rows whose all-numpy count itself moves when the start moves by 1e-9 rad (the float path's
    float64 network moves the forces by about float32's precision, as much as such a nudge does)."""
    n_in, recurrent = neat_tasks.TASKS[task]
    velocities, damping = task == "double_pole", task == "double_pole_nv"
    neat = NEAT(n_in, 1, NEATConfig.paper(recurrent=recurrent, reproduction="neat-python"),
                np.random.default_rng(5), output_activation="tanh")
    starts = np.tile(START_STATE, (len(neat), 1))
    nudged = starts + [0.0, 0.0, 1e-9, 0.0, 0.0, 0.0]
    rows = np.arange(len(neat))
    lengths, chaotic, differed = set(), 0, 0
    for _ in range(12):
        steps, fitness = balance(neat, rows, starts, 300, velocities, damping=damping, scalar_rows=0)
        sensitive = balance(neat, rows, nudged, 300, velocities, damping=damping, scalar_rows=0)[0] != steps
        for cut in (16, len(neat)):
            s, f = balance(neat, rows, starts, 300, velocities, damping=damping, scalar_rows=cut)
            same = s == steps
            assert np.all(same | sensitive), (cut, np.flatnonzero(~same & ~sensitive))
            assert np.allclose(f[same], fitness[same], rtol=1e-6, atol=0), cut
            differed += int((~same).sum())
        chaotic += int(sensitive.sum())
        lengths.update(steps.tolist())
        neat.tell(fitness)
    assert len(lengths) > 10 and max(lengths) > 100  # (failures at many steps; some past the damping's 100)
    assert chaotic <= 12 and differed <= 2 * chaotic  # (rare: at most one such row a generation here)


def test_balance_on_generalisation_starts_agrees_both_ways():
    neat = _population(True)
    starts = generalization_states()[::25]
    idx = np.arange(len(starts)) % len(neat)
    a, _ = balance(neat, idx, starts, 200, False, scalar_rows=0)
    b, _ = balance(neat, idx, starts, 200, False, scalar_rows=len(starts))
    assert np.array_equal(a, b) and len(set(a.tolist())) > 3


def test_finish_records_the_jiggle_and_stops_at_failure():
    neat = NEAT(6, 1, NEATConfig.paper(), np.random.default_rng(4), output_activation="tanh")
    net = ScalarNetwork(neat.genomes[0], 6, 1, False)
    jiggle = np.zeros(1001)
    held, ran, last = finish(net, list(START_STATE), 1, 1000, True, jiggle)
    assert ran == held + 1 < 1000  # a first-generation network drops the poles
    assert np.count_nonzero(jiggle) == ran and jiggle[ran - 1] == sum(abs(v) for v in last[:4])


@pytest.mark.parametrize("scalar_rows", [0, None])
def test_run_task_solves_double_pole_on_either_path(monkeypatch, scalar_rows):
    if scalar_rows == 0:
        monkeypatch.setattr(neat_tasks, "SCALAR_ROWS", 0)
    else:
        assert neat_tasks.SCALAR_ROWS >= 1
    r = run_task("double_pole", 2, max_generations=30, long_steps=10_000)
    assert r["solved"] and 1 <= r["evaluations"] - 150 * (r["generations"] - 1) <= 150
