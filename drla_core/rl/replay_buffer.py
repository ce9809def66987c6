"""Experience replay: a circular buffer of preallocated numpy arrays.

``terminated`` (a true terminal state: the TD target must not bootstrap) is stored apart from
``truncated`` (a time limit cut the episode: the next state still has value), as in SB3's
``handle_timeout_termination``; only ``terminated`` may mask the bootstrap term.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Batch", "ReplayBuffer"]


class Batch(NamedTuple):
    """A sampled mini-batch; ``terminated`` and ``truncated`` are float32 0/1 so they enter arithmetic directly."""

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_obs: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    next_masks: np.ndarray | None = None
    """The actions enabled in ``next_obs`` (bool ``(B, n_actions)``), when the env gives action masks."""


class ReplayBuffer:
    """Fixed-capacity FIFO of transitions; the oldest are overwritten once it is full.

    Args:
        capacity: the most transitions kept.
        obs_shape: shape of one observation.
        obs_dtype: float32 for vectors; uint8 saves 4x memory for pixel observations.
        action_shape: ``()`` for discrete actions.
        action_dtype: int64 for discrete actions, float32 for continuous ones.
    """

    def __init__(self, capacity: int, obs_shape: Sequence[int], obs_dtype: Any = np.float32,
                 action_shape: Sequence[int] = (), action_dtype: Any = np.int64) -> None:
        if int(capacity) <= 0:
            raise ValueError("ReplayBuffer: capacity must be positive")
        self.capacity = int(capacity)
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.action_shape = tuple(int(s) for s in action_shape)
        self.obs = np.zeros((self.capacity, *self.obs_shape), dtype=obs_dtype)
        self.next_obs = np.zeros_like(self.obs)
        self.actions = np.zeros((self.capacity, *self.action_shape), dtype=action_dtype)
        self.rewards = np.zeros(self.capacity, dtype=np.float32)
        self.terminated = np.zeros(self.capacity, dtype=np.float32)
        self.truncated = np.zeros(self.capacity, dtype=np.float32)
        self.next_masks: np.ndarray | None = None  # allocated by the first transition that has a mask
        self.pos = 0
        self.full = False

    def _mask_rows(self, width: int) -> np.ndarray:
        """The next-mask array (bool, ``(capacity, width)``), allocated all True (every action enabled) when the
        first masked transition arrives."""
        if self.next_masks is None:
            self.next_masks = np.ones((self.capacity, int(width)), dtype=bool)
        return self.next_masks

    def __len__(self) -> int:
        return self.capacity if self.full else self.pos

    def add(self, obs: Any, action: Any, reward: float, next_obs: Any, terminated: bool, truncated: bool,
            next_mask: Any = None) -> None:
        """Store one transition (copied into the buffer); ``next_mask``: the actions enabled in ``next_obs``."""
        i = self.pos
        if next_mask is not None:
            next_mask = np.asarray(next_mask)
            self._mask_rows(next_mask.shape[-1])[i] = next_mask != 0
        self.obs[i] = obs
        self.next_obs[i] = next_obs
        self.actions[i] = action
        self.rewards[i] = reward
        self.terminated[i] = terminated
        self.truncated[i] = truncated
        self.pos = i + 1
        if self.pos == self.capacity:
            self.pos = 0
            self.full = True

    def add_batch(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, next_obs: np.ndarray,
                  terminated: np.ndarray, truncated: np.ndarray, next_masks: np.ndarray | None = None) -> None:
        """Store N transitions at once (N copies of an environment), in copy order, as N ``add`` calls would."""
        n = len(rewards)
        if n > self.capacity:  # only the last ``capacity`` would survive N single adds
            keep = slice(n - self.capacity, n)
            self.pos = (self.pos + n - self.capacity) % self.capacity
            self.full = True
            obs, actions, rewards, next_obs = obs[keep], actions[keep], rewards[keep], next_obs[keep]
            terminated, truncated, n = terminated[keep], truncated[keep], self.capacity
            next_masks = None if next_masks is None else next_masks[keep]
        idx = (self.pos + np.arange(n)) % self.capacity
        if next_masks is not None:
            next_masks = np.asarray(next_masks)
            self._mask_rows(next_masks.shape[-1])[idx] = next_masks != 0
        self.obs[idx] = obs
        self.next_obs[idx] = next_obs
        self.actions[idx] = actions
        self.rewards[idx] = rewards
        self.terminated[idx] = terminated
        self.truncated[idx] = truncated
        if self.pos + n >= self.capacity:
            self.full = True
        self.pos = (self.pos + n) % self.capacity

    def sample(self, batch_size: int, rng: np.random.Generator) -> Batch:
        """Draw ``batch_size`` transitions uniformly with replacement (fresh arrays)."""
        size = len(self)
        if size == 0:
            raise ValueError("ReplayBuffer.sample: the buffer is empty")
        idx = rng.integers(0, size, size=batch_size)
        # take(idx, axis=0) is what obs[idx] means, but numpy's fancy indexing of a 2-D array is
        # several times slower (at 8192 rows: 125 us against 18 us per array)
        return Batch(self.obs.take(idx, axis=0), self.actions.take(idx, axis=0), self.rewards.take(idx),
                     self.next_obs.take(idx, axis=0), self.terminated.take(idx), self.truncated.take(idx),
                     None if self.next_masks is None else self.next_masks.take(idx, axis=0))

    def clear(self) -> None:
        self.pos = 0
        self.full = False
