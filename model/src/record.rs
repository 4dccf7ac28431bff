//! The idempotency record and the outcomes of store operations.
//!
//! These types are shared by the reference store in this crate and by every
//! real store implementing `idemsim_store::IdempotencyStore`, so that the two
//! can be compared result for result.

use crate::bytes::Bytes;
use crate::fingerprint::Fingerprint;
use crate::ids::{Attempt, DownstreamKey, MessageId, Scope, SimTime};
use crate::request::StoredResponse;
use serde::{Deserialize, Serialize};

/// One row per `(caller, key)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Fingerprint of the request that created the record.
    pub fingerprint: Fingerprint,
    /// When the record was claimed (the claimer's clock).
    pub created_at: SimTime,
    /// In progress or completed.
    pub state: RecordState,
}

/// The status column with what belongs to each status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RecordState {
    /// An execution holds a lease on the record.
    InProgress {
        /// The fencing token of the current holder.
        attempt: Attempt,
        /// The lease: after this time the record may be taken over.
        locked_until: SimTime,
        /// Where an interrupted execution resumes.
        recovery_point: Option<RecoveryPoint>,
    },
    /// The execution finished; the response is replayed forever after.
    Completed {
        /// The stored response.
        response: StoredResponse,
        /// The attempt whose completion was accepted.
        attempt: Attempt,
    },
}

impl Record {
    /// True when the record is `completed`.
    pub fn is_completed(&self) -> bool {
        matches!(self.state, RecordState::Completed { .. })
    }

    /// The current attempt (holder's token, or the completing one).
    pub fn attempt(&self) -> Attempt {
        match &self.state {
            RecordState::InProgress { attempt, .. } | RecordState::Completed { attempt, .. } => *attempt,
        }
    }
}

/// Committed before an external call so a takeover can resume it with the
/// same downstream key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryPoint {
    /// The key passed to the dependency; stable across attempts.
    pub downstream_key: DownstreamKey,
    /// What a resumer needs to finish the execution (e.g. the request
    /// parameters), opaque to the store.
    pub data: Bytes,
}

/// A row written by the execution in the same transaction as its completion.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalEffect {
    /// Application id of the row (e.g. the order id).
    pub id: String,
    /// Row contents.
    pub data: Bytes,
}

/// A follow-on message written to the transactional outbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxMessage {
    /// Unique id; consumers dedup by it.
    pub id: MessageId,
    /// Where the relay publishes it.
    pub topic: String,
    /// Message body.
    pub payload: Bytes,
}

/// Everything the completing transaction writes, atomically.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Completion {
    /// The response to store and replay.
    pub response: StoredResponse,
    /// A local effect row, committed with the completion.
    pub local_effect: Option<LocalEffect>,
    /// Outbox messages, committed with the completion.
    pub outbox: Vec<OutboxMessage>,
}

/// An outbox row as the relay sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxEntry {
    /// The record whose completion staged the message.
    pub scope: Scope,
    /// The message.
    pub message: OutboxMessage,
}

/// Result of an atomic claim (insert-if-absent).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Claim {
    /// This caller inserted the record and owns the execution with this
    /// attempt: 1, or one more than a released record of the key held.
    Owned(Attempt),
    /// A record already existed; it is returned as read in the same statement.
    Existing(Record),
}

/// Result of a fenced takeover of a stale `in_progress` record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Takeover {
    /// The lease had expired and the attempt matched: the caller now holds
    /// this (bumped) attempt.
    Granted(Attempt),
    /// Not taken over (gone, completed, lease live, or attempt moved on); the
    /// record as it is now.
    Refused(Option<Record>),
}

/// Result of a write conditional on the attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteOutcome {
    /// The write was applied.
    Applied,
    /// Zero rows matched: the lease was lost (or the record finished or
    /// vanished). The caller must roll back and stop.
    Fenced,
}
