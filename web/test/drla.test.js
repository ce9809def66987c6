// The module's API and its refusals of hostile input (each within bounded time: no file can hang it).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ARCHITECTURES, LIMITS, load, ModelFormatError, parseText } from "../drla.js";

const DIR = fileURLToPath(new URL("../conformance/", import.meta.url));
const goodText = readFileSync(DIR + "dqn_relu.json", "utf8");
const good = () => JSON.parse(goodText);
const refuses = (input, message) => assert.throws(() => load(input), (err) => {
  assert.ok(err instanceof ModelFormatError, String(err));
  assert.ok(err.message.includes(message), `"${err.message}" lacks "${message}"`);
  return true;
});

test("text, bytes and objects load alike", () => {
  const x = [0.1, -0.2, 0.3, 0.05];
  const a = load(goodText).forward(x);
  assert.deepEqual(load(new TextEncoder().encode(goodText)).forward(x), a);
  assert.deepEqual(load(new TextEncoder().encode(goodText).buffer).forward(x), a);
  assert.deepEqual(load(good()).forward(x), a);
  assert.equal(load(goodText).actionNames.join(), "left,right");
});

test("a 400-digit integer weight is refused, not turned into Infinity", () => {
  refuses(goodText.replace('"layers.0.bias":[', '"layers.0.bias":[' + "1".repeat(400) + ","), "is too large");
  const d = good();
  d.params["layers.0.bias"][0] = 1e300;
  refuses(d, "is too large");
});

test("a text over 16 MiB is refused by its length before parsing", () => {
  const huge = goodText.replace('"extra":{}', '"extra":{"n":[' + "0.125,".repeat(3_000_000) + "0]}");
  assert.ok(huge.length > LIMITS.fileBytes);
  const t0 = performance.now();
  refuses(huge, `more than the limit of ${LIMITS.fileBytes}`);
  assert.ok(performance.now() - t0 < 5000);
  refuses(new Uint8Array(LIMITS.fileBytes + 1), `more than the limit of ${LIMITS.fileBytes}`);
  const wide = "\u00e9".repeat(LIMITS.fileBytes / 2 + 1); // fewer characters than the limit, more bytes
  refuses(JSON.stringify(wide), `bytes, more than the limit of ${LIMITS.fileBytes}`);
});

test("long arrays, long strings, deep nesting and bad UTF-8 are refused", () => {
  refuses(goodText.replace('"extra":{}', '"extra":{"a":[' + "0,".repeat(LIMITS.arrayItems) + "0]}"),
    "extra.a: an array of 1000001 items");
  const d = good();
  d.extra = { ["k".repeat(70000)]: 1 };
  refuses(d, "a key: a string of 70000 characters");
  refuses("[".repeat(200000) + "]".repeat(200000), "nested too deeply");
  refuses(new Uint8Array([123, 34, 0xff, 34, 125]), "not UTF-8");
  assert.throws(() => parseText(42), ModelFormatError);
  refuses({ ...good(), extra: { f: () => 1 } }, "extra.f: function is not JSON data");
  refuses({ ...good(), meta: { ...good().meta, n: [1, undefined] } }, "meta.n[1]: undefined is not JSON data");
  const cyclic = good();
  cyclic.extra.self = cyclic.extra;
  refuses(cyclic, "nested");
});

test("observations of the wrong size are an error, batches are checked", () => {
  const m = load(goodText);
  assert.throws(() => m.forward([1, 2, 3]), RangeError);
  assert.throws(() => m.forwardBatch(new Float32Array(7), 2), RangeError);
  const y = m.forwardBatch(new Float32Array(8));
  assert.equal(y.length, 4);
});

test("the architecture table: unknown types are refused, a new one is one entry", () => {
  const d = good();
  d.architecture.type = "transformer";
  refuses(d, "architecture.type: unknown architecture \"transformer\"");
  ARCHITECTURES.doubler = {
    check: (arch) => ({ inputSize: arch.input_size, outputSize: arch.input_size }),
    build: () => ({ forwardInto: (x, out, o) => { for (let i = 0; i < x.length; i++) out[o + i] = 2 * x[i]; } }),
  };
  try {
    const m = load({ ...good(), architecture: { type: "doubler", input_size: 4 }, action_space:
      { type: "discrete", n: 4, names: ["a", "b", "c", "d"] } });
    assert.deepEqual(Array.from(m.forward([1, 2, 3, -1])), [2, 4, 6, -2]);
    assert.equal(m.act([1, 5, 3, -1]), 1);
  } finally {
    delete ARCHITECTURES.doubler;
  }
});

test("IK: solve without refinement is the clipped network answer; refinement lands on the target", () => {
  const m = load(readFileSync(DIR + "ik_arm3.json", "utf8"));
  const cases = JSON.parse(readFileSync(DIR + "ik_arm3.cases.json", "utf8"));
  const t = cases.targets[2]; // (target 0 is one the refinement alone cannot reach: its row stalls)
  assert.deepEqual(Array.from(m.solve(t, { refine: false })), Array.from(m.solveNetwork(t)));
  const tip = m.fk(m.solve(t));
  assert.ok(Math.hypot(tip[0] - t[0], tip[1] - t[1], tip[2] - t[2]) < 1e-4);
  const batch = m.solveBatch(Float64Array.from(cases.targets.slice(0, 5).flat()));
  assert.deepEqual(Array.from(batch.subarray(6, 9)), Array.from(m.solve(t)));
  const noArm = JSON.parse(readFileSync(DIR + "ik_arm3.json", "utf8"));
  noArm.extra = {};
  assert.throws(() => load(noArm).solve(t), /no extra.arm/);
});

test("act and actBatch take an optional action mask: the argmax over the enabled actions", () => {
  ARCHITECTURES.doubler = {
    check: (arch) => ({ inputSize: arch.input_size, outputSize: arch.input_size }),
    build: () => ({ forwardInto: (x, out, o) => { for (let i = 0; i < x.length; i++) out[o + i] = 2 * x[i]; } }),
  };
  try {
    const m = load({ ...good(), architecture: { type: "doubler", input_size: 4 }, action_space:
      { type: "discrete", n: 4, names: ["a", "b", "c", "d"] } });
    assert.equal(m.act([1, 5, 3, -1]), 1);
    assert.equal(m.act([1, 5, 3, -1], [1, 0, 1, 1]), 2);
    assert.equal(m.act([1, 5, 3, -1], [0, 0, 0, 1]), 3);
    assert.equal(m.act([1, 5, 3, -1], [0, 0, 0, 0]), 1);  // enables none: ignored
    assert.throws(() => m.act([1, 5, 3, -1], [1, 0]), /2 entries, the model 4 actions/);
    const obs = Float32Array.from([1, 5, 3, -1, 4, 0, 0, 9]);
    assert.deepEqual(Array.from(m.actBatch(obs, 2, Int8Array.from([1, 0, 1, 1, 1, 1, 1, 0]))), [2, 0]);
    assert.deepEqual(Array.from(m.actBatch(obs, 2)), [1, 3]);
  } finally {
    delete ARCHITECTURES.doubler;
  }
});
