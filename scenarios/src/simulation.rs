//! The open entry point: a [`Simulation`] of any store and any protocol,
//! over a catalogue scenario, a scenario file or a config, with sweeps,
//! replays, shrinking, traces, HTML timelines and the determinism check.
//!
//! ```
//! use idemsim::Simulation;
//! use idemsim_store::MemStore;
//!
//! let report = Simulation::scenario("concurrent-duplicates")
//!     .unwrap()
//!     .store("my-mem", || Ok(MemStore::new()))
//!     .seeds(0..20)
//!     .jobs(1)
//!     .sweep()
//!     .unwrap();
//! assert_eq!(report.seeds_failed, 0);
//! ```

use crate::error::Error;
use crate::scenario::Scenario;
use crate::shrink::{shrink, ShrinkSpec, Shrunk};
use crate::sweep::{sweep, SweepReport, SweepSpec};
use idemsim_model::Violation;
use idemsim_sim::{Protocol, ProtocolFactory, RunOutcome, SimConfig, StoreKind, Subject};
use idemsim_store::{IdempotencyStore, StoreError};
use std::ops::Range;
use std::path::Path;

/// A simulation of a store and a protocol under a scenario. Setters take
/// and return `&mut Self`; the defaults are the in-memory store, the
/// scenario's `correct` variant, seeds `0..1000` and all cores.
#[derive(Clone, Debug)]
pub struct Simulation {
    pub(crate) scenario: Scenario,
    pub(crate) variant: String,
    pub(crate) subject: Subject,
    pub(crate) seeds: Range<u64>,
    pub(crate) jobs: usize,
    pub(crate) check_determinism: bool,
    pub(crate) regressions: Option<std::path::PathBuf>,
}

impl Simulation {
    /// A simulation of `scenario`.
    pub fn new(scenario: Scenario) -> Simulation {
        let variant = scenario.reproduces.as_ref().map_or_else(|| "correct".to_string(), |r| r.variant.clone());
        Simulation {
            scenario,
            variant,
            subject: StoreKind::Mem.into(),
            seeds: 0..1000,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            check_determinism: false,
            regressions: None,
        }
    }

    /// A simulation of the catalogue's scenario `name` (`idemsim list`).
    pub fn scenario(name: &str) -> Result<Simulation, Error> {
        crate::catalogue::find(name).map(Simulation::new).ok_or_else(|| Error::Unknown {
            what: "scenario",
            name: name.to_string(),
            hint: "`idemsim list` shows the scenarios".into(),
        })
    }

    /// A simulation of a scenario file (JSON, or TOML if it ends in
    /// `.toml`), such as one `shrink` wrote. A shrunk file's seed is the
    /// one [`Simulation::reproduced_seed`] gives.
    pub fn file(path: &Path) -> Result<Simulation, Error> {
        Scenario::from_file(path).map(Simulation::new)
    }

    /// A simulation of a bare config, as a scenario named `custom`.
    pub fn config(config: SimConfig) -> Simulation {
        let scenario = Scenario {
            name: "custom".into(),
            lesson: "A config built in code.".into(),
            config,
            expect: [("correct".to_string(), crate::Expect::Clean)].into_iter().collect(),
            variants: Default::default(),
            sometimes: Vec::new(),
            reproduces: None,
        };
        Simulation::new(scenario)
    }

    /// Runs `open`'s store on the database node: called once per seed for
    /// a fresh, empty store.
    pub fn store<S, F>(&mut self, name: &str, open: F) -> &mut Simulation
    where
        S: IdempotencyStore + 'static,
        F: Fn() -> Result<S, StoreError> + Send + Sync + 'static,
    {
        self.keep_protocol(Subject::store(name, open))
    }

    /// Runs a built-in store.
    pub fn store_kind(&mut self, kind: StoreKind) -> &mut Simulation {
        self.keep_protocol(kind.into())
    }

    /// Switches to `store`, keeping the protocol set so far.
    fn keep_protocol(&mut self, store: Subject) -> &mut Simulation {
        self.subject = match self.subject.own_protocol() {
            Some(make) => store.protocol_factory(make),
            None => store,
        };
        self
    }

