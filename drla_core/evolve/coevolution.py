"""Competitive co-evolution: two populations, each scored against the other's current best.

The scheme of Rosin & Belew (1997) with the "last elite opponent" evaluation: at generation ``g`` every
individual of side A plays against side B's champion of generation ``g - 1`` and every individual of B
against A's (generation 0 meets a random individual of the other side). Each side is an ordinary
``evolution.EvolutionJob`` (GA or NEAT) on a one-agent view of the two-agent game (``OpponentEnv``: the
other side played by a fixed network). Fitness against a moving opponent is no measure of progress on its
own, so each new champion also plays the other side's generation-0 champion on fixed episodes (Cliff &
Miller's "current individual vs ancestral opponents", against the first ancestor): the ``vs_first`` curves.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..base.env import Env
from .evolution import EvolutionConfig, EvolutionJob, action_function
from ..base.files import atomic_write
from ..io.model_io import Model
from ..base.parallel_env import ParallelEnv
from ..io.plot import BLUE, GREEN, ORANGE, Panel, Series, render_panels
from ..io.png import write_png
from ..base.spaces import Space

__all__ = ["OpponentEnv", "Opponent", "CoevolutionJob", "COEVOLUTION_FORMAT", "coevolution_panels"]

COEVOLUTION_FORMAT = "drla-coevolution"
COEVOLUTION_VERSION = 1
#: Episode seeds of the ``vs_first`` measure (fixed, never used for selection).
PROGRESS_SEED = 20_000


class Opponent:
    """The other side's fixed policy, swapped by the job between generations: ``act(obs) -> action``."""

    def __init__(self, action_space: Space) -> None:
        self._act = action_function(action_space)
        self.network: Any = None

    def act(self, obs: Any) -> Any:
        out = self.network.forward(np.asarray(obs, np.float32).reshape(1, -1))
        return self._act(out)[0]


class OpponentEnv(Env):
    """Agent ``agent`` of a two-agent ``ParallelEnv`` as a Gymnasium ``Env``; the other agent plays
    ``opponent.act`` on its own observation each step. Reward, termination and info are ``agent``'s."""

    def __init__(self, env: ParallelEnv, agent: str, opponent: Opponent) -> None:
        if len(env.possible_agents) != 2 or agent not in env.possible_agents:
            raise ValueError(f"OpponentEnv needs a two-agent environment with {agent!r}; it has "
                             f"{env.possible_agents}")
        self.env, self.agent, self.opponent = env, agent, opponent
        self.other = next(a for a in env.possible_agents if a != agent)
        self.observation_space = env.observation_space(agent)
        self.action_space = env.action_space(agent)
        self.task_metric = env.task_metric
        self._other_obs: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        obs, infos = self.env.reset(seed=seed, options=options)
        self._other_obs = obs.get(self.other)
        return obs[self.agent], infos.get(self.agent, {})

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        actions = {self.agent: action}
        if self.other in self.env.agents:
            actions[self.other] = self.opponent.act(self._other_obs)
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        self._other_obs = obs.get(self.other)
        a = self.agent
        return obs[a], float(rewards[a]), bool(terms[a]), bool(truncs[a]), infos[a]

    def close(self) -> None:
        self.env.close()


