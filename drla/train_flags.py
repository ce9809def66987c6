"""``drla train``'s network flags, shared by the built-in environments (``cli``) and .blend trees (``scene``):
``--metrics`` and ``--tensorboard`` (dashboards) and ``--grow`` (a growth rule), and what a resumed run keeps of them;
and ``--agent ppo``'s settings (``PPOConfig``'s fields, one flag each, typed with ``Range``) and how its agent is built.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from drla_core.nets.growth import GrowthRule
from drla_core.rl.dqn import DQNConfig
from drla_core.rl.ppo import SCHEDULES, PPOAgent, PPOConfig
from drla_core.rl.sac import SACConfig

from .common import CLIError, float_range, int_range, parse_hidden
from .dashboards import MetricsWriter, open_tensorboard


def add_train_flags(p: argparse.ArgumentParser) -> None:
    """``drla train``'s dashboard and growth flags (DQN, on a built-in environment or a scene's tree)."""
    p.add_argument("--metrics", metavar="FILE.jsonl", help="append every metric to this file as JSON lines "
                   "(episode, train, eval, growth, end events)")
    p.add_argument("--tensorboard", metavar="DIR", help="write TensorBoard event files here (needs tensorboardX: "
                   "pip install 'drla[tensorboard]')")
    p.add_argument("--grow", type=int_range(1, 1000), metavar="K",
                   help="grow the network when the evaluation return has not improved for K evaluations: each "
                   "hidden layer x4, up to 256 units, 4 times at most (a .blend tree whose Network node grows "
                   "keeps its own rule, with patience K)")


def train_callbacks(args: argparse.Namespace, resumed: Any = None) -> list[Any]:
    """The callbacks those flags ask for (a DQN run). A run resumed (``resumed``: its checkpoint) that grew by a
    rule keeps growing by it, counters included, without ``--grow`` given again."""
    out: list[Any] = []
    if getattr(args, "grow", None):
        if args.grow < 1:
            raise CLIError("--grow: give a number of evaluations, 1 or more")
        out.append(GrowthRule(patience=args.grow, max_grows=4, max_size=256, factor=4))
    else:
        saved = saved_growth_rule(resumed)
        if saved is not None:
            out.append(GrowthRule.from_state(saved))
    return out + dashboard_callbacks(args)


def check_resume_hidden(args: argparse.Namespace, ckpt: Any) -> None:
    """A run whose network grew resumes at its grown size: ``--hidden`` given again (the run's first command
    repeated) is refused with that reason rather than as "the network differs"."""
    meta = getattr(ckpt, "meta", None)
    grown = isinstance(meta, dict) and (meta.get("agent") or {}).get("growth")
    if grown and getattr(args, "hidden", None):
        sizes = ", ".join(f"{h['size']} {h['activation']}" if isinstance(h, dict) else str(h)
                          for h in (meta.get("agent") or {}).get("architecture", {}).get("hidden", []))
        raise CLIError(f"--hidden: the network of {ckpt.path} grew during training (to {sizes}); a resumed run keeps "
                       "its grown network: drop --hidden")


def saved_growth_rule(ckpt: Any) -> dict[str, Any] | None:
    """The growth rule's state a DQN checkpoint holds (``checkpoint.callback_states``), or None."""
    meta = getattr(ckpt, "meta", None)
    saved = (meta.get("callbacks") or {}).get(GrowthRule.checkpoint_key) if isinstance(meta, dict) else None
    return saved if isinstance(saved, dict) and isinstance(saved.get("settings"), dict) else None


def dashboard_callbacks(args: argparse.Namespace) -> list[Any]:
    """``--metrics`` and ``--tensorboard``: one ``MetricsWriter`` (none when neither is given)."""
    out: list[Any] = []
    if getattr(args, "metrics", None) or getattr(args, "tensorboard", None):
        tb = None
        if args.tensorboard:
            try:
                tb = open_tensorboard(args.tensorboard)
            except ImportError as exc:
                raise CLIError(str(exc)) from exc
        out.append(MetricsWriter(args.metrics, tb))
    return out


# ---- --agent ppo ---------------------------------------------------------------------------------------------

#: PPOConfig fields with their own flag (the ones DQN also has: --learning-rate, --gamma, --batch-size,
#: --max-grad-norm, --hidden, --adam-eps serve both), each typed with its bounds.
PPO_TYPES: dict[str, Any] = {
    "n_steps": int_range(1, 1_000_000), "n_epochs": int_range(1, 1_000), "gae_lambda": float_range(0.0, 1.0),
    "clip_range": float_range(0.0, 10.0, low_open=True), "clip_range_vf": float_range(0.0, 1e6),
    "ent_coef": float_range(0.0, 100.0), "vf_coef": float_range(0.0, 100.0), "log_std_init": float_range(-20.0, 5.0),
}
PPO_CHOICES = {"lr_schedule": SCHEDULES, "clip_schedule": SCHEDULES}
PPO_SWITCHES = ("normalize_advantage", "normalize_obs", "normalize_reward", "shared_trunk", "ortho_init")
PPO_ONLY = (*PPO_TYPES, *PPO_CHOICES, *PPO_SWITCHES)
SHARED = ("learning_rate", "gamma", "batch_size", "max_grad_norm", "hidden", "adam_eps")
#: DQNConfig fields (and flags) that PPO does not read: refused with --agent ppo, never ignored.
DQN_ONLY = tuple(f.name for f in dataclasses.fields(DQNConfig) if f.name not in (*SHARED, "total_timesteps")) + (
    "grow",)
