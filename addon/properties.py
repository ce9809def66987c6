"""DRLA scene settings: ONE PointerProperty, ``Scene.drla``, holding every per-scene setting.

What the panel shows about a run in progress (progress, the job's figures, the last error) is
mirrored here by ``runs.train`` so it survives redraws and is visible to tests; the live run itself
(network, replay buffer) is Python state in ``runs``.
"""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, FloatProperty, IntProperty, PointerProperty, StringProperty

TREE_IDNAME = "DRLA_NodeTree"

CURVES = (
    ('RETURN', "Return", "Episode return (sum of rewards per episode) and its moving average"),
    ('LOSS', "Loss", "Training loss (TD error) per update"),
    ('EPSILON', "Epsilon", "Exploration rate: the share of random actions"),
    ('METRIC', "Task", "The task's own success rate (e.g. hit rate), per episode"),
)


def _is_rl_tree(_self, tree) -> bool:
    return getattr(tree, "bl_idname", "") == TREE_IDNAME


class DRLA_PG_scene_settings(bpy.types.PropertyGroup):
    """Per-scene DRLA settings and the mirror of the current run's progress."""

    tree: PointerProperty(
        name="RL Tree", type=bpy.types.NodeTree, poll=_is_rl_tree,
        description="The RL node tree to train, play, export and bake",
    )
    total_steps: IntProperty(
        name="Steps", default=0, min=0, soft_max=1_000_000,
        description="Environment steps to train for. 0 uses the tree's own setting",
    )
    workers: IntProperty(
        name="Workers", default=0, min=0, soft_max=16, max=256,
        description="Background Blender processes that gather experience (DQN) or evaluate the population "
                    "(Evolution) on a copy of this file while Blender stays responsive (0: train in this Blender)",
    )
    output_dir: StringProperty(
        name="Output Folder", subtype='DIR_PATH', default="",
        description="Checkpoints and the report picture go here. Empty uses the preferences' folder",
    )
    curve: EnumProperty(name="Curve", items=CURVES, default='RETURN',
                        description="Which learning curve the panel shows")
    play_fps: IntProperty(name="Play Speed", default=12, min=1, soft_max=120, subtype='NONE',
                          description="Agent steps per second while playing in the viewport")
    bake_steps: IntProperty(name="Bake Steps", default=0, min=0,
                            description="Steps to record. 0 records one whole episode")
    bake_frame_step: IntProperty(name="Frames per Step", default=1, min=1, soft_max=10,
                                 description="Frames between two recorded agent steps")

    # --- mirror of the current/last run (written by runs.train, drawn by ui.panels) ---
    error: StringProperty(name="Error", default="", description="The last error; cleared by the next run")
    message: StringProperty(name="Message", default="", description="The last run's outcome")
    progress: FloatProperty(name="Progress", default=0.0, min=0.0, max=1.0, subtype='FACTOR')
    steps_done: IntProperty(name="Steps Done", default=0, min=0)
    steps_total: IntProperty(name="Steps Total", default=0, min=0)
    episodes: IntProperty(name="Episodes", default=0, min=0)
    status: StringProperty(name="Status", default="",
                           description="The run's own figures, one 'label<TAB>value' per line (episodes, "
                                       "epsilon, return; a Learned IK run's tip error)")
    seconds_left: FloatProperty(name="Time Left", default=0.0, subtype='TIME_ABSOLUTE', unit='TIME_ABSOLUTE')
    report_path: StringProperty(name="Report", default="", subtype='FILE_PATH',
                                description="The last run's report picture")


def settings(scene) -> DRLA_PG_scene_settings:
    """``scene.drla``, typed."""
    return scene.drla


classes = (DRLA_PG_scene_settings,)


@bpy.app.handlers.persistent
def drop_legacy_copies(_path=None) -> None:
    """Forget the stale copies of DRLA's settings in a file saved by Blender 4.5 or older, opened in 5.0+.

    Up to 4.5 a registered property is stored as the ID property of its name; 5.0 stores it apart and,
    reading an older file, keeps the old one as a user custom property too (it cannot tell which
    were registered). DRLA knows its own: ``Scene["drla"]`` and its nodes' settings; the values live
    on in the registered properties.
    """
    if bpy.data.version >= (5, 0, 0):
        return  # the file is from 5.0 or newer
    for scene in bpy.data.scenes:
        if not hasattr(scene, "bl_system_properties_get"):
            return  # this Blender (4.5) keeps both kinds in one place: nothing is a copy
        if hasattr(scene.get("drla"), "to_dict"):  # the old group; a user's own "drla" value stays
            del scene["drla"]
    for tree in bpy.data.node_groups:
        if tree.bl_idname != TREE_IDNAME:
            continue
        for node in tree.nodes:
            registered = {p.identifier for p in node.bl_rna.properties if p.is_runtime}
            for key in [k for k in node.keys() if k in registered]:
                del node[key]


def register() -> None:
    bpy.types.Scene.drla = PointerProperty(type=DRLA_PG_scene_settings, name="DRLA")
    if drop_legacy_copies not in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.append(drop_legacy_copies)


def unregister() -> None:
    if drop_legacy_copies in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.remove(drop_legacy_copies)
    if hasattr(bpy.types.Scene, "drla"):
        del bpy.types.Scene.drla
