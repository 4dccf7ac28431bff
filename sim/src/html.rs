//! A run as one self-contained HTML page: a sequence diagram with one lane
//! per node, messages as arrows (drops and duplicates marked), leases as
//! bars, effects and stored responses marked, the violating events
//! highlighted, and a step-through control for teaching.
//!
//! The page fetches nothing: the data is inlined as JSON and the script and
//! style are in the page, so it works offline from a `file://` URL.

use crate::timeline::describe;
use idemsim_model::history::Fault;
use idemsim_model::{Event, History, NodeId, RequestId, Violation};
use serde::Serialize;
use std::collections::BTreeMap;

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
}

#[derive(Serialize)]
struct Lease {
    lane: usize,
    from: usize,
    until: usize,
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
    let flagged: std::collections::BTreeSet<usize> = violations.iter().flat_map(|v| v.events.iter().copied()).collect();
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
        rows.push(Row {
            at: e.at.to_string(),
            lane,
            text: describe(&e.event),
            mark: mark(&e.event),
            from,
            toward,
            violation: flagged.contains(&i),
        });
    }
    let leases = leases(history, &lane_of);
    let violations = violations
        .iter()
        .map(|v| Flag { property: v.property.name(), explanation: v.explanation.clone(), events: v.events.clone() })
        .collect();
    Page { title, lanes: nodes.iter().map(|n| n.to_string()).collect(), events: rows, leases, violations }
}

