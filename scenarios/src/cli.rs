//! The `idemsim` command line. `main` is a thin wrapper around [`run`], which
//! writes to the given streams and returns the exit code: 0 clean, 1 a
//! property was violated (or a run failed), 2 a usage or input error.

use crate::scenario::Scenario;
use crate::stress::{stress, StressSpec};
use crate::sweep::{sweep, SweepReport, SweepSpec};
use crate::target::StoreTarget;
use crate::{catalogue, report};
use clap::{Args, Parser, Subcommand};
use idemsim_sim::{run_seed, to_jsonl, trace_hash, StoreKind, Subject};
use std::io::Write;
use std::ops::Range;

/// Exit code: no violation.
pub const EXIT_CLEAN: i32 = 0;
/// Exit code: a property was violated, or a run failed.
pub const EXIT_VIOLATION: i32 = 1;
/// Exit code: bad usage or input.
pub const EXIT_USAGE: i32 = 2;
/// Exit code: stopped by Ctrl-C (after printing what was found so far).
pub const EXIT_INTERRUPTED: i32 = 130;

#[derive(Parser, Debug)]
#[command(
    name = "idemsim",
    version,
    about = "Deterministic simulation testing for the idempotency-key protocol",
    long_about = "Runs the claim / execute / complete protocol against simulated networks, clocks, storage and \
                  process faults, one seed at a time, and checks every history against the protocol's properties. \
                  A seed fully determines a run: `idemsim replay --seed N` reproduces it exactly."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Sweep seeds and report violations and coverage.
    Run(RunArgs),
    /// Re-run one seed and print its timeline and story (or write its trace,
    /// or an HTML timeline).
    Replay(ReplayArgs),
    /// Shrink a failing seed to a minimal scenario file.
    Shrink(ShrinkArgs),
    /// Stress a real store: real tasks, real connections, real concurrency.
    Stress(StressArgs),
    /// The conformance kit plus a stress run against a store, as a verdict table.
    CheckStore(CheckStoreArgs),
    /// Attack a running HTTP service's Idempotency-Key behaviour from outside.
    Http(HttpArgs),
    /// Serve the protocol (or a broken variant) as a real HTTP service.
    Serve(ServeArgs),
    /// Measure simulation speed and time to first failure; print targets.
    Bench(BenchArgs),
    /// Bare madsim with a seed's traffic and none of our code, seed after
    /// seed on one thread: the floor `bench` counts instructions of.
    #[command(hide = true)]
    Floor {
        /// Seeds, as A..B.
        #[arg(long, value_parser = parse_seeds, default_value = "0..20")]
        seeds: Range<u64>,
        /// Messages per seed.
        #[arg(long, default_value_t = 940)]
        messages: u64,
    },
    /// Combine `run --json` reports (e.g. of shards) into one.
    Merge {
        /// The report files.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Explain a scenario: its lesson, variants, verdicts and commands to try.
    Explain {
        /// The scenario.
        name: String,
        /// The whole scenario as JSON (a scenario file to start from).
        #[arg(long, conflicts_with = "toml")]
        json: bool,
        /// The whole scenario as TOML.
        #[arg(long)]
        toml: bool,
    },
    /// List the scenarios.
    List {
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Debug)]
struct Target {
    /// Scenario name (see `idemsim list`).
    #[arg(long, default_value = "default", conflicts_with = "file")]
    scenario: String,
    /// A scenario file instead (JSON, or TOML if it ends in .toml;
    /// `idemsim explain NAME --json` writes one).
    #[arg(long)]
    file: Option<std::path::PathBuf>,
    /// Protocol variant: `correct` (the default; for a shrunk file, the
    /// variant it reproduces), or a broken one (`idemsim explain SCENARIO`
    /// lists them).
    #[arg(long)]
    variant: Option<String>,
    /// Store on the database node: mem or sqlite.
    #[arg(long, default_value = "mem", value_parser = parse_store)]
    store: StoreKind,
}

#[derive(Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    target: Target,
    /// Seeds to sweep, as A..B (B excluded).
    #[arg(long, value_parser = parse_seeds, conflicts_with = "seed", default_value = "0..1000")]
    seeds: Range<u64>,
    /// One seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Run every seed twice and report the first diverging event.
    #[arg(long)]
    check_determinism: bool,
    /// Run only shard K of N of the seeds (K in 1..=N), for splitting a
    /// sweep across machines; combine the --json reports with `idemsim
    /// merge`. `--shard env` takes K and N from a Kubernetes Indexed Job
    /// (JOB_COMPLETION_INDEX, IDEMSIM_SHARD_COUNT) or a Slurm array
    /// (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT).
    #[arg(long, value_parser = parse_shard)]
    shard: Option<Shard>,
    /// One JSON document instead of text.
    #[arg(long)]
    json: bool,
    /// Shrink the first failing seed to a minimal scenario file.
    #[arg(long)]
    shrink: bool,
    /// Where --shrink writes the file (default: shrunk-SCENARIO-VARIANT-SEED.json).
    #[arg(long, requires = "shrink")]
    shrink_out: Option<std::path::PathBuf>,
}

