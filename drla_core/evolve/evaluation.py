"""``Evaluation``: one generation's episodes, every individual and episode on a pool of environments (or one
``CartPoleBatch``), one batched forward per step, pausable between steps so a session advances it in time
slices; with the champion's check played alongside."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..base.env import Env
from ..base.spaces import Box, Discrete, Space


# ---- evaluating a population on environments ------------------------------------------------------------


def action_function(space: Space) -> Callable[[np.ndarray], list[Any]]:
    """Network outputs -> env actions: argmax for ``Discrete``; for a ``Box`` the tanh output in [-1, 1]
    scaled linearly onto the box (``low + (y + 1) / 2 * (high - low)``; unbounded dims take ``y`` itself)."""
    if isinstance(space, Discrete):
        return _ArgmaxActions()
    if isinstance(space, Box):
        low = np.broadcast_to(np.asarray(space.low, np.float64), space.shape).reshape(-1)
        high = np.broadcast_to(np.asarray(space.high, np.float64), space.shape).reshape(-1)
        finite = np.isfinite(low) & np.isfinite(high)
        mid = np.where(finite, (low + high) / 2, 0.0)
        half = np.where(finite, (high - low) / 2, 1.0)
        shape, dtype = space.shape, space.dtype

        def box(out: np.ndarray) -> list[Any]:
            acts = np.clip(mid + half * np.clip(out, -1.0, 1.0), low, high).astype(dtype)
            return [a.reshape(shape) for a in acts]
        return box
    raise TypeError(f"evolution needs a Box or Discrete action space, got {type(space).__name__}")


class _ArgmaxActions:
    """Discrete actions: the argmax of each row, as a list (``__call__``) or an int array (``array``, what a
    batched environment takes)."""

    def __call__(self, out: np.ndarray) -> list[Any]:
        return np.argmax(out, axis=-1).tolist()

    @staticmethod
    def array(out: np.ndarray) -> np.ndarray:
        return out.argmax(axis=-1)


def output_activation_for(space: Space) -> str:
    return "tanh" if isinstance(space, Box) else "linear"


def default_behavior(obs: Any, info: Mapping[str, Any]) -> np.ndarray:
    """An episode's behaviour: ``info["behavior"]`` when the env gives one, else the last observation."""
    b = info.get("behavior") if isinstance(info, Mapping) else None
    return np.asarray(obs if b is None else b, dtype=np.float64).reshape(-1)


#: How many individuals at a time play the champion check alongside their generation (``Evaluation``).
CHECK_ALONGSIDE = 3


