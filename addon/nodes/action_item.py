from bpy.props import BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty, PointerProperty, StringProperty
import bpy

from ..tree.node_tree import DRLANode, draw_prop
from ..specs import ActionSpec
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
    Triggers: action move rotate bone property wait walls maze blocked"""

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

    draw_props = ("action_name", "kind", "object", "bone", "vector", "space", "property", "value",
                  "use_limits", "limit_min", "limit_max", "blocked_by", "amount")

    def draw(self, layout):
        draw_prop(layout, self, "action_name")
        layout.prop(self, "kind", text="")
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

    def _blockers(self, ctx, mover: str) -> list[str]:
        """The objects of Blocked By (and its child collections) that are in the scene, the mover excepted."""
        names = [ob.name for ob in self.blocked_by.all_objects
                 if ob.name != mover and (ctx.scene is None or ctx.scene.objects.get(ob.name) is not None)]
        if not names:
            ctx.error(self, f"Blocked By: the collection '{self.blocked_by.name}' has no object in the scene")
        return names
