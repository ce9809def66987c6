from bpy.props import EnumProperty, FloatProperty, IntProperty, StringProperty
import bpy

from ..tree.node_tree import DRLANode


class DRLA_NoveltyNode(DRLANode, bpy.types.Node):
    """Novelty search (Lehman & Stanley 2011) for an Evolution agent: each network's behaviour is
    part of the state at the end of its episode (the first values of the observation, or one sensor's
    reading, e.g. a walker's final position); novelty is the mean distance to the K nearest behaviours
    of the population and an archive of past ones. Score = novelty, or a blend with fitness.
    Triggers: novelty search behaviour archive exploration deceptive"""

    bl_idname = "DRLA_NoveltyNode"
    bl_label = "Novelty"
    menu_order = 218  # its place in its Add submenu (lower first): after the Evolution Agent
    drla_category = "agent"
    role = "novelty"
    menu_category = "Agent"
    bl_width_default = 220
    outputs_spec = (("DRLA_NoveltySocket", "Novelty"),)

    behavior: EnumProperty(name="Behaviour", default='FIRST', items=[
        ('FIRST', "First Values", "The first Values of the observation at the episode's end"),
        ('SENSOR', "Sensor", "The reading of the sensor node named Sensor at the episode's end")])
    values: IntProperty(name="Values", default=2, min=1, max=100_000, soft_max=16,
                        description="How many observation values make the behaviour")
    sensor: StringProperty(name="Sensor", description="Name of a sensor node linked into the State")
    k: IntProperty(name="K Nearest", default=15, min=1, max=10_000, soft_max=50,
                   description="Novelty = mean distance to this many nearest behaviours")
    archive: EnumProperty(name="Archive", default='THRESHOLD', items=[
        ('THRESHOLD', "Threshold", "Add a behaviour whose novelty is above an adaptive threshold"),
        ('PROBABILITY', "Probability", "Add each behaviour with a fixed probability")])
    threshold: FloatProperty(name="Threshold", default=0.05, min=0.0, soft_max=10.0,
                             description="Starting archive threshold (it adapts)")
    add_probability: FloatProperty(name="Add Probability", default=0.02, min=0.0, max=1.0)
    fitness_weight: FloatProperty(name="Fitness Weight", default=0.0, min=0.0, max=1.0,
                                  description="0: novelty alone; 1: fitness alone; between: a blend")
    draw_props = ("behavior", "values", "sensor", "k", "archive", "threshold", "add_probability", "fitness_weight")

    def summary(self):
        return f"k {self.k}, fitness weight {self.fitness_weight:g}"

    def compile(self, ctx):
        """``NoveltyConfig`` fields plus the slice of the observation that is the behaviour."""
        start, end = 0, self.values
        sensors = ctx.env.state.sensors if ctx.env is not None else []
        size = sum(s.size for s in sensors)
        if self.behavior == 'SENSOR':
            offset, found = 0, None
            for s in sensors:
                if s.node == self.sensor.strip():
                    found = (offset, offset + s.size)
                offset += s.size
            if found is None:
                ctx.error(self, f"no sensor node named '{self.sensor.strip()}' is linked into the State"
                          if self.sensor.strip() else "type the name of a sensor node of the State")
            else:
                start, end = found
        elif ctx.env is not None and end > size:
            ctx.error(self, f"Values is {end} but the observation has only {size}")
        return {"k": self.k, "archive": self.archive.lower(), "threshold": self.threshold,
                "add_probability": self.add_probability, "fitness_weight": self.fitness_weight,
                "behavior_start": start, "behavior_end": end}
