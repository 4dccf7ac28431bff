//! The `IdempotencyStore` trait.

use crate::{CrashDurability, StoreError};
use async_trait::async_trait;
use idemsim_model::{
    Attempt, Claim, Completion, Fingerprint, LocalEffect, MessageId, OutboxEntry, OutboxMessage, Record, RecoveryPoint,
    Scope, SimTime, Takeover, WriteOutcome,
};

/// Storage for idempotency records. Every method is one atomic operation in
/// a real database (one statement or one transaction), and its meaning is
/// the method of the same name on [`idemsim_model::RefStore`], which the
/// conformance kit compares it to.
///
/// Times are passed in (`now`), never read by the store: the caller's clock
/// decides when a lease has expired, exactly as a server's clock would.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// A short name for reports (`mem`, `sqlite`, ...).
    fn name(&self) -> &str;

    /// Atomic insert-if-absent: `Owned(attempt)` for the inserter with a
    /// lease until `now + lease_ms`, else the existing record as read by the
    /// same statement. Never check-then-insert. The attempt is 1 for a new
    /// key and continues the count of a released one (see `release`).
    async fn claim(
        &self,
        scope: &Scope,
        fingerprint: &Fingerprint,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Claim, StoreError>;

    /// Fenced takeover: only an `in_progress` record whose lease expired
    /// (`locked_until <= now`) and whose attempt is `expected` is taken over;
    /// the attempt is bumped and the lease renewed.
    async fn take_over(
        &self,
        scope: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Takeover, StoreError>;

    /// Writes a recovery point, conditional on `attempt` holding the record.
    async fn write_recovery_point(
        &self,
        scope: &Scope,
        attempt: Attempt,
        point: &RecoveryPoint,
    ) -> Result<WriteOutcome, StoreError>;

    /// Completes the record and commits the local effect and outbox messages
    /// with it, all in one transaction, conditional on `attempt`. Message ids
    /// are unique; a store may refuse a duplicate with `Conflict`.
    async fn complete(
        &self,
        scope: &Scope,
        attempt: Attempt,
        completion: &Completion,
    ) -> Result<WriteOutcome, StoreError>;

    /// Releases an `in_progress` record held by `attempt` (an execution that
    /// must not be stored, such as a validation error): the key reads as
    /// absent again, but the attempt count must survive (a tombstone), so a
    /// later claim never reissues a fencing token a stale holder still has.
    async fn release(&self, scope: &Scope, attempt: Attempt) -> Result<WriteOutcome, StoreError>;

    /// Reads a record.
    async fn read(&self, scope: &Scope) -> Result<Option<Record>, StoreError>;

    /// The local effect rows committed for a scope, oldest first.
    async fn effects(&self, scope: &Scope) -> Result<Vec<LocalEffect>, StoreError>;

    /// Deletes `completed` records with `created_at + window_ms <= now`, never
    /// `in_progress` ones; returns the swept records as the deleting
    /// statement saw them, in scope order (tombstones go silently). The
    /// simulator judges the sweep by these records, not by its own view.
    async fn sweep(&self, now: SimTime, window_ms: u64) -> Result<Vec<(Scope, Record)>, StoreError>;

    /// `in_progress` records with `locked_until <= now`, in scope order (by
    /// caller then key, bytewise), at most `limit`.
    async fn stale_in_progress(&self, now: SimTime, limit: usize) -> Result<Vec<(Scope, Record)>, StoreError>;

    /// Unpublished outbox messages in commit order, at most `limit`.
    async fn outbox_pending(&self, limit: usize) -> Result<Vec<OutboxEntry>, StoreError>;

    /// Marks a message published; `false` if there is no such message.
    async fn outbox_mark_published(&self, id: &MessageId) -> Result<bool, StoreError>;

    /// The store's crash semantics, if it opts in to losing unsynced
    /// writes (see [`CrashDurability`]). The default, `None`, tells the
    /// simulator to leave that fault out, and to say so.
    fn durability(&self) -> Option<&dyn CrashDurability> {
        None
    }

    /// Queues outbox messages for `scope` in a transaction of their own,
    /// outside any completion, checking nothing about the record. The
    /// correct protocol never asks for it (its messages commit with the
    /// completion); it is here so that a protocol that writes its outbox
    /// row after the completion can be written and judged. Message ids are
    /// unique; a store may refuse a duplicate with `Conflict`. The default
    /// refuses: a store that does not offer it says so.
    async fn stage_outbox(&self, scope: &Scope, messages: &[OutboxMessage]) -> Result<(), StoreError> {
        let _ = (scope, messages);
        Err(StoreError::Unavailable(format!("store '{}' does not implement stage_outbox", self.name())))
    }
}

/// A shared store is a store (so `Arc<dyn IdempotencyStore>` can be checked).
#[async_trait]
impl<T: IdempotencyStore + ?Sized> IdempotencyStore for std::sync::Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    async fn claim(&self, s: &Scope, f: &Fingerprint, now: SimTime, lease_ms: u64) -> Result<Claim, StoreError> {
        (**self).claim(s, f, now, lease_ms).await
    }
    async fn take_over(&self, s: &Scope, a: Attempt, now: SimTime, lease_ms: u64) -> Result<Takeover, StoreError> {
        (**self).take_over(s, a, now, lease_ms).await
    }
    async fn write_recovery_point(&self, s: &Scope, a: Attempt, p: &RecoveryPoint) -> Result<WriteOutcome, StoreError> {
        (**self).write_recovery_point(s, a, p).await
    }
    async fn complete(&self, s: &Scope, a: Attempt, c: &Completion) -> Result<WriteOutcome, StoreError> {
        (**self).complete(s, a, c).await
    }
    async fn release(&self, s: &Scope, a: Attempt) -> Result<WriteOutcome, StoreError> {
        (**self).release(s, a).await
    }
    async fn read(&self, s: &Scope) -> Result<Option<Record>, StoreError> {
        (**self).read(s).await
    }
    async fn effects(&self, s: &Scope) -> Result<Vec<LocalEffect>, StoreError> {
        (**self).effects(s).await
    }
    async fn sweep(&self, now: SimTime, window_ms: u64) -> Result<Vec<(Scope, Record)>, StoreError> {
        (**self).sweep(now, window_ms).await
    }
    async fn stale_in_progress(&self, now: SimTime, limit: usize) -> Result<Vec<(Scope, Record)>, StoreError> {
        (**self).stale_in_progress(now, limit).await
    }
    async fn outbox_pending(&self, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        (**self).outbox_pending(limit).await
    }
    async fn outbox_mark_published(&self, id: &MessageId) -> Result<bool, StoreError> {
        (**self).outbox_mark_published(id).await
    }
    async fn stage_outbox(&self, s: &Scope, messages: &[OutboxMessage]) -> Result<(), StoreError> {
        (**self).stage_outbox(s, messages).await
    }
    fn durability(&self) -> Option<&dyn CrashDurability> {
        (**self).durability()
    }
}
