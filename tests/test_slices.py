"""A faster machine must not change what happens (issue 28): every periodic action of every pure agent kind fires
at its steps or generations however many of them fit into one time slice.

Each case runs twice: with one slice so long that the whole run happens in one call (``HUGE``), and with empty
slices (``max_seconds=0``: each call takes one step, or a generation's first few episode steps, and most calls of
an evolution finish no generation). The files written, their contents (wall-clock figures aside), the history and
every periodic action's record must be the same.

The periodic actions of the pure kinds, and where each is checked here:

* DQN ``TrainingRun`` (one env, and ``VectorTrainingRun`` over copies): evaluations every ``eval_interval`` steps
  (on an evaluation env, or on the training env at the next episode boundary), checkpoints every
  ``checkpoint_interval`` steps (the CLI's saver: ``<out>_step<N>.json`` and ``<out>_ckpt.npz``), the growth
  rule's check at each evaluation (``--grow``), ``--metrics`` lines (per episode and evaluation), the headless
  progress line at each 10 % and ``PrintProgress`` every N episodes: ``test_dqn_runs``.
* ``MultiAgentRun`` (several agents): evaluations every ``eval_interval`` steps: ``test_multi_agent_run``.
* Learned IK (``IKTrainingJob``): a validation point of the curve every ~2 % of the steps: ``test_learned_ik``.
* ``drla train ENV --agent ga|neat|novelty|coevolution``: the population file every ``--checkpoint-interval``
  generations (``<out>_population.json``, written as each multiple is reached, the CLI's slice ``SLICE_S``
  never running past a generation), its status line each generation, the novelty archive's update and the
  champion check each generation: ``test_cli_evolution_agents``, ``test_cli_evolution_every_other_generation``.

The Blender kinds (scene DQN, copies, workers, evolution, co-evolution, the panel) are in
tests/blender/test_scene_slices.py.
"""

import io
import json
import re
import shutil
from pathlib import Path

import pytest

from drla import pure_jobs
from drla.cli import main
from drla.common import checkpoint_saver
from drla.dashboards import MetricsWriter
from drla.progress import ProgressBar
from drla_core import kinematics as kin
from drla_core.rl.dqn import DQNAgent, DQNConfig
from drla_core.rl.ik import IKSolver
from drla_core.rl.ik_job import IKTrainingJob
from drla_core.rl.checkpoint import read_checkpoint
from drla_core.envs import make
from drla_core.envs.chase import ChaseEnv
from drla_core.nets.growth import GrowthRule
from drla_core.rl.multi_agent import MultiAgentRun
from drla_core.rl.train import PrintProgress, TrainingRun
from drla_core.rl.vector_train import VectorTrainingRun
from drla_core.base.vector_env import SyncVectorEnv

HUGE = 3600.0  # one call does the whole run
SLICES = {"one call": HUGE, "empty slices": 0.0}
#: Wall-clock figures: the only things allowed to differ between two slicings of one run.
CLOCK_KEYS = {"seconds", "train_seconds", "eval_seconds", "cpu_seconds", "eval_cpu_seconds", "eval_train_seconds",
              "eval_train_cpu_seconds", "created", "wall_seconds", "elapsed"}


def drive(job, seconds: float) -> tuple[int, int]:
    """Advance ``job`` to its end in slices of ``seconds``; (calls, calls that finished no step)."""
    calls = idle = 0
    while not job.done:
        calls += 1
        if job.advance(max_seconds=seconds) == 0:
            idle += 1
        assert calls < 1_000_000
    return calls, idle


def clean(data):
    """JSON data without its wall-clock figures."""
    if isinstance(data, dict):
        return {k: clean(v) for k, v in data.items() if k not in CLOCK_KEYS}
    if isinstance(data, list):
        return [clean(v) for v in data]
    return data


def files(folder: Path) -> dict[str, object]:
    """Every file under ``folder`` by name: JSON as data, a checkpoint as its meta and arrays, the rest as bytes
    (wall-clock figures aside), for comparing two runs."""
    out: dict[str, object] = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        name = str(path.relative_to(folder))
        if path.suffix == ".json":
            out[name] = clean(json.loads(path.read_text()))
        elif path.suffix == ".jsonl":
            out[name] = [clean(json.loads(line)) for line in path.read_text().splitlines()]
        elif path.suffix == ".npz":
            ckpt = read_checkpoint(path)
            out[name] = (clean(ckpt.meta), {k: a.tobytes() for k, a in sorted(ckpt.arrays.items())})
        elif path.suffix != ".png":  # a report picture prints the wall time
            out[name] = path.read_bytes()
    return out