class CoevolutionJob:
    """Two populations co-evolving on a two-agent game, as a ``TrainingJob``.

    ``steps`` counts generations (each runs both sides); ``advance`` may stop between two environment steps
    (``max_seconds``) and goes on from there. ``champions[name]`` is each side's best of its latest
    generation: what the other side meets next, and what ``to_models`` exports.

    Args:
        env: a factory ``() -> ParallelEnv`` with exactly two agents (their names are the sides, in
            ``possible_agents`` order), or one such environment (a Blender scene): every episode then runs
            on it, one after another.
        config: one ``EvolutionConfig`` for both sides, or one per agent name (same ``generations``).
            ``target_return`` and ``novelty`` do not apply (fitness is against a moving opponent).
        seed: fixes the whole run (side ``i`` evolves with seed ``2 * seed + i``).
        progress_episodes: fixed episodes each new champion plays against the other's first champion.
    """

    def __init__(self, env: Callable[[], ParallelEnv] | ParallelEnv, config: EvolutionConfig
                 | Mapping[str, EvolutionConfig] | None = None, seed: int = 0, progress_episodes: int = 8) -> None:
        self._set_source(env)
        probe = self._factory()
        if not isinstance(probe, ParallelEnv) or len(probe.possible_agents) != 2:
            raise ValueError("co-evolution needs a two-agent environment (a ParallelEnv with two possible_agents)")
        self.names: list[str] = list(probe.possible_agents)
        base = config or EvolutionConfig()
        configs = {n: (base[n] if isinstance(base, Mapping) else base) for n in self.names}
        gens = {c.generations for c in configs.values()}
        if len(gens) != 1:
            raise ValueError("both sides of a co-evolution need the same number of generations")
        self.configs = {n: replace(c, target_return=None, novelty=None) for n, c in configs.items()}
        self.seed = int(seed)
        self.progress_episodes = int(progress_episodes)
        self.opponents = {n: Opponent(probe.action_space(self._other(n))) for n in self.names}
        self.jobs = {n: EvolutionJob(self._side_factory(n), self.configs[n], seed=2 * self.seed + i)
                     for i, n in enumerate(self.names)}
        self.total_steps = next(iter(gens))
        self.steps = 0
        self.done = False
        self._interrupted = False
        self._phase = 0  # which side's generation runs now
        self._wall = 0.0
        #: Each side's champion genome (generation 0: its first individual, a random network).
        self.champions: dict[str, Any] = {n: j.method.genome(0) for n, j in self.jobs.items()}
        self._first_genomes = dict(self.champions)
        self.first = {n: self.jobs[n].method.genome_network(g) for n, g in self.champions.items()}
        self.champion_fitness: dict[str, float] = {n: -math.inf for n in self.names}
        self.history: dict[str, Any] = {"generation": [], "seconds": [], "env_steps": []}
        for n in self.names:
            self.history.update({f"{n}_best": [], f"{n}_mean": [], f"{n}_vs_first": []})
        self._start: dict[str, Any] | None = None

    def _set_source(self, env: Callable[[], ParallelEnv] | ParallelEnv) -> None:
        self._shared: ParallelEnv | None = env if isinstance(env, ParallelEnv) else None
        if self._shared is not None:
            shared = self._shared
            self._factory: Callable[[], ParallelEnv] = lambda: shared
        elif callable(env):
            self._factory = env
        else:
            raise TypeError("CoevolutionJob needs a factory () -> ParallelEnv, or one ParallelEnv")

    def _other(self, name: str) -> str:
        return self.names[1 - self.names.index(name)]

    def _side_factory(self, name: str) -> Callable[[], Env] | Env:
        """What side ``name``'s ``EvolutionJob`` evaluates on: a factory of fresh games, or with one shared
        environment a single view of it (its episodes then run one after another)."""
        if self._shared is not None:
            return OpponentEnv(self._shared, name, self.opponents[name])
        return lambda: OpponentEnv(self._factory(), name, self.opponents[name])

    @property
    def env_steps(self) -> int:
        return sum(j.env_steps for j in self.jobs.values())

    # -- TrainingJob ---------------------------------------------------------------------------------------

    def advance(self, max_steps: int | None = None, max_seconds: float | None = None) -> int:
        """Run up to ``max_steps`` more generations (default: to the end) or until ``max_seconds`` pass;
        returns the generations finished in this call."""
        t0 = time.perf_counter()
        deadline = None if max_seconds is None else t0 + max_seconds
        finished = 0
        try:
            while not self.done and (max_steps is None or finished < max_steps):
                if self._phase == 0 and self._start is None:
                    self._begin_generation()
                side = self.names[self._phase]
                job = self.jobs[side]
                left = None if deadline is None else max(0.0, deadline - time.perf_counter())
                job.champion_fitness = -math.inf  # the champion is this generation's best, not the best ever
                if job.advance(max_steps=1, max_seconds=left) == 0:
                    break
                self._phase += 1
                if self._phase == len(self.names):
                    self._end_generation()
                    finished += 1
                if deadline is not None and time.perf_counter() >= deadline:
                    break
        finally:
            self._wall += time.perf_counter() - t0
        return finished

    def _begin_generation(self) -> None:
        """Each side meets the other's current champion; the state here is what a checkpoint holds."""
        for n in self.names:
            self.opponents[n].network = self.jobs[self._other(n)].method.genome_network(self.champions[self._other(n)])
        self._start = self._state()

    def _end_generation(self) -> None:
        h = self.history
        for n, job in self.jobs.items():
            self.champions[n] = job.champion
            self.champion_fitness[n] = job.champion_fitness
            h[f"{n}_best"].append(job.history["best"][-1])
            h[f"{n}_mean"].append(job.history["mean"][-1])
        for n in self.names:
            other = self._other(n)
            h[f"{n}_vs_first"].append(self.play({n: self.jobs[n].method.genome_network(self.champions[n]),
                                                 other: self.first[other]})[n])
        self.steps += 1
        h["generation"].append(self.steps)
        h["seconds"].append(self._wall)
        h["env_steps"].append(self.env_steps)
        self._phase = 0
        self._start = None
        if self.steps >= self.total_steps:
            self.done = True

    def play(self, networks: Mapping[str, Any], episodes: int | None = None, seed: int = PROGRESS_SEED
             ) -> dict[str, float]:
        """Mean return of each side over ``episodes`` fixed episodes, every side played by its network
        (greedy); episode ``e`` starts with ``reset(seed=seed + e)``."""
        env = self._factory()
        acts = {n: action_function(env.action_space(n)) for n in self.names}
        totals = {n: 0.0 for n in self.names}
        n_episodes = self.progress_episodes if episodes is None else int(episodes)
        for e in range(n_episodes):
            obs, _ = env.reset(seed=seed + e)
            while env.agents:
                actions = {a: acts[a](networks[a].forward(np.asarray(obs[a], np.float32).reshape(1, -1)))[0]
                           for a in env.agents}
                obs, rewards, _, _, _ = env.step(actions)
                for a, r in rewards.items():
                    totals[a] += float(r)
        return {n: t / max(1, n_episodes) for n, t in totals.items()}

    def resume(self, env: Any = None) -> None:
        """Go on after a stop (``env``: a new factory or environment, e.g. the scene reopened); a generation
        cut short restarts from its beginning (same seeds)."""
        if env is not None:
            self._set_source(env)
        if self._start is not None:
            self._restore(self._start)
        elif env is not None:
            for n, job in self.jobs.items():
                job.resume(self._side_factory(n))
        self.done = self.steps >= self.total_steps

    def stop(self, evaluate: bool = True, interrupted: bool = False) -> None:
        self.done = True
        self._interrupted = self._interrupted or interrupted

    @property
    def interrupted(self) -> bool:
        return self._interrupted

    def finish(self) -> None:
        """Nothing left to measure: every generation measured its champions as it ended."""

    def status(self) -> dict[str, str]:
        out = {"generation": f"{self.steps} / {self.total_steps}"}
        for n in self.names:
            if self.history[f"{n}_best"]:
                out[n] = (f"best {self.history[f'{n}_best'][-1]:.3g}, mean {self.history[f'{n}_mean'][-1]:.3g}, "
                          f"vs first {self.history[f'{n}_vs_first'][-1]:.3g}")
        return out

    def summary(self, wall_seconds: float) -> list[str]:
        return [f"co-evolved {self.steps} generations ({self.env_steps} environment steps) in {wall_seconds:.1f} s",
                *(f"{k}: {v}" for k, v in self.status().items())]

    def save_report(self, path: Any, title: str, wall_seconds: float = 0.0) -> Path:
        """Both sides' curves (best / mean against the other's champion, and against its first) as a PNG."""
        return save_coevolution_report(path, self.history, self.names, title, self.summary(wall_seconds))

    def to_models(self, meta: dict[str, Any] | None = None) -> dict[str, Model]:
        """Each side's champion as a model file's ``Model`` (kind ``mlp``), keyed by agent name."""
        out = {}
        for n in self.names:
            job = self.jobs[n]
            m = {"agent": f"coevolution-{job.config.method}", "side": n, "opponent": self._other(n),
                 "training_steps": self.steps, "generations": self.steps, "env_steps": self.env_steps,
                 "seed": self.seed, "champion_fitness": self.champion_fitness[n] if self.steps else None,
                 **dict(meta or {})}
            out[n] = Model(job.method.genome_network(self.champions[n]), job.observation_space, job.action_space,
                           kind="mlp", meta=m)
        return out

    def to_model(self, meta: dict[str, Any] | None = None) -> Model:
        """The first side's champion (``to_models`` gives both)."""
        return self.to_models(meta)[self.names[0]]

    # -- checkpoints -----------------------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        return {
            "format": COEVOLUTION_FORMAT, "version": COEVOLUTION_VERSION, "seed": self.seed,
            "progress_episodes": self.progress_episodes, "generation": self.steps,
            "sides": {n: self.jobs[n].checkpoint() for n in self.names},
            "champions": {n: self.jobs[n].method.genome_to_data(self.champions[n]) for n in self.names},
            "first": {n: self.jobs[n].method.genome_to_data(self._first_genomes[n]) for n in self.names},
            "champion_fitness": {n: (None if math.isinf(v) else v) for n, v in self.champion_fitness.items()},
            "history": json.loads(json.dumps(self.history)),
        }

    def checkpoint(self) -> dict[str, Any]:
        """The run at the start of its running generation, as plain JSON data: both populations (each side's
        ``EvolutionJob.checkpoint``), the champions, the history."""
        return self._start if self._start is not None else self._state()

    def save_checkpoint(self, path: str | os.PathLike[str], settings: Mapping[str, Any] | None = None,
                        **_: Any) -> Path:
        """``checkpoint()`` as a JSON file (written whole or not at all), with ``settings``: what the caller wants
        back on resume (the CLI: target, tree, out). Other keyword arguments do not apply and are ignored."""
        data = {**self.checkpoint(), "settings": dict(settings or {})}
        text = json.dumps(data, allow_nan=False, separators=(",", ":"))
        return atomic_write(path, (text + "\n").encode("utf-8"))

    def continue_from(self, checkpoint: Any) -> list[tuple[str, Any, Any]]:
        """Load a checkpoint (read by ``read_evolution_checkpoint``, its data, or a path) into this freshly built
        job with the same sides and seed; this job's generations apply. Returns the changes as ``(setting, old,
        new)``; a bad checkpoint raises ``ValueError`` (build the job afresh before using it again)."""
        if isinstance(checkpoint, (str, os.PathLike)):
            checkpoint = json.loads(Path(checkpoint).read_text(encoding="utf-8"))
        data = getattr(checkpoint, "data", checkpoint)
        _check_format(data)
        try:
            sides = sorted(data["sides"])
            if sides != sorted(self.names):
                raise ValueError(f"the checkpoint's sides {sides} are not this game's {sorted(self.names)}")
            if int(data["seed"]) != self.seed:
                raise ValueError(f"the checkpoint's seed is {data['seed']}, this run's {self.seed}")
            old = int(data["sides"][self.names[0]]["config"]["generations"])
            total = self.total_steps
            self._restore(data)
        except (KeyError, TypeError, IndexError) as exc:
            what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"broken co-evolution checkpoint: {what}") from None
        self.set_total_steps(total)
        return [("generations", old, total)] if old != total else []

    def set_total_steps(self, total: int) -> None:
        """A new number of generations for the run and for each side's own budget."""
        self.total_steps = int(total)
        self.done = self.steps >= self.total_steps
        for job in self.jobs.values():
            job.total_steps = int(total)
            job.done = job.steps >= job.total_steps or job.solved

    def _restore(self, data: Mapping[str, Any]) -> None:
        for n in self.names:
            side = EvolutionJob.from_checkpoint(data["sides"][n], self._side_factory(n))
            self.jobs[n] = side
            self.champions[n] = side.method.genome_from_data(data["champions"][n])
            self._first_genomes[n] = side.method.genome_from_data(data["first"][n])
            self.first[n] = side.method.genome_network(self._first_genomes[n])
            v = data["champion_fitness"][n]
            self.champion_fitness[n] = -math.inf if v is None else float(v)
        self.steps = int(data["generation"])
        self.history = {k: list(v) for k, v in data["history"].items()}
        self._phase, self._start = 0, None
        self.done = self.steps >= self.total_steps

    @classmethod
    def from_checkpoint(cls, data: Mapping[str, Any], env: Callable[[], ParallelEnv]) -> CoevolutionJob:
        _check_format(data)
        try:
            configs = {n: EvolutionConfig.from_dict(s["config"]) for n, s in data["sides"].items()}
            job = cls(env, configs, seed=int(data["seed"]), progress_episodes=int(data["progress_episodes"]))
            if sorted(configs) != sorted(job.names):
                raise ValueError(f"the checkpoint's sides {sorted(configs)} are not this game's {sorted(job.names)}")
            job._restore(data)
        except (KeyError, TypeError, IndexError) as exc:
            what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"broken co-evolution checkpoint: {what}") from None
        return job

    @classmethod
    def load_checkpoint(cls, path: str | os.PathLike[str], env: Callable[[], ParallelEnv]) -> CoevolutionJob:
        return cls.from_checkpoint(json.loads(Path(path).read_text(encoding="utf-8")), env)


