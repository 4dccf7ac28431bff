//! A store with a claim made of two awaited steps.

use idemsim::model::{Claim, Fingerprint, Record, RecordState, Scope, SimTime};
use idemsim::prelude::async_trait;
use idemsim::store::{CrashDurability, Delegate, IdempotencyStore, MemStore, StoreError};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A store whose claim reads, yields (as an awaited database round trip
/// does), then upserts: when the upsert finds a row that another claimer
/// inserted in between, it takes it over as if it had inserted it. Every
/// other operation is the in-memory store's (a [`Delegate`] over it).
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
impl Delegate for RacyStore {
    fn inner(&self) -> &dyn IdempotencyStore {
        &self.inner
    }

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

    /// Not opted in to lost unsynced writes, as a store of one's own is
    /// until it says otherwise.
    fn durability(&self) -> Option<&dyn CrashDurability> {
        None
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
