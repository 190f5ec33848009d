// The console's shared script: the event stream, number formats, operator actions, charts.
// Everything shown comes from the API; text is always set with textContent (never HTML),
// since system names and messages come from participants.
"use strict";

function num(v, digits = 2) { return v === null || v === undefined ? "-" : Number(v).toFixed(digits); }
function pct(v) { return v === null || v === undefined ? "-" : (100 * v).toFixed(1) + "%"; }
function dur(s) {
  if (s === null || s === undefined) return "-";
  s = Math.round(s);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  return (h ? h + ":" + String(m).padStart(2, "0") : m) + ":" + String(r).padStart(2, "0");
}
function interval(q) {
  // The 95% bootstrap interval of the items so far (the report's; docs/significance.md).
  if (q.ci_low === null || q.ci_low === undefined || q.ci_high === null || q.ci_high === undefined) return "";
  return " [" + (100 * q.ci_low).toFixed(1) + ", " + (100 * q.ci_high).toFixed(1) + "]";
}
function quality(q) { return q.value === null ? "-" : (q.label || q.metric) + " " + pct(q.value) + interval(q); }
function qualityCell(cell, q) {
  // The figure, and its interval on a line of its own so that the overview stays narrow.
  const figure = q.value === null ? "-" : (q.label || q.metric) + " " + pct(q.value);
  const ci = interval(q).trim();
  cell.replaceChildren(document.createTextNode(figure));
  if (ci) cell.appendChild(el("div", {class: "ci"}, ci));
}
function sig(v) {
  // Three significant digits, with k/M for the thousands and millions: "198563.83" is
  // "199k" (the journal keeps the full figure).
  if (v === null || v === undefined) return "-";
  const x = Number(v), a = Math.abs(x);
  if (a >= 1e6) return Number((x / 1e6).toPrecision(3)) + "M";
  if (a >= 1e3) return Number((x / 1e3).toPrecision(3)) + "k";
  return String(Number(x.toPrecision(3)));
}
function speed(s) {
  return s.mean === null ? "-" : sig(s.mean) + " / " + sig(s.p95) + " " + (s.label || s.unit);
}
function verdictText(v) {
  const keys = Object.keys(v).filter(k => k !== "ok").sort();
  return keys.length ? keys.map(k => k + " " + v[k]).join(", ") : "-";
}
function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

// Server-sent events: one "status" document per change; EventSource reconnects by itself.
function follow(onStatus) {
  const source = new EventSource("/api/events");
  source.addEventListener("status", e => onStatus(JSON.parse(e.data)));
  const live = document.getElementById("live");
  const mark = (text, cls) => { if (live) { live.textContent = text; live.className = cls; } };
  source.onopen = () => mark("\u25cf live", "live-on");
  source.onerror = () => mark("reconnecting...", "live-off");
  return source;
}

function header(status) {
  const title = document.getElementById("site");
  if (title) title.textContent = status.site;
  const ctl = document.getElementById("controller");
  if (ctl) ctl.textContent = "controller " + status.controller;
}

// Operator actions carry the token in the Authorization header only.
function operatorToken() {
  const input = document.getElementById("token");
  const value = input ? input.value.trim() : "";
  if (value) sessionStorage.setItem("onsite-operator", value);
  return value || sessionStorage.getItem("onsite-operator") || "";
}
// The overview shows its controls only where the console has them and this tab holds
// the operator's token (from the operator link's #operator=... fragment, or signed in).
async function operatorMode() {
  const given = new URLSearchParams(location.hash.slice(1)).get("operator");
  if (given) {
    sessionStorage.setItem("onsite-operator", given);
    history.replaceState(null, "", location.pathname + location.search);
  }
  const token = sessionStorage.getItem("onsite-operator") || "";
  const response = await fetch("/api/operator",
    {headers: token ? {"Authorization": "Bearer " + token} : {}, cache: "no-store"});
  const body = response.ok ? await response.json() : {controls: false, operator: false};
  document.body.classList.toggle("can-operate", body.controls && !body.operator);
  document.body.classList.toggle("operate", body.controls && body.operator);
  document.body.dataset.operator = "checked";
  return body;
}
async function act(path) {
  const msg = document.getElementById("msg");
  const response = await fetch(path, {method: "POST",
    headers: {"Authorization": "Bearer " + operatorToken()}});
  const body = await response.json().catch(() => ({}));
  if (msg) msg.textContent = response.ok ? "done: " + path : (body.error || response.statusText);
  return response.ok;
}
function jobPath(job) {
  return encodeURIComponent(job.task) + "/" + encodeURIComponent(job.system);
}

// A small SVG line chart: series = [{points: [[x, y]...], color, dots, label}].
function chart(svg, series, opts = {}) {
  const W = opts.width || 420, H = opts.height || 200, P = 34;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("width", W); svg.setAttribute("height", H);
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const ns = "http://www.w3.org/2000/svg";
  const all = series.flatMap(s => s.points).filter(p => p[1] !== null);
  const add = (tag, attrs, text) => {
    const n = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    svg.appendChild(n); return n;
  };
  add("text", {x: P, y: 12}, opts.title || "");
  if (!all.length) { add("text", {x: W / 2 - 30, y: H / 2}, "no data yet"); return; }
  const xs = all.map(p => p[0]), ys = all.map(p => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1e-9);
  const y0 = opts.yMin !== undefined ? opts.yMin : Math.min(0, ...ys);
  const y1 = opts.yMax !== undefined ? opts.yMax : Math.max(...ys, y0 + 1e-9);
  const sx = x => P + (W - P - 8) * (x - x0) / ((x1 - x0) || 1);
  const sy = y => H - 18 - (H - 36) * (y - y0) / ((y1 - y0) || 1);
  add("line", {x1: P, y1: H - 18, x2: W - 8, y2: H - 18, stroke: "#8c959f"});
  add("line", {x1: P, y1: 18, x2: P, y2: H - 18, stroke: "#8c959f"});
  add("text", {x: 2, y: sy(y1) + 4}, num(y1, opts.digits ?? 2));
  add("text", {x: 2, y: sy(y0) + 4}, num(y0, opts.digits ?? 2));
  add("text", {x: W - 60, y: H - 4}, opts.xLabel || "");
  for (const s of series) {
    const pts = s.points.filter(p => p[1] !== null);
    if (!pts.length) continue;
    if (s.dots) {
      for (const p of pts) add("circle", {cx: sx(p[0]), cy: sy(p[1]), r: 2, fill: s.color});
    } else {
      add("polyline", {points: pts.map(p => sx(p[0]) + "," + sy(p[1])).join(" "),
        fill: "none", stroke: s.color, "stroke-width": 1.5});
    }
  }
}
