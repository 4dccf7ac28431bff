//! The database node: runs store operations one message at a time and
//! records what each one did. It is the linearization point of the run: the
//! history's store events are in the order the store applied them.

use crate::protocol::{StoreOp, StoreReply};
use crate::runtime::msg::{CallBody, Msg, ReplyBody};
use crate::runtime::node::Node;
use crate::runtime::world::World;
use futures::FutureExt;
use idemsim_model::history::Origin;
use idemsim_model::{Event, NodeId, WriteOutcome};
use idemsim_store::{panic_message, IdempotencyStore, StoreError};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

/// How long (simulated) a store operation may stay unanswered before the
/// store is taken for hung and the run fails.
pub const STORE_ANSWER_MAX_MS: u64 = 10_000;

/// A store operation, polled once, that waits for its store.
type Applying = Pin<Box<dyn Future<Output = (StoreCall, StoreReply)> + Send>>;

/// A store call, still in the message it came in: the operation is read
/// where it arrived instead of being moved out (an operation is large).
struct StoreCall(Box<Msg>);

impl StoreCall {
    fn new(msg: Box<Msg>) -> Option<StoreCall> {
        matches!(&*msg, Msg::Call { body: CallBody::Store(_), .. }).then_some(StoreCall(msg))
    }

    fn op(&self) -> &StoreOp {
        match &*self.0 {
            Msg::Call { body: CallBody::Store(op), .. } => op,
            _ => unreachable!("a StoreCall holds a store call"),
        }
    }

    /// The call's id, caller and origin.
    fn header(&self) -> (crate::runtime::msg::CallId, NodeId, Origin) {
        match &*self.0 {
            Msg::Call { id, from, origin, .. } => (*id, *from, *origin),
            _ => unreachable!("a StoreCall holds a store call"),
        }
    }
}

/// A store operation that must wait for its store, until the database
/// node's receive loop gives it a task.
pub(crate) struct Waiting {
    id: crate::runtime::msg::CallId,
    from: NodeId,
    origin: Origin,
    op_name: &'static str,
    applying: Applying,
}

/// The store operations the database node has not answered yet.
///
/// **Invariant:** `unanswered` counts every operation handed over to wait
/// for its store and not yet answered, nor lost with the database's tasks
/// in a crash; those not yet given a task are in `untasked`, so there are
/// never more of them than `unanswered`.
#[derive(Default)]
pub(crate) struct StoreQueue {
    unanswered: u32,
    untasked: Vec<Waiting>,
}

impl StoreQueue {
    fn push(&mut self, waiting: Waiting) {
        self.unanswered += 1;
        self.untasked.push(waiting);
    }

    fn take_untasked(&mut self) -> Vec<Waiting> {
        std::mem::take(&mut self.untasked)
    }

    fn answered(&mut self) {
        self.unanswered = self.unanswered.checked_sub(1).expect("an answer is to an operation handed over");
    }

    /// How many operations wait for their store.
    pub fn unanswered(&self) -> u32 {
        self.unanswered
    }

    /// The database crashed: the operations it waited on die with its tasks.
    pub fn lost(&mut self) {
        self.unanswered = 0;
        self.untasked.clear();
    }

    /// The run is over: drops the operations' futures (which hold the world).
    pub fn clear(&mut self) {
        self.untasked.clear();
    }
}

/// The database node's message handler. An operation whose store answers
/// at once (the in-memory and SQLite stores always do) is done before this
/// returns, so the world may run it at delivery
/// ([`crate::runtime::node::Handling::at_once`]). One that must wait needs a task
/// on the database node (so that a crash of the database takes it too),
/// which only the node's receive loop can spawn: it is handed over, and
/// fails the run if it is still waiting after [`STORE_ANSWER_MAX_MS`].
pub(crate) fn handle(node: &Node, msg: Box<Msg>) {
    if let Msg::StoreOpsWaiting = &*msg {
        return wait_for_store(node);
    }
    if let Some(call) = StoreCall::new(msg) {
        apply(node, call);
    }
}

