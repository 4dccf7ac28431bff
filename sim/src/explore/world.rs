//! The shared state of one explored execution: true time, the history,
//! the tasks and where each waits, the replies in flight, the
//! dependency's charges, the consumer, the key locks and the fault budget.
//!
//! **Invariant:** only the executor grants a gate, one at a time, and a
//! task touches shared state only right after its gate was granted, so
//! the order of grants is the execution.

use super::config::{ExploreConfig, FaultKind};
use crate::protocol::{FaultSite, Ledger, Reply};
use idemsim_model::history::{Event, Fault, History};
use idemsim_model::retry::TokenBucket;
use idemsim_model::{MessageId, NodeId, RequestId, Scope, SimTime};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;

/// A task's future: a client's operation, a request copy on a server, or
/// a background job while the run heals.
pub(crate) type TaskFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Where a task waits: the kind of step it takes next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum GateKind {
    /// A store operation (named).
    Store(&'static str),
    /// A call to the dependency.
    Charge,
    /// A fault site of the execution.
    Site(FaultSite),
    /// A client's send of `req` to a server.
    Send(RequestId),
    /// A server's reply to `req` leaves.
    Deliver(RequestId),
    /// A client waits for the reply to `req` until `deadline`.
    Await { req: RequestId, deadline: SimTime },
    /// A sleep.
    Sleep,
    /// A key lock, taken when free.
    Lock(LockKey),
    /// A message published to the consumer.
    Publish,
}

/// A key lock: per server (`Some`) or shared by all (`None`).
pub(crate) type LockKey = (Option<NodeId>, Scope);

impl GateKind {
    /// The faults that may happen at this step, in order (the normal
    /// outcome is option 0, before them).
    pub(crate) fn faults(&self) -> &'static [FaultKind] {
        match self {
            GateKind::Store(_) => &[FaultKind::StoreFail, FaultKind::StoreIndeterminate],
            GateKind::Charge => &[FaultKind::ProviderTimeout],
            GateKind::Site(FaultSite::BeforeCompletion { .. }) => &[FaultKind::Crash, FaultKind::Pause],
            GateKind::Site(FaultSite::AfterCompletion) => &[FaultKind::Crash],
            GateKind::Send(_) => &[FaultKind::DropRequest, FaultKind::DuplicateRequest],
            GateKind::Deliver(_) => &[FaultKind::LoseReply],
            GateKind::Await { .. } | GateKind::Sleep | GateKind::Lock(_) | GateKind::Publish => &[],
        }
    }

    /// What the step does, for a person.
    pub(crate) fn describe(&self) -> String {
        match self {
            GateKind::Store(op) => format!("store {op}"),
            GateKind::Charge => "calls the dependency".into(),
            GateKind::Site(FaultSite::BeforeCompletion { .. }) => "is about to write the completion".into(),
            GateKind::Site(FaultSite::AfterCompletion) => "wrote the completion".into(),
            GateKind::Send(req) => format!("sends {req}"),
            GateKind::Deliver(req) => format!("replies to {req}"),
            GateKind::Await { req, .. } => format!("gets the answer to {req}"),
            GateKind::Sleep => "wakes".into(),
            GateKind::Lock(_) => "takes a key lock".into(),
            GateKind::Publish => "publishes a message".into(),
        }
    }
}

/// A task waiting at a gate.
#[derive(Clone, Debug)]
pub(crate) struct Gate {
    /// When it can go on (a sleep's end; now for everything else).
    pub at: SimTime,
    pub kind: GateKind,
}

/// One task.
pub(crate) struct Task {
    /// For a person: "client-0", "server-1 for op-0/try-1".
    pub name: String,
    /// Where it waits, if it does.
    pub gate: Option<Gate>,
    /// The outcome the executor granted: `Some(None)` normal, or a fault.
    pub granted: Option<Option<FaultKind>>,
    /// Finished (or dropped).
    pub done: bool,
}

/// A reply slot of one send.
#[derive(Clone, Debug, Default)]
pub(crate) struct Slot {
    /// The first reply delivered, and when.
    pub reply: Option<(SimTime, Reply)>,
    /// The client stopped waiting.
    pub closed: bool,
}

