"""``make test-matrix``: the Blender suite (tests/blender) on every Blender the manifest admits.

    python tests/matrix/matrix.py [VERSION ...]      (default: every version in MATRIX)

* 4.5: the ``bpy`` 4.5 wheel in ``.venv-bpy45`` (``make test-matrix`` sets it up from
  tests/matrix/requirements-bpy45.txt);
* 5.0: the ``bpy`` 5.0 wheel in ``.venv`` (``make setup``);
* 5.2: Debian sid's Blender in the chroot of ``make test-gui`` (tests/gui/setup_chroot.sh builds it
  once, needs root), pytest running inside the ``blender`` binary on a copy of the checkout (tracked
  and untracked, not ignored, files) at ``$ROOT/drla_matrix``. Where the chroot cannot be had it
  prints ``MATRIX 5.2 NOT RUN:`` and why, and that is not a failure.

The whole suite runs everywhere (18 min for bpy 4.5 on the loaded 2-core machine, 2026-11-27;
nothing is left out as slow). A few tests exercise what only some versions have; DESELECT lists
them with the reason, printed with the table. Prints a table version -> passed/failed/skipped/
deselected and duration; exits 1 when a version fails (or crashes, or runs past TIMEOUT_S).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUITE = "tests/blender"
TIMEOUT_S = 1200
CHROOT = Path(os.environ.get("DRLA_GUI_ROOT", "/var/cache/drla-gui/sid"))
IN_CHROOT = "drla_matrix"  # a Python identifier: pytest imports the checkout's __init__.py by its folder's name

#: version -> how it is run. tests/test_versions.py reads these keys: the manifest's minimum must be one.
MATRIX = {
    "4.5": "bpy wheel in .venv-bpy45 (tests/matrix/requirements-bpy45.txt)",
    "5.0": "bpy wheel in .venv (requirements-demo.txt)",
    "5.2": "Debian sid's blender binary in the make test-gui chroot",
}
VENVS = {"4.5": ".venv-bpy45", "5.0": ".venv"}

#: Tests of behaviour a version does not have: node id (prefix) -> why it is left out there.
DESELECT: dict[str, dict[str, str]] = {}  # none today: tests of what a version lacks skip themselves, with the reason


@dataclass
class Result:
    version: str
    blender: str = "?"
    status: str = "NOT RUN"  # ok, FAILED, CRASHED, TIMED OUT, NOT RUN
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    reason: str = ""


def pytest_args(version: str, junit: str) -> list[str]:
    args = ["-q", "-p", "no:cacheprovider", "-rfE", f"--junitxml={junit}", SUITE]
    for node in DESELECT.get(version, {}):
        args.append(f"--deselect={node}")
    return args


def run_streamed(cmd: list[str], cwd: Path | None = None) -> tuple[int | None, str]:
    """Run ``cmd``, echoing its output; return (exit status, or None when it ran past TIMEOUT_S; the output)."""
    lines: list[str] = []
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", start_new_session=True)

    def echo() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            lines.append(line)

    reader = threading.Thread(target=echo, daemon=True)
    reader.start()
    try:
        rc: int | None = proc.wait(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the run's own process group (start_new_session)
        proc.wait()
        rc = None
    reader.join(timeout=10)
    return rc, "".join(lines)


def counts_from(junit: Path, output: str) -> dict[str, int]:
    """passed / failed (errors included) / skipped / deselected, from pytest's last summary line and its report."""
    counts = dict.fromkeys(("passed", "failed", "skipped", "deselected"), 0)
    pattern = r"(\d+) (passed|failed|skipped|deselected|errors?)\b"
    for line in reversed(output.splitlines()):
        if re.search(r" in [\d.]+s", line) and re.search(pattern, line):
            for n, what in re.findall(pattern, line):
                counts["failed" if what.startswith("error") else what] += int(n)
            break
    if junit.is_file():  # the same counts from the report, when pytest got to write it
        suite = ET.parse(junit).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        if suite is not None:
            total, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
            failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            counts.update(passed=total - failed - skipped, failed=failed, skipped=skipped)
    return counts


def judge(res: Result, rc: int | None, output: str, junit: Path, started: float) -> Result:
    res.seconds = time.monotonic() - started
    res.counts = counts_from(junit, output)
    if rc is None:
        res.status, res.reason = "TIMED OUT", f"past {TIMEOUT_S} s"
    elif rc == 0 and res.counts["failed"] == 0 and res.counts["passed"] > 0:
        res.status = "ok"
    elif rc in (0, 1) and (res.counts["passed"] or res.counts["failed"]):
        res.status = "FAILED"
    else:
        res.status, res.reason = "CRASHED", f"exit status {rc}"
    return res


def run_venv(version: str) -> Result:
    res = Result(version)
    python = ROOT / VENVS[version] / "bin" / "python"
    if not python.exists():
        res.reason = f"{VENVS[version]} is missing (make test-matrix sets it up)"
        return res
    probe = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('bpy'))"],
                           capture_output=True, text=True)
    res.blender = f"bpy {probe.stdout.strip() or '?'}"
    junit = ROOT / "out" / "matrix" / f"junit-{version}.xml"
    junit.parent.mkdir(parents=True, exist_ok=True)
    junit.unlink(missing_ok=True)
    print(f"\n==== MATRIX {version}: {res.blender} ({MATRIX[version]})", flush=True)
    started = time.monotonic()
    rc, output = run_streamed([str(python), "-m", "pytest", *pytest_args(version, str(junit))], cwd=ROOT)
    return judge(res, rc, output, junit, started)


