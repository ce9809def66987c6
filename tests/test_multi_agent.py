"""Multi-agent: the parallel contract and its checker, the chase env, MultiAgentRun with learning and frozen agents."""

import numpy as np
import pytest

from drla_core.agents.base import TrainingJob
from drla_core.agents.dqn import DQNAgent, DQNConfig
from drla_core.env import EnvCheckError
from drla_core.envs.chase import ChaseEnv
from drla_core.envs.tank_duel import TankDuel
from drla_core.envs.tank_grid import FIRE, MOVE_BACK, MOVE_FRONT, MOVE_RIGHT, WAIT
from drla_core.mlp import LayerSpec
from drla_core.model_io import Model, ModelFormatError, load_model, save_model
from drla_core.multi_agent import MultiAgentRun, ParallelEnv, check_parallel_env
from drla_core.plot import AGENT_COLORS, render_agents_report, save_agents_report
from drla_core.png import read_png
from drla_core.spaces import Box, Discrete

HERO_CONFIG = dict(gamma=0.9, learning_rate=1e-3, learning_starts=500, train_freq=1, gradient_steps=1, batch_size=32,
                   target_update_interval=200, exploration_fraction=0.2, hidden=[LayerSpec(64), LayerSpec(64)])


def _dqn(env, name, seed=0, **kw):
    return DQNAgent(env.observation_space(name), env.action_space(name), DQNConfig(**{**HERO_CONFIG, **kw}), seed=seed)


@pytest.mark.parametrize("target", ["scripted", "agent"])
def test_chase_passes_check_parallel_env(target):
    check_parallel_env(ChaseEnv(target=target))


def test_chase_rules():
    env = ChaseEnv(size=5, target_speed=0.0, step_cost=0.02, closing=0.05)
    obs, infos = env.reset(seed=0)
    assert env.agents == ["hero"] and set(obs) == {"hero"} and infos == {"hero": {}}
    env.hero, env.target = (0, 0), (2, 0)
    obs, rewards, terms, truncs, infos = env.step({"hero": 4})  # right: one cell nearer
    assert env.hero == (1, 0) and rewards["hero"] == pytest.approx(-0.02 + 0.05)
    np.testing.assert_allclose(obs["hero"], np.array([1, 0, 1, 0]) / 4)
    assert not terms["hero"] and infos["hero"] == {}
    obs, rewards, terms, truncs, infos = env.step({"hero": 4})
    assert terms == {"hero": True} and rewards["hero"] == pytest.approx(1.0 + 0.05)
    assert infos["hero"]["caught"] == 1 and env.agents == []
    with pytest.raises(RuntimeError, match="call reset"):
        env.step({"hero": 0})
    duel = ChaseEnv(target="agent", max_steps=2)
    duel.reset(seed=1)
    duel.hero, duel.target = (0, 0), (4, 4)
    _, rewards, _, truncs, infos = duel.step({"hero": 0, "target": 3})  # the target moves left
    # the target came nearer: the hero's closing term pays
    assert duel.target == (3, 4) and rewards == {"hero": pytest.approx(0.03), "target": pytest.approx(-0.03)}
    _, _, _, truncs, infos = duel.step({"hero": 0, "target": 0})
    assert truncs == {"hero": True, "target": True} and infos["target"]["caught"] == 0
    duel.reset(seed=0)
    with pytest.raises(ValueError, match="no action for"):
        duel.step({"hero": 0})
    with pytest.raises(ValueError, match="target must be"):
        ChaseEnv(target="ghost")


def test_scripted_target_flees():
    env = ChaseEnv(target_speed=1.0)
    env.reset(seed=0)
    env.hero, env.target = (0, 0), (2, 2)
    env.step({"hero": 0})
    assert env.distance() == 5  # the target stepped away


class _BrokenEnv(ChaseEnv):
    """Keeps agents that ended in ``agents``."""

    def step(self, actions):
        live = list(self.agents)
        out = super().step(actions)
        if not self.agents:
            self.agents = live
        return out


class _MissingKey(ChaseEnv):
    def step(self, actions):
        obs, rewards, terms, truncs, infos = super().step(actions)
        return obs, {}, terms, truncs, infos


