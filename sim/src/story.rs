//! A violation as a short numbered story in plain words: only the events of
//! the keys it concerns (who sent what, who claimed with which attempt,
//! which lease ran out, which write landed), the faults that hit the nodes
//! in it, and the property it breaks.

use crate::timeline::describe;
use idemsim_model::checker::Index;
use idemsim_model::history::{Fault, Origin};
use idemsim_model::{Event, History, IdempotencyKey, NodeId, OpId, SimTime, Violation};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The entries of `history` that tell `violation`'s story, in order.
pub fn story_events(history: &History, violation: &Violation) -> Vec<usize> {
    // Keys as the client sent them too, so a server that keyed the record
    // otherwise (the key alone, the key and the body) still shows.
    let index = Index::new(history);
    let keys_of = |i: usize| {
        let event = &history.entries[i].event;
        key_of(event).into_iter().chain(index.client_scope(i).map(|s| &s.key))
    };
    let violating = violation.events.iter().copied().filter(|&i| i < history.entries.len());
    // The keys of the violating events, and of the operations they name (a
    // give-up names its operation, not its key).
    let named: BTreeSet<OpId> = violating.clone().filter_map(|i| op_of(&history.entries[i].event)).collect();
    let named_keys = history.entries.iter().filter_map(|e| match &e.event {
        Event::RequestSent { req, request, .. } if named.contains(&req.op) => request.key.as_ref(),
        _ => None,
    });
    let keys: BTreeSet<&IdempotencyKey> = violating.clone().flat_map(keys_of).chain(named_keys).collect();
    let ops: BTreeSet<OpId> = history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::RequestSent { req, request, .. } if request.key.as_ref().is_some_and(|k| keys.contains(k)) => {
                Some(req.op)
            }
            _ => None,
        })
        .chain(violating.filter_map(|i| op_of(&history.entries[i].event)))
        .collect();
    let about = |i: usize| {
        keys_of(i).any(|k| keys.contains(k)) || op_of(&history.entries[i].event).is_some_and(|o| ops.contains(&o))
    };
    let mut chosen: Vec<usize> = (0..history.entries.len()).filter(|&i| about(i)).collect();
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

/// The story of `violation`: a one-line summary, then the events of its
/// keys and the faults that caused them, numbered from 1, with the
/// violating events marked and the leases that ran out on an unfinished
/// execution inserted where they ran out; then how many events were left
/// out, and the property it breaks.
pub fn story(history: &History, violation: &Violation) -> String {
    story_with(history, violation, false)
}

/// [`story`], or with `all` every event up to the violation.
pub fn story_with(history: &History, violation: &Violation, all: bool) -> String {
    let mut chosen = story_events(history, violation);
    let end = chosen.last().copied().unwrap_or(0);
    let omitted = (end + 1).saturating_sub(chosen.len());
    if all {
        chosen = (0..=end.min(history.entries.len().saturating_sub(1))).collect();
    }
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
    let _ = writeln!(out, "  in short: {}", summary(history, violation));
    for (n, (at, _, text)) in lines.iter().enumerate() {
        let _ = writeln!(out, "{:>3}. at {:>9}  {text}", n + 1, at.to_string());
    }
    if !all && omitted > 0 {
        let events = if omitted == 1 { "event" } else { "events" };
        let _ =
            writeln!(out, "  ({omitted} {events} of other keys and operations not shown; `replay --all` shows them)");
    }
    let _ = writeln!(out, "  => this breaks {}: {}", violation.property.name(), violation.explanation);
    out
}

/// One sentence on what happened, in the words of the protocol: for a
/// fencing violation, who held which attempt, what froze or cut it off,
/// what it wrote and after which grant; otherwise the violation itself.
pub fn summary(history: &History, violation: &Violation) -> String {
    fencing_summary(history, violation)
        .unwrap_or_else(|| format!("{} broke: {}", violation.property.name(), violation.explanation))
}

