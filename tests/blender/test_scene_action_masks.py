"""Action masks on a real scene: the Action node's Condition (a property or flag, a distance) gives the env's
``info["action_mask"]`` (single env and scene copies), clear errors on the node, training and Play and Bake
choose among the enabled actions only."""

import numpy as np
import pytest

from test_sensors_actions import Tree, empty

LEFT, RIGHT, FIRE, GRAB, ARM = range(5)


def masked_tree(scene, **fire_condition):
    """Agent at x = 0, Goal at x = 3. Actions: left, right, fire (adds 1 to the Agent's score; enabled while its
    ``armed`` flag is on), grab (a wait enabled while the Agent is within 1.5 of the Goal), arm (sets the flag)."""
    agent = empty(scene, "Agent")
    agent["armed"] = 0
    agent["score"] = 0.0
    goal = empty(scene, "Goal", (3.0, 0.0, 0.0))
    t = Tree(scene, max_steps=20)
    t.sensor("DRLA_TransformSensorNode", object=agent, use_location=True, use_rotation=False)
    t.action("left", 'MOVE', object=agent, vector=(-1.0, 0.0, 0.0))
    t.action("right", 'MOVE', object=agent, vector=(1.0, 0.0, 0.0))
    fire = {"use_condition": True, "condition_kind": 'PROPERTY', "condition_property": "armed",
            "condition_compare": 'GE', "condition_value": 1.0, **fire_condition}
    t.action("fire", 'ADD_PROPERTY', object=agent, property="score", value=1.0, **fire)
    t.action("grab", 'WAIT', use_condition=True, condition_kind='DISTANCE', condition_object=agent,
             condition_target=goal, condition_compare='LT', condition_value=1.5)
    t.action("arm", 'SET_PROPERTY', object=agent, property="armed", value=1.0)
    return t, agent, goal


def test_conditions_give_the_mask_on_reset_and_every_step(empty_scene):
    from drla_ext.addon.scene.snapshot import restored_scene

    t, agent, _goal = masked_tree(empty_scene)
    with restored_scene(empty_scene):
        env = t.env()
        _, info = env.reset(seed=0)
        assert info["action_mask"].dtype == np.int8
        assert info["action_mask"].tolist() == [1, 1, 0, 0, 1]
        _, _, _, _, info = env.step(RIGHT)
        assert info["action_mask"].tolist() == [1, 1, 0, 0, 1]  # 2 from the goal
        _, _, _, _, info = env.step(RIGHT)
        assert info["action_mask"].tolist() == [1, 1, 0, 1, 1]  # 1 from the goal: grab enabled
        _, _, _, _, info = env.step(ARM)
        assert agent["armed"] == 1 and info["action_mask"].tolist() == [1, 1, 1, 1, 1]  # the flag: fire enabled
        _, info = env.reset()
        assert info["action_mask"].tolist() == [1, 1, 0, 0, 1]  # reset puts the flag and the agent back
        env.close()


def test_an_action_without_condition_gives_no_mask(empty_scene):
    t = Tree(empty_scene)
    agent = empty(empty_scene, "Agent")
    t.sensor("DRLA_TransformSensorNode", object=agent, use_location=True, use_rotation=False)
    t.action("wait", 'WAIT')
    t.action("right", 'MOVE', object=agent, vector=(1.0, 0.0, 0.0))
    env = t.env()
    assert env.mask is None and env.reset(seed=0)[1] == {}
    env.close()


