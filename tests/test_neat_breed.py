"""NEAT C++'s reproduction (issue 27): ``NEATConfig(reproduction="neat-c++")``, ``NEATConfig.paper()``'s default,
ported from Stanley's NEAT C++ 1.2.1 (drla_core/evolve/neat_breed.py)."""

from __future__ import annotations

import numpy as np
import pytest

from drla_core.evolve.neat import NEAT, STEEPNESS, NEATConfig
from drla_core.evolve.neat_breed import BreedRandom, crossover_average, mutate_weights_cpp
from drla_core.evolve.neat_genome import Genome


def _genome(weights: list[float], biases: list[float]) -> Genome:
    nodes = {10 + i: [b, "tanh"] for i, b in enumerate(biases)}
    conns = {i: [0, 10, w, True] for i, w in enumerate(weights)}
    return Genome(nodes, conns)


def test_paper_preset_breeds_by_neat_cpp_rules():
    c = NEATConfig.paper()
    assert (c.reproduction, c.mutate_only_prob, c.mate_only_prob, c.interspecies_mate_rate,
            c.mate_multipoint_prob) == ("neat-c++", 0.25, 0.2, 0.001, 0.6)
    assert (c.weight_mutate_power, c.weight_max, c.weight_coefficient) == (2.5, 8.0, 0.4)  # NEAT C++'s units
    assert c.weight_scale == pytest.approx(4.924273 / 2) == STEEPNESS
    assert (c.add_node_prob, c.add_connection_prob, c.survival_threshold, c.max_stagnation) == (0.03, 0.05, 0.2, 15)
    old = NEATConfig.paper(reproduction="neat-python")
    assert (old.reproduction, old.weight_mutate_rate, old.weight_replace_rate, old.weight_max) == \
        ("neat-python", 0.72, 0.08, 30.0)
    assert NEATConfig().reproduction == "neat-python"
    with pytest.raises(ValueError, match="unknown reproduction 'x'; choose neat-python or neat-c\\+\\+"):
        NEAT(2, 1, NEATConfig(reproduction="x"), np.random.default_rng(0))


def test_weight_mutation_moves_within_the_power_and_the_cap():
    power, cap = 2.5, 8.0
    moved_all = mixed = 0
    for seed in range(40):
        old = [7.5, -7.9, 0.3, 1.0, -2.0, 0.0, 4.0, 3.0, -1.0, 2.0, 0.5]  # 8 connections, 3 biases: 11 genes
        g = _genome(old[:8], old[8:])
        severe = np.random.default_rng(seed).random() > 0.5  # the mutation's first draw
        mutate_weights_cpp(g, power, cap, np.random.default_rng(seed))
        new = [g.conns[k][2] for k in sorted(g.conns)] + [g.nodes[k][0] for k in sorted(g.nodes)]
        for o, w in zip(old, new):
            assert abs(w) <= cap
            assert abs(w - o) <= power + 1e-12 or abs(w) <= power  # moved, or replaced by a draw in +-power
        changed = sum(w != o for o, w in zip(old, new))
        if not severe:
            # 11 genes: the last 20 % (genes 9 and 10) 50 % moved, 20 % replaced; every other gene moved
            assert all(w != o for o, w in zip(old[:9], new[:9]))
            moved_all += changed == 11
        else:
            mixed += changed < 11
    assert moved_all and mixed  # both kinds drawn in 40 seeds


def test_averaged_crossover():
    fit = _genome([1.0, 2.0, 3.0], [0.5])
    other = _genome([3.0, 4.0], [1.5, 9.0])
    other.conns[1][3] = False
    child = crossover_average(fit, other, np.random.default_rng(0))
    assert [child.conns[k][2] for k in sorted(child.conns)] == [2.0, 3.0, 3.0]  # matching averaged, excess from fit
    assert sorted(child.nodes) == [10] and child.nodes[10][0] == 1.0  # node 11 is only the weaker parent's
    assert child.conns[0][3] and child.conns[2][3]
    disabled = sum(not crossover_average(fit, other, np.random.default_rng(s)).conns[1][3] for s in range(200))
    assert 120 < disabled < 180  # a gene disabled in a parent stays disabled 75 % of the time


