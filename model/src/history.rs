//! The recorded history of a run: what every participant did, in order.
//!
//! The simulator appends; the checkers read. Events say what was observed
//! (a write was accepted, a response was received), never what "should" have
//! happened, so a broken variant shows up as a history no checker accepts.

use crate::fingerprint::Fingerprint;
use crate::ids::{Attempt, DownstreamKey, MessageId, NodeId, OpId, RequestId, Scope, SimTime};
use crate::record::Record;
use crate::request::{Request, StoredResponse};
use crate::retry::RetryPolicy;
use serde::{Deserialize, Serialize};

/// A whole run: its settings and its events in the order they happened.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// What the checkers need to know about the run's configuration.
    pub meta: RunMeta,
    /// Events in order of occurrence (timestamps never decrease).
    pub entries: Vec<Entry>,
}

/// The protocol settings a run used, as documented to its clients.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Lease granted by a claim or takeover.
    pub lease_ms: u64,
    /// The documented retention window: no record may be swept earlier.
    pub expiry_window_ms: u64,
    /// After faults heal, an `in_progress` record must be completed within
    /// its lease plus this bound.
    pub reconcile_bound_ms: u64,
    /// The clients' retry policy.
    pub retry: RetryPolicy,
    /// Sends received by servers per client operation, in percent, above
    /// which retries count as amplified (e.g. 600 = 6 sends per operation).
    pub amplification_max_percent: u32,
    /// The least share of operations, in percent, that a run must
    /// acknowledge with a success (property `progress`).
    #[serde(default)]
    pub progress_min_percent: u32,
    /// The most two nodes' clocks may disagree, in ms: the expiry checker
    /// allows it between the server that stamped a record and the sweeper.
    #[serde(default)]
    pub clock_skew_max_ms: u64,
}

impl Default for RunMeta {
    fn default() -> RunMeta {
        RunMeta {
            lease_ms: 1_000,
            expiry_window_ms: 86_400_000,
            reconcile_bound_ms: 10_000,
            retry: RetryPolicy::default(),
            amplification_max_percent: 600,
            progress_min_percent: 0,
            clock_skew_max_ms: 0,
        }
    }
}

/// One event, stamped with simulated time and the node it happened on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Global simulated time (not a node's skewed clock).
    pub at: SimTime,
    /// Where it happened.
    pub node: NodeId,
    /// What happened.
    pub event: Event,
}

/// Who asked the store for something.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A server handling copy `copy` of this request (a network duplicate
    /// of one send is handled again as copy 2, 3, ...).
    Request {
        /// The send being handled.
        req: RequestId,
        /// Which delivered copy of it.
        copy: u32,
    },
    /// The reconciler resuming a stale record.
    Reconciler,
    /// The sweeper.
    Sweeper,
    /// The outbox relay.
    Relay,
}

/// How a server arrived at the response it sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// This request executed and its completion was accepted.
    Executed,
    /// The stored response of a completed record.
    Replayed,
    /// 400: no key.
    MissingKey,
    /// 422: the key was used with another fingerprint.
    Mismatch,
    /// 409: another execution holds the lease.
    InFlight,
    /// Validation failed before execution began (not stored).
    Invalid,
    /// The holder's write was fenced: it lost the lease and stopped.
    LeaseLost,
    /// The store failed or timed out (503).
    Unavailable,
    /// Seen from outside (`idemsim http`): how the service reached it is
    /// not known.
    Unknown,
}

/// Which fenced write was attempted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteKind {
    /// A recovery-point write.
    RecoveryPoint,
    /// The completion (with its local effect and outbox messages).
    Completion,
    /// A release of a record that must not be stored.
    Release,
}

/// Why a client retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryCause {
    /// No answer within the timeout (or the connection was reset).
    Timeout,
    /// An answer with this status.
    Status(u16),
}

/// A fault the simulator injected, recorded so stories can tell it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum Fault {
    /// A message was lost.
    Dropped {
        /// Sender.
        from: NodeId,
        /// Intended receiver.
        to: NodeId,
        /// What it carried.
        what: String,
    },
    /// A message was delivered an extra time (possibly to another node).
    Duplicated {
        /// Sender.
        from: NodeId,
        /// Receiver of the copy.
        to: NodeId,
        /// What it carried.
        what: String,
    },
    /// A node crashed: its in-flight work is lost.
    Crashed {
        /// The node.
        node: NodeId,
    },
    /// A crashed node came back.
    Restarted {
        /// The node.
        node: NodeId,
    },
    /// A node froze (GC pause, stop-the-world).
    Paused {
        /// The node.
        node: NodeId,
        /// For how long.
        for_ms: u64,
    },
    /// A paused node resumed.
    Resumed {
        /// The node.
        node: NodeId,
    },
    /// A node was cut off: what it sends, what it receives, or both.
    Partitioned {
        /// The node.
        node: NodeId,
        /// Its outgoing messages are lost.
        outgoing: bool,
        /// Its incoming messages are lost.
        incoming: bool,
    },
    /// A partitioned node was reconnected.
    Reconnected {
        /// The node.
        node: NodeId,
    },
    /// All partitions were repaired.
    PartitionsHealed,
    /// A node's clock was set off from true time.
    ClockSkewed {
        /// The node.
        node: NodeId,
        /// Offset in ms (negative: behind).
        offset_ms: i64,
    },
    /// Writes the store had not synced were lost in a database crash.
    UnsyncedWritesLost {
        /// How many operations were lost.
        count: u32,
    },
}

