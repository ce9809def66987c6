"""``drla merge``: averages relatives, distils others, refuses what cannot be merged with one error line."""

import shutil

import pytest

from drla.cli import main
from drla_core.model_io import load_model

TRAIN = ["--quiet", "--learning-starts", "100", "--train-freq", "4", "--gradient-steps", "1", "--eval-interval", "0",
         "--hidden", "16"]


def _train(path, seed, *extra):
    assert main(["train", "identity", "--steps", "400", "--seed", str(seed), "--out", str(path), *TRAIN, *extra]) == 0


def test_merge_averages_relatives_and_distils_strangers(tmp_path, capsys):
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    _train(a, 1)
    _train(b, 1, "--learning-rate", "3e-3")  # same initial weights, other training
    _train(c, 2)
    capsys.readouterr()
    assert main(["merge", str(a), str(b), "--out", str(tmp_path / "ab.json")]) == 0
    assert "averaged 2 networks" in capsys.readouterr().out
    merged = load_model(tmp_path / "ab.json")
    pa, pb = load_model(a).network.params, load_model(b).network.params
    assert abs(merged.network.params - (pa + pb) / 2).max() < 1e-6
    assert main(["merge", str(a), str(c), "--out", str(tmp_path / "ac.json"), "--states", "500", "--epochs", "5"]) == 0
    out = capsys.readouterr().out
    assert "not averaging:" in out and "do not share an ancestor" in out and "distilled:" in out
    assert load_model(tmp_path / "ac.json").meta["merge"]["method"] == "distill"
    assert main(["eval", str(tmp_path / "ac.json"), "--episodes", "2"]) == 0  # the env name came along


def test_merge_refusals_are_one_error_line(tmp_path, capsys):
    a, c = tmp_path / "a.json", tmp_path / "c.json"
    _train(a, 1)
    _train(c, 2)
    capsys.readouterr()
    assert main(["merge", str(a), str(c), "--method", "average", "--out", str(tmp_path / "m.json")]) == 2
    assert "error:" in capsys.readouterr().err
    assert main(["merge", str(a), str(c), "--method", "distill", "--envs", "cartpole", "identity",
                 "--out", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert "does not fit environment 'cartpole'" in err
    assert main(["merge", str(a), str(c), "--method", "distill", "--envs", "identity",
                 "--out", str(tmp_path / "m.json")]) == 2
    assert "give one environment per model (2), got 1" in capsys.readouterr().err


def test_experts_add_list_remove_and_combine(tmp_path, capsys):
    from drla.experts import ExpertLibrary, LibraryError
    from drla_core.experts import ExpertError

    a, c = tmp_path / "a.json", tmp_path / "c.json"
    _train(a, 1)
    _train(c, 2)
    lib = tmp_path / "lib"
    capsys.readouterr()
    assert main(["experts", "--library", str(lib), "add", str(a), "--name", "light_a", "--score", "80"]) == 0
    assert main(["experts", "--library", str(lib), "add", str(c), "--scene", "lights.blend"]) == 0
    assert main(["experts", "--library", str(lib), "add", str(c)]) == 2
    assert "an expert named 'c' is already in" in capsys.readouterr().err
    assert main(["experts", "--library", str(lib), "list"]) == 0
    out = capsys.readouterr().out
    assert "light_a" in out and "identity" in out and "4 inputs -> 4 actions" in out and "score 80" in out
    assert "from lights.blend" in out
    # the folder is shareable: copied elsewhere, it still works
    moved = tmp_path / "moved"
    shutil.copytree(lib, moved)
    shared = ExpertLibrary(moved)
    switch = shared.combine(["light_a", "c"], rule=lambda obs: int(obs.argmax() >= 2))
    assert switch.act(load_model(a).observation_space.sample(__import__("numpy").random.default_rng(0))) in range(4)
    assert main(["experts", "--library", str(lib), "remove", "c"]) == 0
    assert not (lib / "c.json").exists() and [e["name"] for e in ExpertLibrary(lib).entries()] == ["light_a"]
    assert main(["experts", "--library", str(lib), "remove", "c"]) == 2
    assert "no expert named 'c'" in capsys.readouterr().err
    # combining experts with other spaces is refused
    assert main(["train", "cartpole", "--steps", "300", "--out", str(tmp_path / "cp.json"), *TRAIN]) == 0
    ExpertLibrary(lib).add(tmp_path / "cp.json", name="pole")
    with pytest.raises(ExpertError, match=r"pole acts in Discrete\(2\), light_a in Discrete\(4"):
        ExpertLibrary(lib).combine(["light_a", "pole"], rule=lambda obs: 0)
    (lib / "index.json").write_text('{"format": "drla-experts", "version": 1, "experts": [{"name": "x", "file": '
                                    '"../../etc/passwd"}]}')
    with pytest.raises(LibraryError, match="names no model file inside the folder"):
        ExpertLibrary(lib).entries()
