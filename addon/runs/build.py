"""The one assembler: a compiled tree becomes an environment, an agent and a training job.

The panel's sessions, the CLI, the tests and the benchmarks all build through here, so a tree
trains the same way wherever it is started. ``build_job`` returns a ``drla_core`` ``TrainingJob``
(advance in slices, steps, history, status, to_model) whatever the agent kind; ``JOBS`` says how
each kind is built.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...drla_core.rl import train, vector_train
from ...drla_core.rl import dqn
from ...drla_core.rl.ik_job import IKTrainingJob
from ...drla_core.rl.ppo import PPOAgent, PPOConfig
from ...drla_core.rl.sac import SACAgent, SACConfig
from ...drla_core.evolve.coevolution import CoevolutionJob
from ...drla_core.evolve.evolution import EvolutionConfig, EvolutionJob, GAConfig, NoveltyConfig
from ...drla_core.nets.growth import GrowthRule
from ...drla_core.io.model_io import load_model
from ...drla_core.evolve.neat import NEATConfig
from ...drla_core.evolve.es import ESConfig
from ...drla_core.evolve.cmaes import CMAESConfig
from ...drla_core.rl.multi_agent import MultiAgentRun
from ...drla_core.base.vector_env import VectorEnv
from ..scene.scene_env import SceneEnv
from ..scene.scene_team_env import SceneTeamEnv
from ..scene.scene_vector_env import SceneVectorEnv
from ..scene.snapshot import restored_scene
from ..tree.compiler import compile_tree
from ..specs import AgentSpec, CompiledTree, TrainerSpec
from . import demos_use, ik, outputs

#: Training steps when neither the caller, the agent node nor the Trainer node sets them.
DEFAULT_TOTAL_STEPS = 20_000


class BuildError(ValueError):
    """A request the tree's agent kind cannot honour (e.g. DQN settings for a Learned IK tree)."""


def has_env(compiled: CompiledTree) -> bool:
    """Whether the tree trains in the scene (an environment, or several agents' own), or alone (Learned IK)."""
    return compiled.env is not None or bool(compiled.team)


def build_env(compiled: CompiledTree, scene, copies: int | None = None):
    """A ``SceneEnv`` over ``scene`` for the compiled tree (object lookups cached now), or with more than
    one copy (the Environment node's Copies, or ``copies``) a ``SceneVectorEnv`` of them, with one more
    copy aside for evaluations when the Trainer evaluates."""
    if compiled.team:
        return SceneTeamEnv([(m.name, m.env) for m in compiled.team], scene)
    n = int(copies or compiled.env.copies)
    if n > 1:
        # a spare copy for a DQN run's evaluations (an evolution evaluates on the copies themselves)
        evaluates = compiled.trainer is not None and compiled.trainer.eval_interval > 0 and \
            compiled.agent is not None and compiled.agent.kind in ("dqn", "ppo", "sac")
        # physics copies restart together, which an evolution's rounds of episodes allow and DQN does not
        evolves = compiled.agent is not None and compiled.agent.kind == "evolution"
        return SceneVectorEnv(compiled.env, scene, n, eval_copy=evaluates, physics_ok=evolves)
    return SceneEnv(compiled.env, scene)


@contextlib.contextmanager
def one_scene_env(compiled: CompiledTree, scene) -> Iterator[SceneEnv]:
    """The tree's environment as one scene whatever its Copies (recording, checking and playing experts need one
    episode at a time), closed afterwards, the scene restored."""
    compiled.env.copies = 1
    with restored_scene(scene):
        env = build_env(compiled, scene)
        try:
            yield env
        finally:
            env.close()


def total_steps_of(compiled: CompiledTree, requested: int = 0) -> int:
    """Steps to train: the caller's, else the agent node's own (Learned IK's Train Steps), else the
    Trainer's, else ``DEFAULT_TOTAL_STEPS``."""
    own = compiled.agent.config.get("train_steps", 0) if compiled.agent is not None else 0
    trainer = compiled.trainer.total_steps if compiled.trainer is not None else 0
    return int(requested or own or trainer or DEFAULT_TOTAL_STEPS)


# --------------------------------------------------------------------------- DQN
# Our property names -> DQNConfig field names (the agent node mirrors DQNConfig by name).
_ALIASES = {
    "buffer_size": ("buffer_size",),
    "epsilon_start": ("exploration_initial_eps",),
    "epsilon_end": ("exploration_final_eps",),
    "epsilon_fraction": ("exploration_fraction",),
}