class Evaluation:
    """Every (individual, episode) task run on a pool of environments; one batched forward per step.

    ``run(deadline)`` returns True when every episode has ended, False if it stopped at the deadline
    (between two steps; call ``run`` again to go on). Episode ``e`` of every individual starts with
    ``reset(seed=seeds[e])`` (common random numbers: individuals are compared on the same episodes).

    When the first environment offers ``batch(n)`` (an object that steps ``n`` copies of it at once in numpy,
    like ``envs.cartpole.CartPoleBatch``, with the same trajectories as the env itself) and the actions are
    discrete, every task runs at once on it: one batched forward and one batched environment step per step,
    no Python per environment. The results are the same as on the pool.

    On that batched path, ``check_seeds`` and ``check_target`` run a generation's champion check alongside it
    (``EvolutionJob``'s greedy check of the generation's best, when it reaches the target) as more rows of the
    same batch (``batch.add``), for a guess at the best: the ``CHECK_ALONGSIDE`` lowest-numbered individuals
    that may still be it (the best is the first of the highest fitness, and an episode capped at its step
    limit often ties: then it is the lowest-numbered of them). An individual starts the check's episodes when
    it enters that guess, and its check rows are dropped once its fitness is known to be below the target or
    once the generation's best is known and it is another. ``check_result(i)`` then gives individual ``i``'s
    check (returns, steps, and the observations and actions of its check episodes, step by step), or None when
    it did not play it to the end. Those rows count in no ``env_steps`` (the job counts the check it uses).
    The job runs the check on its own when the guess was wrong: the results are the same either way.

    When the first environment is a vector of copies that can restart some of them with seeds of their own
    (``num_envs`` and ``restart(copies, seeds) -> first observations``, like a Blender scene's copies), each
    copy is a slot of the pool but all copies step together: one forward for the running slots and one
    ``step`` of the vector per step (a copy without a task left acts too; its episode is not counted).
    A vector whose copies ``restarts_together`` (one physics world) plays rounds: every copy starts a task,
    and the next round starts when the last of them ends.

    A policy with ``keeps_state`` true (recurrent NEAT, ``graph_net.RecurrentGraphNetwork.task_policy``) is
    called ``policy(rows, obs, tasks)``: ``tasks`` numbers each row's episode (``individual * episodes +
    episode``; the check's rows after them), so it keeps a state per episode, new for each one.
    """

    def __init__(self, policy: Callable[[np.ndarray, np.ndarray], np.ndarray], n_individuals: int,
                 seeds: Sequence[int], envs: Sequence[Env], act: Callable[[np.ndarray], list[Any]],
                 behavior: Callable[[Any, Mapping[str, Any]], np.ndarray] = default_behavior,
                 check_seeds: Sequence[int] = (), check_target: float | None = None) -> None:
        self.policy, self.envs, self.act, self.behavior = policy, list(envs), act, behavior
        self._stateful = bool(getattr(policy, "keeps_state", False))
        # (the rows' tasks as a third argument, for a policy that keeps a state per episode)
        self._forward: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] = \
            policy if self._stateful else (lambda rows, x, tasks: policy(rows, x))  # type: ignore[assignment]
        self.seeds = [int(s) for s in seeds]
        self.n, self.episodes = int(n_individuals), len(self.seeds)
        self._returns = [0.0] * (self.n * self.episodes)
        self.behaviors: list[np.ndarray | None] = [None] * (self.n * self.episodes)
        self.env_steps = 0
        self._next_task = 0
        self._slot_task = [-1] * len(self.envs)
        self._x: np.ndarray | None = None  # each slot's current observation, flattened (float32)
        self._flat = True
        self._active: list[int] = []
        self._rows = np.zeros(0, dtype=np.int64)
        self._row_tasks = np.zeros(0, dtype=np.int64)
        self.done = self.n * self.episodes == 0
        # the batched path: every task at once on one vector of environments
        self._batch: Any = None
        self._act_array = getattr(act, "array", None)
        batch = getattr(self.envs[0], "batch", None) if self.envs else None
        self._check_seeds = [int(s) for s in check_seeds] if check_target is not None else []
        self._check_target = check_target
        n_check = len(self._check_seeds)
        if callable(batch) and self._act_array is not None and not self.done:
            if n_check:
                try:
                    self._batch = batch(self.n * self.episodes, capacity=self.n * self.episodes +
                                        min(self.n, CHECK_ALONGSIDE) * n_check)
                except TypeError:  # a batch(n) without room for more rows
                    self._batch = None
                if not callable(getattr(self._batch, "add", None)):  # a batch that cannot start rows later
                    self._batch, self._check_seeds = batch(self.n * self.episodes), []
            else:
                self._batch = batch(self.n * self.episodes)
        # the champion check alongside (batched path): who started it, whether it goes on
        self._check_started: set[int] = set()
        self._check_guess: set[int] = set()
        self._checking = self._batch is not None and bool(self._check_seeds)
        self._check_wanted = self._checking  # the guess has to be (re)made
        self._main_alive_before = 0  # (the generation's rows before an episode-end step's changes)
        self._check_returns = np.full(self.n * n_check, np.nan)
        self._check_steps = np.zeros(self.n * n_check, dtype=np.int64)
        # every step's check rows (their tasks, observations and actions), one after the other
        self._record: list[np.ndarray] = []  # tasks, observations, actions: grown by doubling
        self._recorded = 0
        self._main_left = np.full(self.n, self.episodes, dtype=np.int64)  # main episodes still playing
        self._main_alive = self.n * self.episodes
        # the vector path: the copies of one vector environment are the pool's slots
        first: Any = self.envs[0] if self.envs else None
        self._vector: Any = first if callable(getattr(first, "restart", None)) and \
            getattr(first, "num_envs", 0) >= 1 else None
        if self._vector is not None:
            self._slot_task = [-1] * int(first.num_envs)
        self._tasks = np.zeros(0, dtype=np.int64)
        self._batch_returns = np.zeros(self.n * self.episodes, dtype=np.float64)
        self._acc = np.zeros(0, dtype=np.float64)

    @property
    def returns(self) -> np.ndarray:
        """Each individual's return in each episode, ``(individuals, episodes)``."""
        if self._batch is not None:
            return self._batch_returns.reshape(self.n, self.episodes).copy()
        return np.asarray(self._returns, dtype=np.float64).reshape(self.n, self.episodes)

    def _put(self, s: int, obs: Any) -> None:
        if self._x is None:
            flat = np.asarray(obs, dtype=np.float32).reshape(-1)
            self._x = np.zeros((len(self._slot_task), flat.size), dtype=np.float32)
            self._flat = np.ndim(obs) <= 1
        if self._flat:
            self._x[s] = obs  # numpy converts; no intermediate array (this runs once per env step)
        else:
            self._x[s] = np.asarray(obs, dtype=np.float32).reshape(-1)

    def _refill(self) -> None:
        """Start the next tasks on free environments; recompute which slots run and whose they are."""
        total, slot_task = self.n * self.episodes, self._slot_task
        for s, env in enumerate(self.envs):
            if slot_task[s] < 0 and self._next_task < total:
                task = self._next_task
                self._next_task += 1
                slot_task[s] = task
                obs, _ = env.reset(seed=self.seeds[task % self.episodes])
                self._put(s, obs)
        self._active = [s for s in range(len(self.envs)) if slot_task[s] >= 0]
        self._rows = np.array([slot_task[s] // self.episodes for s in self._active], dtype=np.int64)
        self._row_tasks = np.array([slot_task[s] for s in self._active], dtype=np.int64)

    def run(self, deadline: float | None = None) -> bool:
        """Step every running episode until all have ended (True) or ``deadline`` passes (False)."""
        if self._batch is not None:
            return self._run_batch(deadline)
        if self._vector is not None:
            return self._run_vector(deadline)
        envs, slot_task, returns, put = self.envs, self._slot_task, self._returns, self._put
        changed = not self._active
        while not self.done:
            if changed:
                self._refill()
                changed = False
                if not self._active:
                    self.done = True
                    break
            active, x = self._active, self._x
            assert x is not None  # _refill put the first observations
            if len(active) != len(envs):
                x = x[active]
            actions = self.act(self._forward(self._rows, x, self._row_tasks))
            for s, action in zip(active, actions):
                o, r, terminated, truncated, info = envs[s].step(action)
                task = slot_task[s]
                returns[task] += float(r)
                put(s, o)
                if terminated or truncated:
                    self.behaviors[task] = self.behavior(o, info)
                    slot_task[s] = -1
                    changed = True
            self.env_steps += len(active)
            if changed:  # ended slots: take them out now so a pause leaves a consistent state
                self._refill()
                changed = False
                if not self._active:
                    self.done = True
            if deadline is not None and time.perf_counter() >= deadline:
                break
        return self.done

    def _start_vector_tasks(self, slots: list[int]) -> None:
        """The next tasks on the free ``slots`` (copies), each restarted with its task's episode seed."""
        total, slot_task = self.n * self.episodes, self._slot_task
        starting = []
        for s in slots:
            if self._next_task < total:
                slot_task[s] = self._next_task
                self._next_task += 1
                starting.append(s)
        if starting:
            obs = self._vector.restart(starting, [self.seeds[slot_task[s] % self.episodes] for s in starting])
            for s, o in zip(starting, obs):
                self._put(s, o)

    def _run_vector(self, deadline: float | None) -> bool:
        """``run`` on a vector of copies: the pool's loop with one ``step`` of the vector for every copy."""
        venv, slot_task, returns = self._vector, self._slot_task, self._returns
        together = bool(getattr(venv, "restarts_together", False))
        if self._x is None:
            self._start_vector_tasks(list(range(len(slot_task))))
        changed = True
        while not self.done:
            if changed:  # which copies play, and whose individual each one is
                active = [s for s in range(len(slot_task)) if slot_task[s] >= 0]
                if not active:
                    self.done = True
                    break
                rows = np.array([slot_task[s] // self.episodes for s in active], dtype=np.int64)
                row_tasks = np.array([slot_task[s] for s in active], dtype=np.int64)
                changed = False
            assert self._x is not None
            chosen = self.act(self._forward(rows, self._x[active], row_tasks))
            actions = [chosen[0]] * len(slot_task)  # a copy without a task plays along; nothing of it counts
            for s, a in zip(active, chosen):
                actions[s] = a
            obs, rewards, terminated, truncated, infos = venv.step(np.asarray(actions))
            ended = []
            for s in active:
                task = slot_task[s]
                returns[task] += float(rewards[s])
                if terminated[s] or truncated[s]:
                    final = infos["final_obs"][s] if "final_obs" in infos else obs[s]
                    self.behaviors[task] = self.behavior(final, {})
                    slot_task[s] = -1
                    ended.append(s)
                else:
                    self._put(s, obs[s])
            self.env_steps += len(active)
            if ended:
                changed = True
                if not together:
                    self._start_vector_tasks(ended)
                elif all(task < 0 for task in slot_task):  # a round ends when its last episode does
                    self._start_vector_tasks(list(range(len(slot_task))))
            if deadline is not None and time.perf_counter() >= deadline:
                break
        return self.done

    def _run_batch(self, deadline: float | None) -> bool:
        """``run`` on the batched environment: every task is a row; ended rows are dropped. Each row's return
        is summed in ``_acc`` (in step order, as the pool path sums it) and stored when its episode ends; when
        every reward is 1.0 (the batch's ``unit_rewards``) the return is the number of steps, summed by nobody.
        The check's rows (tasks ``n * episodes`` on) come after the generation's."""
        batch, act, policy = self._batch, self._act_array, self._forward
        assert act is not None
        unit = bool(getattr(batch, "unit_rewards", False))
        if self._x is None:  # start every task
            total = self.n * self.episodes
            self._tasks = np.arange(total, dtype=np.int64)
            self._rows = self._tasks // self.episodes
            self._acc = np.zeros(total, dtype=np.float64)
            self._x = batch.reset([self.seeds[t % self.episodes] for t in range(total)])
            if self._checking:
                self._tasks, self._rows, self._x, self._acc = self._start_checks(
                    self._tasks, self._rows, self._x, self._acc)
        tasks, rows, x, acc = self._tasks, self._rows, self._x, self._acc
        count_nonzero = np.count_nonzero
        while not self.done:
            actions = act(policy(rows, x, tasks))
            main = self._main_alive
            if len(tasks) > main:  # the check rows' observations and actions, for check_result
                at, k = self._recorded, len(tasks) - main
                if not self._record or at + k > len(self._record[0]):
                    self._grow_record(at + k, x, actions)
                record_tasks, record_obs, record_actions = self._record
                record_tasks[at:at + k] = tasks[main:]
                record_obs[at:at + k] = x[main:]
                record_actions[at:at + k] = actions[main:]
                self._recorded = at + k
            x, rewards, terminated, truncated = batch.step(actions)
            if not unit:
                np.add(acc, rewards, acc)
            self.env_steps += main
            if truncated is not False or count_nonzero(terminated):  # (count_nonzero: a fifth of any()'s cost)
                if truncated is True:
                    ended = np.ones(len(tasks), dtype=bool)
                else:
                    ended = terminated if truncated is False else terminated | truncated
                tasks, rows, x, acc = self._episodes_ended(ended, tasks, rows, x, acc, main, unit)
                if self.done:
                    break
            if deadline is not None and time.perf_counter() >= deadline:
                break
        self._tasks, self._rows, self._x, self._acc = tasks, rows, x, acc
        return self.done

    def _episodes_ended(self, ended: np.ndarray, tasks: np.ndarray, rows: np.ndarray, x: np.ndarray,
                        acc: np.ndarray, main: int,
                        unit: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The rows ``ended`` ended their episodes (``main``: how many of the rows are the generation's): store
        their returns and behaviours, drop them (and check rows that are no use any more) from the batch."""
        batch, returns = self._batch, self._batch_returns
        done = tasks[ended]
        got = batch.steps_run(ended).astype(np.float64) if unit else acc[ended]
        final = x[ended]
        keep = ~ended
        if len(tasks) > main:  # check rows among them
            is_main = done < self.n * self.episodes
            if not is_main.all():
                check = done[~is_main] - self.n * self.episodes
                self._check_returns[check] = got[~is_main]
                self._check_steps[check] = batch.steps_run(ended)[~is_main]
                done, got, final = done[is_main], got[is_main], final[is_main]
        returns[done] = got
        if self.behavior is default_behavior:  # (the final observations, without a call for each)
            for task, obs in zip(done.tolist(), final.astype(np.float64)):
                self.behaviors[task] = obs
        else:
            for task, obs in zip(done.tolist(), final):
                self.behaviors[task] = self.behavior(obs, {})
        if len(done):
            self._main_alive_before = main
            self._main_ended(done, tasks, keep)
        if not keep.any():
            self.done = True
            return tasks, rows, x, acc
        batch.keep(keep)
        tasks, rows, x = tasks[keep], rows[keep], x[keep]
        if not unit:
            acc = acc[keep]
        if self._checking and self._check_wanted:
            tasks, rows, x, acc = self._start_checks(tasks, rows, x, acc)
        return tasks, rows, x, acc

    def _start_checks(self, tasks: np.ndarray, rows: np.ndarray, x: np.ndarray,
                      acc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The individuals that enter the guess at the generation's best start the check's episodes, as rows
        after the others."""
        self._check_wanted = False
        e = self.episodes
        fitness = self._batch_returns.reshape(self.n, e).mean(axis=1)
        in_play = np.flatnonzero((self._main_left > 0) | (fitness >= self._check_target))  # type: ignore[operator]
        self._check_guess = {int(i) for i in in_play[:CHECK_ALONGSIDE]}
        new = sorted(self._check_guess - self._check_started)
        if not new:
            return tasks, rows, x, acc
        self._check_started.update(new)
        c = len(self._check_seeds)
        who = np.array(new, dtype=np.int64)
        added = (self.n * e + who[:, None] * c + np.arange(c)[None, :]).reshape(-1)
        x = self._batch.add(self._check_seeds * len(new))
        return (np.concatenate([tasks, added]), np.concatenate([rows, np.repeat(who, c)]), x,
                np.concatenate([acc, np.zeros(len(added))]))

    def _main_ended(self, done: np.ndarray, tasks: np.ndarray, keep: np.ndarray) -> None:
        """Generation episodes ``done`` ended: drop (in ``keep``) the check rows of every individual now known
        not to be the generation's best, or known to score below the target."""
        e, target = self.episodes, self._check_target
        self._main_alive -= len(done)
        owners = done // e
        if e == 1:
            self._main_left[owners] = 0
        else:
            self._main_left -= np.bincount(owners, minlength=self.n)
        if not self._checking:
            return
        n_main = self.n * e
        if self._main_alive == 0:  # every fitness known: only the best's check matters (none below the target)
            fitness = self.fitness()
            best = int(np.argmax(fitness))
            keep[self._main_alive_before:] &= (tasks[self._main_alive_before:] - n_main) // \
                len(self._check_seeds) == best
            if fitness[best] < target:  # type: ignore[operator]
                keep[self._main_alive_before:] = False
            self._checking = False  # no more starts
            return
        returns = self._batch_returns
        lost = [i for i in {int(o) for o in owners.tolist()} & self._check_guess
                if self._main_left[i] == 0 and returns[i * e:(i + 1) * e].mean() < target]  # type: ignore[operator]
        if lost:  # a guessed individual scored below the target: its rows go, the next one comes in
            self._check_wanted = True
            owner = (tasks[self._main_alive_before:] - n_main) // len(self._check_seeds)
            keep[self._main_alive_before:] &= ~np.isin(owner, lost)

    def check_result(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """Individual ``i``'s check played alongside the generation: ``(returns, steps)`` per check episode and
        ``(observations, actions)``, every step of its check episodes; None unless it played them all."""
        c = len(self._check_seeds)
        if not c or not self._recorded:
            return None
        got = self._check_returns[i * c:(i + 1) * c]
        if np.isnan(got).any():
            return None
        tasks, obs, actions = (a[:self._recorded] for a in self._record)
        first = self.n * self.episodes + i * c
        mine = (tasks >= first) & (tasks < first + c)
        return got.copy(), self._check_steps[i * c:(i + 1) * c].copy(), obs[mine], actions[mine]

    def _grow_record(self, need: int, x: np.ndarray, actions: np.ndarray) -> None:
        size = max(need, 2 * len(self._record[0]) if self._record else 512 * need)
        grown = [np.empty(size, dtype=np.int64), np.empty((size, *x.shape[1:]), dtype=x.dtype),
                 np.empty((size, *actions.shape[1:]), dtype=actions.dtype)]
        for new, old in zip(grown, self._record):
            new[:self._recorded] = old[:self._recorded]
        self._record = grown

    def fitness(self) -> np.ndarray:
        """Mean return over the episodes, per individual."""
        return self.returns.mean(axis=1)

    def mean_behaviors(self) -> np.ndarray:
        """Mean behaviour vector over the episodes, per individual."""
        b = np.stack([np.asarray(v) for v in self.behaviors])
        return b.reshape(self.n, self.episodes, -1).mean(axis=1)