#[derive(Args, Debug)]
struct ReplayArgs {
    #[command(flatten)]
    target: Target,
    /// The seed to replay (for a shrunk file, the seed it reproduces).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the trace as JSON Lines to this file.
    #[arg(long)]
    trace: Option<std::path::PathBuf>,
    /// Write a self-contained HTML timeline to this file.
    #[arg(long)]
    html: Option<std::path::PathBuf>,
    /// One JSON document instead of the timeline.
    #[arg(long)]
    json: bool,
    /// The story tells every event up to the violation, not only those of
    /// its keys and the faults that caused them.
    #[arg(long)]
    all: bool,
}

#[derive(Args, Debug)]
struct ShrinkArgs {
    #[command(flatten)]
    target: Target,
    /// The failing seed.
    #[arg(long)]
    seed: u64,
    /// Where to write the minimal scenario (.json or .toml; default:
    /// shrunk-SCENARIO-VARIANT-SEED.json).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// At most this many candidate runs.
    #[arg(long, default_value_t = 3000)]
    runs_max: u32,
    /// The story tells every event up to the violation.
    #[arg(long)]
    all: bool,
}

#[derive(Args, Debug)]
struct StoreArgs {
    /// The store: mem, sqlite, pg, mysql or redis.
    #[arg(long)]
    store: String,
    /// Connection URL (default: IDEMSIM_PG_URL / IDEMSIM_MYSQL_URL / IDEMSIM_REDIS_URL, else the local server).
    #[arg(long)]
    url: Option<String>,
}

#[derive(Args, Debug)]
struct StressArgs {
    #[command(flatten)]
    target: StoreArgs,
    /// Seeds the workload and the fault plan (not the interleaving).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Requests in all.
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// A deliberately broken store statement (pg, mysql, redis): check-then-insert or unfenced-completion.
    #[arg(long, value_parser = parse_flaw)]
    flaw: Option<idemsim_store::StoreFlaw>,
    /// The protocol variant the handlers run (a catalogue name, e.g.
    /// unfenced-completion; default correct): the simulator's own steps.
    #[arg(long, default_value = "correct", value_parser = parse_variant)]
    variant: idemsim_sim::Variant,
    /// Schema (pg) or database (mysql) to use; it is emptied first.
    #[arg(long, default_value = "idemsim_stress")]
    schema: String,
    /// One JSON document instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct HttpArgs {
    /// The service's base URL (plain HTTP on loopback), e.g. http://127.0.0.1:7400.
    #[arg(long)]
    target: Option<String>,
    /// The service's API (TOML or JSON): endpoints, bodies, headers, tenants
    /// (default: the API of `idemsim serve`). See docs/black-box.md.
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// Fixes the attack plan and the fault plan (not the interleaving).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Operations in the plan (late replays come on top).
    #[arg(long, default_value_t = 300)]
    requests: usize,
    /// Attack groups in flight at once.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// A try without an answer after this is lost.
    #[arg(long, default_value_t = 3000)]
    timeout_ms: u64,
    /// The slow provider's delay (longer than the service's lease).
    #[arg(long, default_value_t = 1200)]
    slow_ms: u64,
    /// The run stops starting work after this.
    #[arg(long, default_value_t = 120)]
    max_secs: u64,
    /// Where idemsim's payment provider listens (overrides the config).
    #[arg(long)]
    provider_listen: Option<String>,
    /// Prefix of keys and references (default: unique per run).
    #[arg(long)]
    tag: Option<String>,
    /// Write every observation as JSON Lines (.jsonl).
    #[arg(long)]
    trace: Option<std::path::PathBuf>,
    /// One JSON document instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// Where to listen (loopback; port 0 picks one and prints it).
    #[arg(long, default_value = "127.0.0.1:7400")]
    listen: String,
    /// The protocol variant (a catalogue name; default correct).
    #[arg(long, default_value = "correct", value_parser = parse_variant)]
    variant: idemsim_sim::Variant,
    /// The store: mem, sqlite, pg, mysql or redis.
    #[arg(long, default_value = "mem")]
    store: String,
    /// Connection URL of a server store.
    #[arg(long)]
    url: Option<String>,
    /// The payment provider's base URL (e.g. `idemsim http`'s,
    /// http://127.0.0.1:7410); default: an in-process one.
    #[arg(long)]
    provider: Option<String>,
    /// Replicas behind the listener (requests go round robin).
    #[arg(long, default_value_t = 2)]
    nodes: u32,
    /// Lease of a claim or takeover.
    #[arg(long, default_value_t = 500)]
    lease_ms: u64,
    /// Added to every store call, as for a store across a network.
    #[arg(long, default_value_t = 1)]
    store_delay_ms: u64,
    /// Stop after this many seconds (0: run until Ctrl-C).
    #[arg(long, default_value_t = 0)]
    max_secs: u64,
}