    /// Runs `protocol` on servers, clients and background jobs instead of
    /// the scenario's variant. Every run (seed, worker, shrink candidate)
    /// gets its own clone; a protocol whose clones would share state (an
    /// `Arc` inside) should be given with
    /// [`protocol_with`](Simulation::protocol_with).
    pub fn protocol<P: Protocol + Clone + 'static>(&mut self, protocol: P) -> &mut Simulation {
        self.subject = self.subject.clone().protocol(protocol);
        self
    }

    /// Runs the protocol `make` builds, a fresh one for every run.
    ///
    /// ```
    /// use idemsim::prelude::*;
    ///
    /// #[derive(Default)]
    /// struct Counting { claims: std::sync::atomic::AtomicU64 }
    /// impl Protocol for Counting {
    ///     fn name(&self) -> String { "counting".into() }
    /// }
    ///
    /// let mut sim = Simulation::scenario("default").unwrap();
    /// sim.protocol_with(Counting::default).seeds(0..2).jobs(1);
    /// assert!(sim.sweep().unwrap().failures.is_empty());
    /// ```
    pub fn protocol_with<P, F>(&mut self, make: F) -> &mut Simulation
    where
        P: Protocol + 'static,
        F: Fn() -> P + Send + Sync + 'static,
    {
        self.subject = self.subject.clone().protocol_with(make);
        self
    }

    /// Runs the protocol a factory makes (as [`Subject::own_protocol`]
    /// returns one), a fresh one for every run.
    pub fn protocol_factory(&mut self, make: ProtocolFactory) -> &mut Simulation {
        self.subject = self.subject.clone().protocol_factory(make);
        self
    }

    /// Runs the scenario's variant `name` (a built-in one, or one of the
    /// scenario's own); ignored once a [`protocol`](Simulation::protocol)
    /// is set.
    pub fn variant(&mut self, name: &str) -> Result<&mut Simulation, Error> {
        self.scenario.steps_of(name)?;
        self.variant = name.to_string();
        Ok(self)
    }

    /// The seeds a sweep runs, `start..end`.
    pub fn seeds(&mut self, seeds: Range<u64>) -> &mut Simulation {
        self.seeds = seeds;
        self
    }

    /// Worker threads of a sweep (at least 1).
    pub fn jobs(&mut self, jobs: usize) -> &mut Simulation {
        self.jobs = jobs.max(1);
        self
    }

    /// Runs every seed twice and reports the first diverging event.
    pub fn check_determinism(&mut self, on: bool) -> &mut Simulation {
        self.check_determinism = on;
        self
    }

    /// The config a run uses: the scenario's, with the variant's steps.
    pub fn run_config(&self) -> Result<SimConfig, Error> {
        self.scenario.config_for(&self.variant)
    }

    /// The store and protocol under test.
    pub fn subject(&self) -> &Subject {
        &self.subject
    }

    /// The scenario.
    pub fn scenario_ref(&self) -> &Scenario {
        &self.scenario
    }

    /// The protocol's name: the user's own, or the variant's.
    pub fn protocol_name(&self) -> String {
        match self.subject.has_own_protocol() {
            true => self.subject.protocol_name(&self.scenario.config),
            false => self.variant.clone(),
        }
    }

    /// The seed a shrunk scenario file reproduces, if it names one.
    pub fn reproduced_seed(&self) -> Option<u64> {
        self.scenario.reproduces.as_ref().map(|r| r.seed)
    }

    /// Sweeps the seeds.
    pub fn sweep(&self) -> Result<SweepReport, Error> {
        self.check_file_protocol()?;
        let spec = SweepSpec {
            config: self.run_config()?,
            subject: self.subject.clone(),
            seeds: self.seeds.clone(),
            jobs: self.jobs,
            check_determinism: self.check_determinism,
            record_hashes: self.seeds.end.saturating_sub(self.seeds.start) <= 100_000,
            shard: None,
        };
        Ok(sweep(&spec, &|_| {})?)
    }

    /// Runs one seed and judges it.
    pub fn replay(&self, seed: u64) -> Result<RunOutcome, Error> {
        self.check_file_protocol()?;
        Ok(idemsim_sim::run_seed(&self.run_config()?, &self.subject, seed)?)
    }

    /// Shrinks a failing seed to a minimal scenario (write it with
    /// [`Shrunk::write`], replay it with [`Simulation::file`]).
    pub fn shrink(&self, seed: u64) -> Result<Shrunk, Error> {
        self.check_file_protocol()?;
        let spec = ShrinkSpec {
            scenario: &self.scenario,
            variant: &self.variant,
            subject: self.subject.clone(),
            seed,
            runs_max: 3000,
            property: self.scenario.expected_property(&self.variant),
        };
        shrink(&spec)
    }

    /// The violation a story tells: one of the property the scenario
    /// expects this variant to break, else the first.
    pub fn story_violation<'v>(&self, violations: &'v [Violation]) -> Option<&'v Violation> {
        let expected = self.scenario.expected_property(&self.variant);
        violations.iter().find(|v| Some(v.property) == expected).or(violations.first())
    }

    /// A run's numbered story of its main violation, if it has one.
    pub fn story(&self, outcome: &RunOutcome) -> Option<String> {
        self.story_violation(&outcome.violations).map(|v| idemsim_sim::story::story(&outcome.history, v))
    }

    /// A run as a JSON Lines trace (identical bytes for identical runs).
    pub fn trace(&self, outcome: &RunOutcome) -> String {
        idemsim_sim::to_jsonl(outcome.seed, &self.scenario.name, &self.protocol_name(), &outcome.history)
    }

    /// A run as a self-contained HTML timeline.
    pub fn html(&self, outcome: &RunOutcome) -> String {
        let title = format!("{} / {} / seed {}", self.scenario.name, self.protocol_name(), outcome.seed);
        idemsim_sim::html::render(&title, &outcome.history, &outcome.violations)
    }

    /// A shrunk file names the store, and any user protocol, it was shrunk
    /// with; replaying it with others would reproduce nothing.
    fn check_file_protocol(&self) -> Result<(), Error> {
        let Some(reproduces) = &self.scenario.reproduces else { return Ok(()) };
        let own = self.subject.has_own_protocol().then(|| self.protocol_name());
        reproduces.check(&self.scenario.name, self.subject.store_name(), own.as_deref())
    }
}

impl Shrunk {
    /// Writes the minimal scenario: TOML if `path` ends in `.toml`, else
    /// JSON.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let toml = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
        let text = match toml {
            true => self.scenario.to_toml(),
            false => format!("{}\n", serde_json::to_string_pretty(&self.scenario).expect("a scenario serializes")),
        };
        std::fs::write(path, text).map_err(|e| Error::io("write", path, e))
    }
}
