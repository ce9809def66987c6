"""``drla import-sb3`` / ``drla.sb3_io.sb3_to_model``: Stable-Baselines3 policies come back as DRLA model files
(issue 25, item 3).

Tiny SB3 runs on ``drla/CartPole-v0`` (DQN, PPO, A2C) and ``drla/Pendulum-v0`` (PPO, continuous) are saved, converted,
and DRLA's model acts as SB3's deterministic ``predict`` on a thousand observations; the network's outputs equal
SB3's own (Q-values, logits, means). Damaged and hostile zips are refused with one line, and nothing in them is
run. A converted policy of the tank tree's sizes plays the shipped tank scene headless (``drla play``), as
Blender's Play does with the same file.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

sb3 = pytest.importorskip("stable_baselines3")
torch = pytest.importorskip("torch")
gymnasium = pytest.importorskip("gymnasium")

import drla.gym  # noqa: E402,F401 - registers drla/CartPole-v0
from drla.cli import main  # noqa: E402
from drla.sb3_io import sb3_to_model  # noqa: E402
from drla_core.io.model_io import ModelFormatError, load_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TANK = ROOT / "scenes" / "tank" / "tank.blend"


def _observations(env_id: str, n: int = 1000, seed: int = 0) -> np.ndarray:
    """States the env visits under random actions, and as many drawn around them (wider than it visits)."""
    env = gymnasium.make(env_id)
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    seen = []
    while len(seen) < n // 2:
        seen.append(obs)
        obs, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            obs, _ = env.reset()
    seen = np.asarray(seen, np.float32)
    rng = np.random.default_rng(seed)
    drawn = rng.normal(0.0, 5.0 * np.abs(seen).max(axis=0) + 0.1, size=(n - len(seen), seen.shape[1]))
    drawn = drawn.astype(np.float32)
    return np.concatenate([seen, drawn])


@pytest.fixture(scope="module")
def zips(tmp_path_factory) -> dict[str, Path]:
    """Small SB3 runs, saved as SB3 saves them."""
    folder = tmp_path_factory.mktemp("sb3")
    torch.manual_seed(0)
    cart, pend = gymnasium.make("drla/CartPole-v0"), gymnasium.make("drla/Pendulum-v0")
    runs = {
        "dqn": sb3.DQN("MlpPolicy", cart, seed=1, learning_starts=100, train_freq=4, batch_size=32,
                       learning_rate=1e-3, target_update_interval=100, policy_kwargs={"net_arch": [32, 32]}).learn(600),
        "ppo": sb3.PPO("MlpPolicy", cart, seed=0, n_steps=128, batch_size=64, n_epochs=2,
                       policy_kwargs={"net_arch": [16, 16], "activation_fn": torch.nn.ReLU}).learn(128),
        "a2c": sb3.A2C("MlpPolicy", cart, seed=0, n_steps=16).learn(64),
        "ppo_continuous": sb3.PPO("MlpPolicy", pend, seed=0, n_steps=64, batch_size=32, n_epochs=2,
                                  policy_kwargs={"net_arch": [16]}).learn(64),
    }
    out = {}
    for name, model in runs.items():
        model.save(folder / f"{name}.zip")
        out[name] = folder / f"{name}.zip"
    return out


def _sb3_outputs(policy_zip: Path, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SB3's deterministic actions and the outputs of the network they come from (Q-values, logits or means)."""
    algo = {"dqn": sb3.DQN, "ppo": sb3.PPO, "a2c": sb3.A2C}[policy_zip.stem.split("_")[0]]
    model = algo.load(policy_zip, device="cpu")
    actions, _ = model.predict(obs, deterministic=True)
    with torch.no_grad():
        x = torch.as_tensor(obs)
        if algo is sb3.DQN:
            outputs = model.q_net(x)
        else:
            outputs = model.policy.action_net(model.policy.mlp_extractor.forward_actor(x))
    return np.asarray(actions), outputs.numpy()


@pytest.mark.parametrize("name", ["dqn", "ppo", "a2c"])
def test_discrete_policies_act_as_sb3_predicts(zips, name):
    model = sb3_to_model(zips[name])
    obs = _observations("drla/CartPole-v0")
    actions, outputs = _sb3_outputs(zips[name], obs)
    assert model.kind == "dqn" and model.action_space.n == 2 and model.network.input_size == 4
    np.testing.assert_allclose(model.predict(obs), outputs, rtol=1e-5, atol=1e-6)
    ours = model.act(obs)
    assert np.array_equal(ours, actions), f"{np.sum(ours != actions)} of {len(obs)} actions differ"
    assert len(set(actions.tolist())) == 2  # both actions occur: the comparison means something
    assert [model.act(o) for o in obs[:50]] == actions[:50].tolist()  # one observation at a time too