#[derive(Args, Debug)]
struct CheckStoreArgs {
    #[command(flatten)]
    target: StoreArgs,
    /// Conformance cases.
    #[arg(long, default_value_t = 256)]
    cases: u32,
    /// Seed of the conformance kit and the stress run.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Stress requests.
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// Stress concurrency.
    #[arg(long, default_value_t = 16)]
    clients: usize,
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Seeds for the throughput figures.
    #[arg(long, default_value_t = 2000)]
    seeds: u64,
    /// Independent sweeps per broken variant for time to first failure.
    #[arg(long, default_value_t = 20)]
    sweeps: u32,
    /// A time-to-first-failure sweep gives up after this many seeds.
    #[arg(long, default_value_t = 2000)]
    seeds_max: u64,
    /// Seeds per point of the scaling table.
    #[arg(long, default_value_t = 40)]
    scaling_seeds: u64,
    /// Seeds whose instructions callgrind counts (needs valgrind; 0 skips).
    #[arg(long, default_value_t = 20)]
    instruction_seeds: u64,
    /// Throughput sweeps of each kind (one worker, two workers); the
    /// wall-clock figures are their medians.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=99))]
    repeats: u32,
    /// Real store for the side-by-side with stress: pg, mysql or none.
    #[arg(long, default_value = "pg")]
    stress_store: String,
    /// Also write the JSON report to this file.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Print the JSON report instead of the table.
    #[arg(long)]
    json: bool,
    /// Exit 1 when a target is not met (CI gates on it); by default bench
    /// reports FAIL marks and exits 0.
    #[arg(long)]
    strict: bool,
}

/// A shard given on the command line, or taken from a job array's
/// environment.
#[derive(Clone, Copy, Debug)]
enum Shard {
    Given(u64, u64),
    Env,
}

fn parse_shard(s: &str) -> Result<Shard, String> {
    if s == "env" {
        return Ok(Shard::Env);
    }
    crate::shard::parse(s).map(|(k, n)| Shard::Given(k, n))
}

fn parse_flaw(s: &str) -> Result<idemsim_store::StoreFlaw, String> {
    idemsim_store::StoreFlaw::from_name(s)
        .ok_or_else(|| format!("unknown flaw '{s}'; expected check-then-insert or unfenced-completion"))
}

fn parse_variant(s: &str) -> Result<idemsim_sim::Variant, String> {
    idemsim_sim::Variant::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = idemsim_sim::Variant::ALL.iter().map(|v| v.name()).collect();
        format!("unknown variant '{s}'; expected one of: {}", names.join(", "))
    })
}

fn parse_store(s: &str) -> Result<StoreKind, String> {
    StoreKind::from_name(s).ok_or_else(|| format!("unknown store '{s}'; expected mem or sqlite"))
}

/// Parses a seed range `A..B` (B excluded, A < B).
pub(crate) fn parse_seeds(s: &str) -> Result<Range<u64>, String> {
    let bad = || format!("'{s}' is not a seed range; expected A..B with A < B, e.g. 0..2000");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let (a, b): (u64, u64) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
    if a >= b {
        return Err(bad());
    }
    Ok(a..b)
}

/// How the user ran idemsim, for the commands it prints: `idemsim` when
/// it ran from the PATH, `cargo run --release --bin idemsim --` when it
/// ran from a cargo target directory, else the path it was run by.
static PROGRAM: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The command prefix reproduce lines start with (see [`PROGRAM`]).
pub fn program() -> &'static str {
    PROGRAM.get().map_or("idemsim", String::as_str)
}

fn program_of(argv0: &str) -> String {
    let path = std::path::Path::new(argv0);
    if path.components().count() <= 1 {
        return "idemsim".into();
    }
    let dir = path.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str());
    let in_target = path.parent().and_then(|p| p.parent()).and_then(|p| p.file_name()).is_some_and(|n| n == "target");
    match (in_target, dir) {
        (true, Some("release")) => "cargo run --release --bin idemsim --".into(),
        (true, Some("debug")) => "cargo run --bin idemsim --".into(),
        _ => argv0.to_string(),
    }
}

