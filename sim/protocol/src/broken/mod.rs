//! The catalogue's broken steps, each a small [`Protocol`] that overrides
//! one method, and [`Steps`] (the serialisable description that scenario
//! files and `explain` use) mapped onto the trait: each of its fields picks
//! the correct method or one of these.

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

#[async_trait]
impl Protocol for Steps {
    fn name(&self) -> String {
        match self.broken().is_empty() {
            true => "correct".into(),
            false => self.broken().join(", "),
        }
    }

    fn scope(&self, request: &Request) -> Option<Scope> {
        match self.scope {
            ScopeStep::CallerAndKey => Correct.scope(request),
            ScopeStep::KeyOnly => KeyNotScoped.scope(request),
            ScopeStep::KeyAndBody => KeyIncludesBody.scope(request),
        }
    }

    fn lease_ms(&self, configured_ms: u64) -> u64 {
        match self.lease {
            LeaseStep::Leased => Correct.lease_ms(configured_ms),
            LeaseStep::None => NoLease.lease_ms(configured_ms),
            LeaseStep::ShorterThanWork => LeaseShorterThanWork.lease_ms(configured_ms),
        }
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
        let claimed = match self.claim {
            ClaimStep::Atomic => Correct.claim(env, s, fp, now, lease_ms).await,
            ClaimStep::CheckThenInsert => CheckThenInsert.claim(env, s, fp, now, lease_ms).await,
            ClaimStep::LockAroundLookup => LockAroundLookup.claim(env, s, fp, now, lease_ms).await,
            ClaimStep::PerProcessLock => PerProcessLock.claim(env, s, fp, now, lease_ms).await,
        }?;
        match self.lease {
            LeaseStep::ShorterThanWork => record::give_back_if_lease_ran_out(env, s, claimed, now, lease_ms).await,
            LeaseStep::Leased | LeaseStep::None => Ok(claimed),
        }
    }

    fn fingerprint_fields<'r>(&self, request: &'r Request) -> (&'r str, &'r str, &'r [u8]) {
        match self.fingerprint {
            FingerprintStep::BodyOnly => FingerprintWithoutPath.fingerprint_fields(request),
            FingerprintStep::Compared | FingerprintStep::Ignored => Correct.fingerprint_fields(request),
        }
    }

    fn fingerprint_matches(&self, record: &Record, fingerprint: &Fingerprint) -> bool {
        match self.fingerprint {
            FingerprintStep::Ignored => FingerprintNotCompared.fingerprint_matches(record, fingerprint),
            FingerprintStep::Compared | FingerprintStep::BodyOnly => Correct.fingerprint_matches(record, fingerprint),
        }
    }

    fn replay(&self, stored: StoredResponse) -> StoredResponse {
        Correct.replay(stored)
    }

    async fn reject_invalid(&self, env: &dyn Env, scope: &Scope, attempt: Attempt, reply: &Reply) {
        match self.validation {
            ValidationStep::Release => Correct.reject_invalid(env, scope, attempt, reply).await,
            ValidationStep::Store => ValidationStored.reject_invalid(env, scope, attempt, reply).await,
        }
    }

    async fn take_over(
        &self,
        env: &dyn Env,
        s: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Option<Takeover> {
        let taken = match self.takeover {
            TakeoverStep::BumpAttempt => Correct.take_over(env, s, expected, now, lease_ms).await,
            TakeoverStep::KeepAttempt => TakeoverWithoutBump.take_over(env, s, expected, now, lease_ms).await,
        }?;
        Some(match self.lease {
            LeaseStep::ShorterThanWork => {
                record::give_back_takeover_if_lease_ran_out(env, s, taken, now, lease_ms).await
            }
            LeaseStep::Leased | LeaseStep::None => taken,
        })
    }

    fn downstream_key(
        &self,
        s: &Scope,
        fp: &Fingerprint,
        attempt: Attempt,
        recorded: Option<&DownstreamKey>,
    ) -> DownstreamKey {
        match self.downstream_key {
            DownstreamKeyStep::Stable => Correct.downstream_key(s, fp, attempt, recorded),
            DownstreamKeyStep::PerAttempt => DownstreamKeyFromAttempt.downstream_key(s, fp, attempt, recorded),
            DownstreamKeyStep::PerExecution => ProviderKeyPerExecution.downstream_key(s, fp, attempt, recorded),
        }
    }

    async fn before_commit(
        &self,
        env: &dyn Env,
        s: &Scope,
        attempt: Attempt,
        completion: &mut Completion,
    ) -> Result<(), Reply> {
        if self.local_effect == LocalEffectStep::OwnTransaction {
            EffectOwnTransaction.before_commit(env, s, attempt, completion).await?;
        }
        if self.publish == PublishStep::BeforeCommit {
            PublishBeforeCommit.before_commit(env, s, attempt, completion).await?;
        }
        Ok(())
    }

    async fn complete(&self, env: &dyn Env, s: &Scope, attempt: Attempt, completion: Completion) -> Option<StoreReply> {
        match self.completion {
            CompletionStep::Fenced => Correct.complete(env, s, attempt, completion).await,
            CompletionStep::Unfenced => UnfencedCompletion.complete(env, s, attempt, completion).await,
        }
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
            DependencyFailureStep::LeaveInProgress => Correct.dependency_failed(env, s, attempt, answer, reply).await,
            DependencyFailureStep::StoreError => commit::store_the_error(self, env, s, attempt, reply).await,
            DependencyFailureStep::Release => commit::release_for_retry(env, s, attempt, reply).await,
        }
    }

    async fn sweep(&self, env: &dyn Env, now: SimTime, window_ms: u64) {
        match self.sweep {
            SweepStep::Documented => Correct.sweep(env, now, window_ms).await,
            SweepStep::ShortWindow => SweepWindowShort.sweep(env, now, window_ms).await,
            SweepStep::DeletesUnfinished => SweepDeletesUnfinished.sweep(env, now, window_ms).await,
        }
    }

    fn retries(&self, status: u16) -> bool {
        match self.retry {
            RetryStep::On4xx => RetryOn4xx.retries(status),
            _ => Correct.retries(status),
        }
    }

    fn backoff_ms(&self, env: &dyn ClientEnv, bound_ms: u64) -> u64 {
        match self.retry {
            RetryStep::NoJitter => NoJitter.backoff_ms(env, bound_ms),
            _ => Correct.backoff_ms(env, bound_ms),
        }
    }

    fn request_for_try(&self, request: &Request, try_no: u32) -> Request {
        match self.retry {
            RetryStep::NewKey => NewKeyPerRetry.request_for_try(request, try_no),
            _ => Correct.request_for_try(request, try_no),
        }
    }

    fn retry_layers(&self) -> u32 {
        match self.retry {
            RetryStep::ThreeLayers => ThreeLayerRetries.retry_layers(),
            _ => Correct.retry_layers(),
        }
    }
}

