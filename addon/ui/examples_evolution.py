"""The evolution examples of Add > DRLA Examples and ``scenes/``: a cart-pole and a walker on Blender's rigid-body
physics, and pac-man against a ghost co-evolving in a maze of objects. Built with ``examples``' layout and
builder, like the DQN examples."""

from __future__ import annotations

from typing import Any

import bpy

from ...drla_core.envs.pacman import MAZE as PACMAN_MAZE
from .examples import _Builder, _named_agent


def build_cartpole_rb_tree(scene, name: str = "CartPole") -> Any:
    """A cart-pole on Blender's rigid-body physics learns to balance by evolution (``scenes/cartpole_rb``).

    State: the cart's position and velocity, the hinge angle, the pole's spin; one Motor action pushes
    the cart (+-3 m/s); a Step Cost node's -1 per step (``EvolutionJob`` then maximises frames balanced);
    the episode ends when the pole tips below z = 1.1 or the cart leaves +-2.4 m; a GA of 24 evolves it.
    """
    obs = scene.objects
    b = _Builder(name)
    state = b.node("DRLA_StateNode")
    for sensor in (b.node("DRLA_TransformSensorNode", object=obs["Cart"], use_location=True),
                   b.node("DRLA_VelocitySensorNode", object=obs["Cart"], use_linear=True),
                   b.node("DRLA_JointAngleSensorNode", source='HINGE', hinge=obs["PoleHinge"]),
                   b.node("DRLA_VelocitySensorNode", object=obs["Pole"], use_linear=False, use_angular=True,
                          scale=0.5)):
        b.link(sensor, state, "Sensors")
    actions = b.node("DRLA_ActionSetNode")
    b.link(b.node("DRLA_MotorActionNode", action_name="push", constraint=obs["CartMotor"], motion='LINEAR',
                  max_velocity=3.0), actions, "Actions")
    env = b.node("DRLA_EnvironmentNode", frames_per_step=1, max_steps=200)
    b.link(state, env, "State")
    b.link(actions, env, "Actions")
    b.link(b.node("DRLA_StepCostNode", cost=-1.0), env, "Rewards")
    b.link(b.node("DRLA_OutOfBoundsNode", object=obs["Pole"], bounds='BOX', box_min=(-10.0, -10.0, 1.1),
                  box_max=(10.0, 10.0, 10.0)), env, "Done")
    b.link(b.node("DRLA_OutOfBoundsNode", object=obs["Cart"], bounds='BOX', box_min=(-2.4, -10.0, -10.0),
                  box_max=(2.4, 10.0, 10.0)), env, "Done")
    return _ga_trainer(b, env, hidden=8, sigma=0.3)


def _ga_trainer(b, env, hidden: int, sigma: float):
    """The physics examples' learner: a GA Evolution Agent (24 individuals, 10 generations) over a tanh network
    with one hidden layer of ``hidden``, in a Trainer with ``env``; the finished tree."""
    layer = b.node("DRLA_HiddenLayerNode", size=hidden, activation='TANH')
    net = b.node("DRLA_NetworkNode", output_activation='TANH')
    b.link(layer, net, "Layers")
    agent = b.node("DRLA_EvolutionAgentNode", method='GA', population_size=24, generations=10, episodes=1,
                   mutation_rate=0.2, mutation_sigma=sigma, elites=2)
    b.link(net, agent, "Network")
    trainer = b.node("DRLA_TrainerNode", seed=0)
    b.link(env, trainer, "Environment")
    b.link(agent, trainer, "Agent")
    return b.done()


#: The walker's legs, in the order of its actions and joint-angle sensors (``scenes/walker``).
WALKER_LEGS = ("FL", "FR", "BL", "BR")
#: The walker's clock: two gait cycles per second (1 Hz with mutation sigma 0.3 reached 1.8 body lengths in
#: 33 generations; 2 Hz with sigma 0.5, 4.8 in 28).
WALKER_CLOCK_HZ = 2.0
WALKER_EPISODE_STEPS = 240


