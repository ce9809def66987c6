"""Build the rigid-body cart-pole example scene, ``scenes/cartpole_rb/cartpole_rb.blend``, reproducibly.

Run from the repository root::

    make setup-bpy45 && .venv-bpy45/bin/python scenes/cartpole_rb/build_cartpole_rb.py

(saved by the oldest Blender the manifest admits, 4.5: newer ones open its files, not the reverse)

Blender's own rigid-body physics (Bullet), Z up, the cart runs along X:

- ``Rail``: a passive 6 x 0.2 x 0.2 box at z = 0.1 (the track, x in [-3, 3]).
- ``Cart``: an active 0.6 x 0.4 x 0.3 box (1 kg) at (0, 0, 0.5), above the rail; ``CartSlider`` (a
  Slider constraint, Rail -> Cart, along X) keeps it on its line and ``CartMotor`` (a Motor constraint,
  linear motor on) pushes it: the agent's Motor Action sets its target velocity (Blender's motors are a
  constraint type of their own, beside the Slider).
- ``Pole``: an active 0.06 x 0.06 x 1 box (0.1 kg) on ``PoleHinge`` (a Hinge constraint, Cart -> Pole, at
  the cart's top (0, 0, 0.65), turning about Y), tilted ``START_TILT`` radians at the start so it falls
  if nothing balances it (a pole exactly upright over its pivot stays up for ever: Bullet is exact).
- ``Camera`` (side view, for people) and ``Sun``.

The RL node tree "CartPole" (``add_node_tree``): State = cart position and velocity (Transform and
Velocity sensors), pole angle (Joint Angle sensor on the hinge) and spin (Velocity sensor, angular);
Action Set = one Motor Action on ``CartMotor`` (+-3 m/s); reward +1 per step (a Step Cost of -1); the
episode ends when the pole's centre drops below z = 1.1 (about 23 degrees) or the cart leaves x in
[-2.4, 2.4], after 200 steps at most; an Evolution Agent (GA) trains it.

``cartpole_rb_sac.blend`` (``--sac``, and ``build_sac``) is the same scene whose one tree, "CartPole SAC", trains
the same problem by a SAC Agent (the continuous motor as Soft Actor-Critic's action): the Evolution Agent swapped
for one in place (``build_sac_tree``). ``cartpole_rb_ppo.blend`` (``--ppo``) is the same with a PPO Agent, tree
"CartPole PPO" (``build_ppo_tree``).

``dump(scene)`` (the tank scene's canonical dump, plus the rigid-body settings) is what the tests compare
between a fresh build and the committed file.
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

TREE_NAME = "CartPole"
SAC_TREE_NAME = "CartPole SAC"
PPO_TREE_NAME = "CartPole PPO"
START_TILT = 0.15
PIVOT = (0.0, 0.0, 0.65)
POLE_LENGTH = 1.0


def _tank_module() -> Any:
    """The tank build script, for its canonical dump (one dump for every example scene)."""
    spec = importlib.util.spec_from_file_location("build_tank", ROOT / "scenes" / "tank" / "build_tank.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _box(scene: Any, name: str, location, size, body: str, mass: float = 1.0, colour=(0.8, 0.8, 0.8, 1.0)) -> Any:
    sx, sy, sz = (s / 2 for s in size)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([(x, y, z) for z in (-sz, sz) for y in (-sy, sy) for x in (-sx, sx)], [],
                     [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)])
    ob = bpy.data.objects.new(name, mesh)
    scene.collection.objects.link(ob)
    ob.location = location
    ob.color = colour
    scene.rigidbody_world.collection.objects.link(ob)
    rb = ob.rigid_body
    rb.type = body
    rb.collision_shape = 'BOX'
    rb.mass = mass
    return ob


def _constraint(scene: Any, name: str, kind: str, a: Any, b: Any, location, rotation=(0.0, 0.0, 0.0)) -> Any:
    ob = bpy.data.objects.new(name, None)
    scene.collection.objects.link(ob)
    ob.location, ob.rotation_euler = location, rotation
    ob.empty_display_size = 0.2
    scene.rigidbody_world.constraints.objects.link(ob)
    c = ob.rigid_body_constraint
    c.type = kind
    c.object1, c.object2 = a, b
    return ob


def build_scene() -> Any:
    """A fresh file holding the cart-pole (no node tree); returns the scene."""
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end, scene.render.fps = 1, 250, 24
    bpy.ops.rigidbody.world_add()
    rbw = scene.rigidbody_world
    rbw.collection = bpy.data.collections.new("RigidBodyWorld")
    rbw.constraints = bpy.data.collections.new("RigidBodyConstraints")
    rbw.point_cache.frame_start, rbw.point_cache.frame_end = 1, 250
    rail = _box(scene, "Rail", (0.0, 0.0, 0.1), (6.0, 0.2, 0.2), 'PASSIVE', colour=(0.3, 0.3, 0.3, 1.0))
    cart = _box(scene, "Cart", (0.0, 0.0, 0.5), (0.6, 0.4, 0.3), 'ACTIVE', 1.0, colour=(0.2, 0.5, 0.9, 1.0))
    half = POLE_LENGTH / 2
    pole = _box(scene, "Pole", (PIVOT[0] + half * math.sin(START_TILT), 0.0, PIVOT[2] + half * math.cos(START_TILT)),
                (0.06, 0.06, POLE_LENGTH), 'ACTIVE', 0.1, colour=(0.9, 0.5, 0.2, 1.0))
    pole.rotation_euler = (0.0, START_TILT, 0.0)
    slider = _constraint(scene, "CartSlider", 'SLIDER', rail, cart, (0.0, 0.0, 0.5))
    slider.rigid_body_constraint.use_limit_lin_x = True
    slider.rigid_body_constraint.limit_lin_x_lower, slider.rigid_body_constraint.limit_lin_x_upper = -2.9, 2.9
    motor = _constraint(scene, "CartMotor", 'MOTOR', rail, cart, (0.0, 0.0, 0.5))
    m = motor.rigid_body_constraint
    m.use_motor_lin, m.motor_lin_target_velocity, m.motor_lin_max_impulse = True, 0.0, 3.0
    _constraint(scene, "PoleHinge", 'HINGE', cart, pole, PIVOT, (math.pi / 2, 0.0, 0.0))
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    cam.location, cam.rotation_euler = (0.0, -7.0, 1.0), (math.pi / 2, 0.0, 0.0)
    scene.camera = cam
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", 'SUN'))
    scene.collection.objects.link(sun)
    sun.location, sun.rotation_euler = (2.0, -4.0, 6.0), (0.6, 0.2, 0.0)
    bpy.context.view_layer.update()  # constraints take their frames from matrix_world: evaluate it now
    return scene


def build_tree(scene: Any) -> Any:
    """The tree (see the module docstring): the add-on's Add > DRLA Examples builder, so the two never differ."""
    from drla_ext.addon.ui.examples_evolution import build_cartpole_rb_tree

    return build_cartpole_rb_tree(scene, TREE_NAME)


