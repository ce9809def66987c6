"""``drla train SCENE.blend --grow K --metrics FILE --tensorboard DIR`` on the tank scene, as a user runs it,
and ``--resume`` of a grown run (its network size and its growth rule's counters)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from drla_core.rl.checkpoint import read_checkpoint
from drla_core.io.model_io import load_model

ROOT = Path(__file__).resolve().parents[2]
TANK = ROOT / "scenes" / "tank" / "tank.blend"
ROBOT_ARM = ROOT / "scenes" / "robot_arm" / "robot_arm.blend"


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "drla", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_train_a_scene_with_growth_metrics_and_tensorboard_then_resume(ext, tmp_path):
    pytest.importorskip("tensorboardX")
    before = TANK.read_bytes()
    model, metrics, tb = tmp_path / "tank.json", tmp_path / "run.jsonl", tmp_path / "tb"
    common = ("--eval-interval", "200", "--eval-episodes", "1", "--learning-starts", "100", "--quiet",
              "--checkpoint-interval", "700")
    out = run_cli("train", TANK, "--tree", "Tank", "--steps", "1400", "--grow", "1", "--metrics", metrics,
                  "--tensorboard", tb, "--out", model, *common)
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in metrics.read_text().splitlines()]
    kinds = {e["event"] for e in events}
    assert {"start", "episode", "train", "eval", "end"} <= kinds
    grown = [e for e in events if e["event"] == "growth"]
    assert grown, "equal evaluation returns (a plateau) for one evaluation should grow the network (x4 per layer)"
    assert grown[0]["op"] == "widen" and grown[-1]["hidden"][-1] == 256
    saved = load_model(model)
    assert saved.meta["growth"] == [{k: e[k] for k in e if k != "event"} for e in grown]
    assert [h["size"] for h in saved.network.architecture()["hidden"]] == grown[-1]["hidden"]
    assert any(p.name.startswith("events.out.tfevents") for p in tb.iterdir())

    ckpt_path = tmp_path / "tank_ckpt.npz"
    ckpt = read_checkpoint(ckpt_path)
    rule = ckpt.meta["callbacks"]["growth_rule"]
    assert rule["settings"]["patience"] == 1 and len(rule["grows"]) >= 1
    out = run_cli("train", TANK, "--tree", "Tank", "--steps", "2100", "--resume", ckpt_path, "--out", model, *common)
    assert out.returncode == 0, out.stderr
    assert "resuming" in out.stderr
    resumed_rule = read_checkpoint(ckpt_path).meta["callbacks"]["growth_rule"]  # the checkpoint at step 2100
    assert resumed_rule["grows"][:len(rule["grows"])] == rule["grows"]  # the counters went on from the saved ones
    assert load_model(model).meta["growth"][:len(saved.meta["growth"])] == saved.meta["growth"]
    assert TANK.read_bytes() == before


def test_network_flags_are_refused_for_a_tree_that_is_not_dqn(ext, tmp_path):
    out = run_cli("train", ROBOT_ARM, "--tree", "Arm3", "--steps", "10", "--grow", "2", "--out", tmp_path / "a.json")
    assert out.returncode == 2
    assert "--grow: tree 'Arm3' trains Learned IK" in out.stderr


def test_grow_on_a_scene_without_evaluations_says_why(ext, tmp_path):
    out = run_cli("train", TANK, "--tree", "Tank", "--steps", "300", "--grow", "2", "--eval-interval", "0",
                  "--out", tmp_path / "t.json")
    assert out.returncode == 2
    assert "never evaluates" in out.stderr and "--eval-interval" in out.stderr


def test_play_the_trees_expert_switcher_from_the_command_line(ext, tmp_path):
    import bpy
    import numpy as np

    from drla_core.nn.mlp import MLP
    from drla_core.io.model_io import Model, save_model
    from drla_core.base.spaces import Box, Discrete

    paths = []
    for name, action in (("right", 0), ("wait", 4)):
        net = MLP(211, [(4, "relu")], 8, rng=0)
        net.params[...] = 0.0
        net.biases[-1][action] = 1.0
        paths.append(str(save_model(tmp_path / f"{name}.json", Model(net, Box(-np.inf, np.inf, (211,)),
                                                                         Discrete(8)))))
    bpy.ops.wm.open_mainfile(filepath=str(TANK))
    ground = bpy.data.objects["Ground"]
    ground["expert"] = 2
    node = bpy.data.node_groups["Tank"].nodes.new("DRLA_ExpertSwitcherNode")
    node.expert_1, node.expert_2 = paths
    node.rule, node.rule_object, node.rule_property, node.value_is_expert = 'PROPERTY', ground, "expert", True
    blend = tmp_path / "tank_switcher.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)

    out = run_cli("play", blend, "--switcher", "--episodes", "1")
    assert out.returncode == 0, out.stderr
    assert "Tank with 'Expert Switcher': mean return" in out.stdout
    assert "steps per expert: right 0, wait 100" in out.stdout  # the property says 2: the waiting expert, always
    out = run_cli("play", blend, "--switcher", "Nope")
    assert out.returncode == 2 and "no Expert Switcher named 'Nope'" in out.stderr
    out = run_cli("play", TANK, "--switcher")
    assert out.returncode == 2 and "has no Expert Switcher" in out.stderr


def test_merge_distils_scene_models_over_states_recorded_in_their_tree(ext, tmp_path):
    from drla_core.rl.dqn import DQNAgent, DQNConfig
    from drla_core.io.model_io import save_model
    from drla_core.base.spaces import Box, Discrete

    import numpy as np

    for name, seed in (("a", 0), ("c", 1)):
        agent = DQNAgent(Box(-np.inf, np.inf, (211,)), Discrete(8), DQNConfig(hidden=[(8, "relu")]), seed=seed)
        save_model(tmp_path / f"{name}.json", agent.to_model({"tree": "Tank", "scene": "tank.blend"}))
    before = TANK.read_bytes()
    out = run_cli("merge", tmp_path / "a.json", tmp_path / "c.json", "--scene", TANK, "--states", "200",
                  "--epochs", "20", "--out", tmp_path / "m.json")
    assert out.returncode == 0, out.stderr
    assert "not averaging:" in out.stdout and "(recorded in tree 'Tank')" in out.stdout
    merged = load_model(tmp_path / "m.json")
    assert merged.meta["merge"]["recorded_in"] == ["tree 'Tank'", "tree 'Tank'"]
    assert merged.meta["merge"]["states"] == [200, 200]
    assert TANK.read_bytes() == before