/// Runs the command line `args` (program name first).
pub fn run(args: Vec<String>, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    if let Some(argv0) = args.first() {
        let _ = PROGRAM.set(program_of(argv0));
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let text = e.render().to_string();
            if !e.use_stderr() {
                let _ = write!(out, "{text}"); // --help, --version
                return EXIT_CLEAN;
            }
            // A usage error in one line: its message, without the usage
            // and tips that `--help` gives.
            let message: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("tip:"))
                .collect();
            let message = message.into_iter().filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
            let _ = writeln!(err, "{message} (see --help)");
            return EXIT_USAGE;
        }
    };
    let result = match cli.command {
        Command::Run(args) => cmd_run(args, out, err),
        Command::Replay(args) => cmd_replay(args, out),
        Command::Shrink(args) => cmd_shrink(args, out),
        Command::Stress(args) => cmd_stress(args, out),
        Command::CheckStore(args) => cmd_check_store(args, out),
        Command::Http(args) => cmd_http(args, out),
        Command::Serve(args) => cmd_serve(args, out),
        Command::Bench(args) => cmd_bench(args, out, err),
        Command::Floor { seeds, messages } => {
            seeds.for_each(|seed| idemsim_sim::floor::madsim_floor(seed, messages));
            Ok(EXIT_CLEAN)
        }
        Command::Merge { files, json } => crate::merge::cmd_merge(&files, json, out),
        Command::Explain { name, json, toml } => cmd_explain(&name, json, toml, out),
        Command::List { json } => cmd_list(json, out),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            let _ = writeln!(err, "error: {message}");
            EXIT_USAGE
        }
    }
}

fn scenario(name: &str) -> Result<Scenario, String> {
    catalogue::find(name).ok_or_else(|| format!("unknown scenario '{name}'; `idemsim list` shows the scenarios"))
}

fn target_scenario(target: &Target) -> Result<Scenario, String> {
    match &target.file {
        Some(path) => Scenario::from_file(path),
        None => scenario(&target.scenario),
    }
}

/// The variant a command runs: the flag, else the one a shrunk file
/// reproduces, else `correct`; checked against the scenario.
fn variant_of(target: &Target, scenario: &Scenario) -> Result<String, String> {
    let from_file = scenario.reproduces.as_ref().map(|r| r.variant.clone());
    let name = target.variant.clone().or(from_file).unwrap_or_else(|| "correct".into());
    scenario.steps_of(&name)?;
    Ok(name)
}

fn cmd_explain(name: &str, json: bool, toml: bool, out: &mut dyn Write) -> Result<i32, String> {
    let s = scenario(name)?;
    let written = if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&s).expect("json"))
    } else if toml {
        write!(out, "{}", s.to_toml())
    } else {
        (|| {
            writeln!(out, "{}\n\n{}\n", s.name, s.lesson)?;
            writeln!(out, "variants (expected verdict over seeds 0..2000):")?;
            for (variant, expect) in &s.expect {
                let steps = s.steps_of(variant).map(|st| st.broken().join(", ")).unwrap_or_default();
                let swapped = if steps.is_empty() { String::new() } else { format!("  (swaps {steps})") };
                writeln!(out, "  {variant:<30} {expect}{swapped}")?;
            }
            if !s.sometimes.is_empty() {
                writeln!(out, "interleavings a clean run must show: {}", s.sometimes.join(", "))?;
            }
            writeln!(out, "\ntry:")?;
            for variant in s.expect.keys() {
                writeln!(out, "  {} run --scenario {} --variant {variant} --seeds 0..200", program(), s.name)?;
            }
            writeln!(out, "  {} run --scenario {} --variant <variant> --seeds 0..200 --shrink", program(), s.name)?;
            writeln!(
                out,
                "  {} replay --scenario {} --variant <variant> --seed <a failing seed> --html t.html",
                program(),
                s.name
            )?;
            writeln!(out, "  {} explain {} --json > my-scenario.json   # then edit, and run --file", program(), s.name)
        })()
    };
    written.map_err(|e| e.to_string())?;
    Ok(EXIT_CLEAN)
}

