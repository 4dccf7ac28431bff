//! The timed fault plan: which node fails how, and when, drawn up front.

use crate::config::{ConfigError, SimConfig};
use crate::faults::swarm::FaultProfile;
use crate::rng::{between, chance, SimRng};
use idemsim_model::NodeId;
use serde::{Deserialize, Serialize};

/// A fault at a point of the fault phase. Faults are verbs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum FaultAction {
    /// Crash a node, restart it after `down_ms`.
    Crash {
        /// The node.
        node: NodeId,
        /// How long it stays down.
        down_ms: u64,
    },
    /// Freeze a node for `for_ms`.
    Pause {
        /// The node.
        node: NodeId,
        /// How long.
        for_ms: u64,
    },
    /// Cut a node off for `for_ms`: its outgoing messages if `outgoing`,
    /// its incoming ones if `incoming`.
    Partition {
        /// The node.
        node: NodeId,
        /// Cut what it sends.
        outgoing: bool,
        /// Cut what it receives.
        incoming: bool,
        /// How long.
        for_ms: u64,
    },
    /// Crash a node when a handler on it next reaches its
    /// before-completion fault site, at `at_ms` or later, and restart it
    /// after `down_ms`: the crash a fault site drew, pinned to its moment
    /// (what `idemsim shrink` writes for one, so it replays where it
    /// happened, not at the start of its millisecond).
    CrashBeforeCompletion {
        /// The node.
        node: NodeId,
        /// How long it stays down.
        down_ms: u64,
    },
    /// Freeze a node for `for_ms` when a handler on it next reaches its
    /// before-completion fault site, at `at_ms` or later (as
    /// [`FaultAction::CrashBeforeCompletion`]).
    PauseBeforeCompletion {
        /// The node.
        node: NodeId,
        /// How long.
        for_ms: u64,
    },
    /// Set a node's clock offset and drift.
    Skew {
        /// The node.
        node: NodeId,
        /// Offset from true time.
        offset_ms: i64,
        /// Drift in parts per million.
        drift_ppm: i32,
    },
}

impl FaultAction {
    /// The node the fault hits.
    pub fn node(&self) -> NodeId {
        *{ *self }.node_mut()
    }

    /// It waits for a fault site instead of happening at its time.
    pub fn at_site(&self) -> bool {
        matches!(self, FaultAction::CrashBeforeCompletion { .. } | FaultAction::PauseBeforeCompletion { .. })
    }

    /// Checks its numbers against their bounds (a length of at most a
    /// day; a skew's offset and drift).
    pub fn check(&self) -> Result<(), ConfigError> {
        use crate::bounds::{at_most, DRIFT_PPM_MAX, DURATION_MS_MAX};
        match *self {
            FaultAction::Skew { offset_ms, drift_ppm, .. } => {
                at_most("faults.scheduled[].offset_ms", offset_ms.unsigned_abs(), DURATION_MS_MAX)?;
                at_most("faults.scheduled[].drift_ppm", drift_ppm.unsigned_abs().into(), DRIFT_PPM_MAX.into())
            }
            ref timed => at_most("faults.scheduled[] duration", timed.length_ms().unwrap_or(0), DURATION_MS_MAX),
        }
    }

    /// How long the node stays down, frozen or cut off; `None` for a skew,
    /// which lasts the run.
    pub fn length_ms(&self) -> Option<u64> {
        { *self }.length_ms_mut().copied()
    }

    fn length_ms_mut(&mut self) -> Option<&mut u64> {
        match self {
            FaultAction::Crash { down_ms: ms, .. }
            | FaultAction::Pause { for_ms: ms, .. }
            | FaultAction::Partition { for_ms: ms, .. }
            | FaultAction::CrashBeforeCompletion { down_ms: ms, .. }
            | FaultAction::PauseBeforeCompletion { for_ms: ms, .. } => Some(ms),
            FaultAction::Skew { .. } => None,
        }
    }