def dqn_config(compiled: CompiledTree, total_steps: int | None = None) -> dqn.DQNConfig:
    """The ``DQNConfig`` the agent node describes."""
    steps = total_steps or (compiled.trainer.total_steps if compiled.trainer else None)
    return dqn_config_of(compiled.agent or AgentSpec(""), steps)


def dqn_config_of(spec: AgentSpec, steps: int | None = None) -> dqn.DQNConfig:
    """The ``DQNConfig`` one DQN Agent node describes (``steps``: the run's length, for the schedules)."""
    fields = {f.name for f in dataclasses.fields(dqn.DQNConfig)}
    values: dict[str, Any] = {}
    for ours, value in spec.config.items():
        for name in _ALIASES.get(ours, (ours,)):
            if name in fields:
                values[name] = value
                break
    if isinstance(values.get("loss"), str):
        values["loss"] = values["loss"].lower()
    values["hidden"] = [tuple(h) for h in spec.hidden]
    if steps and "total_timesteps" in fields:
        values["total_timesteps"] = int(steps)
    return dqn.DQNConfig(**values)


def build_agent(compiled: CompiledTree, env, seed: int | None = None, total_steps: int | None = None,
                config: dqn.DQNConfig | None = None) -> dqn.DQNAgent:
    """A ``DQNAgent`` with the tree's hyper-parameters (or ``config``) and network for ``env``'s spaces."""
    if seed is None:
        seed = compiled.trainer.seed if compiled.trainer else 0
    config = config if config is not None else dqn_config(compiled, total_steps)
    if isinstance(env, VectorEnv):
        return dqn.DQNAgent(env.single_observation_space, env.single_action_space, config, seed)
    return dqn.DQNAgent(env.observation_space, env.action_space, config, seed)


def build_run(compiled: CompiledTree, env, agent, total_steps: int | None = None, **kw) -> train.TrainingRun:
    """A ``TrainingRun`` following the Trainer node (``kw`` overrides: seed, callbacks, checkpoints...)."""
    t = compiled.trainer or TrainerSpec("")
    steps = int(total_steps or t.total_steps)
    kw.setdefault("seed", t.seed)
    kw.setdefault("eval_interval", t.eval_interval)
    kw.setdefault("eval_episodes", t.eval_episodes)
    if t.checkpoint_interval and t.output_path:
        kw.setdefault("checkpoint_interval", t.checkpoint_interval)
        kw.setdefault("checkpoint_path", outputs.checkpoint_path(t.output_path, compiled.tree))
    kw.setdefault("save_fn", save_checkpoint_model)
    if isinstance(env, VectorEnv):  # scene copies: one network call for all of them, evaluations on the spare copy
        eval_env = getattr(env, "eval_env", None)
        if eval_env is None:
            kw["eval_interval"] = 0
        return vector_train.VectorTrainingRun(env, agent, steps, eval_env=eval_env, **kw)
    return train.TrainingRun(env, agent, steps, **kw)


def save_checkpoint_model(run, path: str) -> None:
    """A panel run's Checkpoint Every: the model so far (the Output folder created when it is not there yet)."""
    outputs.write_model(path, run.to_model({"steps": run.steps}))


def config_with(compiled: CompiledTree, total_steps: int, overrides: dict[str, Any],
                config: dqn.DQNConfig | None = None) -> dqn.DQNConfig:
    """The tree's ``DQNConfig`` (or ``config``) with ``overrides`` (the CLI's flags) replacing fields."""
    fields = dataclasses.asdict(config if config is not None else dqn_config(compiled, total_steps))
    fields.update(overrides, total_timesteps=int(total_steps))
    try:
        return dqn.DQNConfig(**fields)
    except (TypeError, ValueError) as exc:
        raise BuildError(str(exc)) from exc


def checkpoint_into(compiled: CompiledTree, checkpoint_dir: str, run_kw: dict[str, Any]) -> None:
    """A Trainer with Checkpoint Every but no Output folder checkpoints into ``checkpoint_dir`` (when given): its
    interval and path set in ``run_kw`` (unless given there)."""
    trainer = compiled.trainer
    if trainer is not None and trainer.checkpoint_interval and not trainer.output_path and checkpoint_dir:
        run_kw.setdefault("checkpoint_interval", trainer.checkpoint_interval)
        run_kw.setdefault("checkpoint_path", outputs.checkpoint_path(checkpoint_dir, compiled.tree))


