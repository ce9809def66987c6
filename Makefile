# DRLA developer commands. Every target that needs Python sets up .venv first.
PYTHON_311 ?= $(shell command -v python3.11 2>/dev/null || echo python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
BLENDER_EXT = $(shell ls $(VENV)/lib/python3.11/site-packages/bpy/*/scripts/addons_core/bl_pkg/cli/blender_ext.py 2>/dev/null | head -n1)
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' blender_manifest.toml)
ZIP := dist/drla-$(VERSION).zip
OUT ?= out

.PHONY: setup setup-demo setup-bpy45 setup-browser test test-cpu-paths test-fast test-blender test-gui test-matrix demo bench bench-evolution bench-evolution-workers bench-gym-vector bench-walker-ppo lint format type check build validate clean help

help:  ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

# Two stages in the one .venv: what the demo needs (requirements-demo.txt: bpy, numpy; about 390 MB to
# download) and, for the tests and the other targets, the development tools (requirements-dev.txt).
$(DEMO_STAMP): requirements-demo.txt pyproject.toml setup.py
	@$(PYTHON_311) -c 'import sys; assert sys.version_info[:2] == (3, 11), "DRLA needs Python 3.11 (the bpy wheels are cp311 only); set PYTHON_311=/path/to/python3.11"'
	@test -x $(PY) || $(PYTHON_311) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-demo.txt
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet --no-deps -e .  # the `drla` command: .venv/bin/drla
	@rm -rf drla.egg-info build  # setuptools' build leftovers; the install lives in .venv
	@touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP) requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	@touch $(STAMP)

setup-demo: $(DEMO_STAMP)  ## create .venv with Python 3.11, bpy==5.0.1, numpy and the drla command: all make demo needs

setup: $(STAMP)  ## setup-demo, then the pinned development tools (pytest, ruff, mypy, ray, onnx, ...)

test: setup setup-browser  ## the whole suite: pure core, real Blender (headless), then headless Chromium (tests/web)
	$(PY) -m pytest -q -rs tests/test_*.py tests/blender tests/web

# The pure suite as a CPU without AVX-512 runs it: numpy's AVX-512 kernels off (NPY_DISABLE_CPU_FEATURES) and
# OpenBLAS on its Haswell (AVX2) kernels; the results must not change (tests/test_exact_math.py does the same for
# the code's own probe). Run it on an AVX-512 machine; on an older one it is the plain suite.
NO_AVX512 := AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL
test-cpu-paths: setup  ## the pure suite with numpy's AVX-512 kernels and OpenBLAS's AVX-512 kernels turned off
	NPY_DISABLE_CPU_FEATURES="$(NO_AVX512)" OPENBLAS_CORETYPE=Haswell $(PY) -m pytest -q -rs tests/test_*.py

test-fast: setup  ## the suite without tests marked slow
	$(PY) -m pytest -q -rs -m "not slow" tests/test_*.py tests/blender tests/web

# The browser tests (tests/web) drive Debian's chromium through playwright-core (web/'s one dev dependency;
# no browser is downloaded). Where chromium cannot be installed (not root, no apt-get, no network) this says
# so and the browser tests are skipped with that reason, never passed.
WEB_STAMP := web/node_modules/.installed
setup-browser: $(WEB_STAMP)  ## Debian's chromium (apt-get, as root, if missing) and web/'s npm dev dependencies
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || echo "setup-browser: apt-get could not install chromium: the browser tests will be SKIPPED"; \
	  else echo "setup-browser: chromium is missing and cannot be installed here (needs root and apt-get):" \
	    "the browser tests will be SKIPPED"; fi; }

$(WEB_STAMP): web/package.json web/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  (cd web && npm ci --no-audit --no-fund --loglevel=error) && touch $(WEB_STAMP) \
	    || echo "setup-browser: npm ci failed in web/: the browser tests will be SKIPPED"; \
	else echo "setup-browser: npm is missing: the browser tests will be SKIPPED"; fi

test-blender: setup  ## run the Blender tests inside a real Blender binary: make test-blender BLENDER=/path/to/blender
	@test -n "$(BLENDER)" || (echo "usage: make test-blender BLENDER=/path/to/blender (needs pytest in that Blender's Python)"; exit 2)
	$(BLENDER) -b --python-expr "import sys, pytest; sys.exit(pytest.main(['-q', 'tests']))"

# The real Blender window: Debian's blender (5.2.x in sid) in a chroot cached at GUI_ROOT, on Xvfb
# with Mesa software GL; the zip installed as a user does; tests/gui/drive.py presses the buttons.
# Needs root (debootstrap, chroot). Screenshots and logs: $(OUT)/gui/<scenario>/.
GUI_ROOT ?= /var/cache/drla-gui/sid
test-gui: build  ## drive the real Blender GUI (Train, Esc, Resume, Play, Export/Import, Bake, menus) and check it
	DRLA_GUI_ROOT=$(GUI_ROOT) bash tests/gui/run.sh $(ZIP) $(OUT)/gui

# The Blender suite on every Blender the manifest admits: the bpy 4.5 wheel (.venv-bpy45, set up here),
# the bpy 5.0 wheel (.venv) and Debian's Blender 5.2 in the test-gui chroot (needs root; where it cannot
# be built it prints "MATRIX 5.2 NOT RUN:" and why). A table of counts and times; fails if a version does.
VENV45 := .venv-bpy45
STAMP45 := $(VENV45)/.installed
setup-bpy45: $(STAMP45)  ## the bpy 4.5 wheel in .venv-bpy45: what scenes/*/build_*.py save the example .blend files with

$(STAMP45): tests/matrix/requirements-bpy45.txt pyproject.toml setup.py
	@$(PYTHON_311) -c 'import sys; assert sys.version_info[:2] == (3, 11), "the bpy 4.5 wheel is cp311 only; set PYTHON_311=/path/to/python3.11"'
	$(PYTHON_311) -m venv $(VENV45)
	$(VENV45)/bin/python -m pip install --quiet --upgrade pip
	$(VENV45)/bin/python -m pip install --quiet -r tests/matrix/requirements-bpy45.txt
	PYTHONWARNINGS="ignore:Editable installation" $(VENV45)/bin/python -m pip install --quiet --no-deps -e .  # the `drla` command the CLI tests run
	@rm -rf drla.egg-info build
	@touch $(STAMP45)

test-matrix: setup $(STAMP45)  ## the Blender suite on Blender 4.5 (bpy), 5.0 (bpy) and 5.2 (Debian, chroot); a table
	DRLA_GUI_ROOT=$(GUI_ROOT) $(PY) tests/matrix/matrix.py $(MATRIX)

demo: setup-demo  ## train the tank agent headless, write the model JSON and a report picture to out/ (STEPS=N: shorter)
	$(PY) -m drla demo --out $(OUT)$(if $(STEPS), --steps $(STEPS))

bench: setup setup-browser  ## run the benchmarks; each prints one JSON line of figures
	$(PY) bench/portable.py
	$(PY) bench/dqn_cartpole.py
	$(PY) bench/scene_env.py
	$(PY) bench/ik.py
	$(PY) bench/tank_training.py

bench-evolution: setup  ## neuroevolution figures beside neat-python's (installed into .venv for this benchmark only)
	$(PY) -m pip install --quiet -r bench/requirements-bench.txt
	$(PY) bench/evolution.py $(BENCH_ARGS)

bench-evolution-workers: setup  ## the walker's Evolution tree in one process, on 1 and on 2 worker processes (about a minute idle)
	$(PY) bench/evolution_workers.py $(BENCH_ARGS)

bench-gym-vector: setup  ## the vector CartPole beside Gymnasium's CartPoleVectorEnv, SyncVectorEnv, a Python loop and EnvPool
	$(PY) -m pip install --quiet -r bench/requirements-bench.txt || echo "bench-gym-vector: bench/requirements-bench.txt" \
	  "did not install (EnvPool has Linux wheels only): a column that cannot run is skipped, with its reason"
	$(PY) bench/gym_vector.py $(BENCH_ARGS)

bench-walker-ppo: setup  ## the walker by PPO against the walker by evolution at equal wall time (BENCH_ARGS="--seconds 60")
	$(PY) bench/walker_ppo_vs_evolution.py $(BENCH_ARGS)

lint: setup  ## ruff
	$(PY) -m ruff check .

format: setup  ## ruff format
	$(PY) -m ruff format .

type: setup  ## mypy on drla_core
	$(PY) -m mypy

check: lint type test  ## lint, type, test

# build/validate need only Python 3.11 and the blender_ext.py CLI inside the bpy wheel (no blender
# binary); they run `setup` only when .venv lacks that wheel.
FIND_BLENDER_EXT = ls $(VENV)/lib/python3.11/site-packages/bpy/*/scripts/addons_core/bl_pkg/cli/blender_ext.py 2>/dev/null | head -n1

build:  ## build the installable extension zip into dist/
	@test -n "$$($(FIND_BLENDER_EXT))" || $(MAKE) setup-demo
	@mkdir -p dist
	@rm -f $(ZIP)
	$(PY) "$$($(FIND_BLENDER_EXT))" build --source-dir . --output-dir dist

validate: build  ## validate the manifest and the built zip
	$(PY) "$$($(FIND_BLENDER_EXT))" validate .
	$(PY) "$$($(FIND_BLENDER_EXT))" validate $(ZIP)

clean:  ## remove build outputs (keeps .venv)
	rm -rf dist $(OUT) .pytest_cache .mypy_cache .ruff_cache
