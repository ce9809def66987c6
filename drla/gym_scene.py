"""A Blender scene's DRLA node tree as a Gymnasium environment, a Gymnasium vector environment of scene copies, or a
PettingZoo ``ParallelEnv`` (issue 25); outside Blender, with ``bpy`` from PyPI in this process.

    import gymnasium, drla.gym
    env = gymnasium.make("drla/Scene-v0", blend="scenes/tank/tank.blend", tree="Tank", render_mode="rgb_array")
    envs = gymnasium.make_vec("drla/Scene-v0", num_envs=16, vectorization_mode="vector_entry_point",
                              blend="scenes/tank/tank.blend", tree="Tank")
    duel = drla.gym.parallel_env(blend="scenes/tank_duel/tank_duel.blend", tree="Duel")

The tree is compiled as ``drla train`` compiles it (``drla.scene``), and its environment is the add-on's own
(``SceneEnv``, ``SceneVectorEnv``, ``SceneTeamEnv``): the same observations, actions, rewards and endings as a
run in Blender's sidebar. Spaces are Gymnasium's, with the bounds each sensor knows (a camera's pixels 0..1, a
distance from 0; a location or a velocity has none, and its entries stay infinite). ``render_mode="rgb_array"``
gives the scene camera's picture, flat-shaded as DRLA's camera sensor draws it (HxWx3 uint8; the scene's output
size scaled down to at most 256 pixels a side, or ``render_size=(w, h)``).

One .blend per process: bpy holds one open file, so every scene environment of a process is on the same file.
Environments on that file share its scene: each one's objects, properties and frame are swapped in before it
acts, so several environments (``gymnasium.make_vec(..., vectorization_mode="sync")``, PettingZoo's seed test)
each play their own episodes exactly as if alone. A rigid-body simulation cannot be saved: on a physics scene an
environment whose episode another one interrupted must be reset before it steps again (it says so). A vector
environment takes the file alone (its copies fill the scene). An environment on another file while one is open
is refused with the open file's name: close the open ones first (``env.close()``), or make it in another process:
``gymnasium.make_vec(..., vectorization_mode="async", vector_kwargs={"context": "spawn"})`` gives each environment
its own (spawn: a process forked after Blender made its GPU context, as a camera does, dies). ``close()`` puts the scene
back as the file opened it (``snapshot.restored_scene``, as a run in Blender does) once the last environment on
it is closed (or freed by Python without ``close()``); the file on disk is never written.
"""

from __future__ import annotations

import contextlib
import re
import sys
import weakref
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces as gym_spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .gym_convert import DrlaParallelEnv, _to_drla_action, to_gym_space

__all__ = ["BlendEnv", "BlendVectorEnv", "BlendParallelEnv", "parallel_env", "open_blend"]

#: The longest side of ``render()``'s picture when ``render_size`` is not given.
RENDER_SIDE = 256


class SceneFileError(ValueError):
    """The .blend, its tree or this process's open file does not allow the environment asked for."""


# --------------------------------------------------------------------------- the one open file

