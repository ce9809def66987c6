"""``drla merge``: averages relatives, distils others, refuses what cannot be merged with one error line."""

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
