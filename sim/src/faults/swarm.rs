//! Fault profiles, and swarm testing: each seed draws its own profile.
//!
//! A profile says which faults are on and how hard they hit. Under swarm
//! testing a sweep explores many mixes: some seeds drop a fifth of all
//! messages, others only pause holders, others only skew clocks, which
//! finds bugs that one fixed mix dilutes.

use crate::config::ConfigError;
use crate::rng::{between, chance, SimRng};
use serde::{Deserialize, Serialize};

/// Which faults a run injects, and how hard. Rates are per mille.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultProfile {
    /// Messages lost.
    pub drop_permille: u32,
    /// Messages delivered twice (a client request's copy may go to another server).
    pub dup_permille: u32,
    /// One-way latency, drawn per message in `[min, max]`; spread reorders.
    pub latency_ms: [u64; 2],
    /// A duplicate arrives up to this much later than the original.
    pub dup_delay_max_ms: u64,
    /// Partitions cutting one node off (one way or both), during the fault phase.
    pub partitions: u32,
    /// Longest partition.
    pub partition_ms_max: u64,
    /// Server crashes (each restarts later).
    pub server_crashes: u32,
    /// Database crashes (each restarts later).
    pub db_crashes: u32,
    /// Longest time a crashed node stays down.
    pub down_ms_max: u64,
    /// Process pauses of a server (GC, stop-the-world).
    pub pauses: u32,
    /// Longest pause.
    pub pause_ms_max: u64,
    /// Largest clock offset of a server or background node, either way.
    pub skew_ms_max: u64,
    /// Largest clock drift, parts per million, either way.
    pub drift_ppm_max: u32,
    /// A server crashes between the downstream call and the completion write.
    pub crash_before_complete_permille: u32,
    /// A holder is paused past its lease right before completing.
    pub pause_before_complete_permille: u32,
    /// The response is lost right after the completion committed.
    pub lose_response_permille: u32,
    /// The dependency refuses a new charge for now (429 or 503, with a
    /// `Retry-After`), charging nothing; during the fault phase.
    pub provider_unavailable_permille: u32,
    /// Longest `Retry-After` the dependency sends (drawn from 1 ms).
    pub provider_retry_after_ms_max: u64,
    /// The dependency declines a new charge for good (402): its answer for
    /// that downstream key from then on. Not a fault: on all run long.
    pub provider_decline_permille: u32,
    /// The dependency answers a call late (drawn up to
    /// `provider_slow_ms_max`); a charge is made on arrival, so an answer
    /// later than the caller's `downstream_timeout_ms` leaves the caller
    /// not knowing it was charged. During the fault phase.
    pub provider_slow_permille: u32,
    /// Longest late answer.
    pub provider_slow_ms_max: u64,
}

