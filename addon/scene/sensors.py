"""Everything that reads the live scene into numbers (the ONLY bpy -> numpy code).

``StateReader(state_spec, scene)`` resolves every object, bone and property once and then
``read()`` fills one float32 observation vector. The scalar reads it shares with rewards, endings
and actions are ``scene.probes``.
"""

from __future__ import annotations

import math

import numpy as np
from mathutils import Quaternion, Vector

from .batch import distance, distances, relative_location, relative_locations
from .camera import CameraAtlas, CameraRenderer
from .probes import AXIS_VECTORS, top_parent, cast_ray, property_probe

# --------------------------------------------------------------------------- sensor readers
# Each reader: ``size`` and ``read(out)`` writing ``size`` float32 values into ``out``, and ``bounds``,
# the range every value lies in before the node's Scale (what the observation space declares).
# A reader whose ``batch`` is set reads many scene copies at once (``SceneVectorEnv``): ``objects()`` are
# the objects whose world matrices it needs; ``batch(readers)`` (the copies' readers) is called with those
# matrices, one (N, 4, 4) float64 array per object, and fills an (N, size) array; its own ``read`` runs the
# same arithmetic on arrays of one, so a copy reads bit-identical values either way.

UNBOUNDED = (-math.inf, math.inf)


class TransformReader:
    bounds = UNBOUNDED

    def __init__(self, spec, scene):
        self.ob = scene.objects[spec.obj]
        self.ref = scene.objects[spec.other] if spec.other else None
        self.loc = spec.options["location"]
        self.rot = spec.options["rotation"]
        self.quat = spec.options["rotation_format"] == 'QUATERNION'
        self.origin = tuple(float(v) for v in spec.options.get("origin", (0.0, 0.0, 0.0)))  # a scene copy's place
        self.size = spec.size
        self.batch = TransformBatch if self.loc and not self.rot else None

    def objects(self) -> list:
        return [self.ob] if self.ref is None else [self.ob, self.ref]

    def read(self, out):
        if self.batch is not None:  # the arithmetic of TransformBatch, in floats
            p = self.ob.matrix_world.translation
            if self.ref is None:
                o = self.origin
                out[0:3] = (p[0] - o[0], p[1] - o[1], p[2] - o[2])
            else:
                out[0:3] = relative_location(self.ref.matrix_world, p)
            return
        mw = self.ob.matrix_world
        if self.ref is not None:
            mw = self.ref.matrix_world.inverted_safe() @ mw
        i = 0
        if self.loc:
            out[0:3] = mw.translation - Vector(self.origin) if self.ref is None else mw.translation
            i = 3
        if self.rot:
            if self.quat:
                out[i:i + 4] = mw.to_quaternion()
            else:
                out[i:i + 3] = mw.to_euler()


class TransformBatch:
    """Transform sensors' locations (no rotation) of many copies: world minus the copy's origin, or in
    the frame of the Relative To object."""

    def __init__(self, readers) -> None:
        self.relative = readers[0].ref is not None
        self.origins = np.array([r.origin for r in readers], np.float64)

    def __call__(self, mats, out) -> None:
        point = mats[0][:, :3, 3]
        out[:, 0:3] = relative_locations(mats[1], point) if self.relative else point - self.origins


class VelocityReader:
    """Velocity by finite difference of the object's world transform between two reads, over the
    frames between them at the scene's frame rate. A read at an earlier frame than the last one is
    a new episode (the env reset the scene): it reads zero. A read at the same frame repeats."""
    bounds = UNBOUNDED


    def __init__(self, spec, scene):
        self.scene, self.ob = scene, scene.objects[spec.obj]
        self.linear, self.angular = spec.options["linear"], spec.options["angular"]
        self.local = spec.options["space"] == 'LOCAL'
        self.size = spec.size
        self.frame_seconds = scene.render.fps_base / scene.render.fps
        self._frame: int | None = None
        self._loc = self._rot = None
        self._last = np.zeros(self.size, np.float32)

    def read(self, out):
        frame = self.scene.frame_current
        mw = self.ob.matrix_world
        loc, rot = mw.translation.copy(), mw.to_quaternion()
        if self._frame is None or frame < self._frame:
            self._last[:] = 0.0
        elif frame > self._frame:
            dt = (frame - self._frame) * self.frame_seconds
            to_local = rot.to_matrix().transposed() if self.local else None
            i = 0
            if self.linear:
                v = (loc - self._loc) / dt
                self._last[0:3] = to_local @ v if to_local is not None else v
                i = 3
            if self.angular:
                axis, angle = (rot @ self._rot.conjugated()).to_axis_angle()
                angle = math.remainder(angle, math.tau)  # the short way round
                w = axis * (angle / dt)
                self._last[i:i + 3] = to_local @ w if to_local is not None else w
        self._frame, self._loc, self._rot = frame, loc, rot
        out[:] = self._last


