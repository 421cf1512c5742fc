// dlc explore: builds the page from the JSON in #dlc-data (tools/explore.py writes it).
// Graph: dagre (vendored) lays out the dlc-stage ops; groups (ONNX name prefixes) collapse.
// IR: a regex highlighter for MLIR, every region foldable (<details>), rendered on first open.
"use strict";
const DATA = JSON.parse(document.getElementById("dlc-data").textContent);
const SVG_NS = "http://www.w3.org/2000/svg";
const G = DATA.graph;
const collapsed = new Set();
let selected = null;

function el(tag, attrs, ...children) {
  const node = tag.startsWith("svg:") ? document.createElementNS(SVG_NS, tag.slice(4))
                                      : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "on") for (const [ev, f] of Object.entries(v)) node.addEventListener(ev, f);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}
const esc = (s) => s.replace(/[&<>]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;"}[c]));
const ms = (s) => s === undefined || s === null ? "—" : (s * 1000).toFixed(s < 0.01 ? 3 : 1) + " ms";

// ---------- links: ONNX name -> dlc nodes, linalg ops, time ----------
const byName = new Map();  // ONNX node name -> {dlc: [node ids], linalg: [linalg indices]}
const entry = (n) => byName.get(n) || byName.set(n, {dlc: [], linalg: []}).get(n);
G.nodes.forEach((n, i) => n.names.forEach((name) => entry(name).dlc.push(i)));
DATA.linalg.forEach((l, i) => l.names.forEach((name) => entry(name).linalg.push(i)));
const opTime = (names) => {
  if (!DATA.op_times) return null;
  let t = 0, any = false;
  for (const n of names) if (n in DATA.op_times) { t += DATA.op_times[n]; any = true; }
  return any ? t : null;
};

// ---------- graph ----------
function shortType(t) {
  return t.replace(/^tensor<(.*)>$/, "$1").replace(/x(f32|f16|bf16|i64|i32|i8|i1|f64)$/, " $1");
}
function nodeLabel(n) {
  // the op and its ONNX node's name (its last two path parts: conv2/Conv)
  if (n.op === "input") return "input " + (n.names[0] || "");
  const name = n.names.length ? n.names[0].split("/").filter((p) => p).slice(-2).join("/") : "";
  return name && n.op !== "func.return" ? `${n.op} · ${name.slice(0, 28)}` : n.op;
}
function timeLabel(n) {
  // the profiled time of the node's ONNX node(s); none on constants (they cost nothing at run time)
  const t = n.op === "constant" || n.op === "input" ? null : opTime(n.names);
  return t === null ? "" : "  " + ms(t);
}
function visibleId(i) {
  const g = G.nodes[i].group;
  return collapsed.has(g) ? "g:" + g : "n" + i;
}
function layoutGraph() {
  const g = new dagre.graphlib.Graph({compound: true, multigraph: false});
  g.setGraph({rankdir: "TB", nodesep: 14, ranksep: 26, marginx: 10, marginy: 10});
  g.setDefaultEdgeLabel(() => ({}));
  const groups = new Map();
  G.nodes.forEach((n) => { if (n.group !== null) groups.set(n.group, (groups.get(n.group) || 0) + 1); });
  for (const [name, count] of groups) {
    if (collapsed.has(name)) g.setNode("g:" + name, {width: 170, height: 34, group: name, count});
    else if (count > 1) g.setNode("c:" + name, {label: name, clusterLabelPos: "top", paddingTop: 18});
  }
  G.nodes.forEach((n, i) => {
    if (collapsed.has(n.group)) return;
    const label = nodeLabel(n) + timeLabel(n), sub = n.types.map(shortType).join(", ");
    const width = Math.max(label.length, Math.min(sub.length, 40)) * 6.7 + 16;
    g.setNode("n" + i, {width, height: 32, index: i});
    if (n.group !== null && groups.get(n.group) > 1) g.setParent("n" + i, "c:" + n.group);
  });
  for (const [a, b] of G.edges) {
    const va = visibleId(a), vb = visibleId(b);
    if (va !== vb) g.setEdge(va, vb);
  }
  dagre.layout(g);
  return g;
}
function drawGraph() {
  const g = layoutGraph();
  const svg = document.getElementById("graph");
  svg.replaceChildren();
  svg.append(el("svg:defs", {}, el("svg:marker", {id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5,
    markerWidth: 6, markerHeight: 6, orient: "auto"}, el("svg:path", {d: "M0,0L10,5L0,10z", fill: "#78909c"}))));
  const root = el("svg:g", {id: "viewport"});
  svg.append(root);
  for (const id of g.nodes()) {
    if (!id.startsWith("c:")) continue;
    const c = g.node(id), name = id.slice(2);
    root.append(el("svg:g", {class: "cluster", "data-group": name},
      el("svg:rect", {x: c.x - c.width / 2, y: c.y - c.height / 2, width: c.width, height: c.height}),
      el("svg:text", {x: c.x - c.width / 2 + 4, y: c.y - c.height / 2 + 12,
                      on: {click: () => { collapsed.add(name); drawGraph(); }}}, "▾ " + name)));
  }
  for (const e of g.edges()) {
    const pts = g.edge(e).points;
    root.append(el("svg:path", {class: "edge", d: "M" + pts.map((p) => p.x + "," + p.y).join("L")}));
  }
  for (const id of g.nodes()) {
    if (id.startsWith("c:")) continue;
    const n = g.node(id), x = n.x - n.width / 2, y = n.y - n.height / 2;
    if (id.startsWith("g:")) {
      root.append(el("svg:g", {class: "node group", "data-group": n.group,
          on: {click: () => { collapsed.delete(n.group); drawGraph(); }}},
        el("svg:rect", {x, y, width: n.width, height: n.height}),
        el("svg:text", {x: x + 6, y: y + 14}, "▸ " + n.group),
        el("svg:text", {x: x + 6, y: y + 27, class: "sub"}, n.count + " ops")));
      continue;
    }
    const node = G.nodes[n.index];
    const kind = node.op === "input" || node.op === "func.return" ? " io" : node.op === "constant" ? " const" : "";
    root.append(el("svg:g", {class: "node" + kind + (selected === n.index ? " sel" : ""), id: id,
        "data-index": n.index, on: {click: () => select(n.index)}},
      el("svg:title", {}, (node.names.join(", ") || "(no name)") + "\n" + node.types.join("\n")),
      el("svg:rect", {x, y, width: n.width, height: n.height}),
      el("svg:text", {x: x + 6, y: y + 13}, nodeLabel(node) + timeLabel(node)),
      el("svg:text", {x: x + 6, y: y + 26, class: "sub"}, node.types.map(shortType).join(", ").slice(0, 40))));
  }
  const size = g.graph();
  if (!view.w) {  // first view: the top of the graph around the first input, at most 1200 wide
    const w = Math.min(Math.max(size.width, 400), 1200), first = g.node(g.nodes().find((id) => id.startsWith("n")) || "");
    const x = first && size.width > w ? Math.min(Math.max(first.x - w / 2, 0), size.width - w) : 0;
    Object.assign(view, {x, y: 0, w, h: w * aspect()});
  }
  applyView();
  highlight();
}
const view = {};
function aspect() {
  const r = document.getElementById("graph").getBoundingClientRect();
  return r.width ? r.height / r.width : 0.75;
}
function applyView() {
  document.getElementById("graph").setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
}
function setupPanZoom() {
  const svg = document.getElementById("graph");
  let drag = null;
  svg.addEventListener("mousedown", (e) => { drag = {x: e.clientX, y: e.clientY, vx: view.x, vy: view.y}; });
  window.addEventListener("mouseup", () => { drag = null; });
  svg.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const k = view.w / svg.getBoundingClientRect().width;
    view.x = drag.vx - (e.clientX - drag.x) * k; view.y = drag.vy - (e.clientY - drag.y) * k;
    applyView();
  });
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const f = e.deltaY > 0 ? 1.15 : 1 / 1.15, r = svg.getBoundingClientRect();
    const px = view.x + (e.clientX - r.left) / r.width * view.w, py = view.y + (e.clientY - r.top) / r.height * view.h;
    view.w *= f; view.h *= f; view.x = px - (px - view.x) * f; view.y = py - (py - view.y) * f;
    applyView();
  }, {passive: false});
}
function centerOn(index) {
  const node = document.getElementById("n" + index);
  if (!node) return;
  const b = node.getBBox();
  view.w = Math.min(view.w, 900); view.h = view.w * aspect();
  view.x = b.x + b.width / 2 - view.w / 2; view.y = b.y + b.height / 2 - view.h / 2;
  applyView();
}