def build_dqn_job(compiled: CompiledTree, env, *, seed: int, total_steps: int, checkpoint_dir: str = "",
                  config: dqn.DQNConfig | None = None, overrides: dict[str, Any] | None = None,
                  grow: int | None = None, **run_kw) -> train.TrainingRun:
    """DQN: the agent and its ``TrainingRun`` on ``env``. A Trainer with Checkpoint Every but no Output
    folder checkpoints into ``checkpoint_dir``; ``overrides`` replace ``DQNConfig`` fields of the node's
    (the CLI's flags). The Network node's Grow on Plateau (or ``grow``, the CLI's ``--grow K``) adds a
    ``GrowthRule`` to the run's callbacks (``growth_rule``)."""
    if overrides:
        config = config_with(compiled, total_steps, overrides, config)
    trainer = compiled.trainer
    checkpoint_into(compiled, checkpoint_dir, run_kw)
    rule = growth_rule(compiled, grow, run_kw.get("eval_interval", trainer.eval_interval if trainer else 0))
    if rule is not None:
        run_kw["callbacks"] = [*run_kw.get("callbacks", ()), rule]
    agent = build_agent(compiled, env, seed=seed, total_steps=total_steps, config=config)
    if trainer is not None and trainer.demonstration:  # the Trainer's Demonstration: learnt from first
        try:
            demos_use.learn_from(agent, trainer.demonstration, seed)
        except ValueError as exc:
            raise BuildError(str(exc)) from None
    return build_run(compiled, env, agent, total_steps, seed=seed, **run_kw)


def grown_config(compiled: CompiledTree, checkpoint, total_steps: int) -> dqn.DQNConfig | None:
    """The tree's ``DQNConfig`` with the hidden layers a DQN checkpoint's network grew to (None: it did not grow),
    so Resume builds the network the run had when it stopped."""
    saved = getattr(checkpoint, "meta", {}).get("agent") or {}
    hidden = (getattr(checkpoint, "config", None) or {}).get("hidden")
    if not saved.get("growth") or hidden is None or compiled.agent is None or compiled.agent.kind != "dqn":
        return None
    return dataclasses.replace(dqn_config(compiled, total_steps), hidden=[tuple(h) if isinstance(h, list) else h
                                                                           for h in hidden])


#: ``--grow K`` on a tree whose Network node does not grow: each hidden layer x4, up to 256 units, 4 times
#: at most (what ``drla train <env> --grow K`` does on a built-in environment).
CLI_GROWTH = {"how": "widen", "factor": 4, "max_size": 256, "max_layers": 4, "max_grows": 4, "min_delta": 0.0}


def growth_rule(compiled: CompiledTree, grow: int | None = None, eval_interval: int = 0) -> GrowthRule | None:
    """The Network node's Grow on Plateau as a ``GrowthRule`` (None when off); ``grow`` (the CLI's ``--grow K``)
    turns it on or sets its patience. Refused (``BuildError``) when the run never evaluates: the rule watches
    the evaluation return."""
    growth = dict(compiled.agent.config.get("growth") or {}) if compiled.agent is not None else {}
    if grow:
        growth = {**CLI_GROWTH, **growth, "patience": int(grow)}
    if not growth:
        return None
    where = f"the Network node '{growth['node']}'" if growth.get("node") else "--grow"
    if not eval_interval:
        raise BuildError(f"{where} grows the network when the evaluation return stops improving, but this run never "
                         "evaluates: set the Trainer's Evaluate Every (or --eval-interval)")
    try:
        return GrowthRule(**{k: v for k, v in growth.items() if k != "node"})
    except ValueError as exc:
        raise BuildError(f"{where}: {exc}") from exc


# --------------------------------------------------------------------------- Learned IK
#: Run options the panel and the CLI may pass to any kind; a kind without episodes ignores them.
_RUN_OPTIONS = ("callbacks", "checkpoint_dir", "checkpoint_interval", "checkpoint_path", "eval_interval",
                "eval_episodes")


