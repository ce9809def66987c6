"""Neuroevolution on fixed-topology networks: a population held as one float32 matrix, evaluated batched.

* ``PopulationMLP``: the layout of ``mlp.MLP`` (one flat vector per network: each layer's ``(in, out)``
  weights then its biases), for a whole population at once: ``params`` is ``(individuals, n_params)`` and
  ``forward(params, x)`` gives every individual's outputs in one call (a batched matmul per layer). Any row
  loads into an ``MLP`` (``to_mlp``) and exports with ``model_io``.
* GA operators (Holland; Goldberg 1989), all taking a ``numpy.random.Generator`` so a seed fixes a run:
  ``roulette_select`` (fitness-proportionate, shifted so negative fitness works), ``tournament_select``,
  ``rank_select`` (linear ranking, Baker 1985), ``uniform_crossover``, ``one_point_crossover`` (cut only at
  layer boundaries), ``gaussian_mutation``; ``GA.tell`` adds elitism.
* Novelty search (Lehman & Stanley 2011): ``novelty_scores`` (mean distance to the k nearest behaviours
  among the population and the archive) and ``NoveltyArchive`` (adaptive threshold or probability).
* ``Evaluation``: one generation's episodes, every individual and episode on a pool of environments, one
  batched forward per step, pausable between steps (so a session can advance it in time slices).
* ``EvolutionJob``: a ``TrainingJob`` (see ``agents/base.py``) over GA, NEAT, OpenAI-ES or CMA-ES, with
  novelty, checkpoints as JSON and a report picture.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..base.env import Env
from ..base.files import atomic_write
from ..io.model_io import Model
from .neat import NEAT, NEATConfig
from ..base.spaces import Box, Discrete
from .evaluation import Evaluation, action_function, default_behavior, output_activation_for
from .ga import GA, GAConfig
from .es import ESConfig, OpenAIES
from .cmaes import CMAESConfig, CMAESMethod
from .novelty import NoveltyArchive, NoveltyConfig, novelty_scores
from .population import (
    SELECTIONS,
    PopulationMLP,
    gaussian_mutation,
    one_point_crossover,
    rank_select,
    roulette_select,
    tournament_select,
    uniform_crossover,
)
from .checkpoint import (
    CHECKPOINT_FORMAT,
    CHECKPOINT_VERSION,
    EvolutionCheckpoint,
    check_evolution_checkpoint,
    read_evolution_checkpoint,
    rng_from_state,
    rng_state,
)
from .report import evolution_panels, save_evolution_report

__all__ = [
    "PopulationMLP", "roulette_select", "tournament_select", "rank_select", "SELECTIONS", "uniform_crossover",
    "one_point_crossover", "gaussian_mutation", "GAConfig", "GA", "novelty_scores", "NoveltyConfig",
    "NoveltyArchive", "Evaluation", "EvolutionConfig", "EvolutionJob", "save_evolution_report",
    "evolution_panels", "CHECKPOINT_FORMAT", "rng_state", "rng_from_state", "EvolutionCheckpoint",
    "read_evolution_checkpoint", "check_evolution_checkpoint",
]


# ---- the job ---------------------------------------------------------------------------------------------


class Method(Protocol):
    """What ``EvolutionJob`` needs of GA and NEAT."""

    def __len__(self) -> int: ...
    def policy(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]: ...
    def tell(self, scores: np.ndarray) -> None: ...
    def genome(self, i: int) -> Any: ...
    def genome_network(self, genome: Any) -> Any: ...
    def genome_to_data(self, genome: Any) -> Any: ...
    def genome_from_data(self, data: Any) -> Any: ...
    def state(self) -> dict[str, Any]: ...
    def load_state(self, state: Mapping[str, Any]) -> None: ...
    def status(self) -> dict[str, str]: ...


@dataclass
class EvolutionConfig:
    """One evolution run: the method and its settings, the budget, how individuals are scored."""

    method: str = "ga"
    """ga, es (OpenAI-ES), cmaes (CMA-ES): on fixed-topology MLPs (``FIXED_METHODS``); or neat."""
    generations: int = 100
    episodes: int = 1
    """Episodes per individual per generation; fitness = their mean return."""
    novelty: NoveltyConfig | None = None
    """Score by novelty (of ``info["behavior"]``, else the final observation) instead of fitness."""
    ga: GAConfig = field(default_factory=GAConfig)
    neat: Any = None
    """A ``neat.NEATConfig`` (its defaults when None)."""
    es: Any = None
    """An ``es.ESConfig`` (its defaults when None)."""
    cmaes: Any = None
    """A ``cmaes.CMAESConfig`` (its defaults when None)."""
    target_return: float | None = None
    """Stop once the champion's greedy mean return over ``solve_episodes`` fresh episodes reaches this."""
    solve_episodes: int = 20
    solve_seed: int = 10_000
    max_envs: int = 1024
    """Most environments made from a factory (one per running episode)."""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.neat is not None:
            d["neat"] = asdict(self.neat)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EvolutionConfig:

        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"evolution config: unknown key {unknown[0]!r}")
        kw = dict(d)
        kw["ga"] = GAConfig(**kw.get("ga") or {})
        kw["novelty"] = NoveltyConfig(**kw["novelty"]) if kw.get("novelty") else None
        kw["neat"] = NEATConfig(**kw["neat"]) if kw.get("neat") else None
        for name, (settings, _) in FIXED_METHODS.items():
            if name != "ga":
                kw[name] = settings(**kw[name]) if kw.get(name) else None
        return cls(**kw)


