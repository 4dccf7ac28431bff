//! Seed sweeps across worker threads. A report depends only on the seeds
//! and the config, never on `jobs` or on which worker ran which seed.

use idemsim_model::{Coverage, Property, Violation};
use idemsim_sim::{run_seed, run_seed_here, ConfigError, RunError, RunOutcome, SimConfig, Subject};
use serde::Serialize;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Set by the first Ctrl-C: sweeps start no new seed.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Asks every running sweep to stop starting seeds (the first Ctrl-C).
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// True once a stop was asked for.
pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// How many failing seeds a report keeps in full.
pub const FAILURES_KEPT: usize = 20;

/// Parses a seed range `A..B` (B excluded, A < B).
pub fn parse_seeds(s: &str) -> Result<Range<u64>, crate::Error> {
    let bad = || crate::Error::Usage(format!("'{s}' is not a seed range; expected A..B with A < B, e.g. 0..2000"));
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let (a, b): (u64, u64) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
    if a >= b {
        return Err(bad());
    }
    Ok(a..b)
}

/// What to sweep.
#[derive(Clone, Debug)]
pub struct SweepSpec {
    /// The configuration (scenario + variant).
    pub config: SimConfig,
    /// The store and protocol under test (`StoreKind::Mem.into()` for the
    /// default store running the config's steps).
    pub subject: Subject,
    /// Seeds `start..end`.
    pub seeds: Range<u64>,
    /// Worker threads.
    pub jobs: usize,
    /// Run every seed twice and compare the histories.
    pub check_determinism: bool,
    /// Keep every seed's trace hash in the report (costs a serialization
    /// of every history; failing seeds always get theirs).
    pub record_hashes: bool,
    /// Run only shard `k` of `n` (1-based): the seeds `start + k - 1 + i * n`.
    pub shard: Option<(u64, u64)>,
}

impl SweepSpec {
    /// How many seeds this spec runs (its shard's share of the range).
    pub fn seed_count(&self) -> u64 {
        let (k, n) = self.shard.unwrap_or((1, 1));
        let first = self.seeds.start.saturating_add(k - 1);
        match first < self.seeds.end {
            true => (self.seeds.end - first - 1) / n + 1,
            false => 0,
        }
    }

    /// The `i`-th seed this spec runs (`i < seed_count()`): seeds are
    /// computed, never listed, so any range runs in constant memory.
    pub fn nth_seed(&self, i: u64) -> u64 {
        let (k, n) = self.shard.unwrap_or((1, 1));
        self.seeds.start + (k - 1) + i * n
    }

    /// The seeds this spec runs, in order.
    pub fn seed_list(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.seed_count()).map(|i| self.nth_seed(i))
    }
}

/// One failing seed.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// What was violated.
    pub violations: Vec<Violation>,
    /// Why the run stopped, if it did.
    pub error: Option<String>,
    /// The trace hash.
    pub hash: String,
}

/// Two runs of one seed that differed.
#[derive(Clone, Debug, Serialize)]
pub struct Divergence {
    /// The seed.
    pub seed: u64,
    /// Index of the first differing event.
    pub event: usize,
    /// The event in the first run.
    pub first: String,
    /// The event in the second run.
    pub second: String,
}

/// A sweep's results.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SweepReport {
    /// Seeds run.
    pub seeds_run: u64,
    /// Seeds that failed.
    pub seeds_failed: u64,
    /// Seeds that violated each property.
    pub violations_by_property: BTreeMap<Property, u64>,
    /// Seeds cut short by the step budget or a panic.
    pub seeds_errored: u64,
    /// The lowest failing seeds, in full.
    pub failures: Vec<Failure>,
    /// Seeds in which each coverage counter was non-zero.
    pub coverage_seeds: BTreeMap<String, u64>,
    /// Summed coverage counters.
    pub coverage_total: Coverage,
    /// Seeds whose fault profile had each fault class on.
    pub fault_classes: BTreeMap<String, u64>,
    /// History events recorded.
    pub events: u64,
    /// Trace hash of every seed, when asked for (`record_hashes`).
    pub hashes: BTreeMap<u64, String>,
    /// The first seed whose two runs differed.
    pub divergence: Option<Divergence>,
    /// Faults the config asked for that the store could not take, with the
    /// reason and how many seeds ran without them.
    pub not_applied: BTreeMap<String, u64>,
    /// Every seed ran twice and the histories were compared.
    pub determinism_checked: bool,
    /// Failing seeds in all (`failures` keeps the lowest ones).
    pub failures_total: u64,
    /// The sweep was stopped (Ctrl-C) before all its seeds ran.
    pub interrupted: bool,
    /// Wall time.
    #[serde(skip)]
    pub elapsed: Duration,
}