class JointAngleReader:
    """The twist of body B's rotation relative to A (the world without A) about an axis in A's frame:
    ``2 atan2(q.xyz . axis, q.w)`` of ``q = qA^-1 qB`` (the swing-twist split). For a hinge, the axis is
    the constraint's local Z, expressed in A's frame when the env is built (a hinge keeps it there)."""
    bounds = (-math.pi, math.pi)

    def __init__(self, spec, scene):
        self.b = scene.objects[spec.obj]
        self.a = scene.objects[spec.other] if spec.other else None
        if "hinge" in spec.options:
            hinge_z = scene.objects[spec.options["hinge"]].matrix_world.to_quaternion() @ Vector((0.0, 0.0, 1.0))
            to_a = self.a.matrix_world.to_quaternion().conjugated() if self.a is not None else Quaternion()
            self.axis = (to_a @ hinge_z).normalized()
        else:
            self.axis = Vector(AXIS_VECTORS[spec.options["axis"]])
        self.size = 1

    def read(self, out):
        qb = self.b.matrix_world.to_quaternion()
        q = qb if self.a is None else self.a.matrix_world.to_quaternion().conjugated() @ qb
        out[0] = math.remainder(2.0 * math.atan2(q.x * self.axis.x + q.y * self.axis.y + q.z * self.axis.z, q.w),
                                math.tau)


class HeightTiltReader:
    """World Z of the origin and the angle between the local +Z axis and world up."""

    def __init__(self, spec, scene):
        self.ob = scene.objects[spec.obj]
        self.height, self.tilt = spec.options["height"], spec.options["tilt"]
        self.bounds = UNBOUNDED if self.height else (0.0, math.pi)
        self.size = spec.size

    def read(self, out):
        mw = self.ob.matrix_world
        i = 0
        if self.height:
            out[0] = mw.translation.z
            i = 1
        if self.tilt:
            up = mw.to_3x3() @ Vector((0.0, 0.0, 1.0))
            out[i] = math.acos(max(-1.0, min(1.0, up.z / up.length))) if up.length > 0 else 0.0


class ContactReader:
    """1 when a ray straight down from the origin meets the ground object within the distance, else 0."""
    bounds = (0.0, 1.0)

    def __init__(self, spec, scene):
        self.scene, self.ob, self.ground = scene, scene.objects[spec.obj], scene.objects[spec.other]
        self.distance = float(spec.options["distance"])
        self.root = top_parent(self.ob)
        self.size = 1

    def read(self, out):
        hit, _dist = cast_ray(self.scene, self.ob.matrix_world.translation, (0.0, 0.0, -1.0), self.distance,
                              self.root)
        out[0] = 1.0 if hit is not None and hit == self.ground else 0.0


class BonesReader:
    bounds = (-1.0, 1.0)  # quaternion components

    def __init__(self, spec, scene):
        arm = scene.objects[spec.obj]
        self.bones = [arm.pose.bones[name] for name in spec.bones]
        self.size = spec.size

    def read(self, out):
        for i, pb in enumerate(self.bones):
            out[4 * i:4 * i + 4] = (pb.rotation_quaternion if pb.rotation_mode == 'QUATERNION'
                                    else pb.matrix_basis.to_quaternion())


class PropertyReader:
    """The property's value, clipped to the node's Min and Max (its bounds; a spec without them: unbounded)."""

    def __init__(self, spec, scene):
        owner = scene if spec.options.get("source") == 'SCENE' else scene.objects[spec.obj]
        self.get = property_probe(owner, spec.path)
        self.size = spec.size
        self.bounds = (float(spec.options.get("min", -math.inf)), float(spec.options.get("max", math.inf)))

    def read(self, out):
        value = float(self.get())
        low, high = self.bounds
        out[0] = value if low <= value <= high or value != value else (low if value < low else high)  # NaN: kept


class DistanceReader:
    bounds = (0.0, math.inf)

    def __init__(self, spec, scene):
        self.a, self.b = scene.objects[spec.obj], scene.objects[spec.other]
        self.size = 1
        self.batch = DistanceBatch

    def objects(self) -> list:
        return [self.a, self.b]

    def read(self, out):
        out[0] = distance(self.a, self.b)


class DistanceBatch:
    def __init__(self, readers) -> None:
        pass

    def __call__(self, mats, out) -> None:
        out[:, 0] = distances(mats[0][:, :3, 3], mats[1][:, :3, 3])