def test_activations_and_layers_come_from_the_policy(zips):
    arch = sb3_to_model(zips["ppo"]).network.architecture()
    assert arch["hidden"] == [{"size": 16, "activation": "relu"}] * 2
    arch = sb3_to_model(zips["a2c"]).network.architecture()
    assert arch["hidden"] == [{"size": 64, "activation": "tanh"}] * 2  # SB3's actor-critic default
    arch = sb3_to_model(zips["dqn"]).network.architecture()
    assert arch["hidden"] == [{"size": 32, "activation": "relu"}] * 2 and arch["output_activation"] == "linear"


def test_continuous_ppo_acts_with_its_clipped_mean(zips):
    model = sb3_to_model(zips["ppo_continuous"])
    obs = _observations("drla/Pendulum-v0")
    actions, means = _sb3_outputs(zips["ppo_continuous"], obs)
    assert model.kind == "mlp" and model.action_space.shape == (1,)
    np.testing.assert_allclose(model.predict(obs), means, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.act(obs), actions, rtol=1e-5, atol=1e-6)
    assert model.action_space.low.tolist() == [-1.0] and model.action_space.high.tolist() == [1.0]


def test_cli_writes_a_model_that_drla_reads_and_plays(zips, tmp_path, capsys):
    out = tmp_path / "cartpole_from_sb3.json"
    assert main(["import-sb3", str(zips["dqn"]), "--out", str(out), "--actions", "push_left,push_right"]) == 0
    said = capsys.readouterr().out
    assert "kind dqn" in said and "4 -> 32 relu -> 32 relu -> 2 linear" in said
    model = load_model(out)
    assert model.action_space.names == ["push_left", "push_right"] and model.meta["imported_from"].startswith("Stable")
    assert model.meta["training_steps"] == 600
    assert main(["eval", str(out), "--env", "cartpole", "--episodes", "2"]) == 0
    assert "cartpole: mean return" in capsys.readouterr().out
    assert main(["import-sb3", str(zips["ppo"]), "--out", str(tmp_path / "evo.json"), "--kind", "mlp"]) == 0
    assert load_model(tmp_path / "evo.json").kind == "mlp"


# ---- refusals: one line, nothing run ------------------------------------------------------------------------


def _rezip(src: Path, dst: Path, **members: bytes | None) -> Path:
    """``src`` with members replaced (bytes) or removed (None); ``policy_pth=`` names ``policy.pth``."""
    members = {k.replace("_pth", ".pth"): v for k, v in members.items()}
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if info.filename in members:
                continue
            zout.writestr(info.filename, zin.read(info.filename))
        for name, value in members.items():
            if value is not None:
                zout.writestr(name, value)
    return dst


