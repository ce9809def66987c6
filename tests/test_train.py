"""TrainingRun: determinism, slicing, callbacks, evaluation, task metrics, checkpoints; evaluate()."""

from typing import Any

import numpy as np
import pytest

from drla_core.rl.dqn import DQNAgent, DQNConfig
from drla_core.base.env import Env
from drla_core.envs.cartpole import CartPole
from drla_core.nn.mlp import LayerSpec
from drla_core.base.spaces import Box, Discrete
from drla_core.rl.train import Callback, EvalResult, PrintProgress, TrainingRun, evaluate, train

SMALL = DQNConfig(learning_starts=100, train_freq=16, gradient_steps=4, batch_size=16, target_update_interval=50,
                  hidden=[LayerSpec(16), LayerSpec(16, "tanh")])


def _agent(env, seed=0, config=SMALL):
    return DQNAgent(env.observation_space, env.action_space, config, seed=seed)


class ShotEnv(Env):
    """Fire (action 1) at a target that is in view (obs[0] == 1): info["hit"] on every shot."""

    task_metric = "hit"

    def __init__(self) -> None:
        self.observation_space = Box(0.0, 1.0, (2,))
        self.action_space = Discrete(2, ["wait", "fire"])
        self.t = 0

    def _obs(self) -> np.ndarray:
        self.visible = bool(self.np_random.random() < 0.5)
        return np.array([float(self.visible), 1.0], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        info = {}
        reward = 0.0
        if action == 1:
            info["hit"] = int(self.visible)
            reward = 1.0 if self.visible else -1.0
        return self._obs(), reward, False, self.t >= 20, info


def test_same_seed_same_run_bit_for_bit():
    runs = []
    for _ in range(2):
        env, eval_env = CartPole(), CartPole()
        agent = _agent(env, seed=5)
        run = TrainingRun(env, agent, 1500, seed=5, eval_env=eval_env, eval_interval=500, eval_episodes=2).run()
        runs.append((agent, run))
    (a1, r1), (a2, r2) = runs
    assert a1.n_updates > 0
    np.testing.assert_array_equal(a1.q_network.params, a2.q_network.params)
    np.testing.assert_array_equal(a1.target_network.params, a2.target_network.params)
    assert r1.history.episode_returns == r2.history.episode_returns
    assert r1.history.losses == r2.history.losses
    assert r1.history.evals == r2.history.evals
    other = _agent(CartPole(), seed=6)
    TrainingRun(CartPole(), other, 1500, seed=6).run()
    assert not np.array_equal(a1.q_network.params, other.q_network.params)


def test_slices_give_the_same_run_as_run():
    env = CartPole()
    whole = _agent(env, seed=1)
    TrainingRun(env, whole, 900, seed=1, eval_interval=300, eval_episodes=1).run()

    env = CartPole()
    sliced = _agent(env, seed=1)
    run = TrainingRun(env, sliced, 900, seed=1, eval_interval=300, eval_episodes=1)
    taken = []
    while not run.done:
        taken.append(run.advance(max_steps=37))
    assert sum(taken) == 900 and run.steps == 900 and max(taken) == 37
    assert run.advance() == 0
    np.testing.assert_array_equal(whole.q_network.params, sliced.q_network.params)


def test_advance_respects_max_seconds():
    env = CartPole()
    run = TrainingRun(env, _agent(env), 10**7, seed=0)
    taken = run.advance(max_seconds=0.05)
    assert 0 < taken < 10**7 and not run.done
    assert run.advance(max_steps=10) == 10


def test_advance_ends_its_slice_at_the_first_step_past_the_deadline(monkeypatch):
    """On a stand-in clock where every env step takes 10 ms and nothing else takes time: a 50 ms
    slice is exactly 5 steps, an empty one exactly 1 (a slice always makes progress, so a busy
    machine slows training down but never stalls it)."""
    import types

    import drla_core.rl.train as train_mod

    clock = {"now": 0.0}
    monkeypatch.setattr(train_mod, "time", types.SimpleNamespace(perf_counter=lambda: clock["now"],
                                                                  process_time=train_mod.time.process_time))

    class SlowCartPole(CartPole):
        def step(self, action):
            clock["now"] += 0.01
            return super().step(action)

    env = SlowCartPole()
    run = TrainingRun(env, _agent(env), 10**7, seed=0)
    assert run.advance(max_seconds=0.05) == 5
    assert run.advance(max_seconds=0.0) == 1
    assert run.advance(max_seconds=0.035) == 4  # 30 ms < 35 ms: the 4th step ends past the deadline
    assert run.steps == 10 and not run.done


def test_callbacks_order_stop_and_history():
    events = []

    class Recorder(Callback):
        def on_start(self, run):
            events.append("start")

        def on_step(self, run):
            return False if run.steps == 250 else None

        def on_episode_end(self, run):
            events.append("episode")

        def on_eval(self, run):
            events.append("eval")

        def on_end(self, run):
            events.append("end")

    env = CartPole()
    lines = []
    run = train(env, _agent(env), 10_000, seed=0, eval_env=CartPole(), eval_interval=100, eval_episodes=1,
                callbacks=[Recorder(), PrintProgress(every=1, print_fn=lines.append)])
    assert run.done and run.steps == 250
    assert events[0] == "start" and events[-1] == "end"
    assert events.count("eval") == 2 and events.count("episode") == run.episodes
    h = run.history
    assert len(h.episode_returns) == len(h.episode_lengths) == len(h.epsilons) == len(h.episode_end_steps)
    assert h.episode_returns == [float(n) for n in h.episode_lengths]  # CartPole: 1 per step
    assert [s for s, _, _ in h.evals] == [100, 200]
    assert len(h.losses) == len(h.loss_steps) > 0
    assert h.final_eval is not None and h.final_eval[0] == 250
    assert h.epsilons[0] >= h.epsilons[-1]
    assert any("eval at step 100" in line for line in lines)
    assert isinstance(h.to_dict()["evals"], list)


def test_stop_ends_the_run():
    env = CartPole()
    run = TrainingRun(env, _agent(env), 10_000, seed=0)
    run.advance(max_steps=10)
    run.stop()
    run.advance()
    assert run.done and run.steps == 11


def test_evaluation_time_is_excluded_and_same_env_waits_for_episode_end():
    env = CartPole()
    run = TrainingRun(env, _agent(env), 600, seed=0, eval_interval=100, eval_episodes=3).run()
    steps = [s for s, _, _ in run.history.evals]
    assert steps and all(s >= 100 for s in steps)
    assert set(steps) <= set(run.history.episode_end_steps)  # only at episode boundaries
    assert run.eval_seconds > 0 and run.train_seconds > 0
    assert len(run.history.eval_train_seconds) == len(steps)


def test_task_metric_in_history_and_evals():
    env = ShotEnv()
    cfg = DQNConfig(learning_starts=200, train_freq=8, gradient_steps=4, batch_size=32, target_update_interval=100,
                    exploration_fraction=0.3, learning_rate=2e-3, hidden=[LayerSpec(16)])
    run = train(env, _agent(env, config=cfg), 3000, seed=0, eval_env=ShotEnv(), eval_interval=1000, eval_episodes=5)
    h = run.history
    assert h.task_metric == "hit"
    assert len(h.episode_metrics) == len(h.episode_returns)
    assert all(m is None or 0.0 <= m <= 1.0 for m in h.episode_metrics)
    assert h.final_eval[2] is not None and h.final_eval[2] >= 0.9  # it learned to fire only when the target is in view


def test_checkpoints_call_the_save_function(tmp_path):
    saved = []
    seen = []

    class Seen(Callback):
        def on_checkpoint(self, run, path):
            seen.append(path)

    env = CartPole()
    train(env, _agent(env), 250, seed=0, checkpoint_interval=100, checkpoint_path=str(tmp_path / "ck_{step}.json"),
          save_fn=lambda run, path: saved.append((run.steps, path)), callbacks=[Seen()])
    assert saved == [(100, str(tmp_path / "ck_100.json")), (200, str(tmp_path / "ck_200.json"))]
    assert seen == [p for _, p in saved]
    with pytest.raises(ValueError):
        TrainingRun(env, _agent(env), 10, checkpoint_interval=5)


def test_default_checkpoint_writes_a_model_file(tmp_path):
    model_io = pytest.importorskip("drla_core.io.model_io")
    env = CartPole()
    path = tmp_path / "model.json"
    agent = _agent(env)
    train(env, agent, 120, seed=0, checkpoint_interval=100, checkpoint_path=str(path))
    model = model_io.load_model(path)
    obs = np.zeros(4, dtype=np.float32)
    assert model.act(obs) in (0, 1)


def test_evaluate_is_seeded_and_accepts_callables():
    env = CartPole()
    r1 = evaluate(env, lambda obs: int(obs[2] > 0), episodes=4, seed=3)
    r2 = evaluate(env, lambda obs: int(obs[2] > 0), episodes=4, seed=3)
    assert isinstance(r1, EvalResult) and r1 == r2
    assert len(r1.returns) == 4 and r1.mean_return == pytest.approx(np.mean(r1.returns))
    assert r1.metric is None
    assert r1.mean_return > evaluate(env, lambda obs: 0, episodes=4, seed=3).mean_return


def test_resume_on_a_new_env_drops_the_cut_episode_and_carries_on():
    from drla_core.rl.dqn import DQNAgent, DQNConfig
    from drla_core.envs.cartpole import CartPole
    from drla_core.rl.train import TrainingRun

    env = CartPole()
    agent = DQNAgent(env.observation_space, env.action_space, DQNConfig(learning_starts=50, train_freq=4,
                                                                       gradient_steps=1), seed=0)
    run = TrainingRun(env, agent, 300, seed=0)
    run.advance(max_steps=105)
    episodes, recorded = run.episodes, sum(run.history.episode_lengths)
    fresh = CartPole()
    run.resume(fresh)
    assert run.env is fresh and not run.done
    run.run()
    assert run.steps == 300 and run.done
    # the steps of the cut episode are not in any recorded episode
    assert sum(run.history.episode_lengths) < 300 - (105 - recorded) + 1
    assert run.episodes > episodes


def test_a_diverging_loss_stops_training_with_a_clear_message():
    from drla_core.envs.identity import IdentityEnv
    from drla_core.rl.train import TrainingError, TrainingRun

    class Diverging:
        def act(self, obs, explore=True):
            return 0

        predict = act

        def observe(self, *transition):
            return {"loss": float("nan")}

    run = TrainingRun(IdentityEnv(), Diverging(), 100, seed=0)
    with pytest.raises(TrainingError, match="diverged at step 1: the loss became nan. Lower the learning rate"):
        run.run()


def test_evaluating_on_the_training_env_keeps_its_random_stream():
    """Without an eval env, evaluations re-seed the training env; training must go on from its own stream."""
    from drla_core.envs.identity import IdentityEnv
    from drla_core.rl.train import TrainingRun

    class Recorder:
        def __init__(self):
            self.seen = []

        def act(self, obs, explore=True):
            return 0

        predict = act

        def observe(self, obs, action, reward, next_obs, terminated, truncated):
            self.seen.append(int(np.argmax(next_obs)))  # training transitions only, never evaluation ones
            return {}

    def training_stream(eval_interval):
        agent = Recorder()
        TrainingRun(IdentityEnv(ep_length=5), agent, 200, seed=0, eval_interval=eval_interval,
                    eval_episodes=1).run()
        return agent.seen

    assert training_stream(50) == training_stream(0)
