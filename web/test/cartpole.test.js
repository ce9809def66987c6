// The demo's CartPole (web/demos/cartpole.js) against drla_core/envs/cartpole.py's own trajectories.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { CartPole } from "../demos/cartpole.js";

const episodes = JSON.parse(readFileSync(new URL("../conformance/cartpole_physics.json", import.meta.url), "utf8"));

test("CartPole in JS follows Python's states step by step", () => {
  for (const ep of episodes) {
    const env = new CartPole();
    env.reset(ep.start);
    ep.actions.forEach((a, t) => {
      const { obs, terminated, truncated } = env.step(a);
      env.state.forEach((v, i) => assert.ok(Math.abs(v - ep.states[t][i]) <= 1e-12 * Math.max(1, Math.abs(ep.states[t][i])),
        `step ${t} variable ${i}: ${v} vs ${ep.states[t][i]}`));
      assert.equal(terminated || truncated, ep.done[t]);
      assert.equal(obs[2], Math.fround(ep.states[t][2]));
    });
  }
  assert.throws(() => new CartPole().step(0), /reset/);
});