def build_ik_job(compiled: CompiledTree, env=None, *, seed: int, total_steps: int,
                 overrides: dict[str, Any] | None = None, **options) -> IKTrainingJob:
    """Learned IK: an ``IKSolver`` for the armature (from the node's Model file when set), trained by
    the node's method for its Train Seconds at most."""
    if overrides:
        names = ", ".join("--" + name.replace("_", "-") for name in overrides)
        what = "is a DQN setting" if len(overrides) == 1 else "are DQN settings"
        raise BuildError(f"{names} {what}, but tree '{compiled.tree}' trains a Learned IK Agent "
                         "(its settings are on the Learned IK Agent node)")
    _only_run_options("build_ik_job", options)
    cfg = compiled.agent.config
    return IKTrainingJob(ik.new_solver(compiled, seed), method=cfg.get("method", "SELF_SUPERVISED"),
                         total_steps=total_steps,
                         max_seconds=cfg.get("train_seconds") or None, refine_iters=cfg.get("refine_iters", 3))


def _only_run_options(builder: str, options: dict[str, Any]) -> None:
    """A builder that takes only the run options (checkpoints, evaluations) refuses any other keyword."""
    unknown = set(options) - set(_RUN_OPTIONS)
    if unknown:
        raise TypeError(f"{builder}: unknown options {sorted(unknown)}")


# --------------------------------------------------------------------------- several named agents
def build_team_job(compiled: CompiledTree, env, *, seed: int, total_steps: int,
                   overrides: dict[str, Any] | None = None, **options) -> MultiAgentRun:
    """A ``MultiAgentRun`` over a ``SceneTeamEnv``: one DQN agent per Named Agent, learning or frozen
    (a frozen one from its Model file, else from its own network); the trainer's Self-Play Turn, if any."""
    if overrides:
        raise BuildError("DQN settings from the command line apply to one agent; a multi-agent tree sets each "
                         "agent's on its DQN Agent node")
    _only_run_options("build_team_job", options)
    agents: dict[str, Any] = {}
    modes: dict[str, str] = {}
    for i, member in enumerate(compiled.team):
        if member.mode == "frozen" and member.model_path:
            try:
                agents[member.name] = load_model(member.model_path)
            except (OSError, ValueError) as exc:
                raise BuildError(f"agent '{member.name}': cannot load its model {member.model_path}: {exc}") from exc
        else:
            agents[member.name] = dqn.DQNAgent(env.observation_space(member.name), env.action_space(member.name),
                                               dqn_config_of(member.agent, total_steps), seed + i)
        modes[member.name] = member.mode
    return MultiAgentRun(env, agents, total_steps, modes=modes, seed=seed,
                         swap_every=int(compiled.agent.config.get("swap_every", 0)))


# --------------------------------------------------------------------------- evolution
class _GenerationCheckpoints:
    """What an evolution job offers ``--resume``, Resume and ``--checkpoint-interval``: checkpoint files in JSON,
    ``save_fn(job, checkpoint_path.format(step=generation))`` called every ``checkpoint_interval`` generations
    when the caller set it (the CLI: the champions so far and the population checkpoint), and
    ``load_checkpoint`` (the job's ``continue_from``: returns the changed settings)."""

    #: The suffix of this job's checkpoint files (a DQN run's are ``.npz``).
    checkpoint_suffix = ".json"

    def __init__(self, *args, checkpoint_interval: int = 0, checkpoint_path: str = "", **kw) -> None:
        super().__init__(*args, **kw)
        self.checkpoint_interval, self.checkpoint_path = int(checkpoint_interval or 0), checkpoint_path
        self.save_fn = None

    def advance(self, max_steps=None, max_seconds=None) -> int:
        """The job's ``advance``, one generation at a time when it checkpoints, so that every multiple of
        ``checkpoint_interval`` is saved as it is reached, however many generations fit into the slice."""
        k = self.checkpoint_interval
        if k <= 0 or self.save_fn is None:
            return super().advance(max_steps, max_seconds)
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        finished = 0
        while not self.done and (max_steps is None or finished < max_steps):
            before = self.steps
            left = None if deadline is None else max(0.0, deadline - time.perf_counter())
            got = super().advance(1, left)
            finished += got
            if self.steps // k > before // k:
                self.save_fn(self, self.checkpoint_path.format(step=self.steps))
            if got == 0 or (deadline is not None and time.perf_counter() >= deadline):
                break
        return finished

    def load_checkpoint(self, checkpoint):
        return self.continue_from(checkpoint)


