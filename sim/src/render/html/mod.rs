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

use crate::render::timeline::describe;
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

/// The page: `/*TITLE*/` and `/*DATA*/` are filled in by [`render`].
const TEMPLATE: &str = include_str!("template.html");

#[cfg(test)]
mod tests;
