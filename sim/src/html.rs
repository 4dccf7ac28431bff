//! A run as one self-contained HTML page: a sequence diagram with one lane
//! per node, messages as arrows (drops and duplicates marked), each lease
//! as its own bar in the lane of the node that holds it, effects and stored
//! responses marked, the violating events highlighted, a toggle that shows
//! only the violating key, and a step-through control for teaching.
//!
//! Lane headers and lanes are drawn by one computation (`laneX` in the
//! page's script) into two SVGs of one width inside one scrolling box, so a
//! header stands over its lane at any window width. When the lanes do not
//! fit, the page hides the quietest ones and says which.
//!
//! The page fetches nothing: the data is inlined as JSON and the script and
//! style are in the page, so it works offline from a `file://` URL.

use crate::timeline::describe;
use idemsim_model::history::{Fault, Origin};
use idemsim_model::{Event, History, NodeId, RequestId, Scope, Violation};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Serialize)]
struct Page<'a> {
    title: &'a str,
    lanes: Vec<String>,
    events: Vec<Row>,
    leases: Vec<Lease>,
    violations: Vec<Flag>,
}

#[derive(Serialize)]
struct Row {
    at: String,
    lane: usize,
    text: String,
    /// effect, stored, fault, drop, dup, claim, fenced, phase or "".
    mark: &'static str,
    /// The lane and row of the message this event receives, if any.
    from: Option<(usize, usize)>,
    /// A dropped or duplicated message's destination lane.
    toward: Option<usize>,
    violation: bool,
    /// On the violating key, or a fault on a node that acted on it.
    on_key: bool,
    /// For a write refused by fencing: the lane of the writer it was
    /// refused to (the execution's node).
    refused_to: Option<usize>,
}

#[derive(Serialize)]
struct Lease {
    /// The holder's lane.
    lane: usize,
    /// The grant's row.
    from: usize,
    /// The row where it ran out, was released, completed or taken over.
    until: usize,
    attempt: u32,
    key: String,
    on_key: bool,
    label: String,
}

#[derive(Serialize)]
struct Flag {
    property: &'static str,
    explanation: String,
    events: Vec<usize>,
}

/// Renders `history` (and its violations) as a self-contained page.
pub fn render(title: &str, history: &History, violations: &[Violation]) -> String {
    let page = page(title, history, violations);
    let data = serde_json::to_string(&page).expect("the page data always serializes").replace("</", "<\\/");
    TEMPLATE.replace("/*TITLE*/", &escape(title)).replace("/*DATA*/", &data)
}

/// The record each event concerns, from the client's request where the
/// event names only the request.
fn scopes(history: &History) -> Vec<Option<Scope>> {
    let mut of_req: BTreeMap<RequestId, Scope> = BTreeMap::new();
    let mut of_op = BTreeMap::new();
    let mut out = Vec::with_capacity(history.entries.len());
    for e in &history.entries {
        let scope = match &e.event {
            Event::RequestSent { req, request, .. } => {
                let s = request.scope();
                if let Some(s) = &s {
                    of_req.insert(*req, s.clone());
                    of_op.insert(req.op, s.clone());
                }
                s
            }
            Event::RequestReceived { req, .. }
            | Event::ResponseSent { req, .. }
            | Event::ResponseReceived { req, .. }
            | Event::TimedOut { req }
            | Event::RetryScheduled { req, .. } => of_req.get(req).cloned(),
            Event::GaveUp { op, .. } => of_op.get(op).cloned(),
            event => event.scope().cloned(),
        };
        out.push(scope);
    }
    out
}

