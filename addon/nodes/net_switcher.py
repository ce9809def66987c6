from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty
import bpy

from ..tree.node_tree import DRLANode, draw_prop
from ._common import object_pointer

#: Expert slots on a switcher (the first ``expert_count`` are used).
MAX_EXPERTS = 6

RULES = [
    ('PROPERTY', "Property", "An object's property (custom or any number): above Threshold -> the Above expert, "
                             "else the Below expert; or, with Value Is Expert, the value picks the expert (1, 2, ...)"),
    ('DISTANCE', "Distance", "The distance between two objects: above Threshold -> the Above expert, else Below"),
    ('OBSERVATION', "Observation", "One value of the agent's observation: above Threshold -> Above, else Below"),
    ('LEARNED', "Learned", "A small selector network trained with DQN whose actions are the experts "
                           "(Train Selector)"),
]


def _expert_slot(i: int):
    return StringProperty(name=f"Expert {i}", default="",
                          description="A model file (.json), or the name of an expert in the Expert Library folder")


class DRLA_ExpertSwitcherNode(DRLANode, bpy.types.Node):
    """Several trained experts, one acting at each step, chosen by a rule read from the scene (an
    object's property, a distance, an observation value) or by a learned selector (DQN over the
    experts). Every expert must read the tree's observations and choose among its actions. With
    Use for Play on, the sidebar's Play runs the switcher in the scene instead of the trained model.
    Triggers: expert switcher experts library selector mixture choose policy"""

    bl_idname = "DRLA_ExpertSwitcherNode"
    bl_label = "Expert Switcher"
    menu_order = 270  # its place in its Add submenu (lower first)
    drla_category = "network"
    menu_category = "Network"
    bl_width_default = 260

    expert_count: IntProperty(name="Experts", default=2, min=1, max=MAX_EXPERTS)
    expert_1: _expert_slot(1)
    expert_2: _expert_slot(2)
    expert_3: _expert_slot(3)
    expert_4: _expert_slot(4)
    expert_5: _expert_slot(5)
    expert_6: _expert_slot(6)
    library: StringProperty(name="Library", subtype='DIR_PATH', default="",
                            description="The expert library folder for names (empty: the sidebar's Expert Library)")
    rule: EnumProperty(name="Rule", items=RULES, default='PROPERTY')
    rule_object: object_pointer("Object", "The object whose property (or distance) chooses the expert")
    rule_object_b: object_pointer("To", "Distance: the other object")
    rule_property: StringProperty(name="Property", default="",
                                  description="A custom property name, or an RNA path such as location.x")
    value_is_expert: BoolProperty(name="Value Is Expert", default=False,
                                  description="The property's value, rounded, is the expert's number (1, 2, ...)")
    obs_index: IntProperty(name="Observation Index", default=0, min=0,
                           description="Observation: which value of the observation is compared")
    threshold: FloatProperty(name="Threshold", default=0.0)
    above: IntProperty(name="Above", default=2, min=1, max=MAX_EXPERTS, description="Expert when above Threshold")
    below: IntProperty(name="Below", default=1, min=1, max=MAX_EXPERTS, description="Expert when not above")
    selector_path: StringProperty(name="Selector", subtype='FILE_PATH', default="//selector.json",
                                  description="Learned: the selector model file (written by Train Selector)")
    selector_steps: IntProperty(name="Selector Steps", default=5000, min=100, max=10_000_000, soft_max=200_000,
                                description="Learned: training steps of the selector")
    use_for_play: BoolProperty(name="Use for Play", default=True,
                               description="The sidebar's Play runs this switcher instead of the trained model")
    result: StringProperty(name="Result", default="", description="What the last check or training said")

    def expert_refs(self) -> list[str]:
        """The expert slots in use, as typed."""
        return [getattr(self, f"expert_{i}") for i in range(1, self.expert_count + 1)]

    def draw(self, layout) -> None:
        col = layout.column(align=True)
        for i in range(1, self.expert_count + 1):
            col.prop(self, f"expert_{i}", text=f"{i}")
        row = layout.row(align=True)
        for delta, icon in ((1, 'ADD'), (-1, 'REMOVE')):
            op = row.operator("drla.switcher_slots", text="", icon=icon)
            op.tree, op.node, op.delta = self.id_data.name, self.name, delta
        op = row.operator("drla.switcher_check", text="Check", icon='CHECKMARK')
        op.tree, op.node = self.id_data.name, self.name
        draw_prop(layout, self, "library")
        draw_prop(layout, self, "rule")
        col = layout.column(align=True)
        if self.rule in {'PROPERTY', 'DISTANCE'}:
            draw_prop(col, self, "rule_object")
        if self.rule == 'PROPERTY':
            draw_prop(col, self, "rule_property")
            col.prop(self, "value_is_expert")
        elif self.rule == 'DISTANCE':
            draw_prop(col, self, "rule_object_b")
        elif self.rule == 'OBSERVATION':
            col.prop(self, "obs_index")
        if self.rule == 'LEARNED':
            draw_prop(col, self, "selector_path")
            col.prop(self, "selector_steps")
            op = col.operator("drla.switcher_train_selector", icon='PLAY')
            op.tree, op.node = self.id_data.name, self.name
        elif not (self.rule == 'PROPERTY' and self.value_is_expert):
            col.prop(self, "threshold")
            row = col.row(align=True)
            row.prop(self, "above")
            row.prop(self, "below")
        layout.prop(self, "use_for_play")
        if self.result:
            for i, line in enumerate(self.result.splitlines()):
                layout.label(text=line, icon='INFO' if i == 0 else 'BLANK1')

    def rule_data(self) -> dict:
        """The rule as plain data (object names, never pointers): what ``runs.switcher`` builds the rule from."""
        return {"rule": self.rule.lower(), "object": self.rule_object.name if self.rule_object else "",
                "object_b": self.rule_object_b.name if self.rule_object_b else "",
                "property": self.rule_property.strip(), "value_is_expert": bool(self.value_is_expert),
                "obs_index": int(self.obs_index), "threshold": float(self.threshold),
                "above": int(self.above) - 1, "below": int(self.below) - 1,
                "selector_path": self.selector_path, "selector_steps": int(self.selector_steps)}
