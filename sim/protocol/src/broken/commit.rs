//! Broken commits (sections 5 and 6): work done before the completing
//! transaction instead of in it.

use crate::{ChargeAnswer, Env, Protocol, Reply, StoreOp};
use async_trait::async_trait;
use idemsim_model::{Attempt, Completion, Event, OutboxEntry, Scope};

/// `dependency-failure: store-error`: when the dependency fails or does
/// not answer, the handler completes the record with its 503. The charge
/// may have gone through all the same, and every retry now replays a
/// transient error that can never succeed.
#[derive(Clone, Copy, Debug, Default)]
pub struct TransientErrorStored;

#[async_trait]
impl Protocol for TransientErrorStored {
    fn name(&self) -> String {
        "transient-error-stored".into()
    }
    async fn dependency_failed(
        &self,
        env: &dyn Env,
        scope: &Scope,
        attempt: Attempt,
        _answer: &ChargeAnswer,
        reply: Reply,
    ) -> Reply {
        store_the_error(self, env, scope, attempt, reply).await
    }
}

/// `dependency-failure: release`: when the dependency refuses or does not
/// answer, the handler releases the record so that the client's retry
/// executes at once instead of waiting out the lease. Safe when the
/// dependency said it charged nothing (429, 503); not when it did not
/// answer: the charge may have gone through, the release forgets it, and
/// the recovery point with its downstream key goes with it. A retry with
/// the same body collapses onto the charge by luck (its key is derived
/// again), but a retry with another body charges a second time, and a
/// client that gives up leaves a charge no record knows of.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReleaseOnProviderTimeout;

#[async_trait]
impl Protocol for ReleaseOnProviderTimeout {
    fn name(&self) -> String {
        "release-on-provider-timeout".into()
    }
    async fn dependency_failed(
        &self,
        env: &dyn Env,
        scope: &Scope,
        attempt: Attempt,
        _answer: &ChargeAnswer,
        reply: Reply,
    ) -> Reply {
        release_for_retry(env, scope, attempt, reply).await
    }
}

/// Releases the record `attempt` holds, and answers `reply`.
pub(crate) async fn release_for_retry(env: &dyn Env, scope: &Scope, attempt: Attempt, reply: Reply) -> Reply {
    let _ = env.store(StoreOp::Release { scope: scope.clone(), attempt }).await;
    reply
}

/// Completes the record with `reply` (through `p`'s completion step), and
/// answers it.
pub(crate) async fn store_the_error<P: Protocol + ?Sized>(
    p: &P,
    env: &dyn Env,
    scope: &Scope,
    attempt: Attempt,
    reply: Reply,
) -> Reply {
    let completion = Completion { response: reply.response.clone(), local_effect: None, outbox: Vec::new() };
    let _ = p.complete(env, scope, attempt, completion).await;
    reply
}

/// `local-effect: own-transaction`: the local effect row is committed in a
/// transaction of its own before the completion, so a crash in between
/// leaves the effect without the record.
#[derive(Clone, Copy, Debug, Default)]
pub struct EffectOwnTransaction;

#[async_trait]
impl Protocol for EffectOwnTransaction {
    fn name(&self) -> String {
        "effect-own-transaction".into()
    }
    async fn before_commit(
        &self,
        env: &dyn Env,
        scope: &Scope,
        attempt: Attempt,
        completion: &mut Completion,
    ) -> Result<(), Reply> {
        commit_effect_alone(env, scope, attempt, completion).await
    }
}

/// `publish: before-commit`: follow-on messages are published by the
/// handler before the completion commits, so a completion that never
/// commits still sent its message (and a retry sends another).
#[derive(Clone, Copy, Debug, Default)]
pub struct PublishBeforeCommit;

#[async_trait]
impl Protocol for PublishBeforeCommit {
    fn name(&self) -> String {
        "publish-before-commit".into()
    }
    async fn before_commit(
        &self,
        env: &dyn Env,
        scope: &Scope,
        _attempt: Attempt,
        completion: &mut Completion,
    ) -> Result<(), Reply> {
        publish_now(env, scope, completion).await;
        Ok(())
    }
}

/// Takes the local effect out of the completion and commits it alone.
pub(crate) async fn commit_effect_alone(
    env: &dyn Env,
    scope: &Scope,
    attempt: Attempt,
    completion: &mut Completion,
) -> Result<(), Reply> {
    let Some(effect) = completion.local_effect.take() else { return Ok(()) };
    match env.store(StoreOp::CommitEffect { scope: scope.clone(), attempt, effect }).await {
        Some(_) => Ok(()),
        None => Err(Reply::unavailable("store unavailable", env.settings())),
    }
}

/// Takes the outbox messages out of the completion and publishes them.
pub(crate) async fn publish_now(env: &dyn Env, scope: &Scope, completion: &mut Completion) {
    for message in std::mem::take(&mut completion.outbox) {
        let entry = OutboxEntry { scope: scope.clone(), message };
        env.record(Event::MessagePublished { id: entry.message.id.clone(), scope: scope.clone() });
        env.publish(entry).await;
    }
}
