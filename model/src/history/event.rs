//! The events of a history: everything the checkers can see.

use super::{Answer, Fault, Origin, Phase, RetryCause, WriteKind};
use crate::fingerprint::Fingerprint;
use crate::ids::{Attempt, DownstreamKey, MessageId, NodeId, OpId, RequestId, Scope, SimTime};
use crate::record::Record;
use crate::request::{Request, StoredResponse};
use serde::{Deserialize, Serialize};

/// Everything the checkers can see.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A client sent one try of an operation.
    RequestSent {
        /// Operation and try.
        req: RequestId,
        /// The server it was sent to.
        to: NodeId,
        /// The request as sent.
        request: Request,
    },
    /// A server received a request (a duplicate is received twice).
    RequestReceived {
        /// Operation and try.
        req: RequestId,
        /// 1 for the first delivery of this send, 2 for a duplicate, ...
        copy: u32,
        /// The fingerprint the server computed.
        fingerprint: Fingerprint,
    },
    /// A server answered.
    ResponseSent {
        /// The request answered.
        req: RequestId,
        /// Which delivered copy was answered.
        copy: u32,
        /// How the answer was reached.
        answer: Answer,
        /// The response.
        response: StoredResponse,
        /// A `Retry-After` hint, if any.
        retry_after_ms: Option<u64>,
    },
    /// A client received an answer for one of its tries.
    ResponseReceived {
        /// The request answered.
        req: RequestId,
        /// How the server reached it (instrumentation, not a header).
        answer: Answer,
        /// The response.
        response: StoredResponse,
        /// The `Retry-After` hint, if any.
        retry_after_ms: Option<u64>,
    },
    /// A client stopped waiting for a try.
    TimedOut {
        /// The abandoned try.
        req: RequestId,
    },
    /// A client decided to send another try after a wait.
    RetryScheduled {
        /// The try that failed.
        req: RequestId,
        /// The wait it drew.
        wait_ms: u64,
        /// Why it retries.
        cause: RetryCause,
    },
    /// A client gave up on an operation.
    GaveUp {
        /// The operation.
        op: OpId,
        /// Why (attempts, deadline, budget, non-retryable status).
        reason: String,
    },
    /// A claim inserted a new record.
    Claimed {
        /// Who claimed.
        by: Origin,
        /// The record.
        scope: Scope,
        /// Its fingerprint.
        fingerprint: Fingerprint,
        /// Always attempt 1 for a correct store.
        attempt: Attempt,
        /// The lease.
        locked_until: SimTime,
    },
    /// A claim found an existing record (returned to the claimer).
    ClaimFound {
        /// Who claimed.
        by: Origin,
        /// The record.
        scope: Scope,
        /// The record as returned.
        record: Record,
        /// The claimer's clock when it asked.
        as_of: SimTime,
    },
    /// A takeover was granted with a (bumped) attempt.
    TakenOver {
        /// Who took over.
        by: Origin,
        /// The record.
        scope: Scope,
        /// The attempt granted.
        attempt: Attempt,
        /// The new lease.
        locked_until: SimTime,
    },
    /// A takeover was refused.
    TakeoverRefused {
        /// Who tried.
        by: Origin,
        /// The record.
        scope: Scope,
        /// The attempt it was conditional on.
        expected: Attempt,
    },
    /// A server (or the reconciler) began executing, holding `attempt`.
    /// Each grant starts at most one execution; two executions sharing an
    /// attempt share a fencing token.
    ExecutionStarted {
        /// Who executes.
        by: Origin,
        /// The record.
        scope: Scope,
        /// The attempt it holds.
        attempt: Attempt,
    },
    /// A recovery point was accepted.
    RecoveryPointWritten {
        /// Who wrote.
        by: Origin,
        /// The record.
        scope: Scope,
        /// The writer's attempt.
        attempt: Attempt,
        /// The downstream key recorded.
        downstream_key: DownstreamKey,
    },
    /// A local effect row was committed.
    LocalEffectCommitted {
        /// Who committed it.
        by: Origin,
        /// The record it belongs to.
        scope: Scope,
        /// The writer's attempt.
        attempt: Attempt,
        /// The row id.
        effect_id: String,
    },
    /// A completion was accepted: the record is now `completed`.
    CompletionWritten {
        /// Who completed.
        by: Origin,
        /// The record.
        scope: Scope,
        /// The completing attempt.
        attempt: Attempt,
        /// The stored response.
        response: StoredResponse,
        /// Outbox messages committed with it.
        outbox: Vec<MessageId>,
    },
    /// Outbox messages were queued in a transaction of their own, outside
    /// any completion (a protocol that writes its outbox row after the
    /// completion; the correct one never does).
    OutboxStaged {
        /// Who wrote them.
        by: Origin,
        /// The record they belong to.
        scope: Scope,
        /// The writer's attempt.
        attempt: Attempt,
        /// The messages queued.
        outbox: Vec<MessageId>,
    },
    /// A release (delete of an unstored execution) was accepted.
    Released {
        /// Who released.
        by: Origin,
        /// The record.
        scope: Scope,
        /// The releasing attempt.
        attempt: Attempt,
    },
    /// A fenced write was refused: the writer lost the lease.
    WriteFenced {
        /// Who wrote.
        by: Origin,
        /// The record.
        scope: Scope,
        /// The stale attempt.
        attempt: Attempt,
        /// Which write.
        write: WriteKind,
    },
    /// A store operation failed (unavailable, indeterminate, ...).
    StoreFailed {
        /// Who asked.
        by: Origin,
        /// The operation.
        op: String,
        /// The error.
        error: String,
    },
    /// A second service sent the store an operation the protocol never
    /// asks for, chosen from the record as the store returned it; the
    /// store's answer and the record after it, as the store returned it.
    /// (Boxed: the other events stay small.)
    StoreProbed(Box<crate::probe::Probed>),
    /// The sweeper deleted a record.
    RecordSwept {
        /// The record.
        scope: Scope,
        /// When it was created: the `created_at` the record stores (the
        /// claiming server's clock).
        created_at: SimTime,
        /// Whether it was completed.
        completed: bool,
        /// The sweeper's clock when it swept: what the store compared
        /// `created_at` with (histories written before it was recorded
        /// have none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        as_of: Option<SimTime>,
    },
    /// The dependency was called.
    DownstreamCalled {
        /// Who called.
        by: Origin,
        /// The node that called.
        from: NodeId,
        /// The record the call belongs to.
        scope: Scope,
        /// The caller's attempt.
        attempt: Attempt,
        /// The key passed.
        downstream_key: DownstreamKey,
    },
    /// The dependency performed a new effect (a repeat key performs none).
    DownstreamEffect {
        /// The record the call belongs to.
        scope: Scope,
        /// The key it was performed under.
        downstream_key: DownstreamKey,
    },
    /// The dependency answered a call with something other than an
    /// immediate charge: a decline (402), a refusal for now (429 or 503,
    /// nothing charged), or a charge (200) answered `delay_ms` late. An
    /// immediate charge records nothing here (its effect, if new, is a
    /// [`Event::DownstreamEffect`]).
    DownstreamAnswered {
        /// The record the call belongs to.
        scope: Scope,
        /// The key the call carried.
        downstream_key: DownstreamKey,
        /// The status the dependency answered: 200, 402, 429 or 503.
        status: u16,
        /// The `Retry-After` of a 429 or 503.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
        /// How long after the call arrived the answer left.
        #[serde(default)]
        delay_ms: u64,
    },
    /// A message was published (by the relay, or a broken handler).
    MessagePublished {
        /// The message.
        id: MessageId,
        /// The record that produced it.
        scope: Scope,
    },
    /// The consumer received a message; `applied` is false for a duplicate.
    MessageConsumed {
        /// The message.
        id: MessageId,
        /// The record that produced it.
        scope: Scope,
        /// Whether its effect was applied now.
        applied: bool,
    },
    /// A fault was injected.
    Fault(Fault),
    /// A phase began.
    Phase {
        /// Which.
        phase: Phase,
    },
}

