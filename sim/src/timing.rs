//! Timing that follows the subject under test: every duration a scenario
//! derives from the lease is computed from the lease the protocol actually
//! asks for ([`Protocol::lease_ms`]), not from the one the scenario
//! configures. A store with a 90 s lock is then paused past *its* lease,
//! in a fault phase long enough for the pause to end on its own, with
//! clients that retry long enough to see the takeover.
//!
//! Each derived duration is a floor: a scenario that configures more keeps
//! it, so the defaults (1 s lease) come out exactly as configured.
//!
//! | duration | derived from the lease `L` |
//! | --- | --- |
//! | a pause of a holder right before it completes | drawn in `[1.5 L, 3 L]` (in `env.rs`) |
//! | the longest timed process pause a swarm draws | drawn in `[L/2, 4 L]` (in `swarm.rs`) |
//! | `phases.fault_ms`, when the run can pause a process | at least `workload.spread_ms + 4 L` |
//! | `protocol.retry.deadline_ms` | at least `6 L` |
//! | `protocol.expiry_window_ms`, `sweep_window_ms` | grown by as much as the deadline grew, so retries still end inside them |
//! | `phases.heal_ms` | at least the deadline plus `reconcile_bound_ms` plus `2 L` |
//! | the lease the checkers judge by (`RunMeta::lease_ms`) | `L` |
//!
//! A lease above [`FOLLOWED_LEASE_MAX_MS`] counts as endless (a protocol
//! without a lease, for example): no run could outlast it, so the timing
//! keeps the configured lease.

use crate::config::{FaultSettings, SimConfig};
use crate::faults::plan::{FaultAction, TimedFault};
use crate::faults::swarm::FaultProfile;
use crate::protocol::Protocol;

/// The longest lease the timing follows (15 minutes).
pub const FOLLOWED_LEASE_MAX_MS: u64 = 15 * 60_000;

/// The lease a run's timing follows: the protocol's own for the configured
/// one, unless it is endless (above [`FOLLOWED_LEASE_MAX_MS`]).
pub fn followed_lease_ms(config: &SimConfig, protocol: &dyn Protocol) -> u64 {
    let configured_ms = config.protocol.lease_ms;
    match protocol.lease_ms(configured_ms) {
        0 => configured_ms,
        own_ms if own_ms > FOLLOWED_LEASE_MAX_MS => configured_ms,
        own_ms => own_ms,
    }
}

/// `config` with its lease-derived durations following `lease_ms` (see the
/// module's table). The configured lease itself stays: it is what the
/// servers pass to [`Protocol::lease_ms`]. Idempotent: following the
/// result again changes nothing.
pub fn follow(config: &SimConfig, lease_ms: u64) -> SimConfig {
    let mut c = config.clone();
    if can_pause(&c.faults) {
        // A pause past the lease, begun as the last operation starts, ends
        // before the faults heal (healing resumes every paused process).
        c.phases.fault_ms = c.phases.fault_ms.max(c.workload.spread_ms.saturating_add(lease_ms.saturating_mul(4)));
    }
    let retry = &mut c.protocol.retry;
    let deadline_ms = retry.deadline_ms.max(lease_ms.saturating_mul(6));
    let grown_ms = deadline_ms - retry.deadline_ms;
    retry.deadline_ms = deadline_ms;
    c.protocol.expiry_window_ms = c.protocol.expiry_window_ms.saturating_add(grown_ms);
    c.protocol.sweep_window_ms = c.protocol.sweep_window_ms.saturating_add(grown_ms);
    let settled_ms =
        deadline_ms.saturating_add(c.protocol.reconcile_bound_ms).saturating_add(lease_ms.saturating_mul(2));
    c.phases.heal_ms = c.phases.heal_ms.max(settled_ms);
    c
}

/// True when a run of `faults` may pause a process.
fn can_pause(faults: &FaultSettings) -> bool {
    let pauses_at_sites = |p: &FaultProfile| p.pause_before_complete_permille > 0;
    match faults {
        FaultSettings::None => false,
        FaultSettings::Swarm => true,
        FaultSettings::Pinned(p) => p.pauses > 0 || pauses_at_sites(p),
        FaultSettings::Scheduled { profile, faults } => {
            let timed = |f: &TimedFault| {
                matches!(f.action, FaultAction::Pause { .. } | FaultAction::PauseBeforeCompletion { .. })
            };
            pauses_at_sites(profile) || faults.iter().any(timed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Correct;

    struct Leased(u64);
    impl Protocol for Leased {
        fn name(&self) -> String {
            "leased".into()
        }
        fn lease_ms(&self, _configured_ms: u64) -> u64 {
            self.0
        }
    }

    #[test]
    fn the_default_lease_leaves_the_default_config_as_it_is() {
        let config = SimConfig::default();
        assert_eq!(followed_lease_ms(&config, &Correct), 1_000);
        assert_eq!(follow(&config, 1_000), config);
    }

    #[test]
    fn a_long_lease_stretches_phases_deadline_and_windows() {
        let mut config = SimConfig::default();
        config.protocol.expiry_window_ms = 35_000;
        config.protocol.sweep_window_ms = 35_000;
        let lease_ms = followed_lease_ms(&config, &Leased(90_000));
        assert_eq!(lease_ms, 90_000);
        let c = follow(&config, lease_ms);
        assert_eq!(c.phases.fault_ms, 8_000 + 360_000);
        assert_eq!(c.protocol.retry.deadline_ms, 540_000);
        assert_eq!(c.protocol.expiry_window_ms, 35_000 + 510_000, "retries still end inside the window");
        assert_eq!(c.protocol.sweep_window_ms, 35_000 + 510_000);
        assert_eq!(c.phases.heal_ms, 540_000 + 10_000 + 180_000);
        assert_eq!(follow(&c, lease_ms), c, "idempotent");
        c.validate().unwrap();
    }

    #[test]
    fn a_run_that_cannot_pause_keeps_its_fault_phase() {
        let config = SimConfig { faults: FaultSettings::None, ..SimConfig::default() };
        assert_eq!(follow(&config, 90_000).phases.fault_ms, 12_000);
        let pinned = FaultProfile { pause_before_complete_permille: 10, ..FaultProfile::calm() };
        let config = SimConfig { faults: FaultSettings::Pinned(pinned), ..SimConfig::default() };
        assert_eq!(follow(&config, 90_000).phases.fault_ms, 368_000);
    }

    #[test]
    fn a_short_lease_keeps_the_configured_phases_and_an_endless_one_is_not_followed() {
        let config = SimConfig::default();
        let c = follow(&config, followed_lease_ms(&config, &Leased(100)));
        assert_eq!((c.phases.clone(), c.protocol.retry.deadline_ms), (config.phases.clone(), 30_000));
        assert_eq!(followed_lease_ms(&config, &Leased(u64::MAX)), 1_000);
        assert_eq!(followed_lease_ms(&config, &Leased(0)), 1_000);
    }
}
