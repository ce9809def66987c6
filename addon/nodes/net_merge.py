from bpy.props import EnumProperty, IntProperty, StringProperty
import bpy

from ..tree.node_tree import DRLANode, draw_prop

#: Model file slots on a Merge node (the first ``model_count`` are used).
MAX_MODELS = 8

MERGE_MODES = [
    ('AUTO', "Auto", "Average when the networks share an ancestor and a shape, else distil"),
    ('AVERAGE', "Average", "The mean of the weights: networks of the same shape trained from the same initial "
                           "weights only (refused otherwise, with the reason)"),
    ('DISTILL', "Distill", "A new network trained to act as each model does on states recorded by playing it "
                           "(in its own tree's scene when this file has it, else in this tree's scene, or in its "
                           "built-in environment)"),
]


def _model_slot(i: int):
    return StringProperty(name=f"Model {i}", subtype='FILE_PATH', default="",
                          description="A DRLA model file (.json) to merge")


class DRLA_MergeNode(DRLANode, bpy.types.Node):
    """Merge two or more trained networks into one model file: weight averaging for relatives (same
    shape, same initial weights), distillation for any networks with the same observations and
    actions. Press Merge: the file is written to Output; Import JSON or a Trainer's Model file uses it.
    Triggers: merge average distill distillation combine networks ensemble"""

    bl_idname = "DRLA_MergeNode"
    bl_label = "Merge Networks"
    menu_order = 260  # its place in its Add submenu (lower first)
    drla_category = "network"
    menu_category = "Network"
    bl_width_default = 260

    model_count: IntProperty(name="Models", default=2, min=2, max=MAX_MODELS,
                             description="How many model files are merged")
    model_1: _model_slot(1)
    model_2: _model_slot(2)
    model_3: _model_slot(3)
    model_4: _model_slot(4)
    model_5: _model_slot(5)
    model_6: _model_slot(6)
    model_7: _model_slot(7)
    model_8: _model_slot(8)
    mode: EnumProperty(name="Mode", items=MERGE_MODES, default='AUTO')
    states: IntProperty(name="States", default=2000, min=10, max=1_000_000, soft_max=50_000,
                        description="Distill: states recorded per model by playing it")
    epochs: IntProperty(name="Epochs", default=60, min=1, max=10_000, soft_max=500,
                        description="Distill: passes over the recorded states")
    seed: IntProperty(name="Seed", default=0, min=0)
    output_path: StringProperty(name="Output", subtype='FILE_PATH', default="//merged_model.json",
                                description="The merged model file to write")
    result: StringProperty(name="Result", default="", description="What the last Merge did")

    def model_paths(self) -> list[str]:
        """The model slots in use, as typed (relative '//' paths unresolved)."""
        return [getattr(self, f"model_{i}") for i in range(1, self.model_count + 1)]

    def draw(self, layout) -> None:
        col = layout.column(align=True)
        for i in range(1, self.model_count + 1):
            col.prop(self, f"model_{i}", text="")
        row = layout.row(align=True)
        for delta, icon in ((1, 'ADD'), (-1, 'REMOVE')):
            op = row.operator("drla.merge_slots", text="", icon=icon)
            op.tree, op.node, op.delta = self.id_data.name, self.name, delta
        row.label(text=f"{self.model_count} models")
        draw_prop(layout, self, "mode")
        if self.mode != 'AVERAGE':
            sub = layout.column(align=True)
            sub.prop(self, "states")
            sub.prop(self, "epochs")
            sub.prop(self, "seed")
        draw_prop(layout, self, "output_path")
        op = layout.operator("drla.merge_models", icon='AUTOMERGE_ON')
        op.tree, op.node = self.id_data.name, self.name
        if self.result:
            for i, line in enumerate(self.result.splitlines()):
                layout.label(text=line, icon='CHECKMARK' if i == 0 else 'BLANK1')
