//! Property 5, judged by what the client saw: every 409, 422 and success a
//! client received must be what the replay table gives for some state of
//! its key's record while the request was out (between its send and its
//! answer). A server that answers from anything but the store (a cache of
//! record states, an early exit, a replay after the record was swept)
//! gives answers no such state calls for.
//!
//! The states are replayed from the store's own events, per scope as the
//! client sent it (see [`Index`]). A crash that loses unsynced writes may
//! roll a record back to any earlier state, so after one every earlier
//! state stays possible.

use super::{FingerprintId, Index, Property, ScopeId, Violation};
use crate::history::{Event, Fault, History, Origin};
use crate::ids::Scope;
use crate::record::RecordState;
use crate::request::StoredResponse;

/// A record's state as the client's view needs it.
#[derive(Clone, Copy, PartialEq)]
struct State<'h> {
    /// The fingerprint (client-side) of the request that created it; `None`
    /// when no request's claim created it.
    fingerprint: Option<FingerprintId>,
    /// The stored response once completed.
    response: Option<&'h StoredResponse>,
}

/// One change of one record, for the client scope that owns it.
struct Change<'h> {
    at: usize,
    /// The record's scope as the store keyed it.
    record: &'h Scope,
    state: Option<State<'h>>,
}

pub(super) fn check(history: &History, index: &Index) -> Vec<Violation> {
    let (timelines, losses) = timelines(history, index);
    let mut out = Vec::new();
    // One pair of buffers for every answer's candidate states.
    let (mut at_send, mut states) = (Vec::new(), Vec::new());
    for (i, entry) in index.responses_received(history) {
        let Event::ResponseReceived { req, response, .. } = &entry.event else { continue };
        let Some(need) = Need::of(response) else { continue };
        let Some((sent, _, Some(scope), fingerprint)) = index.sent(*req) else { continue };
        let lost = losses.iter().copied().filter(|&l| l < i).max();
        let changes = timelines[scope.get()].as_slice();
        let scope = index.scope(scope);
        candidates(changes, sent, i, lost, &mut at_send, &mut states);
        if states.iter().any(|s| need.met_by(s, fingerprint, response)) {
            continue;
        }
        let why = describe(&states, fingerprint);
        out.push(Violation::new(
            Property::StatusRules,
            vec![sent, i],
            format!(
                "{req} for {scope} was answered {}, but no state of its record while the request was out calls for that: {why}",
                need.name(response)
            ),
        ));
    }
    out
}

/// What an answer needs the record to have been.
#[derive(Clone, Copy)]
enum Need {
    /// 409: in progress for this request.
    InFlight,
    /// 422: created by another request.
    Mismatch,
    /// A success: completed for this request with exactly this response.
    Stored,
}

impl Need {
    fn of(response: &StoredResponse) -> Option<Need> {
        match response.status {
            409 => Some(Need::InFlight),
            422 => Some(Need::Mismatch),
            200..=299 => Some(Need::Stored),
            _ => None,
        }
    }

    fn met_by(self, state: &Option<State>, fingerprint: FingerprintId, response: &StoredResponse) -> bool {
        let Some(state) = state else { return false };
        let same = state.fingerprint.is_none_or(|f| f == fingerprint);
        let other = state.fingerprint.is_none_or(|f| f != fingerprint);
        match self {
            Need::InFlight => same && state.response.is_none(),
            Need::Mismatch => other,
            Need::Stored => same && state.response == Some(response),
        }
    }

    fn name(self, response: &StoredResponse) -> String {
        match self {
            Need::InFlight => "409 (in flight)".into(),
            Need::Mismatch => "422 (another request with this key)".into(),
            Need::Stored => format!("{} {}", response.status, response.body.lossy()),
        }
    }
}

