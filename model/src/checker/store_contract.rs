//! Property `store-contract`: every answer the store gave a probe (an
//! operation the protocol never asks for, sent by a second service; see
//! `probe.rs`) is the reference model's answer for the record as the store
//! itself returned it just before, and leaves the record as the model
//! does. A takeover granted while the lease is live, a claim that moves a
//! live lease, a completion or release accepted from an attempt that does
//! not hold the record: each is a store bug whether or not the protocol
//! under test would ever ask.

use super::{Property, Violation};
use crate::history::{Event, History};
use crate::probe::{conforms, Probed};
use crate::record::{Record, RecordState};

pub(super) fn check(history: &History) -> Vec<Violation> {
    let mut out = Vec::new();
    for (i, entry) in history.entries.iter().enumerate() {
        let Event::StoreProbed(probed) = &entry.event else { continue };
        let Probed { scope, before, probe, answer, after } = &**probed;
        let expected = probe.expected(scope, before.as_ref());
        if conforms(&expected, answer, after.as_ref()) {
            continue;
        }
        out.push(Violation::new(
            Property::StoreContract,
            vec![i],
            format!(
                "the store broke its contract on {scope}: a second service {} ({}); the store answered {} and left \
                 it {}, where the model answers {} and leaves it {}",
                probe.describe(),
                show(before.as_ref()),
                answer.describe(),
                show(after.as_ref()),
                expected.0.describe(),
                show(expected.1.as_ref()),
            ),
        ));
    }
    out
}

fn show(record: Option<&Record>) -> String {
    match record.map(|r| &r.state) {
        None => "absent".into(),
        Some(RecordState::InProgress { attempt, locked_until, .. }) => {
            format!("in progress under attempt {attempt} until {locked_until}")
        }
        Some(RecordState::Completed { attempt, response }) => {
            format!("completed by attempt {attempt} with {}", response.status)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::*;
    use crate::ids::{Attempt, NodeId, SimTime};
    use crate::probe::{Probe, ProbeAnswer};
    use crate::{Fingerprint, Takeover};

    fn live() -> Record {
        let state = RecordState::InProgress { attempt: Attempt(1), locked_until: SimTime(1_000), recovery_point: None };
        Record { fingerprint: Fingerprint::of("POST", "/orders", b"{}"), created_at: SimTime(0), state }
    }

    fn probed(answer: ProbeAnswer, after: Record) -> Vec<Violation> {
        let mut s = Story::new();
        let probe = Probe::TakeOverLive { expected: Attempt(1), now: SimTime(999), lease_ms: 1_000 };
        let event = Event::StoreProbed(Box::new(Probed {
            scope: scope(),
            before: Some(live()),
            probe,
            answer,
            after: Some(after),
        }));
        s.at(NodeId::Db, event);
        s.end();
        check(&s.history)
    }

    #[test]
    fn a_refused_live_takeover_conforms_and_a_granted_one_does_not() {
        assert!(probed(ProbeAnswer::Takeover(Takeover::Refused(Some(live()))), live()).is_empty());
        let mut taken = live();
        taken.state =
            RecordState::InProgress { attempt: Attempt(2), locked_until: SimTime(1_999), recovery_point: None };
        let v = probed(ProbeAnswer::Takeover(Takeover::Granted(Attempt(2))), taken);
        assert_eq!(v.len(), 1);
        assert!(v[0].explanation.contains("before its lease ends") && v[0].explanation.contains("granted attempt #2"));
    }

    #[test]
    fn a_refusal_that_changed_the_record_does_not_conform() {
        let mut moved = live();
        moved.state =
            RecordState::InProgress { attempt: Attempt(1), locked_until: SimTime(1_999), recovery_point: None };
        assert_eq!(probed(ProbeAnswer::Takeover(Takeover::Refused(None)), moved).len(), 1);
    }
}
