//! [`Ledger`]: the payment provider's books, which every environment's
//! dependency keeps (the simulator's, the stress mode's, the explorer's):
//! one charge per downstream key, and the events that say what the
//! provider received and did. Judged from these events, a double charge
//! is what the provider saw, not what the protocol meant.

use crate::ChargeAnswer;
use idemsim_model::history::Origin;
use idemsim_model::{Attempt, DownstreamKey, Event, NodeId, Scope};
use std::collections::BTreeMap;

/// What the provider decided for each downstream key it has seen: a charge
/// (its id) or a decline. A key's first decision is its answer for good.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    decided: BTreeMap<DownstreamKey, Option<String>>,
}

/// What the provider decided for a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Charged: the charge's id.
    Charged(String),
    /// Declined for good (402).
    Declined,
}

impl From<Decision> for ChargeAnswer {
    fn from(decision: Decision) -> ChargeAnswer {
        match decision {
            Decision::Charged(id) => ChargeAnswer::Charged(id),
            Decision::Declined => ChargeAnswer::Declined,
        }
    }
}

impl Ledger {
    /// A call as the provider received it: the event every call records
    /// first.
    pub fn received(by: Origin, from: NodeId, scope: &Scope, attempt: Attempt, key: &DownstreamKey) -> Event {
        Event::DownstreamCalled { by, from, scope: scope.clone(), attempt, downstream_key: key.clone() }
    }

    /// What was decided for `key`, if anything was.
    pub fn decided(&self, key: &DownstreamKey) -> Option<Decision> {
        self.decided.get(key).map(|charge| match charge {
            Some(id) => Decision::Charged(id.clone()),
            None => Decision::Declined,
        })
    }

    /// Charges `key` for `scope` unless a decision exists: the charge's id
    /// (`ch_N`, numbered by the keys decided so far), and for a new charge
    /// the effect event to record. A declined key stays declined.
    pub fn charge(&mut self, scope: &Scope, key: &DownstreamKey) -> (Decision, Option<Event>) {
        if let Some(answer) = self.decided(key) {
            return (answer, None);
        }
        let id = format!("ch_{}", self.decided.len() + 1);
        self.decided.insert(key.clone(), Some(id.clone()));
        let effect = Event::DownstreamEffect { scope: scope.clone(), downstream_key: key.clone() };
        (Decision::Charged(id), Some(effect))
    }

    /// Declines `key` for good, unless it was decided already.
    pub fn decline(&mut self, key: &DownstreamKey) {
        self.decided.entry(key.clone()).or_insert(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idemsim_model::{CallerId, IdempotencyKey};

    #[test]
    fn a_key_is_charged_once_and_a_decline_is_for_good() {
        let scope = Scope { caller: CallerId("acme".into()), key: IdempotencyKey("k".into()) };
        let (a, b) = (DownstreamKey("a".into()), DownstreamKey("b".into()));
        let mut ledger = Ledger::default();
        let (first, effect) = ledger.charge(&scope, &a);
        assert_eq!((first.clone(), effect.is_some()), (Decision::Charged("ch_1".into()), true));
        assert_eq!(ledger.charge(&scope, &a), (first, None));
        ledger.decline(&b);
        assert_eq!(ledger.charge(&scope, &b), (Decision::Declined, None));
        assert_eq!(ledger.charge(&scope, &DownstreamKey("c".into())).0, Decision::Charged("ch_3".into()));
    }
}
