"""Merging networks: weight averaging for relatives, distillation for anything with the same spaces.

- ``average``: the element-wise (weighted) mean of the parameters. It only makes sense for networks
  that share an ancestor, i.e. were trained from the same initial weights (their units still line
  up; two independently initialised networks compute with permuted units and their mean is noise).
  The ancestry record in ``meta["ancestry"]`` (``lineage.py``) says whether they do; anything else
  is refused with the reason.
- ``distill``: policy distillation (Rusu et al., 2016). Each teacher plays its own environment and
  the states it visits are recorded (``record_states``); a student network is trained to output
  what each teacher outputs on that teacher's states, here with the paper's best loss: the KL
  divergence between ``softmax(q_teacher / temperature)`` (temperature 0.01: almost the greedy
  action) and ``softmax(q_student)``. The student's outputs are then action preferences
  whose argmax is the teachers' greedy action, not calibrated Q-values (``loss="mse"`` regresses the
  Q-values themselves instead).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base.env import Env
from ..base.lineage import ancestry_record, params_digest
from ..nn.mlp import MLP, LayerSpec
from ..io.model_io import Model
from ..nn.optim import Adam

__all__ = ["MergeError", "check_average", "average", "record_states", "distill", "agreement", "greedy_actions"]


class MergeError(ValueError):
    """The networks cannot be merged this way; the message says why."""


def _name(i: int, names: Sequence[str] | None) -> str:
    return names[i] if names is not None else f"network {i + 1}"


def _check_spaces(models: Sequence[Model], names: Sequence[str] | None) -> None:
    if len(models) < 2:
        raise MergeError("merging needs at least two networks")
    first = models[0]
    for i, m in enumerate(models[1:], 1):
        if m.observation_space.shape != first.observation_space.shape:
            raise MergeError(f"{_name(i, names)} reads observations of shape {m.observation_space.shape}, "
                             f"{_name(0, names)} of shape {first.observation_space.shape}: one network cannot read "
                             "both")
        if m.action_space != first.action_space:
            raise MergeError(f"{_name(i, names)} acts in {m.action_space!r}, {_name(0, names)} in "
                             f"{first.action_space!r}: their outputs do not mean the same thing")


def check_average(models: Sequence[Model], names: Sequence[str] | None = None) -> None:
    """Raise ``MergeError`` with the reason if these networks cannot be averaged weight by weight."""
    _check_spaces(models, names)
    first = models[0]
    for i, m in enumerate(models):
        if not isinstance(m.network, MLP):
            raise MergeError(f"{_name(i, names)} is a graph network (NEAT): only MLPs average; use distillation")
        if m.obs_norm is not None and (first.obs_norm is None or any(
                not np.array_equal(m.obs_norm[k], first.obs_norm[k]) for k in ("mean", "std"))):
            raise MergeError(f"{_name(i, names)} normalises its inputs differently from {_name(0, names)}")
        if (m.obs_norm is None) != (first.obs_norm is None):
            raise MergeError(f"{_name(i, names)} normalises its inputs differently from {_name(0, names)}")
    shapes = [m.network.architecture() for m in models]
    for i, arch in enumerate(shapes[1:], 1):
        if arch != shapes[0]:
            raise MergeError(f"{_name(i, names)} has another shape ({_describe(arch)}) than {_name(0, names)} "
                             f"({_describe(shapes[0])}): averaging needs identical layers; use distillation")
    origins = []
    for i, m in enumerate(models):
        anc = m.meta.get("ancestry")
        if not isinstance(anc, dict) or not isinstance(anc.get("origin"), str):
            raise MergeError(f"{_name(i, names)} has no ancestry record (meta.ancestry): nothing shows it shares an "
                             "ancestor with the others, and averaging unrelated networks gives noise; use distillation")
        origins.append(anc["origin"])
    for i, origin in enumerate(origins[1:], 1):
        if origin != origins[0]:
            raise MergeError(f"{_name(i, names)} and {_name(0, names)} do not share an ancestor (initial weights "
                             f"{origin} and {origins[0]}): their units do not line up, so their average is noise; "
                             "use distillation")


def _describe(arch: dict[str, Any]) -> str:
    return " -> ".join([str(arch["input_size"])] + [f"{h['size']} {h['activation']}" for h in arch["hidden"]]
                       + [f"{arch['output_size']} {arch['output_activation']}"])


def average(models: Sequence[Model], weights: Sequence[float] | None = None,
            names: Sequence[str] | None = None) -> Model:
    """The weighted mean of the networks' parameters (equal weights by default); ``check_average`` first."""
    check_average(models, names)
    w = np.ones(len(models)) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (len(models),) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise MergeError(f"weights must be {len(models)} non-negative numbers, not all zero")
    w = w / w.sum()
    first = models[0]
    assert isinstance(first.network, MLP)  # check_average refused anything else
    net = first.network.copy()
    net.params[...] = sum(float(wi) * m.network.params.astype(np.float64) for wi, m in zip(w, models))
    parents = [m.meta["ancestry"].get("id", "") for m in models]
    meta = {"merge": {"method": "average", "weights": w.tolist(), "sources": [_name(i, names) for i in
                                                                              range(len(models))]},
            "ancestry": ancestry_record(first.meta["ancestry"]["origin"], net.params, parents)}
    meta.update(_common_meta(models))
    obs_norm = None if first.obs_norm is None else {k: v.tolist() for k, v in first.obs_norm.items()}
    return Model(net, first.observation_space, first.action_space, kind=first.kind, obs_norm=obs_norm, meta=meta)


