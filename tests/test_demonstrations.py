"""Demonstration files (drla_core/io/demos.py) and learning from them (drla_core/rl/bc.py, drla train --demo).

The demonstrator is a hand-written cart-pole controller (it balances every episode to the 500-step limit)."""

import io
import json
import zipfile

import numpy as np
import pytest

from drla.cli import main
from drla_core.base.spaces import Box, Discrete
from drla_core.envs import make
from drla_core.io import demos
from drla_core.io.demos import Demonstration, DemoFormatError, demo_fits, episodes, load_demo, save_demo
from drla_core.io.model_io import load_model
from drla_core.rl import bc
from drla_core.rl.dqn import DQNAgent, DQNConfig
from drla_core.rl.ppo import PPOAgent, PPOConfig
from drla_core.rl.train import TrainingRun


def expert(o):
    """Push the cart toward the side the pole falls to (with a little position and speed feedback)."""
    x, v, th, w = o
    return int(th + 0.5 * w + 0.01 * x + 0.1 * v > 0)


def record(env, n, seed=0, policy=expert):
    rows = {k: [] for k in ("obs", "actions", "rewards", "terminated", "truncated")}
    for ep in range(n):
        o, _ = env.reset(seed=seed + ep)
        while True:
            a = policy(o)
            o2, r, term, trunc, _ = env.step(a)
            for k, v in zip(rows, (o, a, r, term, trunc and not term)):
                rows[k].append(v)
            o = o2
            if term or trunc:
                break
    return Demonstration(env.observation_space, env.action_space, np.array(rows["obs"]), rows["actions"],
                         rows["rewards"], rows["terminated"], rows["truncated"], source={"env": "cartpole"})


def greedy_return(env, agent, n=5, seed=100):
    total = 0.0
    for ep in range(n):
        o, _ = env.reset(seed=seed + ep)
        while True:
            o, r, term, trunc, _ = env.step(agent.predict(o))
            total += r
            if term or trunc:
                break
    return total / n


@pytest.fixture(scope="module")
def cartpole_demo():
    return record(make("cartpole"), 5)


def small_demo(**kw):
    args = dict(observation_space=Box(-1, 1, (3,)), action_space=Discrete(3, ["left", "stay", "right"]),
                obs=np.arange(15, dtype=np.float32).reshape(5, 3) / 15, actions=[0, 1, 2, 1, 0],
                rewards=[0, 0, 1, 0, 1], terminated=[0, 0, 1, 0, 0], truncated=[0, 0, 0, 0, 1],
                source={"blend": "tank.blend", "tree": "Tank"}, recorded_by="keyboard", meta={"note": "x"})
    args.update(kw)
    return Demonstration(**args)


# ---- the file ---------------------------------------------------------------------------------------------------


def test_round_trip_discrete_and_box(tmp_path):
    demo = small_demo()
    back = load_demo(save_demo(tmp_path / "d.npz", demo))
    assert np.array_equal(back.obs, demo.obs) and back.obs.dtype == np.float32
    assert back.actions.tolist() == [0, 1, 2, 1, 0] and back.actions.dtype == np.int64
    assert back.rewards.tolist() == [0, 0, 1, 0, 1]
    assert episodes(back) == [(0, 3), (3, 5)] and back.n_episodes == 2 and back.episode_returns() == [1.0, 1.0]
    assert back.action_space.names == ["left", "stay", "right"]
    assert back.source == {"blend": "tank.blend", "tree": "Tank"} and back.recorded_by == "keyboard"
    assert back.meta == {"note": "x"}
    box = small_demo(action_space=Box(-1, 1, (2,)), actions=np.linspace(-1, 1, 10).reshape(5, 2))
    back = load_demo(save_demo(tmp_path / "b.npz", box))
    assert back.actions.shape == (5, 2) and np.allclose(back.actions, box.actions)