def test_check_parallel_env_catches_broken_envs():
    with pytest.raises(EnvCheckError, match="agents must be the live agents that did not end"):
        check_parallel_env(_BrokenEnv(max_steps=3))
    with pytest.raises(EnvCheckError, match="rewards must have one entry per live agent"):
        check_parallel_env(_MissingKey())

    class NoSpaces(ParallelEnv):
        possible_agents = ["a"]

        def observation_space(self, agent):
            return Box(0.0, 1.0, (1,))

        def action_space(self, agent):
            return "four"

    with pytest.raises(EnvCheckError, match="action_space"):
        check_parallel_env(NoSpaces())


def test_run_checks_its_agents():
    env = ChaseEnv(target="agent")
    hero = _dqn(env, "hero")
    with pytest.raises(ValueError, match="missing \\['target'\\]"):
        MultiAgentRun(env, {"hero": hero}, 10)
    with pytest.raises(ValueError, match="mode must be"):
        MultiAgentRun(env, {"hero": hero, "target": _dqn(env, "target")}, 10, modes={"hero": "sleep"})
    with pytest.raises(ValueError, match="modes for unknown agents \\['villain'\\]"):
        MultiAgentRun(env, {"hero": hero, "target": _dqn(env, "target")}, 10, modes={"villain": "frozen"})
    with pytest.raises(ValueError, match="every agent is frozen"):
        MultiAgentRun(env, {"hero": hero, "target": _dqn(env, "target")}, 10,
                      modes={"hero": "frozen", "target": "frozen"})
    model = hero.to_model()
    with pytest.raises(ValueError, match="can only be frozen"):
        MultiAgentRun(env, {"hero": model, "target": _dqn(env, "target")}, 10, modes={"hero": "train"})
    small = Model(model.network, Box(-1.0, 1.0, (4,)), Discrete(3))
    with pytest.raises(ModelFormatError, match="chooses among 3 actions"):
        MultiAgentRun(env, {"hero": small, "target": _dqn(env, "target")}, 10)


def test_run_keeps_one_history_per_agent_and_exports_each(tmp_path):
    env = ChaseEnv(target="agent", max_steps=10)
    agents = {"hero": _dqn(env, "hero", learning_starts=50), "target": _dqn(env, "target", seed=1, learning_starts=50)}
    run = MultiAgentRun(env, agents, 300, seed=0, eval_env=ChaseEnv(target="agent", max_steps=10), eval_interval=100,
                        eval_episodes=3)
    assert run.advance(max_steps=40) == 40
    run.run()
    assert run.steps == 300 and run.done and run.trained == ["hero", "target"] and isinstance(run, TrainingJob)
    hero, target = run.histories["hero"], run.histories["target"]
    assert len(hero.episode_returns) == len(target.episode_returns) == run.episodes > 0
    # zero-sum: every episode's returns cancel, and the evaluations see both sides
    np.testing.assert_allclose(np.array(hero.episode_returns), -np.array(target.episode_returns))
    assert [s for s, _, _ in hero.evals] == [100, 200, 300] and hero.final_eval is not None
    assert hero.task_metric == "caught" and len(hero.episode_metric_counts) == run.episodes
    assert run.history is hero and set(run.status()) >= {"Episodes", "Epsilon", "hero", "target"}
    assert run.status()["hero"].startswith("ret ")
    models = run.to_models({"run": "t"})
    assert set(models) == {"hero", "target"} and models["target"].meta["agent"] == "target"
    for name, model in models.items():
        path = save_model(tmp_path / f"{name}.json", model)
        loaded = load_model(path)
        obs = np.array([0.25, 0.5, -0.25, 0.0], dtype=np.float32)
        assert loaded.act(obs) == run.slots[name].agent.predict(obs)
        assert loaded.meta["actions"] == ["stay", "up", "down", "left", "right"]
    # the report: one curve per agent, in each agent's colour
    picture = read_png(save_agents_report(tmp_path / "report.png", run.histories, "chase"))
    np.testing.assert_array_equal(picture, render_agents_report(run.histories, "chase"))
    for color in AGENT_COLORS[:2]:
        assert np.all(picture == color, axis=-1).sum() > 100
    assert np.all(render_agents_report({"hero": hero}) == AGENT_COLORS[1], axis=-1).sum() == 0


class _Recorder:
    """A frozen policy that writes down what it did."""

    def __init__(self, model):
        self.model, self.actions = model, []

    def predict(self, obs):
        action = self.model.act(obs)
        self.actions.append(action)
        return action