class RayReader:
    bounds = (0.0, 1.0)  # hit distance over Max Distance, 1 for a miss

    def __init__(self, spec, scene):
        self.scene, self.ob = scene, scene.objects[spec.obj]
        o = spec.options
        self.max = float(o["max_distance"])
        axis = Vector(AXIS_VECTORS[o["axis"]])
        perp = Vector((0, 1, 0)) if abs(axis.x) > 0.5 else Vector((1, 0, 0))
        n = int(o["rays"])
        angles = [0.0] if n == 1 else np.linspace(-o["spread"] / 2, o["spread"] / 2, n)
        self.dirs = [axis * math.cos(a) + perp * math.sin(a) for a in angles]
        self.size = n
        self.root = top_parent(self.ob)

    def read(self, out):
        m3 = self.ob.matrix_world.to_3x3()
        origin = self.ob.matrix_world.translation
        for i, d in enumerate(self.dirs):
            _ob, dist = cast_ray(self.scene, origin, m3 @ d, self.max, self.root)
            out[i] = dist / self.max


class CameraReader:
    bounds = (0.0, 1.0)  # pixel brightness, or depth over Max Depth

    def __init__(self, spec, scene, shared: dict | None = None):
        o = spec.options
        self.depth = o["mode"] == 'DEPTH'
        self.max_depth = float(o["max_depth"])
        atlas = None
        if "tile" in o and o["method"] == 'gpu' and shared is not None:  # scene copies: one picture for all
            index, count = o["tile"]
            key = ("camera", spec.node, o["width"], o["height"])
            if key not in shared:
                shared[key] = CameraAtlas(o["width"], o["height"], count, depth=self.depth)
            atlas = (shared[key], index)
        self.renderer = CameraRenderer(scene, scene.objects[spec.obj], o["width"], o["height"], o["mode"],
                                       method=o["method"], threshold=o["threshold"], normalize_depth=False,
                                       objects=o.get("objects"), atlas=atlas)
        self.size = spec.size
        self.atlas = atlas if self.renderer.method == 'gpu' else None
        self.batch = CameraBatch if self.atlas is not None and not self.depth else None

    def objects(self) -> list:
        return []

    def read(self, out):
        img = self.renderer.read()
        if self.depth:
            img = np.minimum(img / self.max_depth, 1.0)
        out[:] = img.reshape(-1)

    def close(self):
        self.renderer.close()


class CameraBatch:
    """The copies' cameras (one shared ``CameraAtlas``): one draw, one readback and one conversion of all
    their tiles at once, the same per-pixel arithmetic as ``CameraRenderer.read``."""

    def __init__(self, readers) -> None:
        self.atlas = readers[0].atlas[0]
        self.same = all(r.atlas is not None and r.atlas[0] is self.atlas for r in readers)
        self.readers = readers
        self.indices = np.array([r.atlas[1] if r.atlas is not None else -1 for r in readers], np.intp)
        r = readers[0].renderer
        self.mode, self.threshold = r.mode, r.threshold

    def __call__(self, mats, out) -> None:
        if not self.same:
            for i, reader in enumerate(self.readers):
                reader.read(out[i])
            return
        self.atlas.pictures(self.indices, self.mode, self.threshold, out=out)


class ClockReader:
    """``sin, cos`` of ``2 pi f t``, ``t`` the scene time in seconds since the scene's start frame (where
    every episode begins)."""
    bounds = (-1.0, 1.0)

    def __init__(self, spec, scene):
        self.scene = scene
        self.omega = math.tau * spec.options["frequency"] * scene.render.fps_base / scene.render.fps
        self.size = 2

    def read(self, out):
        phase = self.omega * (self.scene.frame_current - self.scene.frame_start)
        out[0], out[1] = math.sin(phase), math.cos(phase)


READERS: dict[str, type] = {"transform": TransformReader, "velocity": VelocityReader, "bones": BonesReader,
                            "property": PropertyReader, "distance": DistanceReader, "ray": RayReader,
                            "camera": CameraReader, "joint_angle": JointAngleReader,
                            "height_tilt": HeightTiltReader, "contact": ContactReader,
                            "clock": ClockReader}


class NonFiniteError(ValueError):
    """A sensor or reward produced NaN or infinity; the message names the node."""


