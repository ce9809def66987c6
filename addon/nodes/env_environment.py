from bpy.props import FloatProperty, FloatVectorProperty, IntProperty, PointerProperty
import bpy

from ..specs import EnvSpec, StateSpec
from ..tree.compiler import vec
from ..tree.node_tree import DRLANode, linked_nodes
from ._common import object_pointer


class DRLA_EnvironmentNode(DRLANode, bpy.types.Node):
    """The scene as an environment: state, actions, rewards and endings.
    Each step applies the action, advances the scene by Frames per Step frames and reads the state.
    Every episode starts at the scene's start frame in the scene's initial state.
    Triggers: environment gym episode reset"""

    bl_idname = "DRLA_EnvironmentNode"
    bl_label = "Environment"
    menu_order = 10  # its place in its Add submenu (lower first)
    drla_category = "state"
    role = "environment"
    menu_category = "Environment"
    bl_width_default = 210
    inputs_spec = (("DRLA_StateSocket", "State"), ("DRLA_ActionSetSocket", "Actions"),
                   ("DRLA_RewardSocket", "Rewards", True), ("DRLA_DoneSocket", "Done", True))
    outputs_spec = (("DRLA_EnvironmentSocket", "Environment"),)

    frames_per_step: IntProperty(name="Frames per Step", default=1, min=1, max=100,
                                 description="Scene frames advanced per action (action repeat)")
    max_steps: IntProperty(name="Max Steps", default=200, min=1, soft_max=10_000,
                           description="Episode length limit (truncation)")
    random_collection: PointerProperty(type=bpy.types.Collection, name="Randomize",
                                       description="Objects whose start location is randomised each episode")
    random_object_1: object_pointer("Randomize", "An object whose start location is randomised")
    random_object_2: object_pointer("Randomize", "An object whose start location is randomised")
    random_object_3: object_pointer("Randomize", "An object whose start location is randomised")
    random_min: FloatVectorProperty(name="Min", subtype='XYZ', default=(-1.0, -1.0, 0.0))
    random_max: FloatVectorProperty(name="Max", subtype='XYZ', default=(1.0, 1.0, 0.0))
    random_grid: FloatProperty(name="Grid", default=0.0, min=0.0, soft_max=10.0,
                               description="Snap random locations to multiples of this step (0 = continuous)")

    copies: IntProperty(name="Copies", default=1, min=1, max=256, soft_max=64,
                        description="Copies of the environment trained at once, side by side, one network call "
                                    "for all (made when training starts, gone when it ends)")
    copy_spacing: FloatProperty(name="Spacing", default=0.0, min=0.0, soft_max=1000.0, unit='LENGTH',
                                description="Distance between the copies on their grid (0 = far enough that "
                                            "no copy can touch or see another)")
    copy_collection: PointerProperty(type=bpy.types.Collection, name="Copy",
                                     description="The collection that is the environment, copied whole (empty = "
                                                 "the objects the tree names, with their parents and children, "
                                                 "and the whole rigid-body world when one of them is a rigid "
                                                 "body)")

    draw_props = ("frames_per_step", "max_steps", "random_collection", "random_object_1", "random_object_2",
                  "random_object_3", "random_min", "random_max", "random_grid", "copies", "copy_spacing",
                  "copy_collection")

    def draw(self, layout):
        layout.prop(self, "frames_per_step")
        layout.prop(self, "max_steps")
        box = layout.box()
        box.label(text="Random start locations")
        box.prop(self, "random_collection", text="")
        for i in (1, 2, 3):
            box.prop(self, f"random_object_{i}", text="")
        row = box.row()
        row.column().prop(self, "random_min")
        row.column().prop(self, "random_max")
        box.prop(self, "random_grid")
        box = layout.box()
        box.prop(self, "copies")
        if self.copies > 1:
            box.prop(self, "copy_spacing")
            box.prop(self, "copy_collection", text="")

    def compile(self, ctx):
        """State, actions (a discrete set or continuous bone rotations), rewards, endings, random starts."""
        state_node = ctx.input(self, "State")
        state = state_node.compile(ctx) if state_node is not None else StateSpec("", [], 0.0)
        actions, continuous = [], None
        set_node = ctx.input(self, "Actions")
        if set_node is not None:
            found = set_node.compile(ctx)
            if isinstance(found, list):
                actions = found
            else:
                continuous = found
        reward_nodes = linked_nodes(self.inputs["Rewards"])
        rewards = ctx.compile_linked(reward_nodes, "reward", "reward")
        dones = ctx.compile_linked(linked_nodes(self.inputs["Done"]), "ending", "episode ending")
        if any(r.kind == "hit" for r in rewards) and not any(a.kind == "FIRE" for a in actions):
            hit_node = next(n for n in reward_nodes if n.bl_idname == "DRLA_HitRewardNode")
            ctx.error(hit_node, "there is no Fire action in the Action Set to reward")
        randoms: list[str] = []
        if self.random_collection is not None:
            randoms += [ob.name for ob in self.random_collection.all_objects]
        for i in (1, 2, 3):
            name = ctx.obj(self, f"random_object_{i}", required=False)
            if name and name not in randoms:
                randoms.append(name)
        if randoms:
            ctx.min_max(self, "random_min", "random_max")
        return EnvSpec(self.name, state, actions, continuous, rewards, dones, self.frames_per_step, self.max_steps,
                       randoms, vec(self.random_min), vec(self.random_max), self.random_grid, self.copies,
                       self.copy_spacing, self.copy_collection.name if self.copy_collection is not None else "")