def history_of(h) -> dict:
    return clean(h.to_dict() if hasattr(h, "to_dict") else dict(h))


# --------------------------------------------------------------------------- DQN
CONFIG = dict(hidden=[(16, "relu")], learning_starts=50, train_freq=2, target_update_interval=40, batch_size=16,
              buffer_size=1000)


def _dqn_run(folder: Path, copies: int, eval_on_training_env: bool):
    folder.mkdir()
    env = make("cartpole") if copies == 1 else SyncVectorEnv([lambda: make("cartpole")] * copies)
    agent = DQNAgent(make("cartpole").observation_space, make("cartpole").action_space,
                     DQNConfig(**CONFIG, total_timesteps=900), seed=3)
    printed: list[str] = []
    bar = io.StringIO()
    out = folder / "cp.json"
    callbacks = [GrowthRule(patience=1, max_grows=2, factor=2, max_size=64), MetricsWriter(folder / "m.jsonl"),
                 PrintProgress(every=5, print_fn=printed.append), ProgressBar(900, stream=bar)]
    cls = TrainingRun if copies == 1 else VectorTrainingRun
    run = cls(env, agent, 900, seed=3, eval_env=None if eval_on_training_env else make("cartpole"),
              eval_interval=150, eval_episodes=2, callbacks=callbacks, checkpoint_interval=200,
              checkpoint_path=str(folder / "cp_step{step}.json"),
              save_fn=checkpoint_saver(out, {"target": "cartpole", "out": str(out)}))
    return run, printed, bar


@pytest.mark.parametrize("copies, eval_on_training_env", [(1, False), (1, True), (3, False)],
                         ids=["one env", "evaluated on the training env", "3 copies"])
