"""Stable-Baselines3 policies to DRLA model files (``drla import-sb3 POLICY.zip --out model.json``); needs torch.

What is converted: the network that picks the greedy action of an SB3 ``MlpPolicy``

* ``DQN``: the Q-network (``q_net``), a ``dqn`` model (act = argmax of the Q-values, as SB3's ``predict``);
* ``PPO`` / ``A2C`` with discrete actions: the actor (``mlp_extractor.policy_net`` then ``action_net``), whose
  argmax is SB3's deterministic action; saved as a ``dqn`` model so that a DQN tree's Play and Import take it
  (``kind="mlp"`` for an evolution tree);
* ``PPO`` / ``A2C`` with continuous actions (``Box``): the actor's mean, clipped to the action bounds as SB3's
  deterministic ``predict`` does; an ``mlp`` model.

The result is the JSON model format of docs/model-format.md (what Blender's Import / Play and ``drla play`` read)
and goes through ``model_from_dict``, so every check of the format applies.

Nothing in the zip is executed. An SB3 zip holds ``data`` (JSON in which some values embed pickles under
``":serialized:"``) and ``policy.pth`` (a PyTorch state dict). ``policy.pth`` is read with
``torch.load(weights_only=True)``, PyTorch's restricted unpickler that builds tensors and plain containers only
and refuses any other global; from ``data`` only plain JSON values are read (the spaces' ``_shape``, ``n``,
``low``/``high`` text, the policy class's module name, ``policy_kwargs``' ``activation_fn`` text), never a
``":serialized:"`` value. Sizes are bounded before anything is read. Not converted (refused with the reason):
SAC / TD3 / other policies, CNN or custom feature extractors, ``Dict`` / ``Discrete`` / image observations,
``MultiDiscrete`` actions, squashed (``squash_output``) actions. A ``VecNormalize``'s statistics live in another
file (a pickle) and are not read: a policy trained behind ``VecNormalize`` needs its normalisation applied by hand
(``obs_norm`` in the model file).
"""

from __future__ import annotations

import io
import json
import math
import re
import warnings
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from drla_core.base.spaces import Box, Discrete
from drla_core import __version__
from drla_core.io.model_io import FORMAT, MAX_PARAMS, VERSION, Model, ModelFormatError, model_from_dict

__all__ = ["sb3_to_model", "read_sb3_zip", "MAX_ZIP_BYTES", "Sb3Missing"]

#: An SB3 zip larger than this is refused before reading; so is a member that would unpack to more.
MAX_ZIP_BYTES = 256 * 1024 * 1024
MAX_DATA_BYTES = 16 * 1024 * 1024

#: ``activation_fn`` as SB3's ``data`` writes it (the class's text) -> the format's activation
_ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh", "LeakyReLU": "leaky_relu", "Sigmoid": "sigmoid", "Identity": "linear"}


class Sb3Missing(RuntimeError):
    """PyTorch (``torch``), which reads ``policy.pth``, is not installed."""


def _fail(message: str) -> NoReturn:
    raise ModelFormatError(message)


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise Sb3Missing("reading a Stable-Baselines3 zip needs PyTorch: pip install torch (or pip install "
                         "stable-baselines3)") from None
    return torch


