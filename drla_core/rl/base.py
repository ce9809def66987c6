"""The two surfaces every agent kind offers, so one panel, one CLI and one session run them all.

``Agent`` is what ``drla_core.rl.train.TrainingRun`` steps through an environment (act, observe);
``TrainingJob`` is what a session advances in time-boxed slices, whatever learns inside: a DQN's
``TrainingRun``, Learned IK's ``IKTrainingJob``, an evolving population next. Composition, not a
base class: anything with these members is one.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..io.model_io import Model


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
    ``stop`` ends the job early (Ctrl-C in the CLI: ``interrupted`` says so afterwards); ``finish``
    does the end-of-run measuring (after the last slice, before ``to_model``); ``summary`` and
    ``save_report`` are the words and the picture a person gets at the end.
    """

    done: bool
    steps: int
    total_steps: int
    history: Any

    def advance(self, max_steps: int | None = None, max_seconds: float | None = None) -> int: ...

    def resume(self, env: Any = None) -> None: ...

    def stop(self, evaluate: bool = True, interrupted: bool = False) -> None: ...

    @property
    def interrupted(self) -> bool: ...

    def finish(self) -> None: ...

    def status(self) -> dict[str, str]: ...

    def summary(self, wall_seconds: float) -> list[str]: ...

    def save_report(self, path: Any, title: str, wall_seconds: float = 0.0) -> Any: ...

    def to_model(self, meta: dict[str, Any] | None = None) -> Model: ...
