"""Every shell command in README.md and docs/*.md runs as written.

The commands: every line of a fenced ```bash block, and every inline `code` span whose first word is a
program (``drla``, ``make``, ``python``, ``pip``, ``node``, ``npm``, ``source``, ``ray`` or ``.venv*/bin/...``).
An inline span that shows a command's form rather than a command (a placeholder in capitals such as ``SCENE``
or ``N``, ``<...>``, ``...``, a ``|`` list of targets) is syntax and is not run. What cannot run here is listed
in ``NOT_RUN`` with the reason, and prose that merely names a command in ``NOT_COMMANDS``; nothing else is
left out, and a listed entry the docs no longer hold fails ``test_the_lists_name_only_what_the_docs_hold``.

How: each block (and each inline command) runs with bash in its own scratch folder holding ``scenes`` and
``web`` (links to this checkout's) and ``.venv`` (a link to the environment running the tests), with
``PYTHONPATH`` set to this checkout, so the code under test runs, and ``BROWSER=true`` (no browser window).
``make`` commands run in the checkout, their ``OUT`` in the scratch folder; they need the checkout's .venv set
up (as ``make test`` leaves it), else they are skipped with that reason.

One variable, ``DRLA_DOC_STEPS`` (default 300), keeps the runs short: a ``--steps N`` or ``STEPS=N`` above it
becomes it, a ``--checkpoint-interval N`` above half of it becomes half of it, and ``drla demo`` / ``make demo``
(whose step count is the tank tree's) get ``--steps`` / ``STEPS=`` of it. ``drla web`` (a server that runs
until Ctrl-C) is started, asked for its demo page and the model, and stopped with Ctrl-C.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
STEPS = int(os.environ.get("DRLA_DOC_STEPS", "300"))
TIMEOUT = 900  # seconds for one block, all its commands together
SHELL_LANGS = {"bash", "sh", "shell", "console"}
PROGRAMS = {"drla", "make", "python", "python3", "pip", "node", "npm", "source", "ray"}

#: Commands (a block's line without its comment, or an inline span) that cannot run here, and why.
NOT_RUN = {
    "make test": "the suite this test is part of (make test runs it)",
    "make setup": "make test runs it first: the suite runs in the .venv it sets up",
    "make test-gui": "needs root: a Debian sid chroot (debootstrap), Xvfb and Blender 5.2; .ci/run runs it after "
                     "make test",
    "make test-matrix": "needs root for the Blender 5.2 chroot and a second environment (.venv-bpy45, another "
                        "374 MB bpy wheel); run on its own",
    "make bench": "every benchmark, minutes each: figures, not checks",
    "make bench-evolution": "installs neat-python into .venv and runs minutes of benchmarks",
    "make bench-gym-vector": "installs EnvPool into .venv and runs a minute of benchmarks: figures, not checks",
    "make bench-walker-ppo": "trains the walker by PPO and by evolution for two minutes each: figures, not checks",
    "npm ci": "make setup-browser runs it in web/ before the suite (make test's prerequisite)",
    "pip install .": "installs into the environment running the tests; tests/test_package.py builds this wheel "
                     "and installs it into a fresh venv",
    "pip install '.[blender]'": "tests/test_package.py installs the wheel with this extra into a fresh venv",
    "pip install '.[blender,ray]'": "installs into the environment running the tests; tests/test_package.py "
                                    "installs the wheel with the blender extra into a fresh venv",
    "pip install '.[ray]'": "installs into the environment running the tests; make setup installs ray "
                            "(requirements-dev.txt) and tests/test_package.py checks the extra's metadata",
    "pip install ray": "installs into the environment running the tests; make setup installs ray",
    "pip install bpy==5.0.1": "installs into the environment running the tests; make demo installs bpy",
    "pip install '.[onnx]'": "installs into the environment running the tests; make setup installs onnx",
    "pip install '.[gym]'": "installs into the environment running the tests; make setup installs gymnasium and "
                            "pettingzoo (tests/test_gym.py)",
    ".venv-bpy45/bin/python scenes/tank/build_tank.py --out scenes/tank/tank.blend":
        "rewrites a shipped scene with the bpy 4.5 wheel of .venv-bpy45 (make setup-bpy45, make test-matrix's)",
    'pip install "gymnasium[box2d]"': "installs Box2D (a C++ build with swig) into the environment running the "
                                      "tests; tests/test_gym_id.py checks the refusal without it",
    'pip install "ray[rllib]==2.60.0"': "would pin gymnasium to 1.2.2 in the environment running the tests "
                                        "(docs/trainers.md says why the RLlib example is not run)",
    'pip install "pyarrow<19" scipy lz4 ormsgpack pydantic': "RLlib's dependencies, installed by hand in a separate "
                                                             "environment for the RLlib example, which the suite "
                                                             "does not run (docs/trainers.md)",
    "ray start --head --port=6379": "starts a Ray head node for other machines to join (a cluster); the "
                                    "laptop command beside it runs a local Ray instead",
    "ray start --address=HEAD_IP:6379": "joins a Ray cluster at HEAD_IP (another machine)",
    "drla train /shared/scenes/tank.blend --workers 16 --ray HEAD_IP:6379 --copies 8 --out out/tank.json":
        "needs a Ray cluster at HEAD_IP and a shared folder",
}
#: Inline spans whose first word is a program but which name a command in a sentence.
NOT_COMMANDS = {
    "drla play": "the command's name",
    "drla train": "the command's name",
    "drla web": "the command's name",
    "drla eval": "the command's name",
    "drla import-sb3": "the command's name",
    "python -m drla": "the module's name (python -m drla with nothing after it prints the usage)",
}
#: Commands that serve until Ctrl-C.
SERVERS = {"drla web out/cartpole.json"}
#: module -> what in a command needs it (make setup installs them all); without it the test is skipped.
NEEDS = {"bpy": r"\.blend|\bdemo\b|make build", "ray": r"--ray", "onnx": r"export-onnx",
         "tensorboardX": r"--tensorboard", "gymnasium": r"--gym-id|drla\.gym",
         "stable_baselines3": r"stable_baselines3|import-sb3"}


@dataclass
class Snippet:
    doc: str
    line: int
    commands: list[str]

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def fenced_blocks(path: Path) -> list[tuple[str, int, list[str]]]:
    """``(language, line of the opening fence, lines)`` of every fenced block."""
    blocks, current, lang, start = [], None, "", 0
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            if current is None:
                current, lang, start = [], line[3:].strip(), number
            else:
                blocks.append((lang, start, current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def command_of(line: str) -> str:
    """A block's line without its comment (``#`` after a blank, as bash reads it)."""
    return re.sub(r"(^|\s+)#.*$", "", line).strip()


