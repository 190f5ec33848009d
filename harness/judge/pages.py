"""The panel's two pages, written here in full: no CDN, no third-party script.

The judge page only uses the JSON API (docs/judging.md): it asks for the next
trial, plays its audio, draws the answer form from the test and the answer
schema, and posts the answer. The operator page polls the progress.
"""

from __future__ import annotations

_STYLE = """
body { font: 18px/1.5 system-ui, sans-serif; max-width: 52em; margin: 2em auto; padding: 0 1em; }
button { font-size: 1em; padding: .4em 1.2em; margin: .2em; }
.muted { color: #666; } .error { color: #b00; font-weight: bold; }
.choice { display: block; margin: .3em 0; } .box { border: 1px solid #ccc; padding: .6em; }
input.blank { width: 8em; font-size: 1em; } input.score { width: 4em; font-size: 1em; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: .3em .6em; }
.box { overflow-wrap: anywhere; }
.notice { background: #fff4d6; border-left: 4px solid #c80; padding: .3em .6em; margin: .3em 0; }
.scores { display: flex; flex-wrap: wrap; gap: .3em 1.2em; margin: .3em 0 1em; }
.scores label { white-space: nowrap; }
.reason { color: #555; font-size: .9em; }
@media (max-width: 480px) {
  body { margin: 1em auto; font-size: 17px; }
  input.score { width: 5em; font-size: 1.1em; }
}
"""

