//! Shrinking a failing seed to a small scenario file.
//!
//! The seed's drawn fault plan and workload are written out as an explicit
//! schedule (`faults.scheduled`, `workload.operations`), which replays the
//! same run. Then delta debugging removes what the failure does not need
//! (timed faults, operations, message-level fault knobs, clients, servers)
//! and shortens what it does (pauses, outages, partitions, latency), keeping
//! each change only if the same property still breaks on the same seed.

use crate::scenario::{Expect, Reproduces, Scenario};
use idemsim_model::Property;
use idemsim_sim::plan::{FaultAction, TimedFault};
use idemsim_sim::workload::Operation;
use idemsim_sim::{draws, run_seed, FaultProfile, FaultSettings, RunOutcome, SimConfig, Subject};
use serde::Serialize;

/// What to shrink.
pub struct ShrinkSpec<'a> {
    /// The scenario the seed failed in.
    pub scenario: &'a Scenario,
    /// The variant's name.
    pub variant: &'a str,
    /// The store and protocol under test.
    pub subject: Subject,
    /// The failing seed.
    pub seed: u64,
    /// At most this many candidate runs.
    pub runs_max: u32,
    /// The property to keep broken, if the seed breaks it (else the seed's
    /// first violation's).
    pub property: Option<Property>,
}

/// How big a failing run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Size {
    /// Timed faults.
    pub faults: usize,
    /// Operations.
    pub operations: usize,
    /// Clients.
    pub clients: u32,
    /// Servers.
    pub servers: u32,
    /// Message-level fault knobs switched on (drops, duplicates, fault sites).
    pub fault_knobs: usize,
    /// History events.
    pub events: usize,
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} timed faults, {} fault knobs, {} operations, {} clients, {} servers, {} events",
            self.faults, self.fault_knobs, self.operations, self.clients, self.servers, self.events
        )
    }
}

/// The result of a shrink.
pub struct Shrunk {
    /// The minimal scenario: replay it with `idemsim replay --file`.
    pub scenario: Scenario,
    /// The property that breaks, before and after.
    pub property: Property,
    /// The run as drawn.
    pub before: Size,
    /// The run as shrunk.
    pub after: Size,
    /// Candidate runs tried.
    pub runs: u32,
    /// The shrunk run.
    pub outcome: RunOutcome,
}

/// Shrinks `spec.seed`, which must fail.
pub fn shrink(spec: &ShrinkSpec<'_>) -> Result<Shrunk, String> {
    let config = spec.scenario.config_for(spec.variant)?;
    let first = run_seed(&config, &spec.subject, spec.seed).map_err(|e| e.to_string())?;
    let wanted = first.violations.iter().find(|v| Some(v.property) == spec.property);
    let Some(target) = wanted.or(first.violations.first()) else {
        return Err(match &first.error {
            Some(e) => format!("seed {} ends in a run error, not a violation, and cannot be shrunk: {e}", spec.seed),
            None => format!(
                "seed {} does not fail in {}/{}: nothing to shrink",
                spec.seed, spec.scenario.name, spec.variant
            ),
        });
    };
    let (profile, faults, operations) = draws(&config, spec.seed);
    let mut explicit = config.clone();
    explicit.faults = FaultSettings::Scheduled { profile, faults };
    explicit.workload.operations = Some(operations);
    let (property, signature) = (target.property, signature(&target.explanation));
    let mut s = Shrinker {
        subject: spec.subject.clone(),
        seed: spec.seed,
        property,
        signature,
        runs: 0,
        runs_max: spec.runs_max.max(1),
    };
    let before = size(&explicit, first.history.entries.len());
    if !s.fails(&explicit) {
        return Err(format!(
            "seed {}: the explicit schedule does not reproduce the failure (a bug in idemsim)",
            spec.seed
        ));
    }
    let shrunk = s.minimise(explicit);
    let outcome = run_seed(&shrunk, &spec.subject, spec.seed).map_err(|e| e.to_string())?;
    let after = size(&shrunk, outcome.history.entries.len());
    let scenario = minimal_scenario(spec, shrunk, property);
    Ok(Shrunk { scenario, property, before, after, runs: s.runs, outcome })
}

fn minimal_scenario(spec: &ShrinkSpec<'_>, mut config: SimConfig, property: Property) -> Scenario {
    // A protocol of the user's own cannot be written to a file: the file
    // names it, and a replay must bring it again.
    let protocol = spec.subject.has_own_protocol().then(|| spec.subject.protocol_name(&config));
    let label = protocol.clone().unwrap_or_else(|| spec.variant.to_string());
    config.steps = Default::default();
    let mut variants = std::collections::BTreeMap::new();
    if let Some(steps) = spec.scenario.variants.get(spec.variant) {
        variants.insert(spec.variant.to_string(), *steps);
    }
    Scenario {
        name: format!("{}-{label}-seed-{}-shrunk", spec.scenario.name, spec.seed),
        lesson: format!(
            "Seed {} of scenario {} with {label} on store {}, shrunk by `idemsim shrink`: the smallest schedule \
             found that still breaks {}.",
            spec.seed,
            spec.scenario.name,
            spec.subject.store_name(),
            property.name()
        ),
        config,
        expect: [(spec.variant.to_string(), Expect::Violates(property))].into_iter().collect(),
        variants,
        sometimes: Vec::new(),
        reproduces: Some(Reproduces { variant: spec.variant.to_string(), seed: spec.seed, protocol }),
    }
}

