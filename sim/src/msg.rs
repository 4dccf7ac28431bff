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
    Charged { charge_id: String },
    Ack,
}

impl Msg {
    /// False for store calls and replies: a database session is a TCP
    /// connection and never delivers a statement twice.
    pub fn may_duplicate(&self) -> bool {
        !matches!(
            self,
            Msg::Call { body: CallBody::Store(_), .. } | Msg::Reply { body: ReplyBody::Store(_), .. } | Msg::Notify
        )
    }

    /// A few words for drop and duplicate events.
    pub fn describe(&self) -> String {
        match self {
            Msg::Request { req, .. } => format!("request {req}"),
            Msg::Response { req, reply } => format!("response {} to {req}", reply.response.status),
            Msg::Call { body: CallBody::Store(op), .. } => format!("store {}", op.name()),
            Msg::Call { body: CallBody::Charge { downstream_key, .. }, .. } => format!("charge {}", downstream_key.0),
            Msg::Call { body: CallBody::Publish { entry }, .. } => format!("publish {}", entry.message.id.0),
            Msg::Reply { body: ReplyBody::Store(_), .. } => "store reply".to_string(),
            Msg::Reply { body: ReplyBody::Charged { .. }, .. } => "charge reply".to_string(),
            Msg::Reply { body: ReplyBody::Ack, .. } => "ack".to_string(),
            Msg::Notify => "outbox notification".to_string(),
        }
    }
}
