"""The base floor: what every other floor agrees on. Spaces, the Gymnasium-exact ``Env`` contract and ``check_env``,
N copies as a ``VectorEnv``, PettingZoo's parallel API (``ParallelEnv``) and its checker, atomic file writes,
schedules, a task's counts in words (metrics) and network lineage digests. Imports nothing else of drla_core."""
