//! A protocol with a 90 s lease and a store whose completion is not
//! fenced: the pair the verdict and explore tests use, each with the bug
//! and without it.

use idemsim::prelude::*;

/// A protocol whose lease is 90 s (a serialisable-transaction store's
/// lock), otherwise the correct one.
#[derive(Clone, Copy, Debug, Default)]
pub struct LongLease;

impl Protocol for LongLease {
    fn name(&self) -> String {
        "long-lease".into()
    }
    fn lease_ms(&self, _configured_ms: u64) -> u64 {
        90_000
    }
}

/// A store whose completion is not fenced: it completes the record for
/// whichever attempt holds it, so a holder that slept through its lease
/// overwrites the execution that took over.
#[derive(Debug, Default)]
pub struct UnfencedComplete(MemStore);

#[async_trait]
impl Delegate for UnfencedComplete {
    fn inner(&self) -> &dyn IdempotencyStore {
        &self.0
    }
    async fn complete(&self, s: &Scope, _a: Attempt, c: &Completion) -> Result<WriteOutcome, StoreError> {
        let holder = match self.0.read(s).await?.map(|r| r.state) {
            Some(RecordState::InProgress { attempt, .. }) => attempt,
            _ => return Ok(WriteOutcome::Fenced),
        };
        self.0.complete(s, holder, c).await
    }
}