def read_sb3_zip(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(data, state)``: the plain-JSON ``data`` member and ``policy.pth``'s tensors as float32 arrays.

    Nothing is unpickled except through ``torch.load(weights_only=True)``; raises ``ModelFormatError``."""
    raw_data, raw_policy = _members(Path(path))
    try:
        data = json.loads(raw_data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # (RecursionError: nested too deeply)
        _fail(f"'data' is not JSON ({type(exc).__name__}: {str(exc)[:80]})")
    if not isinstance(data, dict):
        _fail("'data' is not a JSON object")
    return data, _state_dict(raw_policy)


def _members(path: Path) -> tuple[bytes, bytes]:
    """The ``data`` and ``policy.pth`` members' bytes, their sizes checked before they are unpacked."""
    size = path.stat().st_size
    if size > MAX_ZIP_BYTES:
        _fail(f"{size} bytes, more than the limit of {MAX_ZIP_BYTES} for a Stable-Baselines3 zip")
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        _fail("not a Stable-Baselines3 model (not a zip file; SB3's model.save() writes a .zip)")
    with archive:
        members = {info.filename: info for info in archive.infolist()}
        for name in ("data", "policy.pth"):
            if name not in members:
                _fail(f"not a Stable-Baselines3 model: the zip has no '{name}' (it holds "
                      f"{', '.join(sorted(members)[:6]) or 'nothing'})")
        for name, limit in (("data", MAX_DATA_BYTES), ("policy.pth", MAX_ZIP_BYTES)):
            if members[name].file_size > limit:
                _fail(f"'{name}' unpacks to {members[name].file_size} bytes, more than the limit of {limit}")
        try:
            raw_data, raw_policy = archive.read("data"), archive.read("policy.pth")
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:  # a bad CRC, a truncated member
            _fail(f"the zip is damaged ({exc})")
    return raw_data, raw_policy


def _state_dict(raw_policy: bytes) -> dict[str, np.ndarray]:
    """``policy.pth``'s tensors, read by PyTorch's restricted unpickler (tensors and plain containers only)."""
    torch = _torch()
    try:
        with warnings.catch_warnings():  # (torch warns about an old pickle protocol: the refusal says it all)
            warnings.simplefilter("ignore")
            state = torch.load(io.BytesIO(raw_policy), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch's UnpicklingError, RuntimeError, EOFError, ...: all refusals
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if "weights_only" in str(exc) or "Unsupported global" in str(exc):
            first = "it holds objects other than tensors (a pickle payload); nothing of it was run"
        _fail(f"'policy.pth' is not a plain PyTorch state dict: {first[:200]}")
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        _fail("'policy.pth' is not a state dict (names -> tensors)")
    arrays = {}
    for name, tensor in state.items():
        if not tensor.is_floating_point():
            _fail(f"policy.pth: {name} is not a floating-point tensor ({tensor.dtype})")
        if tensor.numel() > MAX_PARAMS:
            _fail(f"policy.pth: {name} has {tensor.numel()} values, more than the limit of {MAX_PARAMS}")
        arrays[name] = tensor.detach().to(torch.float32).numpy()
    return arrays


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---- data: plain JSON values only ------------------------------------------------------------------------------


def _space_type(space: Any, what: str) -> str:
    if not isinstance(space, dict) or not isinstance(space.get(":type:"), str):
        _fail(f"data: no {what} space")
    match = re.fullmatch(r"<class '[\w.]*\.(\w+)'>", space[":type:"])
    return match.group(1) if match else space[":type:"]


def _shape(space: dict[str, Any], what: str) -> tuple[int, ...]:
    shape = space.get("_shape", space.get("shape"))
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and 0 < s <= 10**6
                                              for s in shape):
        _fail(f"data: the {what} space has no usable shape ({shape!r})")
    return tuple(shape)


def _bounds(text: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A Box's ``low``/``high`` from the text SB3 stores (numpy's repr); infinite where it cannot be read."""
    n = math.prod(shape)
    if isinstance(text, str) and "..." not in text and len(text) < 64 * n + 64:
        try:
            values = np.asarray([float(v) for v in text.replace("[", " ").replace("]", " ").split()], np.float64)
        except ValueError:
            values = np.zeros(0)
        if values.size == n:
            big = np.abs(values) >= np.finfo(np.float32).max  # Gymnasium writes "unbounded" as float32's largest
            return np.where(big, np.sign(values) * np.inf, values).reshape(shape)
    return np.full(shape, np.nan)


def _box(space: dict[str, Any], what: str) -> Box:
    shape = _shape(space, what)
    low, high = _bounds(space.get("low"), shape), _bounds(space.get("high"), shape)
    unread = np.isnan(low) | np.isnan(high)
    low, high = np.where(unread, -np.inf, low), np.where(unread, np.inf, high)
    return Box(low, high, shape)


def _activation(data: dict[str, Any], default: str) -> str:
    kwargs = data.get("policy_kwargs")
    text = kwargs.get("activation_fn") if isinstance(kwargs, dict) else None
    if text is None:
        return default
    match = re.fullmatch(r"<class '[\w.]*\.(\w+)'>", text) if isinstance(text, str) else None
    if not match or match.group(1) not in _ACTIVATIONS:
        _fail(f"policy_kwargs.activation_fn {text!r}: DRLA's activations are "
              f"{', '.join(f'torch.nn.{k}' for k in _ACTIVATIONS)}")
    return _ACTIVATIONS[match.group(1)]


def _layers(state: dict[str, np.ndarray], prefix: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The Linear layers ``prefix<i>.weight``/``.bias`` of an ``nn.Sequential``, in order."""
    found = sorted({int(m.group(1)) for k in state if (m := re.fullmatch(re.escape(prefix) + r"(\d+)\.weight", k))})
    layers = []
    for i in found:
        w, b = state[f"{prefix}{i}.weight"], state.get(f"{prefix}{i}.bias")
        if w.ndim != 2 or b is None or b.shape != (w.shape[0],):
            _fail(f"policy.pth: {prefix}{i} is not a Linear layer with a bias ({w.shape}, "
                  f"{None if b is None else b.shape})")
        layers.append((w, b))
    return layers


def _check_keys(state: dict[str, np.ndarray], known: tuple[str, ...], algo: str) -> None:
    other = sorted(k for k in state if not k.startswith(known))
    if other:
        _fail(f"policy.pth: parameters that are not part of an SB3 {algo} MlpPolicy ({', '.join(other[:4])}): a "
              f"custom or CNN feature extractor is not converted")


# ---- the conversion -----------------------------------------------------------------------------------------


def _network(state: dict[str, np.ndarray], module: Any) -> tuple[str, str, list[Any], Any]:
    """``(algorithm, its default activation, hidden layers, output layer)`` of the policy's acting network."""
    if any(k.startswith("q_net.") for k in state):
        _check_keys(state, ("q_net.", "q_net_target."), "DQN")
        layers = _layers(state, "q_net.q_net.")
        if not layers:
            _fail("policy.pth: the DQN's q_net has no layer")
        return "DQN", "relu", layers[:-1], layers[-1]
    if "action_net.weight" in state:
        _check_keys(state, ("mlp_extractor.", "action_net.", "value_net.", "log_std", "features_extractor.",
                            "pi_features_extractor.", "vf_features_extractor."), "PPO/A2C")
        extractors = [k for k in state if "features_extractor." in k]
        if extractors:
            _fail(f"policy.pth: a feature extractor with parameters ({extractors[0]}): only SB3's FlattenExtractor "
                  f"(no parameters, the MlpPolicy's) is converted")
        if "action_net.bias" not in state:
            _fail("policy.pth: action_net has no bias")
        head = (state["action_net.weight"], state["action_net.bias"])
        return "PPO/A2C", "tanh", _layers(state, "mlp_extractor.policy_net."), head
    what = f" ({module})" if isinstance(module, str) else ""
    _fail(f"not a DQN, PPO or A2C MlpPolicy{what}: policy.pth has neither q_net nor action_net (SAC, TD3 and "
          f"others are not converted)")


def _action_space(space: Any, algo: str, action_names: list[str] | None) -> Box | Discrete:
    act_type = _space_type(space, "action")  # (a dict, or refused)
    if act_type == "Discrete":
        n = space.get("n")
        if not isinstance(n, str | int) or not str(n).isdigit() or not 0 < int(n) <= 10**6:
            _fail(f"data: the action space's n is not a number ({n!r})")
        if str(space.get("start", "0")) != "0":
            _fail(f"a Discrete action space starting at {space.get('start')}: DRLA's actions start at 0")
        if action_names is not None and len(action_names) != int(n):
            _fail(f"{len(action_names)} action names for {n} actions")
        return Discrete(int(n), action_names)
    if act_type == "Box" and algo != "DQN":
        if action_names is not None:
            _fail("--actions: the actions are continuous (a Box); names are for discrete actions")
        return _box(space, "action")
    _fail(f"actions of type {act_type}: only Discrete (and, for PPO/A2C, Box) actions are converted")


def sb3_to_model(path: str | Path, kind: str | None = None, action_names: list[str] | None = None) -> Model:
    """A DRLA ``Model`` acting as the SB3 policy saved at ``path`` acts deterministically (module docstring).

    ``kind``: ``"dqn"`` or ``"mlp"`` (default: ``dqn`` for discrete actions, ``mlp`` for continuous ones);
    ``action_names``: one name per discrete action. Raises ``ModelFormatError`` (and ``Sb3Missing``)."""
    data, state = read_sb3_zip(path)
    policy = data.get("policy_class")
    obs_space = data.get("observation_space")
    obs_type = _space_type(obs_space, "observation")
    if obs_type != "Box" or not isinstance(obs_space, dict):
        _fail(f"observations of type {obs_type}: only Box observations (vectors of numbers) are converted")
    observation_space = _box(obs_space, "observation")
    if obs_space.get("dtype") == "uint8" and len(observation_space.shape) == 3:
        _fail("image observations (uint8, 3 dimensions): SB3 scales them by 1/255 and usually reads them with a "
              "CNN; only vector observations are converted")
    algo, default_act, hidden_layers, head = _network(state, policy.get("__module__") if isinstance(policy, dict)
                                                      else None)
    raw_kwargs = data.get("policy_kwargs")
    kwargs: dict[str, Any] = raw_kwargs if isinstance(raw_kwargs, dict) else {}
    if kwargs.get("squash_output") is True:
        _fail("squash_output: the actions are squashed by tanh (gSDE); not converted")
    activation = _activation(data, default_act)
    action_space = _action_space(data.get("action_space"), algo, action_names)
    n_in = observation_space.size
    n_out = action_space.n if isinstance(action_space, Discrete) else action_space.size
    chain = [*hidden_layers, head]
    if chain[0][0].shape[1] != n_in:
        _fail(f"policy.pth: the first layer reads {chain[0][0].shape[1]} inputs but the observation space has "
              f"{n_in} values")
    for (w, _), (w2, _) in zip(chain, chain[1:]):
        if w2.shape[1] != w.shape[0]:
            _fail(f"policy.pth: layer shapes do not chain: {tuple(w.shape)} then {tuple(w2.shape)}")
    if head[0].shape[0] != n_out:
        _fail(f"policy.pth: the output layer has {head[0].shape[0]} outputs but the action space has {n_out}")
    if kind is None:
        kind = "dqn" if isinstance(action_space, Discrete) else "mlp"
    elif kind == "dqn" and not isinstance(action_space, Discrete):
        _fail("--kind dqn: a dqn model chooses among discrete actions; these are continuous (use mlp)")
    outputs = "Q-values" if algo == "DQN" else "action logits" if isinstance(action_space, Discrete) else \
        "action means"
    meta: dict[str, Any] = {"drla_version": __version__, "created": _now_iso(),
                            "imported_from": f"Stable-Baselines3 {algo} MlpPolicy", "sb3_outputs": outputs}
    for key, name in (("num_timesteps", "training_steps"), ("seed", "seed")):
        if isinstance(data.get(key), int) and not isinstance(data.get(key), bool):
            meta[name] = data[key]
    params = {}
    for i, (w, b) in enumerate(chain):
        params[f"layers.{i}.weight"] = w.astype(np.float32).tolist()
        params[f"layers.{i}.bias"] = b.astype(np.float32).tolist()
    return model_from_dict({
        "format": FORMAT, "version": VERSION, "kind": kind, "params": params,
        "architecture": {"input_size": n_in, "hidden": [{"size": int(w.shape[0]), "activation": activation}
                                                        for w, _ in hidden_layers],
                         "output_size": n_out, "output_activation": "linear"},
        "observation_space": observation_space.to_dict(), "action_space": action_space.to_dict(),
        "obs_norm": None, "meta": meta, "extra": {}})


def cmd_import_sb3(args: Any) -> int:
    from drla_core.io.model_io import save_model

    from .common import CLIError

    names = [n.strip() for n in args.actions.split(",")] if args.actions else None
    if Path(args.policy).is_dir():
        raise CLIError(f"{args.policy} is a folder: give the .zip file SB3's model.save() wrote")
    try:
        model = sb3_to_model(args.policy, kind=args.kind, action_names=names)
        path = save_model(args.out, model)
    except FileNotFoundError:
        raise CLIError(f"no such file: {args.policy}") from None
    except (Sb3Missing, ModelFormatError) as exc:
        raise CLIError(f"{args.policy}: {exc}") from None
    except OSError as exc:
        raise CLIError(f"cannot read {args.policy} or write {args.out}: {exc.strerror or exc}") from None
    arch = model.network.architecture()
    layers = " -> ".join([str(arch["input_size"])] + [f"{h['size']} {h['activation']}" for h in arch["hidden"]]
                         + [f"{arch['output_size']} {arch['output_activation']}"])
    print(f"wrote {path}: DRLA model (kind {model.kind}) from {model.meta['imported_from']}, network {layers}")
    return 0
