"""The two surfaces every agent kind offers, so one panel, one CLI and one session run them all.

``Agent`` is what ``drla_core.train.TrainingRun`` steps through an environment (act, observe);
``TrainingJob`` is what a session advances in time-boxed slices, whatever learns inside: a DQN's
``TrainingRun``, Learned IK's ``IKTrainingJob``, an evolving population next. Composition, not a
base class: anything with these members is one.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..model_io import Model


@runtime_checkable
class Agent(Protocol):
    """Learns by acting in an environment, one step at a time."""

    def act(self, obs: Any, explore: bool = True) -> Any: ...

    def observe(self, obs: Any, action: Any, reward: float, next_obs: Any, terminated: bool,
                truncated: bool) -> None: ...

    def predict(self, obs: Any) -> Any: ...

    def to_model(self, meta: dict[str, Any] | None = None) -> Model: ...


@runtime_checkable
class TrainingJob(Protocol):
    """A training run advanced in slices: what the sidebar and the CLI need, and nothing kind-specific.

    ``history`` is a ``train.History`` or a dict with the same keys (what ``plot`` and the live curve
    read); ``status()`` is the figures shown under the progress bar, label -> text, in order.
    """

    done: bool
    steps: int
    total_steps: int
    history: Any

    def advance(self, max_steps: int | None = None, max_seconds: float | None = None) -> int: ...

    def resume(self, env: Any = None) -> None: ...

    def status(self) -> dict[str, str]: ...

    def to_model(self, meta: dict[str, Any] | None = None) -> Model: ...
