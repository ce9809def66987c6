// DRLA model files in JavaScript: load (validated like drla_core/model_io.py), forward, act, IK solve.
// No dependencies; runs in browsers and in Node. The format: docs/model-format.md.
//
//   import { load } from "./drla.js";
//   const model = load(await (await fetch("tank.json")).text());
//   const q = model.forward([0.1, 0.2, ...]);      // Float64Array of outputs
//   const a = model.act(observation);              // greedy action index (DQN)
//   const angles = model.solve([0.3, 0.1, 0.5]);   // IK: joint angles (network + DLS refinement)

export const FORMAT = "drla-model";
export const VERSION = 1;
export const KINDS = ["dqn", "ik", "mlp"];

/** The limits every DRLA reader applies (docs/model-format.md, "Limits"); the same as model_io.py's. */
export const LIMITS = Object.freeze({
  fileBytes: 16 * 1024 * 1024,
  number: 1e39,
  stringChars: 65536,
  arrayItems: 1000000,
  depth: 32,
  jsonDepth: 1000,
  params: 4000000,
  layers: 64,
  layerSize: 1000000,
  graphNodes: 100000,
  graphConnections: 1000000,
});

const REQUIRED_KEYS = ["format", "version", "kind", "architecture", "params", "observation_space", "action_space",
  "meta"];
const OPTIONAL_KEYS = ["obs_norm", "extra"];
const BOX_DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
  "uint64", "bool"];

/** A model file or object is not a valid DRLA model; the message names the field at fault. */
export class ModelFormatError extends Error {
  constructor(message) {
    super(message);
    this.name = "ModelFormatError";
  }
}

const fail = (message) => { throw new ModelFormatError(message); };

const LEAKY_SLOPE = Math.fround(0.01); // numpy's float32(0.01)

/** The activations of the format, applied in place to z[o .. o + n) of a Float64Array. */
export const ACTIVATIONS = Object.freeze({
  relu: (z, o, n) => { for (let i = o; i < o + n; i++) if (!(z[i] > 0)) z[i] = 0; },
  tanh: (z, o, n) => { for (let i = o; i < o + n; i++) z[i] = Math.tanh(z[i]); },
  leaky_relu: (z, o, n) => { for (let i = o; i < o + n; i++) if (!(z[i] > 0)) z[i] *= LEAKY_SLOPE; },
  linear: () => {},
  sigmoid: (z, o, n) => { for (let i = o; i < o + n; i++) z[i] = 0.5 * (1 + Math.tanh(0.5 * z[i])); },
});

// ---- generic checks ------------------------------------------------------------------------------------

function typeName(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return { boolean: "a boolean", string: "a string", number: Number.isInteger(v) ? "an integer" : "a number",
    object: "an object" }[typeof v] ?? typeof v;
}

const short = (v) => { const t = JSON.stringify(v) ?? String(v); return t.length > 40 ? t.slice(0, 40) : t; };
const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isNum = (v) => typeof v === "number";

/** Walk any parsed JSON value once: numbers below 1e39, strings, arrays and nesting within the limits. */
function checkData(value, field, depth, maxDepth) {
  if (depth > maxDepth) {
    fail(maxDepth === LIMITS.depth ? `${field}: nested deeper than ${LIMITS.depth} levels`
      : "not a usable model file: JSON nested too deeply");
  }
  if (typeof value === "number") {
    if (!(Math.abs(value) < LIMITS.number)) fail(`number ${value} is too large (numbers in a model file are below 1e39)`);
  } else if (typeof value === "string") {
    if (value.length > LIMITS.stringChars) {
      fail(`${field}: a string of ${value.length} characters, more than the limit of ${LIMITS.stringChars}`);
    }
  } else if (Array.isArray(value)) {
    if (value.length > LIMITS.arrayItems) {
      fail(`${field}: an array of ${value.length} items, more than the limit of ${LIMITS.arrayItems}`);
    }
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      if (typeof v === "number") {
        if (!(Math.abs(v) < LIMITS.number)) fail(`number ${v} is too large (numbers in a model file are below 1e39)`);
      } else if (v !== null && typeof v !== "boolean") {
        checkData(v, `${field}[${i}]`, depth + 1, maxDepth);
      }
    }
  } else if (value !== null && typeof value !== "boolean" && !isObj(value)) {
    fail(`${field}: ${typeof value} is not JSON data`); // an object handed to load() holding a function, ...
  } else if (isObj(value)) {
    for (const k of Object.keys(value)) {
      if (k.length > LIMITS.stringChars) {
        fail(`${field}: a key: a string of ${k.length} characters, more than the limit of ${LIMITS.stringChars}`);
      }
      checkData(value[k], `${field}.${k.slice(0, 40)}`, depth + 1, maxDepth);
    }
  }
}

// JSON.parse reads 16.0 and 16 alike, so (unlike the Python reader) a size written 16.0 is accepted as 16.
function int(v, field, low, high) {
  if (typeof v !== "number" || !Number.isInteger(v)) fail(`${field} must be an integer, got ${typeName(v)} (${short(v)})`);
  if (v < low || v > high) fail(`${field} must be between ${low} and ${high}, got ${v}`);
  return v;
}

function str(v, field) {
  if (typeof v !== "string") fail(`${field} must be a string, got ${typeName(v)} (${short(v)})`);
  if (v.length > LIMITS.stringChars) {
    fail(`${field}: a string of ${v.length} characters, more than the limit of ${LIMITS.stringChars}`);
  }
  return v;
}

function obj(v, field) {
  if (!isObj(v)) fail(`${field} must be an object, got ${typeName(v)}`);
  return v;
}

function keys(d, field, required, optional = []) {
  for (const k of required) if (!(k in d)) fail(`${field}: missing required key '${k}'`);
  const unknown = Object.keys(d).filter((k) => !required.includes(k) && !optional.includes(k)).sort();
  if (unknown.length) {
    fail(`${field}: unknown key '${unknown[0].slice(0, 58)}' (allowed: ${required.concat(optional).join(", ")})`);
  }
}

