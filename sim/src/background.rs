//! Background jobs: the reconciler that finishes stale `in_progress`
//! records, the sweeper that expires old ones, and the outbox relay.

use crate::execution::{attempt_downstream_key, completion, request_from};
use crate::msg::{CallBody, ReplyBody, StoreOp, StoreReply};
use crate::node::{sleep_ms, Node};
use crate::variant::{DownstreamKeyStep, SweepStep};
use futures::StreamExt;
use idemsim_model::history::Origin;
use idemsim_model::{Event, NodeId, Record, RecordState, Scope, Takeover};
use std::rc::Rc;

const BATCH: usize = 16;

async fn store(node: &Node, origin: Origin, op: StoreOp) -> Option<StoreReply> {
    let timeout = node.sim.with(|w| w.config.protocol.store_timeout_ms);
    match node.call(NodeId::Db, origin, CallBody::Store(op), timeout).await? {
        ReplyBody::Store(StoreReply::Failed(_)) => None,
        ReplyBody::Store(reply) => Some(reply),
        _ => None,
    }
}

/// Every `reconcile_interval_ms` while there is work, backing off to
/// `reconcile_idle_max_ms` while there is none: take over stale records and
/// finish them from their recovery point, or release them when nothing had
/// begun.
pub(crate) async fn reconciler(node: Rc<Node>) {
    let (busy_ms, idle_max_ms) = node.sim.with(|w| {
        let p = &w.config.protocol;
        (p.reconcile_interval_ms, p.reconcile_idle_max_ms.max(p.reconcile_interval_ms))
    });
    let mut wait_ms = busy_ms;
    loop {
        sleep_ms(wait_ms).await;
        let now = node.now();
        let Some(StoreReply::Stale(stale)) =
            store(&node, Origin::Reconciler, StoreOp::StaleInProgress { now, limit: BATCH }).await
        else {
            continue;
        };
        wait_ms = match stale.is_empty() {
            true => (wait_ms * 2).min(idle_max_ms),
            false => busy_ms,
        };
        for (scope, record) in stale {
            resume(&node, scope, record).await;
        }
    }
}

async fn resume(node: &Node, scope: Scope, record: Record) {
    let RecordState::InProgress { attempt, .. } = record.state else { return };
    let lease_ms = node.sim.with(|w| w.lease_ms());
    let op = StoreOp::TakeOver { scope: scope.clone(), expected: attempt, now: node.now(), lease_ms };
    let Some(StoreReply::Takeover(Takeover::Granted(attempt))) = store(node, Origin::Reconciler, op).await else {
        return;
    };
    node.sim.record(node.id, Event::ExecutionStarted { by: Origin::Reconciler, scope: scope.clone(), attempt });
    // Decide from the record as it is now that the takeover has fenced the
    // old holder, not from the scan: the holder may have written its
    // recovery point (and called the dependency) in between, and releasing
    // on that stale read would let a later request with the key charge again.
    let Some(StoreReply::Record(Some(current))) =
        store(node, Origin::Reconciler, StoreOp::Read { scope: scope.clone() }).await
    else {
        return; // unknown: the record stays in_progress and a later scan retries
    };
    let RecordState::InProgress { attempt: held, recovery_point, .. } = current.state else { return };
    if held != attempt {
        return;
    }
    let resumable = recovery_point.and_then(|p| request_from(&p.data).map(|r| (p.downstream_key, r)));
    let Some((downstream_key, request)) = resumable else {
        // Nothing external began: release, so the next retry executes afresh.
        let _ = store(node, Origin::Reconciler, StoreOp::Release { scope, attempt }).await;
        return;
    };
    let (timeout, step) = node.sim.with(|w| (w.config.protocol.downstream_timeout_ms, w.config.steps.downstream_key));
    let downstream_key = match step {
        DownstreamKeyStep::PerAttempt => attempt_downstream_key(&scope, attempt),
        _ => downstream_key,
    };
    let body = CallBody::Charge { scope: scope.clone(), attempt, downstream_key };
    let Some(ReplyBody::Charged { charge_id }) = node.call(NodeId::Downstream, Origin::Reconciler, body, timeout).await
    else {
        return;
    };
    let completion = completion(&scope, &request, Some(&charge_id));
    let _ = store(node, Origin::Reconciler, StoreOp::Complete { scope, attempt, completion }).await;
}

/// The broken `SweepStep::ShortWindow`: an hour.
const SHORT_WINDOW_MS: u64 = 3_600_000;

/// Every `sweep_interval_ms`: delete completed records older than the
/// sweep window.
pub(crate) async fn sweeper(node: Rc<Node>) {
    let (interval, window_ms, step) = node.sim.with(|w| {
        let p = &w.config.protocol;
        (p.sweep_interval_ms, p.sweep_window_ms, w.config.steps.sweep)
    });
    let window_ms = match step {
        SweepStep::ShortWindow => window_ms.min(SHORT_WINDOW_MS),
        SweepStep::Documented | SweepStep::DeletesUnfinished => window_ms,
    };
    loop {
        sleep_ms(interval).await;
        let now = node.now();
        let _ = store(&node, Origin::Sweeper, StoreOp::Sweep { now, window_ms }).await;
        if step == SweepStep::DeletesUnfinished {
            delete_abandoned(&node, now).await;
        }
    }
}

/// The broken sweep step: an `in_progress` record whose lease expired is
/// taken for abandoned and deleted, recovery point and all.
async fn delete_abandoned(node: &Node, now: idemsim_model::SimTime) {
    let Some(StoreReply::Stale(stale)) =
        store(node, Origin::Sweeper, StoreOp::StaleInProgress { now, limit: BATCH }).await
    else {
        return;
    };
    for (scope, record) in stale {
        let op = StoreOp::DeleteInProgress { scope, attempt: record.attempt() };
        let _ = store(node, Origin::Sweeper, op).await;
    }
}

/// The relay's message handler: a notification wakes the relay.
pub(crate) fn handle_relay(node: &Rc<Node>, msg: crate::msg::Msg) {
    if let crate::msg::Msg::Notify = msg {
        node.sim.with(|w| w.relay_wake.as_ref().map(|tx| tx.unbounded_send(())));
    }
}

/// Publishes committed outbox messages, marking each published once the
/// consumer acknowledged it: when the database notifies a commit with
/// messages, and every `relay_interval_ms` in case a notification was lost
/// or a publish failed.
pub(crate) async fn relay(node: Rc<Node>) {
    let interval = node.sim.with(|w| w.config.protocol.relay_interval_ms);
    let (tx, mut wake) = futures::channel::mpsc::unbounded();
    node.sim.with(|w| w.relay_wake = Some(tx));
    loop {
        let _ = futures::future::select(crate::alarm::Alarm::after_ms(interval), wake.next()).await;
        while wake.try_recv().is_ok() {}
        let Some(StoreReply::Outbox(pending)) =
            store(&node, Origin::Relay, StoreOp::OutboxPending { limit: BATCH }).await
        else {
            continue;
        };
        for entry in pending {
            let id = entry.message.id.clone();
            node.sim.record(node.id, Event::MessagePublished { id: id.clone(), scope: entry.scope.clone() });
            let acked = node.call(NodeId::Consumer, Origin::Relay, CallBody::Publish { entry }, 200).await;
            if matches!(acked, Some(ReplyBody::Ack)) {
                let _ = store(&node, Origin::Relay, StoreOp::MarkPublished { id }).await;
            }
        }
    }
}