fn cmd_run(args: RunArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    let scenario = target_scenario(&args.target)?;
    let variant = variant_of(&args.target, &scenario)?;
    let seeds = args.seed.map_or(args.seeds.clone(), |s| s..s.saturating_add(1));
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if jobs == 0 || jobs > 1024 {
        return Err("--jobs must be between 1 and 1024".into());
    }
    let shard = match args.shard {
        Some(Shard::Env) => Some(crate::shard::from_env()?),
        Some(Shard::Given(k, n)) => Some((k, n)),
        None => None,
    };
    let shrink_out = match (args.shrink, &args.shrink_out) {
        (true, Some(path)) => Some(crate::output::prepare(path, &["json", "toml"], "the shrunk scenario")?),
        _ => None,
    };
    let subject = Subject::from(args.target.store);
    let mut spec = SweepSpec {
        config: scenario.config_for(&variant)?,
        subject: subject.clone(),
        seeds: seeds.clone(),
        jobs,
        check_determinism: args.check_determinism,
        record_hashes: false,
        shard,
    };
    let total = spec.seed_count();
    spec.record_hashes = args.json && total <= 100_000;
    let progress = report::Progress::new(total, !args.json);
    let result = sweep(&spec, &|done| progress.tick(done));
    progress.finish();
    let report = result.map_err(|e| e.to_string())?;
    let ctx = report::Context {
        scenario: &scenario,
        variant: &variant,
        subject: &subject,
        seeds,
        jobs,
        shard,
        file: args.target.file.as_deref(),
        all: false,
    };
    if args.json {
        report::sweep_json(&ctx, &report, out).map_err(|e| e.to_string())?;
    } else {
        report::sweep_text(&ctx, &report, out).map_err(|e| e.to_string())?;
    }
    let _ = err.flush();
    if report.interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    // A scenario file is a test: its `expect` for the variant is the verdict.
    let expected = args.target.file.as_ref().and_then(|_| scenario.expect.get(&variant).copied());
    let mut quiet = std::io::sink();
    let said: &mut dyn Write = if args.json { &mut quiet } else { out };
    let code = match expected {
        Some(expect) => judge_expect(expect, &report, said),
        None => exit_code(&report),
    };
    if let (true, Some(first)) = (args.shrink, report.failures.first()) {
        let path = shrink_out
            .as_ref()
            .map_or_else(|| default_shrink_path(&scenario.name, &variant, first.seed), |o| o.path().to_path_buf());
        let spec = crate::shrink::ShrinkSpec {
            scenario: &scenario,
            variant: &variant,
            subject: subject.clone(),
            seed: first.seed,
            runs_max: 3000,
            property: scenario.expected_property(&variant),
        };
        let _ = writeln!(out, "\nshrinking seed {}:", first.seed);
        // The sweep's verdict stands whether or not the shrink works.
        match shrink_and_write(&spec, &path, false, out) {
            Ok(()) => shrink_out.map_or((), crate::output::Output::keep),
            Err(why) => {
                let _ = writeln!(out, "  could not shrink: {why}");
            }
        }
    }
    Ok(code)
}

/// The exit code of a sweep of a scenario file that says what it expects:
/// 0 when the verdict is the expected one, 1 (with a line saying why) when
/// it is not.
fn judge_expect(expect: crate::Expect, report: &SweepReport, out: &mut dyn Write) -> i32 {
    let broken: Vec<_> = report.violations_by_property.keys().copied().collect();
    let (met, why) = match expect {
        crate::Expect::Clean => (report.seeds_failed == 0, "the file expects a clean run".to_string()),
        crate::Expect::Violates(p) => {
            (broken.contains(&p) && report.divergence.is_none(), format!("the file expects a {} violation", p.name()))
        }
    };
    let got = match broken.is_empty() {
        true => "none".to_string(),
        false => broken.iter().map(|p| p.name()).collect::<Vec<_>>().join(", "),
    };
    let _ =
        writeln!(out, "expected: {expect}; violated: {got}: {}", if met { "as expected" } else { "NOT as expected" });
    match met && report.seeds_errored == 0 {
        true => EXIT_CLEAN,
        false => {
            let _ = writeln!(out, "{why}, and the run did not give it");
            EXIT_VIOLATION
        }
    }
}

fn default_shrink_path(scenario: &str, variant: &str, seed: u64) -> std::path::PathBuf {
    format!("shrunk-{scenario}-{variant}-{seed}.json").into()
}

fn cmd_shrink(args: ShrinkArgs, out: &mut dyn Write) -> Result<i32, String> {
    let scenario = target_scenario(&args.target)?;
    let variant = variant_of(&args.target, &scenario)?;
    let path = args.out.clone().unwrap_or_else(|| default_shrink_path(&scenario.name, &variant, args.seed));
    let output = crate::output::prepare(&path, &["json", "toml"], "the shrunk scenario")?;
    let spec = crate::shrink::ShrinkSpec {
        scenario: &scenario,
        variant: &variant,
        subject: Subject::from(args.target.store),
        seed: args.seed,
        runs_max: args.runs_max,
        property: scenario.expected_property(&variant),
    };
    let _ = writeln!(out, "idemsim shrink: scenario {}, variant {variant}, seed {}", scenario.name, args.seed);
    shrink_and_write(&spec, output.path(), args.all, out)?;
    output.keep();
    Ok(EXIT_VIOLATION)
}

