"""A task's own count (hits of shots, correct answers, escapes) in words a person reads.

Shared by the training loop's history (``train``), the report pictures (``plot``), the CLI's progress
bar and the sidebar; kept apart so that none of them imports another for a word.
"""

from __future__ import annotations

from typing import Any

#: How to speak of a task metric's counts: (its 1s, every event that reports it), singular and plural.
METRIC_WORDS: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "hit": (("hit", "hits"), ("shot", "shots")),
    "correct": (("correct answer", "correct answers"), ("answer", "answers")),
    "escaped": (("escape", "escapes"), ("episode end", "episode ends")),
}
#: Metrics reported once per episode, at its end: their rate is already a count per episode.
ONCE_PER_EPISODE = frozenset({"escaped"})


def _count(n: float, words: tuple[str, str]) -> str:
    return f"{n:g} {words[0] if n == 1 else words[1]}"


def metric_text(name: str, total: float, count: int, episodes: int) -> str:
    """The task metric as counts per episode beside the rate, e.g.
    ``hits 0.05/episode, shots 0.05/episode, hit rate 100.0 % (1 hit of 1 shot in 20 episodes)``.

    ``total`` is the sum of the metric's 0/1 values (hits), ``count`` how many steps reported it (shots).
    """
    (one, ones), (event, events) = METRIC_WORDS.get(name, ((name, name), (f"{name} event", f"{name} events")))
    rate = f"{name} rate {total / count:.1%}".replace("%", " %") if count else f"{name} rate -"
    in_episodes = _count(episodes, ("episode", "episodes"))
    if episodes and name in ONCE_PER_EPISODE:  # an escape rate: the rate is the count per episode
        return f"{rate} ({_count(total, (one, ones))} in {in_episodes})"
    if not episodes:
        return f"{rate} (no episode finished)"
    return (f"{ones} {total / episodes:.2f}/episode, {events} {count / episodes:.2f}/episode, {rate} "
            f"({_count(total, (one, ones))} of {_count(count, (event, events))} in {in_episodes})")


def _get(history: Any, key: str, default: Any = None) -> Any:
    value = history.get(key, default) if isinstance(history, dict) else getattr(history, key, default)
    return default if value is None else value


def short_metric_text(name: str, total: float, count: int, episodes: int) -> str:
    """``metric_text`` in a sidebar's width: ``Hits 0.05/ep, shots 0.05/ep (100 %)``."""
    (_, ones), (_, events) = METRIC_WORDS.get(name, ((name, name), (f"{name} event", f"{name} events")))
    rate = f"{total / count:.0%}".replace("%", " %") if count else f"no {events}"
    if not episodes:
        return f"{ones.capitalize()}: no episode finished"
    if name in ONCE_PER_EPISODE:
        return f"{name.capitalize()} {rate} of {_count(episodes, ('episode', 'episodes'))}"
    return f"{ones.capitalize()} {total / episodes:.2f}/ep, {events} {count / episodes:.2f}/ep ({rate})"


def history_metric_text(history: Any, last: int | None = 20, short: bool = False) -> str | None:
    """``metric_text`` over the last ``last`` finished episodes (all when None) of a ``History`` or its dict;
    ``short``: ``short_metric_text``, for the sidebar.

    None when the task has no metric or the history predates the per-episode counts.
    """
    name = _get(history, "task_metric")
    sums, counts = list(_get(history, "episode_metric_sums", [])), list(_get(history, "episode_metric_counts", []))
    if not isinstance(name, str) or len(sums) != len(counts):
        return None
    if last is not None:
        sums, counts = sums[-last:], counts[-last:]
    return (short_metric_text if short else metric_text)(name, float(sum(sums)), int(sum(counts)), len(sums))