/// The state of one execution.
pub(crate) struct World {
    pub config: ExploreConfig,
    /// True time.
    pub now: SimTime,
    pub history: History,
    /// The scheduling step each history entry was recorded in.
    pub entry_steps: Vec<u32>,
    /// The current step.
    pub step: u32,
    pub tasks: Vec<Task>,
    /// Futures spawned during a poll, for the executor to take.
    pub spawned: Vec<(usize, TaskFuture)>,
    pub replies: BTreeMap<RequestId, Slot>,
    pub ledger: Ledger,
    pub consumed: BTreeSet<MessageId>,
    pub buckets: Vec<TokenBucket>,
    /// Sends per client so far (the next server is picked from it).
    pub sends: Vec<u32>,
    pub locks: BTreeMap<LockKey, usize>,
    pub faults_left: u32,
    /// Faults are off: the run heals.
    pub healing: bool,
    /// What went wrong outside the protocol (a store that waited on I/O).
    pub error: Option<String>,
}

impl World {
    pub(crate) fn new(config: ExploreConfig, history: History) -> World {
        let clients = config.operations.len();
        let budget = config.protocol.retry.budget.clone();
        let faults_left = config.fault_budget;
        World {
            config,
            now: SimTime::ZERO,
            history,
            entry_steps: Vec::new(),
            step: 0,
            tasks: Vec::new(),
            spawned: Vec::new(),
            replies: BTreeMap::new(),
            ledger: Ledger::default(),
            consumed: BTreeSet::new(),
            buckets: (0..clients).map(|_| TokenBucket::new(&budget)).collect(),
            sends: vec![0; clients],
            locks: BTreeMap::new(),
            faults_left,
            healing: false,
            error: None,
        }
    }

    /// Appends an event at the current time.
    pub(crate) fn record(&mut self, node: NodeId, event: Event) {
        self.history.push(self.now, node, event);
        self.entry_steps.push(self.step);
    }

    /// How long a paused holder freezes: one and a half of the lease the
    /// run follows (the protocol's own).
    pub(crate) fn pause_ms(&self) -> u64 {
        let lease_ms = self.history.meta.lease_ms;
        lease_ms + lease_ms / 2
    }

    /// A server's clock: true time plus its offset.
    pub(crate) fn clock(&self, skew_ms: i64) -> SimTime {
        SimTime(self.now.0.saturating_add_signed(skew_ms))
    }

    /// Records a fault.
    pub(crate) fn fault(&mut self, node: NodeId, fault: Fault) {
        self.record(node, Event::Fault(fault));
    }

    /// A new task; its future is handed to the executor.
    pub(crate) fn spawn(&mut self, name: String, future: TaskFuture) -> usize {
        let id = self.tasks.len();
        self.tasks.push(Task { name, gate: None, granted: None, done: false });
        self.spawned.push((id, future));
        id
    }

    /// The outcomes of task `id`'s gate that the executor may choose
    /// from: the normal one, then each fault still allowed.
    pub(crate) fn options(&self, gate: &Gate) -> Vec<Option<FaultKind>> {
        let mut out = vec![None];
        if self.healing || self.faults_left == 0 {
            return out;
        }
        out.extend(gate.kind.faults().iter().filter(|k| self.config.allows(**k)).map(|k| Some(*k)));
        out
    }

    /// When a waiting task can go on, or `None` while it cannot (a lock
    /// another holds).
    pub(crate) fn ready_at(&self, gate: &Gate) -> Option<SimTime> {
        match &gate.kind {
            GateKind::Await { req, deadline } => {
                let replied = self.replies.get(req).and_then(|s| s.reply.as_ref()).map(|(at, _)| *at);
                Some(replied.map_or(*deadline, |at| at.min(*deadline)).max(gate.at))
            }
            GateKind::Lock(key) => (!self.locks.contains_key(key)).then_some(gate.at),
            _ => Some(gate.at),
        }
    }
}
