//! A violation as a short numbered story in plain words: only the events of
//! the keys it concerns (who sent what, who claimed with which attempt,
//! which lease ran out, which write landed), the faults that hit the nodes
//! in it, and the property it breaks.

use crate::render::timeline::describe;
use idemsim_model::checker::Index;
use idemsim_model::history::{Fault, Origin};
use idemsim_model::{Event, History, IdempotencyKey, NodeId, OpId, SimTime, Violation};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

mod fold;
#[cfg(test)]
mod tests;

use fold::*;

/// The entries of `history` that tell `violation`'s story, in order.
pub fn story_events(history: &History, violation: &Violation) -> Vec<usize> {
    story_events_and_start(history, violation).0
}

/// [`story_events`], and where a wrong answer's story was cut to start.
fn story_events_and_start(history: &History, violation: &Violation) -> (Vec<usize>, Option<usize>) {
    let mut chosen = story_events_from_the_start(history, violation);
    let start = answer_window_start(history, violation, &chosen);
    if let Some(g) = start {
        chosen.retain(|&i| i >= g);
    }
    (chosen, start)
}

/// An answer is judged by the record states it could have seen: the story
/// of a wrong answer starts at the last grant on its key before the
/// request went out (what came before is how the record got there, not
/// why the answer was wrong). `None` for other properties, or when the
/// story starts there anyway.
fn answer_window_start(history: &History, violation: &Violation, chosen: &[usize]) -> Option<usize> {
    if violation.property != idemsim_model::Property::StatusRules {
        return None;
    }
    // When the answered request went out (its first send).
    let reqs: BTreeSet<idemsim_model::RequestId> =
        violation.events.iter().filter_map(|&i| req_of(history, i)).collect();
    let sent =
        history.entries.iter().position(|e| matches!(&e.event, Event::RequestSent { req, .. } if reqs.contains(req)));
    let first = sent.or(violation.events.iter().min().copied())?;
    let grant =
        chosen.iter().rev().copied().find(|&i| {
            i < first && matches!(history.entries[i].event, Event::Claimed { .. } | Event::TakenOver { .. })
        })?;
    (chosen.first() != Some(&grant)).then_some(grant)
}

fn story_events_from_the_start(history: &History, violation: &Violation) -> Vec<usize> {
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
    let stuck = violation.property == idemsim_model::Property::Liveness
        && violation.events.len() == 1
        && violation.events.iter().all(|&i| {
            history.entries.get(i).is_some_and(|e| matches!(e.event, Event::Claimed { .. } | Event::TakenOver { .. }))
        });
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
    let (mut chosen, window) = story_events_and_start(history, violation);
    let end = chosen.last().copied().unwrap_or(0);
    if all {
        chosen = (0..=end.min(history.entries.len().saturating_sub(1))).collect();
    } else {
        chosen = condense(history, violation, chosen);
    }
    let omitted = (end + 1).saturating_sub(chosen.len());
    let mut lines: Vec<Line> = Vec::new();
    for &i in &chosen {
        let e = &history.entries[i];
        let mark = if violation.events.contains(&i) { "   <== here" } else { "" };
        let retry = if all { String::new() } else { retry_of(history, i) };
        lines.push((e.at, i, format!("{}: {}{retry}{mark}", e.node, describe(&e.event)), true));
        if let Some((until, text)) = lease_ran_out(history, i) {
            if chosen.last().is_some_and(|&last| until <= history.entries[last].at) {
                let after = history.entries[i..].iter().position(|x| x.at >= until).map_or(usize::MAX, |k| i + k);
                lines.push((until, after.saturating_sub(1).max(i), text, false));
            }
        }
    }
    lines.sort_by_key(|(at, i, _, _)| (*at, *i));
    if !all {
        lines = fold_repeated_tries(history, violation, lines);
    }
    // One numbering: the `#N` a summary or an explanation cites (an event
    // of the history) is told as the story line that tells that event.
    let line_of: BTreeMap<usize, usize> =
        lines.iter().enumerate().filter(|(_, l)| l.3).map(|(n, l)| (l.1, n + 1)).collect();
    let cite = |text: &str| renumber(text, &line_of);
    let mut out = String::new();
    let _ = writeln!(out, "  in short: {}", cite(&summary(history, violation)));
    if let (Some(g), false) = (window, all) {
        let at = history.entries[g].at;
        let _ = writeln!(
            out,
            "  (from the last grant before the request went out, at {at}; `--all` tells what came before)"
        );
    }
    for (n, (at, _, text, _)) in lines.iter().enumerate() {
        let _ = writeln!(out, "{:>3}. at {:>9}  {text}", n + 1, at.to_string());
    }
    if !all && omitted > 0 {
        let events = if omitted == 1 { "event" } else { "events" };
        let _ = writeln!(
            out,
            "  ({omitted} {events} not shown: other keys and operations, and steps implied by the ones shown; `--all` shows them)"
        );
    }
    let _ = writeln!(out, "  => this breaks {}: {}", violation.property.name(), cite(&violation.explanation));
    out
}