JUDGE_PAGE = (
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Judging</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>"""
    + _STYLE
    + """</style></head>
<body>
<h1>Judging</h1>
<p id="progress" class="muted"></p>
<div id="trial"></div>
<p id="error" class="error" data-testid="error"></p>
<script>
"use strict";
const token = location.pathname.split("/").filter(Boolean)[1];
const api = "/api/judge/" + token;
let current = null, plays = 0, heard = false;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") node.textContent = v; else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

async function load() {
  document.getElementById("error").textContent = "";
  const r = await fetch(api + "/next", {cache: "no-store"});
  if (!r.ok) { document.getElementById("error").textContent = (await r.json()).error; return; }
  const t = await r.json();
  const box = document.getElementById("trial");
  box.replaceChildren();
  if (t.done) {
    document.getElementById("progress").textContent = "";
    box.append(el("p", {"data-testid": "done", text: "All trials are done. Thank you."}));
    return;
  }
  current = t; plays = 0; heard = t.media.length === 0;
  document.getElementById("progress").textContent =
    "Trial " + (t.progress.answered + 1) + " of " + t.progress.total;
  if (t.media.length) box.append(player(t));
  box.append(form(t));
  enable();
}

function player(t) {
  // preload none: the audio is fetched when played, in one request (the panel serves
  // a sample whole, and a play-once sample once only).
  const audios = t.media.map(src => el("audio", {src: src, preload: "none"}));
  const label = t.test === "pair" ? "Play A then B" : "Play";
  const button = el("button", {type: "button", "data-testid": "play", text: label});
  const note = el("span", {class: "muted", "data-testid": "playing"});
  // Said before the first play: the judge must know that there is no second hearing.
  const once = t.play_once ? el("p", {class: "notice", "data-testid": "play-once",
    text: t.test === "pair"
      ? "You will hear A then B once only: press Play when you are ready to listen."
      : "You will hear this once only: press Play when you are ready to listen."}) : "";
  if (t.play_once && t.played) {
    // Heard before the page was closed: once only means no second hearing.
    plays = 1; heard = true; button.disabled = true;
    note.textContent = "already played (once only)";
  }
  button.onclick = () => {
    if (t.play_once && plays > 0) return;
    plays += 1;
    button.disabled = true;
    let k = 0;
    const next = () => {
      if (k >= audios.length) {
        heard = true; note.textContent = t.play_once ? "played (once only)" : "";
        button.disabled = t.play_once; enable(); return;
      }
      if (t.test === "pair") note.textContent = "now playing " + (k === 0 ? "A" : "B");
      const a = audios[k++];
      a.onended = () => {
        a.dataset.ended = "1";
        // Heard once only: the page drops the sample (the panel serves it once only).
        if (t.play_once) { a.removeAttribute("src"); a.load(); }
        next();
      };
      a.currentTime = 0;
      a.play().catch(e => { document.getElementById("error").textContent = "cannot play: " + e; });
    };
    next();
  };
  return el("div", {class: "box"}, once, button, " ", note, ...audios);
}

function choices(name, schema) {
  const labels = {};
  for (const part of (schema.description || "").split("; ")) {
    const m = part.match(/^([+-]?\\d+): (.*)$/);
    if (m) labels[Number(m[1])] = m[2];
  }
  const values = schema.enum || [];
  if (!values.length) for (let v = schema.maximum; v >= schema.minimum; v--) values.push(v);
  return el("div", {}, ...values.map(v => el("label", {class: "choice"},
    el("input", {type: "radio", name: name, value: String(v), "data-testid": name + "-" + v}),
    " " + (v > 0 && schema.enum ? "+" : "") + v + (labels[v] ? " " + labels[v] : ""))));
}

function decimal(name, schema) {
  return el("input", {type: "number", class: "score", name: name, min: schema.minimum,
    max: schema.maximum, step: "0.1", "data-testid": name});
}

function form(t) {
  const f = el("form", {id: "answer"});
  const props = t.answer_schema.properties;
  if (t.test === "sus") {
    const p = el("p", {});
    let n = 0;
    for (const part of t.text.parts) {
      if (part === null) {
        p.append(el("input", {class: "blank", name: "blank", "data-testid": "blank-" + n++}), " ");
      } else p.append(part + " ");
    }
    f.append(el("p", {class: "muted", text: "Write the words you heard in the blanks."}), p);
  } else if (t.test === "pair" || t.test === "mos") {
    f.append(choices("score", props.score));
  } else if (t.test === "mt-adequacy-fluency") {
    f.append(el("p", {class: "muted", text: "Adequacy: " + props.adequacy_1.description}),
      el("p", {class: "muted", text: "Fluency: " + props.fluency_1.description}),
      el("p", {text: "Source:"}), el("p", {class: "box", text: t.text.source}));
    t.text.outputs.forEach((out, i) => {
      const n = i + 1;
      f.append(el("p", {text: "Translation " + n + ":"}), el("p", {class: "box", text: out}),
        el("div", {class: "scores"},
          el("label", {}, "Adequacy (0-5) ", decimal("adequacy_" + n, props["adequacy_" + n])),
          el("label", {}, "Fluency (0-5) ", decimal("fluency_" + n, props["fluency_" + n]))));
    });
  } else if (t.test === "summary") {
    f.append(el("p", {text: "Document:"}), el("p", {class: "box", text: t.text.document}),
      el("p", {text: "Summary:"}), el("p", {class: "box", text: t.text.summary}),
      el("p", {class: "muted", text: t.text.criteria}),
      el("label", {}, "Score (0-5) ", decimal("summary", props.summary)));
  } else if (t.test === "relevance") {
    f.append(el("p", {text: "Topic: " + t.text.title}),
      el("p", {class: "muted", text: t.text.description}),
      el("p", {class: "muted", text: t.text.narrative}),
      el("p", {text: "Document:"}), el("p", {class: "box", text: t.text.document}),
      el("p", {text: "How relevant is the document to the topic?"}),
      choices("relevance", props.relevance));
  } else if (t.test === "pos-review") {
    f.append(el("p", {text: "Is the system's tag also correct for this word here?"}),
      el("p", {class: "box"}, t.text.before, el("b", {"data-testid": "word",
        text: " [" + t.text.word + "] "}), t.text.after),
      el("p", {}, "Reference tag: ", el("b", {"data-testid": "reference", text:
        t.text.reference}), "; system tag: ", el("b", {"data-testid": "system",
        text: t.text.system})),
      el("label", {class: "choice"}, el("input", {type: "radio", name: "accept", value: "true",
        "data-testid": "accept-yes"}), " also correct"),
      el("label", {class: "choice"}, el("input", {type: "radio", name: "accept", value: "false",
        "data-testid": "accept-no"}), " not correct"));
  } else if (t.test === "cws-review") {
    f.append(el("p", {text: "Is the system's segmentation acceptable here?"}),
      el("p", {class: "box"}, t.text.before, el("b", {text: " [" + t.text.system + "] "}),
        t.text.after),
      el("p", {class: "muted", text: "Reference: " + t.text.reference}),
      el("label", {class: "choice"}, el("input", {type: "radio", name: "accept", value: "true",
        "data-testid": "accept-yes"}), " acceptable"),
      el("label", {class: "choice"}, el("input", {type: "radio", name: "accept", value: "false",
        "data-testid": "accept-no"}), " not acceptable"));
  }
  f.append(el("p", {}, el("button", {type: "submit", "data-testid": "submit", text: "Submit"}),
    " ", el("span", {class: "reason", id: "submit-reason", "data-testid": "submit-reason"})));
  f.onsubmit = e => { e.preventDefault(); submit(f, t); };
  return f;
}

function enable() {
  const b = document.querySelector('[data-testid="submit"]');
  if (b) b.disabled = !heard;
  // A grey button says why it is grey.
  const why = document.getElementById("submit-reason");
  if (why) why.textContent = heard ? "" : "Submit opens when the audio has played to its end.";
}

function collect(f, t) {
  const props = t.answer_schema.properties;
  if (t.test === "sus") return {blanks: [...f.querySelectorAll("input.blank")].map(i => i.value)};
  const answer = {};
  for (const [name, schema] of Object.entries(props)) {
    if (schema.type === "boolean") {
      const c = f.querySelector('input[name="' + name + '"]:checked');
      answer[name] = c ? c.value === "true" : null;
    } else if (schema.enum || schema.type === "integer") {
      const c = f.querySelector('input[name="' + name + '"]:checked');
      answer[name] = c ? Number(c.value) : null;
    } else {
      const v = f.querySelector('input[name="' + name + '"]').value;
      answer[name] = v === "" ? null : Number(v);
    }
  }
  return answer;
}

async function submit(f, t) {
  const body = {trial: t.trial, answer: collect(f, t), plays: plays};
  const r = await fetch(api + "/answer", {method: "POST", body: JSON.stringify(body),
    headers: {"content-type": "application/json"}});
  if (r.ok || r.status === 409) { load(); return; }
  document.getElementById("error").textContent = (await r.json()).error;
}

load();
</script>
</body></html>
"""
)

OPERATOR_PAGE = (
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Judging: progress</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>"""
    + _STYLE
    + """</style></head>
<body>
<h1>Judging progress</h1>
<p id="what" class="muted"></p>
<table><thead><tr><th>judge</th><th>answered</th><th>of</th><th>last answer</th></tr></thead>
<tbody id="rows"></tbody></table>
<ul id="warnings" class="error"></ul>
<script>
"use strict";
const token = location.pathname.split("/").filter(Boolean)[1];
async function poll() {
  const r = await fetch("/api/operator/" + token + "/progress", {cache: "no-store"});
  if (r.ok) {
    const p = await r.json();
    document.getElementById("what").textContent = p.task + ": " + p.test;
    document.getElementById("rows").replaceChildren(...p.judges.map(j => {
      const tr = document.createElement("tr");
      const when = j.last_answer ? new Date(j.last_answer * 1000).toLocaleTimeString() : "-";
      for (const v of [j.judge, j.answered, j.total, when]) {
        const td = document.createElement("td"); td.textContent = v; tr.append(td);
      }
      return tr;
    }));
  }
  setTimeout(poll, 2000);
}
poll();
</script>
</body></html>
"""
)
