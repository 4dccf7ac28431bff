//! The explorer's environments of the protocol core: every step that
//! touches shared state waits at a gate until the executor grants it,
//! with the outcome (normal, or a fault) the executor chose. Between two
//! gates a task runs alone, so the order of grants is the execution.

use super::config::FaultKind;
use super::world::{Gate, GateKind, Slot, World};
use crate::protocol::{
    ChargeAnswer, ClientEnv, Env, FaultSite, KeyLock, Ledger, Proceed, Protocol, ProtocolSettings, Reply, StoreOp,
    StoreReply,
};
use async_trait::async_trait;
use idemsim_model::history::{Fault, Origin};
use idemsim_model::{
    Attempt, DownstreamKey, Event, NodeId, OutboxEntry, Request, RequestId, RetryPolicy, Scope, SimTime,
};
use idemsim_store::IdempotencyStore;
use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// What every task of one execution shares.
pub(crate) struct Shared {
    pub world: Mutex<World>,
    pub store: Arc<dyn IdempotencyStore>,
    pub protocol: Arc<dyn Protocol>,
    pub settings: ProtocolSettings,
}

/// Waits until the executor grants task `task` the step `kind`, and
/// returns the outcome it chose.
struct GateFuture<'a> {
    shared: &'a Shared,
    task: usize,
    gate: Option<Gate>,
}

impl Future for GateFuture<'_> {
    type Output = Option<FaultKind>;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<FaultKind>> {
        let mut w = self.shared.world.lock();
        let task = self.task;
        if let Some(gate) = self.gate.take() {
            w.tasks[task].gate = Some(gate);
            return Poll::Pending;
        }
        match w.tasks[task].granted.take() {
            Some(outcome) => Poll::Ready(outcome),
            None => Poll::Pending,
        }
    }
}

fn gate(shared: &Shared, task: usize, at: SimTime, kind: GateKind) -> GateFuture<'_> {
    GateFuture { shared, task, gate: Some(Gate { at, kind }) }
}