class _OpenFile:
    """The .blend this process has open for scene environments, the snapshot that restores it, and its users
    (the environments over it): the one whose state is in the scene (``owner``) and each other one's state."""

    def __init__(self, path: Path) -> None:
        from . import extension
        from . import scene as cli_scene

        self.path = path
        extension.triton_first()
        _without_bpy_scripts_on_path()
        try:
            self.bpy = cli_scene._import_bpy()
        except cli_scene.CLIError as exc:
            raise ImportError(str(exc)) from None
        extension.register_extension()
        # a .blend can carry Python scripts that run on load when auto-run is on: never here (as drla train)
        self.bpy.context.preferences.filepaths.use_scripts_auto_execute = False
        try:
            self.bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
        except RuntimeError as exc:
            reason = str(exc).strip().splitlines()[-1].removeprefix("Error: ") if str(exc).strip() else "unknown"
            raise SceneFileError(f"Blender could not open {path}: {reason}") from None
        self.scene = self.bpy.context.scene
        self.snapshot_module = cli_scene.addon_module("scene.snapshot")
        self._restoring = contextlib.ExitStack()
        self.snapshot = self._restoring.enter_context(self.snapshot_module.restored_scene(self.scene))
        self.users: list[_Lease] = []
        self.owner: _Lease | None = None

    def tree(self, name: str | None) -> Any:
        trees = [t for t in self.bpy.data.node_groups if t.bl_idname == "DRLA_NodeTree"]
        names = ", ".join(t.name for t in trees)
        if not trees:
            raise SceneFileError(f"{self.path} has no DRLA node tree: add one in Blender (Add > DRLA Examples in "
                                 "the 3D viewport, or a new tree in the DRLA node editor)")
        if name is None:
            from . import scene as cli_scene

            picked = cli_scene.panel_tree(trees, self.scene)
            if picked is None:
                raise SceneFileError(f"{self.path} has several DRLA trees; pick one with tree=NAME: {names}")
            return picked
        found = [t for t in trees if t.name == name]
        if not found:
            raise SceneFileError(f"no DRLA tree named {name!r} in {self.path}; it has: {names}")
        return found[0]

    def has_physics(self) -> bool:
        rbw = self.scene.rigidbody_world
        return rbw is not None and rbw.collection is not None and len(rbw.collection.objects) > 0

    def admit(self, user: _Lease) -> None:
        """Take ``user`` on: the scene as the file opened it for its environment to be built on (the state of the
        environment now in the scene saved), refused where the scene cannot be shared."""
        if self.users and (user.exclusive or any(u.exclusive for u in self.users)):
            raise SceneFileError(f"{self.path} is open for another environment ({self.users[0].what}) and a vector "
                                 "environment's copies fill the scene: close that one first (env.close()), or make "
                                 "this one in another process")
        self.switch_to(None)
        self.users.append(user)
        self.owner = user

    def switch_to(self, user: _Lease | None) -> None:
        """Make the scene ``user``'s (None: as the file opened it), saving the state of the environment in it."""
        if self.owner is user:
            return
        if self.owner is not None:
            self.owner.saved = self.owner.capture()
            self.owner.interrupted = self.has_physics()  # its simulation cannot be saved: its episode is over
            self._pristine(self.owner)
        self.owner = user
        if user is not None and user.saved is not None:
            user.restore(user.saved)
        elif user is None:
            self.scene.frame_set(self.snapshot.frame)

    def _pristine(self, user: _Lease) -> None:
        snap = self.snapshot
        for ob, _ in user.objects():
            state = snap.objects.get(ob.name)
            if state is not None:
                state.restore(ob)
        for ob, path, _ in user.paths():
            value = snap.paths.get((ob.name, path))
            if value is not None:
                self.snapshot_module.restore_path(ob, path, value)
        for key in user.scene_props():
            if key in snap.scene_props:
                self.scene[key] = snap.scene_props[key]

    def release(self, user: _Lease) -> None:
        global _OPEN
        if user not in self.users:
            return
        self.users.remove(user)
        if not self.users:  # the whole scene back as the file opened it
            self.owner = None
            _OPEN = None
            self._restoring.close()
        elif self.owner is user:  # its objects back as the file opened them, for the others
            self._pristine(user)
            self.owner = None
            self.scene.frame_set(self.snapshot.frame)


_OPEN: _OpenFile | None = None


def _without_bpy_scripts_on_path() -> None:
    """Before ``import bpy`` in a process that has not imported it: drop bpy's own script folders from
    ``sys.path``. A process started with multiprocessing's ``spawn`` (``gymnasium.make_vec(...,
    vectorization_mode="async", vector_kwargs={"context": "spawn"})``) inherits its parent's ``sys.path``, which
    importing bpy there put ``bpy/<version>/scripts/modules`` at the head of; ``import bpy`` would then find that
    folder's ``bpy`` package (no ``_bpy`` under it) instead of the module. bpy puts the folders back on import."""
    if "bpy" in sys.modules:
        return
    sys.path[:] = [p for p in sys.path if not re.search(r"[/\\]bpy[/\\][0-9.]+[/\\]scripts([/\\]|$)", p)]


