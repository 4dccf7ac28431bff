//! Broken sweeps (section 8).

use crate::{Correct, Env, Protocol, StoreOp, StoreReply};
use async_trait::async_trait;
use idemsim_model::SimTime;

/// The window of [`SweepWindowShort`]: an hour.
pub const SHORT_WINDOW_MS: u64 = 3_600_000;

/// `sweep: short-window`: completed records are deleted after an hour (or
/// a 24th of the documented window, if that is shorter), while clients
/// still retry, so a late retry executes again.
#[derive(Clone, Copy, Debug, Default)]
pub struct SweepWindowShort;

#[async_trait]
impl Protocol for SweepWindowShort {
    fn name(&self) -> String {
        "sweep-window-short".into()
    }
    async fn sweep(&self, env: &dyn Env, now: SimTime, window_ms: u64) {
        Correct.sweep(env, now, window_ms.min(SHORT_WINDOW_MS).min(window_ms / 24)).await;
    }
}

/// `sweep: deletes-unfinished`: an `in_progress` record whose lease
/// expired is taken for abandoned and deleted, recovery point and all.
#[derive(Clone, Copy, Debug, Default)]
pub struct SweepDeletesUnfinished;

#[async_trait]
impl Protocol for SweepDeletesUnfinished {
    fn name(&self) -> String {
        "sweep-deletes-unfinished".into()
    }
    async fn sweep(&self, env: &dyn Env, now: SimTime, window_ms: u64) {
        Correct.sweep(env, now, window_ms).await;
        let limit = crate::jobs::BATCH;
        let Some(StoreReply::Stale(stale)) = env.store(StoreOp::StaleInProgress { now, limit }).await else {
            return;
        };
        for (scope, record) in stale {
            let _ = env.store(StoreOp::DeleteInProgress { scope, attempt: record.attempt() }).await;
        }
    }
}
