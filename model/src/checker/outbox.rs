//! Property 9: outbox messages are published only after the completion that
//! staged them committed, and each is applied by the consumer exactly once
//! (by message id) by the end of the run. Since consumers dedup by id, a
//! completion that commits an id an earlier completion already committed
//! (a key executed again after its record was swept, under the old id)
//! has a message no consumer will apply: a violation at once.

use super::Lookup;
use super::{Index, Property, Violation};
use crate::history::{Event, History};
use crate::ids::MessageId;
use std::collections::BTreeMap;

pub(super) fn check(history: &History, index: &Index) -> Vec<Violation> {
    let mut staged: BTreeMap<&MessageId, usize> = BTreeMap::new();
    let mut applied: Lookup<&MessageId, usize> = crate::lookup::lookup(index.record_count());
    let mut out = Vec::new();
    // Completions, publishes and deliveries all name their record.
    for (i, entry) in index.record_entries(history) {
        match &entry.event {
            Event::CompletionWritten { outbox, scope, .. } => {
                for id in outbox {
                    if let Some(&first) = staged.get(id) {
                        out.push(Violation::new(
                            Property::Outbox,
                            vec![first, i],
                            format!(
                                "message {} of {scope} was committed again by a later completion; \
                                 consumers dedup by id, so the later one is never applied",
                                id.0
                            ),
                        ));
                    }
                    staged.entry(id).or_insert(i);
                }
            }
            Event::MessagePublished { id, scope } if !staged.contains_key(id) => out.push(Violation::new(
                Property::Outbox,
                vec![i],
                format!("message {} of {scope} was published before any completion committed it", id.0),
            )),
            Event::MessageConsumed { id, scope, applied: true } => {
                if let Some(first) = applied.insert(id, i) {
                    out.push(Violation::new(
                        Property::Outbox,
                        vec![first, i],
                        format!("message {} of {scope} was applied twice by the consumer", id.0),
                    ));
                }
            }
            _ => {}
        }
    }
    if history.end_at().is_some() {
        for (id, at) in staged {
            if !applied.contains_key(id) {
                out.push(Violation::new(
                    Property::Outbox,
                    vec![at],
                    format!("message {} was committed but never applied by the end of the run", id.0),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::*;
    use crate::ids::{Attempt, NodeId};

    fn id() -> MessageId {
        MessageId("m1".into())
    }

    fn commit(s: &mut Story) -> usize {
        let e = Event::CompletionWritten {
            by: by(1, 1),
            scope: scope(),
            attempt: Attempt(1),
            response: ok("x"),
            outbox: vec![id()],
        };
        s.at(NodeId::Db, e)
    }

    fn publish(s: &mut Story) -> usize {
        s.at(NodeId::Relay, Event::MessagePublished { id: id(), scope: scope() })
    }

    fn consume(s: &mut Story, applied: bool) -> usize {
        s.at(NodeId::Consumer, Event::MessageConsumed { id: id(), scope: scope(), applied })
    }

    #[test]
    fn commit_publish_consume_is_clean_even_with_redelivery() {
        let mut s = Story::new();
        commit(&mut s);
        publish(&mut s);
        publish(&mut s);
        consume(&mut s, true);
        consume(&mut s, false);
        s.end();
        assert!(check(&s.history, &Index::new(&s.history)).is_empty());
    }

    #[test]
    fn publishing_before_commit_is_a_violation() {
        let mut s = Story::new();
        let early = publish(&mut s);
        commit(&mut s);
        consume(&mut s, true);
        s.end();
        let v = check(&s.history, &Index::new(&s.history));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].events, vec![early]);
    }

    #[test]
    fn a_double_application_and_a_lost_message_are_violations() {
        let mut s = Story::new();
        commit(&mut s);
        publish(&mut s);
        consume(&mut s, true);
        consume(&mut s, true);
        let other = Event::CompletionWritten {
            by: by(2, 1),
            scope: scope(),
            attempt: Attempt(1),
            response: ok("y"),
            outbox: vec![MessageId("m2".into())],
        };
        s.at(NodeId::Db, other);
        s.end();
        let v = check(&s.history, &Index::new(&s.history));
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].explanation.contains("applied twice"));
        assert!(v[1].explanation.contains("never applied"));
    }

    #[test]
    fn a_second_completion_reusing_a_message_id_is_a_violation() {
        let mut s = Story::new();
        let first = commit(&mut s);
        publish(&mut s);
        consume(&mut s, true);
        let again = commit(&mut s);
        s.end();
        let v = check(&s.history, &Index::new(&s.history));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].events, vec![first, again]);
        assert!(v[0].explanation.contains("committed again"));
    }
}
