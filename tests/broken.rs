//! Stores that are wrong on purpose, each in exactly one way.

use async_trait::async_trait;
use idemsim_model::{
    Attempt, Claim, Completion, Fingerprint, LocalEffect, MessageId, OutboxEntry, Record, RecordState, RecoveryPoint,
    Scope, SimTime, Takeover, WriteOutcome,
};
use idemsim_store::{IdempotencyStore, MemStore, StoreError};

/// What is wrong with a [`Broken`] store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flaw {
    /// `completion: unfenced`, the catalogue step, in the store: `complete`
    /// ignores the attempt, so a stale holder's completion lands.
    UnfencedCompletion,
    /// `take_over` panics.
    PanicsOnTakeover,
    /// `read` never answers.
    HangsOnRead,
    /// `complete` answers with an error.
    ErrsOnComplete,
}

/// A `MemStore` with one flaw.
pub struct Broken {
    inner: MemStore,
    flaw: Flaw,
}

impl Broken {
    /// A fresh store with `flaw`.
    pub fn new(flaw: Flaw) -> Broken {
        Broken { inner: MemStore::new(), flaw }
    }
}

#[async_trait]
impl IdempotencyStore for Broken {
    fn name(&self) -> &str {
        match self.flaw {
            Flaw::UnfencedCompletion => "mem with completion: unfenced",
            Flaw::PanicsOnTakeover => "mem that panics in take_over",
            Flaw::HangsOnRead => "mem that hangs in read",
            Flaw::ErrsOnComplete => "mem that errs in complete",
        }
    }

    async fn claim(&self, scope: &Scope, fp: &Fingerprint, now: SimTime, lease_ms: u64) -> Result<Claim, StoreError> {
        self.inner.claim(scope, fp, now, lease_ms).await
    }

    async fn take_over(
        &self,
        scope: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Takeover, StoreError> {
        assert!(self.flaw != Flaw::PanicsOnTakeover, "deliberate panic in take_over");
        self.inner.take_over(scope, expected, now, lease_ms).await
    }

    async fn write_recovery_point(
        &self,
        scope: &Scope,
        attempt: Attempt,
        point: &RecoveryPoint,
    ) -> Result<WriteOutcome, StoreError> {
        self.inner.write_recovery_point(scope, attempt, point).await
    }

    async fn complete(
        &self,
        scope: &Scope,
        attempt: Attempt,
        completion: &Completion,
    ) -> Result<WriteOutcome, StoreError> {
        if self.flaw == Flaw::ErrsOnComplete {
            return Err(StoreError::Conflict("deliberate error".into()));
        }
        if self.flaw == Flaw::UnfencedCompletion {
            // The flaw: complete whatever attempt holds the record now.
            if let Some(Record { state: RecordState::InProgress { attempt: holder, .. }, .. }) =
                self.inner.read(scope).await?
            {
                return self.inner.complete(scope, holder, completion).await;
            }
        }
        self.inner.complete(scope, attempt, completion).await
    }

    async fn release(&self, scope: &Scope, attempt: Attempt) -> Result<WriteOutcome, StoreError> {
        self.inner.release(scope, attempt).await
    }

    async fn read(&self, scope: &Scope) -> Result<Option<Record>, StoreError> {
        if self.flaw == Flaw::HangsOnRead {
            std::future::pending::<()>().await;
        }
        self.inner.read(scope).await
    }

    async fn effects(&self, scope: &Scope) -> Result<Vec<LocalEffect>, StoreError> {
        self.inner.effects(scope).await
    }

    async fn sweep(&self, now: SimTime, window_ms: u64) -> Result<Vec<(Scope, Record)>, StoreError> {
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
