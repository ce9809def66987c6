// Drive Debian's chromium (headless, fresh profile, no network) through playwright-core: run DRLA models
// with web/drla.js inside a real page, take screenshots of the demo pages, time the runtime.
//
//   node tests/web/browser.mjs JOB.json RESULT.json
//
// JOB: {"chromium": "/usr/bin/chromium", "tasks": [...]}; each task:
//   {"type": "run", "model": "path/from/repo/root.json", "inputs": [flat numbers], "n": rows,
//    "targets": [flat x, y, z] (IK models: also solve them), "options": {...solve options}}
//     -> {"outputs": [flat], "actions": [..] (discrete), "angles": [flat], "tips": [flat]}
//   {"type": "screenshot", "url": "/web/demos/x.html?..." (or a full http://127.0.0.1 URL), "path": "out.png",
//    "wait": "expression", "ms": 1500}
//     -> {"path", "bytes"}
//   {"type": "bench", "model": ..., "inputs": [...], "n": rows, "targets": [...]} -> timings in the page
//   {"type": "refuse", "model": "bad.json"} -> {"refused": a ModelFormatError was thrown, "message"}
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const require = createRequire(join(ROOT, "web", "package.json"));
const { chromium } = require("playwright-core");

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".json": "application/json",
  ".css": "text/css", ".png": "image/png" };

function serve() {
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, "http://x").pathname));
    if (path === "/favicon.ico") { res.writeHead(204).end(); return; }
    const file = resolve(ROOT, "." + path);
    if (!file.startsWith(ROOT + sep)) { res.writeHead(403).end(); return; }
    try {
      if (!statSync(file).isFile()) throw new Error("not a file");
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
      res.end(readFileSync(file));
    } catch {
      res.writeHead(404).end();
    }
  });
  return new Promise((ok) => server.listen(0, "127.0.0.1", () => ok(server)));
}

const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--no-first-run"];

async function main() {
  const [jobPath, outPath] = process.argv.slice(2);
  const job = JSON.parse(readFileSync(jobPath, "utf8"));
  const server = await serve();
  const base = `http://127.0.0.1:${server.address().port}`;
  const profile = mkdtempSync(join(tmpdir(), "drla-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: job.chromium ?? "/usr/bin/chromium", headless: true, args: ARGS,
    viewport: { width: 1180, height: 600 },
  });
  const results = [];
  const errors = [];
  try {
    const page = context.pages()[0] ?? await context.newPage();
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    await page.goto(`${base}/web/test/blank.html`);
    results.push({ userAgent: await page.evaluate(() => navigator.userAgent) });
    for (const task of job.tasks) {
      if (task.type === "run" || task.type === "bench") {
        results.push(await page.evaluate(async (t) => {
          const { load } = await import("/web/drla.js");
          const text = await (await fetch("/" + t.model)).text();
          const model = load(text);
          const x = Float32Array.from(t.inputs);
          const out = {};
          if (t.type === "run") {
            out.outputs = Array.from(model.forwardBatch(x, t.n));
            if (model.actionSpace.type === "discrete") out.actions = Array.from(model.actBatch(x, t.n));
            if (t.targets) {
              const angles = model.solveBatch(Float64Array.from(t.targets), t.targets.length / 3, t.options ?? {});
              out.angles = Array.from(angles);
              const d = model.arm.nDofs, tips = [];
              for (let i = 0; i < t.targets.length / 3; i++) tips.push(...model.fk(angles.subarray(i * d, i * d + d)));
              out.tips = tips;
            }
            return out;
          }
          const time = (f, reps) => { // warmed up first (the JIT compiles hot code after a while), median of 5
            for (let r = 0; r < reps; r++) f();
            const runs = [];
            for (let k = 0; k < 5; k++) {
              const t0 = performance.now();
              for (let r = 0; r < reps; r++) f();
              runs.push((performance.now() - t0) / reps);
            }
            return runs.sort((a, b) => a - b)[2];
          };
          const one = x.subarray(0, model.inputSize);
          out.forward_us = 1000 * time(() => model.forward(one), 2000);
          out.batch_ms = time(() => model.forwardBatch(x, t.n), 20);
          if (t.targets) {
            const tg = Float64Array.from(t.targets);
            out.solve_ms = time(() => model.solveBatch(tg, tg.length / 3), 5);
          }
          return out;
        }, task));
      } else if (task.type === "refuse") {
        results.push(await page.evaluate(async (t) => {
          const { load, ModelFormatError } = await import("/web/drla.js");
          const text = await (await fetch("/" + t.model)).text();
          try { load(text); } catch (e) { return { refused: e instanceof ModelFormatError, message: e.message }; }
          return { refused: false, message: "" };
        }, task));
      } else if (task.type === "screenshot") {
        await page.goto(task.url.startsWith("http") ? task.url : base + task.url);
        if (task.wait) await page.waitForFunction(task.wait, null, { timeout: 20000 });
        await page.waitForTimeout(task.ms ?? 500);
        const png = await page.screenshot({ path: task.path });
        results.push({ path: task.path, bytes: png.length, text: await page.evaluate(() => document.body.innerText) });
      } else {
        throw new Error(`unknown task type ${task.type}`);
      }
    }
  } finally {
    await context.close();
    server.close();
    rmSync(profile, { recursive: true, force: true });
  }
  writeFileSync(outPath, JSON.stringify({ results, errors }));
}

main().catch((e) => { console.error(e.stack ?? String(e)); process.exit(1); });
