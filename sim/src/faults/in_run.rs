//! [`RunFaults`]: the faults of one run as it goes.

use crate::faults::plan::{FaultAction, TimedFault};
use crate::faults::swarm::FaultProfile;
use idemsim_model::NodeId;

/// The run's fault profile, whether its fault phase is still on, and the
/// planned faults that wait for a fault site.
///
/// **Invariant:** once healed, the run draws no fault again; a planned
/// site fault is taken once, at the first site of its node at or after
/// its time, earliest first.
pub(crate) struct RunFaults {
    /// The profile the seed drew. Its latencies and the dependency's
    /// decline rate hold after the fault phase too.
    pub profile: FaultProfile,
    on: bool,
    at_sites: Vec<TimedFault>,
}

impl RunFaults {
    /// The fault phase of a run under `profile`, with no site faults yet.
    pub fn new(profile: FaultProfile) -> RunFaults {
        RunFaults { profile, on: true, at_sites: Vec::new() }
    }

    /// Whether the fault phase is on.
    #[inline]
    pub fn on(&self) -> bool {
        self.on
    }

    /// Ends the fault phase.
    pub fn heal(&mut self) {
        self.on = false;
    }

    /// `fault` waits for a site of its node (see [`FaultAction::at_site`]);
    /// faults come in time order.
    pub fn wait_for_site(&mut self, fault: TimedFault) {
        assert!(self.at_sites.last().is_none_or(|f| f.at_ms <= fault.at_ms), "site faults in time order");
        self.at_sites.push(fault);
    }

    /// The first planned site fault for `node` whose time has come, taken:
    /// a handler on `node` is at its site, at `now_ms`. None once healed.
    pub fn take_at_site(&mut self, node: NodeId, now_ms: u64) -> Option<FaultAction> {
        if !self.on || self.at_sites.is_empty() {
            return None;
        }
        let i = self.at_sites.iter().position(|f| f.at_ms <= now_ms && f.action.node() == node)?;
        Some(self.at_sites.remove(i).action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crash(node: NodeId, at_ms: u64) -> TimedFault {
        TimedFault { at_ms, action: FaultAction::CrashBeforeCompletion { node, down_ms: 100 } }
    }

    #[test]
    fn a_site_fault_is_taken_once_at_its_node_when_its_time_has_come() {
        let mut faults = RunFaults::new(FaultProfile::calm());
        faults.wait_for_site(crash(NodeId::Server(0), 10));
        faults.wait_for_site(crash(NodeId::Server(1), 20));
        assert_eq!(faults.take_at_site(NodeId::Server(1), 15), None, "not yet");
        assert_eq!(faults.take_at_site(NodeId::Server(2), 30), None, "another node's");
        assert!(faults.take_at_site(NodeId::Server(1), 25).is_some());
        assert_eq!(faults.take_at_site(NodeId::Server(1), 30), None, "taken once");
    }

    #[test]
    fn once_healed_no_site_fault_is_taken() {
        let mut faults = RunFaults::new(FaultProfile::calm());
        faults.wait_for_site(crash(NodeId::Server(0), 10));
        faults.heal();
        assert!(!faults.on());
        assert_eq!(faults.take_at_site(NodeId::Server(0), 20), None);
    }
}