def _swap_agent(scene: Any, name: str, idname: str) -> tuple[Any, Any]:
    """The cart-pole tree named ``name`` with its Evolution Agent replaced in place by a new ``idname`` node (the
    Network linked to it): ``(tree, trainer)``."""
    from drla_ext.addon.ui.examples_evolution import build_cartpole_rb_tree

    tree = build_cartpole_rb_tree(scene, name)
    evolution = next(n for n in tree.nodes if n.bl_idname == "DRLA_EvolutionAgentNode")
    trainer = next(n for n in tree.nodes if n.bl_idname == "DRLA_TrainerNode")
    agent = tree.nodes.new(idname)
    agent.location, agent.width = evolution.location.copy(), evolution.width
    tree.links.new(tree.nodes["Network"].outputs[0], agent.inputs["Network"])
    tree.nodes.remove(evolution)
    tree.links.new(agent.outputs[0], trainer.inputs["Agent"])
    return tree, trainer


def build_sac_tree(scene: Any) -> Any:
    """The same tree trained by a SAC Agent: the Evolution Agent replaced in place (its Network linked), and a
    Trainer of 10 000 steps evaluating 3 episodes every 1000."""
    tree, trainer = _swap_agent(scene, SAC_TREE_NAME, "DRLA_SACAgentNode")
    trainer.total_steps, trainer.eval_interval, trainer.eval_episodes = 10_000, 1000, 3
    return tree


