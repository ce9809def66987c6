"""Every agent with every command (issue 23, item 3): it works, or it refuses with one line that says why
(``error:``, exit status 2); never a traceback, never a silent no-op.

The table is generated from the registries: the agents are ``drla train --agent``'s choices (``dqn`` and
``pure_jobs.AGENTS``), the commands are the parser's subcommands plus the flags that change what ``train`` does
(``--resume``, ``--copies``, ``--workers``). A subcommand that is in neither ``COMMANDS`` nor ``NO_MODEL`` fails
``test_every_command_is_in_the_table``, so a new command is covered as soon as it is written; a new agent is
covered without any change here. The outcome of each (agent, command) is printed as a table (``pytest -s``).

The .blend agent kinds (``runs.kinds.KINDS``) and the panel's buttons: tests/blender/test_kind_combinations.py, with the
same ``run_cli`` and ``outcome``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from drla.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
TANK = ROOT / "scenes" / "tank" / "tank.blend"

#: Every agent ``drla train`` takes on a built-in environment (its ``--agent`` choices).
AGENTS = tuple(next(a for a in build_parser()._subparsers._group_actions[0].choices["train"]._actions
                    if a.dest == "agent").choices)
#: The built-in environment each agent trains on here (a two-agent game for co-evolution).
ENV = {"coevolution": "pacman", "sac": "pendulum"}
#: The smallest run of each: a few hundred DQN steps, one generation of a tiny population.
TINY = {"dqn": ["--steps", "300", "--learning-starts", "100", "--eval-interval", "0", "--hidden", "8",
                "--checkpoint-interval", "200"],
        "ppo": ["--steps", "300", "--copies", "2", "--n-steps", "50", "--batch-size", "50", "--n-epochs", "1",
                "--eval-interval", "0", "--hidden", "8", "--checkpoint-interval", "200"],
        "sac": ["--steps", "300", "--learning-starts", "100", "--eval-interval", "0", "--hidden", "8",
                "--batch-size", "32", "--checkpoint-interval", "200"]}
#: ``--steps`` of the resumed run (an evolution run's: generations)
MORE_STEPS = {"dqn": "400", "ppo": "400", "sac": "400"}
TINY_EVOLUTION = ["--steps", "1", "--population", "4"]


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser's subcommands, ``experts add`` style for nested ones."""
    out: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out[name] = sub
                out.update({f"{name} {k}": v for k, v in subcommands(sub).items()})
    return out


# ---- running a command and judging what it did ------------------------------------------------------------------


@dataclass
class Result:
    argv: list[str]
    code: int | None
    out: str
    err: str
    crash: str = ""  # the traceback, when the command raised


def run_cli(argv: list[str], cwd: Path) -> Result:
    """``drla ARGV`` in this process (from ``cwd``), stdout and stderr captured; a raised exception is kept as
    the ``crash`` (what a user would see as a traceback)."""
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code: int | None = main([str(a) for a in argv])
            except BaseException:  # noqa: BLE001 - a traceback is exactly what is looked for
                return Result(argv, None, out.getvalue(), err.getvalue(), traceback.format_exc())
    finally:
        os.chdir(old)
    return Result(argv, code, out.getvalue(), err.getvalue())


