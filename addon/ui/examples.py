"""Ready-made DRLA node trees: the tank game and a transform-only "reach the goal" example.

``EXAMPLES`` maps a display name to a builder ``fn(scene) -> tree``; the Add > Examples menu
and the CLI list it. Each builder makes a new tree (``use_fake_user`` so it is saved) over
objects that already exist in the scene; ``build_transform_tree`` creates its two objects
when they are missing.
"""

from __future__ import annotations

import math
from typing import Any

import bpy

from ..tree.node_tree import TREE_ID


#: Left to right by role: what the agent senses and does, the environment, the network, the agent,
#: the trainer and what it writes. Within a column nodes stack in this order, top to bottom.
ROLE_COLUMNS: tuple[tuple[str, ...], ...] = (
    ("sensor", "DRLA_ActionNode", "DRLA_FireActionNode", "DRLA_BoneActionsNode", "DRLA_MotorActionNode"),
    ("DRLA_StateNode", "DRLA_ActionSetNode", "reward", "ending"),
    ("DRLA_EnvironmentNode",),
    ("DRLA_HiddenLayerNode",),
    ("DRLA_NetworkNode", "DRLA_EpsilonNode", "DRLA_ReplayMemoryNode"),
    ("agent",),
    ("DRLA_NamedAgentNode",),
    ("DRLA_TrainerNode", "DRLA_MultiAgentTrainerNode"),
    ("output",),
)
COLUMN_GAP, ROW_GAP, MAX_COLUMN_HEIGHT = 60, 40, 1800


def _role(node) -> tuple[int, int]:
    """(column, order within the column) of a node: its idname's place, else its category's."""
    for key in (node.bl_idname, getattr(node, "drla_category", None)):
        for column, roles in enumerate(ROLE_COLUMNS):
            if key in roles:
                return column, roles.index(key)
    return len(ROLE_COLUMNS), 0


class _RowCounter:
    """Counts the rows a node's ``draw(layout)`` makes (a row lays children side by side, the
    tallest counts; anything else stacks), to estimate its height where no window has drawn it."""

    def __init__(self, node, side_by_side: bool = False):
        self.node, self.side_by_side, self.children, self.own = node, side_by_side, [], 0

    def rows(self) -> int:
        parts = [self.own] if self.own else []
        parts += [c.rows() for c in self.children]
        return (max(parts) if self.side_by_side else sum(parts)) if parts else 0

    def _child(self, side_by_side: bool) -> _RowCounter:
        child = _RowCounter(self.node, side_by_side)
        self.children.append(child)
        return child

    def row(self, *args, **kwargs) -> _RowCounter:
        return self._child(True)

    def split(self, *args, **kwargs) -> _RowCounter:
        return self._child(True)

    def column(self, *args, **kwargs) -> _RowCounter:
        return self._child(False)

    def prop(self, data, name: str, *args, index: int = -1, expand: bool = False, **kwargs) -> None:
        prop = data.bl_rna.properties.get(name)
        length = getattr(prop, "array_length", 0) if prop is not None else 0
        stacked = length > 1 and index < 0 and not self.side_by_side and prop.type == 'FLOAT'
        self._child(False).own = 1 + length if stacked else 1  # a vector: its label and a row each

    def __getattr__(self, name: str):  # label, separator, operator, ...: one row each
        def one_row(*args, **kwargs) -> _RowCounter:
            self._child(False).own = 1
            return self
        return one_row


def node_width(node) -> float:
    """The node's drawn width (a node's own ``width`` property, like the Camera Sensor's image
    width, hides ``Node.width`` from Python; example trees' nodes keep their default width)."""
    return float(type(node).bl_width_default)