def build_walker_tree(scene, name: str = "Walker") -> Any:
    """A four-legged rigid-body walker learns to walk by evolution (``scenes/walker``).

    State: the torso's position (first: novelty's behaviour), height and tilt, local velocity, the four
    hip angles and a Clock Sensor (the gait's rhythm); four Motor actions (+-4 rad/s); reward = metres
    walked towards ``Goal``; 10 s episodes (240 steps), ended if the torso falls below z = 0.15.
    """
    obs = scene.objects
    torso = obs["Torso"]
    b = _Builder(name)
    state = b.node("DRLA_StateNode")
    sensors = [b.node("DRLA_TransformSensorNode", object=torso, use_location=True, scale=0.2),
               b.node("DRLA_HeightTiltSensorNode", object=torso),
               b.node("DRLA_VelocitySensorNode", object=torso, use_linear=True, space='LOCAL')]
    sensors += [b.node("DRLA_JointAngleSensorNode", source='HINGE', hinge=obs[f"Hip.{leg}"]) for leg in WALKER_LEGS]
    sensors.append(b.node("DRLA_ClockSensorNode", frequency=WALKER_CLOCK_HZ))
    for sensor in sensors:
        b.link(sensor, state, "Sensors")
    actions = b.node("DRLA_ActionSetNode")
    for leg in WALKER_LEGS:
        b.link(b.node("DRLA_MotorActionNode", action_name=f"hip_{leg.lower()}", constraint=obs[f"Motor.{leg}"],
                      motion='ANGULAR', max_velocity=4.0), actions, "Actions")
    env = b.node("DRLA_EnvironmentNode", frames_per_step=1, max_steps=WALKER_EPISODE_STEPS)
    b.link(state, env, "State")
    b.link(actions, env, "Actions")
    b.link(b.node("DRLA_DistanceRewardNode", object_a=torso, object_b=obs["Goal"], mode='PROGRESS', weight=1.0),
           env, "Rewards")
    b.link(b.node("DRLA_OutOfBoundsNode", object=torso, bounds='BOX', box_min=(-50.0, -50.0, 0.15),
                  box_max=(150.0, 50.0, 50.0)), env, "Done")
    return _ga_trainer(b, env, hidden=16, sigma=0.5)


# --------------------------------------------------------------------------- pac-man (co-evolution)

#: Where pac-man and the ghost start: maze cells (x, y), y up (``drla_core.envs.pacman.MAZE``).
PACMAN_START, GHOST_START = (1, 5), (9, 1)
#: The moves of both, in the order of their actions (unit steps; walls block them).
PACMAN_MOVES = (("up", (0.0, 1.0, 0.0)), ("down", (0.0, -1.0, 0.0)), ("left", (-1.0, 0.0, 0.0)),
                ("right", (1.0, 0.0, 0.0)))
PACMAN_EPISODE_STEPS = 60


def _cell(x: int, y: int) -> tuple[float, float, float]:
    """A maze cell's centre in the world: one unit per cell, the maze centred on the origin, z = 0.5."""
    rows = len(PACMAN_MAZE)
    return (x - (len(PACMAN_MAZE[0]) - 1) / 2, y - (rows - 1) / 2, 0.5)


def _box_object(name: str, size: float, color: tuple[float, float, float, float], location, collection) -> Any:
    h = size / 2
    mesh = bpy.data.meshes.get(f"DRLA_box_{size:g}")
    if mesh is None:  # one mesh per size, shared by every wall / pellet
        mesh = bpy.data.meshes.new(f"DRLA_box_{size:g}")
        mesh.from_pydata([(x, y, z) for z in (-h, h) for y in (-h, h) for x in (-h, h)], [],
                         [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)])
    ob = bpy.data.objects.new(name, mesh)
    ob.color = color
    ob.location = location
    collection.objects.link(ob)
    return ob


def build_pacman_objects(scene) -> dict[str, Any]:
    """The maze of ``drla_core.envs.pacman.MAZE`` as objects, made when the scene lacks them: a cube per wall
    cell (collection "Walls"), a small cube per pellet on every other corridor cell (collection "Pellets"),
    ``PacMan`` and ``Ghost`` on their start cells (``PacMan["pellets"]`` counts what it ate) and a floor."""
    found = {n: scene.objects.get(n) for n in ("PacMan", "Ghost")}
    walls, pellets = bpy.data.collections.get("Walls"), bpy.data.collections.get("Pellets")
    if all(found.values()) and walls is not None and pellets is not None:
        return {**found, "Walls": walls, "Pellets": pellets}
    walls, pellets = bpy.data.collections.new("Walls"), bpy.data.collections.new("Pellets")
    scene.collection.children.link(walls)
    scene.collection.children.link(pellets)
    height = len(PACMAN_MAZE)
    for x in range(len(PACMAN_MAZE[0])):
        for y in range(height):
            if PACMAN_MAZE[height - 1 - y][x] == "#":
                _box_object(f"Wall.{x:02d}.{y:02d}", 1.0, (0.1, 0.15, 0.7, 1.0), _cell(x, y), walls)
            elif (x, y) not in (PACMAN_START, GHOST_START):
                _box_object(f"Pellet.{x:02d}.{y:02d}", 0.2, (1.0, 0.85, 0.7, 1.0), _cell(x, y), pellets)
    pac = _box_object("PacMan", 0.7, (1.0, 0.9, 0.0, 1.0), _cell(*PACMAN_START), scene.collection)
    pac["pellets"] = 0
    ghost = _box_object("Ghost", 0.7, (1.0, 0.1, 0.1, 1.0), _cell(*GHOST_START), scene.collection)
    floor = bpy.data.meshes.new("Floor")
    w, h = len(PACMAN_MAZE[0]) / 2, height / 2
    floor.from_pydata([(-w, -h, 0.0), (w, -h, 0.0), (w, h, 0.0), (-w, h, 0.0)], [], [(0, 1, 2, 3)])
    ob = bpy.data.objects.new("Floor", floor)
    ob.color = (0.02, 0.02, 0.05, 1.0)
    ob.hide_select = True
    scene.collection.objects.link(ob)
    return {"PacMan": pac, "Ghost": ghost, "Walls": walls, "Pellets": pellets}