def test_a_scene_property_flag_and_the_scene_copies(empty_scene):
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    empty_scene["door_open"] = 1
    t, _agent, _goal = masked_tree(empty_scene, condition_source='SCENE', condition_property="door_open")
    t.env_node.copies = 2
    spec = compiler.compile_tree(t.b.tree, empty_scene).env
    with restored_scene(empty_scene):
        venv = SceneVectorEnv(spec, empty_scene)
        try:
            _, infos = venv.reset(seed=0)
            assert infos["action_mask"].tolist() == [[1, 1, 1, 0, 1]] * 2
            _, _, _, _, infos = venv.step(np.array([RIGHT, LEFT]))
            _, _, _, _, infos = venv.step(np.array([RIGHT, LEFT]))
            # copy 0 is 1 from its goal, copy 1 is 5 from its own (each copy's objects are its own)
            assert infos["action_mask"].tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 1]]
            empty_scene["door_open"] = 0
            _, _, _, _, infos = venv.step(np.array([GRAB, GRAB]))
            assert infos["action_mask"].tolist() == [[1, 1, 0, 1, 1], [1, 1, 0, 0, 1]]
        finally:
            venv.close()


@pytest.mark.parametrize("change, message", [
    ({"condition_property": "nothere"}, "Condition: 'Agent' has no property 'nothere'"),
    ({"condition_property": " "}, "Condition: type the name of the property that enables the action"),
])
def test_a_broken_property_condition_is_reported_on_its_node(empty_scene, change, message):
    from drla_ext.addon.tree import compiler

    t, _agent, _goal = masked_tree(empty_scene, **change)
    with pytest.raises(compiler.CompileError) as err:
        compiler.compile_tree(t.b.tree, empty_scene)
    fire = next(n for n in t.b.tree.nodes if getattr(n, "action_name", "") == "fire")
    assert (fire.name, message) in err.value.errors


def test_a_broken_distance_condition_is_reported_on_its_node(empty_scene):
    from drla_ext.addon.tree import compiler

    t, agent, _goal = masked_tree(empty_scene)
    grab = next(n for n in t.b.tree.nodes if getattr(n, "action_name", "") == "grab")
    grab.condition_target = None
    with pytest.raises(compiler.CompileError) as err:
        compiler.compile_tree(t.b.tree, empty_scene)
    assert (grab.name, "Condition: choose an object for To") in err.value.errors
    grab.condition_target = agent
    with pytest.raises(compiler.CompileError) as err:
        compiler.compile_tree(t.b.tree, empty_scene)
    assert (grab.name, "Condition: the distance is from 'Agent' to itself; choose another To object") \
        in err.value.errors


def test_a_property_removed_while_running_stops_with_a_clear_error(empty_scene):
    from drla_ext.addon.scene.masks import ConditionError
    from drla_ext.addon.scene.snapshot import restored_scene

    t, agent, _goal = masked_tree(empty_scene)
    with restored_scene(empty_scene):
        env = t.env()
        env.reset(seed=0)
        del agent["armed"]
        fire = next(n for n in t.b.tree.nodes if getattr(n, "action_name", "") == "fire")
        with pytest.raises(ConditionError, match=f"Action node '{fire.name}': its condition reads "
                                                 r"\[\"armed\"\] of 'Agent', which is gone or not a number"):
            env.step(RIGHT)
        env.close()


def _greedy_model(env):
    """A DQN model whose Q-values prefer fire, then grab, then right: without the mask it would fire at once."""
    from drla_ext.drla_core.io.model_io import Model
    from drla_ext.drla_core.nn.mlp import MLP

    net = MLP(env.observation_space.size, [], 5)
    net.params[:] = 0.0
    net.biases[-1][...] = [0.0, 5.0, 10.0, 9.0, -5.0]
    return Model(network=net, observation_space=env.observation_space, action_space=env.action_space, kind="dqn",
                 meta={"action_mask": True})


