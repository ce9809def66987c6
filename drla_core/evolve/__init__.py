"""Neuroevolution: the population as one matrix and its operators (``population``), the genetic algorithm (``ga``),
novelty search (``novelty``), NEAT (``neat``), the evolution strategies OpenAI-ES (``es``) and CMA-ES (``cmaes``),
one generation's batched episodes (``evaluation``), the job that ties them into a ``TrainingJob`` (``evolution``)
with its checkpoints (``checkpoint``) and report (``report``), and two populations against each other
(``coevolution``)."""