def open_blend(blend: str | Path | None) -> _OpenFile:
    """This process's open .blend as ``blend`` (opened now if no environment holds another one)."""
    global _OPEN
    if blend is None:
        raise SceneFileError("drla/Scene-v0 needs blend=PATH, the .blend file to open (and tree=NAME, its DRLA tree)")
    path = Path(blend).expanduser().resolve()
    if _OPEN is not None and _OPEN.users:
        if _OPEN.path == path:
            return _OPEN
        raise SceneFileError(f"this process has {_OPEN.path} open for {len(_OPEN.users)} environment(s) and bpy "
                             f"holds one .blend per process: close them first (env.close()), or make the "
                             f"environment on {Path(blend).name} in another process")
    if path.is_dir():
        raise SceneFileError(f"{blend} is a folder, not a .blend file")
    if not path.is_file():
        raise FileNotFoundError(f"no such .blend file: {blend}")
    _OPEN = _OpenFile(path)
    return _OPEN


def _compiled(file: _OpenFile, tree: Any) -> Any:
    from . import scene as cli_scene

    compiler = cli_scene.addon_module("tree.compiler")
    try:
        return compiler.compile_tree(tree, file.scene)
    except cli_scene.addon_module("specs").CompileError as exc:
        problems = "; ".join(f"node {node!r}: {message}" if node else message for node, message in exc.errors)
        raise SceneFileError(f"tree {tree.name!r} in {file.path.name} does not compile: {problems}") from None


def _release_if_alone(file: _OpenFile) -> None:
    """After a refused environment: the file is closed again when nothing else holds it."""
    global _OPEN
    if not file.users and _OPEN is file:
        _OPEN = None
        file._restoring.close()


class _Lease:
    """One environment's hold on the open file: its add-on environment (``inner``: a ``SceneEnv``, a
    ``SceneVectorEnv`` or a ``SceneTeamEnv``), whose objects, RNA paths, scene properties and frame are its state
    (saved while another environment uses the scene), and its camera for ``render()``. The environment holds the
    lease, never the other way round: an environment dropped without ``close()`` is closed when Python frees it
    (``weakref.finalize``), so a forgotten one does not keep the file."""

    def __init__(self, file: _OpenFile, what: str, exclusive: bool) -> None:
        self.file, self.what, self.exclusive = file, what, exclusive
        self.inner: Any = None
        self.renderer: Any = None
        self.saved: Any = None
        self.interrupted = False
        self.closed = False

    def scene_envs(self) -> list[Any]:
        envs = getattr(self.inner, "envs", None)
        if envs is None:
            return [] if self.inner is None else [self.inner]
        return list(envs.values()) if isinstance(envs, dict) else list(envs)

    def frame(self) -> int:
        return int(self.inner._frame) if self.inner is not None else int(self.file.snapshot.frame)

    def objects(self) -> list[tuple[Any, Any]]:
        return [pair for env in self.scene_envs() for pair in env.initial]

    def paths(self) -> list[tuple[Any, str, Any]]:
        return [item for env in self.scene_envs() for item in env.initial_paths]

    def scene_props(self) -> list[str]:
        return list(dict.fromkeys(k for env in self.scene_envs() for k in env.initial_scene_props))

    def capture(self) -> tuple:
        snapshot = self.file.snapshot_module
        scene = self.file.scene
        return ([(ob, snapshot.ObjectState(ob)) for ob, _ in self.objects()],
                [(ob, path, snapshot.capture_path(ob, path)) for ob, path, _ in self.paths()],
                {k: scene[k] for k in self.scene_props() if k in scene}, self.frame())

    def restore(self, saved: tuple) -> None:
        objects, paths, props, frame = saved
        for ob, state in objects:
            state.restore(ob)
        for ob, path, value in paths:
            self.file.snapshot_module.restore_path(ob, path, value)
        for k, v in props.items():
            self.file.scene[k] = v
        self.file.scene.frame_set(frame)

    def use(self, resetting: bool = False) -> None:
        """The scene made this environment's before it acts (see ``_OpenFile.switch_to``)."""
        if self.closed:
            raise RuntimeError(f"this DRLA scene environment ({self.what} of {self.file.path.name}) is closed")
        self.file.switch_to(self)
        if resetting:
            self.interrupted = False
        elif self.interrupted:
            raise RuntimeError(f"another environment used {self.file.path.name} since this one's reset, and a "
                               "rigid-body simulation cannot be saved for it: reset() this one again (or give "
                               "each environment its own process)")

    def end(self) -> None:
        """Close the camera and the add-on environment, and let go of the file (``close()``, or Python freed the
        environment)."""
        if self.closed:
            return
        self.closed = True
        try:
            if self.renderer is not None:
                self.renderer.close()
            if self.inner is not None:
                self.inner.close()
        finally:
            self.file.release(self)


