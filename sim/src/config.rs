//! Everything that shapes a run besides the seed. A scenario is one of these
//! plus a name and a lesson; every field has a default, so a scenario file
//! names only what it changes.

use crate::faults::plan::TimedFault;
use crate::faults::swarm::FaultProfile;
use crate::variant::Steps;
use crate::workload::Operation;
use idemsim_model::RunMeta;
pub use idemsim_protocol::{ProtocolSettings, RetryAfter, PROGRESS_MIN_PERCENT};
use serde::{Deserialize, Serialize};

/// A whole simulated deployment and its workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// How many of each node.
    pub topology: Topology,
    /// What the clients send.
    pub workload: Workload,
    /// Protocol timings and the retry policy.
    pub protocol: ProtocolSettings,
    /// Which faults are injected.
    pub faults: FaultSettings,
    /// How long each phase lasts.
    pub phases: Phases,
    /// Hard bounds on a run.
    pub budgets: Budgets,
    /// Whether the database may lose unsynced writes in a crash.
    pub durability: Durability,
    /// The protocol the servers, clients and background jobs run.
    pub steps: Steps,
}

impl Default for SimConfig {
    fn default() -> SimConfig {
        SimConfig {
            topology: Topology::default(),
            workload: Workload::default(),
            protocol: ProtocolSettings::default(),
            faults: FaultSettings::Swarm,
            phases: Phases::default(),
            budgets: Budgets::default(),
            durability: Durability::Synced,
            steps: Steps::default(),
        }
    }
}

/// Node counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Topology {
    /// API servers (default 3).
    pub servers: u32,
    /// Clients (default 4).
    pub clients: u32,
    /// Tenant names; clients act for them in turn (default acme, globex).
    pub callers: Vec<String>,
}

impl Default for Topology {
    fn default() -> Topology {
        Topology { servers: 3, clients: 4, callers: vec!["acme".into(), "globex".into()] }
    }
}

/// The seeded request mix. Weights are relative, not percentages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Workload {
    /// Operations to issue (default 50).
    pub requests: u32,
    /// Operations start at seeded times within this window (default 8 s).
    pub spread_ms: u64,
    /// Relative weights of the kinds of operation.
    pub mix: Mix,
    /// An explicit list of operations replacing the seeded draw (what
    /// `idemsim shrink` writes); `requests`, `spread_ms` and `mix` are then
    /// ignored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operations: Option<Vec<Operation>>,
}

impl Default for Workload {
    fn default() -> Workload {
        Workload { requests: 50, spread_ms: 8_000, mix: Mix::default(), operations: None }
    }
}

/// Weights of each kind of operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Mix {
    /// `POST /orders`: a local effect.
    pub orders: u32,
    /// `POST /charges`: an external effect.
    pub charges: u32,
    /// `POST /checkout`: both, plus an outbox message.
    pub checkout: u32,
    /// The same request from a second client at about the same time.
    pub concurrent_duplicate: u32,
    /// A key reused with another body (expects 422 once claimed).
    pub mismatch: u32,
    /// A request without a key (expects 400).
    pub missing_key: u32,
    /// An invalid body, then the corrected body with the same key.
    pub invalid_then_fixed: u32,
    /// Another tenant using the same key string.
    pub tenant_collision: u32,
    /// An earlier operation's key and body sent to another endpoint
    /// (expects 422: the key must not replay the other endpoint's answer).
    pub other_endpoint: u32,
    /// An earlier operation sent again late inside the expiry window
    /// (expects the stored response).
    pub late_retry: u32,
    /// An earlier operation sent again after its record's expiry window and
    /// a sweep or two (a new operation as far as the server knows).
    pub after_window: u32,
}

impl Default for Mix {
    fn default() -> Mix {
        Mix {
            orders: 4,
            charges: 4,
            checkout: 3,
            concurrent_duplicate: 3,
            mismatch: 1,
            missing_key: 1,
            invalid_then_fixed: 1,
            tenant_collision: 1,
            other_endpoint: 0,
            late_retry: 0,
            after_window: 0,
        }
    }
}

/// Where the fault profile comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultSettings {
    /// No faults at all.
    None,
    /// Each seed draws its own profile from its swarm stream.
    Swarm,
    /// This profile for every seed.
    Pinned(FaultProfile),
    /// This profile for the message-level faults and fault sites, and
    /// exactly these timed faults instead of a seeded plan (what
    /// `idemsim shrink` writes).
    Scheduled {
        /// Rates, latencies and fault sites; its counts of timed faults are
        /// ignored.
        profile: FaultProfile,
        /// The timed faults, at milliseconds into the run.
        faults: Vec<TimedFault>,
    },
}

/// Phase lengths in simulated time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Phases {
    /// Faults on, workload running (default 12 s).
    pub fault_ms: u64,
    /// Faults off, background jobs finish pending work (default 45 s, more
    /// than the clients' retry deadline).
    pub heal_ms: u64,
}

impl Default for Phases {
    fn default() -> Phases {
        Phases { fault_ms: 12_000, heal_ms: 45_000 }
    }
}

