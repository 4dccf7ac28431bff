//! [`Waits`]: the callers waiting for a reply and the clients waiting for
//! a response, as one part of the world.

use crate::runtime::answers::Answers;
use crate::runtime::msg::{CallId, Msg, ReplyBody};
use idemsim_model::{NodeId, RequestId};

/// A caller waiting for a reply, or a client for a response. Its deadline
/// is an agenda entry: if it still waits then, it stops waiting (its
/// receiver sees the sender dropped), after everything else due in the same
/// millisecond, so an answer that arrives then wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Waiter {
    Call(CallId),
    Response(NodeId, RequestId),
}

/// The hasher of tables keyed by numbers that are hashes already (call ids
/// are SplitMix64 outputs, uniform over `u64`): the key is its own hash.
#[derive(Default)]
pub(crate) struct PassThrough(u64);

impl std::hash::Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, _: &[u8]) {
        unreachable!("a pass-through hash is of a u64")
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Waits for replies to calls, by call id.
pub(crate) type CallWaits = Answers<CallId, ReplyBody, std::hash::BuildHasherDefault<PassThrough>>;
/// Clients' waits for responses, by node and request.
pub(crate) type ResponseWaits = Answers<(NodeId, RequestId), Box<Msg>, foldhash::fast::FixedState>;

/// Every wait of a run, looked up by key.
///
/// **Invariant:** a wait ends once: answered (a later answer, a duplicate,
/// is dropped), expired at its deadline, or stopped with its node or the
/// run. Where several stop at once they go in key order, since stopping a
/// wait wakes its task and the order of wake-ups is part of the run. Call
/// ids are unique among the waits (see [`Waits::call`]).
#[derive(Default)]
pub(crate) struct Waits {
    /// Callers waiting for a reply, by call id. Open to the runtime for
    /// [`crate::runtime::answers::Awaiting`]'s look-up.
    pub(in crate::runtime) calls: CallWaits,
    /// Clients waiting for a response, by node and request.
    pub(in crate::runtime) responses: ResponseWaits,
}

impl Waits {
    /// `owner` waits for the reply to a call whose id derives from `id`
    /// (rehashed until no wait holds it), returned.
    pub fn call(&mut self, mut id: CallId, owner: NodeId) -> CallId {
        while self.calls.holds(&id) {
            id = crate::rng::key(&[id]);
        }
        self.calls.wait(id, owner);
        id
    }

    /// `client` waits for the response to `req` (replacing a wait for the
    /// same request, see [`Answers::wait`]).
    pub fn response(&mut self, client: NodeId, req: RequestId) {
        self.responses.wait((client, req), client);
    }

    /// Whether `waiter` still waits for its answer.
    pub fn waits(&self, waiter: Waiter) -> bool {
        match waiter {
            Waiter::Call(id) => self.calls.waits(&id),
            Waiter::Response(node, req) => self.responses.waits(&(node, req)),
        }
    }

    /// Stops `waiter` waiting, if it still waits.
    pub fn expire(&mut self, waiter: Waiter) {
        match waiter {
            Waiter::Call(id) => self.calls.expire(id),
            Waiter::Response(node, req) => self.responses.expire((node, req)),
        }
    }

    /// Hands a reply to the caller waiting for it, if it still waits.
    pub fn answer_call(&mut self, id: CallId, body: ReplyBody) {
        self.calls.answer(id, body);
    }

    /// Hands a response to the client waiting for it, if it still waits.
    pub fn answer_request(&mut self, client: NodeId, req: RequestId, response: Box<Msg>) {
        self.responses.answer((client, req), response);
    }

    /// Stops every wait of `node` (it crashed), calls first.
    pub fn forget(&mut self, node: NodeId) {
        self.calls.stop_all(|_, owner| owner == node);
        self.responses.stop_all(|_, owner| owner == node);
    }

    /// Stops every wait (the run ends).
    pub fn stop_all(&mut self) {
        self.calls.stop_all(|_, _| true);
        self.responses.stop_all(|_, _| true);
    }
}