// ---------- selection: the links ----------
function related(index) {
  const names = G.nodes[index].names;
  const dlc = new Set(), linalg = new Set();
  for (const n of names) { const e = byName.get(n); e.dlc.forEach((i) => dlc.add(i)); e.linalg.forEach((i) => linalg.add(i)); }
  return {names, dlc: [...dlc], linalg: [...linalg]};
}
function highlight() {
  document.querySelectorAll("g.node").forEach((g) => g.classList.remove("sel", "rel"));
  if (selected === null) return;
  for (const i of related(selected).dlc) document.getElementById("n" + i)?.classList.add("rel");
  document.getElementById("n" + selected)?.classList.add("sel");
}
function select(index, center) {
  selected = index;
  const node = G.nodes[index];
  if (collapsed.has(node.group)) { collapsed.delete(node.group); drawGraph(); }
  highlight();
  if (center) centerOn(index);
  const r = related(index), detail = document.getElementById("detail");
  detail.replaceChildren();
  detail.append(el("h3", {}, "dlc op"), el("div", {}, el("code", {}, "dlc." + node.op), " → ",
                el("code", {}, node.types.join(", "))));
  detail.append(el("h3", {}, "ONNX node" + (r.names.length > 1 ? "s" : "")));
  detail.append(el("ul", {}, ...(r.names.length ? r.names : ["(no name)"]).map((n) => el("li", {}, el("code", {}, n)))));
  detail.append(el("h3", {}, `dlc ops of ${r.names.length > 1 ? "these nodes" : "this node"} (${r.dlc.length})`));
  detail.append(el("ul", {}, ...r.dlc.map((i) => el("li", {class: "link", on: {click: () => select(i, true)}},
    "dlc." + G.nodes[i].op + "  " + G.nodes[i].types.map(shortType).join(", ")))));
  detail.append(el("h3", {}, `linalg ops (${r.linalg.length})`));
  detail.append(el("ul", {}, ...r.linalg.map((i) => {
    const l = DATA.linalg[i];
    return el("li", {}, el("code", {}, l.op), " ", l.types.map(shortType).join(", "),
      el("div", {class: "sched"}, l.schedule ? "schedule: " + l.schedule.family + " " + l.schedule.problem : "schedule: none (naive loops)"),
      l.names.length > 1 ? el("div", {class: "hint"}, "fused from: " + l.names.join(", ")) : "");
  })));
  const t = opTime(r.names);
  detail.append(el("h3", {}, "time"), el("div", {class: "time"}, DATA.profile ? (t === null ? "not in the profile" :
    `${ms(t)} per run (${(100 * t * 1000 / DATA.profile.total_ms).toFixed(1)}% of ${DATA.profile.total_ms.toFixed(2)} ms)`)
    : "no profile (dlc explore --no-profile)"));
  if (DATA.profile) {  // the profiled op groups (a tile loop nest with its fused epilogue...) of these nodes
    const groups = DATA.profile.ops.filter((o) => o.nodes.some((n) => r.names.includes(n)));
    detail.append(el("ul", {}, ...groups.map((o) => el("li", {}, `${o.ms.toFixed(3)} ms, ${o.share.toFixed(1)}%: `,
      el("b", {}, o.family), o.naive ? (o.large_naive ? " (LARGE naive op)" : " (naive loops)") : "",
      o.nodes.length > 1 ? el("div", {class: "hint"}, "group of: " + o.nodes.join(", ")) : ""))));
  }
}
function setupSearch() {
  const input = document.getElementById("search"), hits = document.getElementById("hits");
  input.addEventListener("input", () => {
    const q = input.value.toLowerCase();
    hits.replaceChildren();
    if (!q) return;
    const found = [...byName.entries()].filter(([n, e]) => n.toLowerCase().includes(q) && e.dlc.length).slice(0, 30);
    G.nodes.forEach((n, i) => { if (!n.names.length && n.op.includes(q) && found.length < 30) found.push(["dlc." + n.op, {dlc: [i]}]); });
    for (const [name, e] of found) hits.append(el("div", {on: {click: () => select(e.dlc[0], true)}}, name));
  });
}

