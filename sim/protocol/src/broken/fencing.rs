//! Broken fencing (section 6): the takeover, the downstream key and the
//! completion.

use crate::execution::attempt_downstream_key;
use crate::{Correct, Env, Protocol, StoreOp, StoreReply};
use async_trait::async_trait;
use idemsim_model::{
    Attempt, Completion, DownstreamKey, Fingerprint, RecordState, Scope, SimTime, Takeover, WriteOutcome,
};

/// `takeover: keep-attempt`: an expired lease is "taken over" by carrying
/// on with the old attempt, so two holders share one fencing token.
#[derive(Clone, Copy, Debug, Default)]
pub struct TakeoverWithoutBump;

#[async_trait]
impl Protocol for TakeoverWithoutBump {
    fn name(&self) -> String {
        "takeover-without-bump".into()
    }
    async fn take_over(
        &self,
        _env: &dyn Env,
        _s: &Scope,
        expected: Attempt,
        _now: SimTime,
        _lease_ms: u64,
    ) -> Option<Takeover> {
        Some(Takeover::Granted(expected))
    }
}

/// `downstream-key: per-attempt`: the dependency's key is derived from the
/// attempt, so a resumed execution charges again.
#[derive(Clone, Copy, Debug, Default)]
pub struct DownstreamKeyFromAttempt;

impl Protocol for DownstreamKeyFromAttempt {
    fn name(&self) -> String {
        "downstream-key-from-attempt".into()
    }
    fn downstream_key(
        &self,
        scope: &Scope,
        _fp: &Fingerprint,
        attempt: Attempt,
        _recorded: Option<&DownstreamKey>,
    ) -> DownstreamKey {
        attempt_downstream_key(scope, attempt)
    }
}

/// `downstream-key: per-execution`: each execution makes up a fresh
/// provider key (here, from its attempt) and saves it in the recovery
/// point; a resumer reuses the key it read there. It looks as safe as the
/// correct key, and is not: a request that read the record before the
/// holder wrote its recovery point, and then takes it over, finds no key
/// to reuse and makes up its own, so the provider charges twice. The
/// correct protocol survives that read because its key is a pure function
/// of the request (scope and fingerprint): whoever derives it, derives the
/// same one.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProviderKeyPerExecution;

impl Protocol for ProviderKeyPerExecution {
    fn name(&self) -> String {
        "provider-key-per-execution".into()
    }
    fn downstream_key(
        &self,
        scope: &Scope,
        _fp: &Fingerprint,
        attempt: Attempt,
        recorded: Option<&DownstreamKey>,
    ) -> DownstreamKey {
        recorded.cloned().unwrap_or_else(|| attempt_downstream_key(scope, attempt))
    }
}

/// `completion: unfenced`: `UPDATE ... WHERE caller=? AND key=?` without
/// `AND attempt=?`. Written through the store's API: when the fenced write
/// is refused, the record is read and completed with whatever attempt
/// holds it now, so a stale holder's completion lands.
#[derive(Clone, Copy, Debug, Default)]
pub struct UnfencedCompletion;

#[async_trait]
impl Protocol for UnfencedCompletion {
    fn name(&self) -> String {
        "unfenced-completion".into()
    }
    async fn complete(
        &self,
        env: &dyn Env,
        scope: &Scope,
        attempt: Attempt,
        completion: Completion,
    ) -> Option<StoreReply> {
        let outcome = Correct.complete(env, scope, attempt, completion.clone()).await;
        if !matches!(outcome, Some(StoreReply::Write(WriteOutcome::Fenced))) {
            return outcome;
        }
        match env.store(StoreOp::Read { scope: scope.clone() }).await {
            Some(StoreReply::Record(Some(r))) => match r.state {
                RecordState::InProgress { attempt: holder, .. } => {
                    Correct.complete(env, scope, holder, completion).await
                }
                _ => outcome,
            },
            _ => outcome,
        }
    }
}