function activation(v, field) {
  str(v, field);
  if (!Object.hasOwn(ACTIVATIONS, v)) {
    fail(`${field}: unknown activation '${v.slice(0, 40)}'; known: ${Object.keys(ACTIVATIONS).join(", ")}`);
  }
  return v;
}

const F32_MAX = 3.4028234663852886e38;

/** A flat array of `length` finite numbers, rounded to float32 (as the Python reader stores them). */
function float32s(v, field, length, out = new Float32Array(length), offset = 0) {
  if (!Array.isArray(v)) fail(`${field} must be an array of numbers, got ${typeName(v)}`);
  if (v.length !== length) fail(`${field}: expected ${length} values, got ${v.length}`);
  for (let i = 0; i < length; i++) {
    const x = v[i];
    if (typeof x !== "number") fail(`${field}: every value must be a number, found ${typeName(x)} (${short(x)})`);
    const f = Math.fround(x);
    if (!Number.isFinite(f) || Math.abs(x) > F32_MAX) {
      fail(`${field}: values must be finite float32 numbers (NaN, infinity or overflow found)`);
    }
    out[offset + i] = f;
  }
  return out;
}

// ---- spaces -----------------------------------------------------------------------------------------------

function bound(v, field, size) {
  if (v === null || isNum(v)) return;
  if (!Array.isArray(v)) fail(`${field} must be a number, null or an array, got ${typeName(v)}`);
  if (v.length !== size) fail(`${field}: expected ${size} values (the space's size), got ${v.length}`);
  v.forEach((x, j) => { if (x !== null && !isNum(x)) fail(`${field}[${j}] must be a number or null, got ${typeName(x)}`); });
}

function boundArray(v, size, inf) {
  const out = new Float64Array(size);
  for (let i = 0; i < size; i++) {
    const x = Array.isArray(v) ? v[i] : v;
    out[i] = x === null ? inf : x;
  }
  return out;
}

function space(v, field) {
  const d = obj(v, field);
  if (d.type === "discrete") {
    keys(d, field, ["type", "n", "names"]);
    const n = int(d.n, `${field}.n`, 1, LIMITS.layerSize);
    if (!Array.isArray(d.names) || d.names.length !== n) fail(`${field}.names must be an array of ${n} strings`);
    d.names.forEach((name, j) => str(name, `${field}.names[${j}]`));
    return { type: "discrete", n, size: n, names: d.names.slice() };
  }
  if (d.type === "box") {
    keys(d, field, ["type", "shape", "low", "high"], ["dtype"]);
    if (!Array.isArray(d.shape) || d.shape.length > 8) fail(`${field}.shape must be an array of at most 8 integers`);
    let size = 1;
    d.shape.forEach((s, j) => { size *= int(s, `${field}.shape[${j}]`, 1, LIMITS.layerSize); });
    if (size > LIMITS.layerSize) fail(`${field}.shape: ${size} elements, more than the limit of ${LIMITS.layerSize}`);
    bound(d.low, `${field}.low`, size);
    bound(d.high, `${field}.high`, size);
    if ("dtype" in d && !BOX_DTYPES.includes(d.dtype)) {
      fail(`${field}.dtype: unknown dtype ${short(d.dtype)}; known: ${BOX_DTYPES.join(", ")}`);
    }
    const low = boundArray(d.low, size, -Infinity), high = boundArray(d.high, size, Infinity);
    for (let i = 0; i < size; i++) if (low[i] > high[i]) fail(`${field}: low must not exceed high`);
    return { type: "box", shape: d.shape.slice(), size, low, high, dtype: d.dtype ?? "float32" };
  }
  fail(`${field}.type must be 'box' or 'discrete', got ${short(d.type)}`);
}

// ---- architectures: one entry per `architecture.type` ("mlp" when absent) ---------------------------------