// ---------- IR: highlighting and folding ----------
const TOKEN = new RegExp([
  "(?<com>//.*$)", '(?<str>"(?:[^"\\\\]|\\\\.)*")', "(?<ssa>%[\\w.$#-]+)", "(?<bb>\\^[\\w$.-]+)",
  "(?<sym>@[\\w.$-]+)", "(?<attr>#[\\w.$-]+)", "(?<type>!?\\b(?:tensor|memref|vector|f16|bf16|f32|f64|i1|i8|i16|i32|i64|index|none)\\b|![\\w.]+)",
  "(?<op>\\b[a-z_][\\w]*\\.[\\w.]+\\b)", "(?<num>-?\\b\\d[\\d.e+-]*\\b|0x[0-9A-Fa-f]+)",
].join("|"), "g");
function colour(line) {
  let out = "", last = 0;
  for (const m of line.matchAll(TOKEN)) {
    const kind = Object.keys(m.groups).find((k) => m.groups[k] !== undefined);
    out += esc(line.slice(last, m.index)) + `<span class="k-${kind}">${esc(m[0])}</span>`;
    last = m.index + m[0].length;
  }
  return out + esc(line.slice(last));
}
function renderIR(text) {
  // every line ending in "{" opens a foldable region, closed by the line starting with "}";
  // an IR over 4 MB (BERT-base's llvm stage: 17 MB) is folded but not coloured (seconds saved)
  const highlightLine = text.length > 4e6 ? esc : colour;
  const root = document.createElement("div");
  const stack = [root];
  let buffer = [];
  const flush = () => {
    if (!buffer.length) return;
    const pre = document.createElement("pre");
    pre.innerHTML = buffer.join("\n");
    stack[stack.length - 1].append(pre);
    buffer = [];
  };
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed.startsWith("}") && stack.length > 1) {
      flush();
      stack.pop();
      buffer.push(highlightLine(line));
      if (!trimmed.endsWith("{")) continue;
      flush();
    } else if (!trimmed.endsWith("{")) { buffer.push(highlightLine(line)); continue; }
    flush();
    const details = el("details", {class: "fold", open: ""}), summary = document.createElement("summary");
    summary.innerHTML = highlightLine(line);
    const body = el("div", {class: "fold-body"});
    details.append(summary, body);
    stack[stack.length - 1].append(details);
    stack.push(body);
  }
  flush();
  return root;
}
function lazy(details, make) {
  details.build = () => { if (!details.dataset.built) { details.dataset.built = "1"; details.append(make()); } };
  details.addEventListener("toggle", () => { if (details.open) details.build(); });
}
function buildIR() {
  const tab = document.getElementById("tab-ir");
  for (const stage of DATA.stages) {
    const d = el("details", {class: "stage", "data-stage": stage.name},
      el("summary", {}, `${stage.name}  (${stage.lines} lines, ${(stage.chars / 1024).toFixed(0)} KiB)`));
    lazy(d, () => {
      const box = el("div", {class: "ir"}, "inflating…");
      inflate(stage.gz).then((text) => { box.replaceChildren(renderIR(text)); box.dataset.ready = "1"; });
      return box;
    });
    tab.append(d);
  }
}
async function inflate(b64) {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return await new Response(stream).text();
}
function renderDiff(diff) {
  const pre = el("pre", {class: "diff"}, "inflating…");
  inflate(diff.gz).then((text) => {
    pre.innerHTML = text.split("\n").map((l) => {
      const cls = l.startsWith("@@") ? "d-hunk" : l.startsWith("+") ? "d-add" : l.startsWith("-") ? "d-del" : "";
      return cls ? `<span class="${cls}">${esc(l)}</span>` : esc(l);
    }).join("\n");
    pre.dataset.ready = "1";
  });
  return pre;
}
function buildPasses() {
  const tab = document.getElementById("tab-passes");
  const max = Math.max(...DATA.passes.map((p) => p.seconds), 1e-9);
  // (time first: an opened diff is wide)
  const table = el("table", {class: "passes"}, el("tr", {}, el("th", {}, "stage"), el("th", {}, "time"),
    el("th", {}, ""), el("th", {}, "pass")));
  for (const p of DATA.passes) {
    let cell;
    if (p.diff) {
      cell = el("details", {class: "pass", "data-pass": p.name},
        el("summary", {}, `${p.name}  (+${p.diff.added} −${p.diff.removed})`));
      lazy(cell, () => renderDiff(p.diff));
    } else cell = el("span", {class: "unchanged"}, p.name + "  (no change)");
    table.append(el("tr", {}, el("td", {}, p.stage), el("td", {class: "num"}, ms(p.seconds)),
      el("td", {}, el("span", {class: "bar", style: `width:${Math.max(1, 120 * p.seconds / max)}px`})), el("td", {}, cell)));
  }
  tab.append(table);
}