def estimated_height(node) -> float:
    """A node's drawn height in the editor at UI scale 1, from above.

    Blender knows ``node.dimensions`` only once a window has drawn the node, and example trees
    are built headless: a header, a row per socket (a multi-input socket grows with its links),
    the rows its ``draw`` makes and its summary line. ``make test-gui`` checks the real drawn
    rectangles of the shipped trees never overlap."""
    counter = _RowCounter(node)
    node.draw(counter)
    rows = counter.rows() + (1 if node.summary() else 0)
    extra_links = sum(max(0, len(s.links) - 1) for s in node.inputs if s.is_multi_input)
    return 36 + 24 * (len(node.inputs) + len(node.outputs)) + 24 * rows + 12 * extra_links + 16


def _chain_depth(node) -> int:
    """A hidden layer's place in its chain (0: the one nearest the input): each layer stands in a column of its
    own, right of the layer it follows, so the chain reads left to right with no wire running back."""
    if node.bl_idname != "DRLA_HiddenLayerNode":
        return 0
    depth, seen = 0, {node.name}
    prev = node.inputs.get("Previous")
    while prev is not None and prev.links:
        before = prev.links[0].from_node
        if before.bl_idname != "DRLA_HiddenLayerNode" or before.name in seen:
            break
        seen.add(before.name)
        depth += 1
        prev = before.inputs.get("Previous")
    return depth


def arrange(tree) -> None:
    """Lay ``tree`` out left to right by role (``ROLE_COLUMNS``; hidden layers one column per place in
    their chain), each column a stack, none overlapping; a column taller than ``MAX_COLUMN_HEIGHT`` (the
    tank's eight actions) wraps into as many side-by-side stacks of about equal height as it needs."""
    columns: dict[tuple[int, int], list] = {}
    for index, node in enumerate(tree.nodes):
        column, order = _role(node)
        columns.setdefault((column, _chain_depth(node)), []).append((order, index, node))
    x = 0.0
    for column in sorted(columns):
        stack = [node for _order, _index, node in sorted(columns[column], key=lambda t: t[:2])]
        heights = [estimated_height(node) + ROW_GAP for node in stack]
        parts = math.ceil(sum(heights) / MAX_COLUMN_HEIGHT)
        share = sum(heights) / parts
        y, width = 0.0, 0.0
        for node, height in zip(stack, heights):
            # wrap where this node's middle would pass the share, or its bottom the tallest a column may be
            if y < 0 and (-y + height / 2 > share or -y + height > MAX_COLUMN_HEIGHT):
                x, y, width = x + width + COLUMN_GAP, 0.0, 0.0
            node.location = (x, y)
            y -= height
            width = max(width, node_width(node))
        x += width + COLUMN_GAP


class _Builder:
    """Adds nodes and links them by socket name, to keep the trees below readable; ``arrange``
    lays them out when the tree is complete."""

    def __init__(self, name: str):
        self.tree = bpy.data.node_groups.new(name, TREE_ID)
        self.tree.use_fake_user = True

    def node(self, idname: str, label: str = "", **props) -> Any:
        node = self.tree.nodes.new(idname)
        if label:
            node.label = label
        for key, value in props.items():
            setattr(node, key, value)
        return node

    def link(self, a, b, socket: str | int = 0) -> None:
        self.tree.links.new(a.outputs[0], b.inputs[socket])

    def done(self) -> Any:
        arrange(self.tree)
        return self.tree


def _dqn_agent(b: _Builder, hidden=(64, 64), epsilon=(1.0, 0.05, 0.3), replay=(50000, 64, 500), **dqn) -> Any:
    """A DQN Agent node with its Network (relu Hidden Layers), Epsilon Schedule and Replay Memory linked in."""
    prev = None
    for size in hidden:
        layer = b.node("DRLA_HiddenLayerNode", size=size, activation='RELU')
        if prev is not None:
            b.link(prev, layer, "Previous")
        prev = layer
    net = b.node("DRLA_NetworkNode")
    if prev is not None:
        b.link(prev, net, "Layers")
    eps = b.node("DRLA_EpsilonNode", start=epsilon[0], end=epsilon[1], fraction=epsilon[2])
    rep = b.node("DRLA_ReplayMemoryNode", capacity=replay[0], batch_size=replay[1], learning_starts=replay[2])
    agent = b.node("DRLA_DQNAgentNode", **dqn)
    b.link(net, agent, "Network")
    b.link(eps, agent, "Epsilon")
    b.link(rep, agent, "Replay")
    return agent


