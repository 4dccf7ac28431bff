//! `Delegate`: a store built on another store, overriding only the steps
//! that differ. The way to write a one-field bug (or a one-step variation)
//! of a real store without copying it.

use crate::{CrashDurability, IdempotencyStore, StoreError};
use async_trait::async_trait;
use idemsim_model::{
    Attempt, Claim, Completion, Fingerprint, LocalEffect, MessageId, OutboxEntry, OutboxMessage, Record, RecoveryPoint,
    Scope, SimTime, Takeover, WriteOutcome,
};

/// A store on top of [`inner`](Delegate::inner): every step is a provided
/// method that forwards to it, so an implementation overrides only the
/// steps it changes. Any `Delegate` is an [`IdempotencyStore`].
///
/// A store whose completion is not fenced (it completes the record for
/// whichever attempt holds it), written on the bundled store:
///
/// ```
/// use idemsim_store::{Delegate, IdempotencyStore, MemStore, StoreError};
/// use idemsim_model::{Attempt, Completion, RecordState, Scope, WriteOutcome};
///
/// #[derive(Default)]
/// struct UnfencedComplete(MemStore);
///
/// #[async_trait::async_trait]
/// impl Delegate for UnfencedComplete {
///     fn inner(&self) -> &dyn IdempotencyStore {
///         &self.0
///     }
///     async fn complete(&self, s: &Scope, _a: Attempt, c: &Completion) -> Result<WriteOutcome, StoreError> {
///         let holder = match self.0.read(s).await? {
///             Some(r) => match r.state {
///                 RecordState::InProgress { attempt, .. } => attempt,
///                 RecordState::Completed { .. } => return Ok(WriteOutcome::Fenced),
///             },
///             None => return Ok(WriteOutcome::Fenced),
///         };
///         self.0.complete(s, holder, c).await
///     }
/// }
///
/// // Both traits have the step methods: name the one meant when calling.
/// let store = UnfencedComplete::default();
/// assert_eq!(IdempotencyStore::name(&store), "mem");
/// ```
///
/// Reads and writes the override makes in turn are atomic together in a
/// simulation when the inner store answers without waiting (the bundled
/// in-memory store does): the database node runs one operation at a time.
/// [`MemStore::with_model`](crate::MemStore::with_model) gives an override
/// the model's own record logic to change a single field.
#[async_trait]
pub trait Delegate: Send + Sync {
    /// The store every step not overridden forwards to.
    fn inner(&self) -> &dyn IdempotencyStore;

