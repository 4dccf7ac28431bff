//! Identifier and unit newtypes shared by every crate.

use crate::text::Text;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The tenant or API client a request is made for. Records are scoped by it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CallerId(pub Text);

/// The client-chosen `Idempotency-Key` value (unscoped).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IdempotencyKey(pub Text);

/// The store key: a record exists at most once per `(caller, key)`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Scope {
    /// Whose record this is.
    pub caller: CallerId,
    /// The key the caller chose.
    pub key: IdempotencyKey,
}

impl Scope {
    /// Builds a scope from plain strings.
    pub fn new(caller: &str, key: &str) -> Scope {
        Scope { caller: CallerId(caller.into()), key: IdempotencyKey(key.into()) }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.caller.0, self.key.0)
    }
}

/// The fencing token of an execution: 1 for the first owner, bumped by every
/// takeover. Every write of an execution is conditional on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Attempt(pub u32);

impl Attempt {
    /// The attempt granted by a fresh claim.
    pub const FIRST: Attempt = Attempt(1);

    /// The attempt a takeover grants after this one.
    pub fn next(self) -> Attempt {
        Attempt(self.0.checked_add(1).expect("attempt counter overflow"))
    }
}

impl fmt::Display for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A point in time, in milliseconds, on the clock of whoever supplied it.
///
/// The model never reads a clock: times are values handed in by the caller
/// (in simulation, a node's possibly skewed simulated clock).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SimTime(pub u64);

impl SimTime {
    /// Time zero.
    pub const ZERO: SimTime = SimTime(0);

    /// This time plus a duration, saturating at the far future.
    pub fn plus_ms(self, ms: u64) -> SimTime {
        SimTime(self.0.saturating_add(ms))
    }

    /// Milliseconds from `earlier` to `self`, zero if `earlier` is later.
    pub fn since_ms(self, earlier: SimTime) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.0 / 1000, self.0 % 1000)
    }
}

/// A logical operation of a client: one intent, sent once and retried with the
/// same key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OpId(pub u32);

/// Which send of an operation this is: 1 for the first, 2 for the first retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Try(pub u32);

/// One send of one operation, as seen on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RequestId {
    /// The logical operation.
    pub op: OpId,
    /// Which send of it.
    pub try_no: Try,
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "op{}.{}", self.op.0, self.try_no.0)
    }
}

/// A participant of a simulated run. Its `Display` is the lane name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeId {
    /// A client issuing keyed requests.
    Client(u32),
    /// An API server running the protocol handler.
    Server(u32),
    /// The database node hosting the store.
    Db,
    /// The downstream dependency (payment-provider stand-in).
    Downstream,
    /// The background job that resumes stale `in_progress` records.
    Reconciler,
    /// The background job that expires old records.
    Sweeper,
    /// The outbox relay that publishes committed messages.
    Relay,
    /// The consumer of published messages.
    Consumer,
    /// The simulator itself (phases, fault switches).
    World,
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeId::Client(i) => write!(f, "client-{i}"),
            NodeId::Server(i) => write!(f, "server-{i}"),
            NodeId::Db => f.write_str("db"),
            NodeId::Downstream => f.write_str("downstream"),
            NodeId::Reconciler => f.write_str("reconciler"),
            NodeId::Sweeper => f.write_str("sweeper"),
            NodeId::Relay => f.write_str("relay"),
            NodeId::Consumer => f.write_str("consumer"),
            NodeId::World => f.write_str("world"),
        }
    }
}

/// The identity of an outbox message; consumers dedup by it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MessageId(pub Text);

/// The idempotency key passed to the downstream dependency. It is derived from
/// the record, so every attempt of one execution passes the same one.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DownstreamKey(pub Text);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempt_next_increments() {
        assert_eq!(Attempt::FIRST.next(), Attempt(2));
    }

    #[test]
    fn sim_time_arithmetic_saturates() {
        assert_eq!(SimTime(5).plus_ms(u64::MAX), SimTime(u64::MAX));
        assert_eq!(SimTime(5).since_ms(SimTime(9)), 0);
        assert_eq!(SimTime(1234).to_string(), "1.234s");
    }

    #[test]
    fn scopes_order_by_caller_then_key() {
        assert!(Scope::new("a", "z") < Scope::new("b", "a"));
        assert_eq!(Scope::new("acme", "k1").to_string(), "acme/k1");
    }
}
