//! `MemStore`: the reference store behind the store trait.

use crate::{CrashDurability, IdempotencyStore, StoreError};
use async_trait::async_trait;
use idemsim_model::{
    Attempt, Claim, Completion, Fingerprint, LocalEffect, MessageId, OutboxEntry, OutboxMessage, Record, RecoveryPoint,
    RefStore, Scope, SimTime, Takeover, WriteOutcome,
};
use std::sync::{Mutex, MutexGuard};

/// An in-memory store: the model's [`RefStore`] behind a mutex, so every
/// operation is atomic. It is the default store of simulations, and it
/// opts in to [`CrashDurability`]: a sync keeps a copy of the whole state,
/// and a crash goes back to it.
#[derive(Debug, Default)]
pub struct MemStore {
    state: Mutex<RefStore>,
    synced: Mutex<RefStore>,
}

impl MemStore {
    /// An empty store.
    pub fn new() -> MemStore {
        MemStore::default()
    }

    /// A copy of the whole state (what a sync made durable).
    pub fn snapshot(&self) -> RefStore {
        self.lock().clone()
    }

    /// Replaces the whole state (a crash back to the last sync).
    pub fn restore(&self, state: RefStore) {
        *self.lock() = state;
    }

    /// Runs `f` on the store's state, atomically: the model's own record
    /// logic for a store built on this one that changes one field of it
    /// (see [`Delegate`](crate::Delegate)).
    ///
    /// ```
    /// use idemsim_model::{Fingerprint, RecordState, Scope, SimTime};
    /// use idemsim_store::MemStore;
    ///
    /// let store = MemStore::new();
    /// let scope = Scope::new("acme", "k");
    /// // A claim that also refreshes a live lease: a bug, written in one line.
    /// store.with_model(|m| m.claim(&scope, &Fingerprint::of("POST", "/p", b"{}"), SimTime(0), 1_000));
    /// store.with_model(|m| {
    ///     if let Some(RecordState::InProgress { locked_until, .. }) = m.record_mut(&scope).map(|r| &mut r.state) {
    ///         *locked_until = SimTime(5_000);
    ///     }
    /// });
    /// ```
    pub fn with_model<R>(&self, f: impl FnOnce(&mut RefStore) -> R) -> R {
        f(&mut self.lock())
    }

    fn lock(&self) -> MutexGuard<'_, RefStore> {
        // A panic while holding the lock cannot leave a half-applied
        // operation: every RefStore method mutates only after deciding.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl CrashDurability for MemStore {
    fn sync(&self) -> Result<(), StoreError> {
        let now = self.snapshot();
        *self.synced.lock().unwrap_or_else(|p| p.into_inner()) = now;
        Ok(())
    }

    fn lose_unsynced(&self) -> Result<(), StoreError> {
        let synced = self.synced.lock().unwrap_or_else(|p| p.into_inner()).clone();
        self.restore(synced);
        Ok(())
    }
}

#[async_trait]
impl IdempotencyStore for MemStore {
    fn name(&self) -> &str {
        "mem"
    }

    fn durability(&self) -> Option<&dyn CrashDurability> {
        Some(self)
    }

    async fn claim(&self, scope: &Scope, fp: &Fingerprint, now: SimTime, lease_ms: u64) -> Result<Claim, StoreError> {
        Ok(self.lock().claim(scope, fp, now, lease_ms))
    }

    async fn take_over(
        &self,
        scope: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Takeover, StoreError> {
        Ok(self.lock().take_over(scope, expected, now, lease_ms))
    }

    async fn write_recovery_point(
        &self,
        scope: &Scope,
        attempt: Attempt,
        point: &RecoveryPoint,
    ) -> Result<WriteOutcome, StoreError> {
        Ok(self.lock().write_recovery_point(scope, attempt, point))
    }

    async fn complete(
        &self,
        scope: &Scope,
        attempt: Attempt,
        completion: &Completion,
    ) -> Result<WriteOutcome, StoreError> {
        Ok(self.lock().complete(scope, attempt, completion))
    }

    async fn release(&self, scope: &Scope, attempt: Attempt) -> Result<WriteOutcome, StoreError> {
        Ok(self.lock().release(scope, attempt))
    }

    async fn read(&self, scope: &Scope) -> Result<Option<Record>, StoreError> {
        Ok(self.lock().read(scope))
    }

    async fn effects(&self, scope: &Scope) -> Result<Vec<LocalEffect>, StoreError> {
        Ok(self.lock().effects(scope))
    }

    async fn sweep(&self, now: SimTime, window_ms: u64) -> Result<Vec<(Scope, Record)>, StoreError> {
        Ok(self.lock().sweep(now, window_ms))
    }

    async fn stale_in_progress(&self, now: SimTime, limit: usize) -> Result<Vec<(Scope, Record)>, StoreError> {
        Ok(self.lock().stale_in_progress(now, limit))
    }

    async fn outbox_pending(&self, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        Ok(self.lock().outbox_pending(limit))
    }

    async fn outbox_mark_published(&self, id: &MessageId) -> Result<bool, StoreError> {
        Ok(self.lock().outbox_mark_published(id))
    }

    async fn stage_outbox(&self, scope: &Scope, messages: &[OutboxMessage]) -> Result<(), StoreError> {
        self.lock().stage_outbox(scope, messages);
        Ok(())
    }
}
