//! A store with a claim made of two awaited steps.

use idemsim::model::{
    Attempt, Claim, Completion, Fingerprint, LocalEffect, MessageId, OutboxEntry, Record, RecordState, RecoveryPoint,
    Scope, SimTime, Takeover, WriteOutcome,
};
use idemsim::prelude::async_trait;
use idemsim::store::{IdempotencyStore, MemStore, StoreError};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A store whose claim reads, yields (as an awaited database round trip
/// does), then upserts: when the upsert finds a row that another claimer
/// inserted in between, it takes it over as if it had inserted it. Every
/// other operation is the in-memory store's.
#[derive(Debug, Default)]
pub struct RacyStore {
    inner: MemStore,
}

impl RacyStore {
    /// An empty store.
    pub fn new() -> RacyStore {
        RacyStore::default()
    }
}

#[async_trait]
impl IdempotencyStore for RacyStore {
    fn name(&self) -> &str {
        "racy"
    }

    async fn claim(&self, scope: &Scope, fp: &Fingerprint, now: SimTime, lease_ms: u64) -> Result<Claim, StoreError> {
        if let Some(record) = self.inner.read(scope).await? {
            return Ok(Claim::Existing(record));
        }
        // The bug: the read and the insert are two round trips.
        YieldOnce::default().await;
        match self.inner.claim(scope, fp, now, lease_ms).await? {
            // "INSERT ... ON CONFLICT DO UPDATE": the row someone inserted
            // meanwhile is overwritten, and this claimer thinks it owns it.
            Claim::Existing(Record { state: RecordState::InProgress { attempt, .. }, .. }) => Ok(Claim::Owned(attempt)),
            claim => Ok(claim),
        }
    }

    async fn take_over(
        &self,
        s: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Takeover, StoreError> {
        self.inner.take_over(s, expected, now, lease_ms).await
    }

    async fn write_recovery_point(&self, s: &Scope, a: Attempt, p: &RecoveryPoint) -> Result<WriteOutcome, StoreError> {
        self.inner.write_recovery_point(s, a, p).await
    }

    async fn complete(&self, s: &Scope, a: Attempt, c: &Completion) -> Result<WriteOutcome, StoreError> {
        self.inner.complete(s, a, c).await
    }

    async fn release(&self, s: &Scope, a: Attempt) -> Result<WriteOutcome, StoreError> {
        self.inner.release(s, a).await
    }

    async fn read(&self, s: &Scope) -> Result<Option<Record>, StoreError> {
        self.inner.read(s).await
    }

    async fn effects(&self, s: &Scope) -> Result<Vec<LocalEffect>, StoreError> {
        self.inner.effects(s).await
    }

    async fn sweep(&self, now: SimTime, window_ms: u64) -> Result<Vec<Scope>, StoreError> {
        self.inner.sweep(now, window_ms).await
    }

    async fn stale_in_progress(&self, now: SimTime, limit: usize) -> Result<Vec<(Scope, Record)>, StoreError> {
        self.inner.stale_in_progress(now, limit).await
    }

    async fn outbox_pending(&self, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        self.inner.outbox_pending(limit).await
    }

    async fn outbox_mark_published(&self, id: &MessageId) -> Result<bool, StoreError> {
        self.inner.outbox_mark_published(id).await
    }
}

/// Gives other tasks one turn, like an awaited round trip to a database.
#[derive(Default)]
struct YieldOnce {
    yielded: bool,
}

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
