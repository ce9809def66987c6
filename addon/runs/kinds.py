"""The agent kinds a tree can train, and what each can do: the only place that tells DQN from
Learned IK and evolution. The panel, the operators and the CLI ask a kind for a capability
(``can_play``, ``can_follow``, ``bake``), never for its name.

A kind is found from a compiled tree (``of``) or, cheaply while the panel draws, from the node
tree's agent node (``of_tree``: its class's ``agent_kind``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..tree.node_tree import linked_nodes
from ..words import count
from . import bake, ik, ik_follow, model_store, play


@dataclass(frozen=True)
class AgentKind:
    """What one agent kind does beyond the common ``TrainingJob``."""

    name: str
    label: str
    can_play: bool  # episodes to play live and to evaluate
    can_follow: bool  # a live follow mode (Learned IK)
    no_play_reason: str
    bake_label: str
    #: Scene settings (``scene.drla``) drawn under the Bake button: (property, label)
    bake_settings: tuple[tuple[str, str], ...]
    #: The live curve a run of this kind starts on ('' keeps the user's choice)
    curve: str
    trained_text: Callable[[Any], str]
    after_training: Callable[[Any], str]
    #: Whether ``drla train --workers`` (and the panel's Workers) runs it with worker processes: an off-policy
    #: learner's experience gathered there (DQN), or a population's episodes evaluated there (evolution)
    workers: bool
    #: A trained model tried in the scene, the result in words: ``(scene, compiled, model, n, seed, frames_dir)``
    #: (greedy episodes for DQN, random reachable targets for Learned IK); the CLI's ``play``
    evaluate: Callable[..., str]
    bake: Callable[[Any, Any, Any, int], str]
    bake_hint: Callable[[Any], str]
    #: The ``Model.kind`` its models are saved as ('' : the kind's name; evolution saves plain "mlp" networks)
    model_kind: str = ""
    #: Whether its run takes training callbacks and has a network that can grow (DQN): the Network node's
    #: Grow on Plateau, the Grow button, ``drla train --grow/--metrics/--tensorboard``
    grows: bool = False
    #: What its run's steps count (the progress bar's word): environment steps, or generations (evolution)
    unit: str = "step"
    #: Several named agents, each with its own model (one team file holds them all: ``drla_core.io.team_model``)
    team: bool = False
    #: The ``meta["agent"]`` its model files carry, when its ``model_kind`` is shared (PPO's, SAC's policies are "mlp")
    model_agent: str = ""

    def makes(self, model) -> bool:
        """Whether ``model`` (a loaded model file) is of the kind this agent kind trains."""
        if self.model_agent and (getattr(model, "meta", None) or {}).get("agent") != self.model_agent:
            return False
        return getattr(model, "kind", None) == (self.model_kind or self.name)


# --------------------------------------------------------------------------- DQN
def _dqn_trained_text(session) -> str:
    rate = session.steps / session.train_seconds if session.train_seconds > 0 else 0.0
    return (f"Trained {count(session.steps, 'step')}, {count(session.episodes, 'episode')} in "
            f"{session.train_seconds:.1f} s ({rate:.0f} steps/s)")


def _dqn_bake(scene, tree, s, steps: int) -> str:
    return bake.bake(scene, tree, max_steps=steps or s.bake_steps, frame_step=s.bake_frame_step).summary()


#: What a bake of greedy episodes reads from the scene settings (drawn under its button)
_EPISODE_BAKE = (("bake_steps", "Steps"), ("bake_frame_step", "Frames/Step"))

DQN = AgentKind(
    name="dqn", label="DQN", can_play=True, can_follow=False, no_play_reason="",
    bake_label="Bake to Keyframes", bake_settings=_EPISODE_BAKE,
    curve="", trained_text=_dqn_trained_text, after_training=lambda session: "", workers=True,
    evaluate=play.evaluate_episodes,
    bake=_dqn_bake, bake_hint=lambda scene: "", grows=True)


# --------------------------------------------------------------------------- SAC (continuous actions)
SAC = AgentKind(
    name="sac", label="SAC", can_play=True, can_follow=False, no_play_reason="",
    bake_label="Bake to Keyframes", bake_settings=_EPISODE_BAKE,
    curve="", trained_text=_dqn_trained_text, after_training=lambda session: "", workers=False,
    evaluate=play.evaluate_episodes, bake=_dqn_bake, bake_hint=lambda scene: "", model_kind="mlp",
    model_agent="sac")


# --------------------------------------------------------------------------- PPO (a set of actions or continuous)
PPO = AgentKind(
    name="ppo", label="PPO", can_play=True, can_follow=False, no_play_reason="",
    bake_label="Bake to Keyframes", bake_settings=_EPISODE_BAKE,
    curve="", trained_text=_dqn_trained_text, after_training=lambda session: "", workers=False,
    evaluate=play.evaluate_episodes, bake=_dqn_bake, bake_hint=lambda scene: "", model_kind="mlp",
    model_agent="ppo")


# --------------------------------------------------------------------------- Learned IK
def _ik_trained_text(session) -> str:
    acc = session.job.accuracy
    return (f"Trained {session.steps} IK steps in {session.train_seconds:.1f} s: median error "
            f"{acc['net_median_mm']:.1f} mm (network), {acc['refined_median_mm']:.3f} mm refined, "
            f"{acc['refined_under_1mm']:.0%} under 1 mm")


def _ik_after_training(session) -> str:
    """Follow mode on when the node asks for it."""
    cfg = session.compiled.agent.config
    if not cfg.get("follow"):
        return ""
    with contextlib.suppress(Exception):
        ob, target = ik.compiled_armature(session.compiled)
        ik_follow.enable_follow(ob, target, ik.solver_for(ob, model_store.load_stored_model(session.tree)),
                                cfg["refine_iters"])
        return "; Learned IK follow is on"
    return ""


def _ik_bake(scene, tree, s, steps: int) -> str:
    """Key the joints so the tip follows the target's animation over the scene's frame range."""
    compiled, ob, target, solver = ik.parts(scene, tree)
    kept = ob.animation_data.action.name if ob.animation_data and ob.animation_data.action else ""
    frames = bake.bake_target(ob, target, solver, scene.frame_start, scene.frame_end,
                              compiled.agent.config["refine_iters"], scene=scene, tree_name=tree.name)
    return (f"Baked {frames} frames ({scene.frame_start}-{scene.frame_end}) of '{target.name}' into "
            f"'{ob.name}' joint keyframes (new action '{ob.animation_data.action.name}'"
            + (f"; previous action '{kept}' kept)" if kept else ")"))


IK = AgentKind(
    name="ik", label="Learned IK", can_play=False, can_follow=True,
    no_play_reason="A Learned IK tree has no episodes to play: use the Learned IK toggle to follow the target",
    bake_label="Bake Target Animation", bake_settings=(), curve='LOSS', trained_text=_ik_trained_text, workers=False,
    after_training=_ik_after_training, evaluate=ik.evaluate_targets, bake=_ik_bake,
    bake_hint=lambda scene: f"Frames {scene.frame_start}-{scene.frame_end} (the scene's frame range)")


# --------------------------------------------------------------------------- several named agents
def _team_trained_text(session) -> str:
    job = session.job
    names = ", ".join(f"{n} ({job.slots[n].mode})" for n in job.slots)
    return (f"Trained {count(session.steps, 'step')}, {count(session.episodes, 'episode')} of {names} in "
            f"{session.train_seconds:.1f} s")


TEAM = AgentKind(
    name="team", label="Multi-agent", can_play=True, can_follow=False, no_play_reason="",
    bake_label="Bake to Keyframes", bake_settings=_EPISODE_BAKE, curve="",
    trained_text=_team_trained_text, after_training=lambda session: "", workers=False, evaluate=play.evaluate_team,
    bake=_dqn_bake, bake_hint=lambda scene: "", model_kind="dqn", team=True)


# --------------------------------------------------------------------------- evolution
def _evolution_trained_text(session) -> str:
    job = session.job
    return (f"Evolved {count(session.steps, 'generation')} ({count(job.env_steps, 'step')}) in "
            f"{session.train_seconds:.1f} s: champion fitness {job.champion_fitness:.4g} "
            f"(generation {job.champion_generation + 1})")


EVOLUTION = AgentKind(
    name="evolution", label="Evolution", can_play=True, can_follow=False, no_play_reason="",
    bake_label="Bake Champion to Keyframes", bake_settings=(("bake_steps", "Steps"),
                                                            ("bake_frame_step", "Frames/Step")),
    curve='RETURN', trained_text=_evolution_trained_text, after_training=lambda session: "", workers=True,
    evaluate=play.evaluate_episodes, bake=_dqn_bake, bake_hint=lambda scene: "", model_kind="mlp",
    unit="generation")


# --------------------------------------------------------------------------- co-evolution (two named agents)
def _coevolution_trained_text(session) -> str:
    job = session.job
    sides = "; ".join(f"{n} champion {job.champion_fitness[n]:.4g} against the other's, "
                      f"{job.history[f'{n}_vs_first'][-1]:.4g} against its first" for n in job.names
                      if job.history[f"{n}_vs_first"])
    return (f"Co-evolved {count(session.steps, 'generation')} ({count(job.env_steps, 'step')}) in "
            f"{session.train_seconds:.1f} s" + (f": {sides}" if sides else ""))


COEVOLUTION = AgentKind(
    name="coevolution", label="Co-evolution", can_play=True, can_follow=False, no_play_reason="",
    bake_label="Bake to Keyframes", bake_settings=_EPISODE_BAKE, curve='RETURN',
    trained_text=_coevolution_trained_text,
    after_training=lambda session: "", workers=False, evaluate=play.evaluate_team, bake=_dqn_bake,
    bake_hint=lambda scene: "", model_kind="mlp", unit="generation", team=True)


#: Every agent kind by ``AgentSpec.kind`` (the agent node's ``agent_kind``).
KINDS: dict[str, AgentKind] = {kind.name: kind for kind in (DQN, PPO, SAC, IK, TEAM, EVOLUTION, COEVOLUTION)}


def of(compiled) -> AgentKind:
    """The kind of a compiled tree's agent (DQN for a tree without one: it can still be played)."""
    return KINDS[compiled.agent.kind] if compiled.agent is not None else DQN


