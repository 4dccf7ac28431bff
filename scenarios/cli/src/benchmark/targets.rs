//! The bench's targets: each figure against its goal.

use super::*;

/// The figures the targets judge, besides time to first failure.
pub(super) struct Speed {
    pub(super) seeds_per_sec: f64,
    pub(super) events_per_sec: f64,
    pub(super) sim_to_wall_ratio: f64,
    pub(super) expiry_ms_per_sim_day: f64,
    pub(super) jobs: f64,
    pub(super) peak_rss_mib: f64,
}

/// The targets of #17 (seeds, events, time to first failure, jobs, memory)
/// and of the benchmarks issue before it (simulated time per wall time).
pub(super) fn targets(s: &Speed, detail: &BTreeMap<String, Ttff>) -> Vec<Figure> {
    let t =
        |name: &str, value: f64, goal: &str, pass: bool| Figure { name: name.into(), value, goal: goal.into(), pass };
    let worst_median =
        detail.values().map(|d| if d.found == d.sweeps { d.median_ms } else { f64::INFINITY }).fold(0.0, f64::max);
    vec![
        t("seeds per second, one core", s.seeds_per_sec, ">= 1000", s.seeds_per_sec >= 1000.0),
        t("events per second, one core", s.events_per_sec, ">= 1000000", s.events_per_sec >= 1_000_000.0),
        t("simulated time per wall time", s.sim_to_wall_ratio, ">= 100000x", s.sim_to_wall_ratio >= 100_000.0),
        t(
            "wall ms per simulated 24 h (expiry-window)",
            s.expiry_ms_per_sim_day,
            "< 1000 ms",
            s.expiry_ms_per_sim_day < 1000.0,
        ),
        t(
            "slowest median time to first failure (ms)",
            worst_median,
            "< 100 ms for every broken variant",
            worst_median < 100.0,
        ),
        t("seeds per second, 2 jobs / 1 job", s.jobs, ">= 1.8x", s.jobs >= 1.8),
        t("peak RSS after one worker's sweep (MiB)", s.peak_rss_mib, "< 32 MiB", s.peak_rss_mib < 32.0),
    ]
}
