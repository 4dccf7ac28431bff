//! What a protocol step may do: the environment the core runs in.
//!
//! The simulator and the stress mode each implement these traits; the
//! protocol core never reaches past them, so the same steps run over
//! madsim's simulated network and clock, or over real connections and
//! real time.

use crate::ProtocolSettings;
use crate::{Reply, StoreOp, StoreReply};
use async_trait::async_trait;
use idemsim_model::history::Origin;
use idemsim_model::{
    Attempt, DownstreamKey, Event, NodeId, OutboxEntry, Request, RequestId, RetryPolicy, Scope, SimTime,
};

/// A point in an execution where the environment may crash or pause the
/// node, or lose what it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultSite {
    /// Effects began (the dependency may have been charged) and the
    /// completion is not written yet: the worst moment to crash or freeze.
    BeforeCompletion {
        /// The attempt the execution holds.
        attempt: Attempt,
        /// Whether the dependency was charged.
        charged: bool,
    },
    /// The completion was accepted and the reply is not sent yet.
    AfterCompletion,
}

/// What the environment did at a fault site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proceed {
    /// Carry on (perhaps after a pause).
    Continue,
    /// The execution ends here and sends nothing: the node crashed, the
    /// execution was abandoned, or the reply was lost.
    Stop,
}

/// What the dependency answered a charge, as the caller saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChargeAnswer {
    /// Charged, now or earlier under the same downstream key: the charge's id.
    Charged(String),
    /// Declined for good (402): nothing was charged, and the dependency
    /// answers the same for this downstream key from now on.
    Declined,
    /// Refused for now (429 or 503): nothing was charged; it may be tried
    /// again after the hint.
    Unavailable {
        /// The dependency's `Retry-After`, if it sent one.
        retry_after_ms: Option<u64>,
    },
    /// No answer in time (or the connection was lost): the charge may or
    /// may not have happened.
    Unknown,
}

/// A lock on one key, used only by the broken lock-based claims.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeyLock {
    /// The key locked.
    pub scope: Scope,
    /// `true`: an in-process lock of this server; `false`: a lock service
    /// shared by all servers.
    pub process_local: bool,
}

/// The server side of the protocol's world: one request copy, or one
/// background job, on one node.
#[async_trait]
pub trait Env: Send + Sync {
    /// The node acting.
    fn node(&self) -> NodeId;
    /// Who acts, as the history names it.
    fn origin(&self) -> Origin;
    /// The protocol's timings.
    fn settings(&self) -> &ProtocolSettings;
    /// This node's clock (possibly skewed).
    fn now(&self) -> SimTime;
    /// Runs one store operation; `None` when it failed or timed out.
    async fn store(&self, op: StoreOp) -> Option<StoreReply>;
    /// Calls the dependency with a downstream key for `request`, and says
    /// what it answered.
    async fn charge(
        &self,
        scope: &Scope,
        attempt: Attempt,
        downstream_key: DownstreamKey,
        request: &Request,
    ) -> ChargeAnswer;
    /// A stamp the environment adds to the response of the execution that
    /// holds `attempt` (`idemsim serve`: which execution produced it, as
    /// real services stamp ids and times, and as it also tells the
    /// dependency), so a completion by a superseded execution shows from
    /// outside. None by default.
    fn stamp(&self, _attempt: Attempt) -> Option<String> {
        None
    }
    /// Publishes one outbox message to the consumer; `true` when acknowledged.
    async fn publish(&self, entry: OutboxEntry) -> bool;
    /// Sleeps.
    async fn sleep_ms(&self, ms: u64);
    /// Records an observation in the history, on this node.
    fn record(&self, event: Event);
    /// How long the handler's own work takes this time.
    fn work_ms(&self) -> u64;
    /// A fault site: the environment may crash or pause the node here.
    async fn fault(&self, site: FaultSite) -> Proceed;
    /// Takes a key lock, waiting while another holds it.
    async fn lock(&self, lock: &KeyLock);
    /// Releases a key lock.
    fn unlock(&self, lock: &KeyLock);
}

/// The client side: one client sending and retrying operations.
#[async_trait]
pub trait ClientEnv: Send + Sync {
    /// The client's node.
    fn node(&self) -> NodeId;
    /// The retry policy it follows.
    fn policy(&self) -> &RetryPolicy;
    /// True time (the deadline is measured in it).
    fn now(&self) -> SimTime;
    /// The server the next send goes to.
    fn pick_server(&self) -> NodeId;
    /// A random number in `lo..=hi`, from the client's own stream.
    fn draw(&self, lo: u64, hi: u64) -> u64;
    /// An operation's first send: deposits into the retry budget.
    fn first_send(&self);
    /// Takes a token from the retry budget; `false` when it is empty.
    fn spend_retry(&self) -> bool;
    /// Sends one try and waits for its answer; `None` after the timeout.
    async fn send(&self, req: RequestId, to: NodeId, request: Request) -> Option<Reply>;
    /// Sleeps.
    async fn sleep_ms(&self, ms: u64);
    /// Records an observation in the history, on this node.
    fn record(&self, event: Event);
}