impl Event {
    /// The record an event of the store, the dependency or the consumer
    /// concerns; `None` for client and server events, which name only
    /// their request, and for faults and phases.
    pub fn scope(&self) -> Option<&Scope> {
        match self {
            Event::Claimed { scope, .. }
            | Event::ClaimFound { scope, .. }
            | Event::TakenOver { scope, .. }
            | Event::TakeoverRefused { scope, .. }
            | Event::ExecutionStarted { scope, .. }
            | Event::RecoveryPointWritten { scope, .. }
            | Event::LocalEffectCommitted { scope, .. }
            | Event::CompletionWritten { scope, .. }
            | Event::Released { scope, .. }
            | Event::OutboxStaged { scope, .. }
            | Event::WriteFenced { scope, .. }
            | Event::RecordSwept { scope, .. }
            | Event::DownstreamCalled { scope, .. }
            | Event::DownstreamEffect { scope, .. }
            | Event::DownstreamAnswered { scope, .. }
            | Event::MessagePublished { scope, .. }
            | Event::MessageConsumed { scope, .. } => Some(scope),
            _ => None,
        }
    }

    /// Who acted, for the events that say (store writes and reads, the
    /// execution, the dependency call).
    pub fn origin(&self) -> Option<Origin> {
        match self {
            Event::Claimed { by, .. }
            | Event::ClaimFound { by, .. }
            | Event::TakenOver { by, .. }
            | Event::TakeoverRefused { by, .. }
            | Event::ExecutionStarted { by, .. }
            | Event::RecoveryPointWritten { by, .. }
            | Event::LocalEffectCommitted { by, .. }
            | Event::CompletionWritten { by, .. }
            | Event::Released { by, .. }
            | Event::OutboxStaged { by, .. }
            | Event::WriteFenced { by, .. }
            | Event::DownstreamCalled { by, .. } => Some(*by),
            _ => None,
        }
    }

    /// What an accepted completion commits, in order: the local effect row
    /// (if any), then the completion itself with its outbox messages.
    pub fn completion(by: Origin, scope: &Scope, attempt: Attempt, completion: &crate::Completion) -> Vec<Event> {
        let mut events = Vec::with_capacity(2);
        Event::each_of_completion(by, scope, attempt, completion, |event| events.push(event));
        events
    }

    /// [`Event::completion`], handing each event to `each` instead of
    /// collecting them (a recorder that appends them to a history then
    /// needs no vector of its own).
    pub fn each_of_completion(
        by: Origin,
        scope: &Scope,
        attempt: Attempt,
        completion: &crate::Completion,
        mut each: impl FnMut(Event),
    ) {
        if let Some(effect) = &completion.local_effect {
            each(Event::LocalEffectCommitted { by, scope: scope.clone(), attempt, effect_id: effect.id.clone() });
        }
        let outbox = completion.outbox.iter().map(|m| m.id.clone()).collect();
        each(Event::CompletionWritten {
            by,
            scope: scope.clone(),
            attempt,
            response: completion.response.clone(),
            outbox,
        });
    }
}
