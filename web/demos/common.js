// What every demo page shares: the model named by ?model= (default given by the page), loaded with drla.js.
import { load } from "../drla.js";

export async function loadModel(fallback) {
  const url = new URLSearchParams(location.search).get("model") ?? fallback;
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot fetch the model ${url}: HTTP ${response.status}`);
  const model = load(await response.arrayBuffer());
  document.getElementById("model-name").textContent = url;
  return model;
}

export function showError(err) {
  document.getElementById("error").textContent = `error: ${err.message ?? err}`;
  window.demoReady = true; // the page shows the error; the browser test reads it
}

export function bars(ctx, values, names, best, x0, y0, w, h) {
  const max = Math.max(...values.map(Math.abs), 1e-9);
  const rowH = h / values.length;
  ctx.font = "12px system-ui";
  values.forEach((v, i) => {
    const y = y0 + i * rowH;
    ctx.fillStyle = i === best ? "#2f6fdf" : "#9aa6b8";
    const len = (Math.abs(v) / max) * (w * 0.45);
    ctx.fillRect(x0 + w * 0.55 + (v < 0 ? -len : 0), y + 3, len, rowH - 6);
    ctx.fillStyle = "#1d2330";
    ctx.fillText(`${names[i]} ${v.toFixed(3)}`, x0, y + rowH / 2 + 4);
  });
}
