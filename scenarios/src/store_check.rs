//! One call to test a store every way idemsim knows: the sequential
//! conformance kit (what each operation means), the concurrent
//! linearizability check (that each is atomic, including the guards the
//! correct protocol never leans on), a sweep of the protocol simulation
//! (the store under the protocol, with faults), and a stress run (the
//! protocol on the store under real concurrency). Each part gives its own
//! verdict and the line that reruns it.
//!
//! ```
//! use idemsim::store_check::StoreCheck;
//! use idemsim::store::MemStore;
//!
//! let report = StoreCheck::new("mine").cases(16).operations(400).seeds(0..20).run(|| Ok(MemStore::new()));
//! assert!(report.pass(), "{report}");
//! ```

use crate::report::plural;
use crate::simulation::Simulation;
use crate::stress::{stress_with, BoxFuture, Opened, StressError, StressReport, StressSpec};
use idemsim_protocol::Correct;
use idemsim_sim::concurrent::ConcurrentSim;
use idemsim_sim::Subject;
use idemsim_store::conformance::{Concurrent, Conformance};
use idemsim_store::{IdempotencyStore, StoreError, Terminator};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// The parts of a store check, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    /// The sequential kit, against the reference model.
    Conformance,
    /// Concurrent callers, judged for linearizability.
    Linearizability,
    /// The protocol simulation sweep on the store.
    Simulation,
    /// The correct protocol on the store under real concurrency.
    Stress,
}

impl Part {
    /// Every part, in order.
    pub const ALL: [Part; 4] = [Part::Conformance, Part::Linearizability, Part::Simulation, Part::Stress];

    /// The part's name, as printed and as `--part` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Part::Conformance => "conformance",
            Part::Linearizability => "linearizability",
            Part::Simulation => "simulation",
            Part::Stress => "stress",
        }
    }

    /// Parses a name.
    pub fn from_name(name: &str) -> Option<Part> {
        Part::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// How a part ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing found, and the part ran in full.
    Pass,
    /// Something found: the detail says what, the reproduce line how to see it again.
    Fail,
    /// Not run (an error, or the run was interrupted): no pass.
    NotRun,
    /// Does not apply to this store (the simulator runs in-process stores
    /// only): no failure either.
    NotApplicable,
}

/// One part's verdict.
#[derive(Clone, Debug)]
pub struct PartVerdict {
    /// Which part.
    pub part: Part,
    /// How it ended.
    pub outcome: Outcome,
    /// One line: what ran and what it found.
    pub summary: String,
    /// For a failure: the shrunk sequence, history or story.
    pub detail: String,
    /// The line that runs this part again (a command or Rust code).
    pub reproduce: String,
}

/// Every part's verdict.
#[derive(Clone, Debug)]
pub struct StoreCheckReport {
    /// The store's name.
    pub store: String,
    /// The parts, in the order they ran.
    pub parts: Vec<PartVerdict>,
}

impl StoreCheckReport {
    /// True when every part ran and passed.
    pub fn pass(&self) -> bool {
        self.parts.iter().all(|p| matches!(p.outcome, Outcome::Pass | Outcome::NotApplicable))
    }

    /// The verdict of `part`, if it ran.
    pub fn part(&self, part: Part) -> Option<&PartVerdict> {
        self.parts.iter().find(|p| p.part == part)
    }
}

impl fmt::Display for StoreCheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "store check: {}", self.store)?;
        for p in &self.parts {
            write!(f, "{p}")?;
        }
        write!(f, "verdict: {}", if self.pass() { "PASS" } else { "FAIL" })
    }
}

impl fmt::Display for PartVerdict {
    /// The part's line, its detail indented under it, and its reproduce
    /// line; each line ends in a newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mark = match self.outcome {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::NotRun => "NOT RUN",
            Outcome::NotApplicable => "N/A",
        };
        writeln!(f, "  {:<16} {mark}  {}", self.part.name(), self.summary)?;
        for line in self.detail.lines() {
            writeln!(f, "      {line}")?;
        }
        match self.outcome {
            Outcome::NotApplicable => Ok(()),
            _ => writeln!(f, "      reproduce: {}", self.reproduce),
        }
    }
}

