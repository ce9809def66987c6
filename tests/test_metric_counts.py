"""The task metric is reported as counts beside its rate: an agent that fires once in 20 episodes and
hits must read "0.05 hits per episode, 1 shot", not "hit rate 100 %" (CLI, progress bar, report)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from drla.progress import ProgressBar
from drla_core.base.env import Env
from drla_core.io.plot import line_panels, render_report
from drla_core.base.spaces import Box, Discrete
from drla_core.rl.train import TrainingRun, evaluate, history_metric_text, metric_text


class OneShotEnv(Env):
    """Episodes of 10 steps; action 1 fires and always hits. Observation: the step count."""

    task_metric = "hit"

    def __init__(self) -> None:
        self.observation_space = Box(0.0, 10.0, (1,))
        self.action_space = Discrete(2, ["wait", "fire"])
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        info = {"hit": 1} if action == 1 else {}
        return np.array([self.t], dtype=np.float32), float(action == 1), False, self.t >= 10, info


class FireOnce:
    """Fires exactly once, at its 5th step ever (training) / never in evaluation unless told."""

    def __init__(self, fire_at: int = 5) -> None:
        self.n, self.fire_at = 0, fire_at

    def act(self, obs: Any) -> int:
        self.n += 1
        return int(self.n == self.fire_at)

    def observe(self, *args: Any) -> dict:
        return {}

    def predict(self, obs: Any) -> int:
        return int(obs[0] == 3.0)  # one shot per episode, at step 4


def test_metric_text_puts_counts_beside_the_rate():
    assert metric_text("hit", 1, 1, 20) == ("hits 0.05/episode, shots 0.05/episode, hit rate 100.0 % "
                                            "(1 hit of 1 shot in 20 episodes)")
    assert metric_text("hit", 0, 0, 5) == ("hits 0.00/episode, shots 0.00/episode, hit rate - "
                                           "(0 hits of 0 shots in 5 episodes)")
    assert metric_text("escaped", 3, 4, 4) == "escaped rate 75.0 % (3 escapes in 4 episodes)"
    assert metric_text("hit", 3, 4, 4).startswith("hits 0.75/episode, shots 1.00/episode, hit rate 75.0 %")
    assert metric_text("score", 2, 4, 2).startswith("score 1.00/episode, score events 2.00/episode")


def test_history_counts_hits_and_shots_per_episode():
    run = TrainingRun(OneShotEnv(), FireOnce(), 200, eval_interval=100, eval_episodes=3).run()
    h = run.history
    assert len(h.episode_metric_sums) == len(h.episode_metric_counts) == len(h.episode_returns) == 20
    assert sum(h.episode_metric_counts) == 1 and sum(h.episode_metric_sums) == 1
    assert [m for m in h.episode_metrics if m is not None] == [1.0]  # the per-episode rate that read "100 %"
    assert h.metric_text() == history_metric_text(h.to_dict()) == metric_text("hit", 1, 1, 20)
    assert "hits 0.05/episode, shots 0.05/episode" in h.metric_text()
    assert h.eval_metric_totals == [(100, 3.0, 3, 3), (200, 3.0, 3, 3)]
    assert h.final_eval_metric_totals == (200, 3.0, 3, 3) and h.steps == 200


def test_evaluate_returns_the_counts():
    result = evaluate(OneShotEnv(), lambda obs: int(obs[0] in (2.0, 5.0)), episodes=4, seed=0)
    assert (result.metric, result.metric_sum, result.metric_count) == (1.0, 8.0, 8)


def test_progress_bar_shows_hits_and_shots_per_episode():
    stream = io.StringIO()
    run = TrainingRun(OneShotEnv(), FireOnce(), 200, callbacks=[ProgressBar(200, stream=stream)]).run()
    assert run.steps == 200
    last = stream.getvalue().strip().splitlines()[-1]
    assert "hits/ep 0.05 of 0.05 shots (100%)" in last, last


def test_report_plots_hits_per_episode_and_its_evaluations_honestly():
    run = TrainingRun(OneShotEnv(), FireOnce(), 200, eval_interval=100, eval_episodes=3).run()
    panels, summary = line_panels(run.history)
    metric = next(p for p in panels if p.title == "Hits per episode")
    by_label = {sr.label: sr for sr in metric.series}
    assert np.allclose(by_label["eval"].ys, [1.0, 1.0])  # 3 hits in 3 episodes: 1 per episode
    assert by_label["shots"].ys.max() <= 1.0 and "hits, mean of 20" in by_label
    text = "\n".join(summary)
    assert "hits per episode, last 20\n  0.05 of 0.05 shots (100.0 %)" in text
    assert "final evaluation, 3 episodes\n  1 of 1 shots (100.0 %)" in text  # one shot per episode
    assert render_report(run.history).shape[1] == 1200


def test_report_says_the_steps_trained_not_the_last_episode_end():
    class Long(OneShotEnv):
        def step(self, action):
            obs, r, term, _, info = super().step(action)
            return obs, r, term, self.t >= 7, info

    run = TrainingRun(Long(), FireOnce(), 50).run()
    assert run.history.episode_end_steps[-1] == 49 and run.steps == 50
    _, summary = line_panels(run.history.to_dict())
    assert summary[:2] == ["steps trained", "  50"]


def test_stop_without_final_evaluation_marks_the_run_interrupted():
    class StopAt(FireOnce):
        def observe(self, *args: Any) -> dict:
            if self.n == 30:
                run.stop(evaluate=False, interrupted=True)
            return {}

    run = TrainingRun(OneShotEnv(), StopAt(), 1000, eval_interval=500, eval_episodes=2)
    run.run()
    assert run.steps == 30 and run.done and run.history.interrupted and run.history.final_eval is None
    _, summary = line_panels(run.history)
    assert summary[:2] == ["steps trained", "  30 (interrupted)"]


def test_short_metric_text_for_the_sidebar():
    run = TrainingRun(OneShotEnv(), FireOnce(), 200).run()
    assert run.history.metric_text(short=True) == "Hits 0.05/ep, shots 0.05/ep (100 %)"
    assert history_metric_text(run.history.to_dict(), 20, short=True) == "Hits 0.05/ep, shots 0.05/ep (100 %)"
    assert history_metric_text({"task_metric": "hit", "episode_metric_sums": [], "episode_metric_counts": []},
                               short=True) == "Hits: no episode finished"
    assert history_metric_text({"task_metric": None}, short=True) is None
    assert history_metric_text({"task_metric": "escaped", "episode_metric_sums": [1, 0, 1, 1],
                                "episode_metric_counts": [1, 1, 1, 1]}, short=True) == "Escaped 75 % of 4 episodes"
    assert len(history_metric_text({"task_metric": "hit", "episode_metric_sums": [12.0] * 20,
                                    "episode_metric_counts": [130] * 20}, short=True)) <= 38
