//! The interleavings "sometimes" coverage counts: the one list. Everything
//! that needs every counter ([`Coverage`](crate::Coverage)'s array, its
//! JSON, the catalogue's expectations, reports) iterates
//! [`Sometimes::ALL`] or matches exhaustively, so a new counter is one
//! variant here, one name, and the place in `coverage.rs` that counts it.

use serde::{Deserialize, Serialize};

/// An interesting interleaving a clean run should show it reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sometimes {
    /// A takeover was granted.
    Takeover,
    /// A lease expired while its holder had begun executing (called the
    /// dependency or wrote a recovery point) and the record was taken over.
    LeaseExpiredMidExecute,
    /// A stale holder's write was fenced.
    StaleHolderFenced,
    /// A network duplicate of a request arrived after its key completed.
    DuplicateAfterCompletion,
    /// A completion committed but the client never got that try's answer.
    ResponseLostAfterCommit,
    /// A server crashed after calling the dependency and before completing.
    CrashBetweenEffectAndCompletion,
    /// A stored response was replayed.
    Replay,
    /// A fingerprint mismatch was answered 422.
    MismatchRejected,
    /// A live in-flight key was answered 409.
    InFlightRejected,
    /// The reconciler completed a record nobody retried.
    ReconcilerCompleted,
    /// A server crashed while an execution it started was unfinished.
    CrashMidExecution,
    /// A stored response was replayed an hour or more after it was stored.
    LateReplay,
    /// A completed record was swept.
    RecordSwept,
    /// A client stopped retrying because its retry budget was spent.
    RetryBudgetExhausted,
    /// The consumer received a message it had already applied.
    MessageRedelivered,
    /// A second service sent the store an operation the protocol never
    /// asks for, and the store answered (property `store-contract`).
    StoreProbed,
    /// The dependency declined a charge (402) or refused it for now (429
    /// or 503, with `Retry-After`).
    ProviderRefused,
    /// The dependency answered a call late (its answer may outlast the
    /// caller's timeout while the charge went through).
    ProviderAnsweredLate,
}

impl Sometimes {
    /// How many there are.
    pub const COUNT: usize = 18;

    /// Every counter, in report order.
    pub const ALL: [Sometimes; Sometimes::COUNT] = [
        Sometimes::Takeover,
        Sometimes::LeaseExpiredMidExecute,
        Sometimes::StaleHolderFenced,
        Sometimes::DuplicateAfterCompletion,
        Sometimes::ResponseLostAfterCommit,
        Sometimes::CrashBetweenEffectAndCompletion,
        Sometimes::Replay,
        Sometimes::MismatchRejected,
        Sometimes::InFlightRejected,
        Sometimes::ReconcilerCompleted,
        Sometimes::CrashMidExecution,
        Sometimes::LateReplay,
        Sometimes::RecordSwept,
        Sometimes::RetryBudgetExhausted,
        Sometimes::MessageRedelivered,
        Sometimes::StoreProbed,
        Sometimes::ProviderRefused,
        Sometimes::ProviderAnsweredLate,
    ];

    /// The snake_case name reports, JSON and scenario files use.
    pub fn name(self) -> &'static str {
        match self {
            Sometimes::Takeover => "takeover",
            Sometimes::LeaseExpiredMidExecute => "lease_expired_mid_execute",
            Sometimes::StaleHolderFenced => "stale_holder_fenced",
            Sometimes::DuplicateAfterCompletion => "duplicate_after_completion",
            Sometimes::ResponseLostAfterCommit => "response_lost_after_commit",
            Sometimes::CrashBetweenEffectAndCompletion => "crash_between_effect_and_completion",
            Sometimes::Replay => "replay",
            Sometimes::MismatchRejected => "mismatch_rejected",
            Sometimes::InFlightRejected => "in_flight_rejected",
            Sometimes::ReconcilerCompleted => "reconciler_completed",
            Sometimes::CrashMidExecution => "crash_mid_execution",
            Sometimes::LateReplay => "late_replay",
            Sometimes::RecordSwept => "record_swept",
            Sometimes::RetryBudgetExhausted => "retry_budget_exhausted",
            Sometimes::MessageRedelivered => "message_redelivered",
            Sometimes::StoreProbed => "store_probed",
            Sometimes::ProviderRefused => "provider_refused",
            Sometimes::ProviderAnsweredLate => "provider_answered_late",
        }
    }

    /// Parses a name.
    pub fn from_name(name: &str) -> Option<Sometimes> {
        Sometimes::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Its place in [`Sometimes::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_in_declaration_order_and_names_round_trip() {
        for (i, s) in Sometimes::ALL.into_iter().enumerate() {
            assert_eq!(s.index(), i);
            assert_eq!(Sometimes::from_name(s.name()), Some(s));
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{}\"", s.name()));
        }
    }
}