class SceneEvolutionJob(_GenerationCheckpoints, EvolutionJob):
    """An ``EvolutionJob`` whose history also speaks the live curve's words: the best fitness of each
    generation as its 'returns', the mean as its second curve, with their titles and the x axis in
    generations (the same lists, not copies: they grow as the run goes)."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self._curve_names()

    def _curve_names(self) -> None:
        h = self.history
        h["episode_returns"], h["episode_end_steps"] = h["best"], h["generation"]
        h["losses"], h["loss_steps"] = h["mean"], h["generation"]
        h["curve_titles"] = {"RETURN": "Best fitness per generation", "LOSS": "Mean fitness per generation"}
        h["x_label"] = "generations"

    def resume(self, env=None) -> None:
        super().resume(env)
        self._curve_names()  # a checkpoint's history arrives as separate lists


def evolution_config(compiled: CompiledTree, generations: int) -> EvolutionConfig:
    """The ``EvolutionConfig`` the Evolution Agent (and Novelty) node describes."""
    return evolution_config_of(compiled.agent, generations)


def evolution_config_of(spec: AgentSpec, generations: int) -> EvolutionConfig:
    """The ``EvolutionConfig`` one Evolution Agent node (with its Novelty node) describes."""
    c = spec.config
    population = int(c.get("population_size", 32))
    ga = GAConfig(population_size=population, hidden=[tuple(h) for h in spec.hidden],
                  selection=c.get("selection", "tournament"), crossover=c.get("crossover", "uniform"),
                  mutation_rate=float(c.get("mutation_rate", 0.1)), mutation_sigma=float(c.get("mutation_sigma", 0.1)),
                  elites=int(c.get("elites", 2)))
    n = c.get("novelty")
    novelty = None if not n else NoveltyConfig(k=n["k"], archive=n["archive"], threshold=n["threshold"],
                                               add_probability=n["add_probability"],
                                               fitness_weight=n["fitness_weight"])
    neat = NEATConfig(population_size=population, elitism=min(int(c.get("elites", 2)), population - 1))
    method, hidden, sigma = c.get("method", "ga"), [tuple(h) for h in spec.hidden], float(c.get("sigma", 0.2))
    es = ESConfig(population_size=population, hidden=hidden, sigma=sigma,
                  learning_rate=float(c.get("learning_rate", 0.1))) if method == "es" else None
    cmaes = CMAESConfig(population_size=population, hidden=hidden, sigma=sigma,
                        covariance=c.get("covariance", "auto")) if method == "cmaes" else None
    return EvolutionConfig(method=method, generations=int(generations), episodes=int(c.get("episodes", 1)),
                           novelty=novelty, ga=ga, neat=neat, es=es, cmaes=cmaes)


def behavior_of(compiled: CompiledTree):
    """The Novelty node's behaviour: a slice of the episode's final observation (``None``: the default)."""
    n = compiled.agent.config.get("novelty")
    if not n:
        return None
    start, end = int(n["behavior_start"]), int(n["behavior_end"])

    def behavior(obs, info):
        return np.asarray(obs, dtype=np.float64).reshape(-1)[start:end]
    return behavior


def build_evolution_job(compiled: CompiledTree, env, *, seed: int, total_steps: int,
                        overrides: dict[str, Any] | None = None, **options) -> SceneEvolutionJob:
    """Evolution: a population evaluated on the tree's ``SceneEnv``, one individual after another, or on its
    scene copies (a ``SceneVectorEnv``: as many individuals at once as there are copies; copies cannot hold
    rigid bodies yet); ``total_steps`` counts generations."""
    if overrides:
        raise BuildError("DQN settings from the command line do not apply to an Evolution Agent "
                         "(its settings are on the Evolution Agent node)")
    _only_run_options("build_evolution_job", options)
    try:
        config = evolution_config(compiled, total_steps)
        behavior = behavior_of(compiled)
        saving = {k: options[k] for k in ("checkpoint_interval", "checkpoint_path") if options.get(k)}
        if behavior is None:
            return SceneEvolutionJob(env, config, seed=seed, **saving)
        return SceneEvolutionJob(env, config, seed=seed, behavior=behavior, **saving)
    except ValueError as exc:
        raise BuildError(str(exc)) from exc


# --------------------------------------------------------------------------- co-evolution (two named agents)
class SceneCoevolutionJob(_GenerationCheckpoints, CoevolutionJob):
    """A ``CoevolutionJob`` on the scene's two named agents, whose history also speaks the live curve's
    words: the first side's best fitness per generation as its 'returns', the second side's as its
    second curve. ``policies`` gives each side's champion (what Play runs)."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self._curve_names()

    def _curve_names(self) -> None:
        h, (a, b) = self.history, self.names
        h["episode_returns"], h["episode_end_steps"] = h[f"{a}_best"], h["generation"]
        h["losses"], h["loss_steps"] = h[f"{b}_best"], h["generation"]
        h["curve_titles"] = {"RETURN": f"{a}: best fitness per generation",
                             "LOSS": f"{b}: best fitness per generation"}
        h["x_label"] = "generations"

    def _restore(self, data) -> None:
        super()._restore(data)
        self._curve_names()  # a restored history arrives as separate lists

    def policies(self, meta=None):
        """Each side's champion as a model, by agent name (stored in the .blend for Play)."""
        return self.to_models(meta)