def agent_node(tree):
    """The agent node a tree trains: the one linked into its Trainer, else the only agent node."""
    if tree is None:
        return None
    for node in tree.nodes:
        if getattr(node, "role", "") == "trainer":
            if getattr(node, "team", False):  # a Multi-Agent Trainer stands for its agents
                return node
            sock = node.inputs["Agent"]
            linked = [lk.from_node for lk in sock.links if not lk.is_muted]
            return linked[0] if linked else None
    agents = [n for n in tree.nodes if getattr(n, "role", "") == "agent"]
    alone = [n for n in agents if not getattr(n, "needs_environment", True)]
    if alone and not any(getattr(n, "role", "") == "environment" for n in tree.nodes):
        return alone[0]
    with_env = [n for n in agents if getattr(n, "needs_environment", True)]
    return with_env[0] if with_env else None


def team_names(tree) -> list[str]:
    """The names of a multi-agent tree's Named Agents linked into its Multi-Agent Trainer, in order ([] for a
    tree of one agent); read from the nodes, without compiling."""
    node = agent_node(tree)
    if node is None or not getattr(node, "team", False):
        return []
    return [m.agent_name.strip() for m in linked_nodes(node.inputs["Agents"]) if hasattr(m, "agent_name")]


def export_what(tree) -> str:
    """What Export writes for ``tree``, in words (a button's tooltip or label can say it): every agent of a
    multi-agent tree in one team file, else its model."""
    names = team_names(tree)
    if not names:
        return "its model, one JSON file"
    return f"all {len(names)} agents ({', '.join(names)}) in one team file" if len(names) > 1 else \
        f"agent {names[0]} in a team file"


