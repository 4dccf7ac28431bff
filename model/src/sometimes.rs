//! The interleavings "sometimes" coverage counts: the one list. Everything
//! that needs every counter ([`Coverage`](crate::Coverage)'s array, its
//! JSON, the catalogue's expectations, reports) iterates
//! [`Sometimes::ALL`] or matches exhaustively, so a new counter is one
//! line here (its variant and name) and the place in `coverage.rs` that
//! counts it.

use serde::{Deserialize, Serialize};

crate::named_enum! {
    /// An interesting interleaving a clean run should show it reached.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Sometimes {
        /// A takeover was granted.
        Takeover = "takeover",
        /// A lease expired while its holder had begun executing (called the
        /// dependency or wrote a recovery point) and the record was taken over.
        LeaseExpiredMidExecute = "lease_expired_mid_execute",
        /// A stale holder's write was fenced.
        StaleHolderFenced = "stale_holder_fenced",
        /// A network duplicate of a request arrived after its key completed.
        DuplicateAfterCompletion = "duplicate_after_completion",
        /// A completion committed but the client never got that try's answer.
        ResponseLostAfterCommit = "response_lost_after_commit",
        /// A server crashed after calling the dependency and before completing.
        CrashBetweenEffectAndCompletion = "crash_between_effect_and_completion",
        /// A stored response was replayed.
        Replay = "replay",
        /// A fingerprint mismatch was answered 422.
        MismatchRejected = "mismatch_rejected",
        /// A live in-flight key was answered 409.
        InFlightRejected = "in_flight_rejected",
        /// The reconciler completed a record nobody retried.
        ReconcilerCompleted = "reconciler_completed",
        /// A server crashed while an execution it started was unfinished.
        CrashMidExecution = "crash_mid_execution",
        /// A stored response was replayed an hour or more after it was stored.
        LateReplay = "late_replay",
        /// A completed record was swept.
        RecordSwept = "record_swept",
        /// A client stopped retrying because its retry budget was spent.
        RetryBudgetExhausted = "retry_budget_exhausted",
        /// The consumer received a message it had already applied.
        MessageRedelivered = "message_redelivered",
        /// A second service sent the store an operation the protocol never
        /// asks for, and the store answered (property `store-contract`).
        StoreProbed = "store_probed",
        /// The dependency declined a charge (402) or refused it for now (429
        /// or 503, with `Retry-After`).
        ProviderRefused = "provider_refused",
        /// The dependency answered a call late (its answer may outlast the
        /// caller's timeout while the charge went through).
        ProviderAnsweredLate = "provider_answered_late",
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
