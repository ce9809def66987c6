from bpy.props import BoolProperty, FloatProperty, FloatVectorProperty, StringProperty
import bpy

from ..tree.node_tree import DRLANode, draw_prop
from ..specs import ActionSpec
from ..tree.compiler import vec
from ._common import axis_enum, object_pointer


class DRLA_FireActionNode(DRLANode, bpy.types.Node):
    """A discrete "fire" action: casts a ray from Origin along its local Axis and reports a hit
    when the first thing it meets is Target (or one of Target's children).
    On a hit: adds Add to the Score property and, with Respawn, moves Target to a random
    location between Min and Max. The environment then has task metric "hit".
    Triggers: fire shoot cannon gun ray hit target score"""

    bl_idname = "DRLA_FireActionNode"
    bl_label = "Fire Action"
    menu_order = 110  # its place in its Add submenu (lower first)
    drla_category = "action"
    role = "action"
    menu_category = "Actions"
    bl_width_default = 230
    outputs_spec = (("DRLA_ActionSocket", "Action"),)

    action_name: StringProperty(name="Name", default="fire")
    origin: object_pointer("Origin", "The ray starts at this object's origin (e.g. a muzzle empty)")
    axis: axis_enum(description="Local axis of Origin the ray follows")
    axis_object: object_pointer("Axis Of", "Take the axis from this object instead (e.g. the cannon)")
    target: object_pointer("Target")
    max_distance: FloatProperty(name="Range", default=100.0, min=0.001, soft_max=1000.0)
    score_object: object_pointer("Score Object", "Holds the score custom property")
    score_property: StringProperty(name="Score", default="score")
    add: FloatProperty(name="Add", default=1.0)
    respawn: BoolProperty(name="Respawn", default=True)
    respawn_min: FloatVectorProperty(name="Min", subtype='XYZ', default=(-5.0, -5.0, 0.0))
    respawn_max: FloatVectorProperty(name="Max", subtype='XYZ', default=(5.0, 5.0, 0.0))
    respawn_grid: FloatProperty(name="Grid", default=0.0, min=0.0, soft_max=10.0,
                                description="Snap respawn locations to multiples of this step (0 = continuous)")
    draw_props = ("action_name", "origin", "axis", "axis_object", "target", "max_distance", "score_object",
                  "score_property", "add", "respawn", "respawn_min", "respawn_max", "respawn_grid")

    def draw(self, layout):
        for name in self.draw_props[:9]:
            draw_prop(layout, self, name)
        layout.prop(self, "respawn")
        if self.respawn:
            row = layout.row()
            row.column().prop(self, "respawn_min")
            row.column().prop(self, "respawn_max")
            layout.prop(self, "respawn_grid")

    def compile(self, ctx):
        spec = ActionSpec("FIRE", self.action_name.strip(), self.name, obj=ctx.obj(self, "origin"))
        score = ctx.obj(self, "score_object", required=False)
        spec.options = {
            "axis": self.axis, "axis_obj": ctx.obj(self, "axis_object", required=False),
            "target": ctx.obj(self, "target"), "range": self.max_distance,
            "score_obj": score, "score_path": ctx.prop_path(self, score, self.score_property) if score else "",
            "add": self.add, "respawn": self.respawn, "respawn_min": vec(self.respawn_min),
            "respawn_max": vec(self.respawn_max), "respawn_grid": self.respawn_grid}
        if self.respawn:
            ctx.min_max(self, "respawn_min", "respawn_max")
        return spec
