// The conformance set (web/conformance/, written by Python): every output within the tolerance rule,
// every greedy action equal, every IK tip within 1e-6 m, every bad file refused with the expected message.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { load, ModelFormatError } from "../drla.js";

const DIR = fileURLToPath(new URL("../conformance/", import.meta.url));
const read = (name) => readFileSync(DIR + name, "utf8");
const index = JSON.parse(read("index.json"));

/** docs/model-format.md, "Conformance": |y - y_python| <= 1e-6 * max(1, max |y_python|) over a model's cases. */
export function withinTolerance(got, expected) {
  let scale = 1, worst = 0;
  for (const row of expected) for (const v of row) scale = Math.max(scale, Math.abs(v));
  expected.forEach((row, i) => row.forEach((v, j) => { worst = Math.max(worst, Math.abs(got[i][j] - v)); }));
  return { ok: worst <= 1e-6 * scale, worst, scale };
}

for (const { name, solve } of index.models) {
  test(`conformance: ${name}`, () => {
    const model = load(read(`${name}.json`));
    const cases = JSON.parse(read(`${name}.cases.json`));
    const got = cases.inputs.map((x) => Array.from(model.forward(x)));
    const { ok, worst, scale } = withinTolerance(got, cases.outputs);
    assert.ok(ok, `${name}: outputs differ by ${worst} (scale ${scale})`);
    const flat = Float32Array.from(cases.inputs.flat());
    const batch = model.forwardBatch(flat, cases.inputs.length);
    assert.deepEqual(Array.from(batch), got.flat(), "forwardBatch equals forward row by row");
    if (cases.actions) {
      assert.deepEqual(cases.inputs.map((x) => model.act(x)), cases.actions);
      assert.deepEqual(Array.from(model.actBatch(flat)), cases.actions);
    }
    if (solve) {
      cases.targets.forEach((t, i) => {
        const angles = model.solve(t);
        const tip = model.fk(angles);
        const err = Math.hypot(tip[0] - cases.tips[i][0], tip[1] - cases.tips[i][1], tip[2] - cases.tips[i][2]);
        assert.ok(err <= 1e-6, `${name} target ${i}: tip ${err} m from Python's`);
      });
    }
  });
}

for (const name of index.bad) {
  test(`conformance: bad file ${name} is refused`, () => {
    const expected = JSON.parse(read("bad/expected.json"))[name];
    assert.throws(() => load(read(`bad/${name}.json`)), (err) => {
      assert.ok(err instanceof ModelFormatError, `${name}: ${err}`);
      assert.ok(err.message.includes(expected), `${name}: "${err.message}" lacks "${expected}"`);
      return true;
    });
  });
}