/** The dense multi-layer perceptron (format v1's only architecture). */
const MLP_ARCHITECTURE = {
  /** Check `architecture` before any array is built; returns {inputSize, outputSize, ...plan}. */
  check(arch) {
    keys(arch, "architecture", ["input_size", "hidden", "output_size", "output_activation"]);
    const inputSize = int(arch.input_size, "architecture.input_size", 1, LIMITS.layerSize);
    const outputSize = int(arch.output_size, "architecture.output_size", 1, LIMITS.layerSize);
    activation(arch.output_activation, "architecture.output_activation");
    const hidden = arch.hidden;
    if (!Array.isArray(hidden)) fail(`architecture.hidden must be an array of layers, got ${typeName(hidden)}`);
    if (hidden.length + 1 > LIMITS.layers) {
      fail(`architecture.hidden: ${hidden.length} hidden layers, at most ${LIMITS.layers - 1} allowed`);
    }
    const sizes = [inputSize], acts = [];
    hidden.forEach((layer, i) => {
      const field = `architecture.hidden[${i}]`;
      keys(obj(layer, field), field, ["size", "activation"]);
      sizes.push(int(layer.size, `${field}.size`, 1, LIMITS.layerSize));
      acts.push(activation(layer.activation, `${field}.activation`));
    });
    sizes.push(outputSize);
    acts.push(arch.output_activation);
    let nParams = 0;
    for (let i = 0; i + 1 < sizes.length; i++) nParams += sizes[i] * sizes[i + 1] + sizes[i + 1];
    if (nParams > LIMITS.params) fail(`architecture: ${nParams} parameters, more than the limit of ${LIMITS.params}`);
    return { inputSize, outputSize, sizes, acts, nParams };
  },

  /** Build the network from `params` (shapes checked against the plan); returns {forwardInto(x, y, n)}. */
  build(plan, params) {
    params = obj(params, "params");
    const { sizes, acts } = plan;
    const expected = [];
    for (let i = 0; i + 1 < sizes.length; i++) expected.push(`layers.${i}.weight`, `layers.${i}.bias`);
    keys(params, "params", expected);
    const layers = [];
    for (let i = 0; i + 1 < sizes.length; i++) {
      const fanIn = sizes[i], fanOut = sizes[i + 1];
      const field = `params.layers.${i}.weight`;
      const rows = params[`layers.${i}.weight`];
      if (!Array.isArray(rows) || !rows.every(Array.isArray)) {
        fail(`${field} must be an array of arrays (out, in), got ${typeName(rows)}`);
      }
      if (rows.length !== fanOut || rows.some((r) => r.length !== fanIn)) {
        const lengths = new Set(rows.map((r) => r.length));
        const got = lengths.size === 1 ? `(${rows.length}, ${[...lengths][0]})` : `(${rows.length}, ragged rows)`;
        fail(`${field}: shape mismatch, the architecture needs (${fanOut}, ${fanIn}) (out, in), the file has ${got}`);
      }
      const w = new Float32Array(fanOut * fanIn);
      rows.forEach((row, j) => float32s(row, `${field}[${j}]`, fanIn, w, j * fanIn));
      const bias = params[`layers.${i}.bias`];
      if (Array.isArray(bias) && bias.length !== fanOut) {
        fail(`params.layers.${i}.bias: shape mismatch, the architecture needs (${fanOut},), the file has (${bias.length},)`);
      }
      const b = float32s(bias, `params.layers.${i}.bias`, fanOut);
      layers.push({ fanIn, fanOut, w: Float64Array.from(w), b: Float64Array.from(b), act: ACTIVATIONS[acts[i]] });
    }
    const width = Math.max(...sizes);
    const bufA = new Float64Array(width), bufB = new Float64Array(width);
    const blockA = new Float64Array(4 * width), blockB = new Float64Array(4 * width);
    return {
      /** Four inputs at once (x: 4 rows of inputSize, normalised) into out[offset ..] (4 rows of outputSize):
       * each weight is read once for four rows, four independent sums per output. */
      forward4(x, out, offset) {
        let h = x;
        const last = layers.length - 1;
        for (let l = 0; l <= last; l++) {
          const { fanIn, fanOut, w, b, act } = layers[l];
          const z = l === last ? out : (l % 2 === 0 ? blockA : blockB), zOff = l === last ? offset : 0;
          const h1 = fanIn, h2 = 2 * fanIn, h3 = 3 * fanIn;
          for (let o = 0; o < fanOut; o++) {
            const bias = b[o], row = o * fanIn;
            let s0 = bias, s1 = bias, s2 = bias, s3 = bias;
            for (let j = 0; j < fanIn; j++) {
              const wj = w[row + j];
              s0 += wj * h[j]; s1 += wj * h[h1 + j]; s2 += wj * h[h2 + j]; s3 += wj * h[h3 + j];
            }
            z[zOff + o] = s0; z[zOff + fanOut + o] = s1; z[zOff + 2 * fanOut + o] = s2; z[zOff + 3 * fanOut + o] = s3;
          }
          act(z, zOff, 4 * fanOut);
          h = z;
        }
      },

      /** The outputs for one input x (Float64Array of inputSize, already normalised) into `out` at `offset`
       * (no allocation: the hidden layers use two buffers). */
      forwardInto(x, out, offset) {
        let h = x, hOff = 0;
        const last = layers.length - 1;
        for (let l = 0; l <= last; l++) {
          const { fanIn, fanOut, w, b, act } = layers[l];
          const z = l === last ? out : (l % 2 === 0 ? bufA : bufB), zOff = l === last ? offset : 0;
          let o = 0;
          for (; o + 4 <= fanOut; o += 4) { // four outputs at once: four independent sums, each in file order
            const r0 = o * fanIn, r1 = r0 + fanIn, r2 = r1 + fanIn, r3 = r2 + fanIn;
            let s0 = b[o], s1 = b[o + 1], s2 = b[o + 2], s3 = b[o + 3];
            for (let j = 0; j < fanIn; j++) {
              const hj = h[hOff + j];
              s0 += w[r0 + j] * hj; s1 += w[r1 + j] * hj; s2 += w[r2 + j] * hj; s3 += w[r3 + j] * hj;
            }
            z[zOff + o] = s0; z[zOff + o + 1] = s1; z[zOff + o + 2] = s2; z[zOff + o + 3] = s3;
          }
          for (; o < fanOut; o++) {
            let s = b[o];
            const row = o * fanIn;
            for (let j = 0; j < fanIn; j++) s += w[row + j] * h[hOff + j];
            z[zOff + o] = s;
          }
          act(z, zOff, fanOut);
          h = z;
          hOff = zOff;
        }
      },
    };
  },
};

/** A graph network (what a NEAT genome decodes to; drla_core/graph_net.py): the layer stack's keys with
 * `hidden: []`, plus `graph: {nodes: [activation per hidden node], connections: [[source, target], ...]}`;
 * params `graph.weight` (one per connection) and `graph.bias` (one per output node, then per hidden node).
 * Nodes 0..in-1 are inputs, then the outputs, then the hidden nodes; the connections form a DAG. */
