//! What travels over the simulated network.

use crate::protocol::{Reply, StoreOp, StoreReply};
use idemsim_model::history::Origin;
use idemsim_model::{Attempt, DownstreamKey, OutboxEntry, Request, RequestId, Scope};

/// Correlates a call with its reply.
pub(crate) type CallId = u64;

/// A network message.
#[derive(Clone, Debug)]
pub(crate) enum Msg {
    /// Client to server.
    Request { req: RequestId, request: Request },
    /// Server to client.
    Response { req: RequestId, reply: Reply },
    /// A call to the database, the dependency or the consumer.
    Call { id: CallId, from: idemsim_model::NodeId, origin: Origin, body: CallBody },
    /// Its reply.
    Reply { id: CallId, body: ReplyBody },
    /// The database to the relay: a completion with outbox messages
    /// committed (LISTEN/NOTIFY).
    Notify,
    /// The database node to its own receive loop: store operations wait
    /// for their store and need tasks (never on the network).
    StoreOpsWaiting,
}

/// What a call asks for.
#[derive(Clone, Debug)]
pub(crate) enum CallBody {
    Store(StoreOp),
    Charge { scope: Scope, attempt: Attempt, downstream_key: DownstreamKey },
    Publish { entry: OutboxEntry },
}

/// What a call answers.
#[derive(Clone, Debug)]
pub(crate) enum ReplyBody {
    Store(StoreReply),
    Charged {
        charge_id: String,
    },
    /// A decline for good (402).
    Declined,
    /// A refusal for now (429 or 503), nothing charged.
    Unavailable {
        retry_after_ms: u64,
    },
    Ack,
}

/// A stable number for an origin, for keyed draws.
pub(crate) fn origin_key(origin: Origin) -> u64 {
    match origin {
        Origin::Request { req, copy } => crate::rng::key(&[1, req_key(req), u64::from(copy)]),
        Origin::Reconciler => 2,
        Origin::Sweeper => 3,
        Origin::Relay => 4,
    }
}

/// A stable number for a send.
pub(crate) fn req_key(req: RequestId) -> u64 {
    u64::from(req.op.0) << 32 | u64::from(req.try_no.0)
}

impl Msg {
    /// What this message is, for keyed draws, before counting how many
    /// such messages went before.
    pub fn key(&self) -> u64 {
        let what = match self {
            Msg::Request { req, .. } => crate::rng::key(&[1, req_key(*req)]),
            Msg::Response { req, .. } => crate::rng::key(&[2, req_key(*req)]),
            Msg::Call { id, .. } => crate::rng::key(&[3, *id]),
            Msg::Reply { id, .. } => crate::rng::key(&[4, *id]),
            Msg::Notify => 5,
            Msg::StoreOpsWaiting => 6,
        };
        // Not which node: a shrink that moves an operation to another
        // client or server keeps its messages' fates. Copies of the same
        // message are told apart by `Draws::fresh_key`.
        what
    }

    /// False for store calls and replies: a database session is a TCP
    /// connection and never delivers a statement twice.
    pub fn may_duplicate(&self) -> bool {
        !matches!(
            self,
            Msg::Call { body: CallBody::Store(_), .. }
                | Msg::Reply { body: ReplyBody::Store(_), .. }
                | Msg::Notify
                | Msg::StoreOpsWaiting
        )
    }

    /// A few words for drop and duplicate events.
    pub fn describe(&self) -> String {
        let mut out = String::with_capacity(32);
        self.describe_into(&mut out);
        out
    }

    /// [`Msg::describe`], appended to `out` (a drop's description goes on).
    pub fn describe_into(&self, out: &mut String) {
        match self {
            Msg::Request { req, .. } => {
                out.push_str("request ");
                push_req(out, *req);
            }
            Msg::Response { req, reply } => {
                out.push_str("response ");
                push_number(out, u64::from(reply.response.status));
                out.push_str(" to ");
                push_req(out, *req);
            }
            Msg::Call { body: CallBody::Store(op), .. } => push(out, &["store ", op.name()]),
            Msg::Call { body: CallBody::Charge { downstream_key, .. }, .. } => {
                push(out, &["charge ", &downstream_key.0])
            }
            Msg::Call { body: CallBody::Publish { entry }, .. } => push(out, &["publish ", &entry.message.id.0]),
            Msg::Reply { body: ReplyBody::Store(_), .. } => push(out, &["store reply"]),
            Msg::Reply { body: ReplyBody::Charged { .. }, .. } => push(out, &["charge reply"]),
            Msg::Reply { body: ReplyBody::Declined, .. } => push(out, &["decline reply"]),
            Msg::Reply { body: ReplyBody::Unavailable { .. }, .. } => push(out, &["unavailable reply"]),
            Msg::Reply { body: ReplyBody::Ack, .. } => push(out, &["ack"]),
            Msg::Notify => push(out, &["outbox notification"]),
            Msg::StoreOpsWaiting => push(out, &["store operations waiting"]),
        }
    }
}

/// Appends `req` as its `Display` writes it (`op3.2`), without the
/// formatting machinery (every lost or duplicated message is described).
fn push_req(out: &mut String, req: RequestId) {
    out.push_str("op");
    push_number(out, u64::from(req.op.0));
    out.push('.');
    push_number(out, u64::from(req.try_no.0));
}

/// Appends `n` in decimal.
fn push_number(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    digits[at..].iter().for_each(|&d| out.push(char::from(d)));
}

/// Appends `parts` to `out`.
pub(crate) fn push(out: &mut String, parts: &[&str]) {
    for part in parts {
        out.push_str(part);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idemsim_model::{OpId, Try};

    #[test]
    fn requests_and_numbers_are_written_as_display_writes_them() {
        for (op, try_no) in [(0, 0), (7, 1), (123, 45), (u32::MAX, u32::MAX)] {
            let req = RequestId { op: OpId(op), try_no: Try(try_no) };
            let mut out = String::new();
            push_req(&mut out, req);
            assert_eq!(out, req.to_string());
        }
        for n in [0, 9, 10, 201, 503, u64::MAX] {
            let mut out = String::new();
            push_number(&mut out, n);
            assert_eq!(out, n.to_string());
        }
    }
}
