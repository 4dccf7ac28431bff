//! Property 9: outbox messages are published only after the completion that
//! staged them committed, and each is applied by the consumer exactly once
//! (by message id) by the end of the run. Since consumers dedup by id, a
//! completion that commits an id an earlier completion already committed
//! (a key executed again after its record was swept, under the old id)
//! has a message no consumer will apply: a violation at once. Messages
//! are committed by a completion, or queued on their own
//! ([`Event::OutboxStaged`]) by a protocol that writes its outbox row
//! after the completion; a completion that answered a message-sending
//! request with a success must see its message committed by the end of
//! the run, or the message was promised and lost.

use super::Lookup;
use super::{Index, Property, Violation};
use crate::history::{Event, History, Origin};
use crate::ids::MessageId;
use crate::request::Effects;
use std::collections::BTreeMap;

/// Completions with a success for a request whose endpoint sends a
/// message (the request that executed, or for a background completion the
/// one that created the record), and whether a message of the record's
/// lifetime was committed since.
struct Promises<'i, 'h> {
    index: &'i Index<'h>,
    /// Per record: whether its creator's endpoint sends a message.
    creator: Vec<Option<bool>>,
    /// Per record: the success that promised a message and is still owed one.
    owed: Vec<Option<usize>>,
}

impl<'i, 'h> Promises<'i, 'h> {
    fn new(index: &'i Index<'h>) -> Self {
        Promises { index, creator: vec![None; index.record_count()], owed: vec![None; index.record_count()] }
    }

    fn sends_message(&self, by: &Origin) -> Option<bool> {
        let (_, request, _, _) = self.index.sent(by.request()?)?;
        Some(Effects::of_path(&request.path).message)
    }

    fn observe(&mut self, i: usize, event: &Event) {
        let Some(record) = self.index.record(i) else { return };
        let r = record.get();
        match event {
            Event::Claimed { by, .. } => self.creator[r] = self.sends_message(by).or(self.creator[r]),
            Event::CompletionWritten { by, response, outbox, .. } => {
                let promised = self.sends_message(by).or(self.creator[r]).unwrap_or(false);
                let success = (200..300).contains(&response.status);
                self.owed[r] = (promised && success && outbox.is_empty()).then_some(i);
            }
            Event::OutboxStaged { outbox, .. } if !outbox.is_empty() => self.owed[r] = None,
            Event::RecordSwept { .. } => self.owed[r] = None,
            _ => {}
        }
    }

    /// The promises still owed at the end of the run: lost messages.
    fn lost(self, history: &History) -> impl Iterator<Item = Violation> + '_ {
        self.owed.into_iter().flatten().map(|i| {
            let scope = history.entries[i].event.scope().expect("a completion names its record");
            Violation::new(
                Property::Outbox,
                vec![i],
                format!("{scope} was completed with a success that sends a message, but no message of it was ever committed: the message is lost"),
            )
        })
    }
}

pub(super) fn check(history: &History, index: &Index) -> Vec<Violation> {
    let mut staged: BTreeMap<&MessageId, usize> = BTreeMap::new();
    let mut applied: Lookup<&MessageId, usize> = crate::lookup::lookup(index.record_count());
    let mut promises = Promises::new(index);
    let mut out = Vec::new();
    // Completions, publishes and deliveries all name their record.
    for (i, entry) in index.record_entries(history) {
        promises.observe(i, &entry.event);
        match &entry.event {
            Event::CompletionWritten { outbox, scope, .. } | Event::OutboxStaged { outbox, scope, .. } => {
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
        out.extend(promises.lost(history));
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

    /// A checkout sent, claimed and completed with a success and no message.
    fn checkout_completed_without_its_message(s: &mut Story) -> usize {
        s.send(0, req(1, 1), request("acme", Some("k1"), "/checkout", r#"{"amount":5}"#));
        s.claimed(by(1, 1), &scope(), "f");
        s.completed(by(1, 1), &scope(), 1, ok("x"))
    }

    #[test]
    fn a_success_that_sends_a_message_without_one_committed_is_a_lost_message() {
        let mut s = Story::new();
        let completion = checkout_completed_without_its_message(&mut s);
        s.end();
        let v = check(&s.history, &Index::new(&s.history));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].events, vec![completion]);
        assert!(v[0].explanation.contains("message is lost"), "{}", v[0]);
    }

    #[test]
    fn a_message_queued_on_its_own_after_the_completion_pays_the_debt() {
        let mut s = Story::new();
        checkout_completed_without_its_message(&mut s);
        let staged = Event::OutboxStaged { by: by(1, 1), scope: scope(), attempt: Attempt(1), outbox: vec![id()] };
        s.at(NodeId::Db, staged);
        publish(&mut s);
        consume(&mut s, true);
        s.end();
        let v = check(&s.history, &Index::new(&s.history));
        assert!(v.is_empty(), "{v:?}");
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