def _named_agent(b: _Builder, trainer, env, agent, name: str, mode: str) -> Any:
    """A Named Agent joining ``env`` and ``agent`` under ``name``, linked into the Multi-Agent ``trainer``."""
    member = b.node("DRLA_NamedAgentNode", agent_name=name, mode=mode)
    b.link(env, member, "Environment")
    b.link(agent, member, "Agent")
    b.link(member, trainer, "Agents")
    return member


def _agent(b: _Builder, env, hidden=(64, 64), total_steps=20000, seed=0, epsilon=(1.0, 0.05, 0.3),
           replay=(50000, 64, 500), evaluate=(0, 5), **dqn) -> Any:
    agent = _dqn_agent(b, hidden, epsilon, replay, **dqn)
    trainer = b.node("DRLA_TrainerNode", total_steps=total_steps, seed=seed, eval_interval=evaluate[0],
                     eval_episodes=evaluate[1])
    b.link(env, trainer, "Environment")
    b.link(agent, trainer, "Agent")
    export = b.node("DRLA_ExportJSONNode", filepath=f"//{b.tree.name.lower()}_model.json")
    b.link(trainer, export, "Model")
    return trainer


# --------------------------------------------------------------------------- tank


TANK_ACTIONS = ("move_right", "move_left", "move_front", "move_back", "wait", "canon_up", "canon_down", "fire")
#: Where TankB starts and respawns: always in the half of the arena in front of TankA's start.
TANK_SPAWN_MIN = (-4.0, 0.5, 0.0)
TANK_SPAWN_MAX = (4.0, 4.0, 0.0)
#: The TankCamera picture (width, height): one pixel per unit, see ``scenes/tank/build_tank.py``.
TANK_CAMERA_SIZE = (19, 11)
#: The DQN Agent node's settings of the tank tree (all that matter are pinned, so the tree does not
#: change when the node's defaults do).
TANK_DQN = dict(learning_rate=1e-3, gamma=0.95, train_freq=4, gradient_steps=1, target_update_interval=500,
                tau=1.0, double_dqn=True, loss='HUBER', max_grad_norm=10.0, keep_best=True)