fn apply(node: &Node, call: StoreCall) {
    let (id, from, origin) = call.header();
    let (store, sim, op_name) = (node.sim.with(|w| w.store.clone()), node.sim.clone(), call.op().name());
    let mut applying: Applying = Box::pin(async move {
        let reply = guarded(&sim, &*store, call.op()).await;
        (call, reply)
    });
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    if let Poll::Ready((call, reply)) = applying.as_mut().poll(&mut cx) {
        return finish(node, from, id, origin, call.op(), reply);
    }
    node.sim.with(|w| {
        w.store_queue.push(Waiting { id, from, origin, op_name, applying });
        // The database is up (it is running this), so its mailbox is there.
        if let Some(mailbox) = w.nodes.get(&NodeId::Db).and_then(|n| n.mailbox.as_ref()) {
            let _ = mailbox.send(Box::new(Msg::StoreOpsWaiting));
        }
    });
}

/// Gives each handed-over operation a task on this (the database) node.
fn wait_for_store(node: &Node) {
    let (waiting, store) = node.sim.with(|w| (w.store_queue.take_untasked(), w.store.clone()));
    for Waiting { id, from, origin, op_name, applying } in waiting {
        let (node, store) = (node.clone(), store.clone());
        madsim::task::spawn_local(async move {
            let answered = crate::runtime::alarm::within(STORE_ANSWER_MAX_MS, applying).await;
            node.sim.with(|w| w.store_queue.answered());
            match answered {
                Some((call, reply)) => finish(&node, from, id, origin, call.op(), reply),
                None => node.sim.with(|w| {
                    let why = format!(
                        "store '{}' did not answer {op_name} within {} s of simulated time (it hangs)",
                        store.name(),
                        STORE_ANSWER_MAX_MS / 1000
                    );
                    w.store_broke(why)
                }),
            }
        });
    }
}

/// Runs `op`, turning a panic or an error into a failed reply and a broken
/// store. In the simulator the store runs in process: unavailability,
/// timeouts and crashes are simulated around it, so a store that answers
/// with an error (or panics) is itself failing, and the run says so.
async fn guarded(sim: &crate::runtime::world::Sim, store: &dyn IdempotencyStore, op: &StoreOp) -> StoreReply {
    let broke = match AssertUnwindSafe(op.apply(store)).catch_unwind().await {
        Ok(StoreReply::Failed(e)) => format!("store '{}' failed in {}: {e}", store.name(), op.name()),
        Ok(reply) => return reply,
        Err(panic) => format!("store '{}' panicked in {}: {}", store.name(), op.name(), panic_message(&*panic)),
    };
    sim.with(|w| w.store_broke(broke.clone()));
    StoreReply::Failed(StoreError::Unavailable(broke))
}

fn finish(node: &Node, from: NodeId, id: crate::runtime::msg::CallId, origin: Origin, op: &StoreOp, reply: StoreReply) {
    node.sim.with(|w| w.record_store(origin, op, &reply));
    node.reply(from, id, ReplyBody::Store(reply));
}

impl World {
    /// Records what a store operation did, from the store's own answer: a
    /// sweep's events come from the records the store says it deleted.
    pub(crate) fn record_store(&mut self, by: Origin, op: &StoreOp, reply: &StoreReply) {
        if op.writes() {
            self.note_write();
        }
        let mut recorded = false;
        op.each_event(by, reply, |event| {
            recorded = true;
            self.record(NodeId::Db, event);
        });
        match (op, reply) {
            (StoreOp::Complete { completion, .. }, StoreReply::Write(WriteOutcome::Applied))
                if !completion.outbox.is_empty() =>
            {
                self.send(NodeId::Db, NodeId::Relay, Box::new(crate::runtime::msg::Msg::Notify));
            }
            (StoreOp::DeleteInProgress { scope, .. }, StoreReply::Deleted(Some(record), WriteOutcome::Applied)) => {
                let as_of = self.node_time(NodeId::Sweeper, self.now());
                self.swept(scope, record, as_of);
            }
            (StoreOp::Sweep { now, .. }, StoreReply::Swept(swept)) => {
                for (scope, record) in swept {
                    self.swept(scope, record, *now);
                }
            }
            _ if !recorded => self.step(),
            _ => {}
        }
    }

    fn swept(&mut self, scope: &idemsim_model::Scope, record: &idemsim_model::Record, as_of: idemsim_model::SimTime) {
        let (created_at, completed) = (record.created_at, record.is_completed());
        let event = Event::RecordSwept { scope: scope.clone(), created_at, completed, as_of: Some(as_of) };
        self.record(NodeId::Sweeper, event);
    }
}
