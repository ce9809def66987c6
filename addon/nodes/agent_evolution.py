from bpy.props import EnumProperty, FloatProperty, IntProperty
import bpy

from ..specs import AgentSpec
from ..tree.node_tree import DRLANode, draw_prop

#: What the node draws for each method (every property is in ``draw_props``).
METHOD_PROPS = {
    'ES': ("method", "population_size", "generations", "episodes", "sigma", "learning_rate"),
    'CMAES': ("method", "population_size", "generations", "episodes", "sigma", "covariance"),
}


class DRLA_EvolutionAgentNode(DRLANode, bpy.types.Node):
    """Neuroevolution: a population of networks, each scored by its episode return (the same reward
    nodes as DQN) and bred into the next generation: a GA on the Network's fixed layers (selection,
    crossover, Gaussian mutation, elites), NEAT (the topology evolves too), or an evolution strategy on the
    Network's layers: OpenAI-ES (antithetic noise, ranks, Adam) or CMA-ES (a covariance that adapts;
    diagonal, sep-CMA, above 1000 weights). Link a Novelty node to score by novelty of behaviour.
    Continuous (Motor) and discrete actions both work.
    Triggers: evolution genetic algorithm ga neat neuroevolution population novelty es cma-es strategy"""

    bl_idname = "DRLA_EvolutionAgentNode"
    bl_label = "Evolution Agent"
    menu_order = 215  # its place in its Add submenu (lower first): after the DQN Agent
    drla_category = "agent"
    role = "agent"
    menu_category = "Agent"
    agent_kind = "evolution"
    needs_environment = True
    bl_width_default = 220
    inputs_spec = (("DRLA_NetworkSocket", "Network"), ("DRLA_NoveltySocket", "Novelty"))
    outputs_spec = (("DRLA_AgentSocket", "Agent"),)

    method: EnumProperty(name="Method", default='GA', items=[
        ('GA', "GA", "Genetic algorithm on the Network's fixed layers"),
        ('NEAT', "NEAT", "NeuroEvolution of Augmenting Topologies: nodes and connections evolve"),
        ('ES', "OpenAI-ES", "Evolution strategy (Salimans et al. 2017): antithetic noise around one network, "
                            "ranked returns, Adam steps on the estimated gradient"),
        ('CMAES', "CMA-ES", "Covariance matrix adaptation evolution strategy (Hansen): a Gaussian over the "
                            "weights whose shape and step size adapt")])
    population_size: IntProperty(name="Population", default=32, min=2, max=100_000, soft_max=1000,
                                 description="Networks per generation")
    generations: IntProperty(name="Generations", default=30, min=1, max=1_000_000, soft_max=10_000,
                             description="Generations to evolve (the run's steps)")
    episodes: IntProperty(name="Episodes", default=1, min=1, max=1000, soft_max=20,
                          description="Episodes per individual per generation; fitness is their mean return")
    selection: EnumProperty(name="Selection", default='TOURNAMENT', items=[
        ('ROULETTE', "Roulette", "Fitness-proportionate"), ('TOURNAMENT', "Tournament", "Best of 3 drawn"),
        ('RANK', "Rank", "Linear ranking")])
    crossover: EnumProperty(name="Crossover", default='UNIFORM', items=[
        ('UNIFORM', "Uniform", "Each weight from either parent"),
        ('ONE_POINT', "One Point", "Layers before a cut from one parent, the rest from the other")])
    mutation_rate: FloatProperty(name="Mutation Rate", default=0.1, min=0.0, max=1.0,
                                 description="Chance that each weight is mutated")
    mutation_sigma: FloatProperty(name="Mutation Sigma", default=0.1, min=0.0, soft_max=2.0,
                                  description="Standard deviation of the Gaussian noise added to a mutated weight")
    elites: IntProperty(name="Elites", default=2, min=0, max=100_000, soft_max=20,
                        description="Best networks copied unchanged into the next generation")
    sigma: FloatProperty(name="Sigma", default=0.2, min=1e-6, soft_max=2.0,
                         description="OpenAI-ES: the standard deviation of the noise on every weight (fixed); "
                                     "CMA-ES: the initial step size (it adapts)")
    learning_rate: FloatProperty(name="Learning Rate", default=0.1, min=1e-6, soft_max=1.0,
                                 description="OpenAI-ES: Adam's step size on the estimated gradient")
    covariance: EnumProperty(name="Covariance", default='AUTO', items=[
        ('AUTO', "Auto", "Full up to 1000 weights, diagonal (sep-CMA) above"),
        ('FULL', "Full", "A full covariance matrix (n x n)"),
        ('DIAGONAL', "Diagonal", "sep-CMA: a diagonal covariance, linear in the number of weights")])
    draw_props = ("method", "population_size", "generations", "episodes", "selection", "crossover",
                  "mutation_rate", "mutation_sigma", "elites", "sigma", "learning_rate", "covariance")

    def draw(self, layout) -> None:
        for name in METHOD_PROPS.get(self.method, self.draw_props[:9]):  # GA, NEAT: the nine before Sigma
            draw_prop(layout, self, name)

    def summary(self):
        name = {'ES': "OpenAI-ES", 'CMAES': "CMA-ES"}.get(self.method, self.method)
        return f"{name}, {self.population_size} x {self.generations} generations"

    def compile(self, ctx):
        """The settings by ``EvolutionConfig`` / ``GAConfig`` names (``runs.build.evolution_config`` reads
        them), the Network's hidden layers (GA) and the Novelty node's settings."""
        if self.method == 'ES' and self.population_size % 2:
            ctx.error(self, f"OpenAI-ES evaluates pairs of opposite noise: make the Population even "
                            f"(not {self.population_size})")
        elif self.method in {'GA', 'NEAT'} and self.elites >= self.population_size:
            ctx.error(self, f"Elites ({self.elites}) must be fewer than the Population ({self.population_size})")
        config = {"method": self.method.lower(), "population_size": self.population_size,
                  "train_steps": self.generations, "episodes": self.episodes,
                  "selection": self.selection.lower(), "crossover": self.crossover.lower(),
                  "mutation_rate": self.mutation_rate, "mutation_sigma": self.mutation_sigma, "elites": self.elites,
                  "sigma": self.sigma, "learning_rate": self.learning_rate, "covariance": self.covariance.lower()}
        spec = AgentSpec(self.name, self.agent_kind, config, hidden=[(16, "tanh"), (16, "tanh")],
                         output_activation="tanh")
        net = ctx.input(self, "Network", required=False)
        if net is not None:
            if self.method == 'NEAT':
                ctx.error(net, "NEAT evolves its own topology: unlink the Network (or choose GA)")
            elif getattr(net, "grow", False):
                ctx.error(net, "Grow on Plateau grows a DQN Agent's network; an Evolution Agent's networks keep "
                               "their layers: turn Grow on Plateau off")
            spec.hidden = net.hidden_layers()
        novelty = ctx.input(self, "Novelty", required=False)
        if novelty is not None:
            if getattr(novelty, "role", "") != "novelty":
                ctx.error(novelty, f"'{novelty.bl_label}' is not a Novelty node: link it elsewhere")
            else:
                config["novelty"] = novelty.compile(ctx)
        return spec
