//! The replay rules of docs/protocol.md §3 as one pure function.

use crate::fingerprint::Fingerprint;
use crate::ids::{Attempt, SimTime};
use crate::record::{Claim, RecordState, RecoveryPoint};
use crate::request::StoredResponse;
use serde::{Deserialize, Serialize};

/// What a server must do with a request, given what its claim returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The endpoint requires a key and the request has none: 400.
    MissingKey,
    /// Same key, different fingerprint: 422, never a silent success.
    Mismatch,
    /// Same key, an execution holds a live lease: 409, retry later.
    InFlight,
    /// Same key, completed: the stored response, byte for byte.
    Replay(StoredResponse),
    /// The claim inserted the record: execute holding this attempt.
    Execute {
        /// The attempt the claim granted.
        attempt: Attempt,
    },
    /// The lease expired: take the record over, fenced on this attempt, and
    /// resume from the recovery point if there is one.
    TakeOver {
        /// The attempt the takeover is conditional on.
        expected: Attempt,
        /// Where the interrupted execution got to.
        recovery_point: Option<RecoveryPoint>,
    },
}

impl Decision {
    /// The status answered without executing, for the three rejections.
    pub fn rejection_status(&self) -> Option<u16> {
        match self {
            Decision::MissingKey => Some(400),
            Decision::Mismatch => Some(422),
            Decision::InFlight => Some(409),
            _ => None,
        }
    }
}

/// Decides what to do with a request.
///
/// `claim` is the result of the atomic claim, or `None` when the request had
/// no key (no claim is made then). `now` is the deciding server's clock. The
/// fingerprint is compared first, so a mismatch is 422 whatever the state.
pub fn decide(fingerprint: &Fingerprint, claim: Option<&Claim>, now: SimTime) -> Decision {
    let Some(claim) = claim else {
        return Decision::MissingKey;
    };
    match claim {
        Claim::Owned(attempt) => Decision::Execute { attempt: *attempt },
        Claim::Existing(record) => decide_existing(fingerprint, record, now),
    }
}

/// [`decide`] for a claim that found `record` (`Claim::Existing`), without
/// a claim to hold it.
pub fn decide_existing(fingerprint: &Fingerprint, record: &crate::record::Record, now: SimTime) -> Decision {
    if record.fingerprint != *fingerprint {
        return Decision::Mismatch;
    }
    match &record.state {
        RecordState::Completed { response, .. } => Decision::Replay(response.clone()),
        RecordState::InProgress { locked_until, .. } if now < *locked_until => Decision::InFlight,
        RecordState::InProgress { attempt, recovery_point, .. } => {
            Decision::TakeOver { expected: *attempt, recovery_point: recovery_point.clone() }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;

    fn fp(s: &str) -> Fingerprint {
        Fingerprint(s.into())
    }

    fn in_progress(fpr: &str, attempt: u32, locked_until: u64, rp: bool) -> Claim {
        Claim::Existing(Record {
            fingerprint: fp(fpr),
            created_at: SimTime(0),
            state: RecordState::InProgress {
                attempt: Attempt(attempt),
                locked_until: SimTime(locked_until),
                recovery_point: rp.then(|| RecoveryPoint {
                    downstream_key: crate::DownstreamKey("dk".into()),
                    data: crate::Bytes::text("{}"),
                }),
            },
        })
    }

    fn completed(fpr: &str, status: u16) -> Claim {
        Claim::Existing(Record {
            fingerprint: fp(fpr),
            created_at: SimTime(0),
            state: RecordState::Completed { response: StoredResponse::new(status, "stored"), attempt: Attempt(2) },
        })
    }

    #[test]
    fn replay_table() {
        let rp =
            Some(RecoveryPoint { downstream_key: crate::DownstreamKey("dk".into()), data: crate::Bytes::text("{}") });
        // (request fingerprint, claim, now, expected)
        let table: Vec<(&str, Option<Claim>, u64, Decision)> = vec![
            ("a", None, 0, Decision::MissingKey),
            ("a", Some(Claim::Owned(Attempt::FIRST)), 0, Decision::Execute { attempt: Attempt::FIRST }),
            // A claim after a release continues the attempt count.
            ("a", Some(Claim::Owned(Attempt(3))), 0, Decision::Execute { attempt: Attempt(3) }),
            ("b", Some(in_progress("a", 1, 100, false)), 50, Decision::Mismatch),
            ("b", Some(in_progress("a", 1, 100, false)), 500, Decision::Mismatch),
            ("b", Some(completed("a", 201)), 0, Decision::Mismatch),
            ("a", Some(in_progress("a", 1, 100, false)), 99, Decision::InFlight),
            (
                "a",
                Some(in_progress("a", 3, 100, true)),
                100,
                Decision::TakeOver { expected: Attempt(3), recovery_point: rp },
            ),
            (
                "a",
                Some(in_progress("a", 1, 100, false)),
                101,
                Decision::TakeOver { expected: Attempt(1), recovery_point: None },
            ),
            ("a", Some(completed("a", 201)), 0, Decision::Replay(StoredResponse::new(201, "stored"))),
            // A stored error from after execution began replays as that error.
            ("a", Some(completed("a", 500)), 9_999, Decision::Replay(StoredResponse::new(500, "stored"))),
        ];
        for (i, (request_fp, claim, now, want)) in table.into_iter().enumerate() {
            let got = decide(&fp(request_fp), claim.as_ref(), SimTime(now));
            assert_eq!(got, want, "row {i}");
        }
    }

    #[test]
    fn rejections_have_their_statuses() {
        assert_eq!(Decision::MissingKey.rejection_status(), Some(400));
        assert_eq!(Decision::Mismatch.rejection_status(), Some(422));
        assert_eq!(Decision::InFlight.rejection_status(), Some(409));
        assert_eq!(Decision::Execute { attempt: Attempt::FIRST }.rejection_status(), None);
    }
}