/// Settings of a store check. Setters take and return `&mut Self`.
#[derive(Clone, Debug)]
pub struct StoreCheck {
    name: String,
    seed: u64,
    cases: u32,
    operations: usize,
    callers: usize,
    simulation: Simulation,
    seeds: Range<u64>,
    requests: usize,
    command: Option<String>,
}

impl StoreCheck {
    /// A check of the store called `name`: 256 conformance cases, 2,000
    /// concurrent operations of 8 callers, seeds 0..200 of the `default`
    /// scenario's correct protocol, 500 stress requests; seed 0.
    pub fn new(name: &str) -> StoreCheck {
        StoreCheck {
            name: name.to_string(),
            seed: 0,
            cases: 256,
            operations: 2_000,
            callers: 8,
            simulation: Simulation::scenario("default").expect("the catalogue has `default`"),
            seeds: 0..200,
            requests: 500,
            command: None,
        }
    }

    /// The seed of the kit's cases and of the callers' plans.
    pub fn seed(&mut self, seed: u64) -> &mut Self {
        self.seed = seed;
        self
    }

    /// Conformance cases (at least 1).
    pub fn cases(&mut self, n: u32) -> &mut Self {
        self.cases = n.max(1);
        self
    }

    /// Concurrent operations in all.
    pub fn operations(&mut self, n: usize) -> &mut Self {
        self.operations = n;
        self
    }

    /// Concurrent callers (at least 1).
    pub fn callers(&mut self, n: usize) -> &mut Self {
        self.callers = n.max(1);
        self
    }

    /// The simulation to sweep (a scenario, a protocol, jobs); its store is
    /// set by [`StoreCheck::run`].
    pub fn simulation(&mut self, simulation: Simulation) -> &mut Self {
        self.simulation = simulation;
        self
    }

    /// The seeds of the simulation sweep.
    pub fn seeds(&mut self, seeds: Range<u64>) -> &mut Self {
        self.seeds = seeds;
        self
    }

    /// Stress requests (0 leaves the stress part out).
    pub fn requests(&mut self, n: usize) -> &mut Self {
        self.requests = n;
        self
    }

    /// The command that reruns this check (`idemsim check-store --store
    /// pg`): reproduce lines are then command lines, not Rust code.
    pub fn command(&mut self, command: &str) -> &mut Self {
        self.command = Some(command.to_string());
        self
    }

