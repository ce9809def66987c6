"""Record the tank demo's observation sequences: one episode of each tank model's greedy policy.

    .venv/bin/python web/demos/record_tank.py          (the scene needs bpy: make setup)

* ``models/tank_sequence_133.json``: ``models/tank.json`` in the numpy ``TankGrid`` (133 inputs);
* ``models/tank_sequence_211.json``: ``models/tank_scene.json`` (``drla demo``'s model) in
  ``scenes/tank/tank.blend``'s tree "Tank", run by the add-on's scene environment (211 inputs: TankCamera's
  19 x 11 black/white picture, the score and the cannon pitch).

Each file holds the picture's ``rows`` and ``cols``, the values after the picture (``trailing``: label and the
factor that turns the observation back into the quantity), every observation, the action Python's
``Model.act`` chose for it and the reward that followed. The page replays the observations through drla.js
and shows whether its greedy action is Python's; it picks the file by the model's input size.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from drla_core.envs.tank_grid import TANK_ACTIONS, TankGrid  # noqa: E402
from drla_core.io.model_io import Model, load_model  # noqa: E402


def record(model: Model, env: Any, seed: int, layout: dict[str, Any]) -> dict[str, Any]:
    obs, _ = env.reset(seed=seed)
    out: dict[str, Any] = {**layout, "actions_names": list(TANK_ACTIONS), "seed": seed, "obs": [], "actions": [],
                           "rewards": []}
    while True:
        action = model.act(obs)
        out["obs"].append([float(v) for v in obs])
        out["actions"].append(int(action))
        obs, reward, terminated, truncated, _ = env.step(action)
        out["rewards"].append(float(reward))
        if terminated or truncated:
            return out


def save(name: str, data: dict[str, Any]) -> None:
    assert data["rows"] * data["cols"] + len(data["trailing"]) == len(data["obs"][0])
    (HERE / "models" / name).write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"{name}: {len(data['actions'])} steps, return {sum(data['rewards']):.0f}")


def main() -> None:
    env = TankGrid()
    save("tank_sequence_133.json", record(load_model(HERE / "models" / "tank.json"), env, 7, {
        "source": "TankGrid (drla_core/envs/tank_grid.py)", "rows": 2 * env.depth, "cols": 2 * env.width - 1,
        "gauge_row": True, "trailing": [{"label": "score", "scale": 10}]}))

    from drla import scene_cli

    bpy, ext, tree, scene = scene_cli.open_scene(scene_cli.TANK_SCENE, "Tank")
    compiled = scene_cli.compile_or_explain(ext, tree, scene)
    with scene_cli.addon_module("scene.snapshot").restored_scene(scene):
        with scene_cli.quiet_egl():
            scene_env = scene_cli.addon_module("runs.build").build_env(compiled, scene)
        try:
            save("tank_sequence_211.json", record(load_model(HERE / "models" / "tank_scene.json"), scene_env, 3, {
                "source": "scenes/tank/tank.blend, tree Tank (the add-on's scene environment)", "rows": 11,
                "cols": 19, "gauge_row": False,
                "trailing": [{"label": "score", "scale": 10}, {"label": "cannon pitch (deg)", "scale": 10}]}))
        finally:
            scene_env.close()


if __name__ == "__main__":
    main()
