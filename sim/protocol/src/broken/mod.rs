//! The catalogue's broken steps, each a small [`Protocol`] that overrides
//! one method, and [`Steps`] (the serialisable description that scenario
//! files and `explain` use) mapped onto the trait: each of its fields picks
//! the implementation whose method runs, by the table in `variant.rs`.

mod cache;
mod claim;
mod commit;
mod fencing;
mod record;
mod retry;
mod sweep;

pub use cache::StaleCache;
pub use claim::{CheckThenInsert, LockAroundLookup, PerProcessLock};
pub use commit::{EffectOwnTransaction, PublishBeforeCommit, ReleaseOnProviderTimeout, TransientErrorStored};
pub use fencing::{DownstreamKeyFromAttempt, ProviderKeyPerExecution, TakeoverWithoutBump, UnfencedCompletion};
pub use record::{
    FingerprintNotCompared, FingerprintWithoutPath, KeyIncludesBody, KeyNotScoped, LeaseShorterThanWork, NoLease,
    ValidationStored, ENDLESS_LEASE_MS,
};
pub use retry::{NewKeyPerRetry, NoJitter, RetryOn4xx, ThreeLayerRetries};
pub use sweep::{SweepDeletesUnfinished, SweepWindowShort, SHORT_WINDOW_MS};

use crate::variant::*;
use crate::{ChargeAnswer, Claimed, ClientEnv, Correct, Env, Protocol, Reply, StoreReply};
use async_trait::async_trait;
use idemsim_model::{
    Attempt, Completion, DownstreamKey, Fingerprint, Record, Request, Scope, SimTime, StoredResponse, Takeover,
};

/// Each method runs the implementation of the step it belongs to; the
/// few steps that wrap another (a lease shorter than the work gives back
/// what the claim or takeover got; a stored error completes through the
/// completion step) say so here.
#[async_trait]
impl Protocol for Steps {
    /// The catalogue's name when the steps are one of its variants, else
    /// the broken steps.
    fn name(&self) -> String {
        match Variant::ALL.into_iter().find(|v| v.steps() == *self) {
            Some(variant) => variant.name().into(),
            None => self.broken().join(", "),
        }
    }

    fn scope(&self, request: &Request) -> Option<Scope> {
        self.scope.implementation().scope(request)
    }

    fn lease_ms(&self, configured_ms: u64) -> u64 {
        self.lease.implementation().lease_ms(configured_ms)
    }

    async fn claim(
        &self,
        env: &dyn Env,
        s: &Scope,
        fp: &Fingerprint,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Claimed, Reply> {
        assert!(
            self.read == ReadStep::Store,
            "read: server-cache keeps each server's memory: run `Steps::protocol()`, not the bare steps"
        );
        let claimed = self.claim.implementation().claim(env, s, fp, now, lease_ms).await?;
        match self.lease {
            LeaseStep::ShorterThanWork => record::give_back_if_lease_ran_out(env, s, claimed, now, lease_ms).await,
            _ => Ok(claimed),
        }
    }

    fn fingerprint_fields<'r>(&self, request: &'r Request) -> (&'r str, &'r str, &'r [u8]) {
        self.fingerprint.implementation().fingerprint_fields(request)
    }

    fn fingerprint_matches(&self, record: &Record, fingerprint: &Fingerprint) -> bool {
        self.fingerprint.implementation().fingerprint_matches(record, fingerprint)
    }

    fn replay(&self, stored: StoredResponse) -> StoredResponse {
        Correct.replay(stored)
    }

    async fn reject_invalid(&self, env: &dyn Env, scope: &Scope, attempt: Attempt, reply: &Reply) {
        self.validation.implementation().reject_invalid(env, scope, attempt, reply).await
    }

    async fn take_over(
        &self,
        env: &dyn Env,
        s: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Option<Takeover> {
        let taken = self.takeover.implementation().take_over(env, s, expected, now, lease_ms).await?;
        Some(match self.lease {
            LeaseStep::ShorterThanWork => {
                record::give_back_takeover_if_lease_ran_out(env, s, taken, now, lease_ms).await
            }
            _ => taken,
        })
    }

    fn downstream_key(
        &self,
        s: &Scope,
        fp: &Fingerprint,
        attempt: Attempt,
        recorded: Option<&DownstreamKey>,
    ) -> DownstreamKey {
        self.downstream_key.implementation().downstream_key(s, fp, attempt, recorded)
    }

    async fn before_commit(
        &self,
        env: &dyn Env,
        s: &Scope,
        attempt: Attempt,
        completion: &mut Completion,
    ) -> Result<(), Reply> {
        self.local_effect.implementation().before_commit(env, s, attempt, completion).await?;
        self.publish.implementation().before_commit(env, s, attempt, completion).await
    }

    async fn complete(&self, env: &dyn Env, s: &Scope, attempt: Attempt, completion: Completion) -> Option<StoreReply> {
        self.completion.implementation().complete(env, s, attempt, completion).await
    }

    async fn dependency_failed(
        &self,
        env: &dyn Env,
        s: &Scope,
        attempt: Attempt,
        answer: &ChargeAnswer,
        reply: Reply,
    ) -> Reply {
        match self.dependency_failure {
            // Through these steps' completion, fenced or not.
            DependencyFailureStep::StoreError => commit::store_the_error(self, env, s, attempt, reply).await,
            other => other.implementation().dependency_failed(env, s, attempt, answer, reply).await,
        }
    }

    async fn sweep(&self, env: &dyn Env, now: SimTime, window_ms: u64) {
        self.sweep.implementation().sweep(env, now, window_ms).await
    }

    fn retries(&self, status: u16) -> bool {
        self.retry.implementation().retries(status)
    }

    fn backoff_ms(&self, env: &dyn ClientEnv, bound_ms: u64) -> u64 {
        self.retry.implementation().backoff_ms(env, bound_ms)
    }

    fn request_for_try(&self, request: &Request, try_no: u32) -> Request {
        self.retry.implementation().request_for_try(request, try_no)
    }

    fn retry_layers(&self) -> u32 {
        self.retry.implementation().retry_layers()
    }
}

impl Steps {
    /// The steps as the protocol of one run. A server-cache read keeps
    /// state (each server's memory), so it wraps the steps in a
    /// [`StaleCache`] made for the run; the steps alone ignore `read`.
    pub fn protocol(self) -> std::sync::Arc<dyn Protocol> {
        match self.read {
            ReadStep::Store => std::sync::Arc::new(self),
            ReadStep::ServerCache => {
                std::sync::Arc::new(StaleCache::named(Steps { read: ReadStep::Store, ..self }, self.name()))
            }
        }
    }
}
