"""Fixtures for the tests that run on real Blender (the ``bpy`` wheel, headless)."""

import pytest

bpy = pytest.importorskip("bpy")

import atexit  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from drla.extension import register_extension, triton_first  # noqa: E402

# Triton (PyTorch's compiler, where installed) must load before Blender's first GPU context (triton_first says why):
# in one pytest process an offscreen drawing test can come before a gym env opens a file.
triton_first()

ROOT = Path(__file__).resolve().parents[2]
ROBOT_ARM_SCENE = ROOT / "scenes" / "robot_arm" / "robot_arm.blend"

# Inside a Blender binary (``blender -b --python-expr "...pytest.main(...)"``, as make test-matrix runs
# Debian's Blender 5.2) ``sys.executable`` is the system Python, which has no ``bpy``; the tests that
# run ``python -m drla ...``, ``python script.py`` or ``.venv/bin/drla`` as a user would get a
# ``python`` and a ``drla`` that run the same in a fresh ``blender -b`` instead (factory settings, as
# the bpy module starts; PYTHONPATH honoured; the checkout importable, as .venv's editable install).
_STAND_IN = """
import os, runpy, signal, sys, traceback

signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C raises KeyboardInterrupt, as in python
args = sys.argv[sys.argv.index("--") + 1 :]
sys.path.append(ROOT)
sys.executable = PYTHON  # what the CLI shows in its hints is this stand-in too
code = 0
try:
    if args[:1] == ["-m"]:
        sys.argv = args[1:]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    elif args[:1] == ["-c"]:
        sys.argv = ["-c", *args[2:]]
        sys.path.insert(0, "")
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = args
        sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
        runpy.run_path(args[0], run_name="__main__")
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    if not isinstance(exc.code, int | None):
        print(exc.code, file=sys.stderr)
except KeyboardInterrupt:
    traceback.print_exc()
    code = 130
except BaseException:
    traceback.print_exc()
    code = 1
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)  # as python exits: no "Blender quit", no add-on teardown
"""


def _python_stand_in() -> None:
    folder = Path(tempfile.mkdtemp(prefix="drla-python-"))
    atexit.register(shutil.rmtree, folder, True)
    python, drla = folder / "python", folder / "drla"
    (folder / "stand_in.py").write_text(f"ROOT, PYTHON = {str(ROOT)!r}, {str(python)!r}\n" + _STAND_IN)
    python.write_text(f"""#!/bin/sh
export ALSOFT_DRIVERS="${{ALSOFT_DRIVERS:-null}}"  # no audio set-up noise on stderr
exec {bpy.app.binary_path!r} --quiet -noaudio -b --factory-startup --python-use-system-env \\
    --python-exit-code 1 --python {str(folder / "stand_in.py")!r} -- "$@"
""")
    drla.write_text(f'#!/bin/sh\nexec {str(python)!r} -m drla "$@"\n')
    python.chmod(0o755)
    drla.chmod(0o755)
    sys.executable = str(python)


if bpy.app.binary_path:
    _python_stand_in()


_EXIT_STATUS = [0]


def pytest_sessionfinish(session, exitstatus):
    _EXIT_STATUS[0] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """The ``bpy`` 4.5 wheel can hang as its process exits: a static destructor (``GlobalState``) destroys a condition
    variable its delayed-file-close thread still waits on (seen 2026-11-27 with gdb after "447 passed", the junit
    report written; ``make test-matrix`` then waited out its timeout). The reports are written by now, so on 4.x the
    process leaves as ``os._exit`` does, with pytest's status; 5.x exits normally."""
    if bpy.app.version < (5, 0, 0):
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[0])


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.blender)


@pytest.fixture(scope="session")
def ext():
    """The extension package ``drla_ext``, registered once for the session."""
    return register_extension()


@pytest.fixture(autouse=True)
def _runs_never_write_into_the_checkout_or_home(ext, tmp_path_factory, monkeypatch):
    """A run's default folder is next to its .blend, or in the documents folder for an unsaved file: in the tests
    (the example scenes of this checkout, unsaved files) a temporary folder instead, so that no test leaves resume
    files or reports in the repository or the home folder. Files saved under the temporary folder keep theirs."""
    import os

    from drla_ext.addon import preferences

    real = getattr(preferences.default_checkpoint_dir, "real", preferences.default_checkpoint_dir)

    def default_checkpoint_dir(create: bool = True) -> str:
        path = real(create=False)
        if not os.path.abspath(path).startswith(tempfile.gettempdir() + os.sep):
            path = str(tmp_path_factory.getbasetemp() / "drla-output" / os.path.basename(path))
            if create:
                os.makedirs(path, exist_ok=True)
            return path
        return real(create=create)

    default_checkpoint_dir.real = real  # type: ignore[attr-defined]
    monkeypatch.setattr(preferences, "default_checkpoint_dir", default_checkpoint_dir)


@pytest.fixture
def empty_scene(ext):
    """A fresh empty file; keeps our registered classes (read_homefile does)."""
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    yield bpy.context.scene


@pytest.fixture
def reach_blend(ext, tmp_path):
    """The Reach example (a cube and a goal, a transform-only DQN tree) saved as ``tmp_path/reach.blend``."""
    from drla_ext.addon.ui import examples

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    examples.build_transform_scene(scene)
    examples.build_transform_tree(scene)
    path = tmp_path / "reach.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


@pytest.fixture
def arm3_scene(ext, tmp_path):
    """``scenes/robot_arm`` opened with its Arm3 tree picked, writing only into ``tmp_path``."""
    from drla_ext.addon.runs import ik_follow
    from drla_ext.addon.runs import sessions

    bpy.ops.wm.open_mainfile(filepath=str(ROBOT_ARM_SCENE))
    scene = bpy.context.scene
    tree = bpy.data.node_groups["Arm3"]
    next(n for n in tree.nodes if n.bl_idname == "DRLA_ExportJSONNode").filepath = str(tmp_path / "arm3.json")
    scene.drla.tree = tree
    scene.drla.output_dir = str(tmp_path)
    yield scene
    ik_follow.disable_follow(restore=False)
    sessions.discard_all()