def _run(neat: NEAT, generations: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    fits = []
    for _ in range(generations):
        f = rng.random(len(neat)) * 10.0
        fits.append(f)
        neat.tell(f)
    return fits


def test_neat_cpp_generation_keeps_the_size_and_the_champions():
    neat = NEAT(3, 1, NEATConfig.paper(add_node_prob=0.2, add_connection_prob=0.3), np.random.default_rng(3),
                output_activation="tanh")
    rng = np.random.default_rng(4)
    copied = 0
    for _ in range(25):
        f = rng.random(len(neat)) * 10.0
        before = {i: neat.genomes[i].to_data() for sp in neat.species for i in sp["members"]}
        big = [max(sp["members"], key=lambda i: (f[i], -i)) for sp in neat.species if len(sp["members"]) > 8]
        neat.tell(f)
        assert len(neat) == 150 and sum(len(sp["members"]) for sp in neat.species) == 150
        after = [g.to_data() for g in neat.genomes]
        copied += sum(before[i] in after for i in big)
    assert copied > 10  # species with more than 5 children keep their champion unchanged
    assert max(len(g.nodes) for g in neat.genomes) > 1  # structure grew


def test_neat_cpp_state_round_trip_breeds_the_same():
    cfg = NEATConfig.paper(population_size=40, add_node_prob=0.2, add_connection_prob=0.3)
    a = NEAT(3, 1, cfg, np.random.default_rng(5), output_activation="tanh")
    _run(a, 30, 6)  # past generation 30 (an obliteration) and a population stagnation (random fitness)
    assert a.breed_state["since"] >= 0 and "breed" in a.state()
    b = NEAT(3, 1, cfg, np.random.default_rng(0), output_activation="tanh")
    b.load_state(a.state())
    b.rng = np.random.default_rng(7)
    a.rng = np.random.default_rng(7)
    _run(a, 5, 8)
    _run(b, 5, 8)
    assert a.state() == b.state()


def test_population_stagnation_gives_the_two_best_species_everything():
    cfg = NEATConfig.paper(population_size=60, add_node_prob=0.3, add_connection_prob=0.3)
    neat = NEAT(3, 1, cfg, np.random.default_rng(9), output_activation="tanh")
    _run(neat, 6, 1)
    while len(neat.species) < 3:
        _run(neat, 1, 2)
    neat.breed_state = {"highest": 1e9, "since": cfg.max_stagnation + 4}  # never beaten: stagnant now
    f = np.random.default_rng(3).random(len(neat))
    ranked = sorted(neat.species, key=lambda sp: -float(f[sp["members"]].max()))
    champs = [neat.genomes[max(sp["members"], key=lambda i: (f[i], -i))].to_data() for sp in ranked[:2]]
    neat.tell(f)
    assert neat.breed_state["since"] == 0 and len(neat) == 60
    after = [g.to_data() for g in neat.genomes]
    assert all(c in after for c in champs)  # each champion's last super child is its plain copy


def test_neat_cpp_start_weights_are_uniform_in_its_units():
    neat = NEAT(6, 1, NEATConfig.paper(), np.random.default_rng(1), output_activation="tanh")
    w = np.array([gene[2] for g in neat.genomes for gene in g.conns.values()])
    b = np.array([g.nodes[6][0] for g in neat.genomes])
    assert np.abs(w).max() <= STEEPNESS and np.abs(b).max() <= STEEPNESS  # NEAT C++: +-1, bias links too
    assert np.abs(w).mean() > 0.4 * STEEPNESS and np.abs(b).min() > 0.0  # uniform, not N(0, 1) nor zero biases
    plain = NEAT(6, 1, NEATConfig.paper(reproduction="neat-python"), np.random.default_rng(1))
    assert all(g.nodes[6][0] == 0.0 for g in plain.genomes)  # neat-python's start: biases 0


def test_breeding_draws_come_from_one_seed_of_the_numpy_generator():
    """A neat-c++ generation takes one draw of the population's numpy generator (its BreedRandom's seed) and
    gives the generator back: the state between generations is the generator alone."""
    r = BreedRandom(11)
    ints = [r.integers(3) for _ in range(3000)]
    assert set(ints) == {0, 1, 2} and 900 < ints.count(0) < 1100
    u = [r.uniform(-2.5, 2.5) for _ in range(2000)]
    assert -2.5 <= min(u) < -2.4 and 2.4 < max(u) < 2.5
    assert [BreedRandom(5).normal() for _ in range(3)] == [BreedRandom(5).normal() for _ in range(3)]
    neat = NEAT(3, 1, NEATConfig.paper(population_size=30), np.random.default_rng(2), output_activation="tanh")
    gen = neat.rng
    twin = np.random.default_rng(2)
    NEAT(3, 1, NEATConfig.paper(population_size=30), twin, output_activation="tanh")
    neat.tell(np.arange(30.0))
    assert neat.rng is gen
    twin.integers(2 ** 63)
    assert gen.bit_generator.state == twin.bit_generator.state