/// A phase of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Faults on, workload running.
    Faults,
    /// Faults off; the reconciler and relay finish what is pending.
    Heal,
    /// The run is over; the checkers judge from here.
    End,
}

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

impl Fault {
    /// The node a crash, restart, pause, resume, partition, reconnection or
    /// skew happened to; `None` for message faults and run-wide ones.
    pub fn node(&self) -> Option<NodeId> {
        match self {
            Fault::Crashed { node }
            | Fault::Restarted { node }
            | Fault::Paused { node, .. }
            | Fault::Resumed { node }
            | Fault::Partitioned { node, .. }
            | Fault::Reconnected { node }
            | Fault::ClockSkewed { node, .. } => Some(*node),
            Fault::Dropped { .. }
            | Fault::Duplicated { .. }
            | Fault::PartitionsHealed
            | Fault::UnsyncedWritesLost { .. } => None,
        }
    }
}

impl Origin {
    /// The request behind this origin, if it is one.
    pub fn request(self) -> Option<RequestId> {
        match self {
            Origin::Request { req, .. } => Some(req),
            _ => None,
        }
    }
}

impl Fault {
    /// The class of fault, as summaries name it.
    pub fn class(&self) -> Option<&'static str> {
        Some(match self {
            Fault::Dropped { .. } => "drop",
            Fault::Duplicated { .. } => "duplicate",
            Fault::Partitioned { .. } => "partition",
            Fault::Crashed { node: NodeId::Db } => "db-crash",
            Fault::Crashed { node: NodeId::Server(_) } => "server-crash",
            Fault::Crashed { .. } => "crash",
            Fault::Paused { .. } => "pause",
            Fault::ClockSkewed { .. } => "skew",
            Fault::UnsyncedWritesLost { .. } => "lost-writes",
            Fault::Restarted { .. } | Fault::Resumed { .. } | Fault::Reconnected { .. } | Fault::PartitionsHealed => {
                return None
            }
        })
    }
}

impl History {
    /// The classes of fault that happened in this run (not the ones the
    /// profile allowed), in a fixed order, each once.
    pub fn fault_classes(&self) -> Vec<&'static str> {
        let mut seen: Vec<&'static str> = Vec::new();
        for entry in &self.entries {
            let class = match &entry.event {
                Event::Fault(f) => f.class(),
                Event::DownstreamAnswered { status: 402, .. } => Some("provider-decline"),
                Event::DownstreamAnswered { status: 429 | 503, .. } => Some("provider-unavailable"),
                Event::DownstreamAnswered { delay_ms: 1.., .. } => Some("provider-slow"),
                _ => None,
            };
            if let Some(class) = class.filter(|c| !seen.contains(c)) {
                seen.push(class);
            }
        }
        seen.sort_unstable();
        seen
    }

    /// An empty history with these settings.
    pub fn new(meta: RunMeta) -> History {
        History { meta, entries: Vec::new() }
    }

    /// Appends an event. Time never runs backwards in a history.
    #[inline]
    pub fn push(&mut self, at: SimTime, node: NodeId, event: Event) {
        self.assert_next_at(at);
        self.entries.push(Entry { at, node, event });
    }

    /// Panics if an event at `at` would make time run backwards: the check
    /// of [`History::push`], for a caller that pushes to `entries` itself
    /// (and so spares its event a copy).
    #[inline]
    pub fn assert_next_at(&self, at: SimTime) {
        let last_at = self.entries.last().map_or(SimTime(0), |last| last.at);
        if last_at > at {
            time_went_backwards(last_at, at);
        }
    }

    /// When the heal phase began, if it did.
    pub fn heal_at(&self) -> Option<SimTime> {
        self.entries.iter().find(|e| matches!(e.event, Event::Phase { phase: Phase::Heal })).map(|e| e.at)
    }

    /// When the run ended, if it did.
    pub fn end_at(&self) -> Option<SimTime> {
        self.entries.iter().rev().find(|e| matches!(e.event, Event::Phase { phase: Phase::End })).map(|e| e.at)
    }

    /// The requests clients sent, by operation (first try first).
    pub fn requests_by_op(&self) -> std::collections::BTreeMap<OpId, Vec<(usize, &Request)>> {
        let mut map: std::collections::BTreeMap<OpId, Vec<(usize, &Request)>> = Default::default();
        for (i, e) in self.entries.iter().enumerate() {
            if let Event::RequestSent { req, request, .. } = &e.event {
                map.entry(req.op).or_default().push((i, request));
            }
        }
        map
    }
}

/// The assertion of [`History::push`], out of line: a panic path inline
/// made every push copy its event once more, to drop it on unwinding.
#[cold]
#[inline(never)]
fn time_went_backwards(last_at: SimTime, at: SimTime) -> ! {
    panic!("history time went backwards: {at} after {last_at}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_with_a_type_tag() {
        let e = Event::Phase { phase: Phase::Heal };
        assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"type":"phase","phase":"heal"}"#);
        let f = Event::Fault(Fault::Crashed { node: NodeId::Server(1) });
        assert_eq!(serde_json::to_string(&f).unwrap(), r#"{"type":"fault","fault":"crashed","node":{"server":1}}"#);
    }

    #[test]
    #[should_panic(expected = "backwards")]
    fn time_never_runs_backwards() {
        let mut h = History::default();
        h.push(SimTime(5), NodeId::World, Event::Phase { phase: Phase::Faults });
        h.push(SimTime(4), NodeId::World, Event::Phase { phase: Phase::Heal });
    }
}