/// Shrinks, writes the minimal file, and prints sizes, story and the
/// command that replays it.
fn shrink_and_write(
    spec: &crate::shrink::ShrinkSpec<'_>,
    path: &std::path::Path,
    all: bool,
    out: &mut dyn Write,
) -> Result<(), String> {
    let shrunk = crate::shrink::shrink(spec)?;
    let toml = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let text = match toml {
        true => shrunk.scenario.to_toml(),
        false => format!("{}\n", serde_json::to_string_pretty(&shrunk.scenario).expect("json")),
    };
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let story = shrunk.story(all);
    let _ = writeln!(out, "  property: {}", shrunk.property.name());
    let _ = writeln!(out, "  before:   {}", shrunk.before);
    let _ = writeln!(out, "  after:    {}", shrunk.after);
    let _ = writeln!(out, "  ({} candidate runs)", shrunk.runs);
    let _ = writeln!(out, "story:\n{story}");
    let _ = writeln!(out, "wrote {}", path.display());
    let _ = writeln!(out, "reproduce: {} replay --file {}", program(), path.display());
    Ok(())
}

fn exit_code(report: &SweepReport) -> i32 {
    if report.seeds_failed > 0 || report.divergence.is_some() {
        EXIT_VIOLATION
    } else {
        EXIT_CLEAN
    }
}

fn cmd_replay(args: ReplayArgs, out: &mut dyn Write) -> Result<i32, String> {
    let scenario = target_scenario(&args.target)?;
    let variant = variant_of(&args.target, &scenario)?;
    let seed = args
        .seed
        .or(scenario.reproduces.as_ref().map(|r| r.seed))
        .ok_or_else(|| "--seed is required (the scenario names no run to reproduce)".to_string())?;
    let config = scenario.config_for(&variant)?;
    let trace_out = args.trace.as_deref().map(|p| crate::output::prepare(p, &["jsonl"], "the trace")).transpose()?;
    let html_out =
        args.html.as_deref().map(|p| crate::output::prepare(p, &["html", "htm"], "the timeline")).transpose()?;
    let subject = Subject::from(args.target.store);
    let outcome = run_seed(&config, &subject, seed).map_err(|e| e.to_string())?;
    let ctx = report::Context {
        scenario: &scenario,
        variant: &variant,
        subject: &subject,
        seeds: seed..seed + 1,
        jobs: 1,
        shard: None,
        file: args.target.file.as_deref(),
        all: args.all,
    };
    if let Some(output) = trace_out {
        let text = to_jsonl(seed, &scenario.name, &variant, &outcome.history);
        let path = output.path();
        std::fs::write(path, text).map_err(|e| format!("cannot write the trace to {}: {e}", path.display()))?;
        output.keep();
    }
    if let Some(output) = html_out {
        let title = format!("{} / {variant} / seed {seed}", scenario.name);
        let page = idemsim_sim::html::render(&title, &outcome.history, &outcome.violations);
        let path = output.path();
        std::fs::write(path, page).map_err(|e| format!("cannot write the timeline to {}: {e}", path.display()))?;
        output.keep();
    }
    if args.json {
        report::replay_json(&ctx, &outcome, out).map_err(|e| e.to_string())?;
    } else {
        report::replay_text(&ctx, &outcome, out).map_err(|e| e.to_string())?;
        if let Some(path) = &args.trace {
            let _ = writeln!(
                out,
                "trace: {} events written to {} (hash {})",
                outcome.history.entries.len(),
                path.display(),
                trace_hash(&outcome.history)
            );
        }
        if let Some(path) = &args.html {
            let _ = writeln!(out, "timeline: written to {} (open it in a browser)", path.display());
        }
    }
    Ok(if outcome.failed() { EXIT_VIOLATION } else { EXIT_CLEAN })
}

/// The most requests a stress run may make: its history is judged whole,
/// so it is kept in memory (about 10 events a request).
pub const MAX_REQUESTS: usize = 1_000_000;

fn cmd_stress(args: StressArgs, out: &mut dyn Write) -> Result<i32, String> {
    let target = StoreTarget::parse(&args.target.store, args.target.url.as_deref())?;
    if args.requests == 0 || args.requests > MAX_REQUESTS {
        return Err(format!("--requests must be between 1 and {MAX_REQUESTS}"));
    }
    let spec = StressSpec {
        seed: args.seed,
        clients: args.clients,
        requests: args.requests,
        schema: args.schema,
        ..StressSpec::default()
    };
    let report = stress(&spec, &target, args.flaw, args.variant.protocol()).map_err(|e| e.to_string())?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report).expect("json")).map_err(|e| e.to_string())?;
    } else {
        report::stress_text(&report, out).map_err(|e| e.to_string())?;
    }
    if report.interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    Ok(if report.violations.is_empty() { EXIT_CLEAN } else { EXIT_VIOLATION })
}