def _tank_env(b: _Builder, me, cannon, muzzle, cam_ob, target, ground, camera_size, spawn_min, spawn_max,
              max_steps: int, target_sensor: bool = False, hit_penalty: bool = False) -> Any:
    """One tank's environment: its camera in black/white, its score and cannon pitch; the eight tank
    actions; +1 per hit, -1 per missed shot (and, ``hit_penalty``, -1 each time ``target`` scores), -1 for
    leaving ``ground``. ``target`` starts and respawns after a hit between ``spawn_min`` and ``spawn_max``."""
    cam = b.node("DRLA_CameraSensorNode", camera=cam_ob, width=camera_size[0], height=camera_size[1],
                 mode='BW', threshold=0.5)
    score = b.node("DRLA_PropertySensorNode", object=me, property="score", scale=0.1)
    pitch = b.node("DRLA_PropertySensorNode", label="Cannon Pitch", object=cannon, property="rotation_euler[0]",
                   scale=1.0 / math.radians(10))
    sensors = [cam, score, pitch]
    if target_sensor:
        sensors.append(b.node("DRLA_TransformSensorNode", label="Target", object=target, relative_to=me,
                              use_location=True, use_rotation=False, scale=1.0))
    state = b.node("DRLA_StateNode")
    for sensor in sensors:
        b.link(sensor, state, "Sensors")

    items = []
    for action, kind, ob, vector in (
            ("move_right", 'MOVE', me, (0.5, 0, 0)), ("move_left", 'MOVE', me, (-0.5, 0, 0)),
            ("move_front", 'MOVE', me, (0, 0.5, 0)), ("move_back", 'MOVE', me, (0, -0.5, 0)),
            ("wait", 'WAIT', None, (0, 0, 0)),
            ("canon_up", 'ROTATE', cannon, (5, 0, 0)), ("canon_down", 'ROTATE', cannon, (-5, 0, 0))):
        item = b.node("DRLA_ActionNode", action_name=action, kind=kind, vector=vector)
        if ob is not None:
            item.object = ob
        if kind == 'ROTATE':
            item.use_limits, item.limit_min, item.limit_max = True, (-10, -180, -180), (10, 180, 180)
        items.append(item)
    fire = b.node("DRLA_FireActionNode", action_name="fire", origin=muzzle, axis='POS_Y', axis_object=cannon,
                  target=target, max_distance=30.0, score_object=me, score_property="score", add=1.0,
                  respawn=True, respawn_min=spawn_min, respawn_max=spawn_max, respawn_grid=0.5)
    items.append(fire)
    action_set = b.node("DRLA_ActionSetNode")
    for item in items:
        b.link(item, action_set, "Actions")

    score_reward = b.node("DRLA_PropertyChangeRewardNode", object=me, property="score", increase=1.0)
    miss = b.node("DRLA_HitRewardNode", label="Miss", hit=0.0, miss=-1.0)
    bounds = b.node("DRLA_OutOfBoundsNode", object=me, bounds='OBJECT', bounds_object=ground, reward=-1.0)

    env = b.node("DRLA_EnvironmentNode", frames_per_step=1, max_steps=max_steps, random_object_1=target,
                 random_min=spawn_min, random_max=spawn_max, random_grid=0.5)
    b.link(state, env, "State")
    b.link(action_set, env, "Actions")
    b.link(score_reward, env, "Rewards")
    b.link(miss, env, "Rewards")
    if hit_penalty:
        hit = b.node("DRLA_PropertyChangeRewardNode", label="Was Hit", object=target, property="score",
                     increase=-1.0)
        b.link(hit, env, "Rewards")
    b.link(bounds, env, "Done")
    return env


def build_tank_tree(scene, name: str = "Tank", total_steps: int = 60000, target_sensor: bool = False,
                    camera: str = "TankCamera", camera_size: tuple[int, int] | None = None, max_steps: int = 100,
                    hidden=(128, 64), epsilon=(1.0, 0.05, 0.4), replay=(50000, 64, 1000), **dqn) -> Any:
    """The tank game over the tank scene (``scenes/tank``): TankA learns to shoot TankB.

    State: what ``camera`` sees in black/white, the score and the cannon pitch. The default
    camera, ``TankCamera``, rides on TankA looking straight down at one pixel per unit
    (19 x 11: its own column in the middle, 1.5 behind to 9.5 in front), so "TankB's blob is
    in my column" means "lined up" wherever the tanks are (the top-down ``Camera`` over the
    whole arena is for people: F12). ``target_sensor`` adds TankB's location relative to TankA.
    Actions: the eight of ``TANK_ACTIONS`` (moves of 0.5, pitch steps of 5 degrees within
    [-10, 10]). Rewards: +1 per hit (the score goes up), -1 per missed shot, -1 for leaving the
    ground (which ends the episode). TankB starts and respawns after each hit at a random spot
    (on a 0.5 grid, so TankA's 0.5 moves line up exactly) in front of TankA's start.
    Episodes last at most ``max_steps`` steps. ``dqn`` overrides the DQN Agent node's settings.
    """
    obs = scene.objects
    if camera_size is None:
        camera_size = TANK_CAMERA_SIZE if camera == "TankCamera" else (16, 16)
    b = _Builder(name)
    env = _tank_env(b, obs["TankA"], obs["Cannon"], obs["Muzzle"], obs[camera], obs["TankB"], obs["Ground"],
                    camera_size, TANK_SPAWN_MIN, TANK_SPAWN_MAX, max_steps, target_sensor=target_sensor)
    dqn = {**TANK_DQN, **dqn}
    _agent(b, env, hidden=hidden, total_steps=total_steps, epsilon=epsilon, replay=replay, evaluate=(5000, 5),
           **dqn)
    return b.done()


