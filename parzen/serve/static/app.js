// parzen serve's page: one histogram per numeric column and one bar chart per group column of a
// table with a synopsis; brushing one chart asks POST /brush for every other chart (one request),
// which the server answers from the synopsis.  Plain JavaScript and SVG, nothing fetched but
// this server's own API.  ?table=NAME picks the table, ?charts=a,b,c the charts shown.
// <body data-busy="0"> once every brush made so far is drawn.  The numbers drawn are kept on the elements (data-value, data-exact) and
// the page's state on <body> (data-updates, data-last-ms) for tests.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const W = 320, H = 150, PAD = { left: 36, right: 6, top: 6, bottom: 18 };
const state = { table: null, charts: [], filters: {}, exact: false, inFlight: false, pending: false, updates: 0 };
const views = new Map();  // column -> {figure, svg, bars, exactBars, curve, caption, chart}

function el(name, attrs, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

function fmt(v) {
  if (v === null || v === undefined) return "–";
  const a = Math.abs(v);
  if (a >= 1e6) return (v / 1e6).toFixed(2) + "M";
  if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
  if (a >= 100 || Number.isInteger(v)) return v.toFixed(0);
  return v.toPrecision(3);
}

function setStatus(text, error) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.classList.toggle("error", Boolean(error));
}

