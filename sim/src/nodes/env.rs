//! The simulator as the protocol core's environment: store operations go
//! to the database node over the simulated network, the dependency and
//! the consumer are nodes too, time is madsim's, randomness comes from the
//! seed's streams, and the fault sites crash, pause or drop at the worst
//! moment.

use crate::config::{ProtocolSettings, SimConfig};
use crate::faults::plan::FaultAction;
use crate::protocol::{ChargeAnswer, ClientEnv, Env, FaultSite, KeyLock, Proceed, Reply, StoreOp, StoreReply};
use crate::runtime::msg::origin_key;
use crate::runtime::msg::{CallBody, Msg, ReplyBody};
use crate::runtime::node::{sleep_ms, Node};
use crate::runtime::world::{true_now, Sim, World};
use async_trait::async_trait;
use idemsim_model::history::{Fault, Origin};
use idemsim_model::{
    Attempt, DownstreamKey, Event, NodeId, OutboxEntry, Request, RequestId, RetryPolicy, Scope, SimTime,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// One request copy, or one background job, on one simulated node.
pub(crate) struct SimEnv {
    node: Node,
    origin: Origin,
    config: Arc<SimConfig>,
    /// The request being handled, for the lost-response fault.
    req: Option<RequestId>,
    /// This handler's draws: keyed by its origin and incarnation (not its
    /// node, see `Msg::key`),
    /// numbered in the order it takes them.
    draws: Draws,
}

/// The keyed draws of one handler or one operation, taken in order.
struct Draws {
    key: u64,
    /// An atomic only because environments must be `Sync`; a run is one
    /// thread.
    next: std::sync::atomic::AtomicU64,
}

impl Draws {
    fn new(sim: &Sim, parts: &[u64]) -> Draws {
        let key = sim.with(|w| w.draws.fresh_key(crate::rng::key(parts)));
        Draws { key, next: std::sync::atomic::AtomicU64::new(0) }
    }

    /// The key and slot of the next draw.
    fn next(&self) -> (u64, u64) {
        (self.key, self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

impl SimEnv {
    /// The environment of `origin` on `node`.
    pub fn new(node: &Node, origin: Origin) -> SimEnv {
        let config = node.sim.with(|w| w.config.clone());
        let req = match origin {
            Origin::Request { req, .. } => Some(req),
            _ => None,
        };
        let draws = Draws::new(&node.sim, &[origin_key(origin)]);
        SimEnv { node: Node { id: node.id, sim: node.sim.clone() }, origin, config, req, draws }
    }

    fn sim(&self) -> &Sim {
        &self.node.sim
    }

    /// Fault site: the holder crashes (and never returns) or freezes past
    /// its lease before completing, as a planned site fault says or as the
    /// profile's rates draw.
    async fn before_completion(&self) -> Proceed {
        let id = self.node.id;
        let (key, slot) = self.draws.next();
        let (planned, crash_ms) = self.sim().with(|w| {
            let planned = w.faults.take_at_site(id, w.now().0);
            let crash_ms = match planned {
                Some(FaultAction::CrashBeforeCompletion { down_ms, .. }) => Some(down_ms),
                Some(_) => None,
                None => drawn_crash_ms(w, key, slot),
            };
            (planned, crash_ms)
        });
        if let Some(down_ms) = crash_ms {
            self.sim().crash(id, down_ms);
            std::future::pending::<()>().await;
        }
        let pause_ms = match planned {
            Some(FaultAction::PauseBeforeCompletion { for_ms, .. }) => Some(for_ms),
            Some(_) => None,
            None => self.sim().with(|w| drawn_pause_ms(w, key, slot)),
        };
        if let Some(ms) = pause_ms {
            self.sim().pause(id, ms);
            sleep_ms(0).await;
        }
        Proceed::Continue
    }

    /// Fault site: the response is lost right after the commit.
    fn after_completion(&self) -> Proceed {
        let Some(req) = self.req else { return Proceed::Continue };
        let from = self.node.id;
        let (key, slot) = self.draws.next();
        let lost = self.sim().with(|w| {
            let lost = w.faults.on() && w.draws.servers.chance(key, slot, w.faults.profile.lose_response_permille);
            if lost {
                let to = w.clients.of(req);
                let what = format!("response to {req} (lost after commit)");
                w.record(from, Event::Fault(Fault::Dropped { from, to, what }));
            }
            lost
        });
        match lost {
            true => Proceed::Stop,
            false => Proceed::Continue,
        }
    }

    fn key_lock(&self, lock: &KeyLock) -> (Option<NodeId>, Scope) {
        (lock.process_local.then_some(self.node.id), lock.scope.clone())
    }
}

#[async_trait]
impl Env for SimEnv {
    fn node(&self) -> NodeId {
        self.node.id
    }

    fn origin(&self) -> Origin {
        self.origin
    }

    fn settings(&self) -> &ProtocolSettings {
        &self.config.protocol
    }

    fn now(&self) -> SimTime {
        self.node.now()
    }

    /// Written out, not `async fn`: the operation goes into its message's
    /// box here, once, and the future keeps the box. As an `async fn`, the
    /// operation (large) was copied into the future's state, that state
    /// into its box, and then out into the message. Nothing is sent before
    /// the future is first polled, as before.
    fn store<'life0, 'async_trait>(
        &'life0 self,
        op: StoreOp,
    ) -> Pin<Box<dyn Future<Output = Option<StoreReply>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        let msg = Box::new(Msg::Call { id: 0, from: self.node.id, origin: self.origin, body: CallBody::Store(op) });
        Box::pin(async move {
            let timeout = self.config.protocol.store_timeout_ms;
            match self.node.call_boxed(NodeId::Db, msg, timeout).await? {
                ReplyBody::Store(reply) => reply.answered(),
                _ => None,
            }
        })
    }

    async fn charge(
        &self,
        scope: &Scope,
        attempt: Attempt,
        downstream_key: DownstreamKey,
        _request: &Request,
    ) -> ChargeAnswer {
        let timeout = self.config.protocol.downstream_timeout_ms;
        let body = CallBody::Charge { scope: scope.clone(), attempt, downstream_key };
        match self.node.call(NodeId::Downstream, self.origin, body, timeout).await {
            Some(ReplyBody::Charged { charge_id }) => ChargeAnswer::Charged(charge_id),
            Some(ReplyBody::Declined) => ChargeAnswer::Declined,
            Some(ReplyBody::Unavailable { retry_after_ms }) => {
                ChargeAnswer::Unavailable { retry_after_ms: Some(retry_after_ms) }
            }
            _ => ChargeAnswer::Unknown,
        }
    }

    async fn publish(&self, entry: OutboxEntry) -> bool {
        let acked = self.node.call(NodeId::Consumer, self.origin, CallBody::Publish { entry }, 200).await;
        matches!(acked, Some(ReplyBody::Ack))
    }

    async fn sleep_ms(&self, ms: u64) {
        sleep_ms(ms).await;
    }

    fn record(&self, event: Event) {
        self.sim().record(self.node.id, event);
    }

    fn work_ms(&self) -> u64 {
        let (key, slot) = self.draws.next();
        self.sim()
            .with(|w| w.draws.servers.between(key, slot, w.config.protocol.work_ms[0], w.config.protocol.work_ms[1]))
    }

    async fn fault(&self, site: FaultSite) -> Proceed {
        match site {
            FaultSite::BeforeCompletion { .. } => self.before_completion().await,
            FaultSite::AfterCompletion => self.after_completion(),
        }
    }

    async fn lock(&self, lock: &KeyLock) {
        self.sim().lock_key(self.key_lock(lock), self.node.id).await;
    }

    fn unlock(&self, lock: &KeyLock) {
        self.sim().unlock_key(&self.key_lock(lock));
    }
}

/// How long a holder stays down, if the profile's rate crashes it at its
/// before-completion site.
fn drawn_crash_ms(w: &World, key: u64, slot: u64) -> Option<u64> {
    let on = w.faults.on() && w.draws.servers.chance(key, slot, w.faults.profile.crash_before_complete_permille);
    on.then(|| w.draws.servers.between(key, slot | 1 << 48, 50, w.faults.profile.down_ms_max.max(500)))
}

/// How long a holder freezes, if the profile's rate pauses it there.
fn drawn_pause_ms(w: &World, key: u64, slot: u64) -> Option<u64> {
    let on =
        w.faults.on() && w.draws.servers.chance(key, slot | 2 << 48, w.faults.profile.pause_before_complete_permille);
    // The lease the protocol asks for (see `timing`), not the configured one.
    let lease = w.history.meta.lease_ms;
    on.then(|| w.draws.servers.between(key, slot | 3 << 48, lease + lease / 2, 3 * lease))
}

/// One simulated client.
pub(crate) struct SimClient {
    node: Node,
    client: u32,
    config: Arc<SimConfig>,
    /// This operation's draws (servers picked, backoff), keyed by the
    /// operation, not by the client, so moving an operation to another
    /// client keeps them.
    draws: Draws,
    /// The operation's pinned servers, and how many sends picked one.
    servers: Vec<u32>,
    sends: std::sync::atomic::AtomicUsize,
}

impl SimClient {
    pub fn new(node: &Node, op: &crate::workload::Operation) -> SimClient {
        let config = node.sim.with(|w| w.config.clone());
        let draws = Draws::new(&node.sim, &[u64::from(op.op.0)]);
        let (client, servers, sends) = (op.client, op.servers.clone(), Default::default());
        SimClient { node: Node { id: node.id, sim: node.sim.clone() }, client, config, draws, servers, sends }
    }
}

#[async_trait]
impl ClientEnv for SimClient {
    fn node(&self) -> NodeId {
        self.node.id
    }

    fn policy(&self) -> &RetryPolicy {
        &self.config.protocol.retry
    }

    fn now(&self) -> SimTime {
        true_now()
    }

    fn pick_server(&self) -> NodeId {
        let servers = u64::from(self.config.topology.servers);
        let (key, slot) = self.draws.next();
        let send = self.sends.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let drawn = || self.node.sim.with(|w| w.draws.clients.between(key, slot, 0, servers - 1) as u32);
        NodeId::Server(self.servers.get(send).copied().unwrap_or_else(drawn))
    }

    fn draw(&self, lo: u64, hi: u64) -> u64 {
        let (key, slot) = self.draws.next();
        self.node.sim.with(|w| w.draws.clients.between(key, slot, lo, hi))
    }

    fn first_send(&self) {
        self.node.sim.with(|w| w.bucket(self.client).on_first_send());
    }

    fn spend_retry(&self) -> bool {
        self.node.sim.with(|w| w.bucket(self.client).try_spend())
    }

    /// Written out, as `SimEnv::store`: the request goes into its
    /// message's box here, and the future keeps the box.
    fn send<'life0, 'async_trait>(
        &'life0 self,
        req: RequestId,
        to: NodeId,
        request: Request,
    ) -> Pin<Box<dyn Future<Output = Option<Reply>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        let msg = Box::new(Msg::Request { req, request });
        Box::pin(async move {
            match *self.node.request(to, req, msg, self.config.protocol.retry.timeout_ms).await? {
                Msg::Response { reply, .. } => Some(reply),
                _ => None,
            }
        })
    }

    async fn sleep_ms(&self, ms: u64) {
        sleep_ms(ms).await;
    }

    fn record(&self, event: Event) {
        self.node.sim.record(self.node.id, event);
    }
}
