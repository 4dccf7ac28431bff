//! A node's runtime: its mailbox loop, and calls with replies and timeouts.

use crate::runtime::answers::Awaiting;
use crate::runtime::mailbox::{mailbox, Receiver};
use crate::runtime::msg::{CallBody, CallId, Msg, ReplyBody};
use crate::runtime::waits::Waiter;
use crate::runtime::world::Sim;
use idemsim_model::history::Origin;
use idemsim_model::{NodeId, RequestId};
use std::rc::Rc;

/// A live incarnation of a node. A crash drops it with all its tasks; a
/// restart builds a new one, with empty tables.
///
/// Waiting callers are registered in the world, not here: a task that
/// holds its node while the node holds the task's waker would be a cycle
/// that outlives the run.
#[derive(Clone)]
pub(crate) struct Node {
    pub id: NodeId,
    pub sim: Sim,
}

/// Handles the messages that are not replies.
pub(crate) type Handler = fn(&Node, Box<Msg>);

/// A node's handler, and where it may run.
#[derive(Clone, Copy)]
pub(crate) struct Handling {
    pub handle: Handler,
    /// `handle` is done when it returns: it neither waits nor spawns a
    /// task. The world then runs it at delivery, in the agenda task,
    /// whenever the receive loop would be the next to run it (the node up
    /// and running, its mailbox empty and waited on): the same step, minus
    /// a wake-up and a poll of the receive loop.
    pub at_once: bool,
}

impl Node {
    /// Registers a fresh mailbox and spawns the receive loop, which lives
    /// as long as the node: replies go to their waiting callers, everything
    /// else to `handling`'s handler (or, when it runs at once, to the world,
    /// see [`Handling::at_once`]).
    pub fn start(sim: Sim, id: NodeId, handling: Handling) -> Rc<Node> {
        let (tx, rx) = mailbox();
        sim.with(|w| {
            let n = w.node(id);
            n.mailbox = Some(tx);
            n.up = true;
            n.at_once = handling.at_once.then_some(handling.handle);
        });
        let node = Rc::new(Node { id, sim });
        madsim::task::spawn_local(Node::receive(node.clone(), rx, handling.handle));
        node
    }

    async fn receive(node: Rc<Node>, mut rx: Receiver<Box<Msg>>, handle: Handler) {
        while let Some(msg) = rx.recv().await {
            match *msg {
                Msg::Reply { id, body } => node.sim.with(|w| w.waits.answer_call(id, body)),
                Msg::Response { req, .. } => node.sim.with(|w| w.waits.answer_request(node.id, req, msg)),
                _ => handle(&node, msg),
            }
        }
    }

    /// Calls `to` now, and waits for the reply, or `None` after
    /// `timeout_ms`. The call goes out when this is called, not when the
    /// wait is first polled (every caller awaits it at once): the body is
    /// then boxed into its message where it stands, not first moved into
    /// a future's state.
    pub fn call(
        &self,
        to: NodeId,
        origin: Origin,
        body: CallBody,
        timeout_ms: u64,
    ) -> impl std::future::Future<Output = Option<ReplyBody>> + use<> {
        self.call_boxed(to, Box::new(Msg::Call { id: 0, from: self.id, origin, body }), timeout_ms)
    }

    /// [`Node::call`] for a call already in its box: `msg` is a
    /// [`Msg::Call`] from this node, whose id is set here. A caller that
    /// boxes the body where it is made spares a large one its copies on the
    /// way (see `SimEnv::store`).
    pub fn call_boxed(
        &self,
        to: NodeId,
        mut msg: Box<Msg>,
        timeout_ms: u64,
    ) -> impl std::future::Future<Output = Option<ReplyBody>> + use<> {
        let Msg::Call { id: slot, from, origin, .. } = &mut *msg else { panic!("call_boxed sends a call") };
        assert_eq!(*from, self.id, "a node calls in its own name");
        // The id is keyed by the origin (not the node, see `Msg::key`), so that the call's draws
        // (and its reply's) do not depend on how many calls came before.
        // One step: register, send, and set the deadline.
        let mut w = self.sim.lock();
        let what = crate::rng::key(&[crate::runtime::msg::origin_key(*origin)]);
        let id = w.draws.fresh_key(what);
        let id = w.waits.call(id, self.id);
        *slot = id;
        w.send(self.id, to, msg);
        w.expire_after(timeout_ms, Waiter::Call(id));
        drop(w);
        // Whatever ends the wait (the reply, once this takes it; the
        // deadline; a crash; the end of the run) takes the call out of the
        // world's table: call ids are unique, so nothing is left to expire
        // here.
        Awaiting::new(self.sim.clone(), |w| &mut w.waits.calls, id)
    }

    /// Sends a request and waits for its response, or `None` after `timeout_ms`.
    pub async fn request(&self, to: NodeId, req: RequestId, msg: Box<Msg>, timeout_ms: u64) -> Option<Box<Msg>> {
        self.sim.with(|w| {
            w.waits.response(self.id, req);
            w.send(self.id, to, msg);
            w.expire_after(timeout_ms, Waiter::Response(self.id, req));
        });
        // As for a call: whatever ends the wait takes the request out of
        // the world's table (a protocol that sends one request id again
        // replaces this wait, see `Answers::wait`).
        Awaiting::new(self.sim.clone(), |w| &mut w.waits.responses, (self.id, req)).await
    }

    /// Answers a call.
    pub fn reply(&self, to: NodeId, id: CallId, body: ReplyBody) {
        self.sim.send(self.id, to, Box::new(Msg::Reply { id, body }));
    }

    /// This node's clock.
    pub fn now(&self) -> idemsim_model::SimTime {
        self.sim.node_now(self.id)
    }
}

/// Sleeps `ms` of simulated time.
pub(crate) async fn sleep_ms(ms: u64) {
    crate::runtime::alarm::Alarm::after_ms(ms).await;
}
