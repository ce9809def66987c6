"""The team file (format drla-team): every named agent's model in one JSON file, read as strictly as a model file."""

import json

import numpy as np
import pytest

from drla_core.rl.dqn import DQNAgent, DQNConfig
from drla_core.envs.chase import ChaseEnv
from drla_core.nn.mlp import LayerSpec
from drla_core.io.model_io import MAX_FILE_BYTES, ModelFormatError, load_model, model_to_dict, save_model
from drla_core.io.team_model import (
    MAX_AGENTS,
    load_any,
    load_team,
    read_models,
    save_team,
    team_from_dict,
    team_to_dict,
)


def _models():
    env = ChaseEnv(target="agent")
    cfg = DQNConfig(hidden=[LayerSpec(8)])
    return {name: DQNAgent(env.observation_space(name), env.action_space(name), cfg, seed=i).to_model({"agent": name})
            for i, name in enumerate(("hero", "target"))}


def test_a_team_file_round_trips_every_agent_bit_for_bit(tmp_path):
    models = _models()
    path = save_team(tmp_path / "team.json", models, {"tree": "Chase"})
    back = load_team(path)
    assert list(back) == ["hero", "target"]
    obs = np.random.default_rng(0).uniform(-1, 1, (20, models["hero"].network.input_size)).astype(np.float32)
    for name, model in models.items():
        np.testing.assert_array_equal(back[name].network.params, model.network.params)
        assert [back[name].act(o) for o in obs] == [model.act(o) for o in obs]
    data = json.loads(path.read_text())
    assert data["format"] == "drla-team" and data["version"] == 1 and data["meta"]["tree"] == "Chase"
    assert set(load_any(path)) == {"hero", "target"}


def test_a_model_file_and_a_team_file_say_which_is_which(tmp_path):
    models = _models()
    single = save_model(tmp_path / "hero.json", models["hero"])
    team = save_team(tmp_path / "team.json", models)
    assert load_any(single).meta["agent"] == "hero"
    with pytest.raises(ModelFormatError, match="one agent's model file, not a team file"):
        load_team(single)
    with pytest.raises(ModelFormatError, match=r"team file holding several agents' models \(hero, target\)"):
        load_model(team)


def _team(**changes):
    data = team_to_dict(_models())
    data.update(changes)
    return data


@pytest.mark.parametrize("data, message", [
    ([], "a team file must be a JSON object, got an array"),
    (_team(format="drla-model"), "expected 'drla-team': not a DRLA team file"),
    (_team(version=2), "unsupported team file version 2: this DRLA reads version 1 (a newer DRLA wrote it"),
    (_team(version="1"), "version must be an integer, got a string"),
    (_team(code="__import__('os')"), "team: unknown key 'code'"),
    (_team(agents={}), "agents: no agent in the file"),
    (_team(agents=[1]), "agents must be an object, got an array"),
    (_team(agents={"": model_to_dict(_models()["hero"])}), "an agent's name must be a non-empty string"),
    (_team(agents={f"a{i}": {} for i in range(MAX_AGENTS + 1)}), f"more than the limit of {MAX_AGENTS}"),
])
def test_a_bad_team_file_is_refused_with_the_reason(data, message):
    with pytest.raises(ModelFormatError) as err:
        team_from_dict(data)
    assert message in str(err.value)


def test_a_broken_member_names_its_agent():
    data = team_to_dict(_models())
    data["agents"]["target"]["params"]["layers.0.bias"] = [float("nan")] * 8
    text = json.dumps(data)  # NaN, as Python writes it: no JSON reader should take it
    with pytest.raises(ModelFormatError, match="NaN is not allowed"):
        read_models(text)
    data["agents"]["target"]["params"]["layers.0.bias"] = [0.0] * 3
    with pytest.raises(ModelFormatError, match=r"agent 'target': params.layers.0.bias"):
        team_from_dict(data)


def test_an_oversized_or_garbage_file_is_refused_before_reading(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(ModelFormatError, match="more than the limit"):
        load_any(big)
    junk = tmp_path / "junk.json"
    junk.write_bytes(b"\xff\xfe{not json")
    with pytest.raises(ModelFormatError, match="not UTF-8"):
        load_any(junk)


def test_drla_inspect_lists_every_agent_of_a_team_file(tmp_path, capsys):
    from drla.cli import main

    path = save_team(tmp_path / "team.json", _models())
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{path}: valid DRLA team file, 2 agents: hero, target"
    assert out[1] == "hero: kind dqn" and out[2].startswith("  network:      ")
    assert "target: kind dqn" in out
    (tmp_path / "bad.json").write_text('{"format": "drla-team", "version": 1, "agents": {"hero": {}}}')
    assert main(["inspect", str(tmp_path / "bad.json")]) == 2
    assert "agent 'hero': missing required key 'format'" in capsys.readouterr().err


def test_export_onnx_of_a_team_file_writes_one_onnx_per_agent_with_equal_outputs(tmp_path, capsys):
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed: ONNX outputs NOT verified")
    from drla.cli import main

    models = _models()
    team = save_team(tmp_path / "team.json", models)
    assert main(["export-onnx", str(team), str(tmp_path / "team.onnx")]) == 0
    printed = capsys.readouterr().out
    obs = np.random.default_rng(1).uniform(-1, 1, (16, models["hero"].network.input_size)).astype(np.float32)
    for name, model in models.items():
        path = tmp_path / f"team_{name}.onnx"
        assert str(path) in printed
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        q = session.run(None, {session.get_inputs()[0].name: obs})[0]
        np.testing.assert_allclose(q, model.network.forward(obs), rtol=1e-5, atol=1e-6)


def test_experts_add_of_a_team_file_adds_each_agent_as_an_expert(tmp_path, capsys):
    from drla.cli import main
    from drla_core.nets.expert_library import ExpertLibrary

    models = _models()
    team = save_team(tmp_path / "chase.json", models)
    library = tmp_path / "experts"
    assert main(["experts", "--library", str(library), "add", str(team)]) == 0
    assert "added chase_hero (agent hero of" in capsys.readouterr().out
    lib = ExpertLibrary(library)
    assert sorted(e["name"] for e in lib.entries()) == ["chase_hero", "chase_target"]
    for name, model in models.items():
        back = load_model(library / f"chase_{name}.json")
        np.testing.assert_array_equal(back.network.params, model.network.params)
