//! Linearizability of a store's concurrent history against the reference
//! model: is there one order of the operations, consistent with real time
//! (an operation that returned before another was invoked comes first),
//! in which [`RefStore`] gives every answer the store gave?
//!
//! The search is Wing and Gong's, with Lowe's memo of (operations
//! linearized, model state) pairs already explored, as Porcupine and
//! Knossos run it. The history is first cut by key: every operation here
//! names one record, and operations on different records commute, so the
//! history is linearizable exactly when each key's part is
//! (P-compositionality, Herlihy and Wing). An operation whose answer was
//! lost (a timeout, a connection killed mid-commit) may or may not have
//! taken effect, at any time after its invocation: it is linearized if an
//! order needs it, and left out otherwise.
//!
//! A history found not linearizable is cut down ([`shrink`]) to the fewest
//! operations of the failing key that still no order explains.
//!
//! ```
//! use idemsim_model::linearizability::{check, Answer, Call, Operation, Verdict};
//! use idemsim_model::{Claim, Fingerprint, Scope, SimTime};
//! let scope = Scope::new("acme", "k1");
//! let claim = |caller, at: u64, answer| Operation {
//!     caller,
//!     call: Call::Claim { scope: scope.clone(), fingerprint: Fingerprint::of("POST", "/orders", b"{}"), now: SimTime(0), lease_ms: 1_000 },
//!     invoked_ns: at,
//!     returned_ns: Some(at + 10),
//!     answer: Some(Answer::Claim(answer)),
//! };
//! // Two claims of one key, both told they own it: no order explains that.
//! let racy = [claim(0, 0, Claim::Owned(idemsim_model::Attempt(1))), claim(1, 5, Claim::Owned(idemsim_model::Attempt(1)))];
//! assert!(matches!(check(&racy, 1_000_000), Verdict::NotLinearizable { .. }));
//! ```

use crate::ids::{Attempt, Scope, SimTime};
use crate::record::{Claim, Completion, Record, RecoveryPoint, Takeover, WriteOutcome};
use crate::{Fingerprint, RefStore};
use std::collections::BTreeMap;
use std::fmt;

mod search;
mod shrink;
mod story;
#[cfg(test)]
mod tests;

pub use shrink::{shrink, Witness};
pub use story::WitnessStory;

/// A store operation and its arguments: what the sequential model replays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// `claim`.
    Claim {
        /// The record.
        scope: Scope,
        /// The request's fingerprint.
        fingerprint: Fingerprint,
        /// The caller's clock.
        now: SimTime,
        /// The lease asked for.
        lease_ms: u64,
    },
    /// `take_over`.
    TakeOver {
        /// The record.
        scope: Scope,
        /// The attempt the caller saw.
        expected: Attempt,
        /// The caller's clock.
        now: SimTime,
        /// The lease asked for.
        lease_ms: u64,
    },
    /// `write_recovery_point`.
    WriteRecoveryPoint {
        /// The record.
        scope: Scope,
        /// The writer's attempt.
        attempt: Attempt,
        /// The point.
        point: RecoveryPoint,
    },
    /// `complete`.
    Complete {
        /// The record.
        scope: Scope,
        /// The writer's attempt.
        attempt: Attempt,
        /// The completion.
        completion: Completion,
    },
    /// `release`.
    Release {
        /// The record.
        scope: Scope,
        /// The writer's attempt.
        attempt: Attempt,
    },
    /// `read`.
    Read {
        /// The record.
        scope: Scope,
    },
    /// `sweep`: the one operation on every record at once. Judged key by
    /// key, each key's part seeing its answer cut to that key (a sweep
    /// that is wrong on one key is wrong; one that is atomic across keys
    /// only by luck is not caught this way).
    Sweep {
        /// The caller's clock.
        now: SimTime,
        /// The retention window.
        window_ms: u64,
    },
}

impl Call {
    /// The record the operation names; `None` for a sweep, which names
    /// them all.
    pub fn scope(&self) -> Option<&Scope> {
        match self {
            Call::Claim { scope, .. }
            | Call::TakeOver { scope, .. }
            | Call::WriteRecoveryPoint { scope, .. }
            | Call::Complete { scope, .. }
            | Call::Release { scope, .. }
            | Call::Read { scope } => Some(scope),
            Call::Sweep { .. } => None,
        }
    }

    /// Runs the operation on the model.
    pub fn apply(&self, model: &mut RefStore) -> Answer {
        match self {
            Call::Claim { scope, fingerprint, now, lease_ms } => {
                Answer::Claim(model.claim(scope, fingerprint, *now, *lease_ms))
            }
            Call::TakeOver { scope, expected, now, lease_ms } => {
                Answer::Takeover(model.take_over(scope, *expected, *now, *lease_ms))
            }
            Call::WriteRecoveryPoint { scope, attempt, point } => {
                Answer::Write(model.write_recovery_point(scope, *attempt, point))
            }
            Call::Complete { scope, attempt, completion } => Answer::Write(model.complete(scope, *attempt, completion)),
            Call::Release { scope, attempt } => Answer::Write(model.release(scope, *attempt)),
            Call::Read { scope } => Answer::Record(model.read(scope)),
            Call::Sweep { now, window_ms } => Answer::Swept(model.sweep(*now, *window_ms)),
        }
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Call::Claim { scope, now, lease_ms, .. } => write!(f, "claim {scope} at {now} for {lease_ms} ms"),
            Call::TakeOver { scope, expected, now, .. } => write!(f, "take_over {scope} expecting {expected} at {now}"),
            Call::WriteRecoveryPoint { scope, attempt, .. } => write!(f, "write_recovery_point {scope} as {attempt}"),
            Call::Complete { scope, attempt, completion } => {
                write!(f, "complete {scope} as {attempt} with {}", completion.response.status)
            }
            Call::Release { scope, attempt } => write!(f, "release {scope} as {attempt}"),
            Call::Read { scope } => write!(f, "read {scope}"),
            Call::Sweep { now, window_ms } => write!(f, "sweep at {now} of records older than {window_ms} ms"),
        }
    }
}

