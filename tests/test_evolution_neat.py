"""NEAT: innovation numbers, crossover by innovation, speciation, batched evaluation of graph genomes,
and the graph architecture of the model file (round trip and strict validation)."""

import copy
import re
import json

import numpy as np
import pytest

from drla_core.envs import make
from drla_core.evolve.evolution import EvolutionConfig, EvolutionJob
from drla_core.nn.graph_net import GraphNetwork, graph_levels
from drla_core.io.model_io import ModelFormatError, load_model, model_from_dict, model_to_dict, save_model
from drla_core.evolve.neat import NEAT, Genome, NEATConfig, compatibility_distance, crossover
from drla_core.rl.train import evaluate


def evolved_neat(seed=0, generations=8, **kw):
    """A NEAT population after some generations of random fitness (structure grows, species form)."""
    cfg = NEATConfig(population_size=30, add_node_prob=0.6, add_connection_prob=0.6, **kw)
    rng = np.random.default_rng(seed)
    neat = NEAT(4, 2, cfg, rng)
    for _ in range(generations):
        neat.tell(rng.random(len(neat)))
    return neat


def test_innovation_numbers_are_consistent_across_a_run():
    neat = NEAT(3, 1, NEATConfig(population_size=4), np.random.default_rng(0))
    a, b = neat.genomes[0].copy(), neat.genomes[1].copy()
    assert sorted(a.conns) == sorted(b.conns) == [0, 1, 2]  # the same initial connections, the same numbers
    neat.tracker.new_generation()
    # the same structural mutation in one generation: same node, same innovation numbers
    for g in (a, b):
        s, t, w, _ = g.conns[1]
        node, i_in, i_out = neat.tracker.split(1, s, t, g)
        g.nodes[node] = [0.0, "tanh"]
        g.conns[i_in], g.conns[i_out] = [s, node, 1.0, True], [node, t, w, True]
    assert a.nodes.keys() == b.nodes.keys() and a.conns.keys() == b.conns.keys()
    node = max(a.nodes)
    assert neat.tracker.connection(0, node) == neat.tracker.connection(0, node)
    # a new generation: splitting the same gene again makes a new node with new numbers
    neat.tracker.new_generation()
    c = neat.genomes[2].copy()
    node2, i_in2, _ = neat.tracker.split(1, *c.conns[1][:2], c)
    assert node2 != node and i_in2 not in a.conns
    # across a whole run, every (source, target) pair keeps one number in every genome
    evolved = evolved_neat()
    pairs: dict[int, tuple[int, int]] = {}
    for g in evolved.genomes:
        for k, (s, t, _, _) in g.conns.items():
            assert pairs.setdefault(k, (s, t)) == (s, t)


def test_crossover_aligns_genes_by_innovation():
    neat = evolved_neat(seed=1)
    rng = np.random.default_rng(2)
    for _ in range(20):
        i, j = rng.integers(len(neat), size=2)
        fit, other = neat.genomes[i], neat.genomes[j]
        child = crossover(fit, other, rng)
        assert child.conns.keys() == fit.conns.keys() and child.nodes.keys() == fit.nodes.keys()
        for k, gene in child.conns.items():
            sources = [fit.conns[k]] + ([other.conns[k]] if k in other.conns else [])
            assert gene[:3] in [g[:3] for g in sources]
        for k, gene in child.nodes.items():
            assert gene in [fit.nodes[k]] + ([other.nodes[k]] if k in other.nodes else [])
    # matching genes come from both parents
    a = neat.genomes[0]
    b = a.copy()
    for gene in b.conns.values():
        gene[2] += 1.0
    child = crossover(a, b, np.random.default_rng(3))
    from_a = sum(child.conns[k][2] == a.conns[k][2] for k in a.conns)
    assert 0 < from_a < len(a.conns)


def test_compatibility_distance():
    neat = evolved_neat(seed=4)
    c = neat.config
    a, b = neat.genomes[0], neat.genomes[-1]
    assert compatibility_distance(a, a, c) == 0.0
    assert compatibility_distance(a, b, c) == pytest.approx(compatibility_distance(b, a, c))
    heavier = a.copy()
    k = next(iter(heavier.conns))
    heavier.conns[k][2] += 4.0
    assert compatibility_distance(a, heavier, c) == pytest.approx(c.weight_coefficient * 4.0 / len(a.conns))


