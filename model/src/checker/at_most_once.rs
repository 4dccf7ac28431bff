//! Property 1: at most one effect per `(caller, key)`.
//!
//! Counts local effect rows and distinct downstream effects (the dependency
//! already dedups by downstream key, so a second effect means a second key).
//! A legitimate sweep starts a new record lifetime; early sweeps are the
//! expiry checker's business.

use super::{Index, Property, Violation};
use crate::history::{Event, History};

#[derive(Clone, Default)]
struct Seen {
    local: Option<usize>,
    downstream: Option<usize>,
}

/// Effects are counted per scope as the client sent it (see [`Index`]), so
/// a record keyed by more than `(caller, key)` cannot split one key's
/// effects over several records.
pub(super) fn check(history: &History, index: &Index) -> Vec<Violation> {
    let mut seen: Vec<Seen> = vec![Seen::default(); index.scope_count()];
    let mut out = Vec::new();
    for (i, entry) in index.record_entries(history) {
        let Some(client) = index.client_scope_id(i) else { continue };
        let scope = index.scope(client);
        let seen = &mut seen[client.get()];
        match &entry.event {
            Event::LocalEffectCommitted { attempt, effect_id, .. } => {
                let slot = &mut seen.local;
                match slot {
                    Some(first) => out.push(Violation::new(
                        Property::AtMostOnce,
                        vec![*first, i],
                        format!("{scope} got a second local effect ({effect_id}, attempt {attempt}) after the one at #{first}"),
                    )),
                    None => *slot = Some(i),
                }
            }
            Event::DownstreamEffect { downstream_key, .. } => {
                let slot = &mut seen.downstream;
                match slot {
                    Some(first) => out.push(Violation::new(
                        Property::AtMostOnce,
                        vec![*first, i],
                        format!(
                            "{scope} got a second downstream effect (key {}) after the one at #{first}",
                            downstream_key.0
                        ),
                    )),
                    None => *slot = Some(i),
                }
            }
            Event::RecordSwept { .. } => *seen = Seen::default(),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::*;
    use crate::ids::{Attempt, DownstreamKey, NodeId, SimTime};

    fn local(s: &mut Story, attempt: u32, id: &str) -> usize {
        let e = Event::LocalEffectCommitted {
            by: by(1, 1),
            scope: scope(),
            attempt: Attempt(attempt),
            effect_id: id.into(),
        };
        s.at(NodeId::Db, e)
    }

    fn downstream(s: &mut Story, key: &str) -> usize {
        s.at(NodeId::Downstream, Event::DownstreamEffect { scope: scope(), downstream_key: DownstreamKey(key.into()) })
    }

    #[test]
    fn one_effect_of_each_kind_is_clean() {
        let mut s = Story::new();
        local(&mut s, 1, "o1");
        downstream(&mut s, "dk");
        assert!(check(&s.history, &Index::new(&s.history)).is_empty());
    }

    #[test]
    fn a_second_local_effect_is_a_violation() {
        let mut s = Story::new();
        let first = local(&mut s, 1, "o1");
        let second = local(&mut s, 2, "o2");
        let v = check(&s.history, &Index::new(&s.history));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].events, vec![first, second]);
        assert!(v[0].explanation.contains("second local effect"), "{}", v[0]);
    }

    #[test]
    fn a_second_downstream_key_is_a_violation() {
        let mut s = Story::new();
        downstream(&mut s, "dk-a1");
        downstream(&mut s, "dk-a2");
        let v = check(&s.history, &Index::new(&s.history));
        assert_eq!(v.len(), 1);
        assert!(v[0].explanation.contains("dk-a2"));
    }

    #[test]
    fn a_sweep_starts_a_new_lifetime() {
        let mut s = Story::new();
        local(&mut s, 1, "o1");
        s.at(
            NodeId::Sweeper,
            Event::RecordSwept { scope: scope(), created_at: SimTime(0), completed: true, as_of: None },
        );
        local(&mut s, 1, "o2");
        assert!(check(&s.history, &Index::new(&s.history)).is_empty());
    }

    #[test]
    fn scopes_are_counted_separately() {
        let mut s = Story::new();
        local(&mut s, 1, "o1");
        let other = crate::Scope::new("other", "k1");
        s.at(
            NodeId::Db,
            Event::LocalEffectCommitted { by: by(2, 1), scope: other, attempt: Attempt(1), effect_id: "x".into() },
        );
        assert!(check(&s.history, &Index::new(&s.history)).is_empty());
    }
}
