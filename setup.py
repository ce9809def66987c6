"""How the wheel is laid out; the project's metadata is in pyproject.toml.

Packages are found, never listed by hand (a hand-kept list once left out ``drla_core.rl``):

- ``drla`` (the command line) and ``drla_core`` (pure numpy), as they lie in this folder;
- ``drla_ext``: the Blender extension, laid out as the zip ``make build`` writes (this folder's
  ``__init__.py``, ``addon/`` and its own ``drla_core/``, the manifest, the example scenes), plus the web
  demo that ``drla web`` serves. ``addon`` imports the core relatively (``from ..drla_core import dqn``),
  so the extension is a package holding both, as inside Blender (``bl_ext.<repo>.drla``).
  ``drla.extension`` loads it (from this checkout when there is one, else this installed package).
"""

from setuptools import find_packages, setup

EXTENSION = "drla_ext"
CORE = ["drla_core", "drla_core.*"]

setup(
    packages=[
        *find_packages(include=["drla", "drla.*", *CORE]),
        EXTENSION,
        *(f"{EXTENSION}.{name}" for name in find_packages(include=["addon", "addon.*", *CORE])),
    ],
    include_package_data=False,  # only the package_data below (no data files found by other means)
    package_dir={EXTENSION: "."},  # drla_ext/__init__.py is this folder's __init__.py, drla_ext.addon is addon/
    package_data={
        "drla_core.io": ["model_schema.json"],
        f"{EXTENSION}.drla_core.io": ["model_schema.json"],
        EXTENSION: [
            "blender_manifest.toml",
            "scenes/*/*.blend",
            "scenes/robot_arm/*_ik.json",
            "web/drla.js",
            "web/demos/*.html",
            "web/demos/*.js",
            "web/demos/*.css",
            "web/demos/models/*.json",
        ],
    },
)