#: The methods on fixed-topology MLPs: ``method`` -> (its settings, in the ``EvolutionConfig`` field of that name;
#: its class)
FIXED_METHODS: dict[str, tuple[type, Callable[..., Method]]] = {
    "ga": (GAConfig, GA), "es": (ESConfig, OpenAIES), "cmaes": (CMAESConfig, CMAESMethod)}

EnvSource = Callable[[], Env] | Sequence[Env] | Env


class EvolutionJob:
    """An evolution run as a ``TrainingJob``, advanced in time-boxed slices.

    ``steps`` counts finished generations and ``total_steps`` is ``config.generations`` (the env steps run
    are ``env_steps``). A generation may span slices: ``advance`` stops between two environment steps when
    ``max_seconds`` is up and the next call goes on from there; ``max_steps`` counts whole generations. The
    greedy check of a candidate champion (``target_return``) runs whole, at the end of its generation.
    Checkpoints hold the state at the start of the running generation (episode seeds come from
    ``(seed, generation)``, so a resumed run repeats it exactly).

    Args:
        env: a factory ``() -> Env`` (the job makes one env per running episode, up to ``max_envs``), a list
            of envs (episodes run on them in turn) or one env. Gymnasium API; Box or Discrete actions.
        config: ``EvolutionConfig``.
        seed: fixes the whole run.
        behavior: ``(final_obs, final_info) -> vector`` for novelty (default ``default_behavior``).
        meta: copied into the champion model's meta.
    """

    def __init__(self, env: EnvSource, config: EvolutionConfig | None = None, seed: int = 0,
                 behavior: Callable[[Any, Mapping[str, Any]], np.ndarray] = default_behavior) -> None:
        self.config = config = config or EvolutionConfig()
        if config.generations < 1 or config.episodes < 1:
            raise ValueError("generations and episodes must be at least 1")
        self.seed = int(seed)
        self.behavior = behavior
        self._set_env(env)
        probe = self.envs[0]  # (a vector of copies: one copy's spaces)
        self.observation_space = getattr(probe, "single_observation_space", probe.observation_space)
        self.action_space = getattr(probe, "single_action_space", probe.action_space)
        self._act = action_function(self.action_space)
        self.input_size = int(np.prod(self.observation_space.shape))
        self.output_size = self.action_space.n if isinstance(self.action_space, Discrete) \
            else int(np.prod(self.action_space.shape))
        self.rng = np.random.default_rng(self.seed)
        self.method: Method = self._make_method()
        self.archive = NoveltyArchive(config.novelty) if config.novelty is not None else None
        self.done = False
        self._interrupted = False
        self.steps = 0
        self.total_steps = config.generations
        self.env_steps = 0
        self.solved = False
        self.champion: Any = None
        self.champion_fitness = -math.inf
        self.champion_generation = -1
        self.champion_eval: float | None = None
        self.history: dict[str, Any] = {"generation": [], "best": [], "mean": [], "novelty": [],
                                        "champion": [], "env_steps": [], "evals": [], "seconds": []}
        self._eval: Evaluation | None = None
        self._solve_eval: Evaluation | None = None
        self._candidate: tuple[Any, float] = (None, -math.inf)
        self._pending_scores: np.ndarray | None = None  # the generation's scores, told after its champion check
        self._wall = 0.0

    # -- set-up --------------------------------------------------------------------------------------------

    def _set_env(self, env: EnvSource) -> None:
        if isinstance(env, Env) or callable(getattr(env, "restart", None)):  # an env, or a vector of copies
            self.envs: list[Env] = [env]  # type: ignore[list-item]
            self._factory: Callable[[], Env] | None = None
        elif callable(env):
            self._factory = env
            self.envs = [env()]
        else:
            self.envs = list(env)
            self._factory = None
            if not self.envs:
                raise ValueError("EvolutionJob: the list of environments is empty")

    def _pool(self, n: int) -> list[Env]:
        """``n`` environments when a factory can make them, else the ones given (just the first when it steps
        a batch itself: see ``Evaluation``)."""
        batch = getattr(self.envs[0], "batch", None)
        if isinstance(self.action_space, Discrete) and callable(batch) and batch(1) is not None:
            return self.envs[:1]
        if callable(getattr(self.envs[0], "restart", None)):  # a vector of copies: its copies are the pool
            return self.envs[:1]
        if self._factory is not None:
            while len(self.envs) < min(n, self.config.max_envs):
                self.envs.append(self._factory())
        return self.envs[:max(1, min(n, len(self.envs)))]

    def _make_method(self) -> Method:
        c = self.config
        if c.method in FIXED_METHODS:
            settings_type, method_type = FIXED_METHODS[c.method]
            settings = getattr(c, c.method) or settings_type()
            hidden = [tuple(h) if isinstance(h, list) else h for h in settings.hidden]
            net = PopulationMLP(self.input_size, hidden, self.output_size, output_activation_for(self.action_space))
            return method_type(net, settings, self.rng)
        if c.method == "neat":

            return NEAT(self.input_size, self.output_size, c.neat or NEATConfig(), self.rng,
                        output_activation=output_activation_for(self.action_space))
        raise ValueError(f"unknown evolution method {c.method!r}; choose {', '.join(FIXED_METHODS)} or neat")

    # -- TrainingJob -----------------------------------------------------------------------------------------

    def _episode_seeds(self) -> list[int]:
        gen_rng = np.random.default_rng([self.seed, self.steps])
        return [int(s) for s in gen_rng.integers(0, 2**31 - 1, size=self.config.episodes)]

    def advance(self, max_steps: int | None = None, max_seconds: float | None = None) -> int:
        """Run up to ``max_steps`` more generations (default: to the end) or until ``max_seconds`` pass;
        returns the generations finished in this call."""
        t0 = time.perf_counter()
        deadline = None if max_seconds is None else t0 + max_seconds
        finished = 0
        try:
            while not self.done and (max_steps is None or finished < max_steps):
                if not self._step_generation(deadline):
                    break
                finished += 1
                if deadline is not None and time.perf_counter() >= deadline:
                    break
        finally:
            self._wall += time.perf_counter() - t0
        return finished

    def _step_generation(self, deadline: float | None) -> bool:
        """Advance the running generation; True when it finished."""
        if self._solve_eval is not None:  # the previous generation's champion check is still running
            return self._finish_solve_check(deadline)
        if self._eval is None:
            self._eval = self._generation_evaluation(len(self.method), self._episode_seeds())
        ev = self._eval
        steps_before = ev.env_steps
        finished = ev.run(deadline)
        self.env_steps += ev.env_steps - steps_before
        if not finished:
            return False
        self._eval = None
        fitness = ev.fitness()
        novelty = None
        scores = fitness
        if self.archive is not None:
            scores, novelty = self.archive.score(ev.mean_behaviors(), fitness, self.rng)
        best = int(np.argmax(fitness))
        candidate = self.method.genome(best)
        target = self.config.target_return
        if fitness[best] > self.champion_fitness and (target is None or self.champion_eval is None):
            self._set_champion(candidate, float(fitness[best]), None)
        h = self.history
        h["generation"].append(self.steps + 1)
        h["best"].append(float(fitness[best]))
        h["mean"].append(float(fitness.mean()))
        h["novelty"].append(None if novelty is None else float(novelty.mean()))
        h["champion"].append(self.champion_fitness)
        h["env_steps"].append(self.env_steps)
        h["seconds"].append(self._wall)
        if target is not None and fitness[best] >= target and not self._same_genome(candidate, self.champion,
                                                                                     checked=True):
            # the check first, then breeding only if the run goes on (the check draws nothing from the RNG,
            # so the next generation is the same either way; a solved run does not breed one it won't use)
            self._candidate = (candidate, float(fitness[best]))
            self._pending_scores = scores
            greedy = self._check_alongside(ev, best, candidate)
            if greedy is not None:
                return self._end_check(greedy)
            self._solve_eval = self._champion_evaluation(candidate)
            return self._finish_solve_check(None)  # to the end: a checkpoint never falls inside it
        self.method.tell(scores)
        return self._end_generation()

    def _generation_evaluation(self, n: int, seeds: list[int]) -> Evaluation:
        """The running generation's episodes (a subclass may evaluate them elsewhere: worker processes)."""
        target = self.config.target_return
        alongside = target is not None and getattr(self.method, "check_alongside", True)  # (see es.py)
        return Evaluation(self.method.policy(), n, seeds, self._pool(n * len(seeds)), self._act, self.behavior,
                          check_seeds=self._check_seeds() if alongside else (), check_target=target)

    def _set_champion(self, genome: Any, fitness: float, greedy: float | None) -> None:
        self.champion, self.champion_fitness, self.champion_eval = genome, fitness, greedy
        self.champion_generation = self.steps

    def _same_genome(self, a: Any, b: Any, checked: bool) -> bool:
        """Whether ``a`` is ``b`` (the champion) and, with ``checked``, ``b`` was already given its greedy check."""
        if b is None or (checked and self.champion_eval is None):
            return False
        return bool(self.method.genome_to_data(a) == self.method.genome_to_data(b))

    def _check_seeds(self) -> list[int]:
        c = self.config
        return [c.solve_seed + i for i in range(c.solve_episodes)]

    def _champion_evaluation(self, genome: Any) -> Evaluation:
        """The greedy check of a candidate champion: ``solve_episodes`` fixed episodes, not used for training."""
        network = self.method.genome_network(genome)
        seeds = self._check_seeds()
        policy = network.task_policy() if getattr(network, "recurrent", False) else \
            (lambda idx, obs: network.forward(obs))  # (recurrent: a state per episode)
        return Evaluation(policy, 1, seeds, self._pool(len(seeds)), self._act, self.behavior)

    def _check_alongside(self, ev: Evaluation, best: int, genome: Any) -> float | None:
        """The candidate's greedy mean from the check its generation played alongside (``Evaluation``), when it
        played it whole and the exported network (``genome_network``, what ``to_model`` saves) chooses every one
        of its actions there: then that network, playing the check itself, would see the same observations
        and score the same. None otherwise (the check then runs on its own, as ``_champion_evaluation``)."""
        got = ev.check_result(best)
        act = getattr(self._act, "array", None)
        if got is None or act is None:
            return None
        returns, steps, obs, actions = got
        if not np.array_equal(act(self.method.genome_network(genome).forward(obs)), actions):
            return None
        self.env_steps += int(steps.sum())
        return float(returns.reshape(1, -1).mean(axis=1)[0])  # (as Evaluation.fitness averages the check)

    def _finish_solve_check(self, deadline: float | None) -> bool:
        ev = self._solve_eval
        assert ev is not None
        before = ev.env_steps
        finished = ev.run(deadline)
        self.env_steps += ev.env_steps - before
        if not finished:
            return False
        self._solve_eval = None
        return self._end_check(float(ev.fitness()[0]))

    def _end_check(self, greedy: float) -> bool:
        """The candidate's check scored ``greedy``: a new champion, solved, or the next generation bred."""
        genome, fitness = self._candidate
        if self.champion_eval is None or greedy > self.champion_eval:  # a checked champion beats an unchecked one
            self._set_champion(genome, fitness, greedy)
        self.history["evals"].append((self.steps + 1, greedy))
        if self.config.target_return is not None and greedy >= self.config.target_return:
            self.solved = True
            self.done = True
        elif self._pending_scores is not None:
            self.method.tell(self._pending_scores)
        self._pending_scores = None
        return self._end_generation()

    def _end_generation(self) -> bool:
        self.steps += 1
        if self.steps >= self.total_steps:
            self.done = True
        return True

    def resume(self, env: EnvSource | None = None) -> None:
        """Go on after a stop (a closed scene, a loaded checkpoint): new environments if given; a
        generation cut short restarts from its beginning (same seeds, so the same result)."""
        if env is not None:
            self._set_env(env)
        if self._eval is not None or self._solve_eval is not None:
            self.env_steps -= self._in_flight_steps()  # counted again when the generation reruns
            self._eval = None
            if self._solve_eval is not None:
                self._solve_eval = self._champion_evaluation(self._candidate[0])
        self.done = self.steps >= self.total_steps or self.solved

    def _in_flight_steps(self) -> int:
        return sum(ev.env_steps for ev in (self._eval, self._solve_eval) if ev is not None)

    def stop(self, evaluate: bool = True, interrupted: bool = False) -> None:
        """End the run now (Ctrl-C, Stop): the champion so far is the result."""
        self.done = True
        self._interrupted = self._interrupted or interrupted

    @property
    def interrupted(self) -> bool:
        return self._interrupted

    def finish(self) -> None:
        """Nothing left to measure: each generation scored its champion as it ended."""

    def summary(self, wall_seconds: float) -> list[str]:
        """Generations, environment steps and time, then the run's figures (``status``)."""
        return [f"evolved {self.steps} generations ({self.env_steps} environment steps) in {wall_seconds:.1f} s",
                *(f"{k}: {v}" for k, v in self.status().items())]

    def save_report(self, path: Any, title: str, wall_seconds: float = 0.0) -> Path:
        """Best / mean / champion fitness (and novelty) by generation, and the summary."""
        return save_evolution_report(path, self.history, title, self.summary(wall_seconds))

    def status(self) -> dict[str, str]:
        h = self.history
        out = {"generation": f"{self.steps} / {self.total_steps}"}
        if h["best"]:
            out["best"] = f"{h['best'][-1]:.4g}"
            out["mean"] = f"{h['mean'][-1]:.4g}"
            out["champion"] = f"{self.champion_fitness:.4g} (gen {self.champion_generation + 1})"
        if h["novelty"] and h["novelty"][-1] is not None:
            out["novelty"] = f"{h['novelty'][-1]:.3g}"
            assert self.archive is not None
            out["archive"] = str(len(self.archive.items))
        out.update(self.method.status())
        if self.champion_eval is not None:
            out["greedy"] = f"{self.champion_eval:.4g} over {self.config.solve_episodes} episodes"
        return out

    def champion_network(self) -> Any:
        if self.champion is None:
            raise RuntimeError("no champion yet: advance at least one generation")
        return self.method.genome_network(self.champion)

    def champion_policy(self) -> Callable[[Any], Any]:
        """The champion's greedy action for one observation (what Play runs; a recurrent champion's state runs on
        from call to call: ``champion_network().reset()`` to start an episode afresh)."""
        network = self.champion_network()
        return lambda obs: self._act(network.forward(np.asarray(obs, np.float32).reshape(1, -1)))[0]

    def to_model(self, meta: dict[str, Any] | None = None) -> Model:
        """The champion (best fitness so far) as a model file's ``Model`` (kind ``mlp``)."""
        m = {"agent": f"evolution-{self.config.method}" + ("-novelty" if self.archive else ""),
             "training_steps": self.steps, "generations": self.steps, "env_steps": self.env_steps,
             "seed": self.seed, "champion_fitness": self.champion_fitness, **dict(meta or {})}
        extra: dict[str, Any] = {}
        if isinstance(self.action_space, Box):
            extra["action_transform"] = "tanh outputs scaled linearly from [-1, 1] onto the action box"
        return Model(self.champion_network(), self.observation_space, self.action_space, kind="mlp", meta=m,
                     extra=extra)

    # -- checkpoints -----------------------------------------------------------------------------------------

    def checkpoint(self, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The run as plain JSON data (no pickle): config, generation, RNG, population, archive, history;
        ``settings``: what the caller wants back on resume (the CLI: target, tree, out)."""
        if self._solve_eval is not None:
            raise RuntimeError("checkpoint between generations (the champion check is running)")
        return {
            "format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "kind": "evolution",
            "settings": dict(settings or {}), "seed": self.seed,
            "config": self.config.to_dict(), "generation": self.steps,
            "env_steps": self.env_steps - self._in_flight_steps(),
            "rng": rng_state(self.rng), "method": self.method.state(),
            "archive": None if self.archive is None else self.archive.state(),
            "champion": None if self.champion is None else self.method.genome_to_data(self.champion),
            "champion_fitness": self.champion_fitness if self.champion is not None else None,
            "champion_generation": self.champion_generation, "champion_eval": self.champion_eval,
            "solved": self.solved, "history": self.history,
        }

    def save_checkpoint(self, path: str | os.PathLike[str], settings: Mapping[str, Any] | None = None,
                        **_: Any) -> Path:
        """``checkpoint(settings)`` as a JSON file (written whole or not at all). Other keyword arguments
        (a DQN run's ``max_buffer_bytes``) do not apply and are ignored."""
        text = json.dumps(self.checkpoint(settings), allow_nan=False, separators=(",", ":"))
        return atomic_write(path, (text + "\n").encode("utf-8"))

    def continue_from(self, checkpoint: Any) -> list[tuple[str, Any, Any]]:
        """Load a checkpoint (an ``EvolutionCheckpoint``, its data, or a path) into this freshly built job,
        whose configuration may differ only in ``generations``; returns the changes as ``(setting, old,
        new)``. A bad checkpoint raises ``ValueError`` (build the job afresh before using it again)."""
        if isinstance(checkpoint, (str, os.PathLike)):
            checkpoint = read_evolution_checkpoint(checkpoint)
        data = checkpoint.data if isinstance(checkpoint, EvolutionCheckpoint) else checkpoint
        check_evolution_checkpoint(data)
        try:
            saved = json.loads(json.dumps(EvolutionConfig.from_dict(data["config"]).to_dict()))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"broken evolution checkpoint: {exc}") from None
        now = json.loads(json.dumps(self.config.to_dict()))  # as JSON has it: tuples become lists
        differ = sorted(k for k in now if k != "generations" and now[k] != saved.get(k))
        if differ:
            raise ValueError(f"the checkpoint was evolved with other settings ({', '.join(differ)}): "
                             "a population continues only with the settings it was made with")
        if int(data.get("seed", -1)) != self.seed:
            raise ValueError(f"the checkpoint's seed is {data.get('seed')}, this run's {self.seed}")
        total = self.total_steps
        try:
            self._load(data)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"broken evolution checkpoint: {what}") from None
        old = int(saved["generations"])
        self.done = self.steps >= self.total_steps or self.solved
        return [("generations", old, total)] if old != total else []

    @classmethod
    def from_checkpoint(cls, data: Mapping[str, Any], env: EnvSource,
                        behavior: Callable[[Any, Mapping[str, Any]], np.ndarray] = default_behavior) -> EvolutionJob:
        check_evolution_checkpoint(data)
        try:
            job = cls(env, EvolutionConfig.from_dict(data["config"]), seed=int(data["seed"]), behavior=behavior)
            job._load(data)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"broken evolution checkpoint: {what}") from None
        return job

    def _load(self, data: Mapping[str, Any]) -> None:
        self.rng = rng_from_state(data["rng"])
        self.method.rng = self.rng  # type: ignore[attr-defined]
        self.method.load_state(data["method"])
        if self.archive is not None:
            self.archive.load_state(data["archive"])
        self.steps, self.env_steps = int(data["generation"]), int(data["env_steps"])
        if data["champion"] is not None:
            self.champion = self.method.genome_from_data(data["champion"])
            self.champion_fitness = float(data["champion_fitness"])
        self.champion_generation = int(data["champion_generation"])
        self.champion_eval = None if data["champion_eval"] is None else float(data["champion_eval"])
        self.solved = bool(data["solved"])
        h = data["history"]
        self.history = {k: list(h[k]) for k in self.history}
        self.history["evals"] = [tuple(e) for e in self.history["evals"]]
        self.resume()

    @classmethod
    def load_checkpoint(cls, path: str | os.PathLike[str], env: EnvSource,
                        behavior: Callable[[Any, Mapping[str, Any]], np.ndarray] = default_behavior) -> EvolutionJob:
        return cls.from_checkpoint(json.loads(Path(path).read_text(encoding="utf-8")), env, behavior)
