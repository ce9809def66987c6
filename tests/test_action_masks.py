"""Action masks (Gymnasium's ``info["action_mask"]``): DQN and PPO choose only enabled actions, in training and
greedily, learn the TrapCorridor (whose mask removes a trap), resume bit for bit, and run on N copies."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from drla_core.base.vector_env import SyncVectorEnv
from drla_core.envs import make
from drla_core.envs.trap_corridor import TrapCorridor
from drla_core.rl.dqn import DQNAgent, DQNConfig
from drla_core.rl.ppo import PPOAgent, PPOConfig
from drla_core.rl.replay_buffer import ReplayBuffer
from drla_core.rl.train import TrainingRun
from drla_core.rl.vector_train import VectorTrainingRun, real_next_masks


class Audit(TrapCorridor):
    """A TrapCorridor that counts the actions taken that its mask disabled, and the falls."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.disabled_taken = 0
        self.falls = 0
        self.taken = 0

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.taken += 1
        self.disabled_taken += int(self.action_mask()[int(action)] == 0)
        out = super().step(action)
        self.falls += int(out[4].get("fell", 0))
        return out


def _dqn(env: TrapCorridor, seed: int = 0, **kw: Any) -> DQNAgent:
    cfg = DQNConfig(learning_starts=200, train_freq=16, gradient_steps=8, exploration_fraction=0.3,
                    buffer_size=5000, target_update_interval=100, learning_rate=1e-3, **kw)
    return DQNAgent(env.observation_space, env.action_space, cfg, seed=seed)


def _ppo(env: TrapCorridor, seed: int = 0) -> PPOAgent:
    return PPOAgent(env.observation_space, env.action_space, PPOConfig(n_steps=128, batch_size=64), seed=seed)


def test_the_env_gives_a_mask_on_reset_and_every_step() -> None:
    env = make("trap_corridor", length=4)
    obs, info = env.reset(seed=1)
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].tolist() == env.action_mask().tolist()
    env.cell = 3
    _, reward, terminated, _, info = env.step(2)
    assert (reward, terminated, info["escaped"]) == (1.0, True, 1)
    assert "action_mask" not in TrapCorridor(masked=False).reset(seed=0)[1]


@pytest.mark.parametrize("make_agent", [_dqn, _ppo])
def test_masked_training_never_takes_a_disabled_action_and_learns(make_agent: Any) -> None:
    env, eval_env = Audit(), Audit()
    run = TrainingRun(env, make_agent(env), 3000, seed=0, eval_env=eval_env, eval_interval=1000, eval_episodes=10)
    run.run()
    assert env.taken == 3000 and env.disabled_taken == 0 and env.falls == 0
    assert eval_env.taken > 0 and eval_env.disabled_taken == 0  # greedy evaluations honour it too
    assert run.history.final_eval is not None and run.history.final_eval[2] == 1.0  # every evaluation episode escapes
    # the same agent without the mask explores into the trap: the audit can see a disabled action
    bare = Audit(masked=False)
    TrainingRun(bare, make_agent(bare), 1000, seed=0).run()
    assert bare.disabled_taken > 0 and bare.falls > 0


def test_masked_dqn_solves_the_corridor_no_later_than_without_the_mask() -> None:
    first_solved = {}
    for masked in (True, False):
        env = TrapCorridor(masked=masked)
        run = TrainingRun(env, _dqn(env), 4000, seed=0, eval_env=TrapCorridor(masked=masked), eval_interval=500,
                          eval_episodes=10).run()
        first_solved[masked] = next(step for step, _, metric in run.history.evals if metric == 1.0)
    assert first_solved[True] <= first_solved[False]


@pytest.mark.parametrize("double_dqn", [False, True])
def test_dqn_td_target_maxes_over_the_next_enabled_actions(double_dqn: bool) -> None:
    env = TrapCorridor(length=3)
    agent = _dqn(env, double_dqn=double_dqn)
    agent.config.gradient_steps = 1
    # one transition into a state whose Q-values favour a disabled action by far
    obs, next_obs = np.eye(3, dtype=np.float32)[0], np.eye(3, dtype=np.float32)[1]
    layer = agent.target_network
    layer.params[:] = 0.0
    agent.q_network.params[:] = 0.0
    last_b = layer.biases[-1]
    last_b[...] = [5.0, 1.0, 100.0]  # action 2 (open) is worth 100 but disabled in the next state
    agent.q_network.biases[-1][...] = [5.0, 1.0, 100.0]
    for _ in range(agent.config.batch_size):
        agent.replay_buffer.add(obs, 1, 0.0, next_obs, False, False, next_mask=np.array([0, 1, 0], np.int8))
    data = agent.replay_buffer.sample(4, np.random.default_rng(0))
    assert data.next_masks is not None and data.next_masks.tolist() == [[False, True, False]] * 4
    agent.config.learning_rate = 0.0
    agent.optimizer.lr = 0.0
    loss = agent.update(1)
    # Q(s, right) = 1, target = 0 + 0.99 * Q_target(s', right) = 0.99 (not 0.99 * 100): mse = 0.01 ** 2
    assert loss == pytest.approx((1.0 - 0.99) ** 2, abs=1e-6)