/// Bounds that turn a livelock into a reported failure.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Budgets {
    /// Recorded events plus messages sent. Unset: [`STEPS_PER_OPERATION`]
    /// for each operation of the workload, and at least
    /// [`STEPS_MIN`], so every valid workload fits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps_max: Option<u64>,
}

/// The default step budget of one operation.
pub const STEPS_PER_OPERATION: u64 = 4_000;
/// The smallest default step budget of a run.
pub const STEPS_MIN: u64 = 200_000;

impl Budgets {
    /// The step budget of a run of `operations` operations.
    pub fn steps_for(&self, operations: u64) -> u64 {
        self.steps_max.unwrap_or(STEPS_MIN.max(operations.saturating_mul(STEPS_PER_OPERATION)))
    }
}

/// Whether committed store operations survive a database crash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Every committed operation is durable (a real fsync per commit).
    Synced,
    /// Write-back caching: only state as of the last sync survives a crash.
    /// Needs the `mem` store.
    WriteBack {
        /// How often the store syncs.
        sync_interval_ms: u64,
    },
}

/// A configuration that cannot run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration: {0}")]
pub struct ConfigError(pub String);

impl SimConfig {
    /// Checks the configuration, saying what is wrong in one line.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |s: &str| Err(ConfigError(s.to_string()));
        let t = &self.topology;
        if t.servers == 0 || t.servers > 64 {
            return bad("topology.servers must be 1..=64");
        }
        if t.clients == 0 || t.clients > 256 {
            return bad("topology.clients must be 1..=256");
        }
        if t.callers.is_empty() || t.callers.iter().any(|c| c.is_empty()) {
            return bad("topology.callers must name at least one non-empty caller");
        }
        if self.workload.requests > 100_000 {
            return bad("workload.requests must be at most 100000");
        }
        let m = &self.workload.mix;
        if m.orders + m.charges + m.checkout == 0 {
            return bad("workload.mix needs a positive weight for orders, charges or checkout");
        }
        let p = &self.protocol;
        if p.lease_ms == 0 || p.store_timeout_ms == 0 || p.downstream_timeout_ms == 0 {
            return bad("protocol lease and timeouts must be positive");
        }
        if p.reconcile_interval_ms == 0 || p.relay_interval_ms == 0 || p.sweep_interval_ms == 0 {
            return bad("protocol intervals must be positive");
        }
        if p.work_ms[0] > p.work_ms[1] {
            return bad("protocol.work_ms must be [min, max] with min <= max");
        }
        let r = &p.retry;
        if r.attempts_max == 0 || r.timeout_ms == 0 || r.base_ms > r.cap_ms {
            return bad("protocol.retry needs attempts_max >= 1, timeout_ms > 0 and base_ms <= cap_ms");
        }
        crate::bounds::check(self)?;
        match &self.faults {
            FaultSettings::Pinned(profile) => {
                profile.validate()?;
                profile.check()?;
            }
            FaultSettings::Scheduled { profile, faults } => {
                profile.validate()?;
                profile.check()?;
                crate::bounds::check_fault_counts(faults)?;
                faults.iter().try_for_each(|f| self.validate_fault(f).and_then(|()| crate::bounds::check_fault(f)))?;
            }
            FaultSettings::None | FaultSettings::Swarm => {}
        }
        if let Some(ops) = &self.workload.operations {
            self.validate_operations(ops)?;
        }
        if self.phases.fault_ms == 0 {
            return bad("phases.fault_ms must be positive");
        }
        if let Durability::WriteBack { sync_interval_ms: 0 } = self.durability {
            return bad("durability.write_back.sync_interval_ms must be positive");
        }
        if self.budgets.steps_max == Some(0) {
            return bad("budgets.steps_max must be positive");
        }
        Ok(())
    }

    fn validate_fault(&self, fault: &TimedFault) -> Result<(), ConfigError> {
        let node = fault.action.node();
        let ok = match node {
            idemsim_model::NodeId::Server(s) => s < self.topology.servers,
            idemsim_model::NodeId::Client(c) => c < self.topology.clients,
            idemsim_model::NodeId::World => false,
            _ => true,
        };
        if !ok {
            return Err(ConfigError(format!("faults.scheduled: no node {node} in this topology")));
        }
        // Only executions reach the before-completion site: the servers' and the reconciler's.
        let executes = matches!(node, idemsim_model::NodeId::Server(_) | idemsim_model::NodeId::Reconciler);
        if fault.action.at_site() && !executes {
            return Err(ConfigError(format!(
                "faults.scheduled: {node} never reaches a before-completion site (only servers and the reconciler execute)"
            )));
        }
        Ok(())
    }

    fn validate_operations(&self, ops: &[Operation]) -> Result<(), ConfigError> {
        let mut ids = std::collections::BTreeSet::new();
        for o in ops {
            if o.client >= self.topology.clients {
                return Err(ConfigError(format!(
                    "workload.operations: operation {} names client {} of {}",
                    o.op.0, o.client, self.topology.clients
                )));
            }
            if let Some(s) = o.servers.iter().find(|&&s| s >= self.topology.servers) {
                return Err(ConfigError(format!(
                    "workload.operations: operation {} sends to server {s} of {}",
                    o.op.0, self.topology.servers
                )));
            }
            if !ids.insert(o.op) {
                return Err(ConfigError(format!("workload.operations: operation {} appears twice", o.op.0)));
            }
        }
        Ok(())
    }

    /// The settings the checkers judge by; `lease_ms` is the lease the
    /// protocol asks for (`timing::followed_lease_ms`).
    pub fn run_meta(&self, lease_ms: u64) -> RunMeta {
        let p = &self.protocol;
        RunMeta {
            lease_ms,
            expiry_window_ms: p.expiry_window_ms,
            reconcile_bound_ms: p.reconcile_bound_ms,
            retry: p.retry.clone(),
            amplification_max_percent: p.amplification_max_percent,
            progress_min_percent: p.progress_min_percent,
            // Set per seed from its fault profile (see `run`).
            clock_skew_max_ms: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_valid() {
        SimConfig::default().validate().unwrap();
    }

    #[test]
    fn bad_values_are_named() {
        let mut c = SimConfig::default();
        c.topology.servers = 0;
        assert!(c.validate().unwrap_err().to_string().contains("topology.servers"));
        let mut c = SimConfig::default();
        c.protocol.work_ms = [9, 1];
        assert!(c.validate().unwrap_err().to_string().contains("work_ms"));
        let mut c = SimConfig::default();
        c.phases.fault_ms = u64::MAX;
        let err = c.validate().unwrap_err().to_string();
        assert!(err.contains("phases.fault_ms is 18446744073709551615, more than its bound"), "{err}");
        let mut c = SimConfig::default();
        c.protocol.progress_min_percent = 500;
        assert!(c.validate().unwrap_err().to_string().contains("protocol.progress_min_percent is 500"));
        let mut c = SimConfig::default();
        c.workload.mix.late_retry = u32::MAX;
        assert!(c.validate().unwrap_err().to_string().contains("workload.mix.late_retry"));
    }

    #[test]
    fn a_site_fault_must_name_a_node_that_executes() {
        use crate::faults::plan::{FaultAction, TimedFault};
        use idemsim_model::NodeId;
        let with = |action: FaultAction| SimConfig {
            faults: FaultSettings::Scheduled {
                profile: FaultProfile::calm(),
                faults: vec![TimedFault { at_ms: 10, action }],
            },
            ..SimConfig::default()
        };
        let db = with(FaultAction::PauseBeforeCompletion { node: NodeId::Db, for_ms: 100 });
        let err = db.validate().unwrap_err().to_string();
        assert!(err.contains("db never reaches a before-completion site"), "{err}");
        with(FaultAction::CrashBeforeCompletion { node: NodeId::Server(1), down_ms: 100 }).validate().unwrap();
        with(FaultAction::PauseBeforeCompletion { node: NodeId::Reconciler, for_ms: 100 }).validate().unwrap();
        with(FaultAction::Pause { node: NodeId::Db, for_ms: 100 }).validate().unwrap();
    }

    #[test]
    fn every_valid_workload_fits_the_default_step_budget_and_counts_have_bounds() {
        use crate::faults::plan::{FaultAction, TimedFault};
        let b = Budgets::default();
        assert_eq!(b.steps_for(50), STEPS_MIN);
        assert_eq!(b.steps_for(100_000), 100_000 * STEPS_PER_OPERATION);
        assert_eq!(Budgets { steps_max: Some(300) }.steps_for(100_000), 300, "a budget given is the budget");
        let pauses = |n: u64| SimConfig {
            faults: FaultSettings::Scheduled {
                profile: FaultProfile::calm(),
                faults: (0..n)
                    .map(|i| TimedFault {
                        at_ms: i,
                        action: FaultAction::Pause { node: idemsim_model::NodeId::Db, for_ms: 1 },
                    })
                    .collect(),
            },
            ..SimConfig::default()
        };
        pauses(1_000).validate().unwrap();
        let err = pauses(1_001).validate().unwrap_err().to_string();
        assert!(err.contains("scheduled faults of one kind is 1001"), "{err}");
        let base =
            crate::workload::draw(&SimConfig::default(), &mut crate::rng::stream(0, crate::rng::Stream::Workload));
        let op = |n: u32| Operation { op: idemsim_model::OpId(n), ..base[0].clone() };
        let many = SimConfig {
            workload: Workload { operations: Some((0..100_001).map(op).collect()), ..Workload::default() },
            ..SimConfig::default()
        };
        let err = many.validate().unwrap_err().to_string();
        assert!(err.contains("the number of workload.operations is 100001"), "{err}");
    }

    #[test]
    fn a_partial_file_fills_in_defaults_and_unknown_fields_are_refused() {
        let c: SimConfig = serde_json::from_str(r#"{"topology": {"servers": 1}}"#).unwrap();
        assert_eq!(c.topology.servers, 1);
        assert_eq!(c.topology.clients, 4);
        let err = serde_json::from_str::<SimConfig>(r#"{"topology": {"severs": 1}}"#).unwrap_err();
        assert!(err.to_string().contains("severs"), "{err}");
    }
}
