"""Recurrent NEAT end to end: the Evolution job's state per episode, the model file's recurrent graphs, the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from drla_core.base.spaces import Box
from drla_core.envs.double_pole import DoublePoleNoVelocity
from drla_core.evolve.evolution import EvolutionConfig, EvolutionJob
from drla_core.evolve.neat import NEAT, NEATConfig
from drla_core.io.model_io import Model, ModelFormatError, load_model, model_from_dict, model_to_dict, save_model
from drla_core.nn.graph_net import GraphError, RecurrentGraphNetwork, check_graph, graph_levels
from drla_core.rl.history import evaluate

ROOT = Path(__file__).resolve().parents[1]


def _cyclic_network() -> RecurrentGraphNetwork:
    """A recurrent NEAT champion-like network: evolved genomes until one has a cycle, the largest of them."""
    neat = NEAT(3, 1, NEATConfig(population_size=30, recurrent=True, add_connection_prob=0.9, add_node_prob=0.4),
                np.random.default_rng(1), output_activation="tanh")
    rng = np.random.default_rng(2)
    for _ in range(20):
        neat.tell(rng.normal(size=len(neat)))
    net = max((neat.genome_network(g) for g in neat.genomes), key=lambda n: len(n.connections))
    assert isinstance(net, RecurrentGraphNetwork) and net.hidden_activations
    return net


def _steps(model: Model, obs: np.ndarray) -> np.ndarray:
    model.reset()
    return np.array([model.predict(o) for o in obs])


def test_model_file_round_trip_gives_equal_outputs_step_after_step(tmp_path: Path) -> None:
    net = _cyclic_network()
    space = Box(-1.0, 1.0, (3,))
    model = Model(net, space, Box(-1.0, 1.0, (1,)), kind="mlp")
    data = model_to_dict(model)
    assert data["architecture"]["graph"]["recurrent"] is True
    loaded = load_model(save_model(tmp_path / "r.json", model))
    assert isinstance(loaded.network, RecurrentGraphNetwork) and loaded.recurrent and model.recurrent
    obs = np.random.default_rng(3).normal(size=(40, 3)).astype(np.float32)
    want = _steps(model, obs)
    got = _steps(loaded, obs)
    assert np.array_equal(got, want)
    assert not np.array_equal(want[1:], np.array([_steps(model, o[None])[0] for o in obs[1:]]))  # state matters
    assert np.array_equal(_steps(loaded, obs), want)  # reset: the same episode again gives the same outputs


def test_recurrent_graphs_are_validated_and_feed_forward_files_unchanged() -> None:
    arch = {"input_size": 1, "hidden": [], "output_size": 1, "output_activation": "linear",
            "graph": {"nodes": ["tanh"], "connections": [[0, 2], [2, 1], [1, 2]]}}
    with pytest.raises(GraphError, match="connections form a cycle"):
        check_graph(arch)
    check_graph({**arch, "graph": {**arch["graph"], "recurrent": True}})
    with pytest.raises(GraphError, match="architecture.graph.recurrent must be true when present"):
        check_graph({**arch, "graph": {**arch["graph"], "recurrent": False}})
    with pytest.raises(GraphError, match="inputs have no incoming connections"):
        check_graph({**arch, "graph": {"nodes": [], "connections": [[1, 0]], "recurrent": True}})
    net = _cyclic_network()
    data = model_to_dict(Model(net, Box(-1.0, 1.0, (3,)), Box(-1.0, 1.0, (1,)), kind="mlp"))
    data["architecture"]["graph"]["recurrent"] = "yes"
    with pytest.raises(ModelFormatError, match="graph.recurrent must be true"):
        model_from_dict(data)
    schema = json.loads((ROOT / "drla_core" / "io" / "model_schema.json").read_text())
    assert schema["$defs"]["graph"]["properties"]["recurrent"] == {
        "const": True, "description": "Present (true) only in a recurrent graph."}


def test_export_onnx_refuses_a_recurrent_graph_with_the_reason() -> None:
    pytest.importorskip("onnx")
    from drla.onnx_io import to_onnx

    model = Model(_cyclic_network(), Box(-1.0, 1.0, (3,)), Box(-1.0, 1.0, (1,)), kind="mlp")
    with pytest.raises(ModelFormatError, match="recurrent graph network .* keeps a value per node from one step"):
        to_onnx(model)


def test_evolution_job_carries_state_through_an_episode_and_resets_it() -> None:
    # each genome's fitness in the job is the return of its exported network played episode by episode, reset
    # at each start: two episodes per genome, the second from a state the first would have left otherwise
    cfg = EvolutionConfig(method="neat", neat=NEATConfig(population_size=16, recurrent=True, add_connection_prob=0.9,
                                                         add_node_prob=0.4), generations=6, episodes=2)
    job = EvolutionJob(lambda: DoublePoleNoVelocity(max_steps=200), cfg, seed=6)
    job.advance()
    model = job.to_model()
    assert model.recurrent
    with pytest.raises(GraphError, match="cycle"):  # (this seed's champion has one: its output feeds back)
        graph_levels(model.network.n_nodes, 3, model.network.connections)
    result = evaluate(DoublePoleNoVelocity(max_steps=200), model.act, episodes=2, seed=0)
    assert result.returns[0] == result.returns[1]  # the task is deterministic: a reset gives the same episode
    assert result.mean_return == pytest.approx(job.champion_fitness, rel=1e-6)
    assert job.champion_fitness > 0.0001 * 20  # (more than a few steps: the state had time to matter)


def test_cli_trains_recurrent_neat_on_double_pole_without_velocities(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "nv.json"
    run = subprocess.run([sys.executable, "-m", "drla", "train", "double_pole_nv", "--agent", "neat", "--seed", "0",
                          "--out", str(out)], capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    greedy = re.search(r"^greedy: ([0-9.]+) over 1 episodes$", run.stdout, re.M)
    trained = re.search(r"^trained (\d+) generations", run.stdout, re.M)
    assert greedy and float(greedy.group(1)) >= 0.1 and trained and int(trained.group(1)) < 100, run.stdout
    model = load_model(out)
    assert model.recurrent and model.meta["agent"] == "neat"
    env_ = DoublePoleNoVelocity()
    obs, _ = env_.reset()
    model.reset()
    steps, done = 0, False
    while not done:
        obs, _, terminated, truncated, _ = env_.step(model.act(obs))
        steps, done = steps + 1, terminated or truncated
    assert steps == 1000 and not terminated  # the damping task's 1000 steps balanced
    evaluated = subprocess.run([sys.executable, "-m", "drla", "eval", str(out), "--episodes", "2"],
                               capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert evaluated.returncode == 0 and "balanced rate 100.0 %" in evaluated.stdout, evaluated.stderr


class _Unbatched:
    """An environment without ``batch``: ``Evaluation`` runs it on its pool path."""

    def __init__(self, env: Any) -> None:
        self.env, self.observation_space, self.action_space = env, env.observation_space, env.action_space

    def reset(self, **kw: Any) -> Any:
        return self.env.reset(**kw)

    def step(self, action: Any) -> Any:
        return self.env.step(action)


def test_recurrent_policy_scores_the_same_batched_pooled_and_network_by_network() -> None:
    from drla_core.envs import make
    from drla_core.evolve.evaluation import Evaluation, action_function

    neat = NEAT(4, 2, NEATConfig(population_size=20, recurrent=True, add_connection_prob=0.9, add_node_prob=0.4),
                np.random.default_rng(5))
    seeds = [3, 4]
    act = action_function(make("cartpole").action_space)
    for _ in range(6):  # a few generations on CartPole: episodes long enough for the state to matter
        ev = Evaluation(neat.policy(), len(neat), seeds, [make("cartpole")], act)
        ev.run()
        neat.tell(ev.fitness())
    batched = Evaluation(neat.policy(), len(neat), seeds, [make("cartpole")], act)
    assert batched._batch is not None  # (the batched path)
    batched.run()
    pooled = Evaluation(neat.policy(), len(neat), seeds, [_Unbatched(make("cartpole")) for _ in range(7)], act)
    assert pooled._batch is None
    pooled.run()
    assert np.array_equal(batched.returns, pooled.returns)
    for i, g in enumerate(neat.genomes):  # each genome's network played episode by episode, reset at each start
        net, env = neat.genome_network(g), make("cartpole")
        for e, seed in enumerate(seeds):
            obs, _ = env.reset(seed=seed)
            net.reset()
            total, done = 0.0, False
            while not done:
                obs, r, terminated, truncated, _ = env.step(int(np.argmax(net.step(obs[None])[0])))
                total, done = total + r, terminated or truncated
            assert total == batched.returns[i, e], (i, e)
    assert batched.returns.max() > 50  # (long enough episodes for the state to matter)
