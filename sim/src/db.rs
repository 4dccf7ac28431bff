//! The database node: runs store operations one message at a time and
//! records what each one did. It is the linearization point of the run: the
//! history's store events are in the order the store applied them.

use crate::msg::{CallBody, Msg, ReplyBody, StoreOp, StoreReply};
use crate::node::Node;
use crate::variant::{CompletionStep, Steps};
use crate::world::{true_now, World};
use futures::FutureExt;
use idemsim_model::history::{Origin, WriteKind};
use idemsim_model::{Claim, Event, NodeId, Takeover, WriteOutcome};
use idemsim_store::{panic_message, IdempotencyStore, StoreError};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;

/// The database node's message handler. An operation whose store answers
/// at once (the in-memory and SQLite stores always do) runs inside the
/// receive loop; one that must wait gets a task of its own.
pub(crate) fn handle(node: &Rc<Node>, msg: Msg) {
    let Msg::Call { id, from, origin, body: CallBody::Store(op) } = msg else { return };
    let mut call = Box::pin(run(node.clone(), from, id, origin, op));
    let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
    if call.as_mut().poll(&mut cx).is_pending() {
        madsim::task::spawn_local(call);
    }
}

async fn run(node: Rc<Node>, from: NodeId, id: crate::msg::CallId, origin: Origin, op: StoreOp) {
    let (store, steps) = node.sim.with(|w| (w.store.clone(), w.config.steps));
    let reply = match AssertUnwindSafe(execute(&*store, steps, &op)).catch_unwind().await {
        Ok(reply) => reply,
        Err(panic) => {
            StoreReply::Failed(StoreError::Unavailable(format!("store panicked: {}", panic_message(&*panic))))
        }
    };
    node.sim.with(|w| w.record_store(origin, &op, &reply));
    node.reply(from, id, ReplyBody::Store(reply));
}

async fn execute(store: &dyn IdempotencyStore, steps: Steps, op: &StoreOp) -> StoreReply {
    let result = match op {
        StoreOp::Claim { scope, fingerprint, now, lease_ms } => {
            store.claim(scope, fingerprint, *now, *lease_ms).await.map(StoreReply::Claim)
        }
        StoreOp::TakeOver { scope, expected, now, lease_ms } => {
            store.take_over(scope, *expected, *now, *lease_ms).await.map(StoreReply::Takeover)
        }
        StoreOp::WriteRecoveryPoint { scope, attempt, point } => {
            store.write_recovery_point(scope, *attempt, point).await.map(StoreReply::Write)
        }
        StoreOp::Complete { scope, attempt, completion } => {
            let outcome = store.complete(scope, *attempt, completion).await;
            match (steps.completion, outcome) {
                (CompletionStep::Unfenced, Ok(WriteOutcome::Fenced)) => unfenced_complete(store, op).await,
                (_, outcome) => outcome.map(StoreReply::Write),
            }
        }
        StoreOp::Release { scope, attempt } => store.release(scope, *attempt).await.map(StoreReply::Write),
        StoreOp::Read { scope } => store.read(scope).await.map(StoreReply::Record),
        StoreOp::Sweep { now, window_ms } => store.sweep(*now, *window_ms).await.map(StoreReply::Scopes),
        StoreOp::StaleInProgress { now, limit } => store.stale_in_progress(*now, *limit).await.map(StoreReply::Stale),
        StoreOp::OutboxPending { limit } => store.outbox_pending(*limit).await.map(StoreReply::Outbox),
        StoreOp::MarkPublished { id } => store.outbox_mark_published(id).await.map(|_| StoreReply::Marked),
        // A row in the application's own table: no idempotency-store call.
        StoreOp::CommitEffect { .. } => Ok(StoreReply::Write(WriteOutcome::Applied)),
        StoreOp::DeleteInProgress { scope, attempt } => store.release(scope, *attempt).await.map(StoreReply::Write),
    };
    result.unwrap_or_else(StoreReply::Failed)
}

/// The `UnfencedCompletion` flaw: `UPDATE ... WHERE caller=? AND key=?`
/// without `AND attempt=?`, so an in-progress record completes whoever
/// holds it.
async fn unfenced_complete(store: &dyn IdempotencyStore, op: &StoreOp) -> Result<StoreReply, StoreError> {
    let StoreOp::Complete { scope, completion, .. } = op else { unreachable!("called for completions") };
    match store.read(scope).await? {
        Some(r) if !r.is_completed() => store.complete(scope, r.attempt(), completion).await.map(StoreReply::Write),
        _ => Ok(StoreReply::Write(WriteOutcome::Fenced)),
    }
}