class _Payload:
    """Unpickling this would create ``marker``: what a hostile file would do, made visible."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _state(policy_zip: Path) -> dict:
    with zipfile.ZipFile(policy_zip) as z:
        return torch.load(io.BytesIO(z.read("policy.pth")), weights_only=True)


def _data(policy_zip: Path) -> dict:
    with zipfile.ZipFile(policy_zip) as z:
        return json.loads(z.read("data"))


def _torch_bytes(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _refusal(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_hostile_pickles_are_refused_and_not_run(zips, tmp_path, capsys):
    marker = tmp_path / "payload_ran"
    state = _state(zips["dqn"])
    hostile = {
        "raw pickle": pickle.dumps(_Payload(marker)),
        "in a state dict": _torch_bytes({**state, "q_net.q_net.0.weight": _Payload(marker)}),
    }
    for what, payload in hostile.items():
        bad = _rezip(zips["dqn"], tmp_path / "bad.zip", policy_pth=payload)
        line = _refusal(["import-sb3", str(bad), "--out", str(tmp_path / "x.json")], capsys)
        assert "policy.pth' is not a plain PyTorch state dict" in line and "nothing of it was run" in line, what
        assert not marker.exists(), f"{what}: the payload ran"
    # a pickle as 'data': never unpickled, refused as not JSON
    bad = _rezip(zips["dqn"], tmp_path / "bad.zip", data=pickle.dumps(_Payload(marker)))
    assert "'data' is not JSON" in _refusal(["import-sb3", str(bad), "--out", str(tmp_path / "x.json")], capsys)
    assert not marker.exists() and not (tmp_path / "x.json").exists()


def test_damaged_and_wrong_zips_are_refused_with_the_reason(zips, tmp_path, capsys):
    src = zips["dqn"]
    state, data = _state(src), _data(src)
    five = json.loads(json.dumps(data))
    five["observation_space"]["_shape"] = [5]
    three = json.loads(json.dumps(data))
    three["action_space"]["n"] = "3"
    no_chain = {**state, "q_net.q_net.2.weight": torch.zeros(32, 31)}
    sac = {"actor.latent_pi.0.weight": torch.zeros(8, 4), "actor.latent_pi.0.bias": torch.zeros(8),
           "actor.mu.weight": torch.zeros(1, 8), "actor.mu.bias": torch.zeros(1)}
    text = tmp_path / "notes.zip"
    text.write_text("not a zip at all")
    cases = {
        "not a zip file": text,
        "the zip has no 'policy.pth'": _rezip(src, tmp_path / "a.zip", policy_pth=None),
        "the zip has no 'data'": _rezip(src, tmp_path / "b.zip", data=None),
        "the first layer reads 4 inputs but the observation space has 5":
            _rezip(src, tmp_path / "c.zip", data=json.dumps(five).encode()),
        "the output layer has 2 outputs but the action space has 3":
            _rezip(src, tmp_path / "d.zip", data=json.dumps(three).encode()),
        "layer shapes do not chain": _rezip(src, tmp_path / "e.zip", policy_pth=_torch_bytes(no_chain)),
        "is not a floating-point tensor": _rezip(src, tmp_path / "f.zip", policy_pth=_torch_bytes(
            {**state, "q_net.q_net.0.bias": torch.zeros(32, dtype=torch.int64)})),
        "SAC, TD3 and others are not converted": _rezip(src, tmp_path / "g.zip", policy_pth=_torch_bytes(sac)),
        "not a state dict": _rezip(src, tmp_path / "h.zip", policy_pth=_torch_bytes([1, 2, 3])),
        "NaN": _rezip(src, tmp_path / "i.zip", policy_pth=_torch_bytes(
            {**state, "q_net.q_net.0.bias": torch.full((32,), float("nan"))})),
        "'data' is not JSON (RecursionError": _rezip(src, tmp_path / "l.zip", data=b"[" * 200_000),
        "unpacks to": _rezip(src, tmp_path / "j.zip", data=b" " * (17 * 1024 * 1024)),
        "policy.pth' is not a plain PyTorch state dict": _rezip(src, tmp_path / "k.zip", policy_pth=b"\x00" * 100),
    }
    for expected, path in cases.items():
        line = _refusal(["import-sb3", str(path), "--out", str(tmp_path / "x.json")], capsys)
        assert expected in line and str(path) in line, (expected, line)
    assert not (tmp_path / "x.json").exists()
    line = _refusal(["import-sb3", str(tmp_path / "missing.zip"), "--out", str(tmp_path / "x.json")], capsys)
    assert "no such file" in line
    line = _refusal(["import-sb3", str(zips["ppo_continuous"]), "--out", str(tmp_path / "x.json"), "--kind", "dqn"],
                    capsys)
    assert "these are continuous" in line


def test_without_torch_one_line_says_what_to_install(zips, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # as if PyTorch were not installed
    line = _refusal(["import-sb3", str(zips["dqn"]), "--out", str(tmp_path / "x.json")], capsys)
    assert "needs PyTorch: pip install torch" in line


def test_the_python_function_raises_model_format_errors(tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(ModelFormatError, match="not a zip file"):
        sb3_to_model(bad)


# ---- a converted policy plays a shipped scene (what Blender's Play does with the file) ----------------------------


_SPACES = """
import json, sys
from drla.scene import open_scene, compile_or_explain, addon_module
bpy, ext, tree, scene = open_scene(sys.argv[1], "Tank")
compiled = compile_or_explain(ext, tree, scene)
env = addon_module("runs.build").build_env(compiled, scene)
print(json.dumps({"obs": list(env.observation_space.shape), "actions": env.action_space.n}))
env.close()
"""


class _SizedEnv(gymnasium.Env):
    """A stand-in with the tank tree's spaces: SB3 builds (and briefly trains) a policy of the right sizes."""

    def __init__(self, obs_shape, n_actions):
        self.observation_space = gymnasium.spaces.Box(-1.0, 1.0, tuple(obs_shape), np.float32)
        self.action_space = gymnasium.spaces.Discrete(n_actions)
        self._t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self._t += 1
        return self.observation_space.sample(), float(action == 0), False, self._t >= 20, {}


def test_a_converted_policy_plays_the_tank_scene(zips, tmp_path):
    pytest.importorskip("bpy")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", _SPACES, str(TANK)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    sizes = json.loads(r.stdout.strip().splitlines()[-1])
    policy = sb3.DQN("MlpPolicy", _SizedEnv(sizes["obs"], sizes["actions"]), seed=0, learning_starts=20,
                     policy_kwargs={"net_arch": [16]}).learn(60)
    policy.save(tmp_path / "tank_sb3.zip")
    out = tmp_path / "tank_sb3.json"
    assert main(["import-sb3", str(tmp_path / "tank_sb3.zip"), "--out", str(out)]) == 0
    play = [sys.executable, "-m", "drla", "play", str(TANK), "--tree", "Tank", "--episodes", "1"]
    r = subprocess.run([*play, "--model", str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Tank: mean return" in r.stdout
    # the same command with a CartPole policy (4 inputs, 2 actions) is refused with the sizes
    cart = tmp_path / "cart.json"
    assert main(["import-sb3", str(zips["dqn"]), "--out", str(cart)]) == 0
    r = subprocess.run([*play, "--model", str(cart)], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 2 and "reads 4 inputs" in r.stderr, r.stderr[-2000:]
