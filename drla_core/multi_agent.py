"""Several named agents acting at once: PettingZoo's parallel API, a checker, and a run that trains them together.

``ParallelEnv`` has PettingZoo's parallel semantics: every live agent acts each step and the
results come back as dicts keyed by agent name. An agent whose ``terminations`` or
``truncations`` entry is True leaves ``agents`` after that step; the episode is over when
``agents`` is empty. ``MultiAgentRun`` gives each name its own learner (``mode="train"``, any
agent with ``act``/``observe``/``predict``, e.g. a ``DQNAgent``) or a fixed policy
(``mode="frozen"``: greedy and deterministic, from a loaded ``model_io.Model`` or from an agent's
current network), keeps one ``History`` per agent, and exports one model per trained agent.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .env import EnvCheckError
from .metrics import history_metric_text
from .plot import Panel, line_panels, render_panels
from .png import write_png
from .model_io import Model, check_fits
from .spaces import Box, Discrete, Space
from .train import EVAL_SEED_OFFSET, History, TrainingError

__all__ = ["ParallelEnv", "check_parallel_env", "MultiAgentRun", "MODES", "evaluate_parallel"]

MODES = ("train", "frozen")


class ParallelEnv:
    """Base class with PettingZoo's parallel API.

    ``reset(seed=None, options=None) -> (observations, infos)`` and
    ``step(actions) -> (observations, rewards, terminations, truncations, infos)``, each a dict keyed by
    the names in ``agents`` (the live agents; ``possible_agents`` lists every name the env can have).
    Spaces are per agent: ``observation_space(name)``, ``action_space(name)``. Randomness comes from
    ``self.np_random``, re-seeded by ``reset(seed=...)``.
    """

    possible_agents: list[str]
    agents: list[str]
    metadata: dict[str, Any] = {}
    #: An info key with a 0/1 task success per event, read per agent (as ``Env.task_metric``).
    task_metric: str | None = None
    _np_random: np.random.Generator | None = None

    @property
    def np_random(self) -> np.random.Generator:
        if self._np_random is None:
            self._np_random = np.random.default_rng()
        return self._np_random

    @property
    def num_agents(self) -> int:
        return len(self.agents)

    @property
    def max_num_agents(self) -> int:
        return len(self.possible_agents)

    def observation_space(self, agent: str) -> Space:
        raise NotImplementedError

    def action_space(self, agent: str) -> Space:
        raise NotImplementedError

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Start an episode; subclasses call ``super().reset(seed=seed)`` first."""
        if seed is not None:
            self._np_random = np.random.default_rng(seed)
        return {}, {}  # pragma: no cover - overridden

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        raise NotImplementedError

    def close(self) -> None:
        """Release resources (scene environments restore the scene)."""


# ---- the checker ------------------------------------------------------------------------------------


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise EnvCheckError(msg)


def _check_keys(name: str, d: Any, agents: list[str]) -> None:
    _require(isinstance(d, dict), f"{name} must be a dict keyed by agent name")
    _require(sorted(d) == sorted(agents), f"{name} must have one entry per live agent {sorted(agents)}, "
                                          f"got {sorted(d)}")


def _check_spaces(env: ParallelEnv) -> None:
    names = env.possible_agents
    _require(isinstance(names, list) and len(names) > 0 and all(isinstance(a, str) for a in names),
             "possible_agents must be a non-empty list of names")
    _require(len(set(names)) == len(names), "possible_agents must not repeat a name")
    for a in names:
        _require(isinstance(env.observation_space(a), Space), f"observation_space({a!r}) must be a drla_core Space")
        _require(isinstance(env.action_space(a), (Box, Discrete)), f"action_space({a!r}) must be Box or Discrete")


