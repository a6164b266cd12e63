// PathBind view: filters, two runs side by side, and a reviewer's verdicts kept in this browser (localStorage) and
// exported as CSV. Everything it shows comes from data.js, written by `pathbind view`.
"use strict";
(function () {
  const data = window.PATHBIND_VIEW;
  const PAGE = 40;  // cards per page: a 5,000-item run opens at once and pages on demand
  const KEY = "pathbind-view-reviews:" + data.site;
  const $ = (id) => document.getElementById(id);
  const state = {page: 0};
  let reviews = {};
  try { reviews = JSON.parse(localStorage.getItem(KEY) || "{}"); } catch (error) { reviews = {}; }

  function element(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (name === "text") node.textContent = value; else node.setAttribute(name, value);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function options(select, values, labels) {
    select.replaceChildren(...values.map((value, i) => element("option", {value: value, text: labels[i]})));
  }

  function distinct(values) { return [...new Set(values.filter((value) => value))].sort(); }

  function setUp() {
    const items = data.items;
    const tasks = distinct(items.map((item) => item.task));
    options($("task"), ["", ...tasks], ["every task", ...tasks]);
    const dimensions = distinct(items.map((item) => item.dimension));
    options($("dimension"), ["", ...dimensions], ["every dimension", ...dimensions]);
    const outcomes = Object.keys(data.outcomes);
    options($("outcome"), ["", ...outcomes], ["any outcome", ...outcomes.map((o) => data.outcomes[o])]);
    options($("run-a"), data.runs, data.runs);
    options($("run-b"), ["", ...data.runs], ["nothing", ...data.runs]);
    if (data.runs.length > 1) $("run-b").value = data.runs[1];
    const maps = distinct(items.flatMap((item) => Object.values(item.runs).flatMap((r) => Object.keys(r.overlays))));
    const first = maps.includes("layers mid") ? "layers mid" : (maps[0] || "");
    options($("map"), ["", ...maps], ["none", ...maps]);
    $("map").value = first;
    $("notes").replaceChildren(...data.notes.map((note) => element("li", {text: note})));
    for (const id of ["task", "dimension", "outcome", "run-a", "run-b", "map"]) {
      $(id).addEventListener("change", () => { state.page = 0; render(); });
    }
    $("cluster").addEventListener("input", () => { state.page = 0; render(); });
    $("prev").addEventListener("click", () => { state.page = Math.max(0, state.page - 1); render(); });
    $("next").addEventListener("click", () => { state.page += 1; render(); });
    $("export").addEventListener("click", exportReviews);
  }

  function shownRuns() { return [$("run-a").value, $("run-b").value].filter((run, i, all) => run && all.indexOf(run) === i); }

  function selected() {
    const task = $("task").value, dimension = $("dimension").value, outcome = $("outcome").value;
    const cluster = $("cluster").value.trim().toLowerCase();
    const runs = shownRuns();
    return data.items.filter((item) =>
      (!task || item.task === task) && (!dimension || item.dimension === dimension)
      && (!cluster || item.cluster.toLowerCase().includes(cluster))
      && runs.some((run) => item.runs[run])
      && (!outcome || runs.some((run) => item.runs[run] && item.runs[run].outcomes.includes(outcome))));
  }

  function render() {
    const items = selected();
    const pages = Math.max(1, Math.ceil(items.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    $("count").textContent = `${items.length} of ${data.items.length} items`;
    $("page").textContent = `page ${state.page + 1} of ${pages}`;
    $("items").replaceChildren(...items.slice(state.page * PAGE, (state.page + 1) * PAGE).map(card));
    $("reviewed").textContent = `${Object.keys(reviews).length} reviewed`;
  }

  function card(item) {
    const node = element("section", {class: "item", "data-task": item.task, "data-id": item.id},
      element("h2", {text: item.question || item.id}),
      element("div", {class: "meta", text: [item.task, item.id, item.dimension, item.cluster].filter((x) => x).join(" · ")}));
    if (item.options.length) {
      node.append(element("ol", {type: "A"}, ...item.options.map((option) => element("li", {text: option}))));
    }
    if (item.reference !== "" && item.reference !== null) {
      node.append(element("div", {class: "reference", text: "reference: " + JSON.stringify(item.reference)}));
    }
    if (item.problem) node.append(element("div", {class: "invalid", text: item.problem}));
    // The image once, above the panels, unless a run draws its own heat map or boxes on it.
    const own = shownRuns().some((run) => item.runs[run] && (Object.keys(item.runs[run].overlays).length
      || item.runs[run].boxes.length));
    if (item.thumb && !own) node.append(picture(item, null));
    node.append(element("div", {class: "panels"}, ...shownRuns().map((run) => panel(item, run, own))), review(item));
    return node;
  }

  function panel(item, run, own) {
    const logged = item.runs[run];
    const node = element("div", {class: "panel", "data-run": run}, element("h3", {text: run}));
    if (!logged) { node.append(element("p", {text: "not in this run"})); return node; }
    if (item.thumb && own) node.append(picture(item, logged));
    if (logged.answers.length) {
      node.append(element("table", {class: "answers"}, element("tr", {}, ...["condition", "answer", "scored"].map(
        (head) => element("th", {text: head}))), ...logged.answers.map(answerRow)));
    }
    const measures = Object.entries(logged.measures).map(([name, value]) =>
      `${name} ${value === null ? "n/a" : Number(value).toPrecision(3)}`);
    if (measures.length) node.append(element("div", {class: "measures", text: measures.join(" · ")}));
    if (logged.no_overlay.length) node.append(element("div", {class: "measures", text: "no heat map: " + logged.no_overlay.join("; ")}));
    return node;
  }

  function picture(item, logged) {
    const node = element("div", {class: "pic"}, element("img", {src: item.thumb, alt: item.id, loading: "lazy"}));
    const map = $("map").value;
    if (logged && map && logged.overlays[map]) {
      node.append(element("img", {class: "overlay", src: logged.overlays[map], alt: map, loading: "lazy"}));
    }
    for (const [kind, boxes] of [["expert", item.boxes], ["model", logged ? logged.boxes : []]]) {
      for (const box of boxes) node.append(boxElement(item, box, kind));
    }
    return node;
  }

  function boxElement(item, [x0, y0, x1, y1], kind) {
    const style = `left:${100 * x0 / item.width}%;top:${100 * y0 / item.height}%;`
      + `width:${100 * (x1 - x0) / item.width}%;height:${100 * (y1 - y0) / item.height}%`;
    return element("div", {class: "box " + kind, style: style});
  }

  function answerRow(answer) {
    const scored = answer.valid === false ? ["invalid", "invalid: " + (answer.reason || "no reason logged")]
      : answer.correct === true ? ["right", "right"] : answer.correct === false ? ["wrong", "wrong"] : ["", "–"];
    const parsed = answer.parsed === null || answer.parsed === undefined ? "" : JSON.stringify(answer.parsed);
    return element("tr", {"data-condition": answer.condition}, element("td", {text: answer.condition}),
      element("td", {text: parsed || answer.answer, title: answer.answer}),
      element("td", {class: scored[0], text: scored[1]}));
  }

  function review(item) {
    const key = item.task + "\t" + item.id;
    const current = reviews[key] || {verdict: "", note: ""};
    const node = element("div", {class: "review"}, element("span", {text: "review: "}));
    for (const verdict of ["agree", "disagree"]) {
      const input = element("input", {type: "radio", name: "verdict-" + key, value: verdict});
      input.checked = current.verdict === verdict;
      input.addEventListener("change", () => save(key, {verdict: verdict}));
      node.append(element("label", {}, input, " " + verdict + " "));
    }
    const note = element("input", {type: "text", class: "note", placeholder: "note"});
    note.value = current.note;
    note.addEventListener("input", () => save(key, {note: note.value}));
    node.append(note);
    return node;
  }

  function save(key, change) {
    reviews[key] = {verdict: "", note: "", ...reviews[key], ...change, runs: shownRuns().join(" | ")};
    localStorage.setItem(KEY, JSON.stringify(reviews));
    $("reviewed").textContent = `${Object.keys(reviews).length} reviewed`;
  }

  function csvField(value) {
    const text = String(value);
    return /[",\n\r]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }

  function reviewsCsv() {
    const rows = [["task", "id", "verdict", "note", "runs"]];
    for (const key of Object.keys(reviews).sort()) {
      const [task, id] = key.split("\t");
      const review = reviews[key];
      rows.push([task, id, review.verdict, review.note, review.runs]);
    }
    return rows.map((row) => row.map(csvField).join(",")).join("\r\n") + "\r\n";
  }

  function exportReviews() {
    const link = $("download");
    link.href = "data:text/csv;charset=utf-8," + encodeURIComponent(reviewsCsv());
    link.hidden = false;
    link.click();
  }

  window.pathbindView = {reviewsCsv: reviewsCsv, render: render};
  setUp();
  render();
})();