const GRAPH_ARCHITECTURE = {
  check(arch) {
    keys(arch, "architecture", ["input_size", "hidden", "output_size", "output_activation", "graph"]);
    const inputSize = int(arch.input_size, "architecture.input_size", 1, LIMITS.graphNodes);
    const outputSize = int(arch.output_size, "architecture.output_size", 1, LIMITS.graphNodes);
    activation(arch.output_activation, "architecture.output_activation");
    if (!Array.isArray(arch.hidden) || arch.hidden.length !== 0) {
      fail("architecture.hidden must be [] in a graph network: its hidden nodes are in architecture.graph.nodes");
    }
    const graph = obj(arch.graph, "architecture.graph");
    keys(graph, "architecture.graph", ["nodes", "connections"]);
    if (!Array.isArray(graph.nodes)) fail("architecture.graph.nodes must be an array of activation names");
    const nNodes = inputSize + outputSize + graph.nodes.length;
    if (nNodes > LIMITS.graphNodes) {
      fail(`architecture.graph.nodes: ${nNodes} nodes in all, more than the limit of ${LIMITS.graphNodes}`);
    }
    const acts = [];
    for (let i = 0; i < outputSize; i++) acts.push(arch.output_activation);
    graph.nodes.forEach((a, i) => acts.push(activation(a, `architecture.graph.nodes[${i}]`)));
    const conns = graph.connections;
    const field = "architecture.graph.connections";
    if (!Array.isArray(conns)) fail(`${field} must be an array of [source, target] pairs`);
    if (conns.length > LIMITS.graphConnections) {
      fail(`${field}: ${conns.length}, more than the limit of ${LIMITS.graphConnections}`);
    }
    const seen = new Set();
    const src = new Int32Array(conns.length), dst = new Int32Array(conns.length);
    conns.forEach((c, j) => {
      if (!Array.isArray(c) || c.length !== 2 || !Number.isInteger(c[0]) || !Number.isInteger(c[1])) {
        fail(`${field}[${j}] must be a pair of node ids [source, target]`);
      }
      const [a, b] = c;
      if (a < 0 || a >= nNodes || b < 0 || b >= nNodes) {
        fail(`${field}[${j}]: node id out of range (the graph has nodes 0 to ${nNodes - 1}), got [${a}, ${b}]`);
      }
      if (b < inputSize) fail(`${field}[${j}]: [${a}, ${b}] ends at input node ${b}; inputs have no incoming connections`);
      const key = a * nNodes + b;
      if (seen.has(key)) fail(`${field}[${j}]: [${a}, ${b}] appears twice`);
      seen.add(key);
      src[j] = a; dst[j] = b;
    });
    // Kahn's algorithm: an order to evaluate the nodes in, or the cycle's node (linear time, never a hang).
    const indegree = new Int32Array(nNodes), succStart = new Int32Array(nNodes + 1);
    for (let j = 0; j < conns.length; j++) { indegree[dst[j]]++; succStart[src[j] + 1]++; }
    for (let i = 0; i < nNodes; i++) succStart[i + 1] += succStart[i];
    const succ = new Int32Array(conns.length), fill = succStart.slice(0, nNodes);
    for (let j = 0; j < conns.length; j++) succ[fill[src[j]]++] = j;
    const order = [], ready = [];
    for (let i = 0; i < nNodes; i++) if (indegree[i] === 0) ready.push(i);
    const left = Int32Array.from(indegree);
    while (ready.length) {
      const n = ready.pop();
      order.push(n);
      for (let k = succStart[n]; k < succStart[n + 1]; k++) {
        const t = dst[succ[k]];
        if (--left[t] === 0) ready.push(t);
      }
    }
    if (order.length !== nNodes) {
      let stuck = 0;
      while (left[stuck] === 0) stuck++;
      fail(`connections form a cycle (through node ${stuck}): a graph network must be feed-forward`);
    }
    return { inputSize, outputSize, nNodes, acts, src, dst, order, nParams: conns.length + nNodes - inputSize };
  },

  build(plan, params) {
    params = obj(params, "params");
    keys(params, "params", ["graph.weight", "graph.bias"]);
    const { inputSize, outputSize, nNodes, acts, src, dst, order } = plan;
    const w = Float64Array.from(float32s(params["graph.weight"], "params.graph.weight", src.length));
    const b = Float64Array.from(float32s(params["graph.bias"], "params.graph.bias", nNodes - inputSize));
    // Incoming connections per node, in the file's order (sums in the file's order, like numpy's).
    const inStart = new Int32Array(nNodes + 1);
    for (let j = 0; j < dst.length; j++) inStart[dst[j] + 1]++;
    for (let i = 0; i < nNodes; i++) inStart[i + 1] += inStart[i];
    const inConn = new Int32Array(dst.length), fill = inStart.slice(0, nNodes);
    for (let j = 0; j < dst.length; j++) inConn[fill[dst[j]]++] = j;
    const values = new Float64Array(nNodes);
    const fns = acts.map((a) => ACTIVATIONS[a]);
    const evalOrder = Int32Array.from(order.filter((n) => n >= inputSize));
    return {
      forwardInto(x, out, offset) {
        for (let i = 0; i < inputSize; i++) values[i] = x[i];
        for (const n of evalOrder) {
          let s = b[n - inputSize];
          for (let k = inStart[n]; k < inStart[n + 1]; k++) s += w[inConn[k]] * values[src[inConn[k]]];
          values[n] = Math.fround(s);
          fns[n - inputSize](values, n, 1);
          values[n] = Math.fround(values[n]);
        }
        for (let o = 0; o < outputSize; o++) out[offset + o] = values[inputSize + o];
      },
    };
  },
};

/** `architecture.type` -> {check(arch), build(plan, params)}; a new architecture is one more entry (a
 * graph network is found by its `graph` key, as the Python reader finds it). */
export const ARCHITECTURES = { mlp: MLP_ARCHITECTURE, graph: GRAPH_ARCHITECTURE };

// ---- parsing ------------------------------------------------------------------------------------------------

function utf8Length(text) {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) { n += 4; i++; } else n += 3;
  }
  return n;
}

/** Parse model JSON text (a string, ArrayBuffer or Uint8Array) strictly, within the limits. */
export function parseText(input) {
  let text = input;
  if (input instanceof ArrayBuffer || ArrayBuffer.isView(input)) {
    const bytes = input instanceof ArrayBuffer ? new Uint8Array(input) : new Uint8Array(input.buffer,
      input.byteOffset, input.byteLength);
    if (bytes.length > LIMITS.fileBytes) {
      fail(`model data is ${bytes.length} bytes, more than the limit of ${LIMITS.fileBytes}`);
    }
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      fail("not a JSON model file: not UTF-8 text");
    }
  } else if (typeof input !== "string") {
    fail(`a model must be JSON text or an object, got ${typeName(input)}`);
  }
  // UTF-8 never takes fewer bytes than UTF-16 code units: the length alone refuses most oversized texts
  if (text.length > LIMITS.fileBytes || (text.length * 3 > LIMITS.fileBytes && utf8Length(text) > LIMITS.fileBytes)) {
    fail(`model data is ${utf8Length(text)} bytes, more than the limit of ${LIMITS.fileBytes}`);
  }
  let data;
  try {
    data = JSON.parse(text);
  } catch (exc) {
    const constant = /[:[,]\s*(NaN|-?Infinity)\s*[,\]}]/.exec(text); // Python's json would accept these
    if (constant) fail(`${constant[1]} is not allowed in a model file (JSON numbers must be finite)`);
    fail(`not a JSON model file: ${exc.message}`);
  }
  checkData(data, "model", 0, LIMITS.jsonDepth);
  return data;
}