def test_dqn_runs(tmp_path, copies, eval_on_training_env):
    got = {}
    for label, seconds in SLICES.items():
        folder = tmp_path / "run"  # the same paths each time: a checkpoint records where it was written
        run, printed, bar = _dqn_run(folder, copies, eval_on_training_env)
        calls, _ = drive(run, seconds)
        progress_lines = bar.getvalue().count("\n")
        got[label] = (files(folder), history_of(run.history), printed, progress_lines,
                      run.agent.growth_history, run.agent.q_network.params.tobytes())
        shutil.rmtree(folder)
        if seconds == HUGE:
            assert calls == 1
        else:
            assert calls == -(-900 // copies)  # one (vector) step per empty slice
    one, empty = got["one call"], got["empty slices"]
    names = sorted(one[0])
    assert names == sorted(empty[0])
    assert [n for n in names if n.startswith("cp_step")] == [f"cp_step{s}.json" for s in (200, 400, 600, 800)] \
        if copies == 1 else [f"cp_step{s}.json" for s in (201, 402, 600, 801)]
    assert "cp_ckpt.npz" in names and "m.jsonl" in names
    for name in names:
        assert one[0][name] == empty[0][name], name
    assert one[1] == empty[1]  # the history: episodes, losses, evaluations (at the same steps), growth
    assert len(one[1]["evals"]) >= 5 and one[2] and one[2] == empty[2]
    assert one[3] == empty[3] == 10  # a line at 10 %, 20 %, ..., 100 %
    assert one[4] and one[4] == empty[4]  # the growth rule grew, at the same steps
    assert one[5] == empty[5]


# --------------------------------------------------------------------------- several agents
def test_multi_agent_run():
    got = {}
    for label, seconds in SLICES.items():
        env, eval_env = ChaseEnv(target="agent"), ChaseEnv(target="agent")
        agents = {name: DQNAgent(env.observation_space(name), env.action_space(name),
                                 DQNConfig(**CONFIG, total_timesteps=400), seed=i)
                  for i, name in enumerate(env.possible_agents)}
        run = MultiAgentRun(env, agents, 400, seed=1, eval_env=eval_env, eval_interval=70, eval_episodes=2)
        calls, _ = drive(run, seconds)
        assert calls == (1 if seconds == HUGE else 400)
        got[label] = {name: history_of(h) for name, h in run.histories.items()}
    assert got["one call"] == got["empty slices"]
    assert [step for step, _, _ in got["one call"]["hero"]["evals"]] == [70, 140, 210, 280, 350]


# --------------------------------------------------------------------------- Learned IK
@pytest.mark.parametrize("method", ["SELF_SUPERVISED", "REWARD"])
def test_learned_ik(method):
    got = {}
    for label, seconds in SLICES.items():
        job = IKTrainingJob(IKSolver(kin.arm3(), hidden=((16, "tanh"),), seed=2), method=method, total_steps=300)
        calls, _ = drive(job, seconds)
        assert calls == 1 if seconds == HUGE else calls >= 300  # (the last finds the generator ended)
        got[label] = (job.history["loss_steps"], job.history["losses"], job.solver.network.params.tobytes())
    assert got["one call"] == got["empty slices"]
    assert got["one call"][0] == [50, 100, 150, 200, 250, 300]  # a validation point every 50 steps


# --------------------------------------------------------------------------- evolution from the command line
def _spy_states(monkeypatch, agent: str, saved: list) -> None:
    """Keep a copy of the population file each time the CLI writes it (it overwrites one file)."""
    build = pure_jobs.AGENTS[agent]

    def spying(env_name, args):
        built = build(env_name, args)
        write = built.save_state

        def save_state(path, settings):
            write(path, settings)
            saved.append((built.job.steps, clean(json.loads(Path(path).read_text()))))
        built.save_state = save_state
        return built
    monkeypatch.setitem(pure_jobs.AGENTS, agent, spying)


@pytest.mark.parametrize("agent, target, generations", [("ga", "cartpole", 4), ("neat", "cartpole", 4),
                                                         ("novelty", "deceptive_maze", 4),
                                                         ("coevolution", "pacman", 3)])
def test_cli_evolution_agents(agent, target, generations, tmp_path, monkeypatch, capsys):
    """``--checkpoint-interval 1``: the population file at every generation, each the same with one slice for the
    whole run and with empty slices (most finishing no generation)."""
    got = {}
    for label, seconds in SLICES.items():
        folder = tmp_path / "run"  # the same paths each time: a population file records where the model went
        saved: list = []
        with monkeypatch.context() as m:
            m.setattr(pure_jobs, "SLICE_S", seconds)
            _spy_states(m, agent, saved)
            assert main(["train", target, "--agent", agent, "--steps", str(generations), "--population", "6",
                         "--seed", "1", "--checkpoint-interval", "1", "--out", str(folder / "e.json")]) == 0
        status = re.findall(r"^\[(\d+)/\d+ generations\]", capsys.readouterr().err, re.M)  # a line per generation
        got[label] = (files(folder), saved, status)
        shutil.rmtree(folder)
    one, empty = got["one call"], got["empty slices"]
    assert sorted(one[0]) == sorted(empty[0])
    for name in one[0]:
        assert one[0][name] == empty[0][name], name
    # every generation's state as it ended (the last one written once more, with the model); a run whose champion
    # passed its check ends early (NEAT on cartpole at generation 1)
    final = one[1][-1][0]
    assert [steps for steps, _ in one[1]] == [*range(1, final), final] and final == one[1][-1][1]["generation"]
    assert one[1] == empty[1]
    assert one[2] == empty[2] == [str(g) for g in range(1, final + 1)]


def test_cli_evolution_every_other_generation(tmp_path, monkeypatch):
    """``--checkpoint-interval 2`` saves at generations 2 and 4 exactly, not at the end of the slice that
    passed them."""
    for label, seconds in SLICES.items():
        saved: list = []
        with monkeypatch.context() as m:
            m.setattr(pure_jobs, "SLICE_S", seconds)
            _spy_states(m, "ga", saved)
            assert main(["train", "cartpole", "--agent", "ga", "--steps", "5", "--population", "6", "--seed", "1",
                         "--checkpoint-interval", "2", "--out", str(tmp_path / label.replace(" ", "_") / "e.json"),
                         "--quiet"]) == 0
        assert [steps for steps, _ in saved] == [2, 4, 5], label
        assert [data["generation"] for _, data in saved] == [2, 4, 5], label