def _check_step(env: ParallelEnv, live: list[str], result: Any) -> tuple[dict, dict, dict, dict, dict]:
    _require(isinstance(result, tuple) and len(result) == 5,
             "step() must return (observations, rewards, terminations, truncations, infos)")
    obs, rewards, terms, truncs, infos = result
    for name, d in (("observations", obs), ("rewards", rewards), ("terminations", terms), ("truncations", truncs),
                    ("infos", infos)):
        _check_keys(f"step() {name}", d, live)
    for a in live:
        _require(env.observation_space(a).contains(obs[a]), f"step() observation of {a!r} not in its space")
        r = rewards[a]
        _require(isinstance(r, (float, int, np.floating, np.integer)) and not isinstance(r, bool) and np.isfinite(r),
                 f"reward of {a!r} must be a finite number, got {r!r}")
        _require(isinstance(terms[a], (bool, np.bool_)) and isinstance(truncs[a], (bool, np.bool_)),
                 f"terminations and truncations of {a!r} must be bools")
        _require(isinstance(infos[a], dict), f"info of {a!r} must be a dict")
    ended = {a for a in live if terms[a] or truncs[a]}
    _require(sorted(env.agents) == sorted(a for a in live if a not in ended),
             f"after a step, agents must be the live agents that did not end: {sorted(env.agents)}")
    return obs, rewards, terms, truncs, infos


def check_parallel_env(env: ParallelEnv, steps: int = 50, seed: int = 123) -> None:
    """Check ``env`` against the parallel contract; raise ``EnvCheckError`` naming the first problem.

    Checks: names and per-agent spaces; reset returns ``(observations, infos)`` keyed by ``agents``,
    a subset of ``possible_agents``; every step's five dicts are keyed by the agents that acted,
    observations lie in their spaces, rewards are finite numbers; agents that ended leave ``agents``;
    the same seed and actions reproduce the same observations and rewards (determinism).
    """
    _check_spaces(env)

    def rollout() -> list[Any]:
        out = env.reset(seed=seed)
        _require(isinstance(out, tuple) and len(out) == 2, "reset() must return (observations, infos)")
        obs, infos = out
        _require(len(env.agents) > 0 and set(env.agents) <= set(env.possible_agents),
                 "after reset, agents must be a non-empty subset of possible_agents")
        _check_keys("reset() observations", obs, env.agents)
        _check_keys("reset() infos", infos, env.agents)
        for a in env.agents:
            _require(env.observation_space(a).contains(obs[a]), f"reset() observation of {a!r} not in its space")
        rng = np.random.default_rng(seed)
        trace: list[Any] = [{a: np.array(o, copy=True) for a, o in obs.items()}]
        for _ in range(steps):
            live = list(env.agents)
            actions = {a: env.action_space(a).sample(rng) for a in live}
            obs, rewards, terms, truncs, _ = _check_step(env, live, env.step(actions))
            trace.append(({a: np.array(o, copy=True) for a, o in obs.items()}, dict(rewards), dict(terms),
                          dict(truncs)))
            if not env.agents:
                obs, _ = env.reset()
                trace.append({a: np.array(o, copy=True) for a, o in obs.items()})
        return trace

    def same(x: Any, y: Any) -> bool:
        if isinstance(x, tuple):
            return all(same(a, b) for a, b in zip(x, y))
        return x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)

    first, second = rollout(), rollout()
    for i, (a, b) in enumerate(zip(first, second)):
        _require(same(a, b), f"not deterministic: reset(seed={seed}) with the same actions differs at entry {i}")


def evaluate_parallel(env: ParallelEnv, policies: Mapping[str, Callable[[Any], Any]], episodes: int,
                      seed: int | None, max_steps_per_episode: int = 1_000_000
                      ) -> dict[str, tuple[float, Any, float, int]]:
    """Each agent acting with its policy (``obs -> action``) for ``episodes`` episodes, the first reset with
    ``seed``: name -> (mean return, task metric rate or None, metric sum, metric count)."""
    missing = [a for a in env.possible_agents if a not in policies]
    if missing:
        raise ValueError(f"no policy for agent {missing[0]!r} (the environment's agents: {env.possible_agents})")
    key = env.task_metric
    returns: dict[str, list[float]] = {a: [] for a in policies}
    sums = {a: 0.0 for a in policies}
    counts = {a: 0 for a in policies}
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed if episode == 0 else None)
        totals = {a: 0.0 for a in env.agents}
        for _ in range(max_steps_per_episode):
            if not env.agents:
                break
            live = list(env.agents)
            obs, rewards, _, _, infos = env.step({a: policies[a](obs[a]) for a in live})
            for a in live:
                totals[a] += float(rewards[a])
                if key is not None and key in infos[a]:
                    sums[a] += float(infos[a][key])
                    counts[a] += 1
        for a, total in totals.items():
            returns[a].append(total)
    return {a: (float(np.mean(returns[a])) if returns[a] else 0.0, sums[a] / counts[a] if counts[a] else None,
                sums[a], counts[a]) for a in policies}