def _frozen_hero_run(model, seed):
    env = ChaseEnv(target="agent")
    recorder = _Recorder(model)
    target = _dqn(env, "target", seed=seed, learning_starts=100)
    run = MultiAgentRun(env, {"hero": recorder, "target": target}, 600, modes={"hero": "frozen"}, seed=seed).run()
    return recorder.actions, run


def test_frozen_agent_acts_greedily_and_identically_run_to_run():
    env = ChaseEnv(target="agent")
    hero = _dqn(env, "hero", seed=3)
    model = hero.to_model()
    params = model.network.params.copy()
    first, run = _frozen_hero_run(model, seed=5)
    second, _ = _frozen_hero_run(model, seed=5)
    assert len(first) == 600 and first == second
    np.testing.assert_array_equal(model.network.params, params)  # frozen: never trained
    assert run.trained == ["target"] and set(run.to_models()) == {"target"}
    assert run.slots["target"].agent.n_updates > 0  # the other side kept learning
    assert "hero" in run.status()["Frozen"]
    # a frozen learner uses its current network greedily: predict, never act/observe
    frozen = MultiAgentRun(env, {"hero": hero, "target": _dqn(env, "target")}, 50, modes={"hero": "frozen"}).run()
    assert hero.num_timesteps == 0 and frozen.slots["hero"].mode == "frozen"


@pytest.mark.slow
def test_hero_learns_to_catch_the_fleeing_target():
    """DQN hero against the scripted target (flees half the time): a random hero catches it in about 10 %
    of 30-step episodes; after 8000 steps the greedy hero catches it in at least 90 % of 50 evaluation episodes."""
    env = ChaseEnv()
    hero = _dqn(env, "hero", seed=0)
    run = MultiAgentRun(env, {"hero": hero}, 8000, seed=0, eval_env=ChaseEnv(), eval_interval=2000,
                        eval_episodes=50).run()
    _, mean_return, catch_rate = run.history.final_eval
    assert catch_rate >= 0.9, f"caught in {catch_rate:.0%} of episodes; evaluations {run.history.evals}"
    assert mean_return > 0.5


# ---- the tank duel ------------------------------------------------------------------------------------


def test_tank_duel_passes_check_parallel_env():
    check_parallel_env(TankDuel(), steps=120)


def test_tank_duel_is_the_same_game_from_both_sides():
    env = TankDuel(width=5, depth=6)
    env.reset(seed=0)
    env.pos = {"red": (1, 0), "blue": (3, 5)}  # blue's frame is red's turned half a circle
    obs, *_ = env.step({"red": WAIT, "blue": WAIT})
    np.testing.assert_allclose(obs["red"], [0.5, 1.0, 0.25, 0.0, 0.0])
    np.testing.assert_array_equal(obs["red"], obs["blue"])
    env.step({"red": MOVE_RIGHT, "blue": MOVE_RIGHT})  # each to its own right: red +x, blue -x
    assert env.pos == {"red": (2, 0), "blue": (2, 5)}
    env.step({"red": MOVE_BACK, "blue": MOVE_FRONT})  # red cannot leave its half; blue cannot cross the river
    env.step({"red": MOVE_FRONT, "blue": MOVE_FRONT})
    env.step({"red": MOVE_FRONT, "blue": MOVE_FRONT})
    env.step({"red": MOVE_FRONT, "blue": MOVE_FRONT})
    assert env.pos == {"red": (2, 2), "blue": (2, 3)}


def test_tank_duel_hits_misses_and_respawns():
    env = TankDuel(miss_penalty=0.1)
    env.reset(seed=0)
    env.pos = {"red": (2, 0), "blue": (2, 3)}
    env.elevation = {"red": 2, "blue": 0}  # red's shell lands 3 ahead, on blue; blue's 1 ahead, short of red
    _, rewards, terms, truncs, infos = env.step({"red": FIRE, "blue": FIRE})
    assert infos == {"red": {"hit": 1}, "blue": {"hit": 0}}
    assert rewards == {"red": 1.0, "blue": pytest.approx(-1.1)}
    assert env.pos["red"] == (2, 0) and env.pos["blue"][1] >= 3  # blue respawned in its half
    assert terms == {"red": False, "blue": False} and truncs == {"red": False, "blue": False}
    with pytest.raises(ValueError, match="needs an action"):
        env.step({"red": FIRE})


