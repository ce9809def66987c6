"""Build the rigid-body walker example scene, ``scenes/walker/walker.blend``, reproducibly.

Run from the repository root::

    make setup-bpy45 && .venv-bpy45/bin/python scenes/walker/build_walker.py

A four-legged walker on Blender's rigid-body physics, Z up, walking along +X:

- ``Ground``: a passive 60 x 8 x 1 box, its top at z = 0 (friction 1).
- ``Torso``: an active 0.8 x 0.4 x 0.15 box (2 kg) at z = ``TORSO_Z``: the body, ``BODY_LENGTH`` long.
- ``Leg.FL`` / ``Leg.FR`` / ``Leg.BL`` / ``Leg.BR``: 0.08 x 0.08 x 0.45 boxes (0.3 kg) hanging from the
  torso's corners, each on a hip ``Hip.<leg>`` (a Hinge constraint about Y, +-60 degrees) driven by
  ``Motor.<leg>`` (a Motor constraint beside it, angular motor about the same axis: Blender's motors drive
  about their empty's local X, hinges turn about their local Z).
- ``Goal``: an empty 100 m ahead; the reward is the torso's progress towards it (metres walked along X).
- ``Camera`` (side view, for people) and ``Sun``.

The RL node tree "Walker": State = torso position (first: the behaviour for novelty), height and tilt,
velocity, the four hip angles, a clock (Clock Sensor: sin and cos of the time at 2 Hz, the gait's
rhythm: a purely reactive network plateaued near 2 body lengths); Action Set = four Motor Actions
(+-4 rad/s); reward = progress in metres; the episode lasts ``EPISODE_STEPS`` steps (10 s at 24 fps) and
ends early if the torso falls below z = 0.15; an Evolution Agent (GA, mutation sigma 0.5) evolves it. The file
opens with it chosen in the DRLA sidebar.

The second tree, "Walker PPO", is the same with a PPO Agent in place of the Evolution Agent: each Motor action
is a continuous action, a Gaussian policy's value in [-1, 1] times its 4 rad/s; a hidden layer of 64, rollouts
of one episode (240 steps), ``PPO_SETTINGS``; its Trainer runs ``PPO_STEPS`` steps and plays one greedy
episode every ``PPO_EVAL_INTERVAL``. ``drla train scenes/walker/walker.blend --tree "Walker PPO"`` trains it
(``--tree Walker``: the evolution tree; the file holds both, so the CLI asks for one).

``dump(scene)`` is ``scenes/cartpole_rb``'s (the tank's canonical dump plus rigid-body settings).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from pathlib import Path
from typing import Any

import bpy

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TREE_NAME = "Walker"
PPO_TREE_NAME = "Walker PPO"
#: The PPO Agent's settings (the node's other properties keep their defaults).
PPO_SETTINGS: dict[str, Any] = {"n_steps": 240, "batch_size": 80, "n_epochs": 10, "gamma": 0.99, "gae_lambda": 0.95,
                                "learning_rate": 1e-3}
#: The PPO tree's hidden layer (the evolution tree's has 16: with 16, seed 0 walked 1.2 m after 40 000 steps; with
#: 64, 3.9 m after 32 000).
PPO_HIDDEN = 64
#: The PPO tree's Trainer: steps of its run, and a greedy episode (deterministic: one is enough) every so many.
PPO_STEPS = 50_000
PPO_EVAL_INTERVAL = 5000
TORSO_Z = 0.47
LEG_LENGTH = 0.45
BODY_LENGTH = 0.8
EPISODE_STEPS = 240
LEGS = {"FL": (0.35, 0.25), "FR": (0.35, -0.25), "BL": (-0.35, 0.25), "BR": (-0.35, -0.25)}


def _cartpole() -> Any:
    spec = importlib.util.spec_from_file_location("build_cartpole_rb",
                                                  ROOT / "scenes" / "cartpole_rb" / "build_cartpole_rb.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_scene() -> Any:
    """A fresh file holding the walker (no node tree); returns the scene."""
    cp = _cartpole()
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end, scene.render.fps = 1, 250, 24
    bpy.ops.rigidbody.world_add()
    rbw = scene.rigidbody_world
    rbw.collection = bpy.data.collections.new("RigidBodyWorld")
    rbw.constraints = bpy.data.collections.new("RigidBodyConstraints")
    rbw.point_cache.frame_start, rbw.point_cache.frame_end = 1, 250
    ground = cp._box(scene, "Ground", (20.0, 0.0, -0.5), (60.0, 8.0, 1.0), 'PASSIVE', colour=(0.3, 0.35, 0.3, 1.0))
    ground.rigid_body.friction = 1.0
    torso = cp._box(scene, "Torso", (0.0, 0.0, TORSO_Z), (BODY_LENGTH, 0.4, 0.15), 'ACTIVE', 2.0,
                    colour=(0.2, 0.5, 0.9, 1.0))
    for leg, (x, y) in LEGS.items():
        ob = cp._box(scene, f"Leg.{leg}", (x, y, TORSO_Z - LEG_LENGTH / 2), (0.08, 0.08, LEG_LENGTH), 'ACTIVE', 0.3,
                     colour=(0.9, 0.5, 0.2, 1.0))
        ob.rigid_body.friction = 1.0
        hip = cp._constraint(scene, f"Hip.{leg}", 'HINGE', torso, ob, (x, y, TORSO_Z), (-math.pi / 2, 0.0, 0.0))
        c = hip.rigid_body_constraint
        c.disable_collisions = True
        c.use_limit_ang_z, c.limit_ang_z_lower, c.limit_ang_z_upper = True, -math.radians(60), math.radians(60)
        motor = cp._constraint(scene, f"Motor.{leg}", 'MOTOR', torso, ob, (x, y, TORSO_Z), (0.0, 0.0, math.pi / 2))
        m = motor.rigid_body_constraint
        m.disable_collisions = True
        m.use_motor_ang, m.motor_ang_target_velocity, m.motor_ang_max_impulse = True, 0.0, 6.0
    goal = bpy.data.objects.new("Goal", None)
    scene.collection.objects.link(goal)
    goal.location = (100.0, 0.0, TORSO_Z)
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    cam.location, cam.rotation_euler = (2.0, -8.0, 1.5), (math.radians(82), 0.0, 0.0)
    scene.camera = cam
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", 'SUN'))
    scene.collection.objects.link(sun)
    sun.location, sun.rotation_euler = (2.0, -4.0, 6.0), (0.6, 0.2, 0.0)
    bpy.context.view_layer.update()  # constraints take their frames from matrix_world: evaluate it now
    return scene


def build_tree(scene: Any) -> Any:
    """The tree (see the module docstring): the add-on's Add > DRLA Examples builder, so the two never differ."""
    from drla_ext.addon.ui.examples_evolution import build_walker_tree

    return build_walker_tree(scene, TREE_NAME)