/// What the store answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Of a claim.
    Claim(Claim),
    /// Of a takeover.
    Takeover(Takeover),
    /// Of a fenced write.
    Write(WriteOutcome),
    /// Of a read.
    Record(Option<Record>),
    /// Of a sweep: the records it deleted, as they were.
    Swept(Vec<(Scope, Record)>),
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let record = |r: &Record| match r.is_completed() {
            true => format!("completed (attempt {})", r.attempt()),
            false => format!("in progress (attempt {})", r.attempt()),
        };
        match self {
            Answer::Claim(Claim::Owned(a)) => write!(f, "owned, attempt {a}"),
            Answer::Claim(Claim::Existing(r)) => write!(f, "found {}", record(r)),
            Answer::Takeover(Takeover::Granted(a)) => write!(f, "granted attempt {a}"),
            Answer::Takeover(Takeover::Refused(None)) => f.write_str("refused, no record"),
            Answer::Takeover(Takeover::Refused(Some(r))) => write!(f, "refused, the record {}", record(r)),
            Answer::Write(WriteOutcome::Applied) => f.write_str("applied"),
            Answer::Write(WriteOutcome::Fenced) => f.write_str("fenced"),
            Answer::Record(None) => f.write_str("no record"),
            Answer::Record(Some(r)) => f.write_str(&record(r)),
            Answer::Swept(swept) if swept.is_empty() => f.write_str("deleted nothing"),
            Answer::Swept(swept) => {
                let names: Vec<String> = swept.iter().map(|(s, r)| format!("{s} ({})", record(r))).collect();
                write!(f, "deleted {}", names.join(", "))
            }
        }
    }
}

/// One operation of a concurrent history: who called, what, when it was
/// invoked and when it returned (on one clock, any unit), and the answer.
/// `returned_ns` and `answer` are `None` for an operation whose answer was
/// lost: it may or may not have taken effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation {
    /// The caller (a task, a connection).
    pub caller: u32,
    /// The operation.
    pub call: Call,
    /// When it was invoked.
    pub invoked_ns: u64,
    /// When it returned; `None` when its answer was lost.
    pub returned_ns: Option<u64>,
    /// Its answer; `None` when it was lost.
    pub answer: Option<Answer>,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let end = self.returned_ns.map_or("never".to_string(), |r| r.to_string());
        let answer = self.answer.as_ref().map_or("answer lost".to_string(), |a| a.to_string());
        write!(f, "caller {}: {} [{} .. {}] -> {answer}", self.caller, self.call, self.invoked_ns, end)
    }
}

/// The checker's conclusion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Some order consistent with real time explains every answer.
    Linearizable,
    /// No order explains the answers of these operations (indices into the
    /// history given, all on `scope`).
    NotLinearizable {
        /// The key whose operations no order explains.
        scope: Scope,
        /// The operations of that key.
        operations: Vec<usize>,
    },
    /// The search for `scope` was cut off after exploring its budget of
    /// states without an answer.
    Unknown {
        /// The key the search gave up on.
        scope: Scope,
    },
}

/// Checks `history`, key by key, exploring at most `states_max` states per
/// key.
pub fn check(history: &[Operation], states_max: usize) -> Verdict {
    let mut by_key: BTreeMap<&Scope, Vec<usize>> = BTreeMap::new();
    for (i, op) in history.iter().enumerate() {
        if let Some(scope) = op.call.scope() {
            by_key.entry(scope).or_default().push(i);
        }
    }
    let sweeps: Vec<usize> = (0..history.len()).filter(|&i| history[i].call.scope().is_none()).collect();
    for (scope, mut ops) in by_key {
        ops.extend(&sweeps);
        ops.sort_unstable();
        let part = part_of(history, &ops, scope);
        match search::search(&part.iter().collect::<Vec<_>>(), scope, &RefStore::new(), states_max) {
            Some(true) => {}
            Some(false) => return Verdict::NotLinearizable { scope: scope.clone(), operations: ops },
            None => return Verdict::Unknown { scope: scope.clone() },
        }
    }
    Verdict::Linearizable
}

/// The operations `indices` of `history` as the part of `scope` sees them:
/// a sweep's answer cut to the records of `scope`.
pub(crate) fn part_of(history: &[Operation], indices: &[usize], scope: &Scope) -> Vec<Operation> {
    indices
        .iter()
        .map(|&i| {
            let mut op = history[i].clone();
            if let Some(Answer::Swept(swept)) = &mut op.answer {
                swept.retain(|(s, _)| s == scope);
            }
            op
        })
        .collect()
}