// ---- the model ------------------------------------------------------------------------------------------------

const KIND_MODELS = {};

/**
 * Load a DRLA model: JSON text (string, ArrayBuffer, Uint8Array) or an already parsed object.
 * Every field is checked as drla_core/model_io.py checks it; a bad file throws ModelFormatError.
 */
export function load(input) {
  const isText = typeof input === "string" || input instanceof ArrayBuffer || ArrayBuffer.isView(input);
  const d = isText ? parseText(input) : input;
  if (!isObj(d)) fail(`a model must be a JSON object, got ${typeName(d)}`);
  if (!isText) checkData(d, "model", 0, LIMITS.jsonDepth); // text was checked as it was parsed
  if (!("format" in d)) fail("missing required key 'format' (expected \"drla-model\"): not a DRLA model file");
  if (d.format !== FORMAT) fail(`format is ${short(d.format)}, expected '${FORMAT}': not a DRLA model file`);
  if (!("version" in d)) fail(`missing required key 'version' (this DRLA reads version ${VERSION})`);
  const version = d.version;
  if (typeof version !== "number" || !Number.isInteger(version)) {
    fail(`version must be an integer, got ${typeName(version)} (${short(version)})`);
  }
  if (version !== VERSION) {
    const newer = version > VERSION ? " (a newer DRLA wrote it; update DRLA)" : "";
    fail(`unsupported model format version ${version}: this DRLA reads version ${VERSION}${newer}`);
  }
  keys(d, "model", REQUIRED_KEYS, OPTIONAL_KEYS);
  const kind = str(d.kind, "kind");
  if (!KINDS.includes(kind)) fail(`kind: unknown kind '${kind.slice(0, 40)}'; known: ${KINDS.join(", ")}`);

  const archData = obj(d.architecture, "architecture");
  const archType = archData.type ?? ("graph" in archData ? "graph" : "mlp");
  const architecture = Object.hasOwn(ARCHITECTURES, archType) ? ARCHITECTURES[archType] : null;
  if (!architecture) {
    fail(`architecture.type: unknown architecture ${short(archType)}; known: ${Object.keys(ARCHITECTURES).join(", ")}`);
  }
  const plan = architecture.check(archData);
  const observationSpace = space(d.observation_space, "observation_space");
  const actionSpace = space(d.action_space, "action_space");
  if (observationSpace.size !== plan.inputSize) {
    fail(`observation_space has ${observationSpace.size} values but architecture.input_size is ${plan.inputSize}`);
  }
  if (actionSpace.size !== plan.outputSize) {
    fail(`action_space has ${actionSpace.size} values but architecture.output_size is ${plan.outputSize}`);
  }
  let obsNorm = null;
  if (d.obs_norm !== undefined && d.obs_norm !== null) {
    keys(obj(d.obs_norm, "obs_norm"), "obs_norm", ["mean", "std"]);
    const mean = float32s(d.obs_norm.mean, "obs_norm.mean", plan.inputSize);
    const std = float32s(d.obs_norm.std, "obs_norm.std", plan.inputSize);
    if (!std.every((s) => s > 0)) fail("obs_norm.std: every value must be positive");
    obsNorm = { mean: Float64Array.from(mean), std: Float64Array.from(std) };
  }
  const meta = obj(d.meta, "meta");
  for (const k of ["drla_version", "created"]) {
    if (!(k in meta)) fail(`meta: missing required key '${k}'`);
    str(meta[k], `meta.${k}`);
  }
  checkData(meta, "meta", 0, LIMITS.depth);
  const extra = obj(d.extra ?? {}, "extra");
  checkData(extra, "extra", 0, LIMITS.depth);

  const network = architecture.build(plan, d.params); // the architecture is checked: building is bounded
  const ModelClass = KIND_MODELS[kind] ?? Model;
  return new ModelClass({ kind, architecture: archType, plan, network, observationSpace, actionSpace, obsNorm,
    meta, extra });
}

/** A loaded model: `forward`, `forwardBatch`, `act`; IK models add `solve` and `fk`. */
export class Model {
  constructor(parts) {
    Object.assign(this, parts);
    this.inputSize = parts.plan.inputSize;
    this.outputSize = parts.plan.outputSize;
    this._x = new Float64Array(this.inputSize);
  }

  get actionNames() { return this.actionSpace.type === "discrete" ? this.actionSpace.names : null; }

  _normalise(src, offset, x) {
    const n = this.inputSize, norm = this.obsNorm;
    if (norm) {
      // float32 arithmetic, as numpy does it: (x - mean) / std, each step rounded
      for (let i = 0; i < n; i++) x[i] = Math.fround(Math.fround(Math.fround(src[offset + i]) - norm.mean[i]) / norm.std[i]);
    } else {
      for (let i = 0; i < n; i++) x[i] = Math.fround(src[offset + i]);
    }
    return x;
  }

  /** The network's outputs for one observation (an array of `inputSize` numbers): a Float64Array. */
  forward(obs) {
    if (obs == null || obs.length !== this.inputSize) {
      throw new RangeError(`forward: an observation of ${obs?.length} values does not fit input size ${this.inputSize}`);
    }
    const y = new Float64Array(this.outputSize);
    this.network.forwardInto(this._normalise(obs, 0, this._x), y, 0);
    return y;
  }

  /** Outputs for `n` observations packed row by row in a typed array: a Float64Array (n x outputSize). */
  forwardBatch(obs, n) {
    n = n ?? Math.floor(obs.length / this.inputSize);
    if (obs.length !== n * this.inputSize) {
      throw new RangeError(`forwardBatch: ${obs.length} values are not ${n} observations of ${this.inputSize}`);
    }
    const y = new Float64Array(n * this.outputSize);
    this._forwardRows(obs, n, y);
    return y;
  }

