from bpy.props import FloatProperty, PointerProperty, StringProperty
import bpy

from ..tree.node_tree import DRLANode
from ..specs import RewardSpec
from ._common import object_pointer


class DRLA_CollectRewardNode(DRLANode, bpy.types.Node):
    """Pick-ups: each object of Items within Radius of the Collector (origin to origin) is collected:
    it disappears (scaled to zero) for the rest of the episode and the step earns Reward. With Count
    Into, the collector's custom property counts them (another agent's Property Change Reward can read
    it). Items come back at every reset.
    Triggers: reward collect pellet pick up coin eat item"""

    bl_idname = "DRLA_CollectRewardNode"
    bl_label = "Collect Reward"
    menu_order = 145  # its place in its Add submenu (lower first)
    drla_category = "reward"
    role = "reward"
    menu_category = "Rewards"
    bl_width_default = 200
    outputs_spec = (("DRLA_RewardSocket", "Reward"),)

    object: object_pointer("Collector", "The object that collects")
    items: PointerProperty(type=bpy.types.Collection, name="Items",
                           description="The objects to collect (this collection's and its children's)")
    radius: FloatProperty(name="Radius", default=0.5, min=0.0, soft_max=10.0,
                          description="An item is collected when its origin is this close to the collector's")
    reward: FloatProperty(name="Reward", default=1.0, description="Earned per item collected")
    count_property: StringProperty(name="Count Into", default="",
                                   description="A custom property of the collector that counts the items "
                                               "collected (optional; it must exist)")
    draw_props = ("object", "items", "radius", "reward", "count_property")

    def compile(self, ctx):
        collector = ctx.obj(self, "object")
        items: list[str] = []
        if self.items is None:
            ctx.error(self, "choose the collection of Items to collect")
        else:
            items = [ob.name for ob in self.items.all_objects
                     if ob.name != collector and (ctx.scene is None or ctx.scene.objects.get(ob.name) is not None)]
            if not items:
                ctx.error(self, f"Items: the collection '{self.items.name}' has no object in the scene")
        path = ctx.prop_path(self, collector, self.count_property) if self.count_property.strip() else ""
        if path and not (path.startswith('["') and path.count('"') == 2):
            ctx.error(self, "Count Into takes the name of a custom property of the collector")
        return RewardSpec("collect", self.name, obj=collector, path=path,
                          options={"items": items, "radius": self.radius, "reward": self.reward,
                                   "touches": [collector, *items]})
