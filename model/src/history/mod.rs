//! The recorded history of a run: what every participant did, in order.
//!
//! The simulator appends; the checkers read. Events say what was observed
//! (a write was accepted, a response was received), never what "should" have
//! happened, so a broken variant shows up as a history no checker accepts.

use crate::ids::{NodeId, OpId, RequestId, SimTime};
use crate::request::Request;
use crate::retry::RetryPolicy;
use serde::{Deserialize, Serialize};

mod event;

pub use event::Event;

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
