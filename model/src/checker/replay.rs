//! Property 4: every response given for a completed key equals the stored
//! one, byte for byte, and a completed record never changes.

use super::Lookup;
use super::{Index, Property, RecordId, Violation};
use crate::history::{Answer, Event, History, Origin};
use crate::ids::Scope;
use crate::request::StoredResponse;

pub(super) fn check(history: &History, index: &Index) -> Vec<Violation> {
    // Per record: the stored response of its current lifetime, and where.
    let mut stored: Vec<Option<(&StoredResponse, usize)>> = vec![None; index.record_count()];
    // The record each request copy last touched: its answer came from it.
    let mut touched: Lookup<Origin, (RecordId, &Scope)> = crate::lookup::lookup(index.sends());
    let mut out = Vec::new();
    for (i, entry) in history.entries.iter().enumerate() {
        let record = index.record(i);
        if let (Some(record), Some(scope), Some(by @ Origin::Request { .. })) =
            (record, entry.event.scope(), entry.event.origin())
        {
            touched.insert(by, (record, scope));
        }
        match &entry.event {
            Event::CompletionWritten { scope, response, attempt, .. } => {
                let stored = &mut stored[record.expect("a completion names its record").get()];
                if let Some((_, first)) = stored {
                    out.push(Violation::new(
                        Property::ReplayFidelity,
                        vec![*first, i],
                        format!("completed record {scope} was changed by a second completion (attempt {attempt}); the one at #{first} stood"),
                    ));
                }
                *stored = Some((response, i));
            }
            Event::RecordSwept { .. } | Event::Released { .. } => {
                stored[record.expect("names its record").get()] = None;
            }
            Event::ResponseSent { req, copy, answer: Answer::Executed | Answer::Replayed, response, .. } => {
                let by = Origin::Request { req: *req, copy: *copy };
                let touched = touched.get(&by).copied().or_else(|| {
                    let client = index.request_scope(*req)?;
                    Some((index.record_of(client)?, client))
                });
                let Some((scope, (want, at))) = touched.and_then(|(r, s)| Some((s, stored[r.get()]?))) else {
                    continue;
                };
                if response != want {
                    out.push(Violation::new(
                        Property::ReplayFidelity,
                        vec![at, i],
                        format!(
                            "{req} for {scope} was answered {} {:?}, but the stored response is {} {:?}",
                            response.status, response.body, want.status, want.body
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::*;

    fn check_story(s: &Story) -> Vec<Violation> {
        check(&s.history, &Index::new(&s.history))
    }

    #[test]
    fn replays_equal_to_the_stored_response_are_clean() {
        let mut s = Story::new();
        s.send(0, req(1, 1), request("acme", Some("k1"), "/orders", "{}"));
        s.completed(by(1, 1), &scope(), 1, StoredResponse::new(500, "boom"));
        s.answered(req(1, 1), Answer::Executed, StoredResponse::new(500, "boom"));
        s.send(0, req(1, 2), request("acme", Some("k1"), "/orders", "{}"));
        s.answered(req(1, 2), Answer::Replayed, StoredResponse::new(500, "boom"));
        assert!(check_story(&s).is_empty());
    }

    #[test]
    fn a_replay_that_differs_by_one_byte_is_a_violation() {
        let mut s = Story::new();
        s.send(0, req(1, 1), request("acme", Some("k1"), "/orders", "{}"));
        let stored = s.completed(by(1, 1), &scope(), 1, ok("{\"id\":1}"));
        let bad = s.answered(req(1, 1), Answer::Replayed, ok("{\"id\":1} "));
        let v = check_story(&s);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].events, vec![stored, bad]);
    }

    #[test]
    fn a_second_completion_is_a_violation() {
        let mut s = Story::new();
        s.completed(by(1, 1), &scope(), 1, ok("a"));
        s.completed(by(1, 2), &scope(), 2, ok("b"));
        let v = check_story(&s);
        assert_eq!(v.len(), 1);
        assert!(v[0].explanation.contains("changed"));
    }
}
