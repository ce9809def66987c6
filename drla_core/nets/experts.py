"""An expert switcher: several trained networks ("experts"), one of them acting at each step.

Which one acts is decided by a rule (``ThresholdRule``: one observation value against a threshold,
plain data that a node can hold; or any callable ``obs -> expert index``), or by a small selector
learnt with DQN whose actions are the experts (``SelectorEnv`` turns the task into that
choice; ``train_selector`` trains it). Experts are combined only when they read the same
observations and act in the same action space (``check_experts`` says which one differs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..rl.dqn import DQNAgent, DQNConfig
from ..base.env import Env
from ..nn.mlp import LayerSpec
from ..io.model_io import Model
from ..base.spaces import Discrete
from ..rl.train import TrainingRun

__all__ = ["ExpertError", "check_experts", "ThresholdRule", "ExpertSwitcher", "SelectorEnv", "train_selector"]


class ExpertError(ValueError):
    """Experts that cannot work together, or a rule that names no expert; the message says which and why."""


def check_experts(experts: Sequence[Model], names: Sequence[str] | None = None) -> None:
    """Raise ``ExpertError`` unless every expert reads the same observations and acts in the same action space."""
    if not experts:
        raise ExpertError("a switcher needs at least one expert")
    label = (lambda i: names[i]) if names is not None else (lambda i: f"expert {i}")
    first = experts[0]
    for i, e in enumerate(experts[1:], 1):
        if e.observation_space.shape != first.observation_space.shape:
            raise ExpertError(f"{label(i)} reads observations of shape {e.observation_space.shape}, {label(0)} "
                              f"of shape {first.observation_space.shape}")
        if e.action_space != first.action_space:
            raise ExpertError(f"{label(i)} acts in {e.action_space!r}, {label(0)} in {first.action_space!r}")


@dataclass
class ThresholdRule:
    """Expert ``above`` when ``obs[index] > threshold``, else expert ``below`` (indices or names)."""

    index: int
    threshold: float
    above: int | str
    below: int | str

    def __call__(self, obs: Any) -> int | str:
        return self.above if float(np.ravel(obs)[self.index]) > self.threshold else self.below


class ExpertSwitcher:
    """Picks an expert per step (``rule(obs)`` -> index or name, or a learnt ``selector``) and acts as it would.

    ``act(obs)`` / ``predict(obs)``: the chosen expert's greedy action; ``last_choice`` and
    ``counts`` say who acted.
    """

    def __init__(self, experts: Sequence[Model], rule: Callable[[Any], int | str] | None = None,
                 names: Sequence[str] | None = None, selector: Any = None) -> None:
        self.experts = list(experts)
        self.names = list(names) if names is not None else [f"expert {i}" for i in range(len(self.experts))]
        if len(self.names) != len(self.experts):
            raise ExpertError(f"{len(self.experts)} experts but {len(self.names)} names")
        check_experts(self.experts, self.names)
        if (rule is None) == (selector is None):
            raise ExpertError("give the switcher a rule or a selector (exactly one)")
        self.rule, self.selector = rule, selector
        if selector is not None and getattr(selector, "action_space", Discrete(len(self.experts))).n != len(
                self.experts):
            raise ExpertError(f"the selector chooses among {selector.action_space.n}, not {len(self.experts)} experts")
        self.observation_space = self.experts[0].observation_space
        self.action_space = self.experts[0].action_space
        self.last_choice = -1
        self.counts = np.zeros(len(self.experts), dtype=np.int64)

    def choose(self, obs: Any) -> int:
        """The index of the expert that acts on ``obs``."""
        if self.selector is not None:
            # greedy: a DQNAgent's act() would still explore
            choice: int | str = int(self.selector.predict(obs) if hasattr(self.selector, "predict")
                                    else self.selector(obs))
        else:
            assert self.rule is not None
            choice = self.rule(obs)
        if isinstance(choice, str):
            if choice not in self.names:
                raise ExpertError(f"the rule chose {choice!r}, which is none of the experts ({', '.join(self.names)})")
            index = self.names.index(choice)
        else:
            index = int(choice)
            if not 0 <= index < len(self.experts):
                raise ExpertError(f"the rule chose expert {index}; there are {len(self.experts)}")
        self.last_choice = index
        self.counts[index] += 1
        return index

    def act(self, obs: Any) -> Any:
        return self.experts[self.choose(obs)].act(obs)

    predict = act


class SelectorEnv(Env):
    """The task as a choice of expert: action ``i`` lets expert ``i`` act on the current observation.

    Observations, rewards and episode ends are the wrapped env's; a DQN on this env learns a
    selector (``train_selector``).
    """

    def __init__(self, env: Env, experts: Sequence[Model], names: Sequence[str] | None = None) -> None:
        check_experts(experts, names)
        ours, theirs = env.action_space, experts[0].action_space
        same_actions = ours.n == theirs.n if isinstance(ours, Discrete) and isinstance(theirs, Discrete) else (
            ours == theirs)  # (a model file may name the actions where the env does not)
        if env.observation_space.shape != experts[0].observation_space.shape or not same_actions:
            raise ExpertError("the experts' spaces differ from the environment's")
        self.env, self.experts = env, list(experts)
        self.observation_space = env.observation_space
        self.action_space = Discrete(len(self.experts), list(names) if names is not None else None)
        self.task_metric = env.task_metric
        self._obs: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self._obs, info = self.env.reset(seed=seed, options=options)
        return self._obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        if not self.action_space.contains(action):
            raise ValueError(f"SelectorEnv: invalid expert {action!r} for {self.action_space}")
        obs, reward, terminated, truncated, info = self.env.step(self.experts[int(action)].act(self._obs))
        self._obs = obs
        return obs, reward, terminated, truncated, info


def train_selector(env: Env, experts: Sequence[Model], steps: int, config: Any = None, seed: int = 0,
                   names: Sequence[str] | None = None) -> tuple[ExpertSwitcher, Any]:
    """Train a DQN selector over the experts on ``env``; returns the switcher and the ``TrainingRun``."""
    selector_env = SelectorEnv(env, experts, names)
    cfg = config if config is not None else DQNConfig(hidden=[LayerSpec(32, "relu")], learning_starts=200, train_freq=4,
                                                      gradient_steps=1, target_update_interval=100,
                                                      exploration_fraction=0.3, learning_rate=1e-3)
    agent = DQNAgent(selector_env.observation_space, selector_env.action_space, cfg, seed=seed)
    run = TrainingRun(selector_env, agent, steps, seed=seed).run()
    return ExpertSwitcher(experts, names=names, selector=agent), run
