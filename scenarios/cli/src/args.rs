//! What several commands take: a scenario target, a store target, a shard,
//! and the parsers of their values.

use crate::{EXIT_CLEAN, EXIT_VIOLATION};
use idemsim::scenario::Scenario;
use idemsim::sim::{StoreKind, Subject};
use idemsim::sweep::SweepReport;

#[derive(clap::Args, Debug)]
pub struct ScenarioArgs {
    /// Scenario name (see `idemsim list`).
    #[arg(long, default_value = "default", conflicts_with = "file")]
    pub scenario: String,
    /// A scenario file instead (JSON, or TOML if it ends in .toml;
    /// `idemsim explain NAME --json` writes one).
    #[arg(long)]
    pub file: Option<std::path::PathBuf>,
    /// Protocol variant: `correct` (the default; for a shrunk file, the
    /// variant it reproduces), or a broken one (`idemsim explain SCENARIO`
    /// lists them).
    #[arg(long)]
    pub variant: Option<String>,
    /// Store on the database node: mem (the default; for a shrunk file,
    /// the store it reproduces) or sqlite.
    #[arg(long, value_parser = parse_store)]
    pub store: Option<StoreKind>,
}

#[derive(clap::Args, Debug)]
pub struct StoreArgs {
    /// The store: mem, sqlite, pg, mysql or redis.
    #[arg(long)]
    pub store: String,
    /// Connection URL (default: IDEMSIM_PG_URL / IDEMSIM_MYSQL_URL / IDEMSIM_REDIS_URL, else the local server).
    #[arg(long)]
    pub url: Option<String>,
}

/// A shard given on the command line, or taken from a job array's
/// environment.
#[derive(Clone, Copy, Debug)]
pub enum Shard {
    Given(u64, u64),
    Env,
}

pub fn parse_shard(s: &str) -> Result<Shard, String> {
    if s == "env" {
        return Ok(Shard::Env);
    }
    idemsim::shard::parse(s).map(|(k, n)| Shard::Given(k, n)).line()
}

pub fn parse_flaw(s: &str) -> Result<idemsim_store::StoreFlaw, String> {
    idemsim_store::StoreFlaw::from_name(s)
        .ok_or_else(|| format!("unknown flaw '{s}'; expected check-then-insert or unfenced-completion"))
}

pub fn parse_variant(s: &str) -> Result<idemsim_sim::Variant, String> {
    idemsim_sim::Variant::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = idemsim_sim::Variant::ALL.iter().map(|v| v.name()).collect();
        format!("unknown variant '{s}'; expected one of: {}", names.join(", "))
    })
}

pub fn parse_store(s: &str) -> Result<StoreKind, String> {
    StoreKind::from_name(s).ok_or_else(|| format!("unknown store '{s}'; expected mem or sqlite"))
}

pub fn scenario(name: &str) -> Result<Scenario, String> {
    idemsim::catalogue::find(name)
        .ok_or_else(|| format!("unknown scenario '{name}'; `idemsim list` shows the scenarios"))
}

pub fn target_scenario(target: &ScenarioArgs) -> Result<Scenario, String> {
    match &target.file {
        Some(path) => Scenario::from_file(path).line(),
        None => scenario(&target.scenario),
    }
}

/// The variant a command runs: the flag, else the one a shrunk file
/// reproduces, else `correct`; checked against the scenario.
pub fn variant_of(target: &ScenarioArgs, scenario: &Scenario) -> Result<String, String> {
    let from_file = scenario.reproduces.as_ref().map(|r| r.variant.clone());
    let name = target.variant.clone().or(from_file).unwrap_or_else(|| "correct".into());
    scenario.steps_of(&name).line()?;
    Ok(name)
}

/// The store a command runs: the flag, else the one a shrunk file
/// reproduces, else mem. A file that reproduces a run on another store,
/// or of a protocol of the user's own (which only their program has), is
/// refused in one line naming both.
pub fn subject_of(target: &ScenarioArgs, scenario: &Scenario) -> Result<Subject, String> {
    let Some(reproduces) = &scenario.reproduces else {
        return Ok(target.store.unwrap_or(StoreKind::Mem).into());
    };
    let file = target.file.as_ref().map_or_else(|| scenario.name.clone(), |p| p.display().to_string());
    let named = reproduces.store.as_deref().and_then(StoreKind::from_name);
    let store = target.store.or(named).unwrap_or(StoreKind::Mem);
    reproduces.check(&file, store.name(), None).line()?;
    Ok(store.into())
}

pub fn exit_code(report: &SweepReport) -> i32 {
    if report.seeds_failed > 0 || report.divergence.is_some() {
        EXIT_VIOLATION
    } else {
        EXIT_CLEAN
    }
}

/// The most requests a stress run may make: its history is judged whole,
/// so it is kept in memory (about 10 events a request).
pub const MAX_REQUESTS: usize = 1_000_000;

/// The command line's errors are lines: a library error becomes its
/// one-line `Display` here, at the edge, and nowhere in the library.
pub trait OneLine<T> {
    /// The error as its line.
    fn line(self) -> Result<T, String>;
}

impl<T, E: std::fmt::Display> OneLine<T> for Result<T, E> {
    fn line(self) -> Result<T, String> {
        self.map_err(|e| e.to_string())
    }
}