#: rl-zoo's settings per built-in environment (CartPole-v1: n_envs 8, 1e5 steps; Pendulum-v1: n_envs 4, observations
#: and rewards normalised, but without gSDE, so shorter rollouts (256 steps, not 1024) and a smaller initial noise:
#: greedy return -123 after 1e5 steps at seed 0, where 1024-step rollouts reached -724); "copies" and "steps" are
#: the run's.
PPO_ENV_DEFAULTS: dict[str, dict[str, Any]] = {
    "cartpole": {"copies": 8, "steps": 100_000, "n_steps": 32, "batch_size": 256, "gae_lambda": 0.8, "gamma": 0.98,
                 "n_epochs": 20, "ent_coef": 0.0, "learning_rate": 1e-3, "lr_schedule": "linear", "clip_range": 0.2,
                 "clip_schedule": "linear"},
    "pendulum": {"copies": 4, "steps": 100_000, "n_steps": 256, "gae_lambda": 0.95, "gamma": 0.9, "n_epochs": 10,
                 "learning_rate": 1e-3, "normalize_obs": True, "normalize_reward": True, "log_std_init": -0.5},
}
PPO_HELP = {
    "n_steps": "Steps of each copy per rollout: PPO learns every N vector steps (N x copies transitions).",
    "lr_schedule": "constant, or linear: the learning rate (--learning-rate at the start) falls to 0 at the end.",
    "clip_schedule": "constant, or linear: the clip range falls to 0 at the end of training.",
}


def add_ppo_flags(p: argparse.ArgumentParser) -> None:
    """``--agent ppo``'s own settings (``PPOConfig``), one flag each."""
    group = p.add_argument_group(
        "PPO hyper-parameters (--agent ppo)",
        "Defaults: rl-zoo's settings per built-in environment (cartpole: 8 copies, 100000 steps); --learning-rate, "
        "--gamma, --batch-size, --max-grad-norm, --hidden and --adam-eps apply to PPO too.")
    defaults = PPOConfig()
    for name in PPO_ONLY:
        flag = "--" + name.replace("_", "-")
        text = PPO_HELP.get(name) or _doc(PPOConfig, name) or name
        if name in PPO_SWITCHES:
            group.add_argument(flag, action=argparse.BooleanOptionalAction, default=None,
                               help=f"{text} (default: {'on' if getattr(defaults, name) else 'off'})")
        elif name in PPO_CHOICES:
            group.add_argument(flag, choices=PPO_CHOICES[name], default=None,
                               help=f"{text} (default {getattr(defaults, name)})")
        else:
            kind = PPO_TYPES[name]
            group.add_argument(flag, type=kind, default=None, metavar=kind.__name__.upper(),
                               help=f"{text} (default {getattr(defaults, name):g})")


def _doc(cls: type, name: str) -> str:
    import ast
    import inspect
    import re

    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body  # type: ignore[attr-defined]
    for stmt, nxt in zip(body, body[1:]):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name
                and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)):
            return re.sub(r"``([^`]*)``", r"\1", " ".join(str(nxt.value.value).split()))
    return ""


def check_agent_flags(args: argparse.Namespace) -> None:
    """Refuse the flags of the other agent: DQN's with ``--agent ppo``, PPO's with DQN (never silently ignored)."""
    other, words = (DQN_ONLY, "a DQN setting") if args.agent == "ppo" else (PPO_ONLY, "a PPO setting")
    given = [name for name in other if getattr(args, name, None) is not None]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise CLIError(f"{flag}: {words}; --agent {args.agent} does not use it (drop {flag})")


def ppo_defaults(target: str) -> dict[str, Any]:
    """The run's defaults for ``--agent ppo`` on ``target``: copies, steps and the config's."""
    return {"copies": 1, "steps": 100_000, **PPO_ENV_DEFAULTS.get(target, {})}


def ppo_agent(args: argparse.Namespace, env: Any, ckpt: Any, steps: int) -> PPOAgent:
    """The PPO agent of ``drla train TARGET --agent ppo``: the resumed run's config (or the environment's
    defaults), then the flags given now."""
    if ckpt is not None:
        fields = dict(ckpt.config)
    else:
        fields = {k: v for k, v in ppo_defaults(args.target).items() if k not in ("copies", "steps")}
    for name in (*SHARED, *PPO_ONLY):
        value = getattr(args, name, None)
        if value is not None:
            fields[name] = parse_hidden(value) if name == "hidden" else value
    fields["total_timesteps"] = steps
    try:
        return PPOAgent(env.observation_space, env.action_space, PPOConfig(**fields), seed=args.seed)
    except (TypeError, ValueError) as exc:
        what = f"--resume: {ckpt.path} holds a PPO configuration this DRLA cannot use: " if ckpt is not None else ""
        raise CLIError(f"{what}{exc}") from exc


def ppo_resume_config(ckpt: Any) -> PPOConfig:
    """The ``PPOConfig`` a PPO checkpoint's run trained with (a .blend's PPO tree, resumed)."""
    try:
        return PPOConfig(**ckpt.config)
    except (TypeError, ValueError) as exc:
        raise CLIError(f"--resume: {ckpt.path} holds a PPO configuration this DRLA cannot use: {exc}") from exc


def sac_resume_config(ckpt: Any) -> SACConfig:
    """The ``SACConfig`` a SAC checkpoint's run trained with (a .blend's SAC tree resumes with it too)."""
    try:
        return SACConfig(**ckpt.config)
    except (TypeError, ValueError) as exc:
        raise CLIError(f"--resume: {ckpt.path} holds a SAC configuration this DRLA cannot use: {exc}") from exc