/// A fault knob of a profile: its name, and the setter that turns it off.
pub type Knob = (&'static str, fn(&mut FaultProfile));

impl FaultProfile {
    /// The message-level fault knobs that are on (drops, duplicates, the
    /// fault sites, the dependency's faults), each with its off switch:
    /// what `idemsim shrink` tries turning off, one at a time.
    pub fn knobs_on(&self) -> Vec<Knob> {
        let p = self;
        let all: [(bool, Knob); 8] = [
            (p.drop_permille > 0, ("drops", |p| p.drop_permille = 0)),
            (p.dup_permille > 0, ("duplicates", |p| p.dup_permille = 0)),
            (p.crash_before_complete_permille > 0, ("crash-before-complete", |p| p.crash_before_complete_permille = 0)),
            (p.pause_before_complete_permille > 0, ("pause-before-complete", |p| p.pause_before_complete_permille = 0)),
            (p.lose_response_permille > 0, ("lose-response", |p| p.lose_response_permille = 0)),
            (p.provider_unavailable_permille > 0, ("provider-unavailable", |p| p.provider_unavailable_permille = 0)),
            (p.provider_decline_permille > 0, ("provider-decline", |p| p.provider_decline_permille = 0)),
            (p.provider_slow_permille > 0, ("provider-slow", |p| p.provider_slow_permille = 0)),
        ];
        all.into_iter().filter(|(on, _)| *on).map(|(_, k)| k).collect()
    }

    /// Checks the profile's numbers against their bounds (lengths of at
    /// most a day, counts of at most 1000).
    pub fn check(&self) -> Result<(), ConfigError> {
        use crate::bounds::{at_most, COUNT_MAX, DRIFT_PPM_MAX, DURATION_MS_MAX};
        let p = self;
        let durations = [
            ("faults.latency_ms[1]", p.latency_ms[1]),
            ("faults.dup_delay_max_ms", p.dup_delay_max_ms),
            ("faults.partition_ms_max", p.partition_ms_max),
            ("faults.down_ms_max", p.down_ms_max),
            ("faults.pause_ms_max", p.pause_ms_max),
            ("faults.skew_ms_max", p.skew_ms_max),
            ("faults.provider_retry_after_ms_max", p.provider_retry_after_ms_max),
            ("faults.provider_slow_ms_max", p.provider_slow_ms_max),
        ];
        durations.iter().try_for_each(|(f, v)| at_most(f, *v, DURATION_MS_MAX))?;
        let counts = [
            ("faults.partitions", p.partitions),
            ("faults.server_crashes", p.server_crashes),
            ("faults.db_crashes", p.db_crashes),
            ("faults.pauses", p.pauses),
        ];
        counts.iter().try_for_each(|(f, v)| at_most(f, (*v).into(), COUNT_MAX.into()))?;
        at_most("faults.drift_ppm_max", p.drift_ppm_max.into(), DRIFT_PPM_MAX.into())
    }

    /// A profile with nothing on, and 1..10 ms latency.
    pub fn calm() -> FaultProfile {
        FaultProfile { latency_ms: [1, 10], ..FaultProfile::default() }
    }

    /// Draws a profile: each fault class is switched on with probability
    /// one half, then given a random strength. Timed pauses are drawn
    /// around `lease_ms`, the lease the protocol under test asks for.
    pub fn draw(rng: &mut SimRng, lease_ms: u64) -> FaultProfile {
        let mut p = FaultProfile::calm();
        let on = |rng: &mut SimRng| chance(rng, 500);
        p.latency_ms = [1, between(rng, 5, 60)];
        if on(rng) {
            p.drop_permille = between(rng, 10, 200) as u32;
        }
        if on(rng) {
            p.dup_permille = between(rng, 10, 250) as u32;
            p.dup_delay_max_ms = between(rng, 10, 3_000);
        }
        if on(rng) {
            p.partitions = between(rng, 1, 4) as u32;
            p.partition_ms_max = between(rng, 200, 3_000);
        }
        if on(rng) {
            p.server_crashes = between(rng, 1, 3) as u32;
            p.down_ms_max = between(rng, 100, 3_000);
        }
        if on(rng) {
            p.db_crashes = between(rng, 1, 2) as u32;
            p.down_ms_max = p.down_ms_max.max(between(rng, 100, 2_000));
        }
        if on(rng) {
            p.pauses = between(rng, 1, 4) as u32;
            // Around the lease the protocol asks for (see `timing`).
            p.pause_ms_max = between(rng, lease_ms / 2, 4 * lease_ms);
        }
        if on(rng) {
            p.skew_ms_max = between(rng, 10, 1_500);
            p.drift_ppm_max = between(rng, 0, 2_000) as u32;
        }
        if on(rng) {
            p.crash_before_complete_permille = between(rng, 20, 300) as u32;
        }
        if on(rng) {
            p.pause_before_complete_permille = between(rng, 20, 300) as u32;
        }
        if on(rng) {
            p.lose_response_permille = between(rng, 20, 300) as u32;
        }
        p
    }

    /// Checks rates and ranges.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let rates = [
            ("drop_permille", self.drop_permille),
            ("dup_permille", self.dup_permille),
            ("crash_before_complete_permille", self.crash_before_complete_permille),
            ("pause_before_complete_permille", self.pause_before_complete_permille),
            ("lose_response_permille", self.lose_response_permille),
            ("provider_unavailable_permille", self.provider_unavailable_permille),
            ("provider_decline_permille", self.provider_decline_permille),
            ("provider_slow_permille", self.provider_slow_permille),
        ];
        if let Some((name, _)) = rates.iter().find(|(_, v)| *v > 1000) {
            return Err(ConfigError(format!("faults.{name} must be at most 1000")));
        }
        if self.drop_permille == 1000 {
            return Err(ConfigError("faults.drop_permille of 1000 loses every message; nothing can be judged".into()));
        }
        if self.provider_slow_permille > 0 && self.provider_slow_ms_max == 0 {
            return Err(ConfigError("faults.provider_slow_permille needs a positive provider_slow_ms_max".into()));
        }
        if self.latency_ms[0] > self.latency_ms[1] {
            return Err(ConfigError("faults.latency_ms must be [min, max] with min <= max".into()));
        }
        Ok(())
    }

    /// The names of the fault classes switched on, for summaries.
    pub fn active(&self) -> Vec<&'static str> {
        let classes = [
            ("drop", self.drop_permille > 0),
            ("duplicate", self.dup_permille > 0),
            ("partition", self.partitions > 0),
            ("server-crash", self.server_crashes > 0),
            ("db-crash", self.db_crashes > 0),
            ("pause", self.pauses > 0),
            ("skew", self.skew_ms_max > 0 || self.drift_ppm_max > 0),
            ("crash-before-complete", self.crash_before_complete_permille > 0),
            ("pause-before-complete", self.pause_before_complete_permille > 0),
            ("lose-response", self.lose_response_permille > 0),
            ("provider-unavailable", self.provider_unavailable_permille > 0),
            ("provider-decline", self.provider_decline_permille > 0),
            ("provider-slow", self.provider_slow_permille > 0),
        ];
        classes.into_iter().filter(|(_, on)| *on).map(|(n, _)| n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Stream};

    #[test]
    fn drawn_profiles_are_valid_and_varied() {
        let profiles: Vec<FaultProfile> =
            (0..64).map(|s| FaultProfile::draw(&mut stream(s, Stream::Swarm), 1_000)).collect();
        for p in &profiles {
            p.validate().unwrap();
        }
        let mixes: std::collections::BTreeSet<Vec<&str>> = profiles.iter().map(|p| p.active()).collect();
        assert!(mixes.len() > 32, "swarm should explore many mixes, got {}", mixes.len());
    }

    #[test]
    fn out_of_range_rates_are_refused() {
        let p = FaultProfile { dup_permille: 1001, ..FaultProfile::calm() };
        assert!(p.validate().unwrap_err().to_string().contains("dup_permille"));
    }
}
