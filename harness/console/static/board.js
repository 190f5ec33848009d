// The projector board: the leaderboard per task, best quality first, redrawn on each change.
"use strict";

function rank(jobs) {
  return jobs.slice().sort((a, b) => {
    const x = a.quality.value, y = b.quality.value;
    if (x === null || y === null) return (x === null) - (y === null);
    return a.quality.higher_is_better ? y - x : x - y;
  });
}

function render(status) {
  header(status);
  const tasks = [...new Set(status.jobs.map(j => j.task))];
  const board = document.getElementById("board");
  board.replaceChildren();
  for (const task of tasks) {
    const jobs = rank(status.jobs.filter(j => j.task === task));
    board.appendChild(el("h2", {}, task + " (" + (jobs[0].quality.label || jobs[0].quality.metric) + ")"));
    const table = el("table", {"data-task": task});
    const head = el("tr");
    for (const h of ["#", "system", "quality", "speed", "running score", "done", "state"]) {
      head.appendChild(el("th", {class: h === "system" ? "l" : ""}, h));
    }
    table.appendChild(el("thead")).appendChild(head);
    const body = el("tbody");
    jobs.forEach((job, i) => {
      const tr = el("tr", {"data-system": job.system});
      tr.appendChild(el("td", {}, String(i + 1)));
      tr.appendChild(el("td", {class: "l"}, job.system));
      tr.appendChild(el("td", {}, pct(job.quality.value) + interval(job.quality)));
      tr.appendChild(el("td", {}, speed(job.speed)));
      tr.appendChild(el("td", {}, num(job.running_score, 1)));
      tr.appendChild(el("td", {}, job.completed + "/" + (job.total ?? "?")));
      tr.appendChild(el("td", {class: "state state-" + job.state}, job.state));
      body.appendChild(tr);
    });
    table.appendChild(body);
    board.appendChild(table);
  }
}

follow(render);