    /// Runs every part on the store `open` makes (a fresh, empty one each
    /// time it is called): the kit, the concurrent check, the sweep.
    pub fn run<S, F>(&self, open: F) -> StoreCheckReport
    where
        S: IdempotencyStore + 'static,
        F: Fn() -> Result<S, StoreError> + Send + Sync + Clone + 'static,
    {
        let kit_open = open.clone();
        let conformance = self.conformance(|| {
            let made = kit_open();
            async move { made }
        });
        let subject = Subject::store(&self.name, open.clone());
        let linearizability = match open() {
            Ok(store) => self.linearizability_in_process(&subject, Arc::new(store)),
            Err(e) => self.not_run(Part::Linearizability, &format!("the store could not be opened: {e}")),
        };
        let mut sim = self.simulation.clone();
        sim.store(&self.name, open.clone());
        let simulation = self.simulate(&sim);
        let mut parts = vec![conformance, linearizability, simulation];
        if self.requests > 0 {
            let opener = move || -> BoxFuture<'static, Result<Opened, StoreError>> {
                let made = open();
                Box::pin(async move { made.map(Opened::store) })
            };
            parts.push(self.stress(stress_with(&self.stress_spec(), &opener, Arc::new(Correct))));
        }
        StoreCheckReport { store: self.name.clone(), parts }
    }

    /// The stress run's settings: this check's seed and requests, 16
    /// clients.
    pub fn stress_spec(&self) -> StressSpec {
        StressSpec {
            seed: self.seed,
            requests: self.requests.max(1),
            clients: 16,
            schema: "idemsim_check".into(),
            ..StressSpec::default()
        }
    }

    /// The stress part, from a stress run's result.
    pub fn stress(&self, result: Result<StressReport, StressError>) -> PartVerdict {
        let report = match result {
            Ok(report) => report,
            Err(e) => return self.not_run(Part::Stress, &e.to_string()),
        };
        let code = format!(
            "stress_with(&StressSpec {{ seed: {}, requests: {}, ..StressSpec::default() }}, &open, Arc::new(Correct))",
            self.seed, self.requests
        );
        let reproduce = format!("{} (the interleaving is the machine's)", self.reproduce(Part::Stress, &code));
        let outcome = match (report.interrupted, report.violations.is_empty()) {
            (true, _) => Outcome::NotRun,
            (false, true) => Outcome::Pass,
            (false, false) => Outcome::Fail,
        };
        let planned = match report.interrupted {
            true => format!(
                "{} of {} planned",
                plural(report.sends as u64, "send"),
                plural(report.requests as u64, "request")
            ),
            false => plural(report.requests as u64, "request"),
        };
        let summary = format!(
            "{planned}, {}, {}, {:.0} sends/s (seed {})",
            plural(report.clients as u64, "client"),
            plural(report.violations.len() as u64, "violation"),
            report.requests_per_sec,
            report.seed
        );
        let detail: Vec<String> = report.violations.iter().take(5).map(|v| v.to_string()).collect();
        PartVerdict { part: Part::Stress, outcome, summary, detail: detail.join("\n"), reproduce }
    }

    /// The conformance part, on stores `open` makes.
    pub fn conformance<S, F, Fut>(&self, open: F) -> PartVerdict
    where
        S: IdempotencyStore + 'static,
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<S, StoreError>>,
    {
        let reproduce =
            self.reproduce(Part::Conformance, &format!("Conformance::new().seed({}).cases({})", self.seed, self.cases));
        let verdict = Conformance::new().cases(self.cases).seed(self.seed).check(open);
        match verdict {
            Ok(v) => PartVerdict {
                part: Part::Conformance,
                outcome: Outcome::Pass,
                summary: format!("{} cases, {} operations (seed {})", v.cases, v.stats.ops, v.seed),
                detail: String::new(),
                reproduce,
            },
            Err(f) => PartVerdict {
                part: Part::Conformance,
                outcome: if f.minimal.is_empty() { Outcome::NotRun } else { Outcome::Fail },
                summary: f.reason.clone(),
                detail: f.transcript.clone(),
                reproduce,
            },
        }
    }

    /// The linearizability part on `store`, killing connections with
    /// `terminator` if given; must run inside a multi-threaded runtime.
    pub async fn linearizability(
        &self,
        store: Arc<dyn IdempotencyStore>,
        terminator: Option<Terminator>,
    ) -> PartVerdict {
        let mut kit = Concurrent::new();
        kit.operations(self.operations).callers(self.callers).seed(self.seed);
        if terminator.is_some() {
            kit.kill_connections(8);
        }
        let verdict = kit.check_store(store, terminator).await;
        let code =
            format!("Concurrent::new().seed({}).operations({}).callers({})", self.seed, self.operations, self.callers);
        let reproduce = format!(
            "{} (the interleaving is the machine's: a rerun may need more tries)",
            self.reproduce(Part::Linearizability, &code)
        );
        let text = verdict.to_string();
        let (summary, detail) = text.split_once('\n').unwrap_or((&text, ""));
        let outcome = match verdict.verdict {
            idemsim_model::linearizability::Verdict::Linearizable => Outcome::Pass,
            idemsim_model::linearizability::Verdict::NotLinearizable { .. } => Outcome::Fail,
            idemsim_model::linearizability::Verdict::Unknown { .. } => Outcome::NotRun,
        };
        PartVerdict {
            part: Part::Linearizability,
            outcome,
            summary: summary.to_string(),
            detail: detail.to_string(),
            reproduce,
        }
    }

    /// The linearizability part for an in-process store: first the
    /// simulator's concurrent mode over the check's simulation seeds (the
    /// first 20; deterministic, so a failure is a seed), then the real
    /// callers on `store`.
    pub fn linearizability_in_process(&self, subject: &Subject, store: Arc<dyn IdempotencyStore>) -> PartVerdict {
        let seeds = self.seeds.start..self.seeds.end.min(self.seeds.start + 20);
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        let sweep = ConcurrentSim::new().sweep_until(seeds.clone(), jobs, subject, &crate::sweep::stopped);
        if let Some((seed, error)) = sweep.errors.first() {
            return self.not_run(Part::Linearizability, &format!("seed {seed}: {error}"));
        }
        let simulated = format!(
            "simulated: {} linearizable (histories {})",
            plural(sweep.hashes.len() as u64, "seed"),
            sweep.hash()
        );
        let Some(first) = sweep.failures.first() else {
            let mut verdict = self.linearizability_on_runtime(store, None);
            verdict.summary = format!("{}; {simulated}", verdict.summary);
            return verdict;
        };
        let text = first.to_string();
        let (summary, detail) = text.split_once('\n').unwrap_or((&text, ""));
        let reproduce = match &self.command {
            Some(_) => format!("idemsim concurrent --store {} --seed {}", self.name, first.seed),
            None => format!("ConcurrentSim::new().run_seed({}, &Subject::store(\"{}\", open))", first.seed, self.name),
        };
        PartVerdict {
            part: Part::Linearizability,
            outcome: Outcome::Fail,
            summary: format!("simulated {summary}"),
            detail: detail.to_string(),
            reproduce,
        }
    }

    /// [`StoreCheck::linearizability`] on a runtime of its own.
    fn linearizability_on_runtime(
        &self,
        store: Arc<dyn IdempotencyStore>,
        terminator: Option<Terminator>,
    ) -> PartVerdict {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
        match rt {
            Ok(rt) => rt.block_on(self.linearizability(store, terminator)),
            Err(e) => self.not_run(Part::Linearizability, &format!("cannot start a runtime: {e}")),
        }
    }

    /// The simulation part: `sim` (its store set) swept over the seeds.
    pub fn simulate(&self, sim: &Simulation) -> PartVerdict {
        let mut sim = sim.clone();
        sim.seeds(self.seeds.clone());
        let scenario = sim.scenario_ref().name.clone();
        let protocol = sim.protocol_name();
        let report = match sim.sweep() {
            Ok(report) => report,
            Err(e) => return self.not_run(Part::Simulation, &e.to_string()),
        };
        let what = format!(
            "{} of `{scenario}` ({protocol}): {} failed",
            plural(report.seeds_run, "seed"),
            report.seeds_failed
        );
        let Some(first) = report.failures.first() else {
            let outcome =
                if report.seeds_run == self.seeds.end - self.seeds.start { Outcome::Pass } else { Outcome::NotRun };
            let code = format!(
                "Simulation::scenario(\"{scenario}\").store(\"{}\", open).seeds({:?}).sweep()",
                self.name, self.seeds
            );
            return PartVerdict {
                part: Part::Simulation,
                outcome,
                summary: what,
                detail: String::new(),
                reproduce: self.reproduce(Part::Simulation, &code),
            };
        };
        let detail = match sim.replay(first.seed) {
            Ok(outcome) => sim.story(&outcome).unwrap_or_default(),
            Err(e) => e.to_string(),
        };
        let properties: Vec<String> = first.violations.iter().map(|v| v.property.name().to_string()).collect();
        let code =
            format!("Simulation::scenario(\"{scenario}\").store(\"{}\", open).replay({})", self.name, first.seed);
        let reproduce = match &self.command {
            Some(_) => format!("idemsim replay --scenario {scenario} --store {} --seed {}", self.name, first.seed),
            None => code,
        };
        PartVerdict {
            part: Part::Simulation,
            outcome: Outcome::Fail,
            summary: format!("{what}; first: seed {} ({})", first.seed, properties.join(", ")),
            detail,
            reproduce,
        }
    }

    /// A part that could not run, and why.
    pub fn not_run(&self, part: Part, why: &str) -> PartVerdict {
        PartVerdict {
            part,
            outcome: Outcome::NotRun,
            summary: why.to_string(),
            detail: String::new(),
            reproduce: self.reproduce(part, "-"),
        }
    }

    /// The command rerunning `part` when this check is a command, else `code`.
    fn reproduce(&self, part: Part, code: &str) -> String {
        match &self.command {
            Some(cmd) => format!("{cmd} --part {} --seed {}", part.name(), self.seed),
            None => code.to_string(),
        }
    }
}