def copy_checkout(dest: Path) -> None:
    """Tracked and untracked (not ignored) files of the checkout, as they are now, into ``dest``."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True)
    if listed.returncode != 0:
        raise RuntimeError("git ls-files failed: " + listed.stderr.decode(errors="replace").strip())
    for name in filter(None, listed.stdout.decode().split("\0")):
        src = ROOT / name
        if src.is_file():  # a tracked file deleted in the work tree is left out
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def _mounted(path: Path) -> bool:
    return subprocess.run(["mountpoint", "-q", str(path)], capture_output=True).returncode == 0


def _unmount(root: Path) -> None:
    """Undo setup_chroot.sh's mounts (as tests/gui/run.sh does), when they were not there before."""
    for args in (["umount", str(root / "dev/shm"), str(root / "dev/pts"), str(root / "dev")],
                 ["umount", "-R", str(root / "sys")], ["umount", str(root / "proc")]):
        subprocess.run(args, capture_output=True)


def run_chroot(version: str) -> Result:
    mounted_before = _mounted(CHROOT / "proc")
    try:
        return _run_chroot(version)
    finally:
        if not mounted_before and _mounted(CHROOT / "proc"):
            _unmount(CHROOT)


def _run_chroot(version: str) -> Result:
    res = Result(version)
    setup = subprocess.run(["bash", str(ROOT / "tests" / "gui" / "setup_chroot.sh"), str(CHROOT)],
                           capture_output=True, text=True)
    if setup.returncode != 0:
        why = (setup.stderr.strip() or setup.stdout.strip() or f"exit status {setup.returncode}").splitlines()[-1]
        res.reason = f"no chroot at {CHROOT}: {why}"
        print(f"MATRIX {version} NOT RUN: {res.reason}", flush=True)
        return res
    env = ["env", "-i", "PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "ALSOFT_DRIVERS=null"]
    blender = ["blender", "--quiet", "-noaudio", "-b", "--factory-startup", "--python-exit-code", "1"]
    probe = subprocess.run(["chroot", str(CHROOT), *env, "blender", "--version"], capture_output=True, text=True)
    res.blender = next((ln.strip() for ln in probe.stdout.splitlines() if ln.startswith("Blender")), "blender ?")
    try:
        copy_checkout(CHROOT / IN_CHROOT)
    except (OSError, RuntimeError) as exc:
        res.reason = f"could not copy the checkout into the chroot: {exc}"
        print(f"MATRIX {version} NOT RUN: {res.reason}", flush=True)
        return res
    junit = CHROOT / IN_CHROOT / "junit.xml"
    expr = f"import sys, pytest; sys.exit(pytest.main({pytest_args(version, f'/{IN_CHROOT}/junit.xml')!r}))"
    print(f"\n==== MATRIX {version}: {res.blender} ({MATRIX[version]} {CHROOT})", flush=True)
    started = time.monotonic()
    rc, output = run_streamed(["chroot", str(CHROOT), *env, "bash", "-c",
                               f"cd /{IN_CHROOT} && exec " + " ".join(map(_quote, [*blender, "--python-expr", expr]))])
    return judge(res, rc, output, junit, started)


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def table(results: list[Result]) -> str:
    head = f"{'version':<8} {'Blender':<22} {'result':<10} {'passed':>6} {'failed':>6} {'skipped':>7} " \
           f"{'deselected':>10} {'time':>7}"
    rows = [head, "-" * len(head)]
    for r in results:
        c = r.counts
        if r.status == "NOT RUN":
            rows.append(f"{r.version:<8} {r.blender:<22} {'NOT RUN':<10} {r.reason}")
            continue
        rows.append(f"{r.version:<8} {r.blender:<22} {r.status:<10} {c.get('passed', 0):>6} {c.get('failed', 0):>6} "
                    f"{c.get('skipped', 0):>7} {c.get('deselected', 0):>10} {r.seconds:>6.1f}s"
                    + (f"  ({r.reason})" if r.reason else ""))
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    wanted = argv or list(MATRIX)
    unknown = [v for v in wanted if v not in MATRIX]
    if unknown:
        print(f"unknown version(s) {unknown}; the matrix has {list(MATRIX)}", file=sys.stderr)
        return 2
    results = [run_venv(v) if v in VENVS else run_chroot(v) for v in wanted]
    print("\n==== MATRIX: the Blender suite (" + SUITE + ") per version")
    print(table(results))
    for version, tests in DESELECT.items():
        if version in wanted:
            for node, why in tests.items():
                print(f"  left out on {version}: {node.split('::')[-1]}: {why}")
    for r in results:
        if r.status == "NOT RUN":
            print(f"MATRIX {r.version} NOT RUN: {r.reason}")
    bad = [r.version for r in results if r.status not in ("ok", "NOT RUN")]
    missing_venv = [r.version for r in results if r.status == "NOT RUN" and r.version in VENVS]
    if bad or missing_venv:
        print(f"MATRIX FAILED: {', '.join(bad + missing_venv)}")
        return 1
    print("MATRIX OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
