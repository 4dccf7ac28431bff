//! Shrinking a failing seed to a small scenario file.
//!
//! The seed's drawn fault plan and workload are written out as an explicit
//! schedule (`faults.scheduled`, `workload.operations`, with the server of
//! every send pinned), which replays the same run. Then delta debugging
//! removes what the failure does not need (timed faults, operations,
//! message-level fault knobs), folds what is left onto as few clients and
//! servers as still fail, shortens what it keeps (pauses, outages,
//! partitions, latency, the gaps between operations, the phases after the
//! violation), and repeats until nothing more goes: the result is
//! 1-minimal, no single fault, operation or knob can be removed. Each change
//! is kept only if the same seed still breaks the same property in a way
//! the original run showed (one of its kinds of violation of it).
//!
//! This works because a run's draws are keyed by what they decide (see
//! `idemsim_sim::rng::Keyed`): removing one operation does not change what
//! the others draw.

use crate::scenario::{Expect, Reproduces, Scenario};
use idemsim_model::Property;
use idemsim_sim::plan::{FaultAction, TimedFault};
use idemsim_sim::workload::Operation;
use idemsim_sim::{draws, followed, run_seed, FaultSettings, RunOutcome, SimConfig, Subject};
use serde::Serialize;
use std::collections::BTreeSet;

mod ddmin;
mod shrinker;

pub use ddmin::ddmin;
use shrinker::*;

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
    /// Lines of the violation's story (its summary and numbered steps).
    pub story_lines: usize,
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} timed faults, {} fault knobs, {} operations, {} clients, {} servers, {} events, a story of {} lines",
            self.faults, self.fault_knobs, self.operations, self.clients, self.servers, self.events, self.story_lines
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
pub fn shrink(spec: &ShrinkSpec<'_>) -> Result<Shrunk, crate::Error> {
    let not_shrinkable = |why: String| crate::Error::NotShrinkable { seed: spec.seed, why };
    // What the run really ran: the timing follows the subject's lease, and
    // the file must say so, since the explicit schedule was drawn under it.
    let config = followed(&spec.scenario.config_for(spec.variant)?, &spec.subject);
    let first = run_seed(&config, &spec.subject, spec.seed)?;
    let wanted = first.violations.iter().find(|v| Some(v.property) == spec.property);
    let Some(target) = wanted.or(first.violations.first()) else {
        return Err(not_shrinkable(match &first.error {
            Some(e) => format!("ends in a run error, not a violation, and cannot be shrunk: {e}"),
            None => format!("does not fail in {}/{}: nothing to shrink", spec.scenario.name, spec.variant),
        }));
    };
    let (profile, faults, mut operations) = draws(&config, &spec.subject, spec.seed);
    pin_servers(&mut operations, &first);
    let mut explicit = config.clone();
    explicit.faults = FaultSettings::Scheduled { profile, faults };
    explicit.workload.operations = Some(operations);
    // Any kind of violation of the property that the seed shows may stay:
    // they are all the seed's bugs, and the smallest run keeps one of them.
    let property = target.property;
    let signatures =
        first.violations.iter().filter(|v| v.property == property).map(|v| signature(&v.explanation)).collect();
    let mut s = Shrinker {
        subject: spec.subject.clone(),
        seed: spec.seed,
        property,
        signatures,
        runs: 0,
        runs_max: spec.runs_max.max(1),
    };
    let before = size(&explicit, &first, property);
    if !s.fails(&explicit) {
        return Err(not_shrinkable(
            "does not fail again from its explicit schedule (a bug in idemsim: please report it)".into(),
        ));
    }
    let shrunk = s.minimise(explicit);
    let outcome = run_seed(&shrunk, &spec.subject, spec.seed)?;
    let after = size(&shrunk, &outcome, property);
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
        reproduces: Some(Reproduces {
            variant: spec.variant.to_string(),
            seed: spec.seed,
            protocol,
            store: Some(spec.subject.store_name().to_string()),
        }),
    }
}

/// Pins the server of every send of `ops` to where it went in `run`.
fn pin_servers(ops: &mut [Operation], run: &RunOutcome) {
    let mut sent: std::collections::BTreeMap<idemsim_model::OpId, Vec<u32>> = Default::default();
    for e in &run.history.entries {
        if let idemsim_model::Event::RequestSent { req, to: idemsim_model::NodeId::Server(s), .. } = &e.event {
            let servers = sent.entry(req.op).or_default();
            assert_eq!(servers.len() + 1, req.try_no.0 as usize, "sends of {} out of order", req.op.0);
            servers.push(*s);
        }
    }
    for o in ops {
        o.servers = sent.remove(&o.op).unwrap_or_default();
    }
}

impl Shrunk {
    /// The story of the shrunk run's violation of the property, as
    /// `idemsim shrink` prints it (`all`: every event up to it).
    pub fn story(&self, all: bool) -> String {
        let v = violation_of(&self.outcome, self.property).expect("a shrunk run still fails");
        idemsim_sim::story::story_with(&self.outcome.history, v, all)
    }
}

/// `run`'s first violation of `property`, or its first violation.
fn violation_of(run: &RunOutcome, property: Property) -> Option<&idemsim_model::Violation> {
    run.violations.iter().find(|v| v.property == property).or(run.violations.first())
}

/// The number of lines of `run`'s story of its first violation of `property`.
pub fn story_lines(run: &RunOutcome, property: Property) -> usize {
    violation_of(run, property).map_or(0, |v| story_size(&idemsim_sim::story::story(&run.history, v)))
}

/// Counts a story's summary and numbered steps.
pub fn story_size(story: &str) -> usize {
    story.lines().filter(|l| l.starts_with("  in short:") || l.contains(". at ")).count()
}

fn size(config: &SimConfig, run: &RunOutcome, property: Property) -> Size {
    let events = run.history.entries.len();
    let story_lines = story_lines(run, property);
    let (faults, knobs) = match &config.faults {
        FaultSettings::Scheduled { profile, faults } => (faults.len(), profile.knobs_on().len()),
        _ => (0, 0),
    };
    Size {
        faults,
        operations: config.workload.operations.as_ref().map_or(0, Vec::len),
        clients: config.topology.clients,
        servers: config.topology.servers,
        fault_knobs: knobs,
        events,
        story_lines,
    }
}