def test_dqn_acting_picks_only_enabled_actions_greedy_and_random() -> None:
    env = TrapCorridor(length=4)
    agent = _dqn(env)
    agent.q_network.params[:] = 0.0
    agent.q_network.biases[-1][...] = [0.0, 1.0, 9.0]
    obs = np.eye(4, dtype=np.float32)[:2]
    assert agent.predict(obs[0]) == 2 and agent.predict(obs[0], np.array([1, 1, 0])) == 1
    agent.epsilon = 1.0
    picks = {agent.act(obs[0], mask=np.array([1, 0, 1])) for _ in range(200)}
    assert picks == {0, 2}
    masks = np.array([[1, 0, 0], [0, 1, 1]], dtype=np.int8)
    batch = np.array([agent.act_batch(obs, masks=masks) for _ in range(200)])
    assert set(batch[:, 0]) == {0} and set(batch[:, 1]) == {1, 2}
    assert agent.act_batch(obs, explore=False, masks=masks).tolist() == [0, 2]
    # a row that enables nothing is ignored (every action stays possible) rather than leaving no choice
    assert agent.predict(obs[0], np.zeros(3)) == 2


def test_ppo_masked_logits_give_disabled_actions_zero_probability_and_zero_gradient() -> None:
    env = TrapCorridor(length=4)
    agent = _ppo(env)
    obs = np.eye(4, dtype=np.float32)[[0, 1, 2, 3] * 8]
    masks = np.tile(np.array([[1, 0, 1]], dtype=np.int8), (32, 1))
    actions = np.array([agent.act_batch(obs, masks=masks) for _ in range(20)])
    assert set(actions.ravel()) == {0, 2}
    assert agent.buf_masks is not None and agent.buf_masks[:20].all(axis=(0, 1)).tolist() == [True, False, True]
    assert agent.predict(obs[0], np.array([0, 1, 0])) == 1
    # the loss under the mask: finite; the disabled logit has probability 0 and gets no gradient
    adv = np.random.default_rng(0).standard_normal(32).astype(np.float32)
    zeros = np.zeros(32, np.float32)
    figures, grads = agent.losses(agent.buf_obs[0], agent.buf_actions[0], agent.buf_logp[0], zeros, adv, zeros, 0.2,
                                  masks=agent.buf_masks[0])
    assert np.isfinite(figures).all() and all(np.isfinite(g).all() for g in grads)
    p = agent.head._cache[0][0]
    assert (p[:, 1] == 0.0).all() and (p[:, [0, 2]] > 0.0).all()
    grad_logits, _ = agent.head.backward(np.ones(32, np.float32), np.ones(32, np.float32))
    assert (grad_logits[:, 1] == 0.0).all() and (grad_logits[:, 0] != 0.0).any()
    # the stored log-probabilities are those of the masked distribution
    masked_out = agent.actor.forward(agent.buf_obs[0])[:, :3] + np.where(masks == 0, -1e9, 0).astype(np.float32)
    assert np.allclose(agent.buf_logp[0], agent.head.evaluate(masked_out, agent.buf_actions[0])[0], atol=1e-5)


def test_replay_buffer_keeps_next_masks_only_when_given() -> None:
    buf = ReplayBuffer(4, (2,))
    buf.add(np.zeros(2), 0, 0.0, np.zeros(2), False, False)
    assert buf.next_masks is None and buf.sample(2, np.random.default_rng(0)).next_masks is None
    buf.add_batch(np.zeros((6, 2)), np.zeros(6, np.int64), np.zeros(6), np.zeros((6, 2)), np.zeros(6), np.zeros(6),
                  next_masks=np.tile([[1, 0, 1]], (6, 1)))
    assert buf.next_masks is not None and buf.next_masks.tolist() == [[True, False, True]] * 4


@pytest.mark.parametrize("agent_kind", ["dqn", "ppo"])
def test_vector_runs_pass_each_copys_mask(agent_kind: str) -> None:
    audits = [Audit() for _ in range(3)]
    venv = SyncVectorEnv([lambda e=e: e for e in audits])
    agent = _dqn(audits[0]) if agent_kind == "dqn" else _ppo(audits[0])
    VectorTrainingRun(venv, agent, 1500, seed=0).run()
    assert sum(a.taken for a in audits) >= 1500
    assert sum(a.disabled_taken for a in audits) == 0 and sum(a.falls for a in audits) == 0


