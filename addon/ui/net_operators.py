"""The buttons of issue 15's network tools: Grow (while training), the Merge node's Merge, the Expert
Switcher's Check and Train Selector, the slots of both nodes, and the Expert Library's Add / Remove.

Every operator runs headless as in the GUI; a failure is reported and its reason shown (on the node
for a node's button, on the panel otherwise)."""

from __future__ import annotations

import contextlib
import os
import tempfile

import bpy
from bpy.props import EnumProperty, IntProperty, StringProperty

from ...drla_core.nets.expert_library import ExpertLibrary, LibraryError
from ...drla_core.io.model_io import ModelFormatError, save_model
from ..properties import settings
from ..runs import merge, model_store, sessions, switcher
from ..words import describe_error
from .operators import redraw_ui


def _training_session(context):
    """The scene's training session (running or stopped) of the chosen tree, or None."""
    scene = context.scene
    sess = sessions.get(scene) if scene is not None and hasattr(scene, "drla") else None
    tree = settings(scene).tree if sess is not None else None
    if sess is None or sess.kind != "TRAIN" or tree is None or sess.tree_name != tree.name:
        return None
    return sess


class DRLA_OT_grow(bpy.types.Operator):
    """Grow the network now, between two training steps: it computes the same function, the optimiser keeps
    its state, and training carries on with more units (Widen) or one more layer (Deepen)"""

    bl_idname = "drla.grow"
    bl_label = "Grow Network"
    bl_options = {'REGISTER'}

    how: EnumProperty(name="How", items=[('WIDEN', "Widen", "Every hidden layer gets twice its units"),
                                         ('DEEPEN', "Deepen", "An identity layer after the last hidden layer")],
                      default='WIDEN', options={'SKIP_SAVE'})

    @classmethod
    def poll(cls, context):
        sess = _training_session(context)
        reason = "Grow works while a run trains: press Train" if sess is None else sess.why_not_grow()
        if reason:
            cls.poll_message_set(reason)
            return False
        return True

    def execute(self, context):
        sess = _training_session(context)
        try:
            if sess is None:
                raise sessions.SessionError("Nothing is training")
            sess.grow(self.how.lower())
        except sessions.SessionError as exc:
            self.report({'ERROR'}, str(exc))
            settings(context.scene).error = str(exc)
            return {'CANCELLED'}
        self.report({'INFO'}, sess.message)
        redraw_ui()
        return {'FINISHED'}


class _NodeButton:
    """An operator acting on one node: ``tree`` and ``node`` name it (set by the node's draw)."""

    tree: StringProperty(options={'HIDDEN', 'SKIP_SAVE'})
    node: StringProperty(options={'HIDDEN', 'SKIP_SAVE'})
    node_idname = ""

    def _node(self):
        tree = bpy.data.node_groups.get(self.tree)
        node = tree.nodes.get(self.node) if tree is not None else None
        if node is None or node.bl_idname != self.node_idname:
            raise ValueError(f"no such node '{self.node}' in tree '{self.tree}'")
        return node

    def _busy(self, context) -> str:
        running = sessions.active(context.scene) if context.scene is not None else None
        return "DRLA is running in this scene: stop it first" if running is not None else ""

    def _run(self, context, work, busy_error: type[Exception]) -> set[str]:
        """``work(node)`` -> the message to report; refused while DRLA runs in the scene (``busy_error``); any
        failure is said on the node and in the status bar, never as a traceback."""
        node = None
        try:
            node = self._node()
            busy = self._busy(context)
            if busy:
                raise busy_error(busy)
            text = work(node)
        except Exception as exc:
            return self._fail(node, exc)
        self.report({'INFO'}, text)
        redraw_ui()
        return {'FINISHED'}

    def _fail(self, node, exc: Exception) -> set[str]:
        message = describe_error(exc)
        if node is not None:
            node.drla_error = message
        self.report({'ERROR'}, message)
        redraw_ui()
        return {'CANCELLED'}


class _Slots(_NodeButton):
    delta: IntProperty(default=1, options={'HIDDEN', 'SKIP_SAVE'})
    count_prop = ""
    slot_prop = ""

    def execute(self, context):
        try:
            node = self._node()
        except ValueError as exc:
            return self._fail(None, exc)
        prop = node.bl_rna.properties[self.count_prop]
        count = getattr(node, self.count_prop)
        new = min(max(count + self.delta, prop.hard_min), prop.hard_max)
        if new < count:
            setattr(node, f"{self.slot_prop}_{count}", "")  # a removed slot forgets its file
        setattr(node, self.count_prop, new)
        return {'FINISHED'}


class DRLA_OT_merge_slots(_Slots, bpy.types.Operator):
    """Add or remove a model file slot"""

    bl_idname = "drla.merge_slots"
    bl_label = "Model Slots"
    bl_options = {'REGISTER', 'UNDO', 'INTERNAL'}
    node_idname = "DRLA_MergeNode"
    count_prop, slot_prop = "model_count", "model"


class DRLA_OT_switcher_slots(_Slots, bpy.types.Operator):
    """Add or remove an expert slot"""

    bl_idname = "drla.switcher_slots"
    bl_label = "Expert Slots"
    bl_options = {'REGISTER', 'UNDO', 'INTERNAL'}
    node_idname = "DRLA_ExpertSwitcherNode"
    count_prop, slot_prop = "expert_count", "expert"