def _hold(env: Any, file: _OpenFile, what: str, exclusive: bool) -> _Lease:
    """``env``'s lease on ``file``, admitted (or refused), ended by ``env.close()`` or when ``env`` is freed."""
    lease = _Lease(file, what, exclusive)
    try:
        file.admit(lease)
    except BaseException:
        _release_if_alone(file)
        raise
    env._finalizer = weakref.finalize(env, lease.end)
    env._finalizer.atexit = False  # (at exit Blender goes too: nothing to give back)
    return lease


def _prepare(blend: str | Path | None, tree: str | None) -> tuple[_OpenFile, Any, Any]:
    file = open_blend(blend)
    try:
        node_tree = file.tree(tree)
        compiled = _compiled(file, node_tree)
    except BaseException:
        _release_if_alone(file)
        raise
    return file, node_tree, compiled


def _single_agent_check(file: _OpenFile, node_tree: Any, compiled: Any) -> None:
    if compiled.team:
        names = ", ".join(m.name for m in compiled.team)
        raise SceneFileError(f"tree {node_tree.name!r} in {file.path.name} has several agents ({names}): use "
                             f"drla.gym.parallel_env(blend=..., tree={node_tree.name!r}), a PettingZoo ParallelEnv")
    if compiled.env is None:
        from . import scene as cli_scene

        label = cli_scene.addon_module("runs.kinds").of(compiled).label
        raise SceneFileError(f"tree {node_tree.name!r} in {file.path.name} trains {label}, which has no "
                             "environment to step: give a tree with an Environment node")


def _quiet() -> Any:
    from .scene import quiet_egl

    return quiet_egl()


def _box_obs(space: gym_spaces.Space, obs: Any) -> Any:
    return np.array(obs, dtype=space.dtype) if isinstance(space, gym_spaces.Box) else obs


# --------------------------------------------------------------------------- one environment