  /** Rows 4 at a time where the architecture can (each row's result is the same as forward's). */
  _forwardRows(obs, n, y) {
    const nIn = this.inputSize, nOut = this.outputSize, net = this.network;
    let r = 0;
    if (net.forward4) {
      const x4 = this._x4 ?? (this._x4 = new Float64Array(4 * nIn));
      for (; r + 4 <= n; r += 4) {
        for (let k = 0; k < 4; k++) this._normalise(obs, (r + k) * nIn, x4.subarray(k * nIn, (k + 1) * nIn));
        net.forward4(x4, y, r * nOut);
      }
    }
    for (; r < n; r++) net.forwardInto(this._normalise(obs, r * nIn, this._x), y, r * nOut);
  }

  /** The greedy action: the index of the largest output for discrete actions (the first on ties, as
   * numpy's argmax); for a box, the outputs clipped to its bounds. `mask` (optional, discrete only): one
   * 0/1 per action (an environment's action_mask); the argmax is over the enabled actions (a mask that
   * enables none is ignored). */
  act(obs, mask) {
    const y = this.forward(obs);
    if (this.actionSpace.type === "discrete") return argmax(y, 0, y.length, mask);
    const { low, high } = this.actionSpace;
    return y.map((v, i) => Math.fround(Math.min(Math.max(v, low[i]), high[i])));
  }

  /** Greedy actions of a batch (Int32Array) for discrete actions; `masks` (optional): n x outputSize 0/1. */
  actBatch(obs, n, masks) {
    const y = this.forwardBatch(obs, n), m = this.outputSize;
    const out = new Int32Array(y.length / m);
    for (let r = 0; r < out.length; r++) out[r] = argmax(y, r * m, m, masks && masks.subarray
      ? masks.subarray(r * m, (r + 1) * m) : masks && Array.prototype.slice.call(masks, r * m, (r + 1) * m));
    return out;
  }
}

function argmax(y, offset, m, mask) {
  if (mask) {
    if (mask.length !== m) throw new RangeError(`the action mask has ${mask.length} entries, the model ${m} actions`);
    let best = -1;
    for (let i = 0; i < m; i++) {
      if (mask[i] && (best < 0 || y[offset + i] > y[offset + best])) best = i;
    }
    if (best >= 0) return best;  // a mask that enables nothing is ignored, as in Python
  }
  let best = 0;
  for (let i = 1; i < m; i++) if (y[offset + i] > y[offset + best]) best = i;
  return best;
}

// ---- inverse kinematics: the arm in extra.arm, FK, and the DLS refinement of drla_core/agents/ik.py ------------

const AXES = ["X", "Y", "Z"];