fn page<'a>(title: &'a str, history: &History, violations: &[Violation]) -> Page<'a> {
    let mut nodes: Vec<NodeId> = history.entries.iter().map(|e| e.node).collect();
    for e in &history.entries {
        if let Event::Fault(f) = &e.event {
            nodes.extend(f.node());
        }
    }
    nodes.sort();
    nodes.dedup();
    let lane_of: BTreeMap<NodeId, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let flagged: BTreeSet<usize> = violations.iter().flat_map(|v| v.events.iter().copied()).collect();
    let scopes = scopes(history);
    let violating: BTreeSet<&Scope> = flagged.iter().filter_map(|i| scopes.get(*i)?.as_ref()).collect();
    let key_nodes: BTreeSet<NodeId> = history
        .entries
        .iter()
        .zip(&scopes)
        .filter(|(_, s)| s.as_ref().is_some_and(|s| violating.contains(s)))
        .map(|(e, _)| e.node)
        .collect();
    let holder = holders(history);
    let leases = leases(history, &holder, &lane_of, &violating);
    let mut sent: BTreeMap<RequestId, usize> = BTreeMap::new();
    let mut answered: BTreeMap<RequestId, usize> = BTreeMap::new();
    let mut rows = Vec::with_capacity(history.entries.len());
    for (i, e) in history.entries.iter().enumerate() {
        let from = match &e.event {
            Event::RequestSent { req, .. } => {
                sent.insert(*req, i);
                None
            }
            Event::RequestReceived { req, .. } => sent.get(req).map(|&j| (lane_of[&history.entries[j].node], j)),
            Event::ResponseSent { req, .. } => {
                answered.insert(*req, i);
                None
            }
            Event::ResponseReceived { req, .. } => answered.get(req).map(|&j| (lane_of[&history.entries[j].node], j)),
            _ => None,
        };
        let (lane, toward) = match &e.event {
            Event::Fault(Fault::Dropped { from, to, .. } | Fault::Duplicated { from, to, .. }) => {
                (lane_of.get(from).copied().unwrap_or(lane_of[&e.node]), lane_of.get(to).copied())
            }
            Event::Fault(f) => (f.node().and_then(|n| lane_of.get(&n).copied()).unwrap_or(lane_of[&e.node]), None),
            _ => (lane_of[&e.node], None),
        };
        let on_key = match &e.event {
            Event::Fault(Fault::Dropped { from, to, .. } | Fault::Duplicated { from, to, .. }) => {
                key_nodes.contains(from) && key_nodes.contains(to)
            }
            Event::Fault(f) => f.node().is_none_or(|n| key_nodes.contains(&n)),
            Event::Phase { .. } => true,
            _ => scopes[i].as_ref().is_some_and(|s| violating.contains(s)),
        };
        let refused_to = match &e.event {
            Event::WriteFenced { by, .. } => lane_of.get(&holder(by, e.node)).copied(),
            _ => None,
        };
        rows.push(Row {
            at: e.at.to_string(),
            lane,
            text: describe(&e.event),
            mark: mark(&e.event),
            from,
            toward,
            violation: flagged.contains(&i),
            on_key: on_key || flagged.contains(&i),
            refused_to,
        });
    }
    let violations = violations
        .iter()
        .map(|v| Flag { property: v.property.name(), explanation: v.explanation.clone(), events: v.events.clone() })
        .collect();
    Page { title, lanes: nodes.iter().map(|n| n.to_string()).collect(), events: rows, leases, violations }
}

/// The node where an origin acts: the server that handled the request
/// copy (`at`, where the event was recorded, if none did), or the job's
/// own node.
fn holders(history: &History) -> impl Fn(&Origin, NodeId) -> NodeId {
    let mut handler: BTreeMap<(RequestId, u32), NodeId> = BTreeMap::new();
    for e in &history.entries {
        if let Event::RequestReceived { req, copy, .. } = &e.event {
            handler.insert((*req, *copy), e.node);
        }
    }
    move |by: &Origin, at: NodeId| match by {
        Origin::Request { req, copy } => handler.get(&(*req, *copy)).copied().unwrap_or(at),
        Origin::Reconciler => NodeId::Reconciler,
        Origin::Sweeper => NodeId::Sweeper,
        Origin::Relay => NodeId::Relay,
    }
}

/// One bar per grant (claim or takeover), in the lane of the node that
/// holds it, from the grant to where it ran out (the first event at or
/// after its end), was released or completed by its holder, or was taken
/// over: whichever comes first.
fn leases(
    history: &History,
    holder: &impl Fn(&Origin, NodeId) -> NodeId,
    lane_of: &BTreeMap<NodeId, usize>,
    violating: &BTreeSet<&Scope>,
) -> Vec<Lease> {
    let last = history.entries.len().saturating_sub(1);
    let mut out = Vec::new();
    for (i, e) in history.entries.iter().enumerate() {
        let (by, scope, attempt, until) = match &e.event {
            Event::Claimed { by, scope, attempt, locked_until, .. }
            | Event::TakenOver { by, scope, attempt, locked_until, .. } => (by, scope, *attempt, *locked_until),
            _ => continue,
        };
        let end = history.entries[i + 1..]
            .iter()
            .position(|x| match &x.event {
                _ if x.at >= until => true,
                Event::CompletionWritten { scope: s, attempt: a, .. }
                | Event::Released { scope: s, attempt: a, .. } => s == scope && *a == attempt,
                Event::Claimed { scope: s, .. } | Event::TakenOver { scope: s, .. } => s == scope,
                _ => false,
            })
            .map_or(last, |k| i + 1 + k);
        let node = holder(by, e.node);
        let lane = lane_of.get(&node).copied().unwrap_or(lane_of[&e.node]);
        out.push(Lease {
            lane,
            from: i,
            until: end,
            attempt: attempt.0,
            key: scope.to_string(),
            on_key: violating.contains(scope),
            label: format!("{scope} attempt #{} held by {node}, until {until}", attempt.0),
        });
    }
    out
}