def build_ppo_tree(scene: Any) -> Any:
    """The same tree trained by a PPO Agent (its defaults; the continuous motor as a Gaussian policy's action):
    a Trainer of PPO_STEPS steps evaluating 3 episodes every 2000."""
    tree, trainer = _swap_agent(scene, PPO_TREE_NAME, "DRLA_PPOAgentNode")
    trainer.total_steps, trainer.eval_interval, trainer.eval_episodes = PPO_STEPS, 2000, 3
    return tree


#: The PPO tree's Trainer: steps of its run.
PPO_STEPS = 20_000


def add_node_tree(scene: Any, sac: bool = False, ppo: bool = False) -> bool:
    """Add the RL node tree (the add-on registered first; ``sac`` / ``ppo``: the SAC / PPO tree); False if it is
    not available."""
    from drla.extension import register_extension

    register_extension()
    tree = build_sac_tree(scene) if sac else build_ppo_tree(scene) if ppo else build_tree(scene)
    scene.drla.tree = tree  # the file opens with its tree chosen in the DRLA sidebar
    return True


def build(out: str | Path, sac: bool = False, ppo: bool = False) -> Path:
    """Build the scene with its node tree (``sac`` / ``ppo``: the SAC / PPO tree) and save it uncompressed to
    ``out``."""
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    scene = build_scene()
    add_node_tree(scene, sac, ppo)
    bpy.ops.wm.save_as_mainfile(filepath=str(out), compress=False, relative_remap=False, check_existing=False)
    return out


def dump(scene: Any = None) -> dict[str, Any]:
    """The tank scene's canonical dump plus every rigid body's and constraint's settings."""
    tank = _tank_module()
    scene = scene or bpy.context.scene
    out = tank.dump(scene)
    rbw = scene.rigidbody_world
    out["rigid_body_world"] = {"substeps": rbw.substeps_per_frame, "iterations": rbw.solver_iterations,
                               "cache": (rbw.point_cache.frame_start, rbw.point_cache.frame_end),
                               "gravity": tank._value(scene.gravity)}
    for ob in scene.objects:
        if ob.rigid_body is not None:
            out["objects"][ob.name]["rigid_body"] = tank._rna_props(ob.rigid_body)
        if ob.rigid_body_constraint is not None:
            out["objects"][ob.name]["constraint"] = tank._rna_props(ob.rigid_body_constraint)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).with_name("cartpole_rb.blend")),
                        help="where to save the .blend")
    parser.add_argument("--dump", action="store_true", help="print the canonical dump of the built scene as JSON")
    parser.add_argument("--sac", action="store_true", help="build cartpole_rb_sac.blend (its tree trains SAC)")
    parser.add_argument("--ppo", action="store_true", help="build cartpole_rb_ppo.blend (its tree trains PPO)")
    args = parser.parse_args(argv)
    if args.sac and args.ppo:
        parser.error("--sac or --ppo, not both")
    if (args.sac or args.ppo) and args.out == parser.get_default("out"):
        args.out = str(Path(__file__).with_name("cartpole_rb_sac.blend" if args.sac else "cartpole_rb_ppo.blend"))
    out = build(args.out, args.sac, args.ppo)
    print(f"build_cartpole_rb: saved {out}")
    if args.dump:
        print(json.dumps(dump(), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
