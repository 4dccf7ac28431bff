//! A small configuration to explore, written like a scenario: the
//! operations clients send (same key, another body, another caller), the
//! servers, the faults the explorer may inject and how many per
//! execution, the clocks and the protocol's settings.

use crate::config::ProtocolSettings;
use crate::protocol::Steps;
use idemsim_model::{Bytes, CallerId, IdempotencyKey, Request};
use serde::{Deserialize, Serialize};

/// A fault the explorer may inject at a scheduling point. The one list:
/// every place that needs the kinds iterates [`FaultKind::ALL`] or matches
/// exhaustively.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// A client's request is lost on the way to the server (the client
    /// times out).
    DropRequest,
    /// A client's request is delivered twice (two copies handled).
    DuplicateRequest,
    /// A server's reply is lost on the way back (the client times out).
    LoseReply,
    /// A server crashes at a fault site: right before it writes the
    /// completion, or right after (the execution ends, nothing is sent).
    Crash,
    /// A server freezes right before it writes the completion, for one
    /// and a half of the protocol's own lease.
    Pause,
    /// A store operation never reaches the store (the server sees a
    /// timeout).
    StoreFail,
    /// A store operation is applied but its answer is lost (a commit whose
    /// outcome the server does not know).
    StoreIndeterminate,
    /// The dependency charges but its answer is lost (the server sees a
    /// timeout).
    ProviderTimeout,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 8] = [
        FaultKind::DropRequest,
        FaultKind::DuplicateRequest,
        FaultKind::LoseReply,
        FaultKind::Crash,
        FaultKind::Pause,
        FaultKind::StoreFail,
        FaultKind::StoreIndeterminate,
        FaultKind::ProviderTimeout,
    ];

    /// The kebab-case name, as configs and reports write it.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::DropRequest => "drop-request",
            FaultKind::DuplicateRequest => "duplicate-request",
            FaultKind::LoseReply => "lose-reply",
            FaultKind::Crash => "crash",
            FaultKind::Pause => "pause",
            FaultKind::StoreFail => "store-fail",
            FaultKind::StoreIndeterminate => "store-indeterminate",
            FaultKind::ProviderTimeout => "provider-timeout",
        }
    }

    /// Parses a name.
    pub fn from_name(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// One operation a client sends (and retries under the protocol's retry
/// policy).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationSpec {
    /// Who sends it (records are scoped per caller).
    #[serde(default = "default_caller")]
    pub caller: String,
    /// Its `Idempotency-Key`.
    pub key: String,
    /// Its endpoint: `/charges` calls the dependency, `/orders` writes
    /// locally, `/checkout` does both and publishes a message.
    #[serde(default = "default_path")]
    pub path: String,
    /// The amount in its body (two operations with one key and other
    /// amounts are a mismatch; zero or less is invalid).
    #[serde(default = "default_amount")]
    pub amount: i64,
    /// When its first send leaves, in ms from the start.
    #[serde(default)]
    pub at_ms: u64,
}

fn default_caller() -> String {
    "acme".into()
}

fn default_path() -> String {
    "/charges".into()
}

fn default_amount() -> i64 {
    100
}

impl OperationSpec {
    /// An operation of caller `acme` on `/charges` with amount 100.
    pub fn charge(key: &str) -> OperationSpec {
        OperationSpec { caller: default_caller(), key: key.into(), path: default_path(), amount: 100, at_ms: 0 }
    }

    /// The request it sends.
    pub fn request(&self) -> Request {
        Request {
            caller: CallerId(self.caller.as_str().into()),
            key: Some(IdempotencyKey(self.key.as_str().into())),
            method: "POST".into(),
            path: self.path.as_str().into(),
            body: Bytes::text(&format!(r#"{{"amount":{},"currency":"eur"}}"#, self.amount)),
        }
    }
}

/// What to explore: a small deployment and the faults allowed in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExploreConfig {
    /// A short name, as reports and schedules print it.
    pub name: String,
    /// One line on what the configuration shows.
    pub description: String,
    /// The operations, one client each.
    pub operations: Vec<OperationSpec>,
    /// How many API servers; a client's `n`-th send goes to server
    /// `(client + n - 1) % servers`.
    pub servers: u32,
    /// The faults the explorer may inject.
    pub faults: Vec<FaultKind>,
    /// At most this many faults in one execution.
    pub fault_budget: u32,
    /// Each server's clock offset from true time, in ms (missing: 0).
    pub skew_ms: Vec<i64>,
    /// The protocol's settings: lease, timeouts, retry policy, work time
    /// (its lower bound is used).
    pub protocol: ProtocolSettings,
    /// The protocol's steps (a catalogue variant); a subject's own
    /// protocol replaces them.
    pub steps: Steps,
    /// Steps an execution may take before it counts as a livelock.
    pub steps_max: u32,
}

impl Default for ExploreConfig {
    fn default() -> ExploreConfig {
        let mut protocol = ProtocolSettings::default();
        // Small, so the space stays small: two sends per operation.
        protocol.retry.attempts_max = 2;
        ExploreConfig {
            name: "custom".into(),
            description: String::new(),
            operations: vec![OperationSpec::charge("k1")],
            servers: 2,
            faults: Vec::new(),
            fault_budget: 0,
            skew_ms: Vec::new(),
            protocol,
            steps: Steps::default(),
            steps_max: 2_000,
        }
    }
}

impl ExploreConfig {
    /// Checks the bounds: one line naming what is wrong.
    pub fn validate(&self) -> Result<(), super::ExploreError> {
        self.bounds().map_err(super::ExploreError::Config)
    }

    fn bounds(&self) -> Result<(), String> {
        if self.operations.is_empty() || self.operations.len() > 8 {
            return Err(format!("operations: between 1 and 8 (got {})", self.operations.len()));
        }
        if self.servers == 0 || self.servers > 8 {
            return Err(format!("servers: between 1 and 8 (got {})", self.servers));
        }
        if self.fault_budget > 4 {
            return Err(format!("fault_budget: at most 4 (got {})", self.fault_budget));
        }
        if self.skew_ms.len() > self.servers as usize {
            return Err(format!("skew_ms: one per server at most ({} servers)", self.servers));
        }
        if let Some(s) = self.skew_ms.iter().find(|s| s.unsigned_abs() > 3_600_000) {
            return Err(format!("skew_ms: within an hour either way (got {s})"));
        }
        if self.steps_max == 0 || self.steps_max > 100_000 {
            return Err(format!("steps_max: between 1 and 100000 (got {})", self.steps_max));
        }
        if self.protocol.retry.attempts_max == 0 || self.protocol.retry.attempts_max > 4 {
            return Err(format!(
                "protocol.retry.attempts_max: between 1 and 4 for exploring (got {})",
                self.protocol.retry.attempts_max
            ));
        }
        for op in &self.operations {
            if op.key.is_empty() || op.caller.is_empty() {
                return Err("operations: every operation needs a key and a caller".into());
            }
        }
        Ok(())
    }

    /// Whether `kind` may be injected.
    pub fn allows(&self, kind: FaultKind) -> bool {
        self.fault_budget > 0 && self.faults.contains(&kind)
    }

    /// Server `i`'s clock offset.
    pub fn skew_of(&self, server: u32) -> i64 {
        self.skew_ms.get(server as usize).copied().unwrap_or(0)
    }
}
