//! Probes: store operations the correct protocol never asks for, sent by an
//! adversarial second service (a takeover while the lease is live, a
//! completion of a record that is not in progress, ...). Each is chosen
//! from the record as the store itself just returned it, so the reference
//! model's answer is known: a refusal that changes nothing. A store that
//! answers otherwise breaks its contract (property `store-contract`),
//! whether or not the protocol under test would ever ask.

use crate::fingerprint::Fingerprint;
use crate::ids::{Attempt, Scope, SimTime};
use crate::record::{Claim, Completion, Record, RecordState, Takeover, WriteOutcome};
use crate::reference::RefStore;
use crate::request::StoredResponse;
use serde::{Deserialize, Serialize};

/// One adversarial store operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probe {
    /// A takeover of an `in_progress` record, as of a moment before its
    /// lease ends.
    TakeOverLive {
        /// The attempt that holds the record.
        expected: Attempt,
        /// The moment asked as of: before `locked_until`.
        now: SimTime,
        /// The lease asked for.
        lease_ms: u64,
    },
    /// A claim of an `in_progress` record with a live lease: it must find
    /// the record and leave it (and its lease) as it is.
    ClaimLive {
        /// The request fingerprint claimed with: the record's own.
        fingerprint: Fingerprint,
        /// The moment asked as of.
        now: SimTime,
        /// The lease asked for.
        lease_ms: u64,
    },
    /// A completion by an attempt that does not hold the record: the
    /// holder's predecessor, the attempt of a completed record, or any
    /// attempt when there is no record.
    CompleteNotHeld {
        /// The attempt written as.
        attempt: Attempt,
    },
    /// A release by an attempt that does not hold the record.
    ReleaseNotHeld {
        /// The attempt written as.
        attempt: Attempt,
    },
}

/// A probe and what the store did with it, as the history records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probed {
    /// The record.
    pub scope: Scope,
    /// The record as the store read it just before.
    pub before: Option<Record>,
    /// The operation.
    pub probe: Probe,
    /// The store's answer.
    pub answer: ProbeAnswer,
    /// The record as the store read it just after.
    pub after: Option<Record>,
}

/// What the store answered a probe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeAnswer {
    /// A claim's answer.
    Claim(Claim),
    /// A takeover's answer.
    Takeover(Takeover),
    /// A write's answer.
    Write(WriteOutcome),
}

impl Probe {
    /// The probe to send for the record as read (`pick` chooses among the
    /// ones that fit it), `lease_ms` being the lease a takeover or claim
    /// asks for. Every probe chosen is one the reference model refuses
    /// without a change.
    pub fn choose(record: Option<&Record>, pick: u64, lease_ms: u64) -> Probe {
        let Some(record) = record else {
            let attempt = Attempt(1 + (pick % 3) as u32);
            return match pick % 2 {
                0 => Probe::CompleteNotHeld { attempt },
                _ => Probe::ReleaseNotHeld { attempt },
            };
        };
        match record.state {
            RecordState::InProgress { attempt, locked_until, .. } => {
                // One millisecond before the lease ends: still live.
                let now = SimTime(locked_until.0.saturating_sub(1));
                let stale = Attempt(attempt.0.saturating_sub(1).max(1));
                match (pick % 3, stale == attempt) {
                    (0, _) => Probe::TakeOverLive { expected: attempt, now, lease_ms },
                    (1, _) | (_, true) => Probe::ClaimLive { fingerprint: record.fingerprint.clone(), now, lease_ms },
                    _ => Probe::CompleteNotHeld { attempt: stale },
                }
            }
            RecordState::Completed { attempt, .. } => match pick % 2 {
                0 => Probe::CompleteNotHeld { attempt },
                _ => Probe::ReleaseNotHeld { attempt },
            },
        }
    }

    /// What the reference model answers this probe on `before` (the record
    /// as the store returned it), and the record afterwards.
    pub fn expected(&self, scope: &Scope, before: Option<&Record>) -> (ProbeAnswer, Option<Record>) {
        let mut model = RefStore::new();
        if let Some(record) = before {
            model.put(scope, record.clone());
        }
        let answer = match self {
            Probe::TakeOverLive { expected, now, lease_ms } => {
                ProbeAnswer::Takeover(model.take_over(scope, *expected, *now, *lease_ms))
            }
            Probe::ClaimLive { fingerprint, now, lease_ms } => {
                ProbeAnswer::Claim(model.claim(scope, fingerprint, *now, *lease_ms))
            }
            Probe::CompleteNotHeld { attempt } => {
                ProbeAnswer::Write(model.complete(scope, *attempt, &Probe::completion()))
            }
            Probe::ReleaseNotHeld { attempt } => ProbeAnswer::Write(model.release(scope, *attempt)),
        };
        (answer, model.read(scope))
    }