/// A lease bar from each claim or takeover to the first event at or after
/// its end (or the end of the run), on the database lane.
fn leases(history: &History, lane_of: &BTreeMap<NodeId, usize>) -> Vec<Lease> {
    let mut out = Vec::new();
    for (i, e) in history.entries.iter().enumerate() {
        let (scope, attempt, until) = match &e.event {
            Event::Claimed { scope, attempt, locked_until, .. }
            | Event::TakenOver { scope, attempt, locked_until, .. } => (scope, attempt, *locked_until),
            _ => continue,
        };
        let end = history.entries[i..].iter().position(|x| x.at >= until).map_or(history.entries.len() - 1, |k| i + k);
        out.push(Lease { lane: lane_of[&e.node], from: i, until: end, label: format!("{scope} attempt {attempt}") });
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
  body { font: 13px/1.4 system-ui, sans-serif; margin: 0; color: #222; }
  header { position: sticky; top: 0; background: #fff; border-bottom: 1px solid #ccc; padding: 8px 12px; z-index: 2; }
  header h1 { font-size: 15px; margin: 0 0 6px; }
  button { font: inherit; margin-right: 4px; }
  #detail { margin-top: 6px; min-height: 1.4em; font-family: ui-monospace, monospace; }
  #flags { margin: 6px 0 0; padding-left: 18px; color: #b00020; }
  #lanes { display: flex; margin-top: 6px; }
  #flags { max-height: 8em; overflow-y: auto; }
  .lane { text-align: center; font-weight: 600; font-size: 12px; }
  svg text { font: 11px ui-monospace, monospace; }
  .row.current rect.hl { fill: #fff3b0; }
  .row.violation text { fill: #b00020; font-weight: 700; }
  .legend span { margin-right: 12px; }
</style>
</head>
<body>
<header>
  <h1>/*TITLE*/</h1>
  <div>
    <button id="prev" title="previous event (left arrow)">&larr; previous</button>
    <button id="next" title="next event (right arrow)">next &rarr;</button>
    <button id="jump">jump to the violation</button>
    <span>event <span id="current-index">-</span> of <span id="count"></span></span>
  </div>
  <div id="detail">Step through the run with the buttons or the arrow keys.</div>
  <ul id="flags"></ul>
  <div class="legend">
    <span>&#9654; message</span><span style="color:#c00">&#10007; dropped</span><span style="color:#a0a">&#9671; duplicated</span>
    <span style="color:#2a7">&#9733; effect</span><span style="color:#06c">&#9632; stored response</span>
    <span style="color:#e80">| lease</span><span style="color:#b00020">red: violation</span>
  </div>
  <div id="lanes"></div>
</header>
<div id="chart"></div>
<script>
const DATA = /*DATA*/;
const LANE_W = 78, ROW_H = 20, TEXT_W = 600, LEFT = TEXT_W + 10;
const svgNS = "http://www.w3.org/2000/svg";
const nLanes = DATA.lanes.length, nRows = DATA.events.length;
const textX = 8, width = LEFT + nLanes * LANE_W + 20;
const laneX = l => LEFT + l * LANE_W + LANE_W / 2;
const rowY = r => 10 + r * ROW_H + ROW_H / 2;
function el(name, attrs, parent) {
  const e = document.createElementNS(svgNS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
const lanesDiv = document.getElementById("lanes");
lanesDiv.style.paddingLeft = LEFT + "px";
DATA.lanes.forEach((name, i) => {
  const d = document.createElement("div");
  d.className = "lane"; d.dataset.lane = i; d.style.width = LANE_W + "px"; d.textContent = name;
  lanesDiv.appendChild(d);
});
const svg = el("svg", { width, height: 20 + nRows * ROW_H });
document.getElementById("chart").appendChild(svg);
const defs = el("defs", {}, svg);
const arrow = el("marker", { id: "arrow", markerWidth: 8, markerHeight: 8, refX: 7, refY: 4, orient: "auto" }, defs);
el("path", { d: "M0,0 L8,4 L0,8 z", fill: "#555" }, arrow);
const rowsG = el("g", {}, svg);
DATA.lanes.forEach((_, i) => el("line", { x1: laneX(i), x2: laneX(i), y1: 0, y2: 20 + nRows * ROW_H, stroke: "#ddd" }, svg));
DATA.leases.forEach(l => {
  const x = laneX(l.lane) + 8;
  const bar = el("rect", { x, y: rowY(l.from), width: 4, height: Math.max(2, rowY(l.until) - rowY(l.from)), fill: "#e80", opacity: 0.7, class: "lease" }, svg);
  el("title", {}, bar).textContent = "lease: " + l.label;
});
const rows = DATA.events.map((e, i) => {
  const g = el("g", { class: "row event" + (e.violation ? " violation" : ""), "data-index": i }, rowsG);
  el("rect", { class: "hl", x: 0, y: rowY(i) - ROW_H / 2, width, height: ROW_H, fill: "transparent" }, g);
  const x = laneX(e.lane), y = rowY(i);
  if (e.from) el("line", { x1: laneX(e.from[0]), y1: rowY(e.from[1]), x2: x, y2: y, stroke: "#555", "marker-end": "url(#arrow)", class: "message" }, svg);
  if (e.toward !== null && e.toward !== undefined) {
    const tx = x + (laneX(e.toward) - x) * 0.6;
    el("line", { x1: x, y1: y, x2: tx, y2: y, stroke: e.mark === "drop" ? "#c00" : "#a0a", "stroke-dasharray": "3,2" }, g);
    el("text", { x: tx - 4, y: y + 4, fill: e.mark === "drop" ? "#c00" : "#a0a" }, g).textContent = e.mark === "drop" ? "\u2717" : "\u25c7";
  }
  const colors = { effect: "#2a7", stored: "#06c", claim: "#e80", fenced: "#b00020", fault: "#c00", drop: "#c00", dup: "#a0a", phase: "#888" };
  const fill = e.violation ? "#b00020" : (colors[e.mark] || "#333");
  if (e.mark === "effect") el("text", { x: x - 6, y: y + 4, fill }, g).textContent = "\u2605";
  else if (e.mark === "stored") el("rect", { x: x - 5, y: y - 5, width: 10, height: 10, fill }, g);
  else el("circle", { cx: x, cy: y, r: e.violation ? 6 : 4, fill }, g);
  const t = el("text", { x: textX, y: y + 4 }, g);
  const label = `#${i} ${e.at} ${DATA.lanes[e.lane]}: ${e.text}`;
  t.textContent = label.length > 92 ? label.slice(0, 91) + "\u2026" : label;
  el("title", {}, g).textContent = label;
  g.addEventListener("click", () => go(i));
  return g;
});
const flags = document.getElementById("flags");
DATA.violations.forEach(v => {
  const li = document.createElement("li");
  li.className = "flag";
  li.textContent = `[${v.property}] ${v.explanation}`;
  flags.appendChild(li);
});
document.getElementById("count").textContent = nRows;
let current = -1;
function go(i) {
  if (i < 0 || i >= nRows) return;
  if (current >= 0) rows[current].classList.remove("current");
  current = i;
  rows[i].classList.add("current");
  const e = DATA.events[i];
  document.getElementById("current-index").textContent = i;
  document.getElementById("detail").textContent = `#${i} at ${e.at}, ${DATA.lanes[e.lane]}: ${e.text}` + (e.violation ? "   <== violation" : "");
  const top = rows[i].getBoundingClientRect().top;
  if (top < 160 || top > window.innerHeight - 40) window.scrollBy(0, top - window.innerHeight / 2);
}
document.getElementById("next").onclick = () => go(current + 1);
document.getElementById("prev").onclick = () => go(current - 1);
document.getElementById("jump").onclick = () => {
  const first = DATA.violations.flatMap(v => v.events)[0];
  if (first !== undefined) go(first);
};
document.addEventListener("keydown", k => {
  if (k.key === "ArrowRight" || k.key === "ArrowDown") { go(current + 1); k.preventDefault(); }
  if (k.key === "ArrowLeft" || k.key === "ArrowUp") { go(current - 1); k.preventDefault(); }
});
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
        let data = page.split("const DATA = ").nth(1).unwrap().split(";\nconst LANE_W").next().unwrap();
        let json: serde_json::Value = serde_json::from_str(&data.replace("<\\/", "</")).unwrap();
        assert_eq!(json["events"].as_array().unwrap().len(), found.history.entries.len());
        assert!(json["events"].as_array().unwrap().iter().any(|e| e["violation"] == true));
        assert!(json["lanes"].as_array().unwrap().len() >= 5);
    }
}
