"""``drla train ENV --grow K`` resumed with ``--resume``: the growth rule's counters come back from the checkpoint
(without ``--grow`` given again), and the grown network resumes at its size."""

from drla.cli import main
from drla_core.rl.checkpoint import read_checkpoint
from drla_core.io.model_io import load_model


def test_a_growing_run_resumes_with_its_rule_and_its_grown_network(tmp_path, capsys):
    out = tmp_path / "cp.json"
    common = ["--eval-interval", "400", "--eval-episodes", "1", "--checkpoint-interval", "1200", "--quiet",
              "--hidden", "4,4", "--learning-starts", "200"]
    assert main(["train", "cartpole", "--steps", "1200", "--grow", "1", "--out", str(out), *common]) == 0
    ckpt = read_checkpoint(tmp_path / "cp_ckpt.npz")
    rule = ckpt.meta["callbacks"]["growth_rule"]
    assert rule["settings"]["patience"] == 1 and rule["settings"]["factor"] == 4
    first = load_model(out)
    grown = [h["size"] for h in ckpt.meta["agent"]["architecture"]["hidden"]]
    assert grown != [4, 4] and [h["size"] for h in first.network.architecture()["hidden"]] == grown
    resume = ["train", "cartpole", "--steps", "2400", "--resume", str(tmp_path / "cp_ckpt.npz"), "--out", str(out)]
    assert main([*resume, *common]) == 2  # the first command's --hidden 4,4 repeated: refused with the reason
    assert "grew during training (to 16 relu, 16 relu)" in capsys.readouterr().err
    assert main([*resume, *common[:-4], *common[-2:]]) == 0  # without --hidden
    again = read_checkpoint(tmp_path / "cp_ckpt.npz")  # written at step 2400
    assert again.meta["run"]["steps"] == 2400
    resumed_rule = again.meta["callbacks"]["growth_rule"]
    assert resumed_rule["settings"] == rule["settings"]  # the rule came back without --grow
    assert resumed_rule["grows"][:len(rule["grows"])] == rule["grows"]
    assert load_model(out).meta.get("growth", [])[:len(first.meta.get("growth", []))] == first.meta.get("growth", [])