def run_subprocess(argv: list[str], cwd: Path, until: str, timeout: float = 60.0) -> Result:
    """``python -m drla ARGV`` until it prints a line starting with ``until`` (a server: ``serving``), then
    stopped; or to its end. PYTHONPATH first holds this checkout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "drla", *map(str, argv)], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline() if proc.stdout else ""
    if first.startswith(until):
        proc.terminate()
        rest, err = proc.communicate(timeout=timeout)
        return Result(argv, 0, first + rest, err)
    rest, err = proc.communicate(timeout=timeout)
    crash = err if "Traceback" in err else ""
    return Result(argv, proc.returncode, first + rest, err, crash)


def outcome(result: Result) -> tuple[str, str]:
    """``("works", first line)``, ``("refused", the reason)`` or ``("BROKEN", why)``: a traceback, another exit
    status, a refusal that is not one ``error:`` line, or a command that succeeded without saying anything."""
    if result.crash:
        return "BROKEN", "traceback: " + result.crash.strip().splitlines()[-1]
    err = [line for line in result.err.splitlines() if line.strip()]
    if result.code == 0:
        said = (result.out.strip() or result.err.strip()).splitlines()
        return ("works", said[-1][:100]) if said else ("BROKEN", "exit 0 without a word: a silent no-op?")
    if result.code == 2:
        # one error line, the last thing said (after it only argparse's "(for the options" hint, or a tree's
        # problems, indented); lines before it are what the command did first ("Learned IK on Arm3: ...")
        errors = [i for i, line in enumerate(err) if "error:" in line]
        after = [line for line in err[errors[-1] + 1:] if not line.startswith(("(for the options", " "))] \
            if errors else []
        if len(errors) == 1 and not after and "Traceback" not in result.err:
            return "refused", err[errors[0]].split("error:", 1)[1].strip()[:160]
        return "BROKEN", f"exit 2 but not one error line: {err[-4:]}"
    return "BROKEN", f"exit status {result.code}: {(err or result.out.splitlines())[-3:]}"


def table_text(rows: dict[tuple[str, str], tuple[str, str]], title: str) -> str:
    width = max(len(f"{a} | {c}") for a, c in rows) + 2
    lines = [title, "-" * len(title)]
    lines += [f"{f'{a} | {c}':{width}s} {verdict}: {why}" for (a, c), (verdict, why) in sorted(rows.items())]
    return "\n".join(lines)


# ---- the table: command -> the command lines that try it with one agent's trained files -------------------------


@dataclass
class Trained:
    """What one agent's (or tree's) tiny training run left in ``folder``, and how to run it again."""

    agent: str
    base: list[str]  # ``train TARGET ...`` without --out: the tiny run
    folder: Path
    train: Result
    more_steps: str = "2"  # --steps for the resumed run
    scene: tuple[str, ...] = (str(TANK),)  # what ``play`` plays in: a .blend (and --tree)
    model: Path = Path()
    state: Path = Path()  # what --resume continues: a DQN checkpoint, an evolution population

    def argv(self, out: Path, *extra: str) -> list[str]:
        return [*self.base, "--out", str(out), *extra]


def _model(t: Trained) -> list[str]:
    return [str(t.model)]


#: command -> ``(trained) -> argv lists``; a name with a space is a flag of ``train`` or a nested command.
COMMANDS: dict[str, Callable[[Trained], list[list[str]]]] = {
    "train": lambda t: [],  # run by the fixture: its result is the row
    "train --resume": lambda t: [["train", t.base[1], *t.scene[1:], "--resume", str(t.state), "--out",
                                  str(t.folder / "resumed.json"), "--quiet", "--steps", t.more_steps]],
    "train --copies": lambda t: [t.argv(t.folder / "copies.json", "--copies", "2")],
    "train --workers": lambda t: [t.argv(t.folder / "workers.json", "--workers", "1")],
    # the same agent on Gymnasium's CartPole-v1 (drla/gym_adapter.py): every agent but co-evolution and SAC (continuous
    # actions only) trains it
    "train --gym-id": lambda t: [["train", "--gym-id", "CartPole-v1", *t.base[2:], "--out",
                                  str(t.folder / "gym.json")]],
    "eval": lambda t: [["eval", *_model(t), "--episodes", "2"]],
    "play": lambda t: [["play", *t.scene, "--model", *_model(t), "--episodes", "1"]],
    "inspect": lambda t: [["inspect", *_model(t)]],
    "export-onnx": lambda t: [["export-onnx", *_model(t), str(t.folder / "m.onnx")]],
    "import-onnx": lambda t: [["export-onnx", *_model(t), str(t.folder / "m2.onnx")],
                              ["import-onnx", str(t.folder / "m2.onnx"), str(t.folder / "back.json")]],
    "web": lambda t: [["web", *_model(t), "--no-browser"]],
    "merge": lambda t: [["merge", *_model(t), *_model(t), "--out", str(t.folder / "merged.json")]],
    "show": lambda t: [["show", *_model(t), "--out", str(t.folder / "net.png"), "--width", "200", "--height", "120"]],
    "experts": lambda t: [["experts", "--library", str(t.folder / "lib")]],
    "experts list": lambda t: [["experts", "--library", str(t.folder / "lib"), "list"]],
    "experts add": lambda t: [["experts", "--library", str(t.folder / "lib"), "add", *_model(t), "--name", "x"]],
    "experts remove": lambda t: [["experts", "--library", str(t.folder / "lib"), "add", *_model(t), "--name", "y"],
                                 ["experts", "--library", str(t.folder / "lib"), "remove", "y"]],
}
#: Subcommands that take no tree and no model, and where they are tested.
NO_MODEL = {
    "envs": "lists the built-in environments (tests/test_cli.py)",
    "demo": "trains the tank example, no model or tree of the user's (tests/blender/test_cli_scene.py)",
    "import-sb3": "reads a Stable-Baselines3 zip, not a DRLA model (tests/test_sb3_io.py)",
    "record-keyframes": "writes a demonstration from a .blend's keyframes, no model and no agent "
                        "(tests/blender/test_demos_keyframes.py)",
}
#: Commands run as a separate process (they serve until stopped): the line that says they are up.
SERVES = {"web": "serving "}


def test_every_command_is_in_the_table():
    """A subcommand of ``drla`` that is neither in COMMANDS nor in NO_MODEL fails here: add its row."""
    names = set(subcommands(build_parser()))
    missing = sorted(names - set(COMMANDS) - set(NO_MODEL))
    assert not missing, f"commands the combination table does not try: {missing}"
    stale = sorted(c for c in set(COMMANDS) | set(NO_MODEL) if c not in names and not c.startswith("train --"))
    assert not stale, f"rows for commands that no longer exist: {stale}"
    assert {"dqn", "ga", "neat", "novelty", "coevolution"} <= set(AGENTS)


def train_once(agent: str, base: list[str], folder: Path, **more) -> Trained:
    """Run ``base`` (``train TARGET ...``) into ``folder/m.json``; find its model and its resumable state."""
    result = run_cli([*base, "--out", str(folder / "m.json")], folder)
    t = Trained(agent, base, folder, result, **more)
    models = [m for m in sorted(folder.glob("m*.json"))
              if not m.name.endswith(("_population.json", "_ckpt.json")) and "_step" not in m.name]
    t.model = models[0] if models else folder / "m.json"
    states = [p for p in (folder / "m_ckpt.npz", folder / "m_ckpt.json", folder / "m_population.json") if p.exists()]
    t.state = states[0] if states else folder / "m_ckpt.npz"
    return t


def run_row(t: Trained, command: str) -> tuple[str, str]:
    """The outcome of ``command``'s command lines for ``t``: the first that does not work, else the last."""
    verdict: tuple[str, str] = outcome(t.train) if command == "train" else ("works", "")
    for argv in COMMANDS[command](t):
        result = run_subprocess(argv, t.folder, SERVES[argv[0]]) if argv[0] in SERVES else run_cli(argv, t.folder)
        verdict = outcome(result)
        if verdict[0] != "works":
            break
    return verdict


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict[str, Trained]:
    """One tiny training run per agent, shared by every command's row."""
    runs = {}
    for agent in AGENTS:
        env = ENV.get(agent, "cartpole")
        base = ["train", env, "--agent", agent, "--quiet", *TINY.get(agent, TINY_EVOLUTION)]
        runs[agent] = train_once(agent, base, tmp_path_factory.mktemp(f"combo_{agent}"),
                                 more_steps=MORE_STEPS.get(agent, "2"))
    return runs


