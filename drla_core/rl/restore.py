"""Restoring a training run from a checkpoint: the agent, its replay buffer, the environment mid-episode, the
run's counters and curves; the settings the user changed since apply and are recorded, a different network
or space is refused (``CheckpointError``)."""

from __future__ import annotations

import copy
import math
from dataclasses import fields
from typing import Any

import numpy as np

from ..base.schedules import linear_schedule
from .checkpoint import (
    FIXED_FIELDS,
    Checkpoint,
    CheckpointError,
    _EXPLORATION_FIELDS,
    _copies,
    _decode,
    _restorable,
    _restore_callbacks,
    _set_rng,
)

__all__ = ["restore_run", "describe_network"]


def _history(history_cls: type, data: dict[str, Any]) -> Any:
    names = {f.name for f in fields(history_cls)}
    values = {k: copy.deepcopy(v) for k, v in data.items() if k in names}  # the run's own lists, not the file's
    for key in ("evals", "eval_metric_totals", "setting_changes"):
        if key in values:
            values[key] = [tuple(x) for x in values[key]]
    for key in ("final_eval", "final_eval_metric_totals"):
        if values.get(key) is not None:
            values[key] = tuple(values[key])
    return history_cls(**values)


def describe_network(arch: dict[str, Any]) -> str:
    """An ``MLP.architecture()`` as ``4 -> 64 relu -> 2 linear``; several networks' (SAC: ``{"actor": ..,
    "critic": ..}``) one after the other."""
    if "input_size" not in arch:
        return "; ".join(f"{name} {describe_network(each)}" for name, each in arch.items())
    return " -> ".join([str(arch["input_size"])] + [f"{h['size']} {h['activation']}" for h in arch["hidden"]]
                       + [f"{arch['output_size']} {arch['output_activation']}"])


def _check_fits(ckpt: Checkpoint, run: Any) -> None:
    """Refuse a run the checkpoint cannot continue, saying what differs."""
    meta, agent = ckpt.meta, run.agent
    saved = meta["agent"]
    own = callable(getattr(agent, "load_checkpoint_state", None))  # an agent that restores itself (PPO, SAC)
    kind, saved_kind = str(getattr(agent, "checkpoint_kind", "dqn")), str(meta.get("kind", "dqn"))
    if saved_kind != kind:
        raise CheckpointError(f"the checkpoint is of a {saved_kind.upper()} run, this run trains {kind.upper()}; "
                              f"resume it with the agent it was trained with (--agent {saved_kind})")
    if own:
        why = agent.checkpoint_mismatch(saved)
        if why:
            raise CheckpointError(why)
    elif saved["architecture"] != agent.q_network.architecture():
        raise CheckpointError(f"the network differs: the checkpoint has {describe_network(saved['architecture'])}, "
                              f"this run {describe_network(agent.q_network.architecture())}; a resumed run keeps its "
                              "network (drop the change to the hidden layers, or start a new run)")
    for what, space in (("observation", agent.observation_space), ("action", agent.action_space)):
        if saved[f"{what}_space"] != space.to_dict():
            raise CheckpointError(f"the {what} space differs: the checkpoint has {saved[f'{what}_space']}, this run "
                                  f"{space.to_dict()}; a checkpoint continues on the environment it was trained on")
    vector = hasattr(run, "num_envs")
    copies = int(getattr(run, "num_envs", 1))
    if bool(meta["run"]["vector"]) != vector or int(meta["run"]["num_envs"]) != copies:
        raise CheckpointError(f"the checkpoint is of a run with {meta['run']['num_envs']} environment copies, this "
                              f"run has {copies}; resume with the same number of copies")
    buf = meta["buffer"]
    if buf["stored"] != "none" and int(buf["capacity"]) != agent.replay_buffer.capacity:
        raise CheckpointError(f"the replay buffer size differs: the checkpoint's holds {buf['capacity']} "
                              f"transitions, this run's {agent.replay_buffer.capacity}; keep --buffer-size")
    if not own and len(ckpt.arrays["agent.q_params"]) != agent.q_network.params.size:
        raise CheckpointError("the checkpoint's parameters do not fit the network")


def _changes(ckpt: Checkpoint, run: Any) -> list[tuple[str, Any, Any]]:
    """(setting, checkpoint's value, this run's value) for every setting the user changed."""
    out: list[tuple[str, Any, Any]] = []
    old_config, new_config = ckpt.config, run.agent.config.to_dict()
    for name, new in new_config.items():
        if name == "total_timesteps":  # follows the run's total_steps, compared below
            continue
        old = old_config.get(name)
        if old != new:
            if name in FIXED_FIELDS:
                continue  # the architecture check above already refused a different network
            out.append((name, old, new))
    saved_run = ckpt.meta["run"]
    for name in ("total_steps", "eval_interval", "eval_episodes", "checkpoint_interval"):
        if saved_run[name] != getattr(run, name):
            out.append((name, saved_run[name], getattr(run, name)))
    return out