def is_form(span: str) -> bool:
    """A command's form with placeholders, not a command: ``drla train SCENE --copies N``."""
    return bool(re.search(r"\b[A-Z][A-Z0-9_]*\b(?!=)|<[^>]*>|\.\.\.|\s\|\s|/path/to/", span))  # STEPS=5000: a value


def shell_blocks() -> list[Snippet]:
    return [Snippet(path.name if path.parent == ROOT else f"docs/{path.name}", start,
                    [c for c in map(command_of, lines) if c])
            for path in DOCS for lang, start, lines in fenced_blocks(path) if lang in SHELL_LANGS]


def inline_spans() -> list[tuple[str, int, str]]:
    """``(doc, line, span)`` for every inline code span outside fenced blocks whose first word is a program."""
    found = []
    for path in DOCS:
        doc = path.name if path.parent == ROOT else f"docs/{path.name}"
        inside = False
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.startswith("```"):
                inside = not inside
                continue
            if inside:
                continue
            for span in re.findall(r"`([^`]+)`", line):
                words = span.split()
                if len(words) > 1 and (words[0] in PROGRAMS or re.match(r"\.venv[^/]*/bin/", words[0])):
                    found.append((doc, number, span.strip()))
    return found


def inline_commands() -> list[Snippet]:
    """The inline commands to run: not a form, not listed, not a command a block runs already."""
    seen = {c for snippet in shell_blocks() for c in snippet.commands}
    snippets = []
    for doc, number, span in inline_spans():
        if is_form(span) or span in NOT_COMMANDS or span in NOT_RUN or span in seen:
            continue
        seen.add(span)
        snippets.append(Snippet(doc, number, [span]))
    return snippets


def shrink(command: str, workdir: Path) -> str:
    """The command with DRLA_DOC_STEPS substituted (see the module's docstring); make's OUT in ``workdir``."""
    command = re.sub(r"--steps (\d+)", lambda m: f"--steps {min(int(m[1]), STEPS)}", command)
    command = re.sub(r"--checkpoint-interval (\d+)",
                     lambda m: f"--checkpoint-interval {min(int(m[1]), max(1, STEPS // 2))}", command)
    command = re.sub(r"\bSTEPS=(\d+)", lambda m: f"STEPS={min(int(m[1]), STEPS)}", command)
    if command == "drla demo":
        command += f" --steps {STEPS}"
    if command.startswith("make "):
        if command.split()[1] == "demo" and "STEPS=" not in command:
            command += f" STEPS={STEPS}"
        command = f"cd {shlex.quote(str(ROOT))} && {command} OUT={shlex.quote(str(workdir / 'out'))}"
    return command


