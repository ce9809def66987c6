"""The champion check played alongside its generation (``Evaluation``'s check rows on ``CartPoleBatch``): the
same results as the check on its own, and what it certifies is what the exported model scores."""

import json

import numpy as np
import pytest

from drla_core.evolve import evaluation
from drla_core.envs import make
from drla_core.envs.cartpole import CartPole, CartPoleBatch
from drla_core.evolve.evolution import EvolutionConfig, EvolutionJob, GAConfig
from drla_core.io.model_io import load_model, save_model
from drla_core.evolve.neat import NEATConfig

CHECK_SEEDS = [10_000 + i for i in range(20)]


def neat_job(seed, population=100, generations=10, episodes=1, method="neat"):
    cfg = EvolutionConfig(method=method, generations=generations, target_return=475.0, episodes=episodes,
                          solve_episodes=20, solve_seed=CHECK_SEEDS[0], neat=NEATConfig(population_size=population),
                          ga=GAConfig(population_size=64))
    return EvolutionJob(lambda: make("cartpole"), cfg, seed=seed)


def comparable(job) -> dict:
    data = json.loads(json.dumps(job.checkpoint()))
    data["history"].pop("seconds")  # wall time differs between runs
    return data


def run(job, monkeypatch, alongside=True, paused=False):
    """Advance to the end; counts the checks that came from the generation's rows."""
    used = []
    original = EvolutionJob._check_alongside

    def spy(self, ev, best, genome):
        got = original(self, ev, best, genome)
        used.append(got is not None)
        return got

    with monkeypatch.context() as m:
        m.setattr(EvolutionJob, "_check_alongside", spy)
        if not alongside:
            m.setattr(evaluation, "CHECK_ALONGSIDE", 0)
        if paused:
            while not job.done:
                job.advance(max_seconds=0.0)  # stops after every step, the check rows' steps included
        else:
            job.advance()
    return used


@pytest.mark.parametrize("method, seed", [("neat", 0), ("neat", 5), ("ga", 3)])
def test_the_check_alongside_gives_what_the_check_on_its_own_gives(monkeypatch, method, seed):
    # NEAT seed 0: solved in generation 1 by a check played alongside; NEAT seed 5: generation 1's best fails
    # its check (357 of 475), generation 3 solves; GA seed 3: 458 in generation 1, solved in generation 3
    together, alone, paused = (neat_job(seed, method=method) for _ in range(3))
    used = run(together, monkeypatch)
    assert run(alone, monkeypatch, alongside=False) == [False] * len(used)
    assert any(used) and together.solved
    assert comparable(together) == comparable(alone)  # history, checks, env_steps, champion, population
    assert together.env_steps == alone.env_steps
    assert run(paused, monkeypatch, paused=True) == used
    assert comparable(paused) == comparable(alone)


def test_several_episodes_per_individual_and_a_small_population(monkeypatch):
    together, alone = neat_job(2, population=12, generations=6, episodes=2), \
        neat_job(2, population=12, generations=6, episodes=2)
    run(together, monkeypatch)
    run(alone, monkeypatch, alongside=False)
    assert comparable(together) == comparable(alone)


def test_the_exported_champion_scores_the_mean_its_check_certified(tmp_path, monkeypatch):
    job = neat_job(0)
    assert run(job, monkeypatch) == [True] and job.solved
    model = load_model(save_model(tmp_path / "neat.json", job.to_model({"env": "cartpole"})))
    env, returns = CartPole(), []
    for s in CHECK_SEEDS:  # the check's episodes, one observation at a time, as Play runs them
        obs, _ = env.reset(seed=s)
        total, done = 0.0, False
        while not done:
            obs, r, terminated, truncated, _ = env.step(model.act(obs))
            total += r
            done = terminated or truncated
        returns.append(total)
    assert float(np.mean(returns)) == job.champion_eval == job.history["evals"][-1][1]


def test_a_network_that_acts_otherwise_is_checked_on_its_own(monkeypatch):
    """The check from the generation's rows counts only when the exported network chooses every action it
    took: here the exported network pushes the other way from step 40 of an episode on, so the job checks it
    on its own, and scores what that network scores."""

    def job_with_other_network():
        job = neat_job(0)
        genome_network = job.method.genome_network

        def other(genome):
            net = genome_network(genome)
            forward = net.forward

            def flipped(x):
                out = forward(x)
                late = np.abs(np.asarray(x).reshape(-1, 4)[:, 0]) > 0.05  # (far from the start: the cart moved)
                out.reshape(-1, 2)[late] = out.reshape(-1, 2)[late][:, ::-1]
                return out
            net.forward = flipped
            return net
        job.method.genome_network = other
        return job

    together, alone = job_with_other_network(), job_with_other_network()
    used = run(together, monkeypatch)
    assert used and not any(used)  # every candidate's recorded actions disagreed
    run(alone, monkeypatch, alongside=False)
    assert comparable(together) == comparable(alone)


def test_cartpole_batch_rows_added_later_follow_the_scalar_env_and_stop_at_their_own_limit():
    batch = CartPoleBatch(3, capacity=6)
    first, later = [7, 8, 9], [21, 22, 23]
    obs = batch.reset(first)
    envs = [CartPole() for _ in range(6)]
    for e, s in zip(envs, first):
        e.reset(seed=s)
    rows = [0, 1, 2]

    def controller(o):  # balances: episodes last to the step limit
        return (o[:, 2] + 0.5 * o[:, 3] + 0.01 * o[:, 1] > 0).astype(np.int64)

    ends = {}
    for step in range(1, 700):
        if step == 41:  # three more rows, 40 steps late
            obs = batch.add(later)
            for e, s in zip(envs[3:], later):
                np.testing.assert_array_equal(obs[len(rows)], e.reset(seed=s)[0])
                rows.append(envs.index(e))
        actions = controller(obs)
        obs, rewards, terminated, truncated = batch.step(actions)
        truncated = np.broadcast_to(truncated, (len(rows),))
        for j, i in enumerate(rows):
            o, r, te, tr, _ = envs[i].step(int(actions[j]))
            assert np.array_equal(o, obs[j]) and (r, te, tr) == (rewards[j], terminated[j], truncated[j])
        ended = terminated | truncated
        for j in np.flatnonzero(ended):
            ends[rows[j]] = (step, int(batch.steps_run(ended)[list(np.flatnonzero(ended)).index(j)]))
        batch.keep(~ended)
        rows, obs = [r for r, e in zip(rows, ended) if not e], obs[~ended]
        if not rows:
            break
    assert {i: s for i, (s, _) in ends.items()} == {0: 500, 1: 500, 2: 500, 3: 540, 4: 540, 5: 540}
    assert all(run == 500 for _, run in ends.values())
    with pytest.raises(ValueError, match="room for 6"):
        batch.reset(first)
        batch.add(later + [1])
