//! The background jobs: the reconciler that finishes stale `in_progress`
//! records (section 6), the sweeper (section 8) and one pass of the outbox
//! relay. Every environment runs this one copy.

use crate::execution::{completion, declined, request_from};
use crate::{ChargeAnswer, Env, Protocol, StoreOp, StoreReply};
use idemsim_model::{Event, Record, RecordState, Scope, Takeover};

/// Records a scan or a relay pass takes at a time.
pub const BATCH: usize = 16;

/// Every `reconcile_interval_ms` while there is work, backing off to
/// `reconcile_idle_max_ms` while there is none: take over stale records and
/// finish them from their recovery point, or release them when nothing had
/// begun. Runs until the environment drops it.
pub async fn reconciler<P: Protocol + ?Sized>(p: &P, env: &dyn Env) {
    let settings = env.settings();
    let (busy_ms, idle_max_ms) =
        (settings.reconcile_interval_ms, settings.reconcile_idle_max_ms.max(settings.reconcile_interval_ms));
    let mut wait_ms = busy_ms;
    loop {
        env.sleep_ms(wait_ms).await;
        let now = env.now();
        let Some(StoreReply::Stale(stale)) = env.store(StoreOp::StaleInProgress { now, limit: BATCH }).await else {
            continue;
        };
        wait_ms = match stale.is_empty() {
            true => (wait_ms * 2).min(idle_max_ms),
            false => busy_ms,
        };
        for (scope, record) in stale {
            resume(p, env, scope, record).await;
        }
    }
}

/// Takes over one stale record and finishes it.
pub async fn resume<P: Protocol + ?Sized>(p: &P, env: &dyn Env, scope: Scope, record: Record) {
    let RecordState::InProgress { attempt, .. } = record.state else { return };
    let lease_ms = p.lease_ms(env.settings().lease_ms);
    let Some(Takeover::Granted(attempt)) = p.take_over(env, &scope, attempt, env.now(), lease_ms).await else {
        return;
    };
    env.record(Event::ExecutionStarted { by: env.origin(), scope: scope.clone(), attempt });
    // Decide from the record as it is now that the takeover has fenced the
    // old holder, not from the scan: the holder may have written its
    // recovery point (and called the dependency) in between, and releasing
    // on that stale read would let a later request with the key charge again.
    let Some(StoreReply::Record(Some(current))) = env.store(StoreOp::Read { scope: scope.clone() }).await else {
        return; // unknown: the record stays in_progress and a later scan retries
    };
    let RecordState::InProgress { attempt: held, recovery_point, .. } = current.state else { return };
    if held != attempt {
        return;
    }
    let resumable = recovery_point.and_then(|point| request_from(&point.data).map(|r| (point.downstream_key, r)));
    let Some((recorded, request)) = resumable else {
        // Nothing external began: release, so the next retry executes afresh.
        let _ = env.store(StoreOp::Release { scope, attempt }).await;
        return;
    };
    let key = p.downstream_key(&scope, &crate::fingerprint(p, &request), attempt, Some(&recorded));
    let stamp = env.stamp(attempt);
    let mut done = match env.charge(&scope, attempt, key, &request).await {
        ChargeAnswer::Charged(id) => completion(&scope, current.created_at, &request, Some(&id), stamp.as_deref()),
        ChargeAnswer::Declined => declined(&scope, &request, stamp.as_deref()),
        answer => {
            // The same step as a request's execution; nobody waits for the reply.
            let reply = crate::server::failure_reply(&answer, env.settings());
            p.dependency_failed(env, &scope, attempt, &answer, reply).await;
            return;
        }
    };
    if p.before_commit(env, &scope, attempt, &mut done).await.is_err() {
        return;
    }
    let _ = p.complete(env, &scope, attempt, done).await;
}

/// Every `sweep_interval_ms`: one pass of the protocol's sweep with the
/// sweep window. Runs until the environment drops it.
pub async fn sweeper<P: Protocol + ?Sized>(p: &P, env: &dyn Env) {
    let (interval_ms, window_ms) = (env.settings().sweep_interval_ms, env.settings().sweep_window_ms);
    loop {
        env.sleep_ms(interval_ms).await;
        p.sweep(env, env.now(), window_ms).await;
    }
}

/// One pass of the outbox relay: publish what is pending, and mark each
/// message the consumer acknowledged.
pub async fn relay_pass(env: &dyn Env) {
    let Some(StoreReply::Outbox(pending)) = env.store(StoreOp::OutboxPending { limit: BATCH }).await else {
        return;
    };
    for entry in pending {
        let id = entry.message.id.clone();
        env.record(Event::MessagePublished { id: id.clone(), scope: entry.scope.clone() });
        if env.publish(entry).await {
            let _ = env.store(StoreOp::MarkPublished { id }).await;
        }
    }
}