fn cmd_http(args: HttpArgs, out: &mut dyn Write) -> Result<i32, String> {
    let mut config = match &args.config {
        Some(path) => crate::http::config::HttpConfig::from_file(path)?,
        None => crate::http::config::HttpConfig::default(),
    };
    if let Some(t) = &args.target {
        config.target = Some(t.clone());
    }
    if let Some(p) = &args.provider_listen {
        config.provider_listen = p.clone();
    }
    let trace = match &args.trace {
        Some(path) => Some(crate::output::prepare(path, &["jsonl"], "the trace")?),
        None => None,
    };
    let spec = crate::http::HttpSpec {
        config,
        seed: args.seed,
        ops: args.requests,
        clients: args.clients,
        timeout_ms: args.timeout_ms,
        slow_ms: args.slow_ms,
        max_secs: args.max_secs,
        tag: args.tag.clone(),
    };
    let report = crate::http::run(&spec)?;
    if let Some(trace) = trace {
        let mut file =
            std::io::BufWriter::new(std::fs::File::create(trace.path()).map_err(|e| crate::output::plain(&e))?);
        crate::http::report::trace(&report, &mut file)
            .and_then(|()| file.flush())
            .map_err(|e| format!("cannot write the trace: {}", crate::output::plain(&e)))?;
        trace.keep();
    }
    let mut reproduce = format!("{} http --target {} --seed {}", program(), report.target, report.seed);
    if let Some(c) = &args.config {
        reproduce.push_str(&format!(" --config {}", c.display()));
    }
    if args.requests != 300 {
        reproduce.push_str(&format!(" --requests {}", args.requests));
    }
    if let Some(p) = &args.provider_listen {
        reproduce.push_str(&format!(" --provider-listen {p}"));
    }
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report).expect("json")).map_err(|e| e.to_string())?;
    } else {
        crate::http::report::text(&report, &reproduce, out).map_err(|e| e.to_string())?;
    }
    match report.stopped_early.as_deref() {
        Some("interrupted") => return Ok(EXIT_INTERRUPTED),
        Some(crate::http::TARGET_DOWN) => {
            return Err(format!(
                "{}: {}; the report above covers what was sent",
                report.target,
                crate::http::TARGET_DOWN
            ))
        }
        _ => {}
    }
    Ok(if report.verdict.violations.is_empty() { EXIT_CLEAN } else { EXIT_VIOLATION })
}

fn cmd_serve(args: ServeArgs, out: &mut dyn Write) -> Result<i32, String> {
    let listen = args.listen.parse().map_err(|_| format!("--listen {:?} is not an IP:port", args.listen))?;
    let target = StoreTarget::parse(&args.store, args.url.as_deref())?;
    let spec = crate::serve::ServeSpec {
        listen,
        nodes: args.nodes,
        lease_ms: args.lease_ms,
        store_delay_ms: args.store_delay_ms,
        provider: args.provider.clone(),
        max_secs: args.max_secs,
        ..crate::serve::ServeSpec::default()
    };
    crate::serve::serve(&spec, &target, args.variant.protocol(), out)?;
    Ok(EXIT_CLEAN)
}