async function api(path, body) {
  const response = await fetch(path, body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

function xScale(chart) {
  if (chart.type === "histogram") {
    const lo = chart.labels[0], hi = chart.labels[chart.labels.length - 1] + chart.width;
    return { lo, hi, at: (v) => PAD.left + (v - lo) / (hi - lo) * (W - PAD.left - PAD.right),
             back: (px) => lo + (px - PAD.left) / (W - PAD.left - PAD.right) * (hi - lo) };
  }
  const n = chart.labels.length, step = (W - PAD.left - PAD.right) / n;
  return { step, at: (k) => PAD.left + k * step };
}

function build(chart) {
  const figure = document.createElement("figure");
  figure.dataset.column = chart.column;
  figure.dataset.type = chart.type;
  const caption = document.createElement("figcaption");
  caption.innerHTML = "<b></b><span class='timing'></span>";
  caption.querySelector("b").textContent = chart.column + (chart.type === "groups" ? " (groups)" : "");
  figure.appendChild(caption);
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": chart.column });
  figure.appendChild(svg);
  const x = xScale(chart);
  const bars = [], exactBars = [];
  chart.labels.forEach((label, k) => {
    const left = chart.type === "histogram" ? x.at(label) : x.at(k) + 1;
    const width = chart.type === "histogram" ? Math.max(0.5, x.at(label + chart.width) - x.at(label) - 0.5)
                                             : Math.max(1, x.step - 2);
    const bar = el("rect", { class: "bar", x: left, width, y: H - PAD.bottom, height: 0, "data-label": label }, svg);
    const title = el("title", {}, bar);
    title.textContent = String(label);
    bars.push(bar);
    exactBars.push(el("rect", { class: "exact", x: left, width, y: H - PAD.bottom, height: 0, visibility: "hidden" }, svg));
    if (chart.type === "groups") {
      bar.addEventListener("click", () => toggleGroup(chart, label));
      const text = el("text", { x: left + width / 2, y: H - 5, "text-anchor": "middle" }, svg);
      text.textContent = String(label);
    }
  });
  const curve = el("path", { class: "curve", d: "" }, svg);
  el("line", { x1: PAD.left, x2: W - PAD.right, y1: H - PAD.bottom, y2: H - PAD.bottom, stroke: "#999" }, svg);
  const yMax = el("text", { x: PAD.left - 3, y: PAD.top + 8, "text-anchor": "end" }, svg);
  if (chart.type === "histogram") {
    const lo = el("text", { x: PAD.left, y: H - 5 }, svg);
    lo.textContent = fmt(x.lo);
    const hi = el("text", { x: W - PAD.right, y: H - 5, "text-anchor": "end" }, svg);
    hi.textContent = fmt(x.hi);
    attachBrush(chart, svg, x);
  }
  const view = { figure, svg, bars, exactBars, curve, caption, chart, yMax, brush: null };
  views.set(chart.column, view);
  return figure;
}

function attachBrush(chart, svg, x) {
  let start = null;
  const point = (event) => {
    const box = svg.getBoundingClientRect();
    return (event.clientX - box.left) / box.width * W;
  };
  const clamp = (px) => Math.min(W - PAD.right, Math.max(PAD.left, px));
  svg.addEventListener("mousedown", (event) => { start = clamp(point(event)); event.preventDefault(); });
  window.addEventListener("mousemove", (event) => {
    if (start === null) return;
    setBrush(chart, x, start, clamp(point(event)));
  });
  window.addEventListener("mouseup", (event) => {
    if (start === null) return;
    const end = clamp(point(event));
    if (Math.abs(end - start) < 2) { start = null; return; }
    setBrush(chart, x, start, end);
    start = null;
  });
  svg.addEventListener("dblclick", () => { delete state.filters[chart.column]; drawBrush(chart.column); request(); });
}

function setBrush(chart, x, a, b) {
  const lo = x.back(Math.min(a, b)), hi = x.back(Math.max(a, b));
  state.filters[chart.column] = [Number(lo.toPrecision(6)), Number(hi.toPrecision(6))];
  drawBrush(chart.column);
  request();
}

function drawBrush(column) {
  const view = views.get(column);
  const range = state.filters[column];
  if (view.brush) { view.brush.remove(); view.brush = null; }
  view.figure.dataset.brush = range ? JSON.stringify(range) : "";
  if (!range || view.chart.type !== "histogram") return;
  const x = xScale(view.chart);
  view.brush = el("rect", { class: "brush", x: x.at(range[0]), width: Math.max(1, x.at(range[1]) - x.at(range[0])),
                            y: PAD.top, height: H - PAD.top - PAD.bottom }, view.svg);
}

function toggleGroup(chart, label) {
  const chosen = new Set(state.filters[chart.column] || []);
  chosen.has(label) ? chosen.delete(label) : chosen.add(label);
  if (chosen.size) state.filters[chart.column] = [...chosen]; else delete state.filters[chart.column];
  const view = views.get(chart.column);
  view.bars.forEach((bar, k) => bar.classList.toggle("off", chosen.size > 0 && !chosen.has(chart.labels[k])));
  view.figure.dataset.brush = chosen.size ? JSON.stringify([...chosen]) : "";
  request();
}

// One request in flight at a time; brushes made meanwhile are sent once it returns (the latest wins).
async function request() {
  if (state.inFlight) { state.pending = true; return; }
  state.inFlight = true;
  document.body.dataset.busy = "1";
  const started = performance.now();
  try {
    const answer = await api("/brush", { table: state.table, filters: state.filters, exact: state.exact,
                                         charts: state.charts.map((c) => c.column) });
    draw(answer);
    const ms = performance.now() - started;
    state.updates += 1;
    document.body.dataset.updates = String(state.updates);
    document.body.dataset.lastMs = ms.toFixed(2);
    document.body.dataset.filters = JSON.stringify(state.filters);
    setStatus(`server ${answer.server_ms.toFixed(1)} ms for ${answer.charts.length} charts from the synopsis, ` +
              `page updated in ${ms.toFixed(1)} ms` + (answer.warnings.length ? ` · ${answer.warnings[0]}` : ""));
  } catch (error) {
    setStatus(String(error.message || error), true);
  } finally {
    state.inFlight = false;
    if (state.pending) { state.pending = false; request(); } else { document.body.dataset.busy = "0"; }
  }
}

function draw(answer) {
  for (const chart of answer.charts) {
    const view = views.get(chart.column);
    if (!view) continue;
    const exact = chart.exact ? chart.exact.values : null;
    const curveY = chart.curve ? chart.curve.y : [];
    const top = Math.max(1, ...chart.values.map((v) => v || 0), ...(exact || []).map((v) => v || 0), ...curveY);
    const y = (v) => H - PAD.bottom - (v || 0) / top * (H - PAD.top - PAD.bottom);
    chart.values.forEach((v, k) => {
      const bar = view.bars[k];
      bar.setAttribute("y", y(v));
      bar.setAttribute("height", H - PAD.bottom - y(v));
      bar.dataset.value = v === null ? "" : String(v);
      bar.firstChild.textContent = `${chart.labels[k]}: ${fmt(v)}` + (exact ? ` (exact ${fmt(exact[k])})` : "");
      const outline = view.exactBars[k];
      outline.setAttribute("visibility", exact ? "visible" : "hidden");
      if (exact) {
        outline.setAttribute("y", y(exact[k]));
        outline.setAttribute("height", H - PAD.bottom - y(exact[k]));
        bar.dataset.exact = String(exact[k]);
      } else {
        delete bar.dataset.exact;
      }
    });
    if (chart.curve) {
      const x = xScale(view.chart);
      view.curve.setAttribute("d", chart.curve.x.map((cx, k) => `${k ? "L" : "M"}${x.at(cx).toFixed(1)},` +
                                                                  `${y(curveY[k]).toFixed(1)}`).join(""));
    }
    view.yMax.textContent = fmt(top);
    view.figure.dataset.form = chart.form;
    view.figure.dataset.ms = chart.ms.toFixed(3);
    const timing = view.caption.querySelector(".timing");
    timing.textContent = `${chart.form}, ${chart.ms.toFixed(2)} ms` + (chart.exact
      ? ` · exact ${chart.exact.ms.toFixed(1)} ms · error ${chart.exact.error === null ? "–"
                                                                : (100 * chart.exact.error).toFixed(1) + " %"}`
      : "");
  }
}

function show(table, tables) {
  const info = tables.find((t) => t.table === table);
  const wanted = new URLSearchParams(location.search).get("charts");
  const names = wanted ? wanted.split(",") : null;
  state.table = table;
  state.filters = {};
  state.charts = names ? info.charts.filter((c) => names.includes(c.column)) : info.charts;
  views.clear();
  const main = document.getElementById("charts");
  main.replaceChildren(...state.charts.map(build));
  document.body.dataset.table = table;
  request();
}

async function start() {
  try {
    const { tables } = await api("/tables");
    const select = document.getElementById("table");
    for (const t of tables) {
      const option = document.createElement("option");
      option.value = option.textContent = t.table;
      select.appendChild(option);
    }
    const wanted = new URLSearchParams(location.search).get("table");
    const first = tables.some((t) => t.table === wanted) ? wanted : tables[0].table;
    select.value = first;
    select.addEventListener("change", () => show(select.value, tables));
    document.getElementById("exact").addEventListener("change", (event) => { state.exact = event.target.checked; request(); });
    document.getElementById("clear").addEventListener("click", () => {
      for (const column of Object.keys(state.filters)) {
        delete state.filters[column];
        const view = views.get(column);
        drawBrush(column);
        view.bars.forEach((bar) => bar.classList.remove("off"));
      }
      request();
    });
    show(first, tables);
  } catch (error) {
    setStatus(String(error.message || error), true);
  }
}

start();