impl SweepReport {
    fn add(&mut self, outcome: &RunOutcome, keep_hash: bool) {
        self.seeds_run += 1;
        self.events += outcome.history.entries.len() as u64;
        for (name, value) in outcome.coverage.counters() {
            *self.coverage_seeds.entry(name.to_string()).or_default() += u64::from(value > 0);
        }
        self.coverage_total.add(&outcome.coverage);
        for class in outcome.history.fault_classes() {
            *self.fault_classes.entry(class.to_string()).or_default() += 1;
        }
        if keep_hash {
            self.hashes.insert(outcome.seed, outcome.hash());
        }
        for why in &outcome.not_applied {
            *self.not_applied.entry(why.clone()).or_default() += 1;
        }
        if !outcome.failed() {
            return;
        }
        let hash = self.hashes.get(&outcome.seed).cloned().unwrap_or_else(|| outcome.hash());
        self.seeds_failed += 1;
        self.seeds_errored += u64::from(outcome.error.is_some());
        let mut properties: Vec<Property> = outcome.violations.iter().map(|v| v.property).collect();
        properties.dedup();
        for p in properties {
            *self.violations_by_property.entry(p).or_default() += 1;
        }
        self.failures_total += 1;
        self.failures.push(Failure {
            seed: outcome.seed,
            violations: outcome.violations.clone(),
            error: outcome.error.as_ref().map(RunError::to_string),
            hash,
        });
        self.failures.sort_by_key(|f| f.seed);
        self.failures.truncate(FAILURES_KEPT);
    }

    /// Seeds per second of wall time.
    pub fn seeds_per_sec(&self) -> f64 {
        self.seeds_run as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs a sweep. `progress` is called with the number of seeds done.
pub fn sweep(spec: &SweepSpec, progress: &(dyn Fn(u64) + Sync)) -> Result<SweepReport, ConfigError> {
    spec.config.validate()?;
    if let Some((k, n)) = spec.shard {
        if n == 0 || k == 0 || k > n {
            return Err(ConfigError(format!("shard {k}/{n} is not one of 1/{n} .. {n}/{n}")));
        }
    }
    let count = spec.seed_count();
    if count == 0 {
        let (k, n) = spec.shard.unwrap_or((1, 1));
        return Err(ConfigError(format!(
            "shard {k}/{n} of seeds {}..{} has no seeds: a shard must test something",
            spec.seeds.start, spec.seeds.end
        )));
    }
    let first = spec.nth_seed(0);
    // Fail fast on a store or config problem, before spawning workers.
    run_seed(&spec.config, &spec.subject, first)?;
    let started = Instant::now();
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let report = Mutex::new(SweepReport::default());
    let keep_hashes = spec.record_hashes;
    // Each worker runs seeds in turn on one thread (a thread per seed costs
    // about a sixth of the time); after a run panics, a fresh thread takes
    // over, so nothing a panic left behind reaches another seed.
    let worker = || loop {
        if stopped() {
            return;
        }
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= count {
            return;
        }
        let seed = spec.nth_seed(i);
        let outcome = run_seed_here(&spec.config, &spec.subject, seed).expect("validated above");
        let panicked = matches!(outcome.error, Some(RunError::Panicked(_)));
        let divergence = spec.check_determinism.then(|| diverges(spec, &outcome)).flatten();
        let mut r = report.lock().unwrap_or_else(|p| p.into_inner());
        r.add(&outcome, keep_hashes);
        if let Some(d) = divergence {
            if r.divergence.as_ref().is_none_or(|old| d.seed < old.seed) {
                r.divergence = Some(d);
            }
        }
        drop(r);
        progress(done.fetch_add(1, Ordering::Relaxed) + 1);
        if panicked {
            return;
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..spec.jobs.max(1) {
            scope.spawn(|| {
                while next.load(Ordering::Relaxed) < count && !stopped() {
                    std::thread::scope(|fresh| {
                        fresh.spawn(worker);
                    });
                }
            });
        }
    });
    let mut report = report.into_inner().unwrap_or_else(|p| p.into_inner());
    report.elapsed = started.elapsed();
    report.interrupted = stopped() && report.seeds_run < count;
    report.determinism_checked = spec.check_determinism;
    Ok(report)
}

/// Runs the seed again and finds the first event that differs.
fn diverges(spec: &SweepSpec, first: &RunOutcome) -> Option<Divergence> {
    let second = run_seed(&spec.config, &spec.subject, first.seed).ok()?;
    let (a, b) = (&first.history.entries, &second.history.entries);
    let event = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))?;
    let show = |e: Option<&idemsim_model::Entry>| {
        e.map_or("(none)".to_string(), |e| serde_json::to_string(e).unwrap_or_default())
    };
    Some(Divergence { seed: first.seed, event, first: show(a.get(event)), second: show(b.get(event)) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_ranges_parse_or_explain() {
        assert_eq!(parse_seeds("0..2000").unwrap(), 0..2000);
        for bad in ["5..5", "9..1", "a..b", "12", "..3", "-1..4"] {
            assert!(parse_seeds(bad).unwrap_err().to_string().contains("A..B"), "{bad}");
        }
    }
}
