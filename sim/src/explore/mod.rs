//! Systematic exploration: every interleaving of a small configuration,
//! checked, counted, and the shortest counterexample shown.
//!
//! The protocol core runs as it is (it uses no runtime) under a small
//! executor of our own: every step that touches shared state (a store
//! operation, a dependency call, a send, a reply, a fault site, a sleep's
//! end, a key lock) is a scheduling point, where the explorer chooses
//! which waiting task goes on and, within the fault budget, whether a
//! fault happens there. Time is discrete-event: the tasks whose next step
//! is due soonest are the candidates, so a pause or a timeout moves the
//! clock. Each execution records the history the simulator records and is
//! judged by the same checkers; once every workload task has finished,
//! the run heals as a simulated run does (the reconciler and the outbox
//! relay, faults off).
//!
//! Two modes: [`Explorer::exhaustive`] (depth-first over every choice
//! point: all executions, the shortest failing one reported) and
//! [`Explorer::pct`] (randomized with PCT's depth guarantee, for
//! configurations too big to enumerate). A failure's schedule
//! ([`Schedule`], "0.2.1") replays it exactly with [`Explorer::replay`].
//!
//! **Invariant:** an execution is a function of the configuration, the
//! subject and the schedule: the executor polls one task at a time, in
//! the order the schedule says, and nothing else (no clock, no thread,
//! no randomness but the PCT chooser's seeded stream) reaches it. The
//! depth-first search checks this as it goes: a replayed prefix that
//! offers other options is an error, not a miscount.
//!
//! ```
//! use idemsim_sim::explore::{catalogue, Explorer};
//! use idemsim_sim::{StoreKind, Subject};
//!
//! let config = catalogue::config("pair").unwrap();
//! let explorer = Explorer::new(&config, &Subject::from(StoreKind::Mem)).unwrap();
//! let report = explorer.exhaustive(100_000, &|| false).unwrap();
//! assert!(report.exhausted && report.failing == 0);
//! ```

pub mod catalogue;
mod config;
mod env;
mod execution;
mod report;
mod search;
mod world;

pub use config::{ExploreConfig, FaultKind, OperationSpec};
pub use execution::{Choice, Chooser, Execution, Step};
pub use report::{Counterexample, ExploreReport};

use crate::{SimConfig, Subject};
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// What can go wrong exploring (not a property breaking: that is a
/// finding, in the report).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExploreError {
    /// The configuration is out of bounds.
    #[error("explore config: {0}")]
    Config(String),
    /// The store could not be opened.
    #[error("{0}")]
    Store(String),
    /// A schedule that is not numbers joined by dots.
    #[error("'{0}' is not a schedule (numbers joined by dots)")]
    NotASchedule(String),
    /// A task panicked (the store's or the protocol's code).
    #[error("{task} panicked: {message} (schedule {})", Schedule(.schedule.clone()))]
    Panicked {
        /// The task.
        task: String,
        /// The panic's message.
        message: String,
        /// The choices up to the panic.
        schedule: Vec<u32>,
    },
    /// A task waited on something the explorer does not drive.
    #[error("{task}: {why} (schedule {})", Schedule(.schedule.clone()))]
    Undriven {
        /// The task.
        task: String,
        /// What it did.
        why: String,
        /// The choices up to it.
        schedule: Vec<u32>,
    },
    /// A replayed prefix offered other options than before: something
    /// outside the schedule (a clock, a thread, shared state kept between
    /// executions) reached the execution.
    #[error(
        "not deterministic: choice point {point} had {before} options and now has {now} \
         (does the store or protocol keep state between executions, or read a clock?)"
    )]
    NotDeterministic {
        /// The choice point.
        point: usize,
        /// Its options the first time.
        before: u32,
        /// Its options replayed.
        now: u32,
    },
    /// A schedule that is not one of this configuration's.
    #[error("replay: {0}")]
    Replay(String),
}

/// The choices of one execution, one per choice point: written
/// `2.0.1` (`-` for an execution without choices).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule(pub Vec<u32>);

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("-");
        }
        for (i, c) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl FromStr for Schedule {
    type Err = ExploreError;

    fn from_str(s: &str) -> Result<Schedule, ExploreError> {
        let s = s.trim();
        if s == "-" {
            return Ok(Schedule::default());
        }
        s.split('.')
            .map(|part| part.parse::<u32>().map_err(|_| ExploreError::NotASchedule(s.to_string())))
            .collect::<Result<Vec<u32>, ExploreError>>()
            .map(Schedule)
    }
}

/// Explores one configuration against one subject (a store, and its own
/// protocol or the configuration's steps).
pub struct Explorer {
    config: ExploreConfig,
    subject: Subject,
    protocol_name: String,
}