def test_file_is_plain_npz_without_pickle(tmp_path):
    path = save_demo(tmp_path / "d.npz", small_demo())
    with np.load(path, allow_pickle=False) as npz:
        assert sorted(npz.files) == sorted(demos.MEMBERS)
        meta = json.loads(npz["meta.json"].tobytes())
    assert meta["format"] == "drla-demonstration" and meta["version"] == 1
    assert meta["action_space"]["type"] == "discrete"


def _rewrite(src, dst, replace=None, drop=(), add=None):
    """A copy of the npz ``src`` with members replaced (name -> array, saved without pickle unless object)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            name = info.filename[:-4]
            if name in drop:
                continue
            if replace and name in replace:
                buf = io.BytesIO()
                np.save(buf, replace[name], allow_pickle=True)
                zout.writestr(info.filename, buf.getvalue())
            else:
                zout.writestr(info, zin.read(info))
        for name, arr in (add or {}).items():
            buf = io.BytesIO()
            np.save(buf, arr)
            zout.writestr(name + ".npy", buf.getvalue())
    return dst


def _meta_bytes(**changes):
    meta = json.loads(json.dumps({"format": "drla-demonstration", "version": 1,
                                  "observation_space": Box(-1, 1, (3,)).to_dict(),
                                  "action_space": Discrete(3).to_dict(), "source": {}, "recorded_by": "script"}))
    meta.update(changes)
    return np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)


@pytest.mark.parametrize("case, message", [
    ("pickle", "cannot be read without unpickling"),
    ("extra", "unexpected member 'run.py.npy'"),
    ("missing", "missing member 'rewards.npy'"),
    ("action", "action 7 at step 1 is outside 0..2"),
    ("format", "format is 'drla-model', not 'drla-demonstration'"),
    ("version", "version 9 is not supported"),
    ("unknown_key", "meta.json: unknown key 'code'"),
    ("nan", "obs holds a NaN or infinite value"),
    ("shape", "obs has shape (5, 4), expected (5, 3)"),
    ("open_end", "the last step does not end an episode"),
    ("dtype", "actions has dtype float32, expected integers"),
    ("meta_json", "meta.json: "),
])
def test_hostile_or_damaged_files_are_refused_with_a_message(tmp_path, case, message):
    good = save_demo(tmp_path / "good.npz", small_demo())
    bad = tmp_path / "bad.npz"
    obs = np.arange(15, dtype=np.float32).reshape(5, 3) / 15
    if case == "pickle":
        _rewrite(good, bad, replace={"obs": np.array([object()] * 5, dtype=object)})
    elif case == "extra":
        _rewrite(good, bad, add={"run.py": np.zeros(3)})
    elif case == "missing":
        _rewrite(good, bad, drop=("rewards",))
    elif case == "action":
        _rewrite(good, bad, replace={"actions": np.array([0, 7, 1, 1, 0])})
    elif case == "format":
        _rewrite(good, bad, replace={"meta.json": _meta_bytes(format="drla-model")})
    elif case == "version":
        _rewrite(good, bad, replace={"meta.json": _meta_bytes(version=9)})
    elif case == "unknown_key":
        _rewrite(good, bad, replace={"meta.json": _meta_bytes(code="import os")})
    elif case == "nan":
        obs[2, 1] = np.nan
        _rewrite(good, bad, replace={"obs": obs})
    elif case == "shape":
        _rewrite(good, bad, replace={"obs": np.zeros((5, 4), dtype=np.float32)})
    elif case == "open_end":
        _rewrite(good, bad, replace={"truncated": np.zeros(5, dtype=bool)})
    elif case == "dtype":
        _rewrite(good, bad, replace={"actions": np.zeros(5, dtype=np.float32)})
    elif case == "meta_json":
        _rewrite(good, bad, replace={"meta.json": np.frombuffer(b"{not json", dtype=np.uint8)})
    with pytest.raises(DemoFormatError) as err:
        load_demo(bad)
    assert message in str(err.value)


def test_not_a_zip_and_oversized_files_are_refused_before_reading(tmp_path, monkeypatch):
    (tmp_path / "x.npz").write_bytes(b"print('hi')\n")
    with pytest.raises(DemoFormatError, match="not a zip archive"):
        load_demo(tmp_path / "x.npz")
    with pytest.raises(DemoFormatError, match="cannot read the demonstration"):
        load_demo(tmp_path / "absent.npz")
    # a zip bomb: its directory declares more unzipped bytes than the limit (zeros compress to almost nothing)
    big = small_demo(obs=np.zeros((5, 3), dtype=np.float32))
    path = save_demo(tmp_path / "z.npz", big)
    monkeypatch.setattr(demos, "MAX_DEMO_BYTES", 600)
    assert path.stat().st_size < 2000
    with pytest.raises(DemoFormatError, match="more than the limit of 600"):
        load_demo(path)


def test_demonstration_must_fit_the_agent(cartpole_demo):
    with pytest.raises(DemoFormatError, match=r"observations have shape \(4,\), the agent reads \(3,\)"):
        demo_fits(cartpole_demo, Box(-1, 1, (3,)), Discrete(2))
    with pytest.raises(DemoFormatError, match="the demonstration has 2 actions, the agent 3"):
        demo_fits(cartpole_demo, cartpole_demo.observation_space, Discrete(3))
    with pytest.raises(DemoFormatError, match="the demonstration has Discrete actions, the agent Box ones"):
        demo_fits(cartpole_demo, cartpole_demo.observation_space, Box(-1, 1, (1,)))


# ---- learning from it ---------------------------------------------------------------------------------------------


def test_dqn_pretraining_imitates_the_expert(cartpole_demo):
    env = make("cartpole")
    assert greedy_return(env, expert_agent()) == 500.0  # the demonstrator itself
    agent = DQNAgent(env.observation_space, env.action_space, DQNConfig(), seed=0)
    before = greedy_return(env, agent)
    figures = bc.pretrain_dqn(agent, cartpole_demo, steps=1000, seed=0)
    assert before < 50 and figures["agreement"] > 0.85
    assert greedy_return(env, agent) >= 475
    # every step but each episode's last, cut at the 500-step limit (no next observation to learn a target from)
    assert int(cartpole_demo.truncated.sum()) == 5
    assert bc.fill_replay(agent, cartpole_demo) == len(cartpole_demo) - 5 == len(agent.replay_buffer)


def expert_agent():
    class Expert:
        predict = staticmethod(expert)
    return Expert()


def test_ppo_cloning_imitates_the_expert(cartpole_demo):
    env = make("cartpole")
    agent = PPOAgent(env.observation_space, env.action_space, PPOConfig(), seed=0)
    before = greedy_return(env, agent)
    figures = bc.pretrain_ppo(agent, cartpole_demo, epochs=20, seed=0)
    assert before < 50 and figures["agreement"] > 0.85
    assert greedy_return(env, agent) >= 475


def test_ppo_cloning_of_continuous_actions():
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (400, 2)).astype(np.float32)
    actions = np.clip(0.8 * obs[:, :1] - 0.3 * obs[:, 1:], -1, 1)
    ends = np.zeros(400, bool)
    ends[-1] = True
    demo = Demonstration(Box(-1, 1, (2,)), Box(-1, 1, (1,)), obs, actions, np.zeros(400), np.zeros(400), ends)
    agent = PPOAgent(Box(-1, 1, (2,)), Box(-1, 1, (1,)), PPOConfig(), seed=0)
    log_std = agent.head.log_std.copy()
    figures = bc.pretrain_ppo(agent, demo, epochs=40, seed=0)
    assert figures["mean_abs_error"] < 0.05
    assert np.array_equal(agent.head.log_std, log_std)  # exploration left as it was


def test_ppo_bc_term_decays_and_pulls_toward_the_demonstration(cartpole_demo):
    env = make("cartpole")
    config = dict(n_steps=256, batch_size=64, n_epochs=4)
    agreements = {}
    for with_term in (False, True):
        agent = PPOAgent(env.observation_space, env.action_space, PPOConfig(**config), seed=0)
        weights = []
        if with_term:
            bc.attach_bc_term(agent, cartpole_demo, strength=1.0, decay_steps=1024, seed=0)
            inner = agent.update

            def spy(last_values, inner=inner, agent=agent, weights=weights):
                loss = inner(last_values)
                weights.append(agent.stats.get("bc_weight", 0.0))
                return loss
            agent.update = spy
        run = TrainingRun(env, agent, 512, seed=0, eval_interval=0)
        run.run()
        x = cartpole_demo.obs
        logp, _ = agent.head.evaluate(agent.actor.forward(x), cartpole_demo.actions)
        agreements[with_term] = float(np.mean(logp))  # the demonstrated actions' mean log-likelihood
        if with_term:  # 1 - steps/1024 after each 256-step rollout, then nothing once it reaches 0
            run.total_steps = 1536
            TrainingRun(env, agent, 1024, seed=1, eval_interval=0).run()
            assert weights == pytest.approx([0.75, 0.5, 0.25, 0.0, 0.0, 0.0])
    # (a gentle pull, as ML-Agents': PPO's learning rate, as many steps as PPO's own)
    assert agreements[True] > agreements[False] + 0.02


# ---- drla train --demo ---------------------------------------------------------------------------------------------


def test_cli_train_with_demo(tmp_path, capsys, cartpole_demo):
    path = save_demo(tmp_path / "cp.npz", cartpole_demo)
    out = tmp_path / "m.json"
    assert main(["train", "cartpole", "--demo", str(path), "--steps", "300", "--learning-starts", "1000",
                 "--eval-interval", "0", "--quiet", "--seed", "0", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"demonstration {path}: {len(cartpole_demo)} steps, 5 episodes; margin_loss" in err
    model = load_model(out)
    assert greedy_return(make("cartpole"), model_as_agent(model)) >= 475  # 300 steps without learning: the cloning


def test_cli_train_ppo_with_demo(tmp_path, capsys, cartpole_demo):
    """PPO: cloned first, then PPO's updates with the decaying BC term; 2048 steps are not enough without it."""
    path = save_demo(tmp_path / "cp.npz", cartpole_demo)
    returns = {}
    for extra in ([], ["--demo", str(path)]):
        out = tmp_path / f"p{len(extra)}.json"
        assert main(["train", "cartpole", "--agent", "ppo", *extra, "--steps", "2048", "--eval-interval", "0",
                     "--quiet", "--seed", "0", "--out", str(out)]) == 0
        returns[bool(extra)] = greedy_return(make("cartpole"), model_as_agent(load_model(out)))
    assert f"demonstration {path}: {len(cartpole_demo)} steps, 5 episodes; nll" in capsys.readouterr().err
    assert returns[True] >= 475 and returns[False] < 200


def model_as_agent(model):
    class Agent:
        def predict(self, o):
            return model.act(o)
    return Agent()


def test_cli_demo_mistakes(tmp_path, capsys, cartpole_demo):
    path = save_demo(tmp_path / "cp.npz", cartpole_demo)
    assert main(["train", "identity", "--demo", str(path), "--steps", "100", "--quiet", "--out",
                 str(tmp_path / "i.json")]) == 2
    assert "error: --demo: the demonstration has 2 actions, the agent 4" in capsys.readouterr().err
    assert main(["train", "cartpole", "--agent", "ga", "--demo", str(path), "--quiet"]) == 2
    assert "error: --demo: --agent ga does not learn from demonstrations" in capsys.readouterr().err
    (tmp_path / "bad.npz").write_bytes(b"junk")
    assert main(["train", "cartpole", "--demo", str(tmp_path / "bad.npz"), "--quiet"]) == 2
    assert "error: --demo: bad.npz: not a demonstration file" in capsys.readouterr().err
