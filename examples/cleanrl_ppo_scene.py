"""PPO on a Blender scene, CleanRL style: one file, PyTorch, the scene's copies as a Gymnasium vector environment.

    python examples/cleanrl_ppo_scene.py --blend scenes/tank/tank.blend --tree Tank --num-envs 8 \\
        --total-timesteps 200000 --seed 1

The .blend's tree becomes ``gymnasium.make_vec("drla/Scene-v0", num_envs=N, vectorization_mode=
"vector_entry_point", ...)``: N copies of its environment in one scene, stepped together, with Gymnasium's
same-step autoreset (an ended copy's next episode starts in the step that ended it). The algorithm is CleanRL's
``ppo.py`` (Huang et al.): GAE, clipped surrogate, value clipping, entropy bonus, annealed learning rate; a
Discrete action space (DQN-style trees: the tank, the Reach example). Needs ``bpy`` (Python 3.11,
``pip install bpy==5.0.1``), ``gymnasium`` and ``torch``. Each update prints one line; the trained policy is saved
with ``--save`` (a torch state dict).
"""

from __future__ import annotations

import argparse
import time
from collections import deque

import gymnasium
import numpy as np
import torch
from torch import nn
from torch.distributions.categorical import Categorical

import drla.gym  # noqa: F401  (registers drla/Scene-v0)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blend", required=True, help="the .blend file")
    p.add_argument("--tree", default=None, help="its DRLA tree (needed when it has several)")
    p.add_argument("--num-envs", type=int, default=8, help="copies of the environment stepped together")
    p.add_argument("--total-timesteps", type=int, default=100_000, help="steps summed over the copies")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--num-steps", type=int, default=128, help="steps per copy per update (the rollout)")
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--save", default=None, help="write the trained policy's state dict here")
    args = p.parse_args(argv)
    args.batch_size = args.num_envs * args.num_steps
    args.minibatch_size = max(1, args.batch_size // args.num_minibatches)
    args.num_updates = max(1, args.total_timesteps // args.batch_size)
    return args


def layer_init(layer: nn.Linear, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_size: int, n_actions: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(layer_init(nn.Linear(obs_size, 64)), nn.Tanh(), layer_init(nn.Linear(64, 64)),
                                    nn.Tanh(), layer_init(nn.Linear(64, 1), std=1.0))
        self.actor = nn.Sequential(layer_init(nn.Linear(obs_size, 64)), nn.Tanh(), layer_init(nn.Linear(64, 64)),
                                   nn.Tanh(), layer_init(nn.Linear(64, n_actions), std=0.01))

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(self, x: torch.Tensor, action: torch.Tensor | None = None):
        probs = Categorical(logits=self.actor(x))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = True
    envs = gymnasium.make_vec("drla/Scene-v0", num_envs=args.num_envs, vectorization_mode="vector_entry_point",
                              blend=args.blend, tree=args.tree)
    envs = gymnasium.wrappers.vector.RecordEpisodeStatistics(envs)
    try:
        if not isinstance(envs.single_action_space, gymnasium.spaces.Discrete):
            raise SystemExit(f"this PPO takes a Discrete action space; {args.blend}'s tree acts in "
                             f"{envs.single_action_space}")
        obs_size = int(np.prod(envs.single_observation_space.shape))
        agent = Agent(obs_size, int(envs.single_action_space.n))
        optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

        obs = torch.zeros((args.num_steps, args.num_envs, obs_size))
        actions = torch.zeros((args.num_steps, args.num_envs))
        logprobs = torch.zeros((args.num_steps, args.num_envs))
        rewards = torch.zeros((args.num_steps, args.num_envs))
        dones = torch.zeros((args.num_steps, args.num_envs))
        values = torch.zeros((args.num_steps, args.num_envs))

        global_step, start = 0, time.time()
        returns: deque[float] = deque(maxlen=50)  # the last 50 episodes' returns
        episodes = 0
        next_obs_np, _ = envs.reset(seed=args.seed)
        next_obs = torch.as_tensor(next_obs_np.reshape(args.num_envs, -1), dtype=torch.float32)
        next_done = torch.zeros(args.num_envs)

        for update in range(1, args.num_updates + 1):
            for group in optimizer.param_groups:  # annealed learning rate
                group["lr"] = (1.0 - (update - 1.0) / args.num_updates) * args.learning_rate
            for step in range(args.num_steps):
                global_step += args.num_envs
                obs[step], dones[step] = next_obs, next_done
                with torch.no_grad():
                    action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
                actions[step], logprobs[step] = action, logprob
                next_obs_np, reward, terminated, truncated, infos = envs.step(action.numpy())
                rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
                next_obs = torch.as_tensor(next_obs_np.reshape(args.num_envs, -1), dtype=torch.float32)
                next_done = torch.as_tensor(terminated | truncated, dtype=torch.float32)
                if "_episode" in infos:  # RecordEpisodeStatistics: each ended copy's return
                    returns.extend(float(r) for r in infos["episode"]["r"][infos["_episode"]])
                    episodes += int(infos["_episode"].sum())

            with torch.no_grad():  # generalised advantage estimation
                next_value = agent.get_value(next_obs).reshape(1, -1)
                advantages = torch.zeros_like(rewards)
                last = torch.zeros(args.num_envs)
                for t in reversed(range(args.num_steps)):
                    if t == args.num_steps - 1:
                        nonterminal, next_values = 1.0 - next_done, next_value
                    else:
                        nonterminal, next_values = 1.0 - dones[t + 1], values[t + 1]
                    delta = rewards[t] + args.gamma * next_values * nonterminal - values[t]
                    last = delta + args.gamma * args.gae_lambda * nonterminal * last
                    advantages[t] = last
                targets = advantages + values

            b_obs, b_logprobs = obs.reshape(-1, obs_size), logprobs.reshape(-1)
            b_actions, b_advantages = actions.reshape(-1), advantages.reshape(-1)
            b_returns, b_values = targets.reshape(-1), values.reshape(-1)
            indices = np.arange(args.batch_size)
            for _ in range(args.update_epochs):
                np.random.shuffle(indices)
                for first in range(0, args.batch_size, args.minibatch_size):
                    mb = indices[first:first + args.minibatch_size]
                    _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions.long()[mb])
                    ratio = (newlogprob - b_logprobs[mb]).exp()
                    adv = b_advantages[mb]
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8) if len(mb) > 1 else adv
                    pg_loss = torch.max(-adv * ratio,
                                        -adv * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)).mean()
                    newvalue = newvalue.view(-1)
                    clipped = b_values[mb] + torch.clamp(newvalue - b_values[mb], -args.clip_coef, args.clip_coef)
                    v_loss = 0.5 * torch.max((newvalue - b_returns[mb]) ** 2, (clipped - b_returns[mb]) ** 2).mean()
                    loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
                    optimizer.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                    optimizer.step()

            mean = f"{np.mean(returns):.3f}" if returns else "n/a"
            sps = global_step / (time.time() - start)
            print(f"update {update}/{args.num_updates} steps {global_step} sps {sps:.0f} episodes {episodes} "
                  f"mean_return {mean}", flush=True)
        if args.save:
            torch.save(agent.state_dict(), args.save)
    finally:
        envs.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