class StateReader:
    """Reads a compiled ``StateSpec`` into one float32 vector (object lookups cached here). With Frames K > 1
    the vector is the last K readings, oldest first: ``begin()`` at an episode's start makes the next reading
    fill every frame (as Gymnasium's frame stack pads with the first observation)."""

    def __init__(self, state_spec, scene, shared: dict | None = None):
        """``shared``: what the readers of several scene copies share (the cameras' one picture)."""
        self.readers, self.slices, self.scales = [], [], []
        offset = 0
        for spec in state_spec.sensors:
            reader = READERS[spec.kind]
            self.readers.append(reader(spec, scene, shared) if reader is CameraReader else reader(spec, scene))
            self.slices.append(slice(offset, offset + spec.size))
            self.scales.append(float(spec.scale))
            offset += spec.size
        self.frame_size = offset
        self.frames = max(1, int(getattr(state_spec, "frames", 1)))
        self.size = offset * self.frames
        self.clip = float(state_spec.clip)
        low, high = self._bounds()
        self.low, self.high = np.tile(low, self.frames), np.tile(high, self.frames)
        self._pairs = list(zip(self.readers, self.slices, self.scales))
        self._nodes = [spec.node for spec in state_spec.sensors]
        self._history = np.zeros((self.frames, offset), np.float32)
        self._fresh = True

    def begin(self) -> None:
        """A new episode: the next reading fills every stacked frame."""
        self._fresh = True

    def stacked(self, reading: np.ndarray) -> np.ndarray:
        """``reading`` pushed onto the frame stack; the observation (``reading`` itself when Frames is 1)."""
        if self.frames == 1:
            return reading
        if self._fresh:
            self._history[:] = reading
            self._fresh = False
        else:
            self._history[:-1] = self._history[1:]
            self._history[-1] = reading
        return self._history.reshape(-1).copy()

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Each value's range: the reader's ``bounds`` times the node's Scale, within the State's Clip."""
        low, high = np.full(self.frame_size, -np.inf), np.full(self.frame_size, np.inf)
        for reader, sl, scale in zip(self.readers, self.slices, self.scales):
            lo, hi = reader.bounds
            ends = sorted([lo * scale, hi * scale]) if scale else [0.0, 0.0]
            low[sl], high[sl] = ends
        if self.clip > 0:
            low, high = np.clip(low, -self.clip, self.clip), np.clip(high, -self.clip, self.clip)
        return low, high

    def read(self) -> np.ndarray:
        """The observation: this reading (and, with Frames > 1, the ones before it)."""
        return self.stacked(self.read_frame())

    def read_frame(self) -> np.ndarray:
        """The sensors' values now, one frame."""
        obs = np.empty(self.frame_size, np.float32)
        for reader, sl, scale in self._pairs:
            view = obs[sl]
            reader.read(view)
            if scale != 1.0:
                view *= scale
        if self.clip > 0:
            np.clip(obs, -self.clip, self.clip, out=obs)
        if not np.isfinite(obs).all():  # NaN from a property or a degenerate transform poisons training
            self._raise_non_finite(obs)
        return obs

    def _raise_non_finite(self, obs: np.ndarray) -> None:
        for node, sl in zip(self._nodes, self.slices):
            bad = obs[sl][~np.isfinite(obs[sl])]
            if bad.size:
                raise NonFiniteError(f"Sensor '{node}' read {bad[0]} (not a finite number): "
                                     "check the property or object it reads")

    def close(self):
        for reader in self.readers:
            if hasattr(reader, "close"):
                reader.close()


class StateBatch:
    """The copies' ``StateReader`` s read into one (N, size) array: every sensor whose reader has a
    ``batch`` for all copies at once (from the world matrices ``read`` is given), the others copy by copy.
    Row i holds exactly what ``states[i].read()`` returns (its frame stack included)."""

    def __init__(self, states: list[StateReader]) -> None:
        self.states = states
        self.n = len(states)
        first = states[0]
        self.size, self.clip, self.frames = first.frame_size, first.clip, first.frames
        self.objects: list = []  # the world matrices the batched sensors need, object slot after slot
        self.parts: list = []  # (slice, scale, batch or None, first matrix row, object slots, readers)
        for j, (reader, sl, scale) in enumerate(first._pairs):
            readers = [st.readers[j] for st in states]
            if getattr(reader, "batch", None) is None:
                self.parts.append((sl, scale, None, 0, 0, readers))
                continue
            start, slots = len(self.objects), len(reader.objects())
            for k in range(slots):
                self.objects += [r.objects()[k] for r in readers]
            self.parts.append((sl, scale, reader.batch(readers), start, slots, readers))

    def read(self, mats: np.ndarray | None) -> np.ndarray:
        """``mats``: (len(objects), 4, 4) float64 world matrices of ``objects`` (None when there are none)."""
        n = self.n
        obs = np.empty((n, self.size), np.float32)
        for sl, scale, batch, start, slots, readers in self.parts:
            view = obs[:, sl]
            if batch is not None:
                batch([mats[start + k * n:start + (k + 1) * n] for k in range(slots)], view)
            else:
                for i, reader in enumerate(readers):
                    reader.read(obs[i, sl])
            if scale != 1.0:
                view *= scale
        if self.clip > 0:
            np.clip(obs, -self.clip, self.clip, out=obs)
        finite = np.isfinite(obs).all(axis=1)
        if not finite.all():
            i = int(np.flatnonzero(~finite)[0])
            self.states[i]._raise_non_finite(obs[i])
        if self.frames > 1:
            return np.stack([state.stacked(row) for state, row in zip(self.states, obs)])
        return obs
