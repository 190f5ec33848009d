// The overview: one row per job, updated in place from the event stream.
"use strict";

const rows = new Map();
const devices = new Map();
const COLUMNS = ["task", "system", "device", "state", "done", "bar", "eta", "quality", "speed",
  "budget", "running", "failures", "venue", "restarts", "inflight", "act"];

function jobRow(job) {
  const key = job.task + "/" + job.system;
  let row = rows.get(key);
  if (row) return row;
  row = el("tr", {"data-job": key});
  const cells = {};
  for (const c of COLUMNS) {
    const td = el("td", {"data-col": c});
    if (["task", "system", "device", "state", "failures", "inflight"].includes(c)) td.className = "l";
    if (c === "act") td.className = "operator";
    row.appendChild(td); cells[c] = td;
  }
  const link = el("a", {href: "/jobs/" + jobPath(job)}, job.system);
  cells.system.appendChild(link);
  cells.bar.appendChild(el("span", {class: "bar"})).appendChild(el("span"));
  const button = el("button", {class: "toggle"}, "pause");
  button.addEventListener("click", () => {
    const paused = row.dataset.state === "paused";
    act("/api/jobs/" + jobPath(job) + (paused ? "/resume" : "/pause"));
  });
  cells.act.appendChild(button);
  // Shown for a failed job only: the operator runs its remaining items again.
  const retry = el("button", {class: "retry", hidden: ""}, "retry");
  retry.addEventListener("click", () => act("/api/jobs/" + jobPath(job) + "/retry"));
  cells.act.appendChild(retry);
  row.cells_ = cells;
  document.querySelector("#jobs tbody").appendChild(row);
  rows.set(key, row);
  return row;
}

function deviceRow(name) {
  let row = devices.get(name);
  if (row) return row;
  row = el("tr", {"data-device": name});
  row.appendChild(el("td", {class: "l"}, name));
  const state = el("td", {class: "l state"});
  row.appendChild(state);
  const td = el("td", {class: "operator"});
  for (const action of ["pause", "resume", "skip"]) {
    const b = el("button", {"data-action": action}, action);
    b.addEventListener("click", () => act("/api/devices/" + encodeURIComponent(name) + "/" + action));
    td.appendChild(b);
  }
  row.appendChild(td);
  row.state_ = state;
  document.querySelector("#devices tbody").appendChild(row);
  devices.set(name, row);
  return row;
}

function render(status) {
  header(status);
  for (const job of status.jobs) {
    const row = jobRow(job);
    const c = row.cells_;
    row.dataset.state = job.state;
    c.task.textContent = job.task;
    c.device.textContent = job.device;
    // A long state name may break after its underscores when the table needs the room.
    const name = el("span", {class: "state-name"});
    job.state.split("_").forEach((part, i) => {
      if (i) name.append("_", document.createElement("wbr"));
      name.append(part);
    });
    c.state.replaceChildren(name);
    if (job.device_wait) {
      const w = job.device_wait;
      c.state.appendChild(el("div", {class: "wait"},
        `next try in ${Math.ceil(w.next_try_in_seconds)} s, tries so far ${w.tries}`));
      c.state.appendChild(el("div", {class: "wait-error", title: w.last_error}, w.last_error));
    }
    c.state.className = "l state state-" + job.state;
    c.done.textContent = job.completed + "/" + (job.total ?? "?");
    const share = job.total ? Math.min(1, job.completed / job.total) : 0;
    c.bar.querySelector(".bar > span").style.width = (100 * share).toFixed(1) + "%";
    c.eta.textContent = dur(job.eta_seconds);
    qualityCell(c.quality, job.quality);
    c.speed.textContent = speed(job.speed);
    c.budget.textContent = pct(job.speed.budget_usage);
    c.running.textContent = num(job.running_score, 1);
    c.failures.textContent = verdictText(job.verdicts);
    c.venue.textContent = job.venue_failures;
    c.restarts.textContent = job.restarts;
    c.inflight.textContent = job.in_flight
      ? job.in_flight.item + " " + num(job.in_flight.item_seconds, 1) + " s" : "-";
    const toggle = c.act.querySelector("button.toggle");
    toggle.textContent = job.state === "paused" ? "resume" : "pause";
    toggle.disabled = status.controller !== "running";
    const retry = c.act.querySelector("button.retry");
    retry.hidden = !(job.state === "failed" && status.controller === "running");
    // A failed job has nothing to pause: its place is the retry button's.
    toggle.hidden = !retry.hidden;
  }
  for (const name of new Set(status.jobs.map(j => j.device))) {
    const row = deviceRow(name);
    const state = deviceState(name, status);
    row.state_.textContent = state;
    row.state_.className = "l state state-" + state.split(" ")[0];
  }
  fitHint();
}

// What a device does, from its jobs: a device runs one system at a time.
function deviceState(name, status) {
  if (status.skipped_devices.includes(name)) return "skipped";
  if (status.paused_devices.includes(name)) return "paused";
  const jobs = status.jobs.filter(j => j.device === name);
  const on = jobs.filter(j => j.state === "running" || j.state === "retrying_start");
  if (on.length) return "running " + on.map(j => j.system).join(", ");
  if (jobs.some(j => j.state === "waiting_for_device")) return "not_answering";
  if (jobs.every(j => ["done", "failed", "skipped"].includes(j.state))) return "done";
  return status.controller === "running" ? "idle" : "stopped";
}

// On a narrow screen the overview scrolls sideways: say so above it.
function fitHint() {
  const box = document.querySelector("#jobs").parentElement;
  document.getElementById("scroll-hint").hidden = box.scrollWidth <= box.clientWidth;
}
window.addEventListener("resize", fitHint);

document.getElementById("stop").addEventListener("click", () => {
  if (confirm("Stop the run? Everything recorded is kept; the same command resumes.")) act("/api/stop");
});
document.getElementById("sign-in").addEventListener("click", e => {
  e.preventDefault();
  const form = document.getElementById("sign-in-form");
  form.hidden = false;
  document.getElementById("token").focus();
});
document.getElementById("sign-in-form").addEventListener("submit", async e => {
  e.preventDefault();
  const input = document.getElementById("token");
  sessionStorage.setItem("onsite-operator", input.value.trim());
  input.value = "";
  const mode = await operatorMode();
  document.getElementById("sign-in-form").hidden = mode.operator;
  document.getElementById("msg").textContent = mode.operator ? "signed in as the operator"
    : "that is not this run's operator token";
});
operatorMode();
follow(render);
