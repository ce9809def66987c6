from bpy.props import BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty, PointerProperty, StringProperty
import bpy

from ..tree.node_tree import DRLANode, draw_prop
from ..specs import ActionSpec, ConditionSpec
from ..tree.compiler import vec
from ._common import object_pointer

KINDS = [
    ('MOVE', "Move", "Move the object by Vector (in its local axes or the world's)"),
    ('ROTATE', "Rotate", "Rotate the object by Vector (Euler degrees)"),
    ('BONE_ROTATE', "Rotate Bone", "Rotate a pose bone by Vector (Euler degrees)"),
    ('SET_PROPERTY', "Set Property", "Set a custom property to Value"),
    ('ADD_PROPERTY', "Add to Property", "Add Value to a custom property"),
    ('WAIT', "Wait", "Do nothing"),
]


class DRLA_ActionNode(DRLANode, bpy.types.Node):
    """One discrete action the agent can choose: move or rotate an object, rotate a bone,
    set or add to a property, or wait. Link several into an Action Set.
    Limits clamp the result (location, Euler degrees, or the property value in X). A move with
    Blocked By is not made when the object's origin would land inside the bounding box of one of
    that collection's objects (walls of a maze).
    With Condition the action is enabled only while a property compares true with a value (a flag: a bool or
    int custom property >= 1) or while the distance between two objects does: the agent (DQN, PPO, Play,
    Bake, the exported model) chooses among the enabled actions only (an action mask).
    Triggers: action move rotate bone property wait walls maze blocked mask condition enabled flag"""

    bl_idname = "DRLA_ActionNode"
    bl_label = "Action"
    menu_order = 100  # its place in its Add submenu (lower first)
    drla_category = "action"
    role = "action"
    menu_category = "Actions"
    bl_width_default = 210
    outputs_spec = (("DRLA_ActionSocket", "Action"),)

    action_name: StringProperty(name="Name", default="action")
    kind: EnumProperty(name="Kind", items=KINDS, default='MOVE')
    object: object_pointer("Object")
    bone: StringProperty(name="Bone")
    vector: FloatVectorProperty(name="Vector", subtype='XYZ', default=(0.0, 0.0, 0.0))
    space: EnumProperty(name="Space", default='WORLD', items=[('WORLD', "World", ""), ('LOCAL', "Local", "")])
    property: StringProperty(name="Property", default="score")
    value: FloatProperty(name="Value", default=1.0)
    use_limits: BoolProperty(name="Limits", default=False)
    limit_min: FloatVectorProperty(name="Min", subtype='XYZ', default=(-1.0, -1.0, -1.0))
    limit_max: FloatVectorProperty(name="Max", subtype='XYZ', default=(1.0, 1.0, 1.0))
    amount: BoolProperty(name="Amount", default=False,
                         description="The agent chooses how much: from -1 to 1 times Vector (or Value), a "
                                     "continuous action for a SAC, PPO or Evolution agent. An Action Set's actions "
                                     "are then all continuous (with Amount, or Motor actions)")
    blocked_by: PointerProperty(type=bpy.types.Collection, name="Blocked By",
                                description="A move that would put the object's origin inside the bounding box of "
                                            "one of this collection's objects is not made (walls)")

    # the action mask: defaults keep the action always enabled (older .blend files unchanged)
    use_condition: BoolProperty(name="Condition", default=False,
                                description="Enable this action only while a condition holds (an action mask: "
                                            "the agent never chooses it otherwise)")
    condition_kind: EnumProperty(name="When", default='PROPERTY', items=[
        ('PROPERTY', "Property", "A property (or a flag: a bool or int custom property) compared with Value"),
        ('DISTANCE', "Distance", "The distance between two objects compared with Value")])
    condition_source: EnumProperty(name="Source", default='OBJECT',
                                   items=[('OBJECT', "Object", ""), ('SCENE', "Scene", "")])
    condition_object: object_pointer("Object", "The object whose property is read, or the distance's first "
                                               "object (empty: the action's Object)")
    condition_target: object_pointer("To", "The distance's second object")
    condition_property: StringProperty(name="Property", default="",
                                        description="The property (or flag) that enables the action")
    condition_compare: EnumProperty(name="Compare", default='GE', items=[
        ('GE', ">=", ""), ('LE', "<=", ""), ('GT', ">", ""), ('LT', "<", ""), ('EQ', "==", ""), ('NE', "!=", "")])
    condition_value: FloatProperty(name="Condition Value", default=1.0)

    draw_props = ("action_name", "kind", "object", "bone", "vector", "space", "property", "value",
                  "use_limits", "limit_min", "limit_max", "blocked_by", "amount", "use_condition", "condition_kind",
                  "condition_source", "condition_object", "condition_target", "condition_property",
                  "condition_compare", "condition_value")

    def draw(self, layout):
        draw_prop(layout, self, "action_name")
        layout.prop(self, "kind", text="")
        self._draw_body(layout)
        layout.prop(self, "use_condition")
        if self.use_condition:
            box = layout.box()
            box.prop(self, "condition_kind", text="")
            if self.condition_kind == 'PROPERTY':
                box.row().prop(self, "condition_source", expand=True)
                if self.condition_source == 'OBJECT':
                    box.prop(self, "condition_object", text="")
                box.prop(self, "condition_property", text="Property")
            else:
                box.prop(self, "condition_object", text="From")
                box.prop(self, "condition_target", text="To")
            row = box.row(align=True)
            row.prop(self, "condition_compare", text="")
            row.prop(self, "condition_value", text="")

    def _draw_body(self, layout):
        if self.kind == 'WAIT':
            return
        draw_prop(layout, self, "object")
        if self.kind == 'BONE_ROTATE':
            draw_prop(layout, self, "bone")
        if self.kind in {'MOVE', 'ROTATE', 'BONE_ROTATE'}:
            layout.column(align=True).prop(self, "vector")
            if self.kind == 'MOVE':  # Blocked By beside Space: one row, as the node had (example layouts keep)
                split = layout.split(factor=0.55, align=True)
                split.row(align=True).prop(self, "space", expand=True)
                split.prop(self, "blocked_by", text="", icon='OUTLINER_COLLECTION')
        else:
            draw_prop(layout, self, "property")
            layout.prop(self, "value")
        row = layout.row()
        row.prop(self, "amount")
        row.prop(self, "use_limits")
        if self.use_limits:
            if self.kind in {'SET_PROPERTY', 'ADD_PROPERTY'}:
                layout.prop(self, "limit_min", index=0, text="Min")
                layout.prop(self, "limit_max", index=0, text="Max")
            else:
                row = layout.row()
                row.column().prop(self, "limit_min")
                row.column().prop(self, "limit_max")

    def summary(self):
        return ""

    def compile(self, ctx):
        kind = self.kind
        spec = ActionSpec(kind, self.action_name.strip(), self.name, vector=vec(self.vector), space=self.space,
                          value=float(self.value))
        if self.use_condition:
            before = len(ctx.errors)
            spec.condition = self._condition(ctx)
            ctx.errors[before:] = [(node, m if m.startswith("Condition") else f"Condition: {m}")
                                   for node, m in ctx.errors[before:]]
        if kind == 'WAIT':
            return spec
        if self.amount:
            spec.options["amount"] = True
        if kind == 'BONE_ROTATE':
            spec.obj = ctx.obj(self, "object", kind='ARMATURE')
            if not self.bone.strip():
                ctx.error(self, "type the name of a bone")
            else:
                spec.bone = ctx.bones(self, spec.obj, self.bone)[0]
        else:
            spec.obj = ctx.obj(self, "object")
        if kind in {'SET_PROPERTY', 'ADD_PROPERTY'}:
            spec.path = ctx.prop_path(self, spec.obj, self.property)
        if kind == 'MOVE' and self.blocked_by is not None:
            spec.options["blocked_by"] = self._blockers(ctx, spec.obj)
        if self.use_limits:
            spec.limits = (vec(self.limit_min), vec(self.limit_max))
            if kind in {'SET_PROPERTY', 'ADD_PROPERTY'}:
                if self.limit_min[0] > self.limit_max[0]:
                    ctx.error(self, f"the Min limit ({self.limit_min[0]:g}) is above the Max limit "
                                    f"({self.limit_max[0]:g})")
            else:
                ctx.min_max(self, "limit_min", "limit_max")
        return spec

    def _condition(self, ctx) -> ConditionSpec:
        """The condition under which the action is enabled, checked (a missing object or property: an error)."""
        cond = ConditionSpec("distance" if self.condition_kind == 'DISTANCE' else "property", self.name,
                             compare=self.condition_compare, value=float(self.condition_value))
        prop = "condition_object" if self.condition_object is not None or self.kind == 'WAIT' else "object"
        if self.condition_kind == 'DISTANCE':
            if self.condition_object is None and self.object is None:
                ctx.error(self, "Condition: choose the objects whose distance enables the action (From and To)")
            else:
                cond.obj = ctx.obj(self, prop)
            cond.other = ctx.obj(self, "condition_target")
            if cond.obj and cond.obj == cond.other:
                ctx.error(self, f"Condition: the distance is from '{cond.obj}' to itself; choose another To object")
            return cond
        cond.source = self.condition_source
        if self.condition_source == 'OBJECT':
            if self.condition_object is None and self.object is None:
                ctx.error(self, "Condition: choose the object whose property enables the action")
                return cond
            cond.obj = ctx.obj(self, prop)
        if not self.condition_property.strip():
            ctx.error(self, "Condition: type the name of the property that enables the action")
        else:
            cond.path = ctx.prop_path(self, cond.obj, self.condition_property, self.condition_source)
        return cond

    def _blockers(self, ctx, mover: str) -> list[str]:
        """The objects of Blocked By (and its child collections) that are in the scene, the mover excepted."""
        names = [ob.name for ob in self.blocked_by.all_objects
                 if ob.name != mover and (ctx.scene is None or ctx.scene.objects.get(ob.name) is not None)]
        if not names:
            ctx.error(self, f"Blocked By: the collection '{self.blocked_by.name}' has no object in the scene")
        return names