# ---- the report ---------------------------------------------------------------------------------------------


def coevolution_panels(history: Mapping[str, Any], names: Sequence[str]) -> list[Any]:
    """Per side: best and mean fitness against the other's champion, and the champion against the other's
    first champion (the progress measure), by generation, as ``plot.Panel`` objects."""

    gens = np.asarray(history.get("generation") or [], dtype=np.float64)
    panels = []
    for n in names:
        p = Panel(f"{n}: return per generation", x_label="generation")
        if gens.size:
            p.series = [Series(gens, np.asarray(history[f"{n}_mean"], np.float64), BLUE, "mean"),
                        Series(gens, np.asarray(history[f"{n}_best"], np.float64), ORANGE, "best"),
                        Series(gens, np.asarray(history[f"{n}_vs_first"], np.float64), GREEN, "vs first")]
        panels.append(p)
    return panels


def save_coevolution_report(path: str | os.PathLike[str], history: Mapping[str, Any], names: Sequence[str],
                            title: str = "DRLA co-evolution", summary: Sequence[str] = (), width: int = 1200) -> Path:
    """Both sides' curves and a summary text panel as a PNG."""

    panels = coevolution_panels(history, names)
    panels.append(Panel("Summary", text_lines=list(summary) or ["no data yet"]))
    return write_png(path, render_panels(panels, title, width))


def _check_format(data: Any) -> None:
    """``ValueError`` unless ``data`` is a co-evolution checkpoint of the version this DRLA reads."""
    if not isinstance(data, Mapping) or data.get("format") != COEVOLUTION_FORMAT:
        raise ValueError(f"not a DRLA co-evolution checkpoint (format must be {COEVOLUTION_FORMAT!r})")
    if data.get("version") != COEVOLUTION_VERSION:
        raise ValueError(f"unsupported co-evolution checkpoint version {data.get('version')!r}: "
                         f"this DRLA reads version {COEVOLUTION_VERSION}")