impl Steps {
    /// The steps as the protocol of one run. A server-cache read keeps
    /// state (each server's memory), so it wraps the steps in a
    /// [`StaleCache`] made for the run; the steps alone ignore `read`.
    pub fn protocol(self) -> std::sync::Arc<dyn Protocol> {
        match self.read {
            ReadStep::Store => std::sync::Arc::new(self),
            ReadStep::ServerCache => std::sync::Arc::new(StaleCache::new(Steps { read: ReadStep::Store, ..self })),
        }
    }
}

impl Variant {
    /// The variant as a protocol: the correct one, or the small
    /// implementation that overrides its one broken step.
    pub fn protocol(self) -> std::sync::Arc<dyn Protocol> {
        use std::sync::Arc;
        match self {
            Variant::Correct => Arc::new(Correct),
            Variant::CheckThenInsert => Arc::new(CheckThenInsert),
            Variant::LockAroundLookup => Arc::new(LockAroundLookup),
            Variant::PerProcessLock => Arc::new(PerProcessLock),
            Variant::NoLease => Arc::new(NoLease),
            Variant::TakeoverWithoutBump => Arc::new(TakeoverWithoutBump),
            Variant::UnfencedCompletion => Arc::new(UnfencedCompletion),
            Variant::TransientErrorStored => Arc::new(TransientErrorStored),
            Variant::FingerprintNotCompared => Arc::new(FingerprintNotCompared),
            Variant::ValidationStored => Arc::new(ValidationStored),
            Variant::KeyNotScoped => Arc::new(KeyNotScoped),
            Variant::KeyIncludesBody => Arc::new(KeyIncludesBody),
            Variant::FingerprintWithoutPath => Arc::new(FingerprintWithoutPath),
            Variant::StaleCache => Arc::new(StaleCache::new(Correct)),
            Variant::LeaseShorterThanWork => Arc::new(LeaseShorterThanWork),
            Variant::DownstreamKeyFromAttempt => Arc::new(DownstreamKeyFromAttempt),
            Variant::EffectOwnTransaction => Arc::new(EffectOwnTransaction),
            Variant::PublishBeforeCommit => Arc::new(PublishBeforeCommit),
            Variant::SweepWindowShort => Arc::new(SweepWindowShort),
            Variant::SweepDeletesUnfinished => Arc::new(SweepDeletesUnfinished),
            Variant::ReleaseOnProviderTimeout => Arc::new(ReleaseOnProviderTimeout),
            Variant::ProviderKeyPerExecution => Arc::new(ProviderKeyPerExecution),
            Variant::RetryOn4xx => Arc::new(RetryOn4xx),
            Variant::NewKeyPerRetry => Arc::new(NewKeyPerRetry),
            Variant::NoJitter => Arc::new(NoJitter),
            Variant::ThreeLayerRetries => Arc::new(ThreeLayerRetries),
        }
    }
}