def missing_models_text(tree) -> str:
    """For a multi-agent tree, which agents have no stored model ('' when all have one, or one agent)."""
    names = team_names(tree)
    missing = [name for name in names if model_store.find_text(tree, name) is None]
    if not missing:
        return ""
    return (f"No trained model for agent{'s' if len(missing) > 1 else ''} {', '.join(missing)} of "
            f"'{tree.name}' yet: train the tree or import a team file")


def of_tree(tree) -> AgentKind:
    """The kind of ``tree``'s agent without compiling it (what the panel asks while it draws)."""
    node = agent_node(tree)
    return KINDS.get(getattr(node, "agent_kind", ""), DQN)


def follow_state(tree) -> tuple[bool, Any]:
    """``(follow on?, armature or None)`` for a tree whose kind can follow (Learned IK)."""
    if not of_tree(tree).can_follow:
        return False, None
    ob = getattr(agent_node(tree), "armature", None)
    return (ob is not None and ik_follow.follow_active(ob)), ob


def toggle_follow(scene, tree) -> str:
    """Turn Learned IK follow on (reaching for the target at once) or off; returns what happened."""
    on, ob = follow_state(tree)
    if on:
        ik_follow.disable_follow(ob)
        return f"Learned IK follow off for '{ob.name}'"
    compiled, ob, target, solver = ik.parts(scene, tree)
    ik_follow.enable_follow(ob, target, solver, compiled.agent.config["refine_iters"])
    ik_follow.follow_now(scene)
    return f"Learned IK: '{ob.name}' follows '{target.name}'"