    /// The completion a probe writes: one no execution would store.
    pub fn completion() -> Completion {
        Completion {
            response: StoredResponse::new(299, r#"{"written_by":"a second service"}"#),
            local_effect: None,
            outbox: Vec::new(),
        }
    }

    /// A few words for a story.
    pub fn describe(&self) -> String {
        match self {
            Probe::TakeOverLive { expected, now, .. } => {
                format!("asks to take over attempt {expected} as of {now}, before its lease ends")
            }
            Probe::ClaimLive { now, .. } => format!("claims it again as of {now}, while its lease is live"),
            Probe::CompleteNotHeld { attempt } => format!("completes it as attempt {attempt}, which does not hold it"),
            Probe::ReleaseNotHeld { attempt } => format!("releases it as attempt {attempt}, which does not hold it"),
        }
    }
}

impl ProbeAnswer {
    /// A few words for a story.
    pub fn describe(&self) -> String {
        match self {
            ProbeAnswer::Claim(Claim::Owned(a)) => format!("owned by attempt {a}"),
            ProbeAnswer::Claim(Claim::Existing(_)) => "found".into(),
            ProbeAnswer::Takeover(Takeover::Granted(a)) => format!("granted attempt {a}"),
            ProbeAnswer::Takeover(Takeover::Refused(_)) => "refused".into(),
            ProbeAnswer::Write(WriteOutcome::Applied) => "applied".into(),
            ProbeAnswer::Write(WriteOutcome::Fenced) => "fenced".into(),
        }
    }
}

/// True when the store's answer is the model's: the same kind of answer
/// (the record a refusal returns is not compared: stores return it as
/// they read it) and the same record afterwards.
pub fn conforms(expected: &(ProbeAnswer, Option<Record>), answer: &ProbeAnswer, after: Option<&Record>) -> bool {
    let same_kind = match (&expected.0, answer) {
        (ProbeAnswer::Takeover(Takeover::Refused(_)), ProbeAnswer::Takeover(Takeover::Refused(_))) => true,
        (ProbeAnswer::Claim(Claim::Existing(_)), ProbeAnswer::Claim(Claim::Existing(_))) => true,
        (a, b) => a == b,
    };
    same_kind && expected.1.as_ref() == after
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_progress(attempt: u32, locked_until: u64) -> Record {
        let state = RecordState::InProgress {
            attempt: Attempt(attempt),
            locked_until: SimTime(locked_until),
            recovery_point: None,
        };
        Record { fingerprint: Fingerprint::of("POST", "/orders", b"{}"), created_at: SimTime(0), state }
    }

    #[test]
    fn every_chosen_probe_is_refused_by_the_model_without_a_change() {
        let scope = Scope::new("acme", "k");
        let completed = Record {
            state: RecordState::Completed { response: StoredResponse::new(201, "{}"), attempt: Attempt(2) },
            ..in_progress(2, 0)
        };
        for record in [None, Some(in_progress(1, 1_000)), Some(in_progress(3, 5_000)), Some(completed)] {
            for pick in 0..6 {
                let probe = Probe::choose(record.as_ref(), pick, 1_000);
                let (answer, after) = probe.expected(&scope, record.as_ref());
                assert_eq!(after, record, "{probe:?} changed the record");
                let refused = matches!(
                    answer,
                    ProbeAnswer::Write(WriteOutcome::Fenced)
                        | ProbeAnswer::Takeover(Takeover::Refused(_))
                        | ProbeAnswer::Claim(Claim::Existing(_))
                );
                assert!(refused, "{probe:?} on {record:?}: {answer:?}");
            }
        }
    }

    #[test]
    fn a_granted_live_takeover_does_not_conform() {
        let scope = Scope::new("acme", "k");
        let before = in_progress(1, 1_000);
        let probe = Probe::choose(Some(&before), 0, 1_000);
        let expected = probe.expected(&scope, Some(&before));
        let granted = in_progress(2, 1_999);
        assert!(!conforms(&expected, &ProbeAnswer::Takeover(Takeover::Granted(Attempt(2))), Some(&granted)));
        assert!(conforms(&expected, &ProbeAnswer::Takeover(Takeover::Refused(None)), Some(&before)));
    }
}