def test_play_bake_and_drla_play_choose_among_the_enabled_actions(empty_scene):
    from drla_ext.addon.runs import model_store
    from drla_ext.addon.runs.bake import record_episode
    from drla_ext.addon.runs.play import PlaySession, evaluate_episodes
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler

    t, agent, _goal = masked_tree(empty_scene)
    reward = t.b.node("DRLA_PropertyChangeRewardNode", object=agent, property="score", increase=1.0)
    t.b.link(reward, t.env_node, "Rewards")  # a fire (never enabled) would score 1
    with restored_scene(empty_scene):
        env = t.env()
        model = _greedy_model(env)
        env.close()
    model_store.store_model(t.b.tree, model)
    rec = record_episode(empty_scene, t.b.tree, seed=0, max_steps=5)
    assert rec.actions == [RIGHT, RIGHT, GRAB, GRAB, GRAB]  # fire is never enabled; grab once near the goal
    play = PlaySession(empty_scene, t.b.tree, seed=0).start()
    play.run_steps(5)
    assert agent.location.x == pytest.approx(2.0) and agent["score"] == 0.0
    play.stop()
    assert agent.location.x == 0.0
    # what `drla play` runs: greedy episodes through evaluate (the model would fire at every step unmasked)
    compiled = compiler.compile_tree(t.b.tree, empty_scene)
    assert evaluate_episodes(empty_scene, compiled, model, 1, 0).endswith("mean return 0.00 over 1 episode")
    model.meta["action_mask"] = False
    unmasked = model.act(np.zeros(3, np.float32))
    assert unmasked == FIRE  # (the mask, not the model, keeps fire out)


def test_dqn_training_on_the_scene_never_takes_a_disabled_action(empty_scene):
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.drla_core.base.env import Env
    from drla_ext.drla_core.rl.dqn import DQNAgent, DQNConfig
    from drla_ext.drla_core.rl.train import TrainingRun

    class Audit(Env):
        def __init__(self, env):
            self.env, self.observation_space, self.action_space = env, env.observation_space, env.action_space
            self.mask, self.disabled, self.taken = None, 0, 0

        def reset(self, *, seed=None, options=None):
            obs, info = self.env.reset(seed=seed)
            self.mask = info["action_mask"]
            return obs, info

        def step(self, action):
            self.taken += 1
            self.disabled += int(self.mask[int(action)] == 0)
            out = self.env.step(action)
            self.mask = out[4]["action_mask"]
            return out

    t, _agent, _goal = masked_tree(empty_scene)
    with restored_scene(empty_scene):
        env = Audit(t.env())
        agent = DQNAgent(env.observation_space, env.action_space, DQNConfig(learning_starts=50, train_freq=10,
                                                                             gradient_steps=2, batch_size=16), seed=0)
        run = TrainingRun(env, agent, 300, seed=0).run()
        env.env.close()
    assert env.taken == 300 and env.disabled == 0
    assert run.to_model().meta["action_mask"] is True
    assert agent.replay_buffer.next_masks is not None and not agent.replay_buffer.next_masks[:300, FIRE].all()


def test_dqn_on_scene_copies_never_takes_a_disabled_action(empty_scene):
    from drla_ext.addon.scene.scene_vector_env import SceneVectorEnv
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree import compiler
    from drla_ext.drla_core.rl.dqn import DQNAgent, DQNConfig
    from drla_ext.drla_core.rl.vector_train import VectorTrainingRun

    class Audit(SceneVectorEnv):
        disabled = taken = 0

        def reset(self, *, seed=None, options=None):
            obs, infos = super().reset(seed=seed, options=options)
            self.masks = infos["action_mask"]
            return obs, infos

        def step(self, actions):
            self.taken += len(actions)
            self.disabled += int((self.masks[np.arange(len(actions)), actions] == 0).sum())
            out = super().step(actions)
            self.masks = out[4]["action_mask"]
            return out

    t, _agent, _goal = masked_tree(empty_scene)
    t.env_node.copies = 3
    spec = compiler.compile_tree(t.b.tree, empty_scene).env
    with restored_scene(empty_scene):
        venv = Audit(spec, empty_scene)
        try:
            agent = DQNAgent(venv.single_observation_space, venv.single_action_space,
                             DQNConfig(learning_starts=60, train_freq=12, gradient_steps=2, batch_size=16), seed=0)
            VectorTrainingRun(venv, agent, 300, seed=0).run()
        finally:
            venv.close()
    assert venv.taken >= 300 and venv.disabled == 0
    stored = agent.replay_buffer.next_masks[:len(agent.replay_buffer)]
    assert stored[:, GRAB].any() and not stored[:, GRAB].all()  # the distance condition changed during training