fn size(config: &SimConfig, events: usize) -> Size {
    let (faults, knobs) = match &config.faults {
        FaultSettings::Scheduled { profile, faults } => (faults.len(), knobs(profile).len()),
        _ => (0, 0),
    };
    Size {
        faults,
        operations: config.workload.operations.as_ref().map_or(0, Vec::len),
        clients: config.topology.clients,
        servers: config.topology.servers,
        fault_knobs: knobs,
        events,
    }
}

/// The message-level knobs of a profile that are on, each with a setter
/// that turns it off.
type Knob = (&'static str, fn(&mut FaultProfile));

fn knobs(p: &FaultProfile) -> Vec<Knob> {
    let all: [(bool, Knob); 5] = [
        (p.drop_permille > 0, ("drops", |p| p.drop_permille = 0)),
        (p.dup_permille > 0, ("duplicates", |p| p.dup_permille = 0)),
        (p.crash_before_complete_permille > 0, ("crash-before-complete", |p| p.crash_before_complete_permille = 0)),
        (p.pause_before_complete_permille > 0, ("pause-before-complete", |p| p.pause_before_complete_permille = 0)),
        (p.lose_response_permille > 0, ("lose-response", |p| p.lose_response_permille = 0)),
    ];
    all.into_iter().filter(|(on, _)| *on).map(|(_, k)| k).collect()
}

/// A violation's kind: the words of its explanation without names and
/// numbers, so a shrink keeps "two executions ... share a fencing token"
/// and does not drift to another violation of the same property.
fn signature(explanation: &str) -> String {
    let words = explanation.split_whitespace().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()));
    words.filter(|w| !w.is_empty() && w.chars().all(|c| c.is_alphabetic() || c == '-')).collect::<Vec<_>>().join(" ")
}

struct Shrinker {
    subject: Subject,
    seed: u64,
    property: Property,
    signature: String,
    runs: u32,
    runs_max: u32,
}

impl Shrinker {
    fn fails(&mut self, config: &SimConfig) -> bool {
        if self.runs >= self.runs_max || config.validate().is_err() {
            return false;
        }
        self.runs += 1;
        run_seed(config, &self.subject, self.seed).is_ok_and(|o| {
            o.violations.iter().any(|v| v.property == self.property && signature(&v.explanation) == self.signature)
        })
    }

    /// Keeps `candidate` if it still fails.
    fn try_config(&mut self, current: &mut SimConfig, candidate: SimConfig) -> bool {
        if candidate != *current && self.fails(&candidate) {
            *current = candidate;
            return true;
        }
        false
    }

    fn minimise(&mut self, mut config: SimConfig) -> SimConfig {
        loop {
            let before = config.clone();
            self.drop_faults(&mut config);
            self.drop_operations(&mut config);
            self.drop_knobs(&mut config);
            self.drop_clients(&mut config);
            self.drop_servers(&mut config);
            self.shorten(&mut config);
            if config == before || self.runs >= self.runs_max {
                return config;
            }
        }
    }

    fn drop_faults(&mut self, config: &mut SimConfig) {
        let FaultSettings::Scheduled { faults, .. } = &config.faults else { return };
        let with = |c: &SimConfig, kept: Vec<TimedFault>| {
            let mut c = c.clone();
            if let FaultSettings::Scheduled { faults, .. } = &mut c.faults {
                *faults = kept;
            }
            c
        };
        let base = config.clone();
        let kept = ddmin(faults.clone(), &mut |kept| self.fails(&with(&base, kept.to_vec())));
        *config = with(&base, kept);
    }

    fn drop_operations(&mut self, config: &mut SimConfig) {
        let Some(ops) = config.workload.operations.clone() else { return };
        let with = |c: &SimConfig, kept: Vec<Operation>| {
            let mut c = c.clone();
            c.workload.operations = Some(kept);
            c
        };
        let base = config.clone();
        let kept = ddmin(ops, &mut |kept| self.fails(&with(&base, kept.to_vec())));
        *config = with(&base, kept);
    }

    fn drop_knobs(&mut self, config: &mut SimConfig) {
        let FaultSettings::Scheduled { profile, .. } = &config.faults else { return };
        for (_, off) in knobs(profile) {
            let mut candidate = config.clone();
            if let FaultSettings::Scheduled { profile, .. } = &mut candidate.faults {
                off(profile);
            }
            self.try_config(config, candidate);
        }
    }

