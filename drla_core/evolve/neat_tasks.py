"""The NEAT paper's tasks run the paper's way (Stanley & Miikkulainen 2002, section 4), for a whole population.

* ``paper_distance``: the paper's compatibility ``c1 E / N + c2 D / N + c3 W`` (``NEATConfig(compatibility=
  "paper")``): E and D the excess and disjoint connection genes (both weighted by ``disjoint_coefficient``,
  the paper's c1 = c2), W the mean weight difference of the matching genes (connection weights, and the
  biases of matching nodes: the paper's bias-input connections), N the larger genome's gene count, 1 below 20.
* ``RecurrentPopulation``: every genome of a ``NEAT`` with recurrent connections as one padded tensor,
  stepped one activation per time step with a state per row (``graph_net.RecurrentGraphNetwork``'s rule).
* ``xor_generation``, ``balance`` and ``run_task``: a generation of XOR, of double-pole balancing with
  velocities (steps balanced, solved at 100,000) or without (the damping fitness; then the champion of the
  first unchecked species is tried for 100,000 steps and on the 625 generalisation starts, as NEAT C++'s
  ``pole2_epoch``); ``run_task`` evolves until solved and counts evaluations as NEAT C++ does
  (``pop_size * (generation - 1) + the winner's number``).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ..envs.double_pole import (FAILURE_ANGLE, START_STATE, TRACK_EDGE, generalization_states, observe,
                                step_states)
from ..envs.xor import XOR_INPUTS, xor_fitness, xor_solved
from ..nn.mlp import _activate
from .neat import NEAT, NEATConfig
from .neat_genome import paper_distance
from .neat_scalar import ScalarNetwork, finish

__all__ = ["paper_distance", "RecurrentPopulation", "xor_generation", "balance", "run_task", "TASKS", "TASK_CONFIG"]

_BOUNDED, _LIMITS = [0, 2, 4], np.array([TRACK_EDGE, FAILURE_ANGLE, FAILURE_ANGLE])
#: ``balance`` finishes the episodes in Python floats once this many carts or fewer are left (measured on a loaded
#: 2-core machine: one network in floats costs about 9 us a step, the numpy rows 30-35 us for one cart and 200-220
#: for 8 to 32; they cross near 25 carts for a recurrent network of 3 hidden nodes, 30 for a feed-forward one)
SCALAR_ROWS = 16

#: task -> (inputs, recurrent networks by default)
TASKS = {"xor": (2, False), "double_pole": (6, False), "double_pole_nv": (3, True)}
#: task -> ``run_task``'s changes to ``NEATConfig.paper()``: the double-pole tasks breed by neat-python's rules at
#: the paper's rates, which solve them in fewer evaluations than NEAT C++'s at 150 genomes (with velocities, 10
#: seeds: 2,900 against 3,832; without, NEAT C++'s rules left seed 0 unsolved after 710 generations)
TASK_CONFIG: dict[str, dict[str, Any]] = {"double_pole": {"reproduction": "neat-python"},
                                          "double_pole_nv": {"reproduction": "neat-python"}}


class RecurrentPopulation:
    """Rows of genomes (``idx``: the genome of each row) stepped together, one activation per ``step``."""

    def __init__(self, neat: NEAT, idx: np.ndarray) -> None:
        weights, biases, node_act, names, _ = neat._pack(levels=False)
        self.n_in, self.n_out = neat.n_in, neat.n_out
        self.idx = np.asarray(idx, dtype=np.int64)
        self.w, self.b = weights[self.idx], biases[self.idx]
        acts = node_act[self.idx]
        self.masks = [(a, acts == i) for i, a in enumerate(names) if a != "linear"]
        self.single = names[0] if len(names) == 1 and names[0] != "linear" else None
        self.values = np.zeros((len(self.idx), 1, weights.shape[1]), dtype=np.float32)

    def keep(self, rows: np.ndarray) -> None:
        """Keep only ``rows`` (their state goes on)."""
        self.idx, self.w, self.b, self.values = self.idx[rows], self.w[rows], self.b[rows], self.values[rows]
        self.masks = [(a, m[rows]) for a, m in self.masks]

    def step(self, obs: np.ndarray) -> np.ndarray:
        u = self.values
        u[:, 0, :self.n_in] = obs
        z = np.matmul(u, self.w)[:, 0, :]
        z += self.b
        if self.single is not None:
            _activate(self.single, z)
        else:
            for a, mask in self.masks:
                work = z.copy()
                _activate(a, work)
                np.copyto(z, work, where=mask)
        self.values = z[:, None, :]
        return z[:, self.n_in:self.n_in + self.n_out].copy()


def _answers(out: np.ndarray) -> np.ndarray:
    """tanh outputs onto [0, 1], as ``evaluation.action_function`` maps them onto XOR's action box."""
    return (np.clip(out[:, 0], -1.0, 1.0) + 1.0) / 2.0