    /// The shrinker's step for this fault: half as long (or half the
    /// skew); false when it is already as small as it gets (under 20 ms).
    pub fn halve(&mut self) -> bool {
        if let FaultAction::Skew { offset_ms, drift_ppm, .. } = self {
            let before = (*offset_ms, *drift_ppm);
            (*offset_ms, *drift_ppm) = (*offset_ms / 2, *drift_ppm / 2);
            return before != (*offset_ms, *drift_ppm);
        }
        match self.length_ms_mut() {
            Some(ms) if *ms >= 20 => {
                *ms /= 2;
                true
            }
            _ => false,
        }
    }

    /// The node the fault hits, to move the fault elsewhere.
    pub fn node_mut(&mut self) -> &mut NodeId {
        match self {
            FaultAction::Crash { node, .. }
            | FaultAction::Pause { node, .. }
            | FaultAction::Partition { node, .. }
            | FaultAction::CrashBeforeCompletion { node, .. }
            | FaultAction::PauseBeforeCompletion { node, .. }
            | FaultAction::Skew { node, .. } => node,
        }
    }
}

/// A fault and when it happens (ms into the run).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimedFault {
    /// When.
    pub at_ms: u64,
    /// What.
    pub action: FaultAction,
}

/// Draws the plan for a profile. Skews happen at time zero; everything else
/// within the fault phase.
pub fn draw(config: &SimConfig, profile: &FaultProfile, rng: &mut SimRng) -> Vec<TimedFault> {
    let servers = config.topology.servers;
    let fault_ms = config.phases.fault_ms;
    let mut plan = Vec::new();
    let server = |rng: &mut SimRng| NodeId::Server(between(rng, 0, u64::from(servers) - 1) as u32);
    if profile.skew_ms_max > 0 || profile.drift_ppm_max > 0 {
        let skewable = (0..servers).map(NodeId::Server).chain([NodeId::Reconciler, NodeId::Sweeper]);
        for node in skewable {
            let offset_ms = between(rng, 0, 2 * profile.skew_ms_max) as i64 - profile.skew_ms_max as i64;
            let drift = i64::from(profile.drift_ppm_max);
            let drift_ppm = (between(rng, 0, 2 * drift as u64) as i64 - drift) as i32;
            plan.push(TimedFault { at_ms: 0, action: FaultAction::Skew { node, offset_ms, drift_ppm } });
        }
    }
    for _ in 0..profile.server_crashes {
        let action = FaultAction::Crash { node: server(rng), down_ms: between(rng, 50, profile.down_ms_max.max(50)) };
        plan.push(TimedFault { at_ms: between(rng, 0, fault_ms), action });
    }
    for _ in 0..profile.db_crashes {
        let action = FaultAction::Crash { node: NodeId::Db, down_ms: between(rng, 50, profile.down_ms_max.max(50)) };
        plan.push(TimedFault { at_ms: between(rng, 0, fault_ms), action });
    }
    for _ in 0..profile.pauses {
        let action = FaultAction::Pause { node: server(rng), for_ms: between(rng, 100, profile.pause_ms_max.max(100)) };
        plan.push(TimedFault { at_ms: between(rng, 0, fault_ms), action });
    }
    for _ in 0..profile.partitions {
        let node = if chance(rng, 250) { NodeId::Db } else { server(rng) };
        let (outgoing, incoming) = match between(rng, 0, 2) {
            0 => (true, false),
            1 => (false, true),
            _ => (true, true),
        };
        let for_ms = between(rng, 50, profile.partition_ms_max.max(50));
        plan.push(TimedFault {
            at_ms: between(rng, 0, fault_ms),
            action: FaultAction::Partition { node, outgoing, incoming, for_ms },
        });
    }
    plan.sort_by_key(|f| f.at_ms);
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Stream};

    #[test]
    fn a_plan_stays_within_the_fault_phase_and_in_order() {
        let config = SimConfig::default();
        let profile = FaultProfile {
            server_crashes: 3,
            db_crashes: 1,
            down_ms_max: 500,
            pauses: 2,
            pause_ms_max: 900,
            partitions: 2,
            partition_ms_max: 700,
            skew_ms_max: 100,
            ..FaultProfile::calm()
        };
        let plan = draw(&config, &profile, &mut stream(3, Stream::Plan));
        assert_eq!(plan.len(), 3 + 1 + 2 + 2 + 5);
        assert!(plan.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
        assert!(plan.iter().all(|f| f.at_ms <= config.phases.fault_ms));
    }
}
