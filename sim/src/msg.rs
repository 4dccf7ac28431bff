//! What travels over the simulated network.

use idemsim_model::history::{Answer, Origin};
use idemsim_model::{
    Attempt, Claim, Completion, DownstreamKey, Fingerprint, LocalEffect, MessageId, OutboxEntry, Record, RecoveryPoint,
    Request, RequestId, Scope, SimTime, StoredResponse, Takeover, WriteOutcome,
};
use idemsim_store::StoreError;

/// Correlates a call with its reply.
pub(crate) type CallId = u64;

/// A network message.
#[derive(Clone, Debug)]
pub(crate) enum Msg {
    /// Client to server.
    Request { req: RequestId, request: Request },
    /// Server to client.
    Response { req: RequestId, answer: Answer, response: StoredResponse, retry_after_ms: Option<u64> },
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

/// One store-trait operation, executed atomically by the database node.
#[derive(Clone, Debug)]
pub(crate) enum StoreOp {
    Claim {
        scope: Scope,
        fingerprint: Fingerprint,
        now: SimTime,
        lease_ms: u64,
    },
    TakeOver {
        scope: Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    },
    WriteRecoveryPoint {
        scope: Scope,
        attempt: Attempt,
        point: RecoveryPoint,
    },
    Complete {
        scope: Scope,
        attempt: Attempt,
        completion: Completion,
    },
    Release {
        scope: Scope,
        attempt: Attempt,
    },
    Read {
        scope: Scope,
    },
    Sweep {
        now: SimTime,
        window_ms: u64,
    },
    StaleInProgress {
        now: SimTime,
        limit: usize,
    },
    OutboxPending {
        limit: usize,
    },
    MarkPublished {
        id: MessageId,
    },
    /// The broken `LocalEffectStep::OwnTransaction`: the effect row
    /// inserted in its own transaction, outside the idempotency store.
    CommitEffect {
        scope: Scope,
        attempt: Attempt,
        effect: LocalEffect,
    },
    /// The broken `SweepStep::DeletesUnfinished`: an `in_progress` record
    /// deleted (a release, so the key reads as absent).
    DeleteInProgress {
        scope: Scope,
        attempt: Attempt,
    },
}

/// A store operation's result.
#[derive(Clone, Debug)]
pub(crate) enum StoreReply {
    Claim(Claim),
    Takeover(Takeover),
    Write(WriteOutcome),
    Record(Option<Record>),
    Scopes(Vec<Scope>),
    Stale(Vec<(Scope, Record)>),
    Outbox(Vec<OutboxEntry>),
    /// `outbox_mark_published` answered (whether the id existed is not used).
    Marked,
    Failed(StoreError),
}

impl StoreOp {
    pub fn name(&self) -> &'static str {
        match self {
            StoreOp::Claim { .. } => "claim",
            StoreOp::TakeOver { .. } => "take_over",
            StoreOp::WriteRecoveryPoint { .. } => "write_recovery_point",
            StoreOp::Complete { .. } => "complete",
            StoreOp::Release { .. } => "release",
            StoreOp::Read { .. } => "read",
            StoreOp::Sweep { .. } => "sweep",
            StoreOp::StaleInProgress { .. } => "stale_in_progress",
            StoreOp::OutboxPending { .. } => "outbox_pending",
            StoreOp::MarkPublished { .. } => "outbox_mark_published",
            StoreOp::CommitEffect { .. } => "insert_effect_row",
            StoreOp::DeleteInProgress { .. } => "delete_in_progress",
        }
    }
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
            Msg::Response { req, response, .. } => format!("response {} to {req}", response.status),
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
