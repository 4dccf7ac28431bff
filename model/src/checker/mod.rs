//! Checkers: one per property of docs/protocol.md §9, each a function from a history
//! to the violations it finds. A violation names the events involved and
//! says in one line what went wrong.

mod answers;
mod at_most_once;
mod expiry;
mod fencing;
mod index;
mod isolation;
mod liveness;
mod outbox;
mod progress;
mod replay;
mod retry;
mod status;
mod store_contract;

pub use index::{FingerprintId, Index, RecordId, ScopeId};
pub use progress::Outcomes;

use crate::history::History;
pub(crate) use crate::lookup::Lookup;
use serde::{Deserialize, Serialize};
use std::fmt;

crate::named_enum! {
    /// The named safety and liveness properties, numbered as in docs/protocol.md
    /// §9 (`ALL` is in that order).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Property {
        /// 1. At most one effect per `(caller, key)`.
        AtMostOnce = "at-most-once",
        /// 2. Acknowledged successes had their effect; no record stuck `in_progress`.
        Liveness = "liveness",
        /// 3. No write of attempt `a` accepted after an attempt `> a` was granted.
        Fencing = "fencing",
        /// 4. Replays equal the stored response; a completed record never changes.
        ReplayFidelity = "replay-fidelity",
        /// 5. 422 / 409 / 400 where due; validation errors not stored.
        StatusRules = "status-rules",
        /// 6. Caller A never receives caller B's stored response.
        Isolation = "isolation",
        /// 7. Retries only when transient, within backoff, attempts, deadline and budget.
        RetryDiscipline = "retry-discipline",
        /// 8. No record swept before its window; no re-execution inside it.
        Expiry = "expiry",
        /// 9. Outbox messages published after commit, applied exactly once.
        Outbox = "outbox",
        /// Not in the list of docs/protocol.md §9, implied by its purpose: enough operations
        /// are acknowledged (a fenced protocol that never finishes is useless).
        Progress = "progress",
        /// Not in the list either, implied by the store trait's contract: every
        /// answer to an operation the protocol never asks for (a second
        /// service's probe) is the reference model's.
        StoreContract = "store-contract",
    }
}

impl Property {
    /// Runs this property's checker.
    pub fn check(self, history: &History, index: &Index) -> Vec<Violation> {
        match self {
            Property::AtMostOnce => at_most_once::check(history, index),
            Property::Liveness => liveness::check(history, index),
            Property::Fencing => fencing::check(history, index),
            Property::ReplayFidelity => replay::check(history, index),
            Property::StatusRules => {
                let mut out = status::check(history, index);
                out.extend(answers::check(history, index));
                out
            }
            Property::Isolation => isolation::check(history, index),
            Property::RetryDiscipline => retry::check(history, index),
            Property::Expiry => expiry::check(history, index),
            Property::Outbox => outbox::check(history, index),
            Property::Progress => progress::check(history, index),
            Property::StoreContract => store_contract::check(history),
        }
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One broken property, with the history entries that show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// Which property.
    pub property: Property,
    /// Indices into `History::entries`, in order; the last one is where the
    /// property broke.
    pub events: Vec<usize>,
    /// One line for a person.
    pub explanation: String,
}

impl Violation {
    pub(crate) fn new(property: Property, mut events: Vec<usize>, explanation: String) -> Violation {
        events.sort_unstable();
        events.dedup();
        Violation { property, events, explanation }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.property, self.explanation)?;
        if !self.events.is_empty() {
            let list: Vec<String> = self.events.iter().map(|i| format!("#{i}")).collect();
            write!(f, " (events {})", list.join(", "))?;
        }
        Ok(())
    }
}

/// Runs every checker. Violations come grouped by property, in order.
pub fn check_all(history: &History) -> Vec<Violation> {
    check_all_indexed(history, &Index::new(history))
}

/// [`check_all`] with an index the caller already built.
pub fn check_all_indexed(history: &History, index: &Index) -> Vec<Violation> {
    Property::ALL.into_iter().flat_map(|p| p.check(history, index)).collect()
}

/// Every checker and the coverage counters, sharing one index: the
/// judgement at the end of a run.
pub fn judge(history: &History) -> (Vec<Violation>, crate::Coverage) {
    judge_with(history, &mut crate::FingerprintMemo::default())
}

/// [`judge`], fingerprinting requests through `memo` (see [`Index::with_memo`]).
pub fn judge_with(history: &History, memo: &mut crate::FingerprintMemo) -> (Vec<Violation>, crate::Coverage) {
    let index = Index::with_memo(history, memo);
    (check_all_indexed(history, &index), crate::Coverage::measure(history, &index))
}

#[cfg(test)]
pub(crate) mod testkit;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in Property::ALL {
            assert_eq!(Property::from_name(p.name()), Some(p));
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{}\"", p.name()));
        }
        assert_eq!(Property::from_name("nope"), None);
    }

    #[test]
    fn an_empty_history_is_clean() {
        assert!(check_all(&History::default()).is_empty());
    }
}