fn fencing_summary(history: &History, v: &Violation) -> Option<String> {
    if v.property != idemsim_model::Property::Fencing {
        return None;
    }
    let last = *v.events.iter().max()?;
    let (by, scope, did) = match &history.entries.get(last)?.event {
        Event::CompletionWritten { by, scope, .. } => (by, scope, "completed"),
        Event::LocalEffectCommitted { by, scope, .. } => (by, scope, "committed its local effect"),
        Event::Released { by, scope, .. } => (by, scope, "released the record"),
        Event::RecoveryPointWritten { by, scope, .. } => (by, scope, "wrote its recovery point"),
        _ => return None,
    };
    let (grant_at, granted, to) = v.events.iter().find_map(|&i| match &history.entries.get(i)?.event {
        Event::Claimed { by, attempt, .. } | Event::TakenOver { by, attempt, .. } => Some((i, *attempt, *by)),
        _ => None,
    })?;
    let (started_at, held) = history.entries[..last].iter().enumerate().rev().find_map(|(i, e)| match &e.event {
        Event::ExecutionStarted { by: b, scope: s, attempt } if b == by && s == scope => Some((i, *attempt)),
        _ => None,
    })?;
    let node = history.entries[started_at].node;
    let cause = history.entries[started_at..last].iter().find_map(|e| match &e.event {
        Event::Fault(Fault::Paused { node: n, .. }) if *n == node => Some("A paused"),
        Event::Fault(Fault::Partitioned { node: n, .. }) if *n == node => Some("A cut-off"),
        Event::Fault(Fault::ClockSkewed { node: n, .. }) if *n == node => Some("A clock-skewed"),
        _ => None,
    });
    let taker = match to {
        Origin::Request { req, .. } => req.to_string(),
        Origin::Reconciler => "the reconciler".to_string(),
        Origin::Sweeper => "the sweeper".to_string(),
        Origin::Relay => "the relay".to_string(),
    };
    if granted == held {
        let how = if grant_at < started_at { "kept" } else { "was given" };
        return Some(format!(
            "Two executions held attempt {held} of {scope} at once ({taker} {how} the same attempt): the second's write was not fenced"
        ));
    }
    let cause = cause.unwrap_or(if grant_at > started_at { "A slow" } else { "A racing" });
    Some(format!(
        "{cause} holder of attempt {held} {did} after attempt {granted} was granted to {taker}: the write was not fenced"
    ))
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
    match event {
        Event::RequestSent { request, .. } => request.key.as_ref(),
        _ => event.scope().map(|s| &s.key),
    }
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
        assert!(text.starts_with("  in short: "), "{text}");
        assert!(text.lines().nth(1).unwrap().starts_with("  1. at"), "{text}");
        assert!(text.contains("claims"), "{text}");
        assert!(text.contains("<== here"), "{text}");
        assert!(text.trim_end().ends_with(&v.explanation), "{text}");
        let lines = text.lines().count();
        assert!(lines < found.history.entries.len() / 2, "a story is a small part of the run: {lines} lines");
        assert!(text.contains("events of other keys and operations not shown"), "{text}");
        let all = super::story_with(&found.history, v, true);
        assert!(all.lines().count() > lines && !all.contains("not shown"), "{all}");
    }

    #[test]
    fn a_paused_holders_story_opens_with_what_happened() {
        let config = SimConfig { steps: Variant::UnfencedCompletion.steps(), ..crate::SimConfig::default() };
        let summaries: Vec<String> = (0..300)
            .map(|s| run_seed(&config, StoreKind::Mem, s).unwrap())
            .filter(|o| o.failed())
            .map(|o| super::summary(&o.history, &o.violations[0]))
            .collect();
        assert!(!summaries.is_empty());
        assert!(
            summaries.iter().any(|s| s.contains("holder of attempt #1") && s.ends_with("the write was not fenced")),
            "{summaries:#?}"
        );
    }
}