class BlendEnv(gymnasium.Env):
    """A single-agent tree's environment as a ``gymnasium.Env`` (``gymnasium.make("drla/Scene-v0", blend=...,
    tree=...)``; see the module docstring)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 24}

    def __init__(self, blend: str | Path | None = None, tree: str | None = None, render_mode: str | None = None,
                 render_size: tuple[int, int] | None = None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: a scene renders {self.metadata['render_modes']}")
        render_size = _checked_size(render_size)
        self.file, self.node_tree, compiled = _prepare(blend, tree)
        try:
            _single_agent_check(self.file, self.node_tree, compiled)
        except BaseException:
            _release_if_alone(self.file)
            raise
        self._lease = _hold(self, self.file, f"tree {self.node_tree.name!r}", exclusive=False)
        from . import scene as cli_scene

        compiled.env.copies = 1
        try:
            with _quiet():
                self.inner = self._lease.inner = cli_scene.addon_module("scene.scene_env").SceneEnv(
                    compiled.env, self.file.scene)
        except BaseException:
            self.close()
            raise
        scene = self.file.scene
        self.metadata = {**self.metadata, "render_fps": scene.render.fps / scene.render.fps_base
                         / self.inner.frames_per_step}
        self.render_mode = render_mode
        self.render_size = _render_size(scene, render_size)
        self.observation_space = to_gym_space(self.inner.observation_space)
        self.action_space = to_gym_space(self.inner.action_space)
        self.task_metric = self.inner.task_metric

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self._lease.use(resetting=True)
        if seed is None and self.inner._np_random is None:  # the scene draws from Gymnasium's generator
            seed = int(self.np_random.integers(2**31 - 1))
        obs, info = self.inner.reset(seed=seed, options=options)
        return _box_obs(self.observation_space, obs), dict(info)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self._lease.use()
        obs, reward, terminated, truncated, info = self.inner.step(_to_drla_action(self.inner.action_space, action))
        return _box_obs(self.observation_space, obs), float(reward), bool(terminated), bool(truncated), dict(info)

    def render(self) -> Any:
        if self.render_mode is None:
            return None
        self._lease.use()
        return _camera_picture(self._lease, self.render_size)

    def close(self) -> None:
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()  # the lease's end, once


def _checked_size(size: tuple[int, int] | None) -> tuple[int, int] | None:
    """``render_size`` as two ints, checked before anything is opened."""
    if size is None:
        return None
    try:
        w, h = (int(v) for v in size)
    except (TypeError, ValueError):
        w = h = 0
    if w < 1 or h < 1:
        raise ValueError(f"render_size must be two positive numbers of pixels, got {size!r}")
    return w, h


def _render_size(scene: Any, size: tuple[int, int] | None) -> tuple[int, int]:
    if size is not None:
        return size
    percent = scene.render.resolution_percentage / 100.0
    w, h = scene.render.resolution_x * percent, scene.render.resolution_y * percent
    shrink = min(1.0, RENDER_SIDE / max(w, h))
    return max(1, round(w * shrink)), max(1, round(h * shrink))


def _camera_picture(lease: _Lease, size: tuple[int, int]) -> np.ndarray:
    """The scene camera's picture, (h, w, 3) uint8, drawn by DRLA's gpu camera (flat colours, no lighting)."""
    scene = lease.file.scene
    if lease.renderer is None:
        camera = scene.camera
        if camera is None or camera.type != 'CAMERA':
            raise RuntimeError(f"{lease.file.path.name}: the scene has no camera to render (set Scene > Camera)")
        from . import scene as cli_scene

        w, h = size
        with _quiet():  # (the GPU context, made on the first picture, says harmless things on stderr)
            lease.renderer = cli_scene.addon_module("scene.camera").CameraRenderer(scene, camera, w, h, 'RGB')
            rgb = lease.renderer.read()
    else:
        rgb = lease.renderer.read()  # k / 255 in float32, for the 8-bit value k the gpu drew: exactly back to k
    return np.rint(rgb * np.float32(255.0)).astype(np.uint8)


# --------------------------------------------------------------------------- scene copies

class BlendVectorEnv(VectorEnv):
    """``num_envs`` copies of a single-agent tree's environment in one scene (``SceneVectorEnv``) as a
    ``gymnasium.vector.VectorEnv``: ``gymnasium.make_vec("drla/Scene-v0", num_envs=N,
    vectorization_mode="vector_entry_point", blend=..., tree=...)``.

    Autoreset ``AutoresetMode.SAME_STEP``, as Gymnasium documents it: a copy whose episode ends in a step is
    reset in that step; the observation returned is its next episode's first, the last one of the ended episode
    is ``infos["final_obs"][i]`` (an object array, None for the copies that go on, as Gymnasium's own
    ``SyncVectorEnv`` gives it) and its info ``infos["final_info"]`` (``infos["_final_obs"][i]`` and
    ``infos["_final_info"][i]`` True). ``reset(seed=s)`` seeds copy ``i`` with ``s + i``. The scene's frame runs
    on across the copies' episodes (one frame for all copies): frame-driven animation is not restarted per
    copy. A rigid-body scene cannot be copied this way (its copies restart only together): use one environment.

    ``autoreset_mode=AutoresetMode.NEXT_STEP`` (or ``"NextStep"``) gives Gymnasium's other mode, the one its vector
    observation wrappers (``NormalizeObservation``, ``FrameStackObservation``) take: the step that ends a copy's
    episode returns its last observation, and the next step returns its next episode's first (reward 0, not
    ended, its action ignored: the copy acts with the others and is restarted again exactly as it was, its random
    generator put back), as Gymnasium's ``SyncVectorEnv`` in that mode does.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}
    what = "a vector environment"

    def __init__(self, num_envs: int = 1, blend: str | Path | None = None, tree: str | None = None,
                 render_mode: str | None = None, autoreset_mode: str | AutoresetMode = AutoresetMode.SAME_STEP
                 ) -> None:
        mode = AutoresetMode(autoreset_mode)
        if mode not in (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP):
            raise ValueError(f"autoreset_mode {mode}: the scene copies autoreset in the same step or the next")
        if render_mode is not None:
            raise ValueError(f"render_mode {render_mode!r}: the scene copies' vector environment does not render "
                             "(gymnasium.make gives one environment that does)")
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        self._next_step = mode == AutoresetMode.NEXT_STEP
        self.num_envs = int(num_envs)
        self._pending = np.zeros(self.num_envs, bool)  # NEXT_STEP: the copies whose episode ended last step
        self.file, self.node_tree, compiled = _prepare(blend, tree)
        try:
            _single_agent_check(self.file, self.node_tree, compiled)
        except BaseException:
            _release_if_alone(self.file)
            raise
        self._lease = _hold(self, self.file, "a vector environment", exclusive=True)
        from . import scene as cli_scene

        try:
            with _quiet():
                self.inner = self._lease.inner = cli_scene.addon_module("scene.scene_vector_env").SceneVectorEnv(
                    compiled.env, self.file.scene, self.num_envs)
        except cli_scene.addon_module("scene.copies").CopyError as exc:
            self.close()
            raise SceneFileError(f"num_envs={self.num_envs}: {exc}") from None
        except BaseException:
            self.close()
            raise
        self.render_mode = None
        self.single_observation_space = to_gym_space(self.inner.single_observation_space)
        self.single_action_space = to_gym_space(self.inner.single_action_space)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.task_metric = self.inner.task_metric
        self._discrete = isinstance(self.single_action_space, gym_spaces.Discrete)
        if self._next_step:
            for env in self.inner.envs:
                _record_restarts(env)

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict]:
        self._lease.use(resetting=True)
        if seed is not None:
            self._np_random, self._np_random_seed = gymnasium.utils.seeding.np_random(
                seed if isinstance(seed, int) else None)
        obs, infos = self.inner.reset(seed=seed, options=options)
        self._pending[:] = False
        return np.array(obs, dtype=self.single_observation_space.dtype), dict(infos)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        self._lease.use()
        actions = np.asarray(actions)
        if actions.shape != self.action_space.shape:
            raise ValueError(f"step: actions of shape {self.action_space.shape} expected, got {actions.shape}")
        if self._discrete:
            actions = actions.astype(np.int64)
            space = self.single_action_space
            assert isinstance(space, gym_spaces.Discrete)
            n = int(space.n)
            if ((actions < 0) | (actions >= n)).any():
                raise ValueError(f"step: each copy's action is 0..{n - 1}, got {actions!r}")
        else:
            actions = actions.astype(self.single_action_space.dtype)
        # NEXT_STEP: the generators of the copies restarted last step, as they were before that restart (a copy
        # whose episode ends again in this step is restarted by it, which records its generator anew)
        again = {int(i): self.inner.envs[i].drla_rng_before_restart for i in np.flatnonzero(self._pending)}
        obs, rewards, terminated, truncated, infos = self.inner.step(actions)
        infos = dict(infos)
        if self._next_step:
            return self._as_next_step(obs, rewards, terminated, truncated, infos, again)
        if "final_obs" in infos:  # Gymnasium's layout: an object array, each ended copy's last observation or None
            final = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(infos["_final_obs"]):
                final[i] = np.array(infos["final_obs"][i])
            infos["final_obs"] = final
        return (np.array(obs, dtype=self.single_observation_space.dtype), np.asarray(rewards, np.float64),
                np.asarray(terminated, bool), np.asarray(truncated, bool), infos)

    def _as_next_step(self, obs: np.ndarray, rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray,
                      infos: dict, again: dict[int, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                                   dict]:
        """A same-step result as Gymnasium's next-step autoreset gives it (see the class docstring)."""
        from drla_core.base.vector_env import add_info

        obs = np.array(obs, dtype=self.single_observation_space.dtype)
        rewards, terminated, truncated = (np.array(rewards, np.float64), np.array(terminated, bool),
                                          np.array(truncated, bool))
        ended = (terminated | truncated) & ~self._pending
        out: dict[str, Any] = {}
        final = infos.get("final_info", {})
        for i in range(self.num_envs):  # each copy's step info, as its own env gave it (none for a restart)
            if self._pending[i]:
                continue
            source = final if ended[i] else infos
            info = {k: v[i] for k, v in source.items() if not k.startswith("_") and k not in (
                "final_obs", "final_info") and source.get(f"_{k}", np.zeros(self.num_envs, bool))[i]}
            add_info(out, info, i, self.num_envs)
        pending = np.flatnonzero(self._pending)
        if pending.size:  # restarted last step and stepped with the others now: restart them again, as they were
            inner = self.inner
            for i in pending:
                env = inner.envs[i]
                env.np_random.bit_generator.state = again[int(i)]
                env.restart_objects()
            inner._view_layer.update()
            for i in pending:
                obs[i] = inner.envs[i].begin_episode()
            if inner._batched is not None:
                inner._batched.begin(pending.tolist())
            rewards[pending], terminated[pending], truncated[pending] = 0.0, False, False
        for i in np.flatnonzero(ended):
            obs[i] = infos["final_obs"][i]
        self._pending = ended
        return obs, rewards, terminated, truncated, out

    def close_extras(self, **kwargs: Any) -> None:
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()  # the lease's end, once: the copies removed, the scene back as the file opened it


def _record_restarts(env: Any) -> None:
    """Keep the state of ``env``'s random generator before each ``restart_objects`` (``drla_rng_before_restart``),
    so the copy can be restarted again exactly as it was (next-step autoreset)."""
    import copy

    restart = env.restart_objects

    def restart_objects() -> None:
        env.drla_rng_before_restart = copy.deepcopy(env.np_random.bit_generator.state)
        restart()

    env.restart_objects = restart_objects


# --------------------------------------------------------------------------- several agents

class BlendParallelEnv(DrlaParallelEnv):
    """A multi-agent tree's agents (``SceneTeamEnv``) as a ``pettingzoo.ParallelEnv``:
    ``drla.gym.parallel_env(blend=..., tree=...)``. The scene is one world: when one agent's episode ends, it is
    terminated and the others truncated; agent ``i`` of ``reset(seed=s)`` draws its placements from ``s + i``."""

    def __init__(self, blend: str | Path | None = None, tree: str | None = None, render_mode: str | None = None,
                 render_size: tuple[int, int] | None = None) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode {render_mode!r}: a scene renders ['rgb_array']")
        render_size = _checked_size(render_size)
        self.file, self.node_tree, compiled = _prepare(blend, tree)
        try:
            if not compiled.team:
                raise SceneFileError(f"tree {self.node_tree.name!r} in {self.file.path.name} has one agent: use "
                                     f"gymnasium.make(\"drla/Scene-v0\", blend=..., tree={self.node_tree.name!r})")
        except BaseException:
            _release_if_alone(self.file)
            raise
        self._lease = _hold(self, self.file, f"multi-agent tree {self.node_tree.name!r}", exclusive=False)
        from . import scene as cli_scene

        try:
            with _quiet():
                inner = self._lease.inner = cli_scene.addon_module("scene.scene_team_env").SceneTeamEnv(
                    [(m.name, m.env) for m in compiled.team], self.file.scene)
        except BaseException:
            self.close()
            raise
        super().__init__(inner, render_mode=render_mode)
        self.metadata = {**self.metadata, "render_modes": ["rgb_array"], "name": f"drla_scene_{self.node_tree.name}",
                         "render_fps": self.file.scene.render.fps / inner.frames_per_step}
        self.render_size = _render_size(self.file.scene, render_size)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        self._lease.use(resetting=True)
        return super().reset(seed=seed, options=options)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        self._lease.use()
        return super().step(actions)

    def render(self) -> Any:
        if self.render_mode is None:
            return None
        self._lease.use()
        return _camera_picture(self._lease, self.render_size)

    def close(self) -> None:
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()  # the lease's end, once


def parallel_env(blend: str | Path, tree: str | None = None, render_mode: str | None = None,
                 render_size: tuple[int, int] | None = None) -> BlendParallelEnv:
    """A multi-agent tree of ``blend`` as a ``pettingzoo.ParallelEnv`` (what ``drla.gym.parallel_env(blend=...)``
    returns)."""
    return BlendParallelEnv(blend, tree, render_mode=render_mode, render_size=render_size)


def scene_trees(blend: str | Path) -> list[tuple[str, str]]:
    """``(tree name, "single" | "multi" | "none")`` for each DRLA tree of ``blend`` (the file is opened, so no
    environment may hold another one): which of ``gymnasium.make`` and ``parallel_env`` takes it."""
    file = open_blend(blend)
    try:
        out = []
        for node_tree in [t for t in file.bpy.data.node_groups if t.bl_idname == "DRLA_NodeTree"]:
            compiled = _compiled(file, node_tree)
            out.append((node_tree.name, "multi" if compiled.team else "single" if compiled.env is not None
                        else "none"))
        return out
    finally:
        _release_if_alone(file)

