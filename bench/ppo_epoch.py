"""One PPO update epoch over 2048 transitions of a 2x64 tanh actor and critic (DRLA's ``PPOAgent.train_epoch``).

The rollout is 8 copies x 256 steps of CartPole-sized observations (4 floats, 2 actions) acted by the agent itself
(its own log-probabilities and values), random rewards, GAE advantages; an epoch is what ``update`` runs n_epochs
times: one shuffle, then the minibatches (``--batch-sizes``, default 64: ``PPOConfig``'s default, and 256: rl-zoo's
CartPole), each a forward and backward of both networks, the clipped losses, one gradient-norm clip and one Adam step.
Prints ONE JSON line: the median wall time (``time.perf_counter``) and CPU time (``time.process_time``) of an epoch
in ms, with the BLAS threads (``--threads``, default 1, set before numpy loads), numpy's version and the load
average before and after (on a loaded machine CPU time is the steadier figure).

    .venv/bin/python bench/ppo_epoch.py [--repeats 50] [--batch-sizes 64 256] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TRANSITIONS = 2048
COPIES = 8


def epoch_times(batch_size: int, repeats: int, seed: int = 0) -> tuple[list[float], list[float], int]:
    """Wall and CPU seconds of ``repeats`` epochs (after 3 unmeasured ones), and the minibatches per epoch."""
    import numpy as np

    from drla_core.base.spaces import Box, Discrete
    from drla_core.rl.ppo import PPOAgent, PPOConfig

    steps = TRANSITIONS // COPIES
    agent = PPOAgent(Box(-5, 5, (4,)), Discrete(2), PPOConfig(n_steps=steps, batch_size=batch_size, n_epochs=1),
                     seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):  # a full rollout, acted by the agent
        agent.act_batch(rng.standard_normal((COPIES, 4)).astype(np.float32))
        agent.pos += 1
    agent.pos = 0
    agent.buf_rewards[...] = rng.standard_normal(agent.buf_rewards.shape)
    agent.buf_dones[...] = rng.random(agent.buf_dones.shape) < 0.02
    adv, returns = agent.advantages(np.zeros(COPIES, dtype=np.float32))
    m = TRANSITIONS
    data = (agent.buf_obs.reshape(m, 4), agent.buf_actions.reshape(m), agent.buf_logp.reshape(m),
            agent.buf_values.reshape(m), adv.reshape(m), returns.reshape(m))
    totals = np.zeros(6)
    count = 0
    for _ in range(3):
        count = agent.train_epoch(data, 0.2, totals)
    walls, cpus = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        agent.train_epoch(data, 0.2, totals)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    if not np.isfinite(totals).all():
        raise SystemExit("the epochs' losses are not finite")
    return walls, cpus, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (OPENBLAS/OMP/MKL_NUM_THREADS)")
    args = parser.parse_args()
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(args.threads)
    import numpy as np

    figures: dict = {"bench": "ppo_epoch", "transitions": TRANSITIONS, "network": "2x64 tanh actor and critic",
                     "blas_threads": args.threads, "numpy": np.__version__, "cpus": os.cpu_count(),
                     "load_before": [round(x, 2) for x in os.getloadavg()], "repeats": args.repeats}
    for b in args.batch_sizes:
        walls, cpus, count = epoch_times(b, args.repeats)
        figures[f"batch{b}"] = {"minibatches": count, "median_wall_ms": round(1000 * statistics.median(walls), 2),
                                "min_wall_ms": round(1000 * min(walls), 2),
                                "median_cpu_ms": round(1000 * statistics.median(cpus), 2)}
    figures["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
