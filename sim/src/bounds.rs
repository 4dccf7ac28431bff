//! The documented bound of every number in a config, checked before a run
//! starts, so a value that cannot mean anything (a phase of 584 million
//! years, a lease longer than a year) is bad input naming its field, not a
//! livelock on every seed. docs/scenarios.md lists the same table.

use crate::config::{ConfigError, SimConfig};
use crate::faults::plan::{FaultAction, TimedFault};

/// A day, in milliseconds.
pub const DAY_MS: u64 = 86_400_000;
/// The longest phase, and the latest time anything may be scheduled.
pub const PHASE_MS_MAX: u64 = 30 * DAY_MS;
/// The longest lease, timeout, interval, backoff or fault duration.
pub const DURATION_MS_MAX: u64 = DAY_MS;
/// The longest retention window or retry deadline.
pub const WINDOW_MS_MAX: u64 = 365 * DAY_MS;
/// The most sends an operation may make, and the most timed faults of a kind.
pub const COUNT_MAX: u32 = 1000;
/// The largest weight of a kind of operation.
pub const WEIGHT_MAX: u32 = 1_000_000;
/// The most operations a workload may have (drawn or listed).
pub const REQUESTS_MAX: u64 = 100_000;
/// The largest step budget.
pub const STEPS_MAX: u64 = 100_000_000;
/// The largest clock drift, in parts per million.
pub const DRIFT_PPM_MAX: u32 = 100_000;

/// `field` is written out only for the error: a run checks its config
/// every seed, and naming every field each time cost more than the checks.
pub(crate) fn at_most(field: impl std::fmt::Display, value: u64, max: u64) -> Result<(), ConfigError> {
    match value <= max {
        true => Ok(()),
        false => Err(ConfigError(format!("{field} is {value}, more than its bound of {max}"))),
    }
}

/// Checks every number of `config` against its bound.
pub fn check(config: &SimConfig) -> Result<(), ConfigError> {
    let c = config;
    let p = &c.protocol;
    let r = &p.retry;
    let durations = [
        ("protocol.lease_ms", p.lease_ms),
        ("protocol.sweep_interval_ms", p.sweep_interval_ms),
        ("protocol.reconcile_interval_ms", p.reconcile_interval_ms),
        ("protocol.reconcile_idle_max_ms", p.reconcile_idle_max_ms),
        ("protocol.reconcile_bound_ms", p.reconcile_bound_ms),
        ("protocol.relay_interval_ms", p.relay_interval_ms),
        ("protocol.store_timeout_ms", p.store_timeout_ms),
        ("protocol.downstream_timeout_ms", p.downstream_timeout_ms),
        ("protocol.work_ms[1]", p.work_ms[1]),
        ("protocol.retry.base_ms", r.base_ms),
        ("protocol.retry.cap_ms", r.cap_ms),
        ("protocol.retry.timeout_ms", r.timeout_ms),
        ("protocol.retry_after.in_flight_min_ms", p.retry_after.in_flight_min_ms),
        ("protocol.retry_after.takeover_refused_ms", p.retry_after.takeover_refused_ms),
        ("protocol.retry_after.lease_lost_ms", p.retry_after.lease_lost_ms),
        ("protocol.retry_after.unavailable_ms", p.retry_after.unavailable_ms),
    ];
    durations.iter().try_for_each(|(f, v)| at_most(f, *v, DURATION_MS_MAX))?;
    let windows = [
        ("protocol.expiry_window_ms", p.expiry_window_ms),
        ("protocol.sweep_window_ms", p.sweep_window_ms),
        ("protocol.retry.deadline_ms", r.deadline_ms),
    ];
    windows.iter().try_for_each(|(f, v)| at_most(f, *v, WINDOW_MS_MAX))?;
    at_most("protocol.retry.attempts_max", r.attempts_max.into(), COUNT_MAX.into())?;
    at_most("protocol.retry.budget.tokens_max", r.budget.tokens_max.into(), 1_000_000)?;
    at_most("protocol.amplification_max_percent", p.amplification_max_percent.into(), 100_000)?;
    at_most("protocol.progress_min_percent", p.progress_min_percent.into(), 100)?;
    at_most("phases.fault_ms", c.phases.fault_ms, PHASE_MS_MAX)?;
    at_most("phases.heal_ms", c.phases.heal_ms, PHASE_MS_MAX)?;
    at_most("workload.spread_ms", c.workload.spread_ms, PHASE_MS_MAX)?;
    let m = &c.workload.mix;
    let weights = [
        ("orders", m.orders),
        ("charges", m.charges),
        ("checkout", m.checkout),
        ("concurrent_duplicate", m.concurrent_duplicate),
        ("mismatch", m.mismatch),
        ("missing_key", m.missing_key),
        ("invalid_then_fixed", m.invalid_then_fixed),
        ("tenant_collision", m.tenant_collision),
        ("other_endpoint", m.other_endpoint),
        ("late_retry", m.late_retry),
        ("after_window", m.after_window),
    ];
    for (name, w) in weights {
        at_most(format_args!("workload.mix.{name}"), w.into(), WEIGHT_MAX.into())?;
    }
    at_most("budgets.steps_max", c.budgets.steps_max.unwrap_or(0), STEPS_MAX)?;
    if let Some(ops) = &c.workload.operations {
        at_most("the number of workload.operations", ops.len() as u64, REQUESTS_MAX)?;
    }
    if let crate::config::Durability::WriteBack { sync_interval_ms } = c.durability {
        at_most("durability.write_back.sync_interval_ms", sync_interval_ms, DURATION_MS_MAX)?;
    }
    for op in c.workload.operations.iter().flatten() {
        at_most(format_args!("workload.operations[{}].start_ms", op.op.0), op.start_ms, PHASE_MS_MAX)?;
    }
    Ok(())
}

/// Checks how many scheduled faults there are of each kind.
pub fn check_fault_counts(faults: &[TimedFault]) -> Result<(), ConfigError> {
    let mut counts: Vec<(std::mem::Discriminant<FaultAction>, u64)> = Vec::new();
    for f in faults {
        let kind = std::mem::discriminant(&f.action);
        match counts.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => counts.push((kind, 1)),
        }
    }
    counts.iter().try_for_each(|(_, n)| at_most("scheduled faults of one kind", *n, COUNT_MAX.into()))
}

/// Checks the numbers of a scheduled fault.
pub fn check_fault(f: &TimedFault) -> Result<(), ConfigError> {
    at_most("faults.scheduled[].at_ms", f.at_ms, PHASE_MS_MAX)?;
    f.action.check()
}