/** The arm of extra.arm (kinematics.ArmDescription.to_dict), checked. */
export function armFromDict(a) {
  const f = "extra.arm";
  obj(a, f);
  for (const k of ["name", "bones", "rest_local", "lengths", "dofs"]) if (!(k in a)) fail(`${f}: missing required key '${k}'`);
  if (!Array.isArray(a.bones) || a.bones.length === 0 || a.bones.length > LIMITS.layers) {
    fail(`${f}.bones must be an array of 1 to ${LIMITS.layers} bone names`);
  }
  const nb = a.bones.length;
  a.bones.forEach((b, i) => str(b, `${f}.bones[${i}]`));
  const matrix = (m, field) => {
    if (!Array.isArray(m) || m.length !== 4) fail(`${field} must be a 4x4 matrix`);
    const out = new Float64Array(16);
    m.forEach((row, i) => {
      if (!Array.isArray(row) || row.length !== 4) fail(`${field} must be a 4x4 matrix`);
      row.forEach((v, j) => { if (!isNum(v)) fail(`${field}[${i}][${j}] must be a number`); out[i * 4 + j] = v; });
    });
    return out;
  };
  if (!Array.isArray(a.rest_local) || a.rest_local.length !== nb) fail(`${f}.rest_local must hold one 4x4 matrix per bone`);
  const rest = a.rest_local.map((m, i) => matrix(m, `${f}.rest_local[${i}]`));
  if (!Array.isArray(a.lengths) || a.lengths.length !== nb || !a.lengths.every(isNum)) {
    fail(`${f}.lengths must be an array of ${nb} numbers`);
  }
  if (!Array.isArray(a.dofs) || a.dofs.length === 0) fail(`${f}.dofs must be a non-empty array`);
  const dofBone = [], dofAxis = [], lower = [], upper = [];
  a.dofs.forEach((x, k) => {
    const field = `${f}.dofs[${k}]`;
    obj(x, field);
    dofBone.push(int(x.bone, `${field}.bone`, 0, nb - 1));
    if (!AXES.includes(x.axis)) fail(`${field}.axis must be one of X, Y, Z`);
    dofAxis.push(AXES.indexOf(x.axis));
    if (!isNum(x.lower) || !isNum(x.upper) || x.lower > x.upper) fail(`${field}: lower and upper must be numbers, lower <= upper`);
    lower.push(x.lower);
    upper.push(x.upper);
    if (k > 0 && dofBone[k] * 3 + dofAxis[k] <= dofBone[k - 1] * 3 + dofAxis[k - 1]) {
      fail(`${f}.dofs: DOFs must be sorted by bone, then axis X<Y<Z`);
    }
  });
  const base = "base" in a ? matrix(a.base, `${f}.base`) : Float64Array.from([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
  const lengths = Float64Array.from(a.lengths);
  const restIdentity = rest.map((m) => m[0] === 1 && m[1] === 0 && m[2] === 0 && m[4] === 0 && m[5] === 1 && m[6] === 0
    && m[8] === 0 && m[9] === 0 && m[10] === 1);
  return { name: a.name, bones: a.bones.slice(), rest, restIdentity, lengths, dofBone, dofAxis, lower: Float64Array.from(lower),
    upper: Float64Array.from(upper), base, nDofs: dofBone.length, reach: lengths.reduce((s, v) => s + v, 0),
    root: [rest[0][3], rest[0][7], rest[0][11]] };
}

const PAIR_U = [1, 2, 0], PAIR_V = [2, 0, 1]; // the columns a rotation about X, Y, Z mixes

function workspace(arm) {
  if (!arm._ws) {
    const d = arm.nDofs;
    arm._ws = { R: new Float64Array(9), T: new Float64Array(9), piv: new Float64Array(d * 3),
      axes: new Float64Array(d * 3), J: new Float64Array(d * 3) };
  }
  return arm._ws;
}

/** Tip position (out[0..2]) and, when `jac` is given, the Jacobian jac[d * 3 + i] of armature-space FK. */
export function forwardKinematics(arm, ang, out = new Float64Array(3), jac = null) {
  const { R, T, piv, axes } = workspace(arm); // R[i * 3 + j]: row i, column j of the current frame's rotation
  const r0 = arm.rest[0];
  for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) R[i * 3 + j] = r0[i * 4 + j];
  let px = r0[3], py = r0[7], pz = r0[11];
  const nD = arm.nDofs, nB = arm.rest.length;
  let k = 0;
  for (let b = 0; b < nB; b++) {
    if (b > 0) {
      const m = arm.rest[b];
      const tx = m[3], ty = m[7], tz = m[11];
      px += R[0] * tx + R[1] * ty + R[2] * tz;
      py += R[3] * tx + R[4] * ty + R[5] * tz;
      pz += R[6] * tx + R[7] * ty + R[8] * tz;
      if (!arm.restIdentity[b]) {
        for (let i = 0; i < 3; i++) {
          for (let j = 0; j < 3; j++) T[i * 3 + j] = R[i * 3] * m[j] + R[i * 3 + 1] * m[4 + j] + R[i * 3 + 2] * m[8 + j];
        }
        R.set(T);
      }
    }
    while (k < nD && arm.dofBone[k] === b) {
      const ax = arm.dofAxis[k];
      if (jac) {
        piv[k * 3] = px; piv[k * 3 + 1] = py; piv[k * 3 + 2] = pz;
        axes[k * 3] = R[ax]; axes[k * 3 + 1] = R[3 + ax]; axes[k * 3 + 2] = R[6 + ax];
      }
      const u = PAIR_U[ax], v = PAIR_V[ax];
      const c = Math.cos(ang[k]), s = Math.sin(ang[k]);
      for (let i = 0; i < 9; i += 3) {
        const cu = R[i + u], cv = R[i + v];
        R[i + u] = c * cu + s * cv;
        R[i + v] = c * cv - s * cu;
      }
      k++;
    }
  }
  const L = arm.lengths[arm.lengths.length - 1];
  out[0] = px + L * R[1]; out[1] = py + L * R[4]; out[2] = pz + L * R[7];
  if (jac) {
    for (let d = 0; d < nD; d++) {
      const ax0 = axes[d * 3], ax1 = axes[d * 3 + 1], ax2 = axes[d * 3 + 2];
      const d0 = out[0] - piv[d * 3], d1 = out[1] - piv[d * 3 + 1], d2 = out[2] - piv[d * 3 + 2];
      jac[d * 3] = ax1 * d2 - ax2 * d1;
      jac[d * 3 + 1] = ax2 * d0 - ax0 * d2;
      jac[d * 3 + 2] = ax0 * d1 - ax1 * d0;
    }
  }
  return out;
}

/** Every bone's head then the tip, armature space: an array of [x, y, z] (for drawing the arm). */
export function jointPositions(arm, ang) {
  const R = new Float64Array(9), T = new Float64Array(9);
  const r0 = arm.rest[0];
  for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) R[i * 3 + j] = r0[i * 4 + j];
  let px = r0[3], py = r0[7], pz = r0[11];
  const points = [[px, py, pz]];
  let k = 0;
  for (let b = 0; b < arm.rest.length; b++) {
    if (b > 0) {
      const m = arm.rest[b];
      px += R[0] * m[3] + R[1] * m[7] + R[2] * m[11];
      py += R[3] * m[3] + R[4] * m[7] + R[5] * m[11];
      pz += R[6] * m[3] + R[7] * m[7] + R[8] * m[11];
      for (let i = 0; i < 3; i++) {
        for (let j = 0; j < 3; j++) T[i * 3 + j] = R[i * 3] * m[j] + R[i * 3 + 1] * m[4 + j] + R[i * 3 + 2] * m[8 + j];
      }
      R.set(T);
      points.push([px, py, pz]);
    }
    while (k < arm.nDofs && arm.dofBone[k] === b) {
      const ax = arm.dofAxis[k], u = PAIR_U[ax], v = PAIR_V[ax];
      const c = Math.cos(ang[k]), s = Math.sin(ang[k]);
      for (let i = 0; i < 3; i++) {
        const cu = R[i * 3 + u], cv = R[i * 3 + v];
        R[i * 3 + u] = c * cu + s * cv;
        R[i * 3 + v] = c * cv - s * cu;
      }
      k++;
    }
  }
  const L = arm.lengths[arm.lengths.length - 1];
  points.push([px + L * R[1], py + L * R[4], pz + L * R[7]]);
  return points;
}

const TINY = 2.2250738585072014e-308;

