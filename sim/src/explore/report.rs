//! What an exploration found: how many executions (and distinct
//! histories) it explored, whether it exhausted the space, how many
//! executions broke which property, and the shortest counterexample.

use super::{Execution, Schedule};
use idemsim_model::Property;
use std::collections::BTreeMap;
use std::fmt;

/// The shortest failing execution found, and the property it breaks
/// first.
#[derive(Clone, Debug)]
pub struct Counterexample {
    /// The property (`None`: a livelock).
    pub property: Option<Property>,
    /// Steps until it broke.
    pub steps: usize,
    /// Its choices: replays it.
    pub schedule: Schedule,
    /// The execution.
    pub execution: Execution,
}

/// The result of [`Explorer::exhaustive`](super::Explorer::exhaustive) or
/// [`Explorer::pct`](super::Explorer::pct).
#[derive(Clone, Debug)]
pub struct ExploreReport {
    /// The configuration's name.
    pub config: String,
    /// The protocol's name.
    pub protocol: String,
    /// "exhaustive", or "pct depth D seed S".
    pub mode: String,
    /// Executions explored.
    pub executions: u64,
    /// Choice points visited (nodes of the tree of executions).
    pub choice_points: u64,
    /// Distinct histories among the executions.
    pub histories: u64,
    /// Every execution was explored.
    pub exhausted: bool,
    /// Stopped early (Ctrl-C).
    pub stopped: bool,
    /// Executions that broke each property.
    pub broken: BTreeMap<Property, u64>,
    /// Executions that broke any property or livelocked.
    pub failing: u64,
    /// Executions that ran out of steps.
    pub livelocks: u64,
    /// The failing execution with the fewest steps to its break (the
    /// first found among equals).
    pub shortest: Option<Counterexample>,
}

impl ExploreReport {
    pub(crate) fn new(config: &str, protocol: &str, mode: &str) -> ExploreReport {
        ExploreReport {
            config: config.into(),
            protocol: protocol.into(),
            mode: mode.into(),
            executions: 0,
            choice_points: 0,
            histories: 0,
            exhausted: false,
            stopped: false,
            broken: BTreeMap::new(),
            failing: 0,
            livelocks: 0,
            shortest: None,
        }
    }

    /// Counts one execution.
    pub(crate) fn add(&mut self, execution: Execution) {
        self.executions += 1;
        if !execution.failed() {
            return;
        }
        self.failing += 1;
        self.livelocks += u64::from(execution.livelock);
        let mut properties: Vec<Property> = execution.violations.iter().map(|v| v.property).collect();
        properties.dedup();
        for p in &properties {
            *self.broken.entry(*p).or_default() += 1;
        }
        let steps = execution.broke_at.unwrap_or(execution.steps.len());
        if self.shortest.as_ref().is_some_and(|s| s.steps <= steps) {
            return;
        }
        let first = execution.violations.iter().min_by_key(|v| v.events.last().copied().unwrap_or(0));
        self.shortest = Some(Counterexample {
            property: first.map(|v| v.property),
            steps,
            schedule: Schedule(execution.schedule.clone()),
            execution,
        });
    }

    /// True when no execution broke anything.
    pub fn clean(&self) -> bool {
        self.failing == 0
    }

    /// One line per property broken: "N of M executions break P".
    pub fn findings(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .broken
            .iter()
            .map(|(p, n)| format!("{n} of {} break {p}", plural(self.executions, "execution", "executions")))
            .collect();
        if self.livelocks > 0 {
            out.push(format!("{} of {} ran out of steps (livelock)", self.livelocks, self.executions));
        }
        out
    }
}

impl fmt::Display for ExploreReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let space = match (self.exhausted, self.stopped) {
            (true, _) => "every one",
            (false, true) => "stopped early",
            (false, false) if self.mode == "exhaustive" => "NOT exhausted: the execution budget ran out",
            (false, false) => "randomized",
        };
        writeln!(
            f,
            "explore {} with {} ({}): {} ({space}), {}, {}",
            self.config,
            self.protocol,
            self.mode,
            plural(self.executions, "execution", "executions"),
            plural(self.choice_points, "choice point", "choice points"),
            plural(self.histories, "distinct history", "distinct histories"),
        )?;
        for line in self.findings() {
            writeln!(f, "  {line}")?;
        }
        match &self.shortest {
            Some(c) => {
                let what = c.property.map_or("runs out of steps".to_string(), |p| format!("breaks {p}"));
                writeln!(
                    f,
                    "  the shortest {what} in {} (schedule {})",
                    plural(c.steps as u64, "step", "steps"),
                    c.schedule
                )
            }
            None => writeln!(f, "  no execution breaks a property"),
        }
    }
}

/// "1 step", "3 steps".
fn plural(n: u64, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}