#: The duel: where each tank starts and respawns after it was hit, on its own half of the arena.
#: The duel's self-play turn (the Multi-Agent Trainer's Self-Play Turn), in steps
DUEL_SELF_PLAY_TURN = 5000
DUEL_SPAWN = {"TankA": ((-4.0, -4.0, 0.0), (4.0, -0.5, 0.0)), "TankB": ((-4.0, 0.5, 0.0), (4.0, 4.0, 0.0))}


def build_tank_duel_tree(scene, name: str = "Duel", total_steps: int = 60000, b_mode: str = 'TRAIN') -> Any:
    """Both tanks of ``scenes/tank_duel`` learn to hit each other, each through its own camera.

    Each tank has the tank game's environment (``build_tank_tree``) from its own side: its camera
    (``TankCamera``, ``TankBCamera``), its score and cannon, the eight actions; +1 per hit, -1 per
    missed shot, -1 each time the other scores, -1 for leaving the ground. A tank that is hit
    respawns on its own half. Self-play: the tanks take turns of ``DUEL_SELF_PLAY_TURN`` steps, one learning
    while the other acts from a frozen snapshot of its network (learning both at once, the first to hit keeps
    the other from ever learning to). ``b_mode`` 'FROZEN' freezes TankB (TankA keeps learning against it).
    """
    obs = scene.objects
    b = _Builder(name)
    trainer = b.node("DRLA_MultiAgentTrainerNode", total_steps=total_steps, seed=0, eval_interval=0,
                     swap_every=DUEL_SELF_PLAY_TURN if b_mode == 'TRAIN' else 0)
    sides = (("tank_a", "TankA", "Cannon", "Muzzle", "TankCamera", "TankB", 'TRAIN'),
             ("tank_b", "TankB", "CannonB", "MuzzleB", "TankBCamera", "TankA", b_mode))
    for who, me, cannon, muzzle, cam, other, mode in sides:
        spawn_min, spawn_max = DUEL_SPAWN[other]
        env = _tank_env(b, obs[me], obs[cannon], obs[muzzle], obs[cam], obs[other], obs["Ground"], TANK_CAMERA_SIZE,
                        spawn_min, spawn_max, max_steps=100, hit_penalty=True)
        agent = _dqn_agent(b, (128, 64), (1.0, 0.05, 0.4), (50000, 64, 1000), **TANK_DQN)
        _named_agent(b, trainer, env, agent, who, mode)
    return b.done()


# --------------------------------------------------------------------------- transform example


def build_transform_scene(scene) -> tuple[Any, Any]:
    """Add (or reuse) the cube ``Agent`` and the empty ``Goal`` of the transform example."""
    agent = scene.objects.get("Agent")
    if agent is None:
        mesh = bpy.data.meshes.new("Agent")
        h = 0.25
        mesh.from_pydata([(x, y, z) for z in (-h, h) for y in (-h, h) for x in (-h, h)], [],
                         [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)])
        agent = bpy.data.objects.new("Agent", mesh)
        scene.collection.objects.link(agent)
    goal = scene.objects.get("Goal")
    if goal is None:
        goal = bpy.data.objects.new("Goal", None)
        goal.empty_display_type = 'SPHERE'
        scene.collection.objects.link(goal)
        goal.location = (2.0, 1.0, 0.0)
    return agent, goal