class DRLA_OT_merge_models(_NodeButton, bpy.types.Operator):
    """Merge the model files into Output: average (relatives) or distil (states recorded by playing each model
    where it was trained); the scene is restored"""

    bl_idname = "drla.merge_models"
    bl_label = "Merge"
    bl_options = {'REGISTER'}
    node_idname = "DRLA_MergeNode"

    def execute(self, context):
        return self._run(context, lambda node: merge.merge(node, context.scene).splitlines()[0], merge.MergeFailure)


class DRLA_OT_switcher_check(_NodeButton, bpy.types.Operator):
    """Load the experts, check they read the same observations and act in the same actions as this tree"""

    bl_idname = "drla.switcher_check"
    bl_label = "Check Experts"
    bl_options = {'REGISTER'}
    node_idname = "DRLA_ExpertSwitcherNode"

    def execute(self, context):
        return self._run(context, lambda node: switcher.check(node, context.scene, node.id_data),
                         switcher.SwitcherError)


class DRLA_OT_switcher_train_selector(_NodeButton, bpy.types.Operator):
    """Train the selector: a small DQN whose actions are the experts, in this tree's scene (restored after);
    writes the Selector file"""

    bl_idname = "drla.switcher_train_selector"
    bl_label = "Train Selector"
    bl_options = {'REGISTER'}
    node_idname = "DRLA_ExpertSwitcherNode"

    def execute(self, context):
        return self._run(context, lambda node: switcher.train_selector_for(node, context.scene, node.id_data),
                         switcher.SwitcherError)


# --------------------------------------------------------------------------- expert library
def library(context) -> ExpertLibrary:
    scene = context.scene
    folder = getattr(scene, "drla_expert_library", "") or switcher.DEFAULT_LIBRARY
    from ..preferences import resolve_output_path

    return ExpertLibrary(resolve_output_path(folder))


def _score(scene) -> float | None:
    """The chosen tree's last evaluation's mean return (or its last episodes' mean) when this Blender trained it."""
    sess = sessions.get(scene)
    history = getattr(sess, "history", None) if sess is not None and sess.kind == "TRAIN" else None
    evals = getattr(history, "evals", None)
    if evals:
        return float(evals[-1][1])
    returns = getattr(history, "episode_returns", None)
    if returns:
        tail = list(returns)[-20:]
        return float(sum(tail) / len(tail))
    return None


class DRLA_OT_expert_add(bpy.types.Operator):
    """Copy the chosen tree's trained model into the Expert Library (name, task, spaces, score, scene)"""

    bl_idname = "drla.expert_add"
    bl_label = "Add Trained Model"
    bl_options = {'REGISTER'}

    name: StringProperty(name="Name", default="", options={'SKIP_SAVE'},
                         description="The expert's name (default: the tree's)")

    @classmethod
    def poll(cls, context):
        tree = settings(context.scene).tree if context.scene is not None and hasattr(context.scene, "drla") else None
        if tree is None or not model_store.has_model(tree):
            cls.poll_message_set("No trained model to add: train the tree or import a model")
            return False
        return True

    def execute(self, context):
        scene = context.scene
        tree = settings(scene).tree
        name = (self.name or tree.name).replace(" ", "_")
        try:
            model = model_store.load_stored_model(tree)
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, f"{name}.json")
                save_model(path, model)
                entry = library(context).add(path, name=name, task=tree.name, score=_score(scene),
                                             scene=os.path.basename(bpy.data.filepath) or None, replace=True)
        except (LibraryError, ModelFormatError, OSError) as exc:
            self.report({'ERROR'}, str(exc))
            settings(scene).error = str(exc)
            return {'CANCELLED'}
        self.report({'INFO'}, f"Added expert {entry['name']} to {library(context).folder}")
        redraw_ui()
        return {'FINISHED'}


class DRLA_OT_expert_remove(bpy.types.Operator):
    """Remove this expert from the library (its model file too)"""

    bl_idname = "drla.expert_remove"
    bl_label = "Remove Expert"
    bl_options = {'REGISTER'}

    name: StringProperty(options={'HIDDEN', 'SKIP_SAVE'})

    def execute(self, context):
        try:
            library(context).remove(self.name)
        except LibraryError as exc:
            self.report({'ERROR'}, str(exc))
            return {'CANCELLED'}
        redraw_ui()
        return {'FINISHED'}


classes = (DRLA_OT_grow, DRLA_OT_merge_slots, DRLA_OT_switcher_slots, DRLA_OT_merge_models, DRLA_OT_switcher_check,
           DRLA_OT_switcher_train_selector, DRLA_OT_expert_add, DRLA_OT_expert_remove)


def register() -> None:
    bpy.types.Scene.drla_expert_library = StringProperty(
        name="Expert Library", subtype='DIR_PATH', default=switcher.DEFAULT_LIBRARY,
        description="The expert library folder (a folder of model files and an index.json; drla experts list "
                    "reads the same)")


def unregister() -> None:
    with contextlib.suppress(AttributeError):
        del bpy.types.Scene.drla_expert_library