def build_coevolution_job(compiled: CompiledTree, env, *, seed: int, total_steps: int,
                          overrides: dict[str, Any] | None = None, **options) -> SceneCoevolutionJob:
    """Co-evolution: two Named Agents with Evolution Agents on a ``SceneTeamEnv``, each side's population
    evaluated one individual after another on the scene against the other side's current champion;
    ``total_steps`` counts generations. Each new champion also plays the other side's first champion on
    the Evolution Agents' Episodes (the most of the two) for the 'vs first' curves."""
    if overrides:
        raise BuildError("DQN settings from the command line do not apply to a co-evolution "
                         "(each side's settings are on its Evolution Agent node)")
    _only_run_options("build_coevolution_job", options)
    configs = {m.name: evolution_config_of(m.agent, total_steps) for m in compiled.team}
    if any(c.novelty is not None for c in configs.values()):
        raise BuildError("a co-evolution scores each side against the other: unlink the Novelty node")
    saving = {k: options[k] for k in ("checkpoint_interval", "checkpoint_path") if options.get(k)}
    try:
        return SceneCoevolutionJob(env, configs, seed=seed,
                                   progress_episodes=int(compiled.agent.config.get("episodes", 1)), **saving)
    except ValueError as exc:
        raise BuildError(str(exc)) from exc


# --------------------------------------------------------------------------- SAC (continuous actions)
def sac_config_of(spec: AgentSpec, steps: int | None = None) -> SACConfig:
    """The ``SACConfig`` one SAC Agent node describes (its properties carry ``SACConfig``'s names)."""
    names = {f.name for f in dataclasses.fields(SACConfig)}
    values: dict[str, Any] = {k: v for k, v in spec.config.items() if k in names}
    values["hidden"] = [tuple(h) for h in spec.hidden]
    if steps:
        values["total_timesteps"] = int(steps)
    return SACConfig(**values)


def build_sac_job(compiled: CompiledTree, env, *, seed: int, total_steps: int, checkpoint_dir: str = "",
                  config: SACConfig | None = None, overrides: dict[str, Any] | None = None,
                  **run_kw) -> train.TrainingRun:
    """SAC: the agent and its ``TrainingRun`` on ``env`` (a scene with Motor or Bone Rotation actions), as DQN's
    (evaluations, checkpoints); ``config`` (a resumed run's) replaces the node's, ``overrides`` replace its fields
    (the CLI's flags)."""
    config = _config(SACConfig, config or sac_config_of(compiled.agent, total_steps), total_steps, overrides)
    agent = _policy_agent(SACAgent, "SAC Agent", compiled, env, config, seed, checkpoint_dir, run_kw)
    return build_run(compiled, env, agent, total_steps, seed=seed, **run_kw)


def _config(cls, config, total_steps: int, overrides: dict[str, Any] | None):
    """``config`` (a ``cls``: the node's, or a resumed run's) for a run of ``total_steps``, ``overrides`` (the CLI's
    flags) replacing its fields; a value the config refuses as ``BuildError``."""
    try:
        return cls(**{**dataclasses.asdict(config), "total_timesteps": int(total_steps), **(overrides or {})})
    except (TypeError, ValueError) as exc:
        raise BuildError(str(exc)) from exc