impl Explorer {
    /// Checks the configuration.
    pub fn new(config: &ExploreConfig, subject: &Subject) -> Result<Explorer, ExploreError> {
        config.validate()?;
        let explorer = Explorer { config: config.clone(), subject: subject.clone(), protocol_name: String::new() };
        let protocol_name = explorer.protocol().name();
        Ok(Explorer { protocol_name, ..explorer })
    }

    /// The configuration.
    pub fn config(&self) -> &ExploreConfig {
        &self.config
    }

    /// The protocol's name.
    pub fn protocol_name(&self) -> &str {
        &self.protocol_name
    }

    fn protocol(&self) -> std::sync::Arc<dyn crate::Protocol> {
        self.subject.protocol_for(&SimConfig { steps: self.config.steps, ..Default::default() })
    }

    /// One execution under `chooser`, with a fresh store and protocol.
    pub fn execute(&self, chooser: &mut dyn Chooser) -> Result<Execution, ExploreError> {
        let store = self.subject.open().map_err(|e| ExploreError::Store(e.to_string()))?;
        execution::execute(&self.config, store, self.protocol(), chooser)
    }

    /// Replays one execution exactly.
    pub fn replay(&self, schedule: &Schedule) -> Result<Execution, ExploreError> {
        let mut chooser = search::Replay { schedule: &schedule.0, at: 0 };
        let execution = self.execute(&mut chooser)?;
        if chooser.at < schedule.0.len() {
            return Err(ExploreError::Replay(format!(
                "the execution ended after {} choice points, the schedule has {}: it is not one of this configuration's",
                chooser.at,
                schedule.0.len()
            )));
        }
        Ok(execution)
    }

    /// Every execution, depth first, up to `executions_max`; `stop` is
    /// asked between executions (Ctrl-C).
    pub fn exhaustive(&self, executions_max: u64, stop: &dyn Fn() -> bool) -> Result<ExploreReport, ExploreError> {
        self.depth_first(executions_max, false, stop)
    }

    /// [`exhaustive`](Explorer::exhaustive), stopping at the first failing
    /// execution (the first in depth-first order, not the shortest):
    /// `executions` then counts the executions it took to find one.
    pub fn first_failure(&self, executions_max: u64, stop: &dyn Fn() -> bool) -> Result<ExploreReport, ExploreError> {
        self.depth_first(executions_max, true, stop)
    }

    fn depth_first(
        &self,
        executions_max: u64,
        until_failure: bool,
        stop: &dyn Fn() -> bool,
    ) -> Result<ExploreReport, ExploreError> {
        let mut report = ExploreReport::new(&self.config.name, &self.protocol_name, "exhaustive");
        let mut histories = BTreeSet::new();
        let mut prefix: Vec<(u32, u32)> = Vec::new();
        loop {
            report.stopped = stop();
            if report.stopped || report.executions >= executions_max {
                break;
            }
            let execution = self.execute(&mut search::Dfs { prefix: &prefix, at: 0 })?;
            let trail: Vec<(u32, u32)> =
                execution.arities.iter().copied().zip(execution.schedule.iter().copied()).collect();
            report.choice_points += (trail.len() - prefix.len().saturating_sub(1)) as u64;
            histories.insert(crate::trace_hash(&execution.history));
            report.add(execution);
            if until_failure && !report.clean() {
                break;
            }
            match search::next_prefix(trail) {
                Some(next) => prefix = next,
                None => {
                    report.exhausted = true;
                    break;
                }
            }
        }
        report.histories = histories.len() as u64;
        Ok(report)
    }

    /// `runs` randomized executions under PCT with bug depth `depth`,
    /// from `seed`.
    pub fn pct(
        &self,
        runs: u64,
        depth: u32,
        seed: u64,
        stop: &dyn Fn() -> bool,
    ) -> Result<ExploreReport, ExploreError> {
        let mut report =
            ExploreReport::new(&self.config.name, &self.protocol_name, &format!("pct depth {depth} seed {seed}"));
        let mut histories = BTreeSet::new();
        // The change points fall among the choice points of a typical
        // execution: the first, without faults, tells how many.
        let mut points = self.execute(&mut search::Dfs { prefix: &[], at: 0 })?.schedule.len();
        for run in 0..runs {
            if stop() {
                report.stopped = true;
                break;
            }
            let execution = self.execute(&mut search::Pct::new(seed, run, depth.max(1), points))?;
            points = points.max(execution.schedule.len());
            report.choice_points += execution.schedule.len() as u64;
            histories.insert(crate::trace_hash(&execution.history));
            report.add(execution);
        }
        report.histories = histories.len() as u64;
        Ok(report)
    }
}

#[cfg(test)]
mod tests;
