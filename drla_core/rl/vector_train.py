"""``VectorTrainingRun``: the training loop over N copies (a ``VectorEnv``), one batched ``act`` per step for
all copies, episodes ending per copy."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..base.env import Env
from ..base.vector_env import VectorEnv, real_next_obs, vector_info_values

from .history import Callback, TrainingError
from .train import TrainingRun, action_mask

__all__ = ["VectorTrainingRun", "real_next_masks"]


def real_next_masks(infos: dict[str, Any]) -> np.ndarray | None:
    """The action masks of the observations each copy's action led to (``real_next_obs``'s masks): the top
    level's ``action_mask`` with ``final_info``'s where a copy ended; ``None`` when the env gives no masks."""
    masks = action_mask(infos)
    if masks is None:
        return None
    final = infos.get("final_info")
    ended = infos.get("_final_obs")
    if final is None or ended is None or final.get("action_mask") is None:
        return masks
    use = ended & final.get("_action_mask", ended)
    if not use.any():
        return masks
    out = np.array(masks, copy=True)
    out[use] = final["action_mask"][use]
    return out


class VectorTrainingRun(TrainingRun):
    """``TrainingRun`` over a ``VectorEnv``: N copies step together, one ``act_batch`` network call for all.

    The agent needs ``act_batch(obs (N, ...)) -> (N,)`` and ``observe_batch(obs, actions, rewards,
    next_obs, terminated, truncated) -> dict`` (``DQNAgent`` has both) and ``predict`` for evaluation.
    ``steps`` and ``total_steps`` count environment steps summed over the copies (one vector step is
    N of them; a slice's ``max_steps`` may be overrun by up to N - 1). Each copy's episodes go into the
    one ``History`` as they end (``episode_end_steps`` is the summed step count then), with the task
    metric read per copy (``vector_info_values``). Evaluations are greedy, on ``eval_env``, a single
    ``Env``, exactly as ``TrainingRun`` does them; a vector run needs one to evaluate at all.

    Args: as ``TrainingRun``; ``seed`` seeds copy ``i`` with ``seed + i`` (Gymnasium's rule).
    """

    def __init__(self, env: VectorEnv, agent: Any, total_steps: int, *, seed: int | None = 0,
                 eval_env: Env | None = None, eval_interval: int = 0, eval_episodes: int = 10,
                 callbacks: Iterable[Callback] = (), checkpoint_interval: int = 0, checkpoint_path: str | None = None,
                 save_fn: Callable[[TrainingRun, str], None] | None = None) -> None:
        if not isinstance(env, VectorEnv):
            raise TypeError(f"VectorTrainingRun needs a VectorEnv, got {type(env).__name__} (use TrainingRun)")
        if eval_interval > 0 and eval_env is None:
            raise ValueError("VectorTrainingRun evaluates on a single environment: pass eval_env, or eval_interval=0")
        for method in ("act_batch", "observe_batch"):
            if not callable(getattr(agent, method, None)):
                raise TypeError(f"VectorTrainingRun needs an agent with {method}(); {type(agent).__name__} has none")
        super().__init__(env, agent, total_steps, seed=seed, eval_env=eval_env,  # type: ignore[arg-type]
                         eval_interval=eval_interval, eval_episodes=eval_episodes, callbacks=callbacks,
                         checkpoint_interval=checkpoint_interval, checkpoint_path=checkpoint_path, save_fn=save_fn)
        self.venv = env
        self.num_envs = env.num_envs
        self._clear_copies()

    def _clear_copies(self) -> None:
        n = self.num_envs
        self._returns = np.zeros(n, dtype=np.float64)
        self._lengths = np.zeros(n, dtype=np.int64)
        self._metric_sums = np.zeros(n, dtype=np.float64)
        self._metric_counts = np.zeros(n, dtype=np.int64)

    @property
    def _stride(self) -> int:
        return self.num_envs

    def resume(self, env: Any = None) -> None:
        """Continue on ``env`` (a rebuilt ``VectorEnv``, same number of copies) or the same one;
        every copy's cut episode is dropped and every copy starts a fresh one."""
        if env is not None:
            if not isinstance(env, VectorEnv) or env.num_envs != self.num_envs:
                raise ValueError(f"resume needs a VectorEnv with {self.num_envs} copies")
            self.env = self.venv = env  # type: ignore[assignment]
        self._stop_requested = False
        self._final_eval = True
        self.history.interrupted = False
        if not self._started:
            return
        self._fresh_episode()

    def _fresh_episode(self) -> None:
        self._obs, infos = self.venv.reset()
        self._mask = action_mask(infos)
        self._clear_copies()

    def status(self) -> dict[str, str]:
        return {"Copies": str(self.num_envs), **super().status()}

    def to_model(self, meta: dict[str, Any] | None = None) -> Any:
        info = {**(meta or {}), "episodes": int(self.episodes), "copies": self.num_envs}
        names = getattr(self.venv.single_action_space, "names", None)
        if names:
            info["actions"] = list(names)
        if self._mask is not None:  # trained under action masks: exports take a mask (ONNX: a second input)
            info["action_mask"] = True
        return self.agent.to_model(info)

    def _step(self) -> None:
        t0 = time.perf_counter()
        obs, masks = self._obs, self._mask
        actions = self.agent.act_batch(obs) if masks is None else self.agent.act_batch(obs, masks=masks)
        next_obs, rewards, terminated, truncated, infos = self.venv.step(actions)
        ended = terminated | truncated
        next_masks = real_next_masks(infos)
        if next_masks is None:
            out = self.agent.observe_batch(obs, actions, rewards, real_next_obs(next_obs, infos), terminated,
                                           truncated)
        else:
            out = self.agent.observe_batch(obs, actions, rewards, real_next_obs(next_obs, infos), terminated,
                                           truncated, next_masks=next_masks)
        self.steps += self.num_envs
        self.history.steps = self.steps
        self._returns += rewards
        self._lengths += 1
        if out and "loss" in out:
            if not math.isfinite(out["loss"]):
                raise TrainingError(f"training diverged at step {self.steps}: the loss became {out['loss']}. "
                                    "Lower the learning rate, or scale the observations and rewards")
            self.history.losses.append(float(out["loss"]))
            self.history.loss_steps.append(self.steps)
        key = self.history.task_metric
        if key is not None:
            values, present = vector_info_values(infos, key, ended)
            self._metric_sums += values
            self._metric_counts += present
        self._obs, self._mask = next_obs, action_mask(infos)
        self.train_seconds += time.perf_counter() - t0

        for i in np.flatnonzero(ended):
            self._end_copy_episode(int(i))
        stop = False
        for cb in self.callbacks:
            if cb.on_step(self) is False:
                stop = True
        if self.steps >= self._next_eval:
            self._evaluate()
        if self.steps >= self._next_checkpoint:
            self._checkpoint()
        if stop or self._stop_requested or self.steps >= self.total_steps:
            self._finish()

    def _end_copy_episode(self, i: int) -> None:
        """Copy ``i``'s episode ended: record it as ``TrainingRun._end_episode`` records one."""
        self._episode_return, self._episode_length = float(self._returns[i]), int(self._lengths[i])
        self._metric_sum, self._metric_count = float(self._metric_sums[i]), int(self._metric_counts[i])
        self._returns[i], self._lengths[i], self._metric_sums[i], self._metric_counts[i] = 0.0, 0, 0.0, 0
        self._end_episode()


