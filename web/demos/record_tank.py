"""Record the tank demo's observation sequence: one TankGrid episode played by the demo model's greedy policy.

    .venv/bin/python web/demos/record_tank.py

Writes ``web/demos/models/tank_sequence.json``: the camera picture's ``rows`` and ``cols``, every observation,
the action Python's ``Model.act`` chose for it, and the reward that followed. The page replays the
observations through drla.js and shows whether its greedy action is Python's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from drla_core.envs.tank_grid import TANK_ACTIONS, TankGrid  # noqa: E402
from drla_core.model_io import load_model  # noqa: E402


def main(seed: int = 7) -> None:
    model = load_model(HERE / "models" / "tank.json")
    env = TankGrid()
    obs, _ = env.reset(seed=seed)
    rows, cols = 2 * env.depth, 2 * env.width - 1
    assert rows * cols + 1 == obs.size
    record: dict = {"rows": rows, "cols": cols, "actions_names": list(TANK_ACTIONS), "seed": seed,
                    "obs": [], "actions": [], "rewards": []}
    while True:
        action = model.act(obs)
        record["obs"].append([float(v) for v in obs])
        record["actions"].append(int(action))
        obs, reward, terminated, truncated, _ = env.step(action)
        record["rewards"].append(float(reward))
        if terminated or truncated:
            break
    (HERE / "models" / "tank_sequence.json").write_text(json.dumps(record, separators=(",", ":")) + "\n")
    print(f"recorded {len(record['actions'])} steps, return {sum(record['rewards']):.0f}")


if __name__ == "__main__":
    main()