def _reach_env(b: _Builder, agent, goal, continuous: bool = False) -> Any:
    """The Reach environment: the goal relative to the agent and their distance; moves of 0.5 along +-X/+-Y and
    wait (``continuous``: two Move actions with Amount, X and Y, each up to 0.5 either way); rewarded for
    progress, -0.01 a step, +1 within 0.5 of the goal (the end), -1 for leaving [-5, 5]^2; at most 50 steps."""
    rel = b.node("DRLA_TransformSensorNode", object=goal, relative_to=agent, use_location=True,
                 use_rotation=False, scale=0.2)
    dist = b.node("DRLA_DistanceSensorNode", object_a=agent, object_b=goal, scale=0.2)
    state = b.node("DRLA_StateNode")
    b.link(rel, state, "Sensors")
    b.link(dist, state, "Sensors")
    action_set = b.node("DRLA_ActionSetNode")
    moves = ((("move_x", (0.5, 0, 0)), ("move_y", (0, 0.5, 0))) if continuous else
             (("right", (0.5, 0, 0)), ("left", (-0.5, 0, 0)), ("front", (0, 0.5, 0)), ("back", (0, -0.5, 0)),
              ("wait", None)))
    for action, vector in moves:
        item = b.node("DRLA_ActionNode", action_name=action, kind='WAIT' if vector is None else 'MOVE')
        if vector is not None:
            item.object, item.vector, item.amount = agent, vector, continuous
        b.link(item, action_set, "Actions")
    progress = b.node("DRLA_DistanceRewardNode", object_a=agent, object_b=goal, mode='PROGRESS', weight=1.0)
    cost = b.node("DRLA_StepCostNode", cost=0.01)
    reached = b.node("DRLA_WithinDistanceNode", object_a=agent, object_b=goal, distance=0.5, reward=1.0)
    bounds = b.node("DRLA_OutOfBoundsNode", object=agent, bounds='BOX', box_min=(-5, -5, -5),
                    box_max=(5, 5, 5), reward=-1.0)
    env = b.node("DRLA_EnvironmentNode", frames_per_step=1, max_steps=50, random_object_1=agent,
                 random_object_2=goal, random_min=(-3, -3, 0), random_max=(3, 3, 0))
    b.link(state, env, "State")
    b.link(action_set, env, "Actions")
    for node in (progress, cost):
        b.link(node, env, "Rewards")
    for node in (reached, bounds):
        b.link(node, env, "Done")
    return env


def build_transform_tree(scene, name: str = "Reach", total_steps: int = 6000) -> Any:
    """Move the cube ``Agent`` to the empty ``Goal`` (both start at random spots in [-3, 3]^2).

    State: the goal's location relative to the agent (3) and their distance (1). Actions:
    move +-X / +-Y by 0.5 and wait. Reward: progress towards the goal, -0.01 per step, +1 when
    within 0.5 (episode ends); leaving [-5, 5]^2 ends the episode with -1. At most 50 steps.
    """
    agent, goal = build_transform_scene(scene)
    b = _Builder(name)
    env = _reach_env(b, agent, goal)
    _agent(b, env, hidden=(64, 64), total_steps=total_steps, epsilon=(1.0, 0.05, 0.3),
           replay=(20000, 64, 500), evaluate=(1000, 5), learning_rate=1e-3, gamma=0.95, train_freq=4,
           gradient_steps=1, target_update_interval=250)
    return b.done()


#: The SAC Agent node's settings of the continuous Reach tree (all pinned, so the tree does not change when the
#: node's defaults do), its Replay Memory's (capacity, batch size, learning starts) and its Trainer's steps.
REACH_SAC = dict(learning_rate=3e-3, gamma=0.95, train_freq=1, gradient_steps=1, tau=0.02, init_temperature=0.2,
                 learn_temperature=True, keep_best=True)
REACH_SAC_REPLAY = (20000, 64, 200)
REACH_SAC_STEPS = 3000