def _common_meta(models: Sequence[Model]) -> dict[str, Any]:
    """The environment name, when every source network was trained on the same one (``drla eval`` reads it)."""
    env = models[0].meta.get("env")
    return {"env": env} if env is not None and all(m.meta.get("env") == env for m in models) else {}


def greedy_actions(model: Model, states: np.ndarray) -> np.ndarray:
    """The argmax of the network's output for each state."""
    return np.asarray(model.predict(states)).argmax(axis=-1)


def record_states(policy: Callable[[Any], Any] | Model, env: Env, n_states: int, seed: int = 0,
                  epsilon: float = 0.05) -> np.ndarray:
    """``n_states`` observations the policy visits in ``env`` (acting epsilon-greedy: a few states off its path).

    A little exploration matters: the student also meets states where it did not do exactly what
    the teacher does, and must know the way back from them (DAgger's argument, Ross et al. 2011).
    """
    act = policy.act if isinstance(policy, Model) else policy
    rng = np.random.default_rng(seed)
    out = np.empty((int(n_states), int(np.prod(env.observation_space.shape))), dtype=np.float32)
    obs, _ = env.reset(seed=seed)
    for i in range(len(out)):
        out[i] = np.ravel(obs)
        action = env.action_space.sample(rng) if rng.random() < epsilon else act(obs)
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            obs, _ = env.reset()
    return out


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def distill(teachers: Sequence[Model], states: Sequence[np.ndarray], hidden: Sequence[Any] | None = None,
            epochs: int = 60, batch_size: int = 64, lr: float = 2e-3, seed: int = 0, loss: str = "kl",
            temperature: float = 0.01, names: Sequence[str] | None = None,
            normalize: bool = True) -> tuple[Model, dict[str, Any]]:
    """Train one student on every teacher's outputs over that teacher's states (``states[i]`` for ``teachers[i]``).

    ``hidden``: the student's hidden layers (default: the widest teacher's). ``normalize``: the student
    reads its inputs standardised by the recorded states' mean and std (saved as the model's
    ``obs_norm``): raw observations on very different scales (CartPole's angle and velocities) make
    the teachers' decision boundaries slow to learn. Returns the student
    model and ``{"agreement": [share of each teacher's states where the student's greedy action is
    the teacher's], "loss": last epoch's mean loss, "epochs"}``.
    """
    if len(teachers) != len(states):
        raise MergeError(f"{len(teachers)} teachers but {len(states)} sets of states")
    if len(teachers) == 1:
        _check_spaces([teachers[0], teachers[0]], names)
    else:
        _check_spaces(teachers, names)
    if loss not in ("kl", "mse"):
        raise MergeError(f"loss must be 'kl' or 'mse', got {loss!r}")
    first = teachers[0]
    n_in = int(np.prod(first.observation_space.shape))
    xs, targets, owner = [], [], []
    for i, (teacher, s) in enumerate(zip(teachers, states)):
        s = np.asarray(s, dtype=np.float32).reshape(-1, n_in)
        if len(s) == 0:
            raise MergeError(f"no states recorded for {_name(i, names)}")
        q = np.asarray(teacher.predict(s), dtype=np.float64)
        targets.append(_softmax(q / temperature) if loss == "kl" else q)
        xs.append(s)
        owner.append(np.full(len(s), i))
    x, y, who = np.concatenate(xs), np.concatenate(targets).astype(np.float32), np.concatenate(owner)
    # every teacher weighs the same, whatever the number of its states
    sample_weight = (len(x) / (len(teachers) * np.bincount(who)))[who].astype(np.float32)
    if hidden is None:
        widest = max(teachers, key=lambda t: sum(h.size for h in getattr(t.network, "hidden", [])))
        hidden = [LayerSpec(h.size, h.activation) for h in getattr(widest.network, "hidden", [])] or [(64, "relu")] * 2
    obs_norm = None
    if normalize:
        mean, std = x.mean(axis=0), x.std(axis=0)
        std = np.where(std > 1e-6, std, 1.0).astype(np.float32)
        obs_norm = {"mean": mean.tolist(), "std": std.tolist()}
        x = ((x - mean) / std).astype(np.float32)
    rng = np.random.default_rng(seed)
    student = MLP(n_in, hidden, y.shape[1], rng=rng)
    origin = params_digest(student.params)
    opt = Adam(student.params, lr=lr)
    last = 0.0
    for _ in range(int(epochs)):
        order = rng.permutation(len(x))
        total = 0.0
        for start in range(0, len(x), batch_size):
            rows = order[start:start + batch_size]
            out = student.forward_train(x[rows])
            sw = sample_weight[rows][:, None]
            if loss == "kl":
                p = _softmax(out.astype(np.float64))
                target = y[rows]
                total += float(np.sum(sw * target * (np.log(np.maximum(target, 1e-12)) - np.log(np.maximum(p, 1e-12)))))
                grad = (sw * (p - target) / len(rows)).astype(np.float32)
            else:
                diff = out - y[rows]
                total += float(np.sum(sw * diff * diff))
                grad = (2.0 * sw * diff / len(rows)).astype(np.float32)
            opt.step(student.backward(grad))
        last = total / len(x)
    model = Model(student, first.observation_space, first.action_space, kind=first.kind, obs_norm=obs_norm, meta={})
    agree = [float(np.mean(greedy_actions(model, s) == greedy_actions(t, s))) for t, s in zip(teachers, xs)]
    parents = [t.meta.get("ancestry", {}).get("id", "") if isinstance(t.meta.get("ancestry"), dict) else ""
               for t in teachers]
    model.meta.update({
        "merge": {"method": "distill", "loss": loss, "temperature": temperature, "epochs": int(epochs),
                  "states": [len(s) for s in xs], "agreement": agree,
                  "sources": [_name(i, names) for i in range(len(teachers))]},
        "ancestry": ancestry_record(origin, student.params, parents),
        **_common_meta(teachers),
    })
    return model, {"agreement": agree, "loss": last, "epochs": int(epochs)}


def agreement(student: Model, teacher: Model, states: np.ndarray) -> float:
    """Share of ``states`` on which the two pick the same greedy action."""
    return float(np.mean(greedy_actions(student, states) == greedy_actions(teacher, states)))