/** One clamped damped-least-squares step (kinematics._dls_update for one target): new angles into `out`. */
function dlsUpdate(arm, ang, err, dist, jac, damping, out, maxStep = 0.2) {
  const nD = arm.nDofs, reach = arm.reach, J = workspace(arm).J;
  const lim = maxStep * reach;
  let e0 = err[0], e1 = err[1], e2 = err[2];
  if (dist > lim) {
    const sc = Math.min(1, lim / Math.max(dist, 1e-30));
    e0 *= sc; e1 *= sc; e2 *= sc;
  }
  const lam = Math.min(dist * (10 * damping), damping * reach);
  const lam2 = lam * lam + 1e-12;
  let m00 = lam2, m11 = lam2, m22 = lam2, m01 = 0, m12 = 0, m20 = 0;
  for (let d = 0; d < nD; d++) {
    const j0 = jac[d * 3], j1 = jac[d * 3 + 1], j2 = jac[d * 3 + 2];
    // a joint at a limit that the descent direction (J^T e) pushes further out is frozen
    const atLo = ang[d] <= arm.lower[d], atHi = ang[d] >= arm.upper[d];
    let blocked = false;
    if (atLo || atHi) {
      const g = j0 * e0 + j1 * e1 + j2 * e2;
      blocked = (atLo && g < 0) || (atHi && g > 0);
    }
    if (blocked) {
      J[d * 3] = 0; J[d * 3 + 1] = 0; J[d * 3 + 2] = 0;
    } else {
      J[d * 3] = j0; J[d * 3 + 1] = j1; J[d * 3 + 2] = j2;
      m00 += j0 * j0; m11 += j1 * j1; m22 += j2 * j2; m01 += j0 * j1; m12 += j1 * j2; m20 += j2 * j0;
    }
  }
  // (J J^T + lam2 I)^-1 e by cofactors (the matrix is symmetric positive definite)
  const c00 = m11 * m22 - m12 * m12, c11 = m22 * m00 - m20 * m20, c22 = m00 * m11 - m01 * m01;
  const c01 = m20 * m12 - m01 * m22, c12 = m01 * m20 - m12 * m00, c20 = m12 * m01 - m20 * m11;
  const det = Math.max(m00 * c00 + m01 * c01 + m20 * c20, TINY);
  const x0 = (c00 * e0 + c01 * e1 + c20 * e2) / det;
  const x1 = (c11 * e1 + c12 * e2 + c01 * e0) / det;
  const x2 = (c22 * e2 + c20 * e0 + c12 * e1) / det;
  for (let d = 0; d < nD; d++) {
    const v = ang[d] + (J[d * 3] * x0 + J[d * 3 + 1] * x1 + J[d * 3 + 2] * x2);
    out[d] = Math.min(Math.max(v, arm.lower[d]), arm.upper[d]);
  }
  return out;
}

/** A model of kind "ik" with extra.arm: solve(target) = network answer + DLS refinement. */
export class IKModel extends Model {
  constructor(parts) {
    super(parts);
    this.arm = "arm" in parts.extra ? armFromDict(parts.extra.arm) : null;
    if (this.arm && this.arm.nDofs !== this.outputSize) {
      fail(`extra.arm has ${this.arm.nDofs} DOFs but architecture.output_size is ${this.outputSize}`);
    }
    if (this.arm && this.inputSize !== 3) fail(`an IK model reads a 3D target, not ${this.inputSize} inputs`);
  }

  /** Tip position of joint angles (armature space). */
  fk(angles) { return forwardKinematics(this._needArm(), angles); }

  _needArm() {
    if (!this.arm) throw new Error("this IK model has no extra.arm: it can only forward(), not solve()");
    return this.arm;
  }

  /** Network only: joint angles for an armature-space target, clipped to the limits. */
  solveNetwork(target) {
    const arm = this._needArm();
    const y = this.forward(target);
    for (let d = 0; d < arm.nDofs; d++) y[d] = Math.min(Math.max(y[d], arm.lower[d]), arm.upper[d]);
    return y;
  }

  /**
   * Joint angles that put the tip on `target` (armature space, metres): the network's answer, then
   * IKSolver.solve_refined's two phases with restarts=0 and float64 steps (precise=True): `iters` steps,
   * then up to `restartIters` more while the best error is above `tol`; each target keeps its best pose.
   * `{refine: false}` gives the network's answer alone. Returns a Float64Array of nDofs angles.
   */
  solve(target, options = {}) {
    const out = new Float64Array(this._needArm().nDofs);
    this._solveInto(target, 0, out, 0, options);
    return out;
  }

  /** Solve `n` targets packed as [x, y, z, x, y, z, ...]: a Float64Array (n x nDofs). */
  solveBatch(targets, n, options = {}) {
    const arm = this._needArm();
    n = n ?? targets.length / 3;
    const out = new Float64Array(n * arm.nDofs);
    this._forwardRows(targets, n, out); // the network's answers, 4 targets at a time; refined in place below
    for (let r = 0; r < n; r++) this._solveInto(targets, r * 3, out, r * arm.nDofs, options, true);
    return out;
  }

  _solveInto(target, tOff, result, rOff, { refine = true, iters = 2, tol = 1e-4, restartIters = 2, damping = 0.02 },
    networkDone = false) {
    const arm = this._needArm(), nD = arm.nDofs;
    if (!this._ik) {
      this._ik = { t: new Float64Array(3), a: new Float64Array(nD), b: new Float64Array(nD), best: new Float64Array(nD),
        tip: new Float64Array(3), jac: new Float64Array(nD * 3), err: new Float64Array(3) };
    }
    const w = this._ik, t = w.t;
    t[0] = +target[tOff]; t[1] = +target[tOff + 1]; t[2] = +target[tOff + 2];
    let ang = w.a, next = w.b;
    if (networkDone) {
      for (let d = 0; d < nD; d++) ang[d] = result[rOff + d];
    } else {
      this.network.forwardInto(this._normalise(t, 0, this._x), ang, 0);
    }
    for (let d = 0; d < nD; d++) ang[d] = Math.min(Math.max(ang[d], arm.lower[d]), arm.upper[d]);
    if (!refine || iters + restartIters <= 0) { result.set(ang, rOff); return; }
    iters = Math.max(iters, 0);
    restartIters = Math.max(restartIters, 0);
    const { tip, jac, err, best } = w;
    const measure = () => {
      forwardKinematics(arm, ang, tip, jac);
      err[0] = t[0] - tip[0]; err[1] = t[1] - tip[1]; err[2] = t[2] - tip[2];
      return Math.sqrt(err[0] * err[0] + err[1] * err[1] + err[2] * err[2]);
    };
    let dist = measure(), bestDist = dist;
    best.set(ang);
    const step = () => {
      dlsUpdate(arm, ang, err, dist, jac, damping, next);
      [ang, next] = [next, ang];
      dist = measure();
      if (dist < bestDist) { bestDist = dist; best.set(ang); }
    };
    for (let r = 0; r < iters; r++) step();
    for (let s = 0; s < restartIters && bestDist > tol; s++) step();
    result.set(best, rOff);
  }
}
KIND_MODELS.ik = IKModel;