def build_reach_sac_tree(scene, name: str = "Reach SAC", total_steps: int = REACH_SAC_STEPS, **sac) -> Any:
    """The Reach with continuous moves, learnt by SAC: the cube Agent goes to the empty Goal.

    As the Reach (``build_transform_tree``: the same sensors, rewards and ends) but two Move actions with
    Amount: each step the agent picks how far along X and along Y, from -0.5 to 0.5. A SAC Agent (two hidden
    layers of 64, a Replay Memory) learns it in a few thousand steps; ``sac`` overrides its node's settings.
    """
    agent, goal = build_transform_scene(scene)
    b = _Builder(name)
    env = _reach_env(b, agent, goal, continuous=True)
    prev = None
    for size in (64, 64):
        layer = b.node("DRLA_HiddenLayerNode", size=size, activation='RELU')
        if prev is not None:
            b.link(prev, layer, "Previous")
        prev = layer
    net = b.node("DRLA_NetworkNode")
    b.link(prev, net, "Layers")
    capacity, batch, starts = REACH_SAC_REPLAY
    replay = b.node("DRLA_ReplayMemoryNode", capacity=capacity, batch_size=batch, learning_starts=starts)
    sac_agent = b.node("DRLA_SACAgentNode", **{**REACH_SAC, **sac})
    b.link(net, sac_agent, "Network")
    b.link(replay, sac_agent, "Replay")
    trainer = b.node("DRLA_TrainerNode", total_steps=total_steps, seed=0, eval_interval=500, eval_episodes=10)
    b.link(env, trainer, "Environment")
    b.link(sac_agent, trainer, "Agent")
    export = b.node("DRLA_ExportJSONNode", filepath=f"//{name.lower().replace(' ', '_')}_model.json")
    b.link(trainer, export, "Model")
    return b.done()


# --------------------------------------------------------------------------- chase (two named agents)

def _chase_object(scene, name: str, size: float, color: tuple[float, float, float, float]) -> Any:
    ob = scene.objects.get(name)
    if ob is None:
        h = size / 2
        mesh = bpy.data.meshes.new(name)
        mesh.from_pydata([(x, y, z) for z in (-h, h) for y in (-h, h) for x in (-h, h)], [],
                         [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)])
        ob = bpy.data.objects.new(name, mesh)
        ob.color = color
        scene.collection.objects.link(ob)
    return ob


def _chaser_env(b: _Builder, me, other, step: float, away: bool, max_steps: int) -> Any:
    """One agent's environment in the chase: where the other is (relative, and how far), moves of
    ``step`` along X/Y or wait; rewarded for closing in (or, ``away``, for getting away)."""
    rel = b.node("DRLA_TransformSensorNode", object=other, relative_to=me, use_location=True, use_rotation=False,
                 scale=0.2)
    dist = b.node("DRLA_DistanceSensorNode", object_a=me, object_b=other, scale=0.2)
    state = b.node("DRLA_StateNode")
    b.link(rel, state, "Sensors")
    b.link(dist, state, "Sensors")
    action_set = b.node("DRLA_ActionSetNode")
    for action, vector in (("right", (step, 0, 0)), ("left", (-step, 0, 0)), ("front", (0, step, 0)),
                           ("back", (0, -step, 0)), ("wait", None)):
        item = b.node("DRLA_ActionNode", action_name=action, kind='WAIT' if vector is None else 'MOVE')
        if vector is not None:
            item.object, item.vector = me, vector
        b.link(item, action_set, "Actions")
    progress = b.node("DRLA_DistanceRewardNode", object_a=me, object_b=other, mode='PROGRESS',
                      weight=-1.0 if away else 1.0)
    caught = b.node("DRLA_WithinDistanceNode", object_a=me, object_b=other, distance=0.6,
                    reward=-1.0 if away else 1.0)
    bounds = b.node("DRLA_OutOfBoundsNode", object=me, bounds='BOX', box_min=(-6, -6, -5), box_max=(6, 6, 5),
                    reward=-1.0)
    env = b.node("DRLA_EnvironmentNode", frames_per_step=1, max_steps=max_steps, random_object_1=me,
                 random_min=(-4, -4, 0), random_max=(4, 4, 0), random_grid=0.5)
    b.link(state, env, "State")
    b.link(action_set, env, "Actions")
    b.link(progress, env, "Rewards")
    for node in (caught, bounds):
        b.link(node, env, "Done")
    return env