def workspace(tmp_path: Path) -> Path:
    for name in ("scenes", "web"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    return tmp_path


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DRLA_EXPERTS",)}
    env.update(PYTHONPATH=str(ROOT), BROWSER="true", PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}")
    return env


def check_needs(snippet: Snippet) -> None:
    text = "\n".join(c for c in snippet.commands if c not in NOT_RUN)
    for module, pattern in NEEDS.items():
        if re.search(pattern, text) and importlib.util.find_spec(module) is None:
            pytest.skip(f"{snippet.id} needs the {module} module (make setup installs it)")
    for program in ("node", "npm"):
        if re.search(rf"^{program} ", text, re.M) and shutil.which(program) is None:
            pytest.skip(f"{snippet.id} needs {program} (Node 18 or newer), which is not on the PATH")
    if "source .venv/bin/activate" in text and sys.prefix == sys.base_prefix:
        pytest.skip("the tests do not run in a virtual environment: the docs' .venv commands need one")


def make_ready() -> str | None:
    """Why ``make`` commands cannot run here (the checkout's .venv is not set up), or None."""
    r = subprocess.run(["make", "-q", ".venv/.installed-demo"], cwd=ROOT, capture_output=True, timeout=60)
    if r.returncode != 0:
        return "the checkout's .venv is not set up (make demo would first download about 390 MB); make test sets it up"
    return None


def run_script(commands: list[str], workdir: Path, env: dict[str, str]) -> None:
    lines = ["set -e -o pipefail"]
    for command in commands:
        lines += [f"echo {shlex.quote('+ ' + command)} >&2", command]
    r = subprocess.run(["bash", "-c", "\n".join(lines)], cwd=workdir, env=env, capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert r.returncode == 0, f"exit status {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-4000:]}"


def serve_and_stop(command: str, workdir: Path, env: dict[str, str]) -> None:
    """Start the server, fetch its demo page and the model it serves, then Ctrl-C it."""
    proc = subprocess.Popen(["bash", "-c", command], cwd=workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    guard = threading.Timer(120, lambda: os.killpg(proc.pid, signal.SIGKILL))
    guard.start()
    try:
        first = proc.stdout.readline() if proc.stdout else ""
        url = re.search(r"http://\S+", first)
        assert url, f"{command} printed no address: {first!r}"
        with urllib.request.urlopen(url[0], timeout=30) as page:
            assert page.status == 200 and b"<html" in page.read().lower()
        model = next(Path(word) for word in shlex.split(command) if word.endswith(".json"))
        with urllib.request.urlopen(re.sub(r"/web/.*", "/model.json", url[0]), timeout=30) as served:
            assert served.read() == (workdir / model).read_bytes()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        guard.cancel()
    assert proc.returncode == 0 and "stopped" in out, f"{command} after Ctrl-C: {proc.returncode}\n{out[-2000:]}"


def run_snippet(snippet: Snippet, tmp_path: Path) -> None:
    check_needs(snippet)
    workdir, env = workspace(tmp_path), environment()
    not_run = []
    pending: list[str] = []
    for command in snippet.commands:
        if command in NOT_RUN:
            continue
        if command.startswith("make ") and (why := make_ready()):
            not_run.append(f"{command}: {why}")
            continue
        if command in SERVERS:
            run_script(pending, workdir, env)
            pending = []
            serve_and_stop(command, workdir, env)
        else:
            pending.append(shrink(command, workdir))
    run_script(pending, workdir, env)
    if not_run:
        pytest.skip(f"{snippet.id}: not run: " + "; ".join(not_run))


@pytest.mark.slow
@pytest.mark.parametrize("snippet", shell_blocks(), ids=lambda s: s.id)
def test_block_runs_as_written(snippet, tmp_path):
    run_snippet(snippet, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("snippet", inline_commands(), ids=lambda s: s.id)
def test_inline_command_runs_as_written(snippet, tmp_path):
    run_snippet(snippet, tmp_path)


def test_unlabelled_blocks_hold_no_commands():
    """A block of commands must be marked ```bash, else this test would not run it."""
    for path in DOCS:
        for lang, start, lines in fenced_blocks(path):
            firsts = [command_of(line).split()[0] for line in lines if command_of(line)]
            if lang not in SHELL_LANGS and firsts and firsts[0] in PROGRAMS:
                pytest.fail(f"{path.name}:{start}: a block of commands fenced as {lang or 'nothing'!r}: mark it bash")


def test_the_lists_name_only_what_the_docs_hold():
    commands = {c for snippet in shell_blocks() for c in snippet.commands}
    spans = {span for _, _, span in inline_spans()}
    for listed in (*NOT_RUN, *SERVERS):
        assert listed in commands | spans, f"{listed!r} is listed here but no longer in the docs"
    for listed in NOT_COMMANDS:
        assert listed in spans, f"{listed!r} is listed here but no longer in the docs"
    assert all(c not in NOT_RUN or not c.startswith("drla train scenes/") for c in commands)


def test_steps_are_substituted_as_documented(tmp_path):
    assert shrink("drla train cartpole --steps 50000 --out out/c.json", tmp_path) == \
        f"drla train cartpole --steps {min(50000, STEPS)} --out out/c.json"
    assert shrink("drla train pacman --agent coevolution --steps 12", tmp_path).endswith(f"--steps {min(12, STEPS)}")
    assert f"--checkpoint-interval {min(10000, STEPS // 2)}" in shrink("drla train x.blend --checkpoint-interval 10000",
                                                                      tmp_path)
    assert shrink("drla demo", tmp_path) == f"drla demo --steps {STEPS}"
    made = shrink("make demo", tmp_path)
    assert made.startswith(f"cd {ROOT} && make demo STEPS={STEPS} OUT=") and made.endswith("/out")
