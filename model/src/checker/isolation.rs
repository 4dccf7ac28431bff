//! Property 6: caller A never receives caller B's stored response.
//!
//! Responses are compared by bytes: a response a server sends to caller A
//! that equals one stored by an execution for caller B, and none stored for
//! A, leaked across tenants.

use super::Lookup;
use super::{Index, Property, Violation};
use crate::history::{Answer, Event, History};
use crate::ids::{CallerId, DownstreamKey};
use crate::request::StoredResponse;
use std::collections::BTreeMap;

pub(super) fn check(history: &History, index: &Index) -> Vec<Violation> {
    let mut out = leaked_responses(history, index);
    out.extend(shared_effects(history, index));
    out.sort_by_key(|v| v.events.last().copied());
    out
}

/// A dependency call made for caller B that collapsed onto the effect the
/// dependency already performed for caller A (the downstream key was not
/// scoped by caller): B was told it was charged, with A's charge.
fn shared_effects(history: &History, index: &Index) -> Vec<Violation> {
    let mut effect_of: Lookup<&DownstreamKey, usize> = crate::lookup::lookup(index.record_count());
    let mut out = Vec::new();
    // Both the effect and the call name their record.
    for (i, entry) in index.record_entries(history) {
        match &entry.event {
            Event::DownstreamEffect { downstream_key, .. } => {
                effect_of.entry(downstream_key).or_insert(i);
            }
            Event::DownstreamCalled { downstream_key, .. } => {
                let Some(&effect) = effect_of.get(downstream_key) else { continue };
                let (Some(me), Some(owner)) = (index.client_scope(i), index.client_scope(effect)) else { continue };
                if me.caller != owner.caller {
                    out.push(Violation::new(
                        Property::Isolation,
                        vec![effect, i],
                        format!(
                            "a dependency call for {me} used the downstream key {} of {owner}'s effect at #{effect}: it collapsed onto the other caller's charge",
                            downstream_key.0
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

fn leaked_responses(history: &History, index: &Index) -> Vec<Violation> {
    // Inner maps in caller order: the first owner is the one reported.
    let mut stored: Lookup<&StoredResponse, BTreeMap<&CallerId, usize>> = crate::lookup::lookup(index.record_count());
    let mut out = Vec::new();
    for (i, entry) in history.entries.iter().enumerate() {
        match &entry.event {
            Event::CompletionWritten { by, scope, response, .. } => {
                // The reconciler completes for the request that held it.
                let caller = index.caller_of(*by).or(index.client_scope(i).map(|s| &s.caller)).unwrap_or(&scope.caller);
                stored.entry(response).or_default().entry(caller).or_insert(i);
            }
            Event::ResponseSent { req, answer: Answer::Executed | Answer::Replayed, response, .. } => {
                let Some((_, request)) = index.request(*req) else {
                    continue;
                };
                let Some(owners) = stored.get(response) else {
                    continue;
                };
                if owners.contains_key(&request.caller) {
                    continue;
                }
                let (owner, at) = owners.iter().next().expect("an entry is created with an owner");
                out.push(Violation::new(
                    Property::Isolation,
                    vec![*at, i],
                    format!(
                        "{req} of caller {} was sent the response stored for caller {} at #{at}",
                        request.caller.0, owner.0
                    ),
                ));
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
    use crate::ids::Scope;

    fn check_story(s: &Story) -> Vec<Violation> {
        check(&s.history, &Index::new(&s.history))
    }

    #[test]
    fn same_key_strings_for_two_callers_are_clean_when_scoped() {
        let mut s = Story::new();
        s.send(0, req(1, 1), request("acme", Some("k"), "/orders", "{}"));
        s.send(1, req(2, 1), request("globex", Some("k"), "/orders", "{}"));
        s.completed(by(1, 1), &Scope::new("acme", "k"), 1, ok("acme order"));
        s.completed(by(2, 1), &Scope::new("globex", "k"), 1, ok("globex order"));
        s.answered(req(1, 1), Answer::Executed, ok("acme order"));
        s.answered(req(2, 1), Answer::Executed, ok("globex order"));
        assert!(check_story(&s).is_empty());
    }

    #[test]
    fn a_response_stored_for_another_caller_is_a_violation() {
        let mut s = Story::new();
        s.send(0, req(1, 1), request("acme", Some("k"), "/orders", "{}"));
        s.send(1, req(2, 1), request("globex", Some("k"), "/orders", "{}"));
        let stored = s.completed(by(1, 1), &Scope::new("*", "k"), 1, ok("acme order"));
        let leak = s.answered(req(2, 1), Answer::Replayed, ok("acme order"));
        let v = check_story(&s);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].events, vec![stored, leak]);
        assert!(v[0].explanation.contains("caller globex"), "{}", v[0]);
    }
}