def build_chase_tree(scene, name: str = "Chase", total_steps: int = 20000, target_mode: str = 'FROZEN') -> Any:
    """godot-ai's case: the cube ``Hero`` learns to catch the cube ``Target``, which moves away.

    Hero: sees the target relative to itself and their distance; moves 0.5 along X/Y or waits;
    rewarded for closing in, +1 when within 0.6 (the episode ends), -1 for leaving [-6, 6]^2.
    Target: the mirror image, moving 0.25 a step and rewarded for getting away; Frozen by default
    (it acts from its own fixed network, always the same way), Train to let both learn. Both start
    at random spots in [-4, 4]^2; at most 60 steps.
    """
    hero = _chase_object(scene, "Hero", 0.5, (0.2, 0.5, 1.0, 1.0))
    target = _chase_object(scene, "Target", 0.4, (1.0, 0.4, 0.2, 1.0))
    b = _Builder(name)
    trainer = b.node("DRLA_MultiAgentTrainerNode", total_steps=total_steps, seed=0, eval_interval=0)
    for who, me, other, step, away, mode in (("hero", hero, target, 0.5, False, 'TRAIN'),
                                            ("target", target, hero, 0.25, True, target_mode)):
        env = _chaser_env(b, me, other, step, away, max_steps=60)
        agent = _dqn_agent(b, (64,), (1.0, 0.05, 0.3), (20000, 64, 500), learning_rate=1e-3, gamma=0.95,
                           train_freq=4, gradient_steps=1, target_update_interval=250, keep_best=False)
        _named_agent(b, trainer, env, agent, who, mode)
    return b.done()


# --------------------------------------------------------------------------- robot arm (learned IK)

#: The Learned IK Agent node's settings of the robot-arm trees (the benchmark recipe of ``bench/ik.py``).
ARM_IK = dict(method='SELF_SUPERVISED', train_steps=16000, train_seconds=120.0, refine_iters=3)


def build_arm_ik_tree(scene, arm: str = "Arm6", name: str | None = None, hidden=(128, 128), **ik) -> Any:
    """Learned IK for the armature ``arm`` of the robot-arm scene (``scenes/robot_arm``): its end
    effector reaches for the empty ``<arm>Target``.

    IK Agent (self-supervised through the forward kinematics, 16k steps, 3 refinement steps;
    a tanh network ``hidden``) -> Trainer (seed) -> Export JSON ``//<name>_ik_model.json``. No
    Environment: the network trains on the arm's own kinematics. After training, the panel's
    Learned IK toggle makes the arm follow its target live, and Bake keys the target's animation.
    """
    obs = scene.objects
    name = name or arm
    b = _Builder(name)
    prev = None
    for size in hidden:
        layer = b.node("DRLA_HiddenLayerNode", size=size, activation='TANH')
        if prev is not None:
            b.link(prev, layer, "Previous")
        prev = layer
    net = b.node("DRLA_NetworkNode", output_activation='LINEAR')
    if prev is not None:
        b.link(prev, net, "Layers")
    settings = {**ARM_IK, **ik}
    agent = b.node("DRLA_IKAgentNode", armature=obs[arm], target=obs[f"{arm}Target"], **settings)
    b.link(net, agent, "Network")
    trainer = b.node("DRLA_TrainerNode", total_steps=settings["train_steps"], seed=0, output_path="")
    b.link(agent, trainer, "Agent")
    export = b.node("DRLA_ExportJSONNode", filepath=f"//{name.lower()}_ik_model.json")
    b.link(trainer, export, "Model")
    return b.done()


def build_arm6_tree(scene, name: str = "Arm6", **ik) -> Any:
    """Learned IK for the 6-joint industrial arm: its tip follows the empty Arm6Target."""
    return build_arm_ik_tree(scene, "Arm6", name, **ik)


def build_arm3_tree(scene, name: str = "Arm3", **ik) -> Any:
    """Learned IK for the simple 3-bone arm: its tip follows the empty Arm3Target."""
    return build_arm_ik_tree(scene, "Arm3", name, **ik)


def build_robot_arm_trees(scene) -> list[Any]:
    """The "Arm6" and "Arm3" Learned IK trees of ``scenes/robot_arm/robot_arm.blend``."""
    return [build_arm6_tree(scene), build_arm3_tree(scene)]
