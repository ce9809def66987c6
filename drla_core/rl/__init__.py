"""Reinforcement learning: the ``Agent`` and ``TrainingJob`` protocols (``base``), the one sliceable training loop
(``train``; ``vector_train`` over N copies; ``history``: curves, evaluation, callbacks), replay, run checkpoints
(``checkpoint``, ``restore``: bit-exact resume), and one module per algorithm: ``dqn``; learned IK (``ik``,
``ik_job``); several agents at once (``multi_agent``). New algorithms (PPO, SAC) go here as ``<name>.py``."""