def build_ppo_tree(scene: Any) -> Any:
    """The same walker trained by a PPO Agent (tree ``PPO_TREE_NAME``): the Evolution Agent replaced in place by a PPO
    Agent (the Network linked to it), each of the four Motor actions a Gaussian policy's continuous action in
    [-1, 1] times its 4 rad/s; ``PPO_SETTINGS`` on the agent, a Trainer of ``PPO_STEPS`` steps."""
    from drla_ext.addon.ui.examples_evolution import build_walker_tree

    tree = build_walker_tree(scene, PPO_TREE_NAME)
    evolution = next(n for n in tree.nodes if n.bl_idname == "DRLA_EvolutionAgentNode")
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_TrainerNode")
    agent = tree.nodes.new("DRLA_PPOAgentNode")
    agent.location, agent.width = evolution.location.copy(), evolution.width
    for name, value in PPO_SETTINGS.items():
        setattr(agent, name, value)
    next(n for n in tree.nodes if n.bl_idname == "DRLA_HiddenLayerNode").size = PPO_HIDDEN
    tree.links.new(tree.nodes["Network"].outputs[0], agent.inputs["Network"])
    tree.nodes.remove(evolution)
    tree.links.new(agent.outputs[0], trainer.inputs["Agent"])
    trainer.total_steps, trainer.eval_interval, trainer.eval_episodes = PPO_STEPS, PPO_EVAL_INTERVAL, 1
    return tree


def add_node_tree(scene: Any) -> bool:
    from drla.extension import register_extension

    register_extension()
    scene.drla.tree = build_tree(scene)  # the file opens with its evolution tree chosen in the DRLA sidebar
    build_ppo_tree(scene)
    return True


def build(out: str | Path) -> Path:
    """Build the scene with its node tree and save it uncompressed to ``out``."""
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    scene = build_scene()
    add_node_tree(scene)
    bpy.ops.wm.save_as_mainfile(filepath=str(out), compress=False, relative_remap=False, check_existing=False)
    return out


def dump(scene: Any = None) -> dict[str, Any]:
    return _cartpole().dump(scene)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).with_name("walker.blend")), help="where to save the .blend")
    parser.add_argument("--dump", action="store_true", help="print the canonical dump of the built scene as JSON")
    args = parser.parse_args(argv)
    out = build(args.out)
    print(f"build_walker: saved {out}")
    if args.dump:
        print(json.dumps(dump(), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