// ---------- page ----------
function setupTabs() {
  document.querySelectorAll("header button").forEach((b) => b.addEventListener("click", () => {
    document.querySelectorAll("header button, .tab").forEach((x) => x.classList.remove("on"));
    b.classList.add("on");
    document.getElementById("tab-" + b.dataset.tab).classList.add("on");
  }));
}
function main() {
  const changed = DATA.passes.filter((p) => p.diff).length;
  document.getElementById("summary").textContent = `-O${DATA.opt_level} · ${G.nodes.length} graph nodes · ` +
    `${DATA.linalg.length} linalg ops · ${DATA.passes.length} passes (${changed} changed the IR) · ` +
    `${DATA.stages.length} IR snapshots · ` +
    (DATA.profile ? `run ${DATA.profile.total_ms.toFixed(2)} ms (profile, ${DATA.profile.runs} runs) · ` : "") +
    `collected in ${DATA.seconds.toFixed(1)} s`;
  setupTabs();
  setupSearch();
  setupPanZoom();
  buildIR();
  buildPasses();
  drawGraph();
  // #select=ONNX_NODE_NAME selects that node (a link to share, and the README's screenshot);
  // #open=PASS_OR_STAGE (repeatable) opens that pass's diff or stage's IR, #tab=ir|passes
  const params = new URLSearchParams(location.hash.slice(1));
  for (const name of params.getAll("open")) {
    for (const d of document.querySelectorAll("details[data-pass], details[data-stage]")) {
      if (d.dataset.pass === name || d.dataset.stage === name) { d.open = true; d.build(); }
    }
  }
  if (params.get("tab")) document.querySelector(`header button[data-tab="${params.get("tab")}"]`)?.click();
  const wanted = params.get("select");
  const hit = wanted && byName.get(wanted);
  const main = hit && (hit.dlc.find((i) => G.nodes[i].op !== "constant") ?? hit.dlc[0]);
  if (main !== undefined && main !== null && main !== false) select(main, true);
  document.body.dataset.ready = "1";
}
main();