def test_speciation_and_stagnation():
    neat = evolved_neat(seed=5, compatibility_threshold=0.8)
    assert len(neat.species) > 1
    members = sorted(i for sp in neat.species for i in sp["members"])
    assert members == list(range(len(neat)))
    stagnant = NEAT(4, 2, NEATConfig(population_size=30, compatibility_threshold=0.5, max_stagnation=3,
                                     species_elitism=1), np.random.default_rng(6))
    assert len(stagnant.species) > 2
    for sp in stagnant.species:  # none has improved for 10 generations; the first is the best
        sp["best"], sp["last_improved"] = 1.0, -10
    stagnant.species[0]["best"] = 5.0
    old = {sp["id"] for sp in stagnant.species}
    stagnant.tell(np.zeros(len(stagnant)))
    assert {sp["id"] for sp in stagnant.species} & old == {0}  # only the species_elitism best stays
    assert len(stagnant) == 30


def test_every_genome_stays_feed_forward_and_batched_matches_graph_network():
    neat = evolved_neat(seed=7, generations=15)
    assert max(len(g.nodes) for g in neat.genomes) > 2  # hidden nodes were added
    policy = neat.policy()
    rng = np.random.default_rng(8)
    obs = rng.normal(size=(len(neat), 4)).astype(np.float32)
    batched = policy(np.arange(len(neat)), obs)
    for i, g in enumerate(neat.genomes):
        net = neat.genome_network(g)
        graph_levels(net.n_nodes, 4, net.connections)  # raises on a cycle
        np.testing.assert_allclose(batched[i], net.forward(obs[i]), rtol=1e-5, atol=1e-5)
    # the same genome for many env copies in one call
    idx = np.zeros(10, dtype=int)
    obs10 = rng.normal(size=(10, 4)).astype(np.float32)
    np.testing.assert_allclose(policy(idx, obs10), neat.genome_network(neat.genomes[0]).forward(obs10),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_neat_evolves_a_cartpole_champion_that_exports_as_a_graph(tmp_path):
    cfg = EvolutionConfig(method="neat", generations=40, target_return=475.0, neat=NEATConfig(population_size=20))
    job = EvolutionJob(lambda: make("cartpole"), cfg, seed=3)
    job.advance()
    assert job.history["best"][0] < 475, "generation 0 already solved: the test would not show evolution"
    assert job.solved
    model = load_model(save_model(tmp_path / "neat.json", job.to_model({"env": "cartpole"})))
    assert "graph" in model.network.architecture()
    assert evaluate(make("cartpole"), model.act, 20, seed=5000).mean_return >= 475


def graph_model_dict():
    neat = evolved_neat(seed=9, generations=12)
    genome = max(neat.genomes, key=lambda g: len(g.nodes))
    from drla_core.io.model_io import Model
    from drla_core.base.spaces import Box, Discrete

    model = Model(neat.genome_network(genome), Box(-1, 1, (4,)), Discrete(2), kind="mlp")
    return model, model_to_dict(model)


def test_graph_model_round_trip_gives_equal_outputs(tmp_path):
    model, d = graph_model_dict()
    assert d["architecture"]["hidden"] == [] and len(d["architecture"]["graph"]["nodes"]) > 0
    loaded = load_model(save_model(tmp_path / "g.json", model))
    x = np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    assert model_to_dict(loaded)["params"] == d["params"]
    json.dumps(d, allow_nan=False)


def add_back_edge(d):
    """A connection back from a target to a non-input source: a cycle of two."""
    s, t = next(c for c in d["architecture"]["graph"]["connections"] if c[0] >= d["architecture"]["input_size"])
    d["architecture"]["graph"]["connections"].append([t, s])
    d["params"]["graph.weight"].append(0.5)


def broken(edit):
    _, d = graph_model_dict()
    d = copy.deepcopy(d)
    edit(d)
    return d


@pytest.mark.parametrize("edit, message", [
    (lambda d: add_back_edge(d), "cycle"),
    (lambda d: d["architecture"]["graph"]["connections"].__setitem__(0, [0, 999]), "node id out of range"),
    (lambda d: d["architecture"]["graph"]["connections"].__setitem__(0, [5, 1]), "ends at input node 1"),
    (lambda d: d["architecture"]["graph"]["connections"].append(list(d["architecture"]["graph"]["connections"][0])),
     "appears twice"),
    (lambda d: d["architecture"]["graph"]["nodes"].__setitem__(0, "swish"), "unknown activation 'swish'"),
    (lambda d: d["architecture"].__setitem__("hidden", [{"size": 3, "activation": "relu"}]),
     "architecture.hidden must be []"),
    (lambda d: d["architecture"]["graph"].pop("connections"), "exactly 'nodes' and 'connections'"),
    (lambda d: d["architecture"].pop("output_activation"), "missing required key 'output_activation'"),
    (lambda d: d["architecture"].__setitem__("type", "graph"), "unknown key 'type'"),
    (lambda d: d["architecture"]["graph"].__setitem__("nodes", ["tanh"] * 200_000), "more than the limit"),
    (lambda d: d["params"]["graph.weight"].pop(), "params.graph.weight: expected"),
    (lambda d: d["params"]["graph.bias"].__setitem__(0, "1"), "params.graph.bias: every value must be a number"),
    (lambda d: d["params"].__setitem__("layers.0.weight", []), "exactly 'graph.weight' and 'graph.bias'"),
    (lambda d: d["architecture"].__setitem__("output_size", 3), "params.graph.bias: expected"),
])
def test_bad_graphs_are_refused_with_a_clear_message(edit, message):
    d = broken(edit)
    with pytest.raises(ModelFormatError, match=re.escape(message)):
        model_from_dict(d)


def test_graph_network_rejects_cycles_directly():
    with pytest.raises(ValueError, match="cycle"):
        GraphNetwork(1, 1, "tanh", ["tanh"], [(0, 2), (2, 1), (1, 2)], [1.0, 1.0, 1.0], [0.0, 0.0])


def test_genome_data_round_trip():
    neat = evolved_neat(seed=10)
    g = neat.genomes[3]
    back = Genome.from_data(json.loads(json.dumps(g.to_data())))
    assert back.nodes == g.nodes and back.conns == g.conns


def test_a_node_without_sources_is_computed_before_its_targets():
    # node 2 (hidden, no incoming connection: its value is tanh(bias)) feeds output 1
    net = GraphNetwork(1, 1, "linear", ["tanh"], [(2, 1)], [2.0], [0.5, 1.0])
    assert net.forward(np.array([3.0], np.float32))[0] == pytest.approx(0.5 + 2.0 * np.tanh(1.0))


def test_docs_graph_example_loads_and_matches_its_description():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "model-format.md").read_text()
    blocks = re.findall(r"```json\n(.*?)```", text, re.S)
    example = json.loads(next(b for b in blocks if '"graph"' in b))
    model = model_from_dict(example)
    obs = np.array([0.1, -0.2, 0.3, 0.4], np.float32)
    w = example["params"]["graph.weight"]
    b = example["params"]["graph.bias"]
    hidden = np.tanh(b[2] + w[1] * obs[2])
    out4 = b[0] + w[0] * obs[0] + w[4] * obs[1]
    out5 = b[1] + w[2] * hidden + w[3] * obs[3]
    # an output of exactly 0 comes out as 0 or 3e-9 by the CPU (float32 sums in another order): atol too
    np.testing.assert_allclose(model.predict(obs), [out4, out5], rtol=1e-5, atol=1e-6)


def test_graph_models_satisfy_the_schema():
    from test_model_io import _check, load_schema  # the same small validator the layer-stack files pass

    schema = load_schema()
    _, d = graph_model_dict()
    _check(d, schema, schema["$defs"], "graph model")
    bad = copy.deepcopy(d)
    bad["architecture"]["graph"]["extra_key"] = 1
    with pytest.raises(AssertionError, match="unexpected extra_key"):
        _check(bad, schema, schema["$defs"], "graph model")


def test_the_champion_check_comes_before_breeding_and_a_solved_run_breeds_no_more():
    from drla_core.evolve.neat import NEATConfig as Config

    cfg = EvolutionConfig(method="neat", generations=10, target_return=475.0, neat=Config(population_size=100))
    job = EvolutionJob(lambda: make("cartpole"), cfg, seed=5)  # generation 1: a 500 whose check fails
    job.advance(max_steps=1)
    assert job.history["best"][0] >= 475 and job.history["evals"][0][1] < 475 and not job.solved
    assert job.method.generation == 1  # the failed check: the next generation was bred
    job.advance()
    assert job.solved and job.method.generation == job.steps - 1  # the solving generation is kept as it was
    assert job.history["evals"][-1][1] >= 475
