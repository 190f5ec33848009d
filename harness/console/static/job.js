// A job page: per-item rows and three live charts; refetched when the stream shows a change.
"use strict";

const parts = location.pathname.split("/").slice(2).map(decodeURIComponent);
const [TASK, SYSTEM] = parts;
const API = "/api/jobs/" + encodeURIComponent(TASK) + "/" + encodeURIComponent(SYSTEM);
let seen = null;
let busy = false;

async function load() {
  if (busy) return;
  busy = true;
  try {
    const response = await fetch(API);
    if (response.ok) show(await response.json());
  } finally { busy = false; }
}

function show(job) {
  document.getElementById("job").textContent = job.task + " / " + job.system;
  document.getElementById("summary").textContent =
    `${job.state}: ${job.completed}/${job.total ?? "?"} items, quality so far ${quality(job.quality)}, ` +
    `speed ${speed(job.speed)}, running score ${num(job.running_score, 1)}, ETA ${dur(job.eta_seconds)}` +
    (job.device_wait ? `; its device does not answer: next try in ${Math.ceil(job.device_wait.next_try_in_seconds)} s, ` +
      `tries so far ${job.device_wait.tries}, last error: ${job.device_wait.last_error}` : "");
  const body = document.querySelector("#items tbody");
  const rows = job.rows;
  // Rows only ever get added: append the new ones (the journal is append-only).
  if (body.children.length > rows.length) body.replaceChildren();
  for (let i = body.children.length; i < rows.length; i++) {
    const r = rows[i];
    const tr = el("tr", {"data-item": r.item});
    tr.appendChild(el("td", {}, String(i + 1)));
    tr.appendChild(el("td", {class: "l"}, r.item + (r.audit ? " (audit)" : "")));
    tr.appendChild(el("td", {}, String(r.attempt)));
    tr.appendChild(el("td", {class: "l v-" + r.verdict}, r.verdict));
    tr.appendChild(el("td", {}, num(r.seconds, 3)));
    tr.appendChild(el("td", {}, num(r.budget_seconds, 3)));
    tr.appendChild(el("td", {}, sig(r.speed)));
    tr.appendChild(el("td", {class: "l msg", title: r.message || ""}, r.message));
    body.appendChild(tr);
  }
  chart(document.getElementById("time-chart"), [
    {points: rows.map((r, i) => [i + 1, r.seconds]), color: "#0969da", dots: true},
    {points: rows.map((r, i) => [i + 1, r.budget_seconds]), color: "#cf222e"},
  ], {title: "seconds per item (dots) against the budget (line)", xLabel: "item", digits: 3});
  chart(document.getElementById("quality-chart"), [
    {points: job.series.quality.map(p => [p.items, p.value === null ? null : 100 * p.value]),
      color: "#1a7f37"},
  ], {title: "quality so far: " + (job.quality.label || job.quality.metric) + " %", xLabel: "items", digits: 1});
  const t0 = job.series.running_score.length ? job.series.running_score[0].wall : 0;
  chart(document.getElementById("running-chart"), [
    {points: job.series.running_score.map(p => [p.wall - t0, p.value]), color: "#8250df"},
  ], {title: "running score over time", xLabel: "seconds", yMin: 0, yMax: 100, digits: 0});
}

follow(status => {
  header(status);
  const job = status.jobs.find(j => j.task === TASK && j.system === SYSTEM);
  if (!job) return;
  const key = job.completed + ":" + job.state + ":" + job.restarts;
  if (key !== seen) { seen = key; load(); }
});
load();