fn cmd_check_store(args: CheckStoreArgs, out: &mut dyn Write) -> Result<i32, String> {
    use idemsim_store::conformance::Conformance;
    let target = StoreTarget::parse(&args.target.store, args.target.url.as_deref())?;
    if args.cases == 0 || args.cases > 100_000 {
        return Err("--cases must be between 1 and 100000".into());
    }
    if args.requests == 0 || args.requests > MAX_REQUESTS {
        return Err(format!("--requests must be between 1 and {MAX_REQUESTS}"));
    }
    let _ = writeln!(out, "idemsim check-store: store {}", target.name());
    let conformance = Conformance::new()
        .cases(args.cases)
        .seed(args.seed)
        .check(|| async { target.open("idemsim_check", 1, None).await.map(|(store, _)| store) });
    let conforms = match &conformance {
        Ok(verdict) => {
            let s = &verdict.stats;
            let _ = writeln!(
                out,
                "  conformance  PASS  {} cases, {} operations (seed {})",
                verdict.cases, s.ops, verdict.seed
            );
            true
        }
        Err(f) if f.minimal.is_empty() => return Err(f.reason.clone()),
        Err(f) => {
            let _ = writeln!(out, "  conformance  FAIL  {}", f.reason);
            let _ = write!(out, "{}", f.transcript);
            false
        }
    };
    let spec = StressSpec {
        seed: args.seed,
        clients: args.clients,
        requests: args.requests,
        schema: "idemsim_check".into(),
        ..StressSpec::default()
    };
    let report = stress(&spec, &target, None, idemsim_sim::Variant::Correct.protocol()).map_err(|e| e.to_string())?;
    let mark = if report.violations.is_empty() { "PASS" } else { "FAIL" };
    let _ = writeln!(
        out,
        "  stress       {mark}  {} requests, {} clients, {} violations, {:.0} sends/s (seed {})",
        report.requests,
        report.clients,
        report.violations.len(),
        report.requests_per_sec,
        report.seed
    );
    for v in report.violations.iter().take(5) {
        let _ = writeln!(out, "    {v}");
    }
    let pass = conforms && report.violations.is_empty();
    let _ = writeln!(out, "verdict: {}", if pass { "PASS" } else { "FAIL" });
    Ok(if pass { EXIT_CLEAN } else { EXIT_VIOLATION })
}

fn cmd_bench(args: BenchArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    if args.seeds == 0 || args.sweeps == 0 || args.seeds_max == 0 || args.scaling_seeds == 0 {
        return Err("--seeds, --sweeps, --seeds-max and --scaling-seeds must be positive".into());
    }
    let stress_target = match args.stress_store.as_str() {
        "none" => None,
        name @ ("pg" | "mysql" | "redis") => Some(StoreTarget::parse(name, None)?),
        other => return Err(format!("--stress-store takes pg, mysql, redis or none, not '{other}'")),
    };
    let out_path = args.out.as_deref().map(|p| crate::output::prepare(p, &["json"], "the bench report")).transpose()?;
    let spec = crate::bench::BenchSpec {
        seeds: args.seeds,
        sweeps: args.sweeps,
        seeds_max: args.seeds_max,
        stress_target,
        scaling_seeds: args.scaling_seeds,
        instruction_seeds: args.instruction_seeds,
        repeats: args.repeats,
    };
    let quiet = args.json;
    let say = |line: &str| {
        if !quiet {
            eprintln!("bench: {line}");
        }
    };
    let report = crate::bench::bench(&spec, &say)?;
    let json = serde_json::to_string_pretty(&report).expect("json");
    let _ = err.flush();
    let written = if args.json { writeln!(out, "{json}") } else { report::bench_text(&report, out) };
    written.map_err(|e| e.to_string())?;
    if let Some(output) = out_path {
        let path = output.path();
        std::fs::write(path, format!("{json}\n")).map_err(|e| {
            format!("cannot write the bench report to {}: {}", path.display(), crate::output::plain(&e))
        })?;
        output.keep();
    }
    if report.interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    let failed = report.targets.iter().any(|t| !t.pass);
    Ok(if args.strict && failed { EXIT_VIOLATION } else { EXIT_CLEAN })
}

fn cmd_list(json: bool, out: &mut dyn Write) -> Result<i32, String> {
    let all = catalogue::all();
    let written = if json {
        let list: Vec<serde_json::Value> = all
            .iter()
            .map(|s| {
                let variants: serde_json::Map<String, serde_json::Value> =
                    s.expect.iter().map(|(v, e)| (v.clone(), e.to_string().into())).collect();
                serde_json::json!({ "name": s.name, "lesson": s.lesson, "variants": variants })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&list).expect("json"))
    } else {
        all.iter().try_for_each(|s| {
            let first = s.lesson.split(". ").next().unwrap_or(&s.lesson);
            writeln!(out, "{:<24} {first}.", s.name)
        })
    };
    written.map_err(|e| e.to_string())?;
    Ok(EXIT_CLEAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_printed_as_the_user_ran_idemsim() {
        assert_eq!(program_of("idemsim"), "idemsim");
        assert_eq!(program_of("target/release/idemsim"), "cargo run --release --bin idemsim --");
        assert_eq!(program_of("/w/x/target/debug/idemsim"), "cargo run --bin idemsim --");
        assert_eq!(program_of("/opt/bin/idemsim"), "/opt/bin/idemsim");
    }

    #[test]
    fn seed_ranges_parse_or_explain() {
        assert_eq!(parse_seeds("0..2000").unwrap(), 0..2000);
        for bad in ["5..5", "9..1", "a..b", "12", "..3", "-1..4"] {
            assert!(parse_seeds(bad).unwrap_err().contains("A..B"), "{bad}");
        }
    }
}