fn mark(event: &Event) -> &'static str {
    match event {
        Event::LocalEffectCommitted { .. } | Event::DownstreamEffect { .. } => "effect",
        Event::CompletionWritten { .. } => "stored",
        Event::Claimed { .. } | Event::TakenOver { .. } => "claim",
        Event::WriteFenced { .. } => "fenced",
        Event::Fault(Fault::Dropped { .. }) => "drop",
        Event::Fault(Fault::Duplicated { .. }) => "dup",
        Event::Fault(_) => "fault",
        Event::Phase { .. } => "phase",
        _ => "",
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

const TEMPLATE: &str = r##"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>idemsim: /*TITLE*/</title>
<style>
  html, body { margin: 0; height: 100%; }
  body { font: 13px/1.4 system-ui, sans-serif; color: #222; display: flex; flex-direction: column; }
  header { background: #fff; border-bottom: 1px solid #ccc; padding: 8px 12px; flex: none; }
  header h1 { font-size: 15px; margin: 0 0 6px; }
  button { font: inherit; margin-right: 4px; }
  #detail { margin-top: 6px; min-height: 1.4em; font-family: ui-monospace, monospace; }
  #flags { margin: 6px 0 0; padding-left: 18px; color: #b00020; max-height: 6em; overflow-y: auto; }
  #hidden { color: #555; margin-top: 4px; min-height: 1.2em; }
  #chart { flex: 1; overflow: auto; position: relative; }
  #heads { position: sticky; top: 0; background: #fff; z-index: 1; display: block; border-bottom: 1px solid #ccc; }
  #body { display: block; }
  svg text { font: 11px ui-monospace, monospace; }
  svg text.lane { font: 600 12px system-ui, sans-serif; }
  .row.current rect.hl { fill: #fff3b0; }
  .row.violation text { fill: #b00020; font-weight: 700; }
  .legend span { margin-right: 12px; }
  .counter { margin-left: 18px; }
  #order { color: #555; }
</style>
</head>
<body>
<header>
  <h1>/*TITLE*/</h1>
  <div>
    <button id="prev" title="previous event (left arrow)">&larr; previous</button>
    <button id="next" title="next event (right arrow)">next &rarr;</button>
    <button id="jump">jump to the violation</button>
    <label><input type="checkbox" id="only-key"> only the violating key</label>
    <span class="counter">row <span id="current-index">-</span> of <span id="count"></span></span>
  </div>
  <div id="detail">Step through the run with the buttons or the arrow keys.</div>
  <ul id="flags"></ul>
  <div class="legend">
    <span>&#9654; message</span><span style="color:#8c510a">&#10007; dropped</span><span style="color:#7570b3">&#9671; duplicated</span>
    <span style="color:#8c510a">&#9679; fault (crash, pause, partition, skew)</span>
    <span style="color:#2a7">&#9733; effect</span><span style="color:#06c">&#9632; stored response</span>
    <span style="color:#e80">&#9646; lease (one bar per attempt, in its holder's lane)</span>
    <span style="color:#0e7c86">&#8212; write refused by fencing (to its writer)</span><span style="color:#b00020">red: violation</span>
  </div>
  <div id="order">One row per event, in the order they happened: rows are not to scale in time (each says its time).</div>
  <div id="hidden"></div>
</header>
<div id="chart"><svg id="heads"></svg><svg id="body"></svg></div>
<script>
const DATA = /*DATA*/;
const ROW_H = 20, LANE_MIN = 64, LANE_MAX = 96, TEXT_MIN = 300, TEXT_MAX = 600, HEAD_H = 24;
const svgNS = "http://www.w3.org/2000/svg";
const chart = document.getElementById("chart");
const heads = document.getElementById("heads"), body = document.getElementById("body");
function el(name, attrs, parent) {
  const e = document.createElementNS(svgNS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
const flags = document.getElementById("flags");
DATA.violations.forEach(v => {
  const li = document.createElement("li");
  li.className = "flag";
  li.textContent = `[${v.property}] ${v.explanation}`;
  flags.appendChild(li);
});
let onlyKey = false, current = -1, rows = [], shown = [], layout = null;

// One layout for headers and lanes: which lanes are shown, where each is.
function computeLayout() {
  const width = Math.max(chart.clientWidth, 320);
  // How much a lane shows: its events, an event on the violating key
  // counting for a thousand, so the lanes hidden first are the quiet ones
  // off the key.
  const used = DATA.lanes.map(() => 0);
  shown.forEach(i => used[DATA.events[i].lane] += DATA.events[i].on_key ? 1000 : 1);
  DATA.leases.forEach(l => { if (!onlyKey || l.on_key) used[l.lane]++; });
  let lanes = DATA.lanes.map((_, i) => i).filter(i => !onlyKey || used[i] > 0);
  const fit = Math.max(1, Math.floor((width - TEXT_MIN - 20) / LANE_MIN));
  let hidden = [];
  if (lanes.length > fit) {
    const quiet = [...lanes].sort((a, b) => used[a] - used[b] || b - a).slice(0, lanes.length - fit);
    hidden = quiet.sort((a, b) => a - b);
    lanes = lanes.filter(i => !hidden.includes(i));
  }
  const textW = Math.max(TEXT_MIN, Math.min(TEXT_MAX, width - 20 - lanes.length * LANE_MIN));
  const laneW = Math.max(LANE_MIN, Math.min(LANE_MAX, Math.floor((width - 20 - textW) / Math.max(1, lanes.length))));
  const pos = new Map(lanes.map((l, k) => [l, textW + 10 + k * laneW + laneW / 2]));
  return { lanes, hidden, textW, laneW, pos, width: Math.max(width, textW + 10 + lanes.length * laneW + 10) };
}
const laneX = l => layout.pos.get(l);
// Row tops: a violating row shows its whole text, wrapped over as many
// lines as it needs; any other row is one line (cut, whole on hover and in
// the detail line above).
let tops = [0];
const rowY = r => 10 + tops[r] + ROW_H / 2;
function label(i) { const e = DATA.events[i]; return `#${i} ${e.at} ${DATA.lanes[e.lane]}: ${e.text}`; }
function wrap(text, max) {
  const lines = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && line.length + 1 + word.length > max) { lines.push(line); line = ""; }
    line = line ? line + " " + word : word;
    while (line.length > max) { lines.push(line.slice(0, max)); line = line.slice(max); }
  }
  if (line) lines.push(line);
  return lines;
}

function draw() {
  // The event stepped to stays the current one across a redraw.
  const keep = current >= 0 ? shown[current] : null;
  shown = DATA.events.map((e, i) => i).filter(i => !onlyKey || DATA.events[i].on_key);
  layout = computeLayout();
  const at = new Map(shown.map((i, r) => [i, r]));
  const max = Math.floor(layout.textW / 6.7);
  const texts = shown.map(i => DATA.events[i].violation ? wrap(label(i), max) : [label(i)]);
  tops = [0];
  texts.forEach(t => tops.push(tops[tops.length - 1] + t.length * ROW_H));
  clear(heads); clear(body);
  heads.setAttribute("width", layout.width); heads.setAttribute("height", HEAD_H);
  const height = 20 + tops[shown.length];
  body.setAttribute("width", layout.width); body.setAttribute("height", height);
  layout.lanes.forEach(l => {
    const t = el("text", { class: "lane", "data-lane": l, x: laneX(l), y: 16, "text-anchor": "middle" }, heads);
    t.textContent = DATA.lanes[l];
    el("line", { class: "lane-line", "data-lane": l, x1: laneX(l), x2: laneX(l), y1: 0, y2: height, stroke: "#ddd" }, body);
  });
  document.getElementById("hidden").textContent = layout.hidden.length
    ? `Lanes hidden to fit the window (their events stay in the list): ${layout.hidden.map(l => DATA.lanes[l]).join(", ")}`
    : "";
  const defs = el("defs", {}, body);
  const arrow = el("marker", { id: "arrow", markerWidth: 8, markerHeight: 8, refX: 7, refY: 4, orient: "auto" }, defs);
  el("path", { d: "M0,0 L8,4 L0,8 z", fill: "#555" }, arrow);
  // Leases: a bar per attempt beside its holder's lane; bars that overlap
  // in time in one lane get slots side by side.
  // The slots of a lane share the room between its line and the next
  // lane's, so a busy lane's bars narrow instead of spilling over.
  const slots = new Map();
  const bars = [];
  const placed = [];
  DATA.leases.forEach((l, k) => {
    if ((onlyKey && !l.on_key) || !layout.pos.has(l.lane)) return;
    const from = firstShownAtOrAfter(l.from), until = lastShownAtOrBefore(l.until);
    if (from === null || until === null || until < from) return;
    const taken = slots.get(l.lane) || [];
    let slot = 0;
    while (taken.some(t => t.slot === slot && !(t.until < from || t.from > until))) slot++;
    taken.push({ slot, from, until }); slots.set(l.lane, taken);
    placed.push({ l, k, slot, from, until });
  });
  const room = layout.laneW / 2 - 9;
  const step = new Map([...slots].map(([lane, taken]) => [lane, Math.min(8, room / (1 + Math.max(...taken.map(t => t.slot))))]));
  placed.forEach(({ l, k, slot, from, until }) => {
    const w = step.get(l.lane);
    const x = laneX(l.lane) + 7 + slot * w, y1 = rowY(from), y2 = rowY(until);
    const bar = el("rect", { x, y: y1, width: Math.max(1, Math.min(5, w - 1)), height: Math.max(3, y2 - y1), fill: "#e80", opacity: 0.75,
      class: "lease", "data-lease": k, "data-key": l.key, "data-attempt": l.attempt }, body);
    el("title", {}, bar).textContent = "lease: " + l.label;
    const label = el("text", { x: x + 7, y: y1 + 9, fill: "#b60", class: "lease-label" }, body);
    label.textContent = "#" + l.attempt;
    bars[k] = { x: x + 2.5, bar };
  });
  function firstShownAtOrAfter(i) { for (const j of shown) if (j >= i) return at.get(j); return null; }
  function lastShownAtOrBefore(i) { let r = null; for (const j of shown) { if (j > i) break; r = at.get(j); } return r; }
  // One colour per meaning, as the legend says.
  const colors = { effect: "#2a7", stored: "#06c", claim: "#e80", fenced: "#0e7c86", fault: "#8c510a", drop: "#8c510a", dup: "#7570b3", phase: "#888" };
  rows = shown.map((i, r) => {
    const e = DATA.events[i];
    const g = el("g", { class: "row event" + (e.violation ? " violation" : "") + (e.mark ? " mark-" + e.mark : ""), "data-index": i }, body);
    el("rect", { class: "hl", x: 0, y: rowY(r) - ROW_H / 2, width: layout.width, height: tops[r + 1] - tops[r], fill: "transparent" }, g);
    const y = rowY(r), visible = layout.pos.has(e.lane), x = visible ? laneX(e.lane) : null;
    if (visible && e.from && layout.pos.has(e.from[0]) && at.has(e.from[1]))
      el("line", { x1: laneX(e.from[0]), y1: rowY(at.get(e.from[1])), x2: x, y2: y, stroke: "#555", "marker-end": "url(#arrow)", class: "message" }, body);
    if (visible && e.toward !== null && e.toward !== undefined && layout.pos.has(e.toward)) {
      const tx = x + (laneX(e.toward) - x) * 0.6;
      el("line", { x1: x, y1: y, x2: tx, y2: y, stroke: colors[e.mark], "stroke-dasharray": "3,2" }, g);
      el("text", { x: tx - 4, y: y + 4, fill: colors[e.mark] }, g).textContent = e.mark === "drop" ? "\u2717" : "\u25c7";
    }
    // A refused write: from the store back to the writer's lane.
    if (visible && e.refused_to !== null && e.refused_to !== undefined && layout.pos.has(e.refused_to) && e.refused_to !== e.lane)
      el("line", { x1: x, y1: y, x2: laneX(e.refused_to), y2: y, stroke: colors.fenced, "stroke-width": 2, "marker-end": "url(#arrow)",
        class: "refused", "data-to": e.refused_to }, g);
    const fill = e.violation ? "#b00020" : (colors[e.mark] || "#333");
    if (visible) {
      if (e.mark === "effect") el("text", { x: x - 6, y: y + 4, fill, class: "dot" }, g).textContent = "\u2605";
      else if (e.mark === "stored") el("rect", { x: x - 5, y: y - 5, width: 10, height: 10, fill, class: "dot" }, g);
      else el("circle", { cx: x, cy: y, r: e.violation ? 6 : 4, fill, class: "dot" }, g);
    }
    const t = el("text", { x: 8, y: y + 4, class: "label" }, g);
    const whole = label(i);
    if (texts[r].length > 1) texts[r].forEach((line, k) => { el("tspan", { x: 8, dy: k ? ROW_H : 0 }, t).textContent = line; });
    else t.textContent = whole.length > max ? whole.slice(0, max - 1) + "\u2026" : whole;
    el("title", {}, g).textContent = whole;
    g.addEventListener("click", () => go(r));
    return g;
  });
  document.getElementById("count").textContent = shown.length;
  current = -1;
  document.getElementById("current-index").textContent = "-";
  if (keep !== null && shown.includes(keep)) go(shown.indexOf(keep));
}

// Steps through the shown rows; `r` is a row, not an event number.
function go(r) {
  if (r < 0 || r >= rows.length) return;
  if (current >= 0 && rows[current]) rows[current].classList.remove("current");
  current = r;
  rows[r].classList.add("current");
  const i = shown[r], e = DATA.events[i];
  document.getElementById("current-index").textContent = r;
  document.getElementById("detail").textContent = `#${i} at ${e.at}, ${DATA.lanes[e.lane]}: ${e.text}` + (e.violation ? "   <== violation" : "");
  const box = chart.getBoundingClientRect(), y = rowY(r) + HEAD_H;
  if (y - chart.scrollTop < HEAD_H + ROW_H || y - chart.scrollTop > box.height - ROW_H) chart.scrollTop = y - box.height / 2;
  if (layout.pos.has(e.lane)) {
    const x = laneX(e.lane);
    if (x - chart.scrollLeft < layout.textW || x - chart.scrollLeft > box.width - 20) chart.scrollLeft = Math.max(0, x - box.width + 60);
  }
}
document.getElementById("next").onclick = () => go(current + 1);
document.getElementById("prev").onclick = () => go(current - 1);
document.getElementById("jump").onclick = () => {
  const first = DATA.violations.flatMap(v => v.events).sort((a, b) => a - b).find(i => shown.includes(i));
  if (first !== undefined) go(shown.indexOf(first));
};
document.getElementById("only-key").onchange = k => { onlyKey = k.target.checked; draw(); };
document.addEventListener("keydown", k => {
  if (k.key === "ArrowRight" || k.key === "ArrowDown") { go(current + 1); k.preventDefault(); }
  if (k.key === "ArrowLeft" || k.key === "ArrowUp") { go(current - 1); k.preventDefault(); }
});
let resizing = null;
window.addEventListener("resize", () => { clearTimeout(resizing); resizing = setTimeout(draw, 100); });
draw();
</script>
</body>
</html>
"##;

#[cfg(test)]
mod tests {
    use crate::{run_seed, SimConfig, StoreKind, Variant};

    #[test]
    fn the_page_is_self_contained_and_carries_the_violation() {
        let config = SimConfig { steps: Variant::UnfencedCompletion.steps(), ..SimConfig::default() };
        let found = (0..200).map(|s| run_seed(&config, StoreKind::Mem, s).unwrap()).find(|o| o.failed()).unwrap();
        let page = super::render("t <x>", &found.history, &found.violations);
        assert!(page.contains("<title>idemsim: t &lt;x&gt;</title>"));
        // The only URL in the page is the SVG namespace's name, never fetched.
        assert_eq!(page.matches("http").count(), page.matches("http://www.w3.org/2000/svg").count());
        assert!(!page.contains("src=\"http") && !page.contains("href=\"http"), "no fetches");
        let data = page.split("const DATA = ").nth(1).unwrap().split(";\nconst ROW_H").next().unwrap();
        let json: serde_json::Value = serde_json::from_str(&data.replace("<\\/", "</")).unwrap();
        assert_eq!(json["events"].as_array().unwrap().len(), found.history.entries.len());
        assert!(json["events"].as_array().unwrap().iter().any(|e| e["violation"] == true));
        assert!(json["lanes"].as_array().unwrap().len() >= 5);
    }
}