# ---- training several agents together -------------------------------------------------------------


class _Slot:
    """One named agent of a run: its learner or policy, its mode and its episode accounting."""

    def __init__(self, name: str, agent: Any, mode: str, history: History) -> None:
        self.name, self.agent, self.mode, self.history = name, agent, mode, history
        # frozen: greedy and deterministic; a Model's act is its argmax, an agent's predict likewise
        self.greedy: Callable[[Any], Any] = agent.act if isinstance(agent, Model) else agent.predict
        self.episodes = 0
        self.clear()

    def clear(self) -> None:
        self.ret, self.length, self.metric_sum, self.metric_count = 0.0, 0, 0.0, 0

    def act(self, obs: Any) -> Any:
        return self.agent.act(obs, explore=True) if self.mode == "train" else self.greedy(obs)


class MultiAgentRun:
    """Trains the agents of a ``ParallelEnv`` together, each learning or frozen; a ``TrainingJob``.

    Args:
        env: the parallel environment.
        agents: name -> a learner (``act(obs, explore)``, ``observe(...)``, ``predict``; e.g. ``DQNAgent``)
            or a ``model_io.Model``. Every name of ``env.possible_agents`` needs one.
        total_steps: environment steps (all agents act in one step).
        modes: name -> ``"train"`` or ``"frozen"``; by default learners train and models are frozen.
            A frozen learner acts with ``predict`` (its current network, greedy) and never observes.
        seed: seeds the env's first reset; evaluations use ``seed + EVAL_SEED_OFFSET``.
        eval_env: a second env of the same kind for greedy evaluations (every agent greedy).
        eval_interval: evaluate every this many steps (0: never, and no final evaluation).
        eval_episodes: episodes per evaluation.
        swap_every: self-play (0: off, every learner learns at every step). With it, one learning agent at a
            time learns, for this many steps, while the other learners act greedily from their network as it
            was when their turn ended (a frozen snapshot, ML-Agents' self-play); then the next one learns. Each
            learner's exploration schedule runs over its own share of ``total_steps``.
    """

    def __init__(self, env: ParallelEnv, agents: Mapping[str, Any], total_steps: int, *,
                 modes: Mapping[str, str] | None = None, seed: int | None = 0, eval_env: ParallelEnv | None = None,
                 eval_interval: int = 0, eval_episodes: int = 10, swap_every: int = 0) -> None:
        missing = [a for a in env.possible_agents if a not in agents]
        extra = [a for a in agents if a not in env.possible_agents]
        if missing or extra:
            raise ValueError(f"MultiAgentRun needs one agent per name of the environment {env.possible_agents}; "
                             + (f"missing {missing}" if missing else f"unknown {extra}"))
        if eval_interval > 0 and eval_env is None:
            raise ValueError("MultiAgentRun evaluates on a second environment: pass eval_env, or eval_interval=0")
        modes = dict(modes or {})
        if set(modes) - set(env.possible_agents):
            raise ValueError(f"MultiAgentRun: modes for unknown agents {sorted(set(modes) - set(env.possible_agents))}")
        self.slots: dict[str, _Slot] = {}
        for name in env.possible_agents:
            agent = agents[name]
            mode = modes.get(name, "frozen" if isinstance(agent, Model) else "train")
            self._check_agent(env, name, agent, mode)
            self.slots[name] = _Slot(name, agent, mode, History(task_metric=env.task_metric))
        if not any(s.mode == "train" for s in self.slots.values()):
            raise ValueError("MultiAgentRun: every agent is frozen; give at least one mode 'train'")
        self.env, self.eval_env = env, eval_env
        self.total_steps, self.seed = int(total_steps), seed
        self.eval_interval, self.eval_episodes = int(eval_interval), int(eval_episodes)
        if swap_every < 0:
            raise ValueError(f"MultiAgentRun: swap_every must be 0 (off) or a number of steps, not {swap_every}")
        self.swap_every = int(swap_every)
        self.steps = 0
        self.episodes = 0
        self.done = False
        self.train_seconds = 0.0
        self._started = False
        self._stop_requested = False
        self._final_eval = True
        self._obs: dict[str, Any] = {}
        self._next_eval = self.eval_interval if self.eval_interval > 0 else math.inf

    @staticmethod
    def _check_agent(env: ParallelEnv, name: str, agent: Any, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"agent {name!r}: mode must be 'train' or 'frozen', not {mode!r}")
        if mode == "train" and not all(callable(getattr(agent, m, None)) for m in ("act", "observe", "predict")):
            raise ValueError(f"agent {name!r}: mode 'train' needs a learner with act/observe/predict "
                             f"(a loaded model can only be frozen)")
        if isinstance(agent, Model):
            check_fits(agent, env.observation_space(name), env.action_space(name))
        elif not callable(getattr(agent, "predict", None)):
            raise ValueError(f"agent {name!r}: needs predict(obs) or to be a model_io.Model")

    # ---- as a TrainingJob ---------------------------------------------------------------------------

    @property
    def trained(self) -> list[str]:
        """Names of the agents that learn, in the env's order."""
        return [n for n, s in self.slots.items() if s.mode == "train"]

    @property
    def learner(self) -> str | None:
        """With self-play (``swap_every``), the one agent that learns at this step; None when every learner does."""
        if not self.swap_every or len(self.trained) < 2:
            return None
        return self.trained[(self.steps // self.swap_every) % len(self.trained)]

    def _learns(self, name: str) -> bool:
        learner = self.learner
        return self.slots[name].mode == "train" and (learner is None or name == learner)

    @property
    def histories(self) -> dict[str, History]:
        return {n: s.history for n, s in self.slots.items()}

    @property
    def history(self) -> History:
        """The first learning agent's history (what a single curve shows); ``histories`` has them all."""
        return self.slots[self.trained[0]].history

    def status(self) -> dict[str, str]:
        """Episodes, the first learner's exploration, then one short entry per agent (it fits a sidebar's half
        width): the mean return of its last 20 episodes; and which agents are frozen."""
        first = self.slots[self.trained[0]]
        out = {"Episodes": str(self.episodes), "Epsilon": f"{float(getattr(first.agent, 'epsilon', 0.0)):.2f}"}
        for name, s in self.slots.items():
            returns = s.history.episode_returns[-20:]
            out[name] = f"ret {sum(returns) / len(returns):.2f}" if returns else "ret -"
        frozen = [n for n, s in self.slots.items() if s.mode == "frozen"]
        if frozen:
            out["Frozen"] = ", ".join(frozen)
        if self.learner is not None:
            out["Learning"] = self.learner  # self-play: whose turn it is
        return out

    def to_models(self, meta: dict[str, Any] | None = None) -> dict[str, Model]:
        """One model per trained agent (each its own JSON), with its name, episodes and action names."""
        models = {}
        for name in self.trained:
            s = self.slots[name]
            info = {**(meta or {}), "agent": name, "episodes": s.episodes}
            names = getattr(self.env.action_space(name), "names", None)
            if names:
                info["actions"] = list(names)
            models[name] = s.agent.to_model(info)
        return models

    def policies(self, meta: dict[str, Any] | None = None) -> dict[str, Model]:
        """Every agent's model, frozen ones too (what playing the scene back needs)."""
        out = self.to_models(meta)
        for name, s in self.slots.items():
            if name not in out:
                out[name] = s.agent if isinstance(s.agent, Model) else s.agent.to_model({**(meta or {}), "agent": name})
        return {name: out[name] for name in self.slots}

    def to_model(self, meta: dict[str, Any] | None = None) -> Model:
        """The first trained agent's model (``TrainingJob``); ``to_models`` exports every trained agent."""
        return self.to_models(meta)[self.trained[0]]

    @property
    def interrupted(self) -> bool:
        return any(s.history.interrupted for s in self.slots.values())

    def finish(self) -> None:
        """Nothing left to measure: the final evaluation ran as the last step ended."""

    def summary(self, wall_seconds: float) -> list[str]:
        """Steps and speed, then per agent its mode and the mean return of its last 20 episodes."""
        lines = [f"trained {self.steps} steps, {self.episodes} episodes in {wall_seconds:.1f} s "
                 f"({self.steps / max(self.train_seconds, 1e-9):,.0f} steps/s training)"]
        for name, s in self.slots.items():
            last = s.history.episode_returns[-20:]
            text = f"{name} ({s.mode}): mean return of the last {len(last)} episodes {np.mean(last):.2f}" if last \
                else f"{name} ({s.mode}): no episode finished"
            metric = history_metric_text(s.history, 20)
            lines.append(text + (f"; {metric}" if metric and last else ""))
        return lines

    def save_report(self, path: Any, title: str, wall_seconds: float = 0.0) -> Any:
        """One return curve per agent (its loss too when it learns), and the summary."""
        panels = []
        for name, s in self.slots.items():
            for panel in line_panels(s.history.to_dict())[0][:2 if s.mode == "train" else 1]:
                panel.title = f"{name} ({s.mode}): {panel.title[0].lower()}{panel.title[1:]}"
                panels.append(panel)
        lines = [f"{self.steps} steps, {self.episodes} episodes" + (f", {wall_seconds:.0f} s" if wall_seconds else "")]
        for name, s in self.slots.items():
            last = s.history.episode_returns[-20:]
            lines.append(f"{name} ({s.mode}): return {np.mean(last):.2f}, last {len(last)}" if last
                         else f"{name} ({s.mode}): no episode yet")
        panels.append(Panel("Summary", text_lines=lines))
        return write_png(path, render_panels(panels, title))

    def stop(self, evaluate: bool = True, interrupted: bool = False) -> None:
        self._stop_requested = True
        self._final_eval = self._final_eval and evaluate
        for s in self.slots.values():
            s.history.interrupted = s.history.interrupted or interrupted

    def resume(self, env: Any = None) -> None:
        """Continue on ``env`` (rebuilt) or the same one; the episode the pause cut short is dropped."""
        if env is not None:
            self.env = env
        self._stop_requested = False
        self._final_eval = True
        for s in self.slots.values():
            s.history.interrupted = False
            s.clear()
        if self._started:
            self._obs, _ = self.env.reset()

    def run(self) -> MultiAgentRun:
        while not self.done:
            self.advance()
        return self

    def advance(self, max_steps: int | None = None, max_seconds: float | None = None) -> int:
        """At most ``max_steps`` steps and about ``max_seconds`` seconds; returns the steps taken."""
        if self.done:
            return 0
        deadline = time.perf_counter() + max_seconds if max_seconds is not None else math.inf
        limit = max_steps if max_steps is not None else math.inf
        if not self._started:
            self._start()
        taken = 0
        while taken < limit and not self.done:
            self._step()
            taken += 1
            if time.perf_counter() >= deadline:
                break
        return taken

    # ---- the loop -------------------------------------------------------------------------------

    def _start(self) -> None:
        self._started = True
        share = self.total_steps // len(self.trained) if self.learner is not None else self.total_steps
        for name in self.trained:
            agent = self.slots[name].agent
            if hasattr(agent, "on_training_start"):
                agent.on_training_start(max(1, share))
        self._obs, _ = self.env.reset(seed=self.seed)

    def _step(self) -> None:
        t0 = time.perf_counter()
        live = list(self.env.agents)
        learns = {a: self._learns(a) for a in live}
        actions = {a: self.slots[a].act(self._obs[a]) if learns[a] else self.slots[a].greedy(self._obs[a])
                   for a in live}
        next_obs, rewards, terms, truncs, infos = self.env.step(actions)
        self.steps += 1
        key = self.env.task_metric
        for a in live:
            s = self.slots[a]
            if learns[a]:
                out = s.agent.observe(self._obs[a], actions[a], rewards[a], next_obs[a], terms[a], truncs[a])
                self._record_loss(s, out)
            s.history.steps = self.steps
            s.ret += float(rewards[a])
            s.length += 1
            if key is not None and key in infos[a]:
                s.metric_sum += float(infos[a][key])
                s.metric_count += 1
            if terms[a] or truncs[a]:
                self._end_episode(s)
        self._obs = {a: next_obs[a] for a in self.env.agents}
        self.train_seconds += time.perf_counter() - t0
        if not self.env.agents:
            self.episodes += 1
            self._obs, _ = self.env.reset()
        if self.steps >= self._next_eval:
            self._evaluate()
        if self._stop_requested or self.steps >= self.total_steps:
            self._finish()

    def _record_loss(self, s: _Slot, out: Any) -> None:
        if out and "loss" in out:
            if not math.isfinite(out["loss"]):
                raise TrainingError(f"training of {s.name!r} diverged at step {self.steps}: the loss became "
                                    f"{out['loss']}. Lower the learning rate, or scale the observations and rewards")
            s.history.losses.append(float(out["loss"]))
            s.history.loss_steps.append(self.steps)

    def _end_episode(self, s: _Slot) -> None:
        h = s.history
        s.episodes += 1
        h.episode_returns.append(s.ret)
        h.episode_lengths.append(s.length)
        h.episode_end_steps.append(self.steps)
        h.epsilons.append(float(getattr(s.agent, "epsilon", 0.0)) if s.mode == "train" else 0.0)
        if h.task_metric is not None:
            h.episode_metrics.append(s.metric_sum / s.metric_count if s.metric_count else None)
            h.episode_metric_sums.append(s.metric_sum)
            h.episode_metric_counts.append(s.metric_count)
        s.clear()

    def evaluate(self, env: ParallelEnv, episodes: int, seed: int | None,
                 max_steps_per_episode: int = 1_000_000) -> dict[str, tuple[float, Any, float, int]]:
        """Every agent greedy for ``episodes`` episodes: name -> (mean return, metric rate, metric sum, count)."""
        return evaluate_parallel(env, {a: s.greedy for a, s in self.slots.items()}, episodes, seed,
                                 max_steps_per_episode)

    def _evaluate(self, final: bool = False) -> None:
        while self._next_eval <= self.steps:
            self._next_eval += self.eval_interval
        assert self.eval_env is not None
        seed = None if self.seed is None else self.seed + EVAL_SEED_OFFSET
        for name, (mean, metric, total, count) in self.evaluate(self.eval_env, self.eval_episodes, seed).items():
            s = self.slots[name]
            if final:
                s.history.final_eval = (self.steps, mean, metric)
                if s.history.task_metric is not None:
                    s.history.final_eval_metric_totals = (self.steps, total, count, self.eval_episodes)
                continue
            s.history.evals.append((self.steps, mean, metric))
            if s.history.task_metric is not None:
                s.history.eval_metric_totals.append((self.steps, total, count, self.eval_episodes))
            s.history.eval_train_seconds.append(self.train_seconds)
            if s.mode == "train" and hasattr(s.agent, "on_evaluation"):
                s.agent.on_evaluation(self.steps, mean)

    def _finish(self) -> None:
        self.done = True
        for name in self.trained:
            agent = self.slots[name].agent
            if hasattr(agent, "on_training_end"):
                agent.on_training_end()
        if self.eval_interval > 0 and self._final_eval:
            self._evaluate(final=True)