def _policy_agent(cls, label: str, compiled: CompiledTree, env, config, seed: int, checkpoint_dir: str,
                  run_kw: dict[str, Any]):
    """SAC's or PPO's agent (``cls``) for ``env``'s spaces (one scene's, or each copy's), its checkpoints in
    ``run_kw`` (``checkpoint_into``); the agent's refusal as ``BuildError`` (``label: why``)."""
    checkpoint_into(compiled, checkpoint_dir, run_kw)
    vector = isinstance(env, VectorEnv)
    obs_space = env.single_observation_space if vector else env.observation_space
    act_space = env.single_action_space if vector else env.action_space
    try:
        return cls(obs_space, act_space, config, seed)
    except (TypeError, ValueError) as exc:
        raise BuildError(f"{label}: {exc}") from exc


# --------------------------------------------------------------------------- PPO (a set of actions or continuous)
def ppo_config_of(spec: AgentSpec, steps: int | None = None) -> PPOConfig:
    """The ``PPOConfig`` one PPO Agent node describes (its properties carry ``PPOConfig``'s names)."""
    names = {f.name for f in dataclasses.fields(PPOConfig)}
    values: dict[str, Any] = {k: v for k, v in spec.config.items() if k in names}
    values["hidden"] = [tuple(h) for h in spec.hidden]
    if steps:
        values["total_timesteps"] = int(steps)
    return PPOConfig(**values)


def build_ppo_job(compiled: CompiledTree, env, *, seed: int, total_steps: int, checkpoint_dir: str = "",
                  config: PPOConfig | None = None, overrides: dict[str, Any] | None = None,
                  **run_kw) -> train.TrainingRun:
    """PPO: the agent and its ``TrainingRun`` on ``env`` (a set of actions, masked by their Conditions through
    the loop's ``info``, or continuous ones), as DQN's (evaluations, checkpoints, the Trainer's Demonstration
    cloned first); ``config`` (a resumed run's) replaces the node's, ``overrides`` replace its fields (the CLI's
    flags that PPO shares with DQN; another is refused)."""
    other = sorted(set(overrides or ()) - {f.name for f in dataclasses.fields(PPOConfig)})
    if other:
        flag = "--" + other[0].replace("_", "-")
        raise BuildError(f"{flag}: a DQN setting; tree {compiled.tree!r} trains PPO, which does not use it "
                         f"(drop {flag})")
    config = _config(PPOConfig, config or ppo_config_of(compiled.agent, total_steps), total_steps, overrides)
    agent = _policy_agent(PPOAgent, "PPO Agent", compiled, env, config, seed, checkpoint_dir, run_kw)
    trainer = compiled.trainer
    if trainer is not None and trainer.demonstration:  # the Trainer's Demonstration: cloned first
        try:
            demos_use.learn_from(agent, trainer.demonstration, seed)
        except ValueError as exc:
            raise BuildError(str(exc)) from None
    return build_run(compiled, env, agent, total_steps, seed=seed, **run_kw)


#: How each agent kind (``AgentSpec.kind``) is built into a training job.
JOBS = {"dqn": build_dqn_job, "ppo": build_ppo_job, "sac": build_sac_job, "ik": build_ik_job,
        "team": build_team_job, "evolution": build_evolution_job, "coevolution": build_coevolution_job}


def build_job(compiled: CompiledTree, env=None, *, seed: int = 0, total_steps: int = 0, **kw):
    """The tree's training job, whatever its agent kind (``env`` is None for kinds that need none)."""
    return JOBS[compiled.agent.kind](compiled, env, seed=seed, total_steps=total_steps_of(compiled, total_steps),
                                     **kw)


def train_tree(tree, scene, total_steps: int | None = None, **kw):
    """Compile, build and train a DQN ``tree`` in ``scene`` to the end, the scene restored afterwards
    (scripts and tests). Returns ``(run, agent, compiled)``; the Export nodes' files are written."""
    compiled = compile_tree(tree, scene)
    with restored_scene(scene):
        env = build_env(compiled, scene)
        try:
            agent = build_agent(compiled, env, total_steps=total_steps)
            run = build_run(compiled, env, agent, total_steps, **kw).run()
        finally:
            env.close()
    outputs.write_models(outputs.export_paths(compiled), run.to_model({"tree": compiled.tree}))
    return run, agent, compiled
