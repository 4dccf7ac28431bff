//! Property 5: a missing key is 400, a mismatched fingerprint is always 422,
//! a live in-flight key is 409, and validation errors are not stored.
//!
//! Each answer is judged against the pure decision function applied to what
//! the server's own claim returned (and its clock at the time), so a server
//! that skips a comparison or misreads the record is caught.

use super::Lookup;
use super::{Index, Property, Violation};
use crate::decision::{decide_existing, Decision};
use crate::history::{Answer, Event, History, Origin};
use crate::ids::{RequestId, SimTime};
use crate::record::Record;
use crate::request::Request;

enum Looked<'h> {
    Owned,
    Found(&'h Record, SimTime),
}

pub(super) fn check(history: &History, index: &Index) -> Vec<Violation> {
    // Keyed by handling: a duplicate copy of one send is judged on its own.
    let mut claims: Lookup<(RequestId, u32), (usize, Looked)> = crate::lookup::lookup(index.sends());
    let mut stored_by: Lookup<(RequestId, u32), usize> = crate::lookup::lookup(index.sends());
    // The fingerprint the server computed for each copy: a protocol may
    // hash other fields than the canonical ones (`fingerprint_fields`), and
    // its records hold its own fingerprints. Whether it hashes the right
    // fields is judged by `answers.rs`, from the client's view.
    let mut received: Lookup<(RequestId, u32), &crate::Fingerprint> = crate::lookup::lookup(index.sends());
    let mut out = Vec::new();
    for (i, entry) in history.entries.iter().enumerate() {
        match &entry.event {
            Event::RequestReceived { req, copy, fingerprint } => {
                received.insert((*req, *copy), fingerprint);
            }
            Event::Claimed { by: Origin::Request { req, copy }, .. } => {
                claims.insert((*req, *copy), (i, Looked::Owned));
            }
            Event::ClaimFound { by: Origin::Request { req, copy }, record, as_of, .. } => {
                claims.insert((*req, *copy), (i, Looked::Found(record, *as_of)));
            }
            Event::CompletionWritten { by: Origin::Request { req, copy }, .. } => {
                stored_by.insert((*req, *copy), i);
            }
            Event::ResponseSent { req, copy, answer, response, .. } => {
                let Some((_, request)) = index.request(*req) else {
                    continue;
                };
                let canonical = || index.request_fingerprint(*req).map(|f| index.fingerprint(f));
                let Some(fingerprint) = received.get(&(*req, *copy)).copied().or_else(canonical) else {
                    continue;
                };
                let judged = judge(request, fingerprint, *answer, response.status, claims.get(&(*req, *copy)));
                if let Some((mut events, why)) = judged {
                    events.push(i);
                    out.push(Violation::new(Property::StatusRules, events, format!("{req}: {why}")));
                }
                if let (Answer::Invalid, Some(at)) = (answer, stored_by.get(&(*req, *copy))) {
                    out.push(Violation::new(
                        Property::StatusRules,
                        vec![*at, i],
                        format!("{req}: a validation error was stored at #{at}; a corrected retry with the same key is stuck"),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

/// Returns the claim event (if any) and the reason when the answer is wrong.
fn judge(
    request: &Request,
    fingerprint: &crate::Fingerprint,
    answer: Answer,
    status: u16,
    claim: Option<&(usize, Looked)>,
) -> Option<(Vec<usize>, String)> {
    let required = match answer {
        Answer::MissingKey => Some(400),
        Answer::Mismatch => Some(422),
        Answer::InFlight => Some(409),
        _ => None,
    };
    if let Some(code) = required.filter(|code| *code != status) {
        return Some((vec![], format!("answer {answer:?} must be {code}, was {status}")));
    }
    if request.key.is_none() {
        return (answer != Answer::MissingKey)
            .then(|| (vec![], format!("a request without a key was answered {answer:?} ({status}), not 400")));
    }
    if answer == Answer::MissingKey {
        return Some((vec![], "a request with a key was answered 400 missing-key".to_string()));
    }
    if answer == Answer::Unavailable {
        // A server that lost its store (or the reply) answers 503 whatever
        // the record says: it never saw the record.
        return None;
    }
    let (at, looked) = claim?;
    let why = match looked {
        Looked::Owned => match answer {
            Answer::Executed | Answer::Invalid | Answer::LeaseLost | Answer::Unavailable => return None,
            other => format!("its claim inserted the record, yet it was answered {other:?}"),
        },
        Looked::Found(record, as_of) => match (decide_existing(fingerprint, record, *as_of), answer) {
            (Decision::Mismatch, Answer::Mismatch)
            | (Decision::InFlight, Answer::InFlight)
            | (Decision::Replay(_), Answer::Replayed) => return None,
            (Decision::TakeOver { .. }, a) if !matches!(a, Answer::Mismatch | Answer::Replayed) => return None,
            (Decision::Mismatch, a) => {
                format!("the key was claimed with another fingerprint, yet it was answered {a:?} ({status}), not 422")
            }
            (want, a) => format!("the record it found called for {want:?}, yet it was answered {a:?} ({status})"),
        },
    };
    Some((vec![*at], why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::*;
    use crate::ids::{Attempt, NodeId, Scope};
    use crate::record::RecordState;
    use crate::request::StoredResponse;

    fn check_story(s: &Story) -> Vec<Violation> {
        check(&s.history, &Index::new(&s.history))
    }

    fn found(s: &mut Story, r: RequestId, fingerprint: &crate::Fingerprint, state: RecordState) -> usize {
        let record = Record { fingerprint: fingerprint.clone(), created_at: SimTime(0), state };
        s.at(
            NodeId::Db,
            Event::ClaimFound { by: Origin::Request { req: r, copy: 1 }, scope: scope(), record, as_of: SimTime(10) },
        )
    }

    fn completed_state() -> RecordState {
        RecordState::Completed { response: ok("first"), attempt: Attempt(1) }
    }

    #[test]
    fn correct_answers_are_clean() {
        let mut s = Story::new();
        let first = request("acme", Some("k1"), "/orders", r#"{"n":1}"#);
        let other = request("acme", Some("k1"), "/orders", r#"{"n":2}"#);
        s.send(0, req(1, 1), first.clone());
        s.send(0, req(2, 1), other);
        s.send(0, req(3, 1), request("acme", None, "/orders", "{}"));
        s.send(0, req(1, 2), first.clone());
        s.claimed(by(1, 1), &scope(), &first.fingerprint().0);
        s.answered(req(1, 1), Answer::Executed, ok("first"));
        found(&mut s, req(2, 1), &first.fingerprint(), completed_state());
        s.answered(req(2, 1), Answer::Mismatch, StoredResponse::new(422, "mismatch"));
        s.answered(req(3, 1), Answer::MissingKey, StoredResponse::new(400, "key required"));
        found(&mut s, req(1, 2), &first.fingerprint(), completed_state());
        s.answered(req(1, 2), Answer::Replayed, ok("first"));
        assert_eq!(check_story(&s), vec![]);
    }

    #[test]
    fn a_protocol_with_its_own_fingerprint_is_judged_by_it() {
        // The server hashes only the body: its records hold that hash. A
        // retry it received with the same hash is a replay, not a mismatch.
        let mut s = Story::new();
        let first = request("acme", Some("k1"), "/orders", r#"{"n":1}"#);
        let own = crate::Fingerprint("body-only-hash".into());
        s.send(0, req(1, 1), first.clone());
        s.at(NodeId::Server(0), Event::RequestReceived { req: req(1, 1), copy: 1, fingerprint: own.clone() });
        s.claimed(by(1, 1), &scope(), &own.0);
        s.answered(req(1, 1), Answer::Executed, ok("first"));
        s.send(0, req(1, 2), first);
        s.at(NodeId::Server(0), Event::RequestReceived { req: req(1, 2), copy: 1, fingerprint: own.clone() });
        found(&mut s, req(1, 2), &own, completed_state());
        s.answered(req(1, 2), Answer::Replayed, ok("first"));
        assert_eq!(check_story(&s), vec![]);
        // Without the server's own hash, the canonical one would call the
        // replay a mismatch: the check can fail.
        let bare: Vec<_> =
            s.history.entries.iter().filter(|e| !matches!(e.event, Event::RequestReceived { .. })).cloned().collect();
        let mut without = Story::new();
        without.history.entries = bare;
        assert_eq!(check_story(&without).len(), 1, "{:?}", check_story(&without));
    }

    #[test]
    fn a_replay_for_another_fingerprint_is_a_violation() {
        let mut s = Story::new();
        let first = request("acme", Some("k1"), "/orders", r#"{"n":1}"#);
        s.send(0, req(2, 1), request("acme", Some("k1"), "/orders", r#"{"n":2}"#));
        let claim = found(&mut s, req(2, 1), &first.fingerprint(), completed_state());
        let answer = s.answered(req(2, 1), Answer::Replayed, ok("first"));
        let v = check_story(&s);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].events, vec![claim, answer]);
        assert!(v[0].explanation.contains("not 422"), "{}", v[0]);
    }

    #[test]
    fn an_execution_while_the_lease_is_live_is_a_violation() {
        let mut s = Story::new();
        let first = request("acme", Some("k1"), "/orders", "{}");
        s.send(0, req(2, 1), first.clone());
        let live = RecordState::InProgress { attempt: Attempt(1), locked_until: SimTime(500), recovery_point: None };
        found(&mut s, req(2, 1), &first.fingerprint(), live);
        s.answered(req(2, 1), Answer::Executed, ok("again"));
        let v = check_story(&s);
        assert_eq!(v.len(), 1);
        assert!(v[0].explanation.contains("InFlight"), "{}", v[0]);
    }

    #[test]
    fn a_duplicate_copy_is_judged_by_its_own_claim() {
        let mut s = Story::new();
        let r = request("acme", Some("k1"), "/orders", "{}");
        s.send(0, req(1, 1), r.clone());
        s.claimed(by(1, 1), &scope(), &r.fingerprint().0);
        let live = RecordState::InProgress { attempt: Attempt(1), locked_until: SimTime(500), recovery_point: None };
        let record = Record { fingerprint: r.fingerprint(), created_at: SimTime(0), state: live };
        let copy2 = Origin::Request { req: req(1, 1), copy: 2 };
        s.at(NodeId::Db, Event::ClaimFound { by: copy2, scope: scope(), record, as_of: SimTime(10) });
        s.at(
            NodeId::Server(1),
            Event::ResponseSent {
                req: req(1, 1),
                copy: 2,
                answer: Answer::InFlight,
                response: StoredResponse::new(409, ""),
                retry_after_ms: None,
            },
        );
        s.answered(req(1, 1), Answer::Executed, ok("x"));
        // A server whose claim reply was lost answers 503: never a violation.
        s.at(
            NodeId::Server(1),
            Event::ResponseSent {
                req: req(1, 1),
                copy: 2,
                answer: Answer::Unavailable,
                response: StoredResponse::new(503, ""),
                retry_after_ms: None,
            },
        );
        assert_eq!(check_story(&s), vec![]);
    }

    #[test]
    fn a_keyless_request_must_be_400() {
        let mut s = Story::new();
        s.send(0, req(1, 1), request("acme", None, "/orders", "{}"));
        s.answered(req(1, 1), Answer::Executed, ok("x"));
        s.send(0, req(2, 1), request("acme", None, "/orders", "{}"));
        s.answered(req(2, 1), Answer::MissingKey, StoredResponse::new(404, "x"));
        let v = check_story(&s);
        assert_eq!(v.len(), 2, "{v:?}");
    }

    #[test]
    fn a_stored_validation_error_is_a_violation() {
        let mut s = Story::new();
        let bad = request("acme", Some("k1"), "/orders", r#"{"n":-1}"#);
        s.send(0, req(1, 1), bad.clone());
        s.claimed(by(1, 1), &Scope::new("acme", "k1"), &bad.fingerprint().0);
        let stored = s.completed(by(1, 1), &scope(), 1, StoredResponse::new(400, "invalid"));
        let answer = s.answered(req(1, 1), Answer::Invalid, StoredResponse::new(400, "invalid"));
        let v = check_story(&s);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].events, vec![stored, answer]);
        assert!(v[0].explanation.contains("validation error was stored"));
    }
}