def _next(saved: float | None, old_interval: int, new_interval: int, steps: int) -> float:
    if new_interval <= 0:
        return math.inf
    if new_interval == old_interval and saved is not None:
        return saved
    return (steps // new_interval + 1) * new_interval


def _restore_agent(agent: Any, ckpt: Checkpoint, changed: set[str], total_steps: int) -> None:
    """Networks, optimiser, generator, counters and keep-best; lr and eps come from the agent's (new) config."""
    arrays, saved_agent = ckpt.arrays, ckpt.meta["agent"]
    np.copyto(agent.q_network.params, arrays["agent.q_params"])
    np.copyto(agent.target_network.params, arrays["agent.target_params"])
    opt = agent.optimizer
    np.copyto(opt._m, arrays["agent.adam_m_scaled"])
    np.copyto(opt._v, arrays["agent.adam_v_scaled"])
    opt.t = int(saved_agent["adam"]["t"])  # lr and eps come from this run's config (a changed one applies)
    _set_rng(agent.rng, saved_agent["rng"], "agent's")
    agent.num_timesteps = int(saved_agent["num_timesteps"])
    agent.n_updates = int(saved_agent["n_updates"])
    agent._last_target_update = int(saved_agent["last_target_update"])
    best = saved_agent["best_mean_return"]
    agent.best_mean_return = -np.inf if best is None else float(best)
    agent.best_params = arrays["agent.best_params"].copy() if "agent.best_params" in arrays else None
    agent.total_timesteps = max(int(total_steps), 1)
    agent.epsilon = float(saved_agent["epsilon"])
    if isinstance(saved_agent.get("origin"), str):
        agent.origin = saved_agent["origin"]
    if saved_agent.get("growth"):
        agent.growth_history = [dict(record) for record in saved_agent["growth"]]
    if changed & {*_EXPLORATION_FIELDS, "total_steps"}:
        cfg = agent.config
        agent.epsilon = linear_schedule(cfg.exploration_initial_eps, cfg.exploration_final_eps,
                                        cfg.exploration_fraction, agent.num_timesteps / agent.total_timesteps)


def _restore_buffer(buf: Any, ckpt: Checkpoint) -> None:
    """The replay memory as saved: all of it in place, or its newest transitions, or none."""
    arrays, saved_buf = ckpt.arrays, ckpt.meta["buffer"]
    buf.clear()
    names: tuple[str, ...] = ("obs", "next_obs", "actions", "rewards", "terminated", "truncated")
    if "buffer.next_masks" in arrays:  # the action masks of the next states
        names += ("next_masks",)
        buf._mask_rows(arrays["buffer.next_masks"].shape[-1])
    if saved_buf["stored"] == "all":
        size = int(saved_buf["size"])
        for name in names:
            getattr(buf, name)[:size] = arrays[f"buffer.{name}"]
        buf.pos, buf.full = int(saved_buf["pos"]), bool(saved_buf["full"])
    elif saved_buf["stored"] == "newest":
        buf.add_batch(**{name: arrays[f"buffer.{name}"] for name in names})


def _restore_env(run: Any, ckpt: Checkpoint) -> None:
    """The episode the env was in (pure envs), or its generator and a fresh episode at the first slice."""
    meta, arrays, saved_run = ckpt.meta, ckpt.arrays, ckpt.meta["run"]
    env_meta = meta["env"]
    envs = _copies(run.env)
    if len(env_meta["copies"]) != len(envs):
        raise CheckpointError(f"the checkpoint has {len(env_meta['copies'])} environment states, this run "
                              f"{len(envs)} environments")
    for env, saved_env in zip(envs, env_meta["copies"]):
        if saved_env["rng"] is not None:
            _set_rng(env.np_random, saved_env["rng"], "environment's")
    if run.eval_env is not None and env_meta.get("eval_rng") is not None:
        _set_rng(run.eval_env.np_random, env_meta["eval_rng"], "evaluation environment's")
    continue_episode = bool(env_meta["restorable"]) and _restorable(run.env)
    if continue_episode:
        for i, (env, saved_env) in enumerate(zip(envs, env_meta["copies"])):
            episode = saved_env["episode"] or {}
            if set(episode) != set(env.episode_attrs):
                raise CheckpointError(f"environment copy {i}: the checkpoint holds {sorted(episode)}, this "
                                      f"environment keeps {sorted(env.episode_attrs)}")
            for name, value in episode.items():
                setattr(env, name, _decode(value, arrays))
        if hasattr(run.env, "_started"):  # a SyncVectorEnv: its copies are mid-episode, no reset needed
            run.env._started = True
    if continue_episode or _replayed(run, ckpt):
        run._obs = arrays["run.obs"].copy() if saved_run["has_obs"] else None
        run._mask = arrays["run.mask"].copy() if "run.mask" in arrays else None
        run._episode_return, run._episode_length = float(saved_run["episode_return"]), int(saved_run["episode_length"])
        run._metric_sum, run._metric_count = float(saved_run["metric_sum"]), int(saved_run["metric_count"])
        if saved_run["vector"]:
            for name in ("returns", "lengths", "metric_sums", "metric_counts"):
                np.copyto(getattr(run, f"_{name}"), arrays[f"run.{name}"])
    else:
        run._obs = None  # the first slice starts a fresh episode (``TrainingRun._continue``)


def _replayed(run: Any, ckpt: Checkpoint) -> bool:
    """A scene saved mid-episode (``checkpoint._replay_log``): its episode played again from its start with the
    saved actions. True when it ends on the saved observation and generator state, bit for bit (the run then
    continues that episode); else the generator is put back and the run starts a fresh episode."""
    saved_env = ckpt.meta["env"]["copies"][0]
    replay = saved_env.get("replay")
    envs = _copies(run.env)
    if not replay or envs[0] is not run.env or not callable(getattr(run.env, "replay_episode", None)) or \
            "run.obs" not in ckpt.arrays:
        return False
    env = run.env
    try:
        obs = env.replay_episode(replay["rng"], list(ckpt.arrays[replay["actions"]]))
    except RuntimeError:  # the episode ended before its last action: not the episode saved
        obs = None
    same = obs is not None and np.array_equal(np.asarray(obs), ckpt.arrays["run.obs"]) and (
        saved_env["rng"] is None or env.np_random.bit_generator.state == saved_env["rng"])
    if saved_env["rng"] is not None:
        _set_rng(env.np_random, saved_env["rng"], "environment's")
    return bool(same)


def restore_run(run: Any, ckpt: Checkpoint) -> list[tuple[str, Any, Any]]:
    """Load ``ckpt`` into ``run``, a freshly built run (its agent built from the checkpoint's config, plus any
    change the user made) that has not started.

    What the user changed since (learning rate, exploration, total steps, ...) applies and is recorded in
    ``run.history.setting_changes`` as ``(step, setting, old, new)``; a different network, space or number of
    copies is refused (``CheckpointError``). Returns the changes as ``(setting, old, new)``.
    """
    if run._started:
        raise CheckpointError("restore_run needs a run that has not started")
    try:
        return _restore(run, ckpt)
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a file edited by hand, not one we wrote
        raise CheckpointError(f"{ckpt.path} holds invalid data ({type(exc).__name__}: {exc}); the run it was "
                              "loaded into is unusable, build a new one") from exc


def _restore(run: Any, ckpt: Checkpoint) -> list[tuple[str, Any, Any]]:
    _check_fits(ckpt, run)
    changes = _changes(ckpt, run)
    meta, saved_run = ckpt.meta, ckpt.meta["run"]

    if callable(getattr(run.agent, "load_checkpoint_state", None)):
        prefix = "agent."
        _set_rng(run.agent.rng, ckpt.meta["agent"]["rng"], "agent's")
        run.agent.load_checkpoint_state(ckpt.meta["agent"], {k[len(prefix):]: v for k, v in ckpt.arrays.items()
                                                             if k.startswith(prefix)}, run.total_steps)
    else:
        _restore_agent(run.agent, ckpt, {name for name, _, _ in changes}, run.total_steps)
    if getattr(run.agent, "replay_buffer", None) is not None:  # DQN's, SAC's
        _restore_buffer(run.agent.replay_buffer, ckpt)
    # the run: counters, clocks, curves
    run.steps, run.episodes = int(saved_run["steps"]), int(saved_run["episodes"])
    for name in ("train_seconds", "eval_seconds", "cpu_seconds", "eval_cpu_seconds"):
        setattr(run, name, float(saved_run[name]))
    run.history = _history(type(run.history), meta["history"])
    run.history.interrupted = False
    run.history.final_eval = run.history.final_eval_metric_totals = None
    run.history.setting_changes.extend((run.steps, name, old, new) for name, old, new in changes)
    run._next_eval = _next(saved_run["next_eval"], saved_run["eval_interval"], run.eval_interval, run.steps)
    run._next_checkpoint = _next(saved_run["next_checkpoint"], saved_run["checkpoint_interval"],
                                 run.checkpoint_interval, run.steps)

    _restore_env(run, ckpt)
    _restore_callbacks(run, ckpt)
    run._started = True
    run._continuing = True
    return changes