impl World {
    /// Records what a store operation did.
    pub(crate) fn record_store(&mut self, by: Origin, op: &StoreOp, reply: &StoreReply) {
        let db = NodeId::Db;
        self.note_write(op);
        match (op, reply) {
            (_, StoreReply::Failed(e)) => {
                self.record(db, Event::StoreFailed { by, op: op.name().into(), error: e.to_string() });
            }
            (StoreOp::Claim { scope, fingerprint, now, lease_ms }, StoreReply::Claim(Claim::Owned(attempt))) => {
                self.records.insert(scope.clone(), (true_now(), false));
                let (scope, fingerprint, attempt, locked_until) =
                    (scope.clone(), fingerprint.clone(), *attempt, now.plus_ms(*lease_ms));
                self.record(db, Event::Claimed { by, scope, fingerprint, attempt, locked_until });
            }
            (StoreOp::Claim { scope, now, .. }, StoreReply::Claim(Claim::Existing(record))) => {
                self.record(db, Event::ClaimFound { by, scope: scope.clone(), record: record.clone(), as_of: *now });
            }
            (StoreOp::TakeOver { scope, now, lease_ms, .. }, StoreReply::Takeover(Takeover::Granted(attempt))) => {
                let locked_until = now.plus_ms(*lease_ms);
                self.record(db, Event::TakenOver { by, scope: scope.clone(), attempt: *attempt, locked_until });
            }
            (StoreOp::TakeOver { scope, expected, .. }, StoreReply::Takeover(Takeover::Refused(_))) => {
                self.record(db, Event::TakeoverRefused { by, scope: scope.clone(), expected: *expected });
            }
            (StoreOp::WriteRecoveryPoint { scope, attempt, point }, StoreReply::Write(outcome)) => {
                let event = match outcome {
                    WriteOutcome::Applied => Event::RecoveryPointWritten {
                        by,
                        scope: scope.clone(),
                        attempt: *attempt,
                        downstream_key: point.downstream_key.clone(),
                    },
                    WriteOutcome::Fenced => fenced(by, scope, *attempt, WriteKind::RecoveryPoint),
                };
                self.record(db, event);
            }
            (StoreOp::Complete { scope, attempt, completion }, StoreReply::Write(WriteOutcome::Applied)) => {
                if let Some(r) = self.records.get_mut(scope) {
                    r.1 = true;
                }
                for event in Event::completion(by, scope, *attempt, completion) {
                    self.record(db, event);
                }
                if !completion.outbox.is_empty() {
                    self.send(db, NodeId::Relay, crate::msg::Msg::Notify);
                }
            }
            (StoreOp::Complete { scope, attempt, .. }, StoreReply::Write(WriteOutcome::Fenced)) => {
                self.record(db, fenced(by, scope, *attempt, WriteKind::Completion));
            }
            (StoreOp::Release { scope, attempt }, StoreReply::Write(outcome)) => {
                let event = match outcome {
                    WriteOutcome::Applied => {
                        self.records.remove(scope);
                        Event::Released { by, scope: scope.clone(), attempt: *attempt }
                    }
                    WriteOutcome::Fenced => fenced(by, scope, *attempt, WriteKind::Release),
                };
                self.record(db, event);
            }
            (StoreOp::CommitEffect { scope, attempt, effect }, StoreReply::Write(_)) => {
                let (scope, attempt, effect_id) = (scope.clone(), *attempt, effect.id.clone());
                self.record(db, Event::LocalEffectCommitted { by, scope, attempt, effect_id });
            }
            (StoreOp::DeleteInProgress { scope, .. }, StoreReply::Write(WriteOutcome::Applied)) => {
                let (created_at, completed) = self.records.remove(scope).unwrap_or_default();
                self.record(NodeId::Sweeper, Event::RecordSwept { scope: scope.clone(), created_at, completed });
            }
            (StoreOp::DeleteInProgress { .. }, StoreReply::Write(WriteOutcome::Fenced)) => self.step(),
            (StoreOp::Sweep { .. }, StoreReply::Scopes(swept)) => {
                for scope in swept {
                    let (created_at, completed) = self.records.remove(scope).unwrap_or_default();
                    self.record(NodeId::Sweeper, Event::RecordSwept { scope: scope.clone(), created_at, completed });
                }
            }
            (
                StoreOp::Read { .. }
                | StoreOp::StaleInProgress { .. }
                | StoreOp::OutboxPending { .. }
                | StoreOp::MarkPublished { .. },
                _,
            ) => {
                self.step();
            }
            (op, reply) => unreachable!("store reply {reply:?} does not answer {}", op.name()),
        }
    }
}

fn fenced(by: Origin, scope: &idemsim_model::Scope, attempt: idemsim_model::Attempt, write: WriteKind) -> Event {
    Event::WriteFenced { by, scope: scope.clone(), attempt, write }
}