def test_tank_duel_both_learn_and_both_export(tmp_path):
    env = TankDuel(max_steps=20)
    agents = {n: _dqn(env, n, seed=i, learning_starts=50) for i, n in enumerate(env.possible_agents)}
    run = MultiAgentRun(env, agents, 400, seed=0).run()
    assert run.episodes == 20 and all(len(h.episode_returns) == 20 for h in run.histories.values())
    assert all(a.n_updates > 0 for a in agents.values())
    for name, model in run.to_models().items():
        loaded = load_model(save_model(tmp_path / f"{name}.json", model))
        assert loaded.meta["agent"] == name and loaded.meta["actions"][-1] == "fire"


@pytest.mark.slow
def test_tank_duel_red_learns_to_hit_a_frozen_blue():
    """Red learns, blue is frozen (an untrained network played greedily: it moves and aims by a fixed rule).
    After 20000 steps red's greedy shots hit at least 80 % of the time over 5 evaluation episodes with 20 or
    more shots; a random red hits 4 % of its shots against that blue (28 of 648 in 50 episodes)."""
    env = TankDuel()
    agents = {"red": _dqn(env, "red", seed=0, learning_starts=1000, target_update_interval=250),
              "blue": _dqn(env, "blue", seed=1)}
    run = MultiAgentRun(env, agents, 20_000, modes={"blue": "frozen"}, seed=0, eval_env=TankDuel(), eval_interval=4000,
                        eval_episodes=5).run()
    _, hits, shots, _ = run.histories["red"].final_eval_metric_totals
    assert shots >= 20 and hits / shots >= 0.8, f"{hits:g} hits of {shots} shots; evals {run.histories['red'].evals}"
    assert run.trained == ["red"] and set(run.to_models()) == {"red"}


class _Logged:
    """A learner that writes down at which step it acted while exploring, and when it learnt."""

    def __init__(self, agent, log):
        self.agent, self.log = agent, log

    def act(self, obs, explore=True):
        return self.agent.act(obs, explore=explore)

    def observe(self, *args):
        self.log.append(self.agent.num_timesteps)
        return self.agent.observe(*args)

    def predict(self, obs):
        return self.agent.predict(obs)

    def on_training_start(self, total):
        self.total = total
        self.agent.on_training_start(total)

    def to_model(self, meta=None):
        return self.agent.to_model(meta)


def test_self_play_lets_one_side_learn_at_a_time_against_the_other_frozen():
    """swap_every=100: steps 0-99 the hero learns and the target acts greedily from its network as it was, steps
    100-199 the other way round, and so on; each learner's exploration runs over its share of the steps."""
    env = ChaseEnv(target="agent")
    logs = {"hero": [], "target": []}
    agents = {name: _Logged(_dqn(env, name, seed=i, learning_starts=50), logs[name])
              for i, name in enumerate(("hero", "target"))}
    run = MultiAgentRun(env, agents, 400, seed=0, swap_every=100)
    learners = []
    while not run.done:
        learners.append(run.learner)
        run.advance(max_steps=1)
    assert learners == (["hero"] * 100 + ["target"] * 100) * 2
    assert logs["hero"] == list(range(0, 100)) + list(range(100, 200))  # it learnt at steps 0-99 and 200-299 only
    assert len(logs["target"]) == 200 and agents["hero"].total == agents["target"].total == 200
    with pytest.raises(ValueError, match="swap_every must be 0"):
        MultiAgentRun(env, agents, 10, swap_every=-1)


def test_self_play_freezes_the_side_that_waits():
    env = ChaseEnv(target="agent")
    hero, target = _dqn(env, "hero", seed=0, learning_starts=20), _dqn(env, "target", seed=1, learning_starts=20)
    run = MultiAgentRun(env, {"hero": hero, "target": target}, 300, seed=0, swap_every=100)
    run.advance(max_steps=100)  # the hero's turn: the target never learns
    assert run.learner == "target" and target.num_timesteps == 0 and hero.n_updates > 0
    hero_params = hero.q_network.params.copy()
    run.advance(max_steps=100)  # the target's turn: the hero's network is a frozen snapshot
    np.testing.assert_array_equal(hero.q_network.params, hero_params)
    assert target.n_updates > 0 and run.learner == "hero"