    /// Renumbers the clients that still send something to `0..n`.
    fn drop_clients(&mut self, config: &mut SimConfig) {
        let Some(ops) = &config.workload.operations else { return };
        let used: std::collections::BTreeSet<u32> = ops.iter().map(|o| o.client).collect();
        let n = used.len().max(1) as u32;
        if n == config.topology.clients {
            return;
        }
        let mut candidate = config.clone();
        candidate.topology.clients = n;
        let rank = |c: u32| used.iter().position(|&u| u == c).unwrap_or(0) as u32;
        if let Some(ops) = &mut candidate.workload.operations {
            ops.iter_mut().for_each(|o| o.client = rank(o.client));
        }
        if let FaultSettings::Scheduled { faults, .. } = &mut candidate.faults {
            faults.retain(|f| !matches!(f.action.node(), idemsim_model::NodeId::Client(_)));
        }
        self.try_config(config, candidate);
    }

    fn drop_servers(&mut self, config: &mut SimConfig) {
        while config.topology.servers > 1 {
            let mut candidate = config.clone();
            let n = candidate.topology.servers - 1;
            candidate.topology.servers = n;
            if let FaultSettings::Scheduled { faults, .. } = &mut candidate.faults {
                faults.retain(|f| !matches!(f.action.node(), idemsim_model::NodeId::Server(s) if s >= n));
            }
            if !self.try_config(config, candidate) {
                return;
            }
        }
    }

    /// Halves pauses, outages, partitions and latency while the failure
    /// stays.
    fn shorten(&mut self, config: &mut SimConfig) {
        let count = match &config.faults {
            FaultSettings::Scheduled { faults, .. } => faults.len(),
            _ => return,
        };
        for i in 0..count {
            for _ in 0..8 {
                let mut candidate = config.clone();
                let FaultSettings::Scheduled { faults, .. } = &mut candidate.faults else { return };
                if !halve(&mut faults[i].action) || !self.try_config(config, candidate) {
                    break;
                }
            }
        }
        for _ in 0..6 {
            let mut candidate = config.clone();
            let FaultSettings::Scheduled { profile, .. } = &mut candidate.faults else { return };
            let [lo, hi] = profile.latency_ms;
            if hi <= lo.max(1) {
                return;
            }
            profile.latency_ms = [lo.min(1), (hi / 2).max(1)];
            profile.dup_delay_max_ms /= 2;
            if !self.try_config(config, candidate) {
                return;
            }
        }
    }
}

/// Halves a fault's duration (or skew); false when already short.
fn halve(action: &mut FaultAction) -> bool {
    let ms = match action {
        FaultAction::Crash { down_ms: ms, .. }
        | FaultAction::Pause { for_ms: ms, .. }
        | FaultAction::Partition { for_ms: ms, .. } => ms,
        FaultAction::Skew { offset_ms, drift_ppm, .. } => {
            let before = (*offset_ms, *drift_ppm);
            (*offset_ms, *drift_ppm) = (*offset_ms / 2, *drift_ppm / 2);
            return before != (*offset_ms, *drift_ppm);
        }
    };
    if *ms < 20 {
        return false;
    }
    *ms /= 2;
    true
}

/// Delta debugging (Zeller's ddmin: subsets, then complements): the smallest part of
/// `items` found for which `fails` still holds. `fails(items)` must hold.
pub fn ddmin<T: Clone>(mut items: Vec<T>, fails: &mut dyn FnMut(&[T]) -> bool) -> Vec<T> {
    if !items.is_empty() && fails(&[]) {
        return Vec::new();
    }
    let mut n = 2;
    while items.len() >= 2 {
        let chunk = items.len().div_ceil(n);
        let mut reduced = false;
        for start in (0..items.len()).step_by(chunk) {
            let subset = items[start..(start + chunk).min(items.len())].to_vec();
            if subset.len() < items.len() && fails(&subset) {
                items = subset;
                n = 2;
                reduced = true;
                break;
            }
        }
        // With two chunks, each complement is the other chunk: tested above.
        if !reduced && items.len().div_ceil(chunk) > 2 {
            for start in (0..items.len()).step_by(chunk) {
                let complement: Vec<T> =
                    items[..start].iter().chain(items[(start + chunk).min(items.len())..].iter()).cloned().collect();
                if fails(&complement) {
                    items = complement;
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n >= items.len() {
                break;
            }
            n = (2 * n).min(items.len());
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddmin_finds_the_two_items_that_matter() {
        let items: Vec<u32> = (0..40).collect();
        let mut calls = 0;
        let kept = ddmin(items, &mut |xs| {
            calls += 1;
            xs.contains(&7) && xs.contains(&31)
        });
        assert_eq!(kept, vec![7, 31]);
        assert!(calls < 100, "{calls} calls");
    }

    #[test]
    fn ddmin_empties_a_list_the_failure_does_not_need() {
        assert_eq!(ddmin(vec![1, 2, 3], &mut |_| true), Vec::<i32>::new());
    }
}
