//! Property 2: every acknowledged success had its effect, and once faults
//! heal no record is left `in_progress` past its lease plus the reconcile
//! bound.

use super::FingerprintId;
use super::{Index, Property, ScopeId, Violation};
use crate::history::{Answer, Event, History};
use crate::ids::{Scope, SimTime};
use crate::request::{Effects, StoredResponse};
use std::collections::BTreeSet;

pub(super) fn check(history: &History, index: &Index) -> Vec<Violation> {
    let mut out = acknowledged_without_effect(history, index);
    out.extend(stuck_in_progress(history, index));
    out.extend(stored_errors(history, index));
    out
}

/// Statuses that ask the client to try again later.
fn transient(status: u16) -> bool {
    matches!(status, 408 | 429 | 502 | 503 | 504)
}

/// A record lifetime's charge, whether it completed, and the release that
/// left the charge without a record (see [`stored_errors`]).
#[derive(Clone, Default)]
struct Orphan {
    charge: Option<(ScopeId, usize)>,
    completed: bool,
    released: Option<usize>,
}

impl Orphan {
    fn violation(self, index: &Index) -> Option<Violation> {
        let (Some((client, charge)), false, Some(released)) = (self.charge, self.completed, self.released) else {
            return None;
        };
        Some(Violation::new(
            Property::Liveness,
            vec![charge, released],
            format!(
                "{} was charged at #{charge}, then released at #{released} and never completed: nothing records the charge, so the customer paid for an operation that failed (and another body under the key would charge again)",
                index.scope(client)
            ),
        ))
    }
}

