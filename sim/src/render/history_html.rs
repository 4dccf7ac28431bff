//! A concurrent history drawn as Porcupine draws one: callers as lanes,
//! operations as intervals from invocation to return (an answer lost runs
//! to the right edge), the witness's operations marked, each with its call
//! and answer. One self-contained page, no script.

use idemsim_model::linearizability::{Operation, Witness};
use idemsim_model::Scope;
use std::fmt::Write;

const LANE_PX: u64 = 34;
const WIDTH_PX: u64 = 1100;
const LEFT_PX: u64 = 90;

/// The page for the operations of `scope` in `history`, with `witness`'s
/// operations (and those it left out) marked.
pub fn render(title: &str, history: &[Operation], scope: Option<&Scope>, witness: Option<&Witness>) -> String {
    let ops: Vec<&Operation> =
        history.iter().filter(|o| scope.is_none_or(|s| o.call.scope().is_none_or(|k| k == s))).collect();
    let mut callers: Vec<u32> = ops.iter().map(|o| o.caller).collect();
    callers.sort_unstable();
    callers.dedup();
    let start = ops.iter().map(|o| o.invoked_ns).min().unwrap_or(0);
    let end = ops.iter().map(|o| o.returned_ns.unwrap_or(o.invoked_ns)).max().unwrap_or(start).max(start + 1);
    let x = |ns: u64| {
        LEFT_PX
            + (ns.saturating_sub(start) as u128 * u128::from(WIDTH_PX - LEFT_PX - 10) / u128::from(end - start)) as u64
    };
    let marked = |o: &Operation, list: &[Operation]| {
        list.iter().any(|w| w.caller == o.caller && w.invoked_ns == o.invoked_ns && w.call == o.call)
    };
    let height = LANE_PX * callers.len() as u64 + 20;
    let mut svg = format!("<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH_PX}' height='{height}'>");
    for (lane, caller) in callers.iter().enumerate() {
        let y = 10 + LANE_PX * lane as u64;
        let _ = write!(svg, "<text x='4' y='{}' class='lane'>caller {caller}</text>", y + 18);
        let _ = write!(
            svg,
            "<line x1='{LEFT_PX}' x2='{WIDTH_PX}' y1='{}' y2='{}' class='rule'/>",
            y + LANE_PX - 2,
            y + LANE_PX - 2
        );
    }
    for op in &ops {
        let lane = callers.iter().position(|c| *c == op.caller).unwrap_or(0) as u64;
        let y = 14 + LANE_PX * lane;
        let (x0, x1) = (x(op.invoked_ns), op.returned_ns.map_or(WIDTH_PX - 4, x));
        // A witness operation carries its number in the story.
        let number = witness.and_then(|w| w.as_answered.iter().position(|a| marked(op, std::slice::from_ref(a))));
        let class = match (number, witness) {
            (Some(_), _) => "op witness",
            (None, Some(w)) if marked(op, &w.left_out) => "op left-out",
            _ => "op",
        };
        let label = match number {
            Some(n) => format!("{}. {}", n + 1, short(op)),
            None => short(op),
        };
        let answer = op.answer.as_ref().map_or("answer lost".to_string(), |a| a.to_string());
        let tip = escape(&format!("caller {}: {} -> {answer}", op.caller, op.call));
        let _ = write!(
            svg,
            "<g class='{class}'><title>{tip}</title><rect x='{x0}' y='{y}' width='{}' height='{}' rx='3'/><text x='{}' y='{}'>{}</text></g>",
            (x1 - x0).max(3),
            LANE_PX - 10,
            x0 + 3,
            y + 16,
            escape(&fit(&label, x1 - x0)),
        );
    }
    svg.push_str("</svg>");
    let story = match (witness, scope) {
        (Some(w), Some(s)) => format!("<pre>{}</pre>", escape(&w.story(s).to_string())),
        _ => String::new(),
    };
    format!(
        "<!doctype html><html><head><meta charset='utf-8'><title>{t}</title><style>{STYLE}</style></head><body><h1>{t}</h1><p>Callers as lanes, operations from invocation to return; an answer lost runs to the right edge. Hover an operation for its call and answer.{legend}</p>{svg}{story}</body></html>",
        t = escape(title),
        legend = if witness.is_some() { " <span class='key witness'>the witness</span> <span class='key left-out'>left out of it</span>" } else { "" },
    )
}

/// The label inside an interval: the call's verb and its answer, short.
fn short(op: &Operation) -> String {
    let call = op.call.to_string();
    let verb = call.split_whitespace().next().unwrap_or("");
    let answer = op.answer.as_ref().map_or("lost".to_string(), |a| a.to_string());
    format!("{verb} → {answer}")
}

/// `label` cut to what an interval `width_px` wide holds (about 6.5 px a
/// character at 11 px), with an ellipsis; nothing when not even a few fit.
fn fit(label: &str, width_px: u64) -> String {
    let room = (width_px.saturating_sub(6) * 2 / 13) as usize;
    match label.chars().count() {
        n if n <= room => label.to_string(),
        _ if room < 4 => String::new(),
        _ => label.chars().take(room - 1).chain(['…']).collect(),
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('\'', "&#39;")
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em}text{font-size:11px}.lane{font-weight:600}\
.rule{stroke:#ddd}.op rect{fill:#e8eef7;stroke:#8aa}.op.witness rect{fill:#fbd5d5;stroke:#c0392b;stroke-width:2}\
.op.left-out rect{fill:#eee;stroke:#aaa;stroke-dasharray:4 2}.key{padding:0 .4em;border-radius:3px}\
.key.witness{background:#fbd5d5}.key.left-out{background:#eee}pre{background:#f7f7f7;padding:1em}";