def test_real_next_masks_take_the_final_mask_of_a_copy_that_ended() -> None:
    infos = {"action_mask": np.array([[1, 1, 0], [1, 0, 0]], np.int8), "_action_mask": np.array([True, True]),
             "_final_obs": np.array([False, True]),
             "final_info": {"action_mask": np.array([[0, 0, 0], [0, 1, 1]], np.int8),
                            "_action_mask": np.array([False, True])}, "_final_info": np.array([False, True])}
    out = real_next_masks(infos)
    assert out is not None and out.tolist() == [[1, 1, 0], [0, 1, 1]]
    assert real_next_masks({}) is None


@pytest.mark.parametrize("agent_kind", ["dqn", "ppo"])
def test_resume_with_masks_is_bit_exact(tmp_path: Any, agent_kind: str) -> None:
    def build() -> TrainingRun:
        env = TrapCorridor()
        agent = _dqn(env) if agent_kind == "dqn" else _ppo(env)
        return TrainingRun(env, agent, 1200, seed=3, eval_env=TrapCorridor(), eval_interval=400, eval_episodes=3)

    straight = build().run()
    first = build()
    first.advance(max_steps=650)
    path = first.save_checkpoint(tmp_path / "run.npz")
    resumed = build()
    resumed.load_checkpoint(path)
    resumed.run()
    assert resumed.history.episode_returns == straight.history.episode_returns
    assert resumed.history.evals == straight.history.evals
    a, b = straight.agent, resumed.agent
    params = (a.q_network.params, b.q_network.params) if agent_kind == "dqn" else (a.actor.params, b.actor.params)
    assert np.array_equal(*params)
    if agent_kind == "dqn":
        assert a.replay_buffer.next_masks is not None
        assert np.array_equal(a.replay_buffer.next_masks, b.replay_buffer.next_masks)


def _trained_model() -> Any:
    env = TrapCorridor(length=5)
    run = TrainingRun(env, _dqn(env), 600, seed=0)
    run.run()
    return run.to_model()


def test_the_model_of_a_masked_run_says_so_and_its_act_takes_a_mask() -> None:
    model = _trained_model()
    assert model.meta["action_mask"] is True and model.meta["actions"] == ["left", "right", "open"]
    bare = TrapCorridor(masked=False)
    assert "action_mask" not in TrainingRun(bare, _dqn(bare), 10, seed=0).run().to_model().meta
    x = np.random.default_rng(1).random((200, 5)).astype(np.float32)
    masks = np.random.default_rng(2).integers(0, 2, (200, 3)).astype(np.int8)
    masks[0] = 0  # enables none: ignored
    q = model.predict(x)
    acted = model.act(x, masks)
    assert np.array_equal(acted, np.where(masks != 0, q, -np.inf).argmax(axis=1) * masks.any(axis=1)
                          + q.argmax(axis=1) * ~masks.any(axis=1))
    assert all(masks[i, a] for i, a in enumerate(acted) if masks[i].any())
    assert model.act(x[3], masks[3]) == acted[3]


def test_onnx_export_of_a_masked_model_has_the_action_mask_input(tmp_path: Any) -> None:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed: ONNX NOT verified")
    pytest.importorskip("onnx", reason="onnx is not installed")
    from drla import onnx_io

    model = _trained_model()
    path = onnx_io.export_onnx(model, tmp_path / "m.onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["obs", "action_mask"]
    x = np.random.default_rng(1).random((300, 5)).astype(np.float32)
    masks = np.random.default_rng(2).integers(0, 2, (300, 3)).astype(np.float32)
    masks[masks.sum(axis=1) == 0, 1] = 1.0  # (ONNX: every row enables one action at least)
    output, action = session.run(["output", "action"], {"obs": x, "action_mask": masks})
    assert np.array_equal(action, model.act(x, masks))
    assert np.abs(output - model.predict(x)).max() <= 1e-5 * max(1.0, float(np.abs(output).max()))
    # import-onnx reads the network back, the mask input ignored
    back = onnx_io.import_onnx(path)
    assert np.array_equal(back.act(x, masks), model.act(x, masks))


def test_gymnasium_wrapper_passes_the_mask_through() -> None:
    import gymnasium

    import drla.gym  # noqa: F401  (registers drla/<Name>-v0)

    env = gymnasium.make("drla/TrapCorridor-v0")
    _, info = env.reset(seed=0)
    assert info["action_mask"].tolist() == [int(info["action_mask"][0]), 1, 0]
    _, _, _, _, info = env.step(1)
    assert info["action_mask"].dtype == np.int8 and info["action_mask"][2] == 0


def test_cli_trains_a_masked_env_and_the_model_says_so(tmp_path: Any) -> None:
    import json
    import os
    import subprocess
    import sys

    out = tmp_path / "tc.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(__import__("pathlib").Path(__file__).parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "drla", "train", "trap_corridor", "--steps", "1500", "--out",
                           str(out), "--quiet", "--eval-interval", "0"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["meta"]["action_mask"] is True
    done = subprocess.run([sys.executable, "-m", "drla", "eval", str(out), "--episodes", "5"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0 and "trap_corridor: mean return" in done.stdout, done.stderr