@pytest.mark.slow
def test_every_agent_with_every_command(trained, capsys):
    rows: dict[tuple[str, str], tuple[str, str]] = {}
    for agent, t in trained.items():
        assert outcome(t.train)[0] == "works", (agent, t.train)
        assert t.model.is_file() and t.state.is_file(), (agent, sorted(p.name for p in t.folder.iterdir()))
        for command in COMMANDS:
            rows[(agent, command)] = run_row(t, command)
    with capsys.disabled():
        print("\n" + table_text(rows, "drla commands x built-in agents"))
    broken = {k: v for k, v in rows.items() if v[0] == "BROKEN"}
    assert not broken, table_text(broken, "BROKEN")
    # what must work for every agent: the model file is a model like any other
    for agent in trained:
        for command in ("inspect", "show", "export-onnx", "experts add"):
            assert rows[(agent, command)][0] == "works", (agent, command, rows[(agent, command)])
    assert rows[("dqn", "train --resume")][0] == "works" and rows[("ga", "train --resume")][0] == "works"
    assert rows[("dqn", "train --copies")][0] == "works"
    assert all(rows[(a, "train --gym-id")][0] == "works" for a in AGENTS if a not in ("coevolution", "sac"))
    verdict, why = rows[("coevolution", "train --gym-id")]
    assert verdict == "refused" and "two-agent game" in why
    verdict, why = rows[("sac", "train --gym-id")]  # CartPole-v1's actions are a set (--gym-id: discrete only)
    assert verdict == "refused" and "--agent sac needs continuous actions" in why
    assert rows[("sac", "train --resume")][0] == "works" and rows[("sac", "train --copies")][0] == "works"
    assert rows[("sac", "eval")][0] == "works"
    verdict, why = rows[("dqn", "train --workers")]
    assert verdict == "refused" and "applies to a .blend scene's tree" in why