/// A stored response must agree with the effects: a transient status is
/// never a final answer (the request could never succeed: every retry
/// replays it), and a stored error means no effect was performed (the
/// caller is told it failed while it was charged). Properties 2 and 7
/// of docs/protocol.md §9 together.
///
/// In the same pass, a charge whose record was released without a
/// completion and never completed after: nothing on our side says the
/// charge happened (a retry with another body would charge again, and no
/// retry at all leaves the customer charged for an operation that
/// failed). Judged once the run ended; a later completion of the same
/// lifetime (a retry that collapsed onto the charge) makes it whole.
fn stored_errors<'h>(history: &'h History, index: &'h Index) -> Vec<Violation> {
    // Effects per client scope and record lifetime (a sweep starts a new one).
    let mut lifetime: Vec<u32> = vec![0; index.scope_count()];
    let mut effects: super::Lookup<(ScopeId, u32), usize> = crate::lookup::lookup(index.scope_count());
    let mut stored: Vec<(usize, ScopeId, u32, u16)> = Vec::new();
    let mut orphans: Vec<Orphan> = vec![Orphan::default(); index.scope_count()];
    for (i, entry) in index.record_entries(history) {
        let Some(client) = index.client_scope_id(i) else { continue };
        let life = lifetime[client.get()];
        let orphan = &mut orphans[client.get()];
        match &entry.event {
            Event::RecordSwept { .. } => {
                lifetime[client.get()] += 1;
                *orphan = Orphan::default();
            }
            Event::LocalEffectCommitted { .. } => {
                effects.entry((client, life)).or_insert(i);
            }
            Event::DownstreamEffect { .. } => {
                effects.entry((client, life)).or_insert(i);
                orphan.charge.get_or_insert((client, i));
            }
            Event::CompletionWritten { response, .. } => {
                orphan.completed = true;
                if response.status >= 400 {
                    stored.push((i, client, life, response.status));
                }
            }
            Event::Released { .. } if orphan.charge.is_some() && !orphan.completed => orphan.released = Some(i),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (i, client, life, status) in stored {
        let scope = index.scope(client);
        if transient(status) {
            out.push(Violation::new(
                Property::Liveness,
                vec![i],
                format!("{scope} was completed with the transient {status} as its response: every retry replays it, so the request can never succeed"),
            ));
        }
        if let Some(&effect) = effects.get(&(client, life)) {
            out.push(Violation::new(
                Property::Liveness,
                vec![effect, i],
                format!("{scope} stored {status} as its response, yet its effect happened at #{effect}: the caller is told it failed while it was charged"),
            ));
        }
    }
    if history.end_at().is_some() {
        out.extend(orphans.into_iter().filter_map(|o| o.violation(index)));
    }
    out
}

fn acknowledged_without_effect(history: &History, index: &Index) -> Vec<Violation> {
    // Effects by the scope the client sent (see `Index`).
    let mut local: Vec<bool> = vec![false; index.scope_count()];
    let mut external: Vec<bool> = vec![false; index.scope_count()];
    // Which scopes, and which requests (by fingerprint; `None` for the
    // reconciler), stored each response: a success stored only for another
    // caller's key is a leak (isolation), and one stored only for another
    // request with this key a wrong answer (status rules), not a lost
    // effect. A background completion stores for the request that created
    // the record.
    let mut stored_for: super::Lookup<&StoredResponse, BTreeSet<(ScopeId, Option<FingerprintId>)>> =
        crate::lookup::lookup(index.record_count());
    let mut created_by: Vec<Option<FingerprintId>> = vec![None; index.record_count()];
    // A call that collapsed onto another caller's effect: isolation
    // reports it, so it does not count as a lost effect here.
    let mut collapsed: Vec<bool> = vec![false; index.scope_count()];
    for (i, entry) in index.record_entries(history) {
        let (Some(record), Some(client)) = (index.record(i), index.client_scope_id(i)) else { continue };
        match &entry.event {
            Event::LocalEffectCommitted { .. } => local[client.get()] = true,
            Event::Claimed { by, .. } => {
                if let Some(fingerprint) = by.request().and_then(|req| index.request_fingerprint(req)) {
                    created_by[record.get()] = Some(fingerprint);
                }
            }
            Event::CompletionWritten { by, response, .. } => {
                let by = match by.request().and_then(|req| index.request_fingerprint(req)) {
                    Some(fingerprint) => Some(fingerprint),
                    None => created_by[record.get()],
                };
                stored_for.entry(response).or_default().insert((client, by));
            }
            Event::DownstreamEffect { .. } => external[client.get()] = true,
            Event::DownstreamCalled { .. } => collapsed[client.get()] = true,
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (i, entry) in index.responses_received(history) {
        let Event::ResponseReceived { req, answer: Answer::Executed | Answer::Replayed, response, .. } = &entry.event
        else {
            continue;
        };
        if !(200..300).contains(&response.status) {
            continue;
        }
        let Some((sent, request, Some(client), fingerprint)) = index.sent(*req) else { continue };
        let mine = |(s, f): &(ScopeId, Option<FingerprintId>)| *s == client && f.is_none_or(|f| f == fingerprint);
        if stored_for.get(response).is_some_and(|owners| !owners.iter().any(mine)) {
            continue;
        }
        let effects = Effects::of_path(&request.path);
        let external_lost = !external[client.get()] && !collapsed[client.get()];
        let missing = match (effects.local && !local[client.get()], effects.external && external_lost) {
            (true, true) => "its local and downstream effects",
            (true, false) => "its local effect",
            (false, true) => "its downstream effect",
            (false, false) => continue,
        };
        out.push(Violation::new(
            Property::Liveness,
            vec![sent, i],
            format!(
                "{req} for {} was acknowledged with {} but {missing} never happened",
                index.scope(client),
                response.status
            ),
        ));
    }
    out
}

/// Replays the store events to the final record states and reports the ones
/// still `in_progress` at the end of a run that had time to finish them.
fn stuck_in_progress(history: &History, index: &Index) -> Vec<Violation> {
    let Some(end) = history.end_at() else {
        return Vec::new();
    };
    let heal = history.heal_at().unwrap_or(SimTime::ZERO);
    // Per record: its scope, the grant, when its lease ends by the
    // documented lease, and whether the record's own lease is longer.
    let mut open: Vec<Option<(&Scope, usize, SimTime, bool)>> = vec![None; index.record_count()];
    for (i, entry) in index.record_entries(history) {
        let Some(record) = index.record(i) else { continue };
        match &entry.event {
            Event::Claimed { scope, locked_until, .. } | Event::TakenOver { scope, locked_until, .. } => {
                // A lease longer than the documented one does not excuse a
                // stuck record: the protocol promises recovery after it.
                let documented = entry.at.plus_ms(history.meta.lease_ms);
                let longer = *locked_until > documented;
                open[record.get()] = Some((scope, i, (*locked_until).min(documented), longer));
            }
            Event::CompletionWritten { .. } | Event::Released { .. } | Event::RecordSwept { .. } => {
                open[record.get()] = None;
            }
            _ => {}
        }
    }
    // In scope order, as a report reads best.
    let mut open: Vec<(&Scope, (usize, SimTime, bool))> =
        open.into_iter().flatten().map(|(s, i, t, longer)| (s, (i, t, longer))).collect();
    open.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let bound = history.meta.reconcile_bound_ms;
    open.into_iter()
        .filter(|(_, (_, locked_until, _))| end >= (*locked_until).max(heal).plus_ms(bound))
        .map(|(scope, (i, locked_until, longer))| {
            let lease = match longer {
                true => format!(
                    "its lease is longer than the documented {} ms, by which it ended at {locked_until}",
                    history.meta.lease_ms
                ),
                false => format!("lease ended at {locked_until}"),
            };
            Violation::new(
                Property::Liveness,
                vec![i],
                format!("{scope} was left in_progress: {lease}, run ended at {end}, reconcile bound {bound} ms"),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::*;
    use crate::ids::{Attempt, NodeId};
    use crate::StoredResponse;

    fn check_story(s: &Story) -> Vec<Violation> {
        check(&s.history, &Index::new(&s.history))
    }

    #[test]
    fn an_acknowledged_order_with_its_row_is_clean() {
        let mut s = Story::new();
        s.send(0, req(1, 1), request("acme", Some("k1"), "/orders", "{}"));
        s.claimed(by(1, 1), &scope(), "f");
        s.at(
            NodeId::Db,
            Event::LocalEffectCommitted { by: by(1, 1), scope: scope(), attempt: Attempt(1), effect_id: "o".into() },
        );
        s.completed(by(1, 1), &scope(), 1, ok("x"));
        s.received(0, req(1, 1), Answer::Executed, ok("x"));
        s.end();
        assert!(check_story(&s).is_empty());
    }

    fn charge_then_release(s: &mut Story) -> (usize, usize) {
        s.claimed(by(1, 1), &scope(), "f");
        let key = crate::DownstreamKey("dk".into());
        let call = Event::DownstreamCalled {
            by: by(1, 1),
            from: NodeId::Server(0),
            scope: scope(),
            attempt: Attempt(1),
            downstream_key: key.clone(),
        };
        s.at(NodeId::Downstream, call);
        let charge = s.at(NodeId::Downstream, Event::DownstreamEffect { scope: scope(), downstream_key: key });
        let release = Event::Released { by: by(1, 1), scope: scope(), attempt: Attempt(1) };
        (charge, s.at(NodeId::Db, release))
    }

    #[test]
    fn a_charge_whose_record_was_released_and_never_completed_is_orphaned() {
        let mut s = Story::new();
        let (charge, release) = charge_then_release(&mut s);
        s.end();
        let v = check_story(&s);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].events, vec![charge, release]);
        assert!(v[0].explanation.contains("never completed"), "{}", v[0]);
    }

    #[test]
    fn a_retry_that_completes_after_the_release_makes_the_charge_whole() {
        let mut s = Story::new();
        charge_then_release(&mut s);
        s.claimed(by(1, 2), &scope(), "f");
        s.completed(by(1, 2), &scope(), 2, ok("x"));
        s.end();
        assert!(check_story(&s).is_empty(), "{:?}", check_story(&s));
    }

    #[test]
    fn a_stored_transient_error_and_a_stored_error_with_an_effect_are_violations() {
        let mut s = Story::new();
        s.claimed(by(1, 1), &scope(), "f");
        s.completed(by(1, 1), &scope(), 1, StoredResponse::new(503, "timeout"));
        s.end();
        let v = check_story(&s);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].explanation.contains("transient 503"), "{}", v[0]);

        let mut s = Story::new();
        s.claimed(by(1, 1), &scope(), "f");
        let charged = s.at(
            NodeId::Downstream,
            Event::DownstreamEffect { scope: scope(), downstream_key: crate::DownstreamKey("dk".into()) },
        );
        let stored = s.completed(by(1, 1), &scope(), 1, StoredResponse::new(500, "boom"));
        s.end();
        let v = check_story(&s);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].events, vec![charged, stored]);
        assert!(v[0].explanation.contains("told it failed while it was charged"), "{}", v[0]);

        // A stored error without an effect (a validation error stored by a
        // broken step is the status rules' business) is not this rule's.
        let mut s = Story::new();
        s.claimed(by(1, 1), &scope(), "f");
        s.completed(by(1, 1), &scope(), 1, StoredResponse::new(400, "bad"));
        s.end();
        assert!(check_story(&s).is_empty());
    }

    #[test]
    fn an_acknowledged_charge_without_effect_is_a_violation() {
        let mut s = Story::new();
        s.send(0, req(1, 1), request("acme", Some("k1"), "/charges", "{}"));
        s.received(0, req(1, 1), Answer::Replayed, ok("x"));
        let v = check_story(&s);
        assert_eq!(v.len(), 1);
        assert!(v[0].explanation.contains("downstream effect never happened"), "{}", v[0]);
    }

    #[test]
    fn a_record_stuck_in_progress_after_heal_is_a_violation() {
        let mut s = Story::new();
        let claim = s.claimed(by(1, 1), &scope(), "f");
        s.at(NodeId::World, Event::Phase { phase: crate::history::Phase::Heal });
        s.wait(60_000);
        s.end();
        let v = check_story(&s);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].events, vec![claim]);
        assert!(v[0].explanation.contains("left in_progress"));
    }

    #[test]
    fn a_claim_without_a_lease_is_judged_by_the_documented_lease() {
        let mut s = Story::new();
        let endless = SimTime(100 * 365 * 86_400_000);
        let claim = s.at(
            NodeId::Db,
            Event::Claimed {
                by: by(1, 1),
                scope: scope(),
                fingerprint: crate::Fingerprint("f".into()),
                attempt: Attempt(1),
                locked_until: endless,
            },
        );
        s.at(NodeId::World, Event::Phase { phase: crate::history::Phase::Heal });
        s.wait(60_000);
        s.end();
        let v = check_story(&s);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].events, vec![claim]);
    }

    #[test]
    fn a_young_in_progress_record_at_the_end_is_not_judged() {
        let mut s = Story::new();
        s.claimed(by(1, 1), &scope(), "f");
        s.wait(500);
        s.end();
        assert!(check_story(&s).is_empty());
    }
}