/// Polls a store's future once: a store the explorer can drive answers
/// without waiting on anything.
fn at_once<T>(future: impl Future<Output = T>) -> Option<T> {
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(std::task::Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// A request copy on a server, or a background job while the run heals.
pub(crate) struct ExploreEnv {
    pub shared: Arc<Shared>,
    pub task: usize,
    pub node: NodeId,
    pub origin: Origin,
    /// This server's clock offset.
    pub skew_ms: i64,
}

impl ExploreEnv {
    fn gate(&self, kind: GateKind) -> GateFuture<'_> {
        let now = self.shared.world.lock().now;
        gate(&self.shared, self.task, now, kind)
    }

    /// Applies `op` to the store and records what it did.
    fn apply(&self, op: &StoreOp) -> Option<StoreReply> {
        let Some(reply) = at_once(op.apply(&*self.shared.store)) else {
            let why = format!(
                "the store's {} waited on something (real I/O?): explore drives stores that answer at once",
                op.name()
            );
            self.shared.world.lock().error = Some(why);
            return None;
        };
        let mut w = self.shared.world.lock();
        op.each_event(self.origin, &reply, |event| w.record(NodeId::Db, event));
        let now = w.clock(self.skew_ms);
        let swept = match (op, &reply) {
            (StoreOp::Sweep { now, .. }, StoreReply::Swept(swept)) => swept.iter().map(|(s, r)| (s, r, *now)).collect(),
            (StoreOp::DeleteInProgress { scope, .. }, StoreReply::Deleted(Some(record), _)) => {
                vec![(scope, record, now)]
            }
            _ => Vec::new(),
        };
        for (scope, record, as_of) in swept {
            let (created_at, completed) = (record.created_at, record.is_completed());
            let event = Event::RecordSwept { scope: scope.clone(), created_at, completed, as_of: Some(as_of) };
            w.record(NodeId::Sweeper, event);
        }
        Some(reply)
    }
}

#[async_trait]
impl Env for ExploreEnv {
    fn node(&self) -> NodeId {
        self.node
    }

    fn origin(&self) -> Origin {
        self.origin
    }

    fn settings(&self) -> &ProtocolSettings {
        &self.shared.settings
    }

    fn now(&self) -> SimTime {
        self.shared.world.lock().clock(self.skew_ms)
    }

    async fn store(&self, op: StoreOp) -> Option<StoreReply> {
        let outcome = self.gate(GateKind::Store(op.name())).await;
        if outcome == Some(FaultKind::StoreFail) {
            let what = format!("{} (never reached the store)", op.name());
            self.shared.world.lock().fault(self.node, Fault::Dropped { from: self.node, to: NodeId::Db, what });
            return None;
        }
        let reply = self.apply(&op)?;
        if outcome == Some(FaultKind::StoreIndeterminate) {
            let what = format!("answer to {} (applied)", op.name());
            self.shared.world.lock().fault(NodeId::Db, Fault::Dropped { from: NodeId::Db, to: self.node, what });
            return None;
        }
        reply.answered()
    }

    async fn charge(
        &self,
        scope: &Scope,
        attempt: Attempt,
        downstream_key: DownstreamKey,
        _request: &Request,
    ) -> ChargeAnswer {
        let outcome = self.gate(GateKind::Charge).await;
        let mut w = self.shared.world.lock();
        w.record(NodeId::Downstream, Ledger::received(self.origin, self.node, scope, attempt, &downstream_key));
        let (answer, effect) = w.ledger.charge(scope, &downstream_key);
        if let Some(effect) = effect {
            w.record(NodeId::Downstream, effect);
        }
        if outcome == Some(FaultKind::ProviderTimeout) {
            let what = "answer to the charge (charged)".to_string();
            w.fault(NodeId::Downstream, Fault::Dropped { from: NodeId::Downstream, to: self.node, what });
            return ChargeAnswer::Unknown;
        }
        answer.into()
    }

    async fn publish(&self, entry: OutboxEntry) -> bool {
        self.gate(GateKind::Publish).await;
        let mut w = self.shared.world.lock();
        let applied = w.consumed.insert(entry.message.id.clone());
        w.record(NodeId::Consumer, Event::MessageConsumed { id: entry.message.id, scope: entry.scope, applied });
        true
    }

    async fn sleep_ms(&self, ms: u64) {
        let until = self.shared.world.lock().now.plus_ms(ms);
        gate(&self.shared, self.task, until, GateKind::Sleep).await;
    }

    fn record(&self, event: Event) {
        self.shared.world.lock().record(self.node, event);
    }

    fn work_ms(&self) -> u64 {
        self.shared.settings.work_ms[0]
    }

    async fn fault(&self, site: FaultSite) -> Proceed {
        let node = self.node;
        match self.gate(GateKind::Site(site)).await {
            Some(FaultKind::Crash) => {
                let mut w = self.shared.world.lock();
                w.fault(node, Fault::Crashed { node });
                w.fault(node, Fault::Restarted { node });
                Proceed::Stop
            }
            Some(FaultKind::Pause) => {
                let for_ms = self.shared.world.lock().pause_ms();
                self.shared.world.lock().fault(node, Fault::Paused { node, for_ms });
                self.sleep_ms(for_ms).await;
                self.shared.world.lock().fault(node, Fault::Resumed { node });
                Proceed::Continue
            }
            _ => Proceed::Continue,
        }
    }

    async fn lock(&self, lock: &KeyLock) {
        let key = (lock.process_local.then_some(self.node), lock.scope.clone());
        self.gate(GateKind::Lock(key.clone())).await;
        self.shared.world.lock().locks.insert(key, self.task);
    }

    fn unlock(&self, lock: &KeyLock) {
        let key = (lock.process_local.then_some(self.node), lock.scope.clone());
        self.shared.world.lock().locks.remove(&key);
    }
}

/// One client: sends an operation and retries it.
pub(crate) struct ExploreClient {
    pub shared: Arc<Shared>,
    pub task: usize,
    pub client: u32,
}

impl ExploreClient {
    /// Starts a request copy on `server`: its own task.
    fn deliver(&self, w: &mut World, req: RequestId, to: NodeId, copy: u32, request: &Request) {
        let NodeId::Server(server) = to else { unreachable!("clients send to servers") };
        let shared = self.shared.clone();
        let task = w.tasks.len();
        let skew_ms = w.config.skew_of(server);
        let env = ExploreEnv { shared, task, node: to, origin: Origin::Request { req, copy }, skew_ms };
        let request = request.clone();
        let future = Box::pin(async move {
            let protocol = env.shared.protocol.clone();
            let fingerprint = crate::protocol::fingerprint(&*protocol, &request);
            let reply = crate::protocol::serve(&*protocol, &env, req, copy, &request, fingerprint).await;
            let Some(reply) = reply else { return };
            let outcome = env.gate(GateKind::Deliver(req)).await;
            let mut w = env.shared.world.lock();
            if outcome == Some(FaultKind::LoseReply) {
                let (from, to, what) = (env.node, NodeId::Client(req.op.0), format!("reply to {req}"));
                w.fault(from, Fault::Dropped { from, to, what });
                return;
            }
            let now = w.now;
            let slot = w.replies.entry(req).or_default();
            if !slot.closed && slot.reply.is_none() {
                slot.reply = Some((now, reply));
            }
        });
        w.spawn(format!("{to} {req} copy {copy}"), future);
    }
}

#[async_trait]
impl ClientEnv for ExploreClient {
    fn node(&self) -> NodeId {
        NodeId::Client(self.client)
    }

    fn policy(&self) -> &RetryPolicy {
        &self.shared.settings.retry
    }

    fn now(&self) -> SimTime {
        self.shared.world.lock().now
    }

    fn pick_server(&self) -> NodeId {
        let mut w = self.shared.world.lock();
        let sends = &mut w.sends[self.client as usize];
        let pick = (self.client + *sends) % w.config.servers;
        w.sends[self.client as usize] += 1;
        NodeId::Server(pick)
    }

    fn draw(&self, lo: u64, hi: u64) -> u64 {
        lo + (hi - lo) / 2
    }

    fn first_send(&self) {
        self.shared.world.lock().buckets[self.client as usize].on_first_send();
    }

    fn spend_retry(&self) -> bool {
        self.shared.world.lock().buckets[self.client as usize].try_spend()
    }

    async fn send(&self, req: RequestId, to: NodeId, request: Request) -> Option<Reply> {
        let now = self.now();
        let outcome = gate(&self.shared, self.task, now, GateKind::Send(req)).await;
        let deadline = {
            let mut w = self.shared.world.lock();
            w.replies.insert(req, Slot::default());
            let from = NodeId::Client(self.client);
            match outcome {
                Some(FaultKind::DropRequest) => w.fault(from, Fault::Dropped { from, to, what: req.to_string() }),
                Some(FaultKind::DuplicateRequest) => {
                    w.fault(from, Fault::Duplicated { from, to, what: req.to_string() });
                    self.deliver(&mut w, req, to, 1, &request);
                    self.deliver(&mut w, req, to, 2, &request);
                }
                _ => self.deliver(&mut w, req, to, 1, &request),
            }
            w.now.plus_ms(self.shared.settings.retry.timeout_ms)
        };
        gate(&self.shared, self.task, now, GateKind::Await { req, deadline }).await;
        let mut w = self.shared.world.lock();
        let slot = w.replies.get_mut(&req).expect("the send opened its slot");
        slot.closed = true;
        slot.reply.take().filter(|(at, _)| *at <= deadline).map(|(_, reply)| reply)
    }

    async fn sleep_ms(&self, ms: u64) {
        let until = self.now().plus_ms(ms);
        gate(&self.shared, self.task, until, GateKind::Sleep).await;
    }

    fn record(&self, event: Event) {
        self.shared.world.lock().record(NodeId::Client(self.client), event);
    }
}