def _maze_env(b: _Builder, me, other, walls, pellets, pacman: bool) -> Any:
    """One side's environment: its own place, the other's relative to it, four rays (walls and pellets
    around it, up to 3 cells); four unit moves that walls block. Pac-man collects the pellets (+1 each,
    counted in ``PacMan["pellets"]``) and loses 5 when the ghost is within one cell (the episode ends);
    the ghost loses 1 per pellet eaten, wins 5 for the catch and 0.5 per unit it closes in (a hint: the
    catch alone is too rare for a first generation to find)."""
    state = b.node("DRLA_StateNode")
    sensors = [b.node("DRLA_TransformSensorNode", object=me, use_location=True, use_rotation=False, scale=0.2),
               b.node("DRLA_TransformSensorNode", object=other, relative_to=me, use_location=True,
                      use_rotation=False, scale=0.2)]
    sensors += [b.node("DRLA_RaySensorNode", object=me, axis=axis, rays=1, max_distance=3.0)
                for axis in ('POS_Y', 'NEG_Y', 'NEG_X', 'POS_X')]
    for sensor in sensors:
        b.link(sensor, state, "Sensors")
    actions = b.node("DRLA_ActionSetNode")
    for name, vector in PACMAN_MOVES:
        b.link(b.node("DRLA_ActionNode", action_name=name, kind='MOVE', object=me, vector=vector, blocked_by=walls),
               actions, "Actions")
    env = b.node("DRLA_EnvironmentNode", frames_per_step=1, max_steps=PACMAN_EPISODE_STEPS)
    b.link(state, env, "State")
    b.link(actions, env, "Actions")
    pac = me if pacman else other
    if pacman:
        b.link(b.node("DRLA_CollectRewardNode", object=me, items=pellets, radius=0.5, reward=1.0,
                      count_property="pellets"), env, "Rewards")
    else:
        b.link(b.node("DRLA_PropertyChangeRewardNode", object=pac, property="pellets", increase=-1.0,
                      decrease=0.0), env, "Rewards")
        b.link(b.node("DRLA_DistanceRewardNode", object_a=me, object_b=other, mode='PROGRESS', weight=0.5),
               env, "Rewards")
    b.link(b.node("DRLA_WithinDistanceNode", object_a=me, object_b=other, distance=1.01,
                  reward=-5.0 if pacman else 5.0), env, "Done")
    return env


def build_pacman_tree(scene, name: str = "PacMan", generations: int = 15, population: int = 16) -> Any:
    """Pac-man against a ghost in a small maze, co-evolved (``scenes/pacman``): two Named Agents with
    Evolution Agents into a Multi-Agent Trainer; each generation every pac-man plays the ghosts' current
    champion and every ghost pac-man's. The maze's objects are the game (made when missing:
    ``build_pacman_objects``): transform-only, no physics. Episodes of 60 steps, both starting in
    opposite corners."""
    obs = build_pacman_objects(scene)
    b = _Builder(name)
    trainer = b.node("DRLA_MultiAgentTrainerNode", seed=0, eval_interval=0)
    for who, me, other, pacman in (("pacman", obs["PacMan"], obs["Ghost"], True),
                                   ("ghost", obs["Ghost"], obs["PacMan"], False)):
        env = _maze_env(b, me, other, obs["Walls"], obs["Pellets"], pacman)
        layer = b.node("DRLA_HiddenLayerNode", size=8, activation='TANH')
        net = b.node("DRLA_NetworkNode", output_activation='TANH')
        b.link(layer, net, "Layers")
        agent = b.node("DRLA_EvolutionAgentNode", method='GA', population_size=population, generations=generations,
                       episodes=1, mutation_rate=0.2, mutation_sigma=0.5, elites=2)
        b.link(net, agent, "Network")
        _named_agent(b, trainer, env, agent, who, 'TRAIN')
    return b.done()