def xor_generation(neat: NEAT) -> tuple[np.ndarray, np.ndarray]:
    """Every genome's XOR fitness and whether it solves XOR (feed-forward genomes: one batched forward)."""
    p = len(neat)
    out = neat.policy()(np.repeat(np.arange(p), 4), np.tile(XOR_INPUTS, (p, 1)))
    answers = _answers(out).reshape(p, 4)
    return xor_fitness(answers), xor_solved(answers)


def balance(neat: NEAT, idx: np.ndarray, starts: np.ndarray, max_steps: int, velocities: bool,
            damping: bool = False, scalar_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Double-pole episodes, one per row (genome ``idx[r]`` from state ``starts[r]``), to failure or
    ``max_steps``. Returns the steps balanced (in bounds) per row and its fitness: the steps run (NEAT C++
    counts the failing one) or, with ``damping``, the non-Markovian damping fitness.

    The rows step together in numpy until at most ``scalar_rows`` (default ``SCALAR_ROWS``; 0: never) are left;
    those finish one by one in Python floats (``neat_scalar.finish``: the same physics bit for bit, the network
    in float64 rather than float32, so a trajectory may differ from the all-numpy one in the last bits)."""
    rows = len(idx)
    cut = SCALAR_ROWS if scalar_rows is None else scalar_rows
    states = np.array(starts, dtype=np.float64).reshape(rows, 6)
    balanced = np.zeros(rows, dtype=np.int64)
    ran = np.zeros(rows, dtype=np.int64)
    jiggle = np.zeros((rows, min(max_steps, 1000) + 1)) if damping else None
    alive = np.arange(rows)
    recurrent = RecurrentPopulation(neat, np.asarray(idx)) if neat.config.recurrent else None
    forward = None if recurrent else neat.policy()
    cur_idx = np.asarray(idx, dtype=np.int64)
    for step in range(1, max_steps + 1):
        if len(alive) <= cut:  # the last few carts: one by one in floats
            for k, r in enumerate(alive.tolist()):
                net = ScalarNetwork(neat.genomes[int(cur_idx[k])], neat.n_in, neat.n_out, neat.config.recurrent,
                                    None if recurrent is None else recurrent.values[k, 0].tolist())
                balanced[r], ran[r], _ = finish(net, states[k].tolist(), step, max_steps, velocities,
                                                None if jiggle is None else jiggle[r])
            break
        obs = observe(states, velocities)
        out = recurrent.step(obs) if recurrent is not None else forward(cur_idx, obs)  # type: ignore[misc]
        states = step_states(states, 10.0 * np.minimum(np.maximum(out[:, 0], -1.0), 1.0))  # (np.clip's values)
        if jiggle is not None and step <= jiggle.shape[1] - 1:
            jiggle[alive, step - 1] = np.abs(states[:, :4]).sum(axis=1)
        failed = (np.abs(states[:, _BOUNDED]) > _LIMITS).any(axis=1)  # (outside_bounds in fewer numpy calls)
        ran[alive] = step
        balanced[alive[~failed]] = step
        if failed.any():
            keep = ~failed
            alive, states, cur_idx = alive[keep], states[keep], cur_idx[keep]
            if recurrent is not None:
                recurrent.keep(np.flatnonzero(keep))
            if not len(alive):
                break
    if jiggle is None:
        return balanced, ran.astype(np.float64)
    fitness = 0.1 * balanced / 1000.0
    for r in range(rows):
        steps = ran[r] + 1 if balanced[r] == ran[r] else ran[r]  # the C++ loop counter after the loop
        if steps > 100 and balanced[r] > 100:
            fitness[r] += 0.9 * (0.75 / jiggle[r, steps - 101:steps - 1].sum())
    return balanced, fitness


def _nonmarkov_champion(neat: NEAT, fitness: np.ndarray, checked: dict[int, bool]) -> int:
    """``pole2_epoch``'s pick: species by their best fitness; the first whose best improved on its best
    ever (unchecked) or else the first; its best genome."""
    order = sorted(neat.species, key=lambda sp: -float(fitness[sp["members"]].max()))
    for sp in order:
        if float(fitness[sp["members"]].max()) > sp["best"]:
            checked[sp["id"]] = False
    chosen = next((sp for sp in order if not checked.get(sp["id"], False)), order[0])
    checked[chosen["id"]] = True
    return int(max(chosen["members"], key=lambda i: (fitness[i], -i)))


def _generation(task: str, neat: NEAT, checked: dict[int, bool], long_steps: int) -> tuple[np.ndarray, int | None]:
    """One generation's fitness and the winner's index (None when none)."""
    p = len(neat)
    if task == "xor":
        fitness, solved = xor_generation(neat)
        return fitness, int(np.argmax(solved)) if solved.any() else None
    if task == "double_pole":
        steps, fitness = balance(neat, np.arange(p), np.tile(START_STATE, (p, 1)), long_steps, True)
        won = steps >= long_steps
        return fitness, int(np.argmax(won)) if won.any() else None
    _, fitness = balance(neat, np.arange(p), np.tile(START_STATE, (p, 1)), 1000, False, damping=True)
    champ = _nonmarkov_champion(neat, fitness, checked)
    steps, _ = balance(neat, np.array([champ]), np.array([START_STATE]), long_steps, False)
    if steps[0] < long_steps - 1:  # NEAT C++: fitness (steps run) >= 99,999
        return fitness, None
    starts = generalization_states()
    held, _ = balance(neat, np.full(len(starts), champ), starts, 1000, False)
    return fitness, champ if int((held >= 999).sum()) >= 200 else None


def run_task(task: str, seed: int, config: NEATConfig | None = None, max_generations: int = 1000,
             long_steps: int = 100_000, max_seconds: float | None = None) -> dict[str, Any]:
    """Evolve on ``task`` (xor, double_pole, double_pole_nv) until solved or ``max_generations``.

    Returns ``solved``, ``generations`` (the winner's, 1-based), ``evaluations`` (``pop * (gen - 1) +
    winner index + 1``; the budget spent when unsolved), and the winner's ``hidden`` nodes and enabled
    ``connections``. ``long_steps``: the balancing length (100,000 in the paper). ``max_seconds``: give up
    (unsolved, ``timed_out`` True) after the first generation that ends past this much wall time.
    """
    t0 = time.perf_counter()
    n_in, recurrent = TASKS[task]
    cfg = config if config is not None else NEATConfig.paper(recurrent=recurrent, **TASK_CONFIG.get(task, {}))
    neat = NEAT(n_in, 1, cfg, np.random.default_rng(seed), output_activation="tanh")
    checked: dict[int, bool] = {}
    for gen in range(1, max_generations + 1):
        fitness, winner = _generation(task, neat, checked, long_steps)
        if winner is not None:
            g = neat.genomes[winner]
            return {"solved": True, "generations": gen, "evaluations": len(neat) * (gen - 1) + winner + 1,
                    "hidden": len(g.nodes) - neat.n_out, "connections": sum(1 for c in g.conns.values() if c[3]),
                    "timed_out": False}
        if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
            return {"solved": False, "generations": gen, "evaluations": len(neat) * gen, "hidden": math.nan,
                    "connections": math.nan, "timed_out": True}
        neat.tell(fitness)
    return {"solved": False, "generations": max_generations, "evaluations": len(neat) * max_generations,
            "hidden": math.nan, "connections": math.nan, "timed_out": False}