/// Every record's changes, grouped by the client scope that owns the record,
/// and the indices of the crashes that lost unsynced writes.
fn timelines<'h>(history: &'h History, index: &Index<'h>) -> (Vec<Vec<Change<'h>>>, Vec<usize>) {
    let mut current: Vec<Option<(ScopeId, State<'h>)>> = vec![None; index.record_count()];
    let mut timelines: Vec<Vec<Change<'h>>> = std::iter::repeat_with(Vec::new).take(index.scope_count()).collect();
    let mut losses = Vec::new();
    for (i, entry) in history.entries.iter().enumerate() {
        let record = index.record(i);
        let now = record.and_then(|r| current[r.get()]);
        let next = match &entry.event {
            Event::Fault(Fault::UnsyncedWritesLost { .. }) => {
                losses.push(i);
                continue;
            }
            Event::Claimed { by, scope, .. } => {
                let fingerprint = claimer_fingerprint(*by, index);
                Some((scope, Some(State { fingerprint, response: None })))
            }
            Event::CompletionWritten { scope, response, .. } => {
                let fingerprint = now.and_then(|(_, s)| s.fingerprint);
                Some((scope, Some(State { fingerprint, response: Some(response) })))
            }
            Event::ClaimFound { scope, record, .. } => {
                // What the store showed; the request that created it may
                // be recorded later under real concurrency (stress).
                let fingerprint = match now {
                    Some((_, s)) => s.fingerprint,
                    None => index.fingerprint_id(&record.fingerprint),
                };
                let response = match &record.state {
                    RecordState::Completed { response, .. } => Some(response),
                    RecordState::InProgress { .. } => None,
                };
                Some((scope, Some(State { fingerprint, response })))
            }
            Event::Released { scope, .. } | Event::RecordSwept { scope, .. } => Some((scope, None)),
            _ => None,
        };
        let Some((scope, state)) = next else { continue };
        let (Some(record), Some(client)) = (record, index.client_scope_id(i)) else { continue };
        // A read shows the record's state to its holder's scope, not to
        // whoever read it; a write belongs to whom it was made for.
        let owner = match (&entry.event, now) {
            (Event::ClaimFound { .. }, Some((owner, _))) => owner,
            _ => client,
        };
        let unchanged = now.map(|(_, s)| Some(s)) == Some(state);
        current[record.get()] = state.map(|s| (owner, s));
        if !unchanged {
            timelines[owner.get()].push(Change { at: i, record: scope, state });
        }
    }
    (timelines, losses)
}

fn claimer_fingerprint(by: Origin, index: &Index) -> Option<FingerprintId> {
    index.request_fingerprint(by.request()?)
}

/// The states the scope's records may have had while a request was out
/// (`sent..=answered`), into `out`: each record's state at the send and
/// every later one; after a loss of unsynced writes, every state before it
/// as well. `at_send` is scratch space.
fn candidates<'h>(
    changes: &[Change<'h>],
    sent: usize,
    answered: usize,
    lost: Option<usize>,
    at_send: &mut Vec<(&'h Scope, Option<State<'h>>)>,
    out: &mut Vec<Option<State<'h>>>,
) {
    // Each record's state at the send, in record order (a scope has one
    // record, or a few under a server that keys records wrongly).
    at_send.clear();
    out.clear();
    for change in changes.iter().take_while(|c| c.at <= answered) {
        if change.at <= sent {
            match at_send.iter_mut().find(|(record, _)| *record == change.record) {
                Some((_, state)) => *state = change.state,
                None => at_send.push((change.record, change.state)),
            }
        }
        if change.at > sent || lost.is_some_and(|l| change.at <= l) {
            out.push(change.state);
        }
    }
    at_send.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.extend(at_send.iter().map(|(_, state)| *state));
    if out.is_empty() {
        out.push(None);
    }
}

fn describe(states: &[Option<State>], fingerprint: FingerprintId) -> String {
    let mut words: Vec<String> = Vec::new();
    for state in states {
        let word = match state {
            None => "absent".to_string(),
            Some(s) => {
                let other = if s.fingerprint.is_some_and(|f| f != fingerprint) { " by another request" } else { "" };
                match s.response {
                    None => format!("in progress{other}"),
                    Some(r) => format!("completed{other} with {} {}", r.status, r.body.lossy()),
                }
            }
        };
        if !words.contains(&word) {
            words.push(word);
        }
    }
    format!("it was {}", words.join(", then "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::*;
    use crate::history::Answer;
    use crate::ids::NodeId;

    fn check_story(s: &Story) -> Vec<Violation> {
        check(&s.history, &Index::new(&s.history))
    }

    fn fp(body: &str) -> String {
        request("acme", Some("k1"), "/orders", body).fingerprint().0.to_string()
    }

    /// A server that caches record states answers 409 for a record the
    /// store had completed before the retry was sent.
    #[test]
    fn a_409_for_a_completed_record_is_not_justified() {
        let mut s = Story::new();
        s.send(0, req(1, 1), request("acme", Some("k1"), "/orders", "{}"));
        s.claimed(by(1, 1), &scope(), &fp("{}"));
        s.completed(by(1, 1), &scope(), 1, ok("order"));
        s.received(0, req(1, 1), Answer::Executed, ok("order"));
        s.send(0, req(1, 2), request("acme", Some("k1"), "/orders", "{}"));
        let stale = s.received(0, req(1, 2), Answer::InFlight, StoredResponse::new(409, "busy"));
        let v = check_story(&s);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].events.last(), Some(&stale));
        assert!(v[0].explanation.contains("it was completed with 201 order"), "{}", v[0]);
    }

    #[test]
    fn answers_the_record_called_for_are_clean() {
        let mut s = Story::new();
        s.send(0, req(1, 1), request("acme", Some("k1"), "/orders", "{}"));
        s.send(1, req(2, 1), request("acme", Some("k1"), "/orders", "{}"));
        s.claimed(by(1, 1), &scope(), &fp("{}"));
        s.received(1, req(2, 1), Answer::InFlight, StoredResponse::new(409, "busy"));
        s.completed(by(1, 1), &scope(), 1, ok("order"));
        s.received(0, req(1, 1), Answer::Executed, ok("order"));
        s.send(2, req(3, 1), request("acme", Some("k1"), "/orders", r#"{"other":1}"#));
        s.received(2, req(3, 1), Answer::Mismatch, StoredResponse::new(422, "reused"));
        s.send(1, req(2, 2), request("acme", Some("k1"), "/orders", "{}"));
        s.received(1, req(2, 2), Answer::Replayed, ok("order"));
        assert!(check_story(&s).is_empty(), "{:?}", check_story(&s));
    }

    /// A replay after the record was swept, from a cache: nothing backs it.
    #[test]
    fn a_replay_after_a_sweep_is_not_justified() {
        let mut s = Story::new();
        s.send(0, req(1, 1), request("acme", Some("k1"), "/orders", "{}"));
        s.claimed(by(1, 1), &scope(), &fp("{}"));
        s.completed(by(1, 1), &scope(), 1, ok("order"));
        s.received(0, req(1, 1), Answer::Executed, ok("order"));
        let swept = Event::RecordSwept { scope: scope(), created_at: crate::SimTime(0), completed: true, as_of: None };
        s.at(NodeId::Sweeper, swept);
        s.send(0, req(2, 1), request("acme", Some("k1"), "/orders", "{}"));
        s.received(0, req(2, 1), Answer::Replayed, ok("order"));
        let v = check_story(&s);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].explanation.contains("it was absent"), "{}", v[0]);
    }

    /// After a crash lost unsynced writes, the record may be back in any
    /// earlier state: a 409 then is not flagged.
    #[test]
    fn lost_writes_make_earlier_states_possible() {
        let mut s = Story::new();
        s.send(0, req(1, 1), request("acme", Some("k1"), "/orders", "{}"));
        s.claimed(by(1, 1), &scope(), &fp("{}"));
        s.completed(by(1, 1), &scope(), 1, ok("order"));
        s.at(NodeId::Db, Event::Fault(Fault::UnsyncedWritesLost { count: 1 }));
        s.send(0, req(1, 2), request("acme", Some("k1"), "/orders", "{}"));
        s.received(0, req(1, 2), Answer::InFlight, StoredResponse::new(409, "busy"));
        assert!(check_story(&s).is_empty());
    }

    /// A record keyed by the key alone, created for globex: acme's success
    /// is backed by no record of acme's.
    #[test]
    fn another_callers_record_does_not_justify_an_answer() {
        let mut s = Story::new();
        let shared = Scope::new("*", "k1");
        s.send(0, req(1, 1), request("globex", Some("k1"), "/orders", "{}"));
        s.claimed(by(1, 1), &shared, &fp("{}"));
        s.completed(by(1, 1), &shared, 1, ok("globex order"));
        s.send(1, req(2, 1), request("acme", Some("k1"), "/orders", "{}"));
        s.received(1, req(2, 1), Answer::Replayed, ok("globex order"));
        let v = check_story(&s);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].explanation.contains("acme/k1"), "{}", v[0]);
    }
}