/// `text` with each event it cites (`at #N`, an entry of the history:
/// an attempt reads `attempt #N` and stays) said as the story line that
/// tells it, `at line K`, or, for an event the story leaves out, as
/// `at event #N (not shown)`.
fn renumber(text: &str, line_of: &BTreeMap<usize, usize>) -> String {
    const CITE: &str = "at #";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(CITE) {
        let digits = rest[at + CITE.len()..].chars().take_while(char::is_ascii_digit).count();
        let number = &rest[at + CITE.len()..at + CITE.len() + digits];
        let word = rest[..at].chars().last().is_none_or(|c| !c.is_alphanumeric());
        let told = number.parse::<usize>().ok().filter(|_| word).map(|i| match line_of.get(&i) {
            Some(line) => format!("at line {line}"),
            None => format!("at event #{i} (not shown)"),
        });
        out.push_str(&rest[..at]);
        out.push_str(told.as_deref().unwrap_or(CITE));
        rest = &rest[at + CITE.len() + digits..];
    }
    out.push_str(rest);
    out
}

/// Leaves out the story events that the ones kept already imply: a
/// request received right after it was sent (nothing in the story between
/// the two), a timeout or an answer received that the retry or give-up
/// after it repeats, the dependency being called when its effect follows,
/// and the outbox's traffic when the property is not about the outbox.
fn condense(history: &History, violation: &Violation, chosen: Vec<usize>) -> Vec<usize> {
    let marked = |i: usize| violation.events.contains(&i);
    let at = |k: usize| &history.entries[chosen[k]].event;
    use idemsim_model::Property;
    let outbox = violation.property == Property::Outbox;
    let effects = matches!(violation.property, Property::AtMostOnce | Property::Fencing | Property::Outbox);
    let implied = |k: usize| -> bool {
        let next = chosen.get(k + 1).map(|_| at(k + 1));
        match at(k) {
            // Received as sent, unless a fault came between the two.
            Event::RequestReceived { req, .. } => {
                let sent = chosen[..k]
                    .iter()
                    .rposition(|&j| matches!(&history.entries[j].event, Event::RequestSent { req: r, .. } if r == req));
                sent.is_some_and(|s| !chosen[s..k].iter().any(|&j| matches!(history.entries[j].event, Event::Fault(_))))
            }
            Event::TimedOut { req } => {
                matches!(next, Some(Event::RetryScheduled { req: r, .. }) if r == req)
                    || matches!(next, Some(Event::GaveUp { op, .. }) if *op == req.op)
            }
            // The server's answer is in the story: the client got it.
            Event::ResponseReceived { req, .. } => chosen[..k]
                .iter()
                .any(|&j| matches!(&history.entries[j].event, Event::ResponseSent { req: r, .. } if r == req)),
            // How an execution did its work, when the property is not about
            // its effects.
            Event::RecoveryPointWritten { .. }
            | Event::DownstreamEffect { .. }
            | Event::LocalEffectCommitted { .. } => !effects,
            // The send of the next try says it is a retry, and after what.
            Event::RetryScheduled { req, .. } => chosen[k + 1..].iter().any(|&j| {
                matches!(&history.entries[j].event, Event::RequestSent { req: r, .. }
                    if r.op == req.op && r.try_no.0 == req.try_no.0 + 1)
            }),
            // A claim that succeeded starts its execution.
            Event::ExecutionStarted { by, .. } => {
                let own =
                    chosen[..k].iter().rev().map(|&j| &history.entries[j].event).find(|e| e.origin() == Some(*by));
                matches!(own, Some(Event::Claimed { .. } | Event::TakenOver { .. }))
            }
            Event::DownstreamCalled { scope, .. } => {
                matches!(next, Some(Event::DownstreamEffect { scope: s, .. }) if s == scope)
            }
            Event::MessagePublished { .. } | Event::MessageConsumed { .. } => !outbox,
            _ => false,
        }
    };
    let bystander = bystander_tries(history, violation, &chosen);
    let keep: Vec<bool> = (0..chosen.len())
        .map(|k| {
            marked(chosen[k]) || !(implied(k) || req_of(history, chosen[k]).is_some_and(|r| bystander.contains(&r)))
        })
        .collect();
    chosen.into_iter().zip(keep).filter_map(|(i, keep)| keep.then_some(i)).collect()
}

/// The send an event belongs to: its request, or the request whose
/// handler made it.
fn req_of(history: &History, i: usize) -> Option<idemsim_model::RequestId> {
    match &history.entries.get(i)?.event {
        Event::RequestSent { req, .. }
        | Event::RequestReceived { req, .. }
        | Event::ResponseSent { req, .. }
        | Event::ResponseReceived { req, .. }
        | Event::TimedOut { req }
        | Event::RetryScheduled { req, .. } => Some(*req),
        Event::Fault(_) => None,
        e => match e.origin() {
            Some(Origin::Request { req, .. }) => Some(req),
            _ => None,
        },
    }
}

/// Tries that came after every try of their operation that took part in
/// the violation, and took no part themselves: bystanders.
fn bystander_tries(history: &History, violation: &Violation, chosen: &[usize]) -> BTreeSet<idemsim_model::RequestId> {
    let involved: Vec<idemsim_model::RequestId> = violation.events.iter().filter_map(|&i| req_of(history, i)).collect();
    let last_involved = |op: OpId| involved.iter().filter(|r| r.op == op).map(|r| r.try_no.0).max();
    chosen
        .iter()
        .filter_map(|&i| req_of(history, i))
        .filter(|r| last_involved(r.op).is_some_and(|last| r.try_no.0 > last))
        .collect()
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
