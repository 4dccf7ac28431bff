//! A violation as a short numbered story in plain words: only the events of
//! the keys it concerns (who sent what, who claimed with which attempt,
//! which lease ran out, which write landed), the faults that hit the nodes
//! in it, and the property it breaks.

use crate::timeline::describe;
use idemsim_model::history::{Fault, Origin};
use idemsim_model::{Event, History, IdempotencyKey, NodeId, OpId, SimTime, Violation};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The entries of `history` that tell `violation`'s story, in order.
pub fn story_events(history: &History, violation: &Violation) -> Vec<usize> {
    let keys: BTreeSet<&IdempotencyKey> =
        violation.events.iter().filter_map(|&i| history.entries.get(i)).filter_map(|e| key_of(&e.event)).collect();
    let ops: BTreeSet<OpId> = history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::RequestSent { req, request, .. } if request.key.as_ref().is_some_and(|k| keys.contains(k)) => {
                Some(req.op)
            }
            _ => None,
        })
        .chain(violation.events.iter().filter_map(|&i| history.entries.get(i)).filter_map(|e| op_of(&e.event)))
        .collect();
    let about = |event: &Event| {
        key_of(event).is_some_and(|k| keys.contains(k)) || op_of(event).is_some_and(|o| ops.contains(&o))
    };
    let mut chosen: Vec<usize> = (0..history.entries.len()).filter(|&i| about(&history.entries[i].event)).collect();
    let nodes: BTreeSet<NodeId> = chosen.iter().map(|&i| history.entries[i].node).collect();
    let reqs: Vec<String> = chosen
        .iter()
        .filter_map(|&i| match &history.entries[i].event {
            Event::RequestSent { req, .. } => Some(req.to_string()),
            _ => None,
        })
        .collect();
    for (i, e) in history.entries.iter().enumerate() {
        let Event::Fault(f) = &e.event else { continue };
        if fault_touches(f, &nodes, &reqs) {
            chosen.push(i);
        }
    }
    chosen.extend(violation.events.iter().copied().filter(|&i| i < history.entries.len()));
    chosen.sort_unstable();
    chosen.dedup();
    // The story ends where the property broke; a record left stuck is a
    // story of what came after its claim, so it runs to the end.
    let stuck = violation.property == idemsim_model::Property::Liveness && violation.events.len() == 1;
    if let Some(&last) = violation.events.iter().max().filter(|_| !stuck) {
        chosen.retain(|&i| i <= last);
    }
    chosen
}

/// The story of `violation`, numbered from 1, with the violating events
/// marked and the leases that ran out on an unfinished execution inserted
/// where they ran out, ending with the property it breaks.
pub fn story(history: &History, violation: &Violation) -> String {
    let chosen = story_events(history, violation);
    let mut lines: Vec<(SimTime, usize, String)> = Vec::new();
    for &i in &chosen {
        let e = &history.entries[i];
        let mark = if violation.events.contains(&i) { "   <== here" } else { "" };
        lines.push((e.at, i, format!("{}: {}{mark}", e.node, describe(&e.event))));
        if let Some((until, text)) = lease_ran_out(history, i) {
            if chosen.last().is_some_and(|&last| until <= history.entries[last].at) {
                let after = history.entries[i..].iter().position(|x| x.at >= until).map_or(usize::MAX, |k| i + k);
                lines.push((until, after.saturating_sub(1), text));
            }
        }
    }
    lines.sort_by_key(|(at, i, _)| (*at, *i));
    let mut out = String::new();
    for (n, (at, _, text)) in lines.iter().enumerate() {
        let _ = writeln!(out, "{:>3}. at {:>9}  {text}", n + 1, at.to_string());
    }
    let _ = writeln!(out, "  => this breaks {}: {}", violation.property.name(), violation.explanation);
    out
}

/// If entry `i` grants a lease that runs out before the same scope is
/// completed, released or taken over: when, and a line saying so.
fn lease_ran_out(history: &History, i: usize) -> Option<(SimTime, String)> {
    let (scope, attempt, until) = match &history.entries[i].event {
        Event::Claimed { scope, attempt, locked_until, .. } | Event::TakenOver { scope, attempt, locked_until, .. } => {
            (scope, attempt, *locked_until)
        }
        _ => return None,
    };
    let finished = history.entries[i + 1..].iter().take_while(|e| e.at < until).any(|e| {
        matches!(&e.event,
            Event::CompletionWritten { scope: s, .. } | Event::Released { scope: s, .. } | Event::TakenOver { scope: s, .. }
            if s == scope)
    });
    let text = format!("the lease of {scope} attempt {attempt} runs out, its execution unfinished");
    (!finished).then_some((until, text))
}

fn key_of(event: &Event) -> Option<&IdempotencyKey> {
    let scope = match event {
        Event::Claimed { scope, .. }
        | Event::ClaimFound { scope, .. }
        | Event::TakenOver { scope, .. }
        | Event::TakeoverRefused { scope, .. }
        | Event::ExecutionStarted { scope, .. }
        | Event::RecoveryPointWritten { scope, .. }
        | Event::LocalEffectCommitted { scope, .. }
        | Event::CompletionWritten { scope, .. }
        | Event::Released { scope, .. }
        | Event::WriteFenced { scope, .. }
        | Event::RecordSwept { scope, .. }
        | Event::DownstreamCalled { scope, .. }
        | Event::DownstreamEffect { scope, .. }
        | Event::MessagePublished { scope, .. }
        | Event::MessageConsumed { scope, .. } => scope,
        Event::RequestSent { request, .. } => return request.key.as_ref(),
        _ => return None,
    };
    Some(&scope.key)
}

fn op_of(event: &Event) -> Option<OpId> {
    match event {
        Event::RequestSent { req, .. }
        | Event::RequestReceived { req, .. }
        | Event::ResponseSent { req, .. }
        | Event::ResponseReceived { req, .. }
        | Event::TimedOut { req }
        | Event::RetryScheduled { req, .. } => Some(req.op),
        Event::GaveUp { op, .. } => Some(*op),
        Event::StoreFailed { by: Origin::Request { req, .. }, .. } => Some(req.op),
        _ => None,
    }
}

fn fault_touches(fault: &Fault, nodes: &BTreeSet<NodeId>, reqs: &[String]) -> bool {
    match fault {
        Fault::Dropped { what, .. } | Fault::Duplicated { what, .. } => {
            reqs.iter().any(|r| what.split([' ', ',', '(', ')']).any(|word| word == r))
        }
        Fault::PartitionsHealed | Fault::UnsyncedWritesLost { .. } => true,
        _ => fault.node().is_some_and(|node| nodes.contains(&node) || node == NodeId::Db),
    }
}

#[cfg(test)]
mod tests {
    use crate::{run_seed, SimConfig, StoreKind, Variant};

    #[test]
    fn a_fencing_story_names_the_claims_and_ends_with_the_property() {
        let config = SimConfig { steps: Variant::CheckThenInsert.steps(), ..SimConfig::default() };
        let found = (0..200).map(|s| run_seed(&config, StoreKind::Mem, s).unwrap()).find(|o| o.failed()).unwrap();
        let v = &found.violations[0];
        let text = super::story(&found.history, v);
        assert!(text.starts_with("  1. at"), "{text}");
        assert!(text.contains("claims"), "{text}");
        assert!(text.contains("<== here"), "{text}");
        assert!(text.trim_end().ends_with(&v.explanation), "{text}");
        let lines = text.lines().count();
        assert!(lines < found.history.entries.len() / 2, "a story is a small part of the run: {lines} lines");
    }
}
