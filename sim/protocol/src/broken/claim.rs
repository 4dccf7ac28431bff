//! Broken claims (section 4): a read, and execution whenever the read
//! found nothing, even if the insert then finds a row.

use crate::{Claimed, Correct, Env, KeyLock, Protocol, Reply, StoreOp, StoreReply};
use async_trait::async_trait;
use idemsim_model::{Claim, Fingerprint, Scope, SimTime};

/// `claim: check-then-insert`: SELECT, then INSERT; both racers "win".
#[derive(Clone, Copy, Debug, Default)]
pub struct CheckThenInsert;

/// `claim: lock-around-lookup`: a lock service serialises the lookup, but
/// the lock is released before the insert: the race is only moved.
#[derive(Clone, Copy, Debug, Default)]
pub struct LockAroundLookup;

/// `claim: per-process-lock`: an in-process lock per key around
/// read-then-insert: safe on one server, useless across several.
#[derive(Clone, Copy, Debug, Default)]
pub struct PerProcessLock;

#[async_trait]
impl Protocol for CheckThenInsert {
    fn name(&self) -> String {
        "check-then-insert".into()
    }
    async fn claim(
        &self,
        env: &dyn Env,
        scope: &Scope,
        fp: &Fingerprint,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Claimed, Reply> {
        check_then_insert(env, scope, fp, now, lease_ms, None).await
    }
}

#[async_trait]
impl Protocol for LockAroundLookup {
    fn name(&self) -> String {
        "lock-around-lookup".into()
    }
    async fn claim(
        &self,
        env: &dyn Env,
        scope: &Scope,
        fp: &Fingerprint,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Claimed, Reply> {
        check_then_insert(env, scope, fp, now, lease_ms, Some(false)).await
    }
}

#[async_trait]
impl Protocol for PerProcessLock {
    fn name(&self) -> String {
        "per-process-lock".into()
    }
    async fn claim(
        &self,
        env: &dyn Env,
        scope: &Scope,
        fp: &Fingerprint,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Claimed, Reply> {
        check_then_insert(env, scope, fp, now, lease_ms, Some(true)).await
    }
}

/// Read, and if nothing was there, own the execution whatever the insert
/// then finds. With `lock`, a key lock is held: the lock service's
/// (`Some(false)`) around the lookup only, or this process's
/// (`Some(true)`) around the lookup and the insert.
async fn check_then_insert(
    env: &dyn Env,
    scope: &Scope,
    fp: &Fingerprint,
    now: SimTime,
    lease_ms: u64,
    lock: Option<bool>,
) -> Result<Claimed, Reply> {
    let lock = lock.map(|process_local| KeyLock { scope: scope.clone(), process_local });
    if let Some(lock) = &lock {
        env.lock(lock).await;
    }
    let read = env.store(StoreOp::Read { scope: scope.clone() }).await;
    if let Some(lock @ KeyLock { process_local: false, .. }) = &lock {
        env.unlock(lock);
    }
    let claimed = match read {
        Some(StoreReply::Record(Some(_))) => Correct.claim(env, scope, fp, now, lease_ms).await,
        Some(StoreReply::Record(None)) => Correct.claim(env, scope, fp, now, lease_ms).await.map(|claimed| {
            let forced_owner = matches!(claimed.claim, Claim::Existing(_));
            Claimed { forced_owner, ..claimed }
        }),
        _ => Err(Reply::unavailable("store unavailable", env.settings())),
    };
    if let Some(lock @ KeyLock { process_local: true, .. }) = &lock {
        env.unlock(lock);
    }
    claimed
}