    /// The store's name, as reports print it.
    fn name(&self) -> &str {
        self.inner().name()
    }
    /// See [`IdempotencyStore::claim`].
    async fn claim(&self, s: &Scope, f: &Fingerprint, now: SimTime, lease_ms: u64) -> Result<Claim, StoreError> {
        self.inner().claim(s, f, now, lease_ms).await
    }
    /// See [`IdempotencyStore::take_over`].
    async fn take_over(&self, s: &Scope, a: Attempt, now: SimTime, lease_ms: u64) -> Result<Takeover, StoreError> {
        self.inner().take_over(s, a, now, lease_ms).await
    }
    /// See [`IdempotencyStore::write_recovery_point`].
    async fn write_recovery_point(&self, s: &Scope, a: Attempt, p: &RecoveryPoint) -> Result<WriteOutcome, StoreError> {
        self.inner().write_recovery_point(s, a, p).await
    }
    /// See [`IdempotencyStore::complete`].
    async fn complete(&self, s: &Scope, a: Attempt, c: &Completion) -> Result<WriteOutcome, StoreError> {
        self.inner().complete(s, a, c).await
    }
    /// See [`IdempotencyStore::release`].
    async fn release(&self, s: &Scope, a: Attempt) -> Result<WriteOutcome, StoreError> {
        self.inner().release(s, a).await
    }
    /// See [`IdempotencyStore::read`].
    async fn read(&self, s: &Scope) -> Result<Option<Record>, StoreError> {
        self.inner().read(s).await
    }
    /// See [`IdempotencyStore::effects`].
    async fn effects(&self, s: &Scope) -> Result<Vec<LocalEffect>, StoreError> {
        self.inner().effects(s).await
    }
    /// See [`IdempotencyStore::sweep`].
    async fn sweep(&self, now: SimTime, window_ms: u64) -> Result<Vec<(Scope, Record)>, StoreError> {
        self.inner().sweep(now, window_ms).await
    }
    /// See [`IdempotencyStore::stale_in_progress`].
    async fn stale_in_progress(&self, now: SimTime, limit: usize) -> Result<Vec<(Scope, Record)>, StoreError> {
        self.inner().stale_in_progress(now, limit).await
    }
    /// See [`IdempotencyStore::outbox_pending`].
    async fn outbox_pending(&self, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        self.inner().outbox_pending(limit).await
    }
    /// See [`IdempotencyStore::outbox_mark_published`].
    async fn outbox_mark_published(&self, id: &MessageId) -> Result<bool, StoreError> {
        self.inner().outbox_mark_published(id).await
    }
    /// See [`IdempotencyStore::durability`].
    fn durability(&self) -> Option<&dyn CrashDurability> {
        self.inner().durability()
    }
    /// See [`IdempotencyStore::stage_outbox`].
    async fn stage_outbox(&self, scope: &Scope, messages: &[OutboxMessage]) -> Result<(), StoreError> {
        self.inner().stage_outbox(scope, messages).await
    }
}

#[async_trait]
impl<D: Delegate> IdempotencyStore for D {
    fn name(&self) -> &str {
        Delegate::name(self)
    }
    async fn claim(&self, s: &Scope, f: &Fingerprint, now: SimTime, lease_ms: u64) -> Result<Claim, StoreError> {
        Delegate::claim(self, s, f, now, lease_ms).await
    }
    async fn take_over(&self, s: &Scope, a: Attempt, now: SimTime, lease_ms: u64) -> Result<Takeover, StoreError> {
        Delegate::take_over(self, s, a, now, lease_ms).await
    }
    async fn write_recovery_point(&self, s: &Scope, a: Attempt, p: &RecoveryPoint) -> Result<WriteOutcome, StoreError> {
        Delegate::write_recovery_point(self, s, a, p).await
    }
    async fn complete(&self, s: &Scope, a: Attempt, c: &Completion) -> Result<WriteOutcome, StoreError> {
        Delegate::complete(self, s, a, c).await
    }
    async fn release(&self, s: &Scope, a: Attempt) -> Result<WriteOutcome, StoreError> {
        Delegate::release(self, s, a).await
    }
    async fn read(&self, s: &Scope) -> Result<Option<Record>, StoreError> {
        Delegate::read(self, s).await
    }
    async fn effects(&self, s: &Scope) -> Result<Vec<LocalEffect>, StoreError> {
        Delegate::effects(self, s).await
    }
    async fn sweep(&self, now: SimTime, window_ms: u64) -> Result<Vec<(Scope, Record)>, StoreError> {
        Delegate::sweep(self, now, window_ms).await
    }
    async fn stale_in_progress(&self, now: SimTime, limit: usize) -> Result<Vec<(Scope, Record)>, StoreError> {
        Delegate::stale_in_progress(self, now, limit).await
    }
    async fn outbox_pending(&self, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        Delegate::outbox_pending(self, limit).await
    }
    async fn outbox_mark_published(&self, id: &MessageId) -> Result<bool, StoreError> {
        Delegate::outbox_mark_published(self, id).await
    }
    fn durability(&self) -> Option<&dyn CrashDurability> {
        Delegate::durability(self)
    }
    async fn stage_outbox(&self, s: &Scope, messages: &[OutboxMessage]) -> Result<(), StoreError> {
        Delegate::stage_outbox(self, s, messages).await
    }
}
