//! `idemsim explore`: every interleaving of a small configuration (or a
//! randomized PCT sample of a bigger one), checked by the simulator's
//! checkers; counts, the shortest counterexample, and a schedule that
//! replays it exactly.

use crate::args::{parse_store, parse_variant, OneLine};
use crate::{EXIT_CLEAN, EXIT_INTERRUPTED, EXIT_VIOLATION};
use idemsim::sim::explore::{catalogue, Execution, ExploreConfig, ExploreReport, Explorer, Schedule};
use idemsim::sim::{StoreKind, Subject, Variant};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A configuration of the catalogue (`--list` shows them); without it
    /// and `--config-file`, every one.
    #[arg(long, conflicts_with = "config_file")]
    config: Option<String>,
    /// A configuration of one's own, as TOML (the fields of `--list --verbose`).
    #[arg(long)]
    config_file: Option<PathBuf>,
    /// The protocol: a variant of the catalogue (default: correct).
    #[arg(long, value_parser = parse_variant)]
    variant: Option<Variant>,
    /// Every variant of the catalogue over every configuration: which
    /// configuration catches which variant.
    #[arg(long, conflicts_with_all = ["variant", "config", "config_file", "replay"])]
    all_variants: bool,
    /// The store: mem or sqlite.
    #[arg(long, value_parser = parse_store, default_value = "mem")]
    store: StoreKind,
    /// Randomized executions under PCT instead of every one.
    #[arg(long)]
    pct: bool,
    /// PCT: executions to run.
    #[arg(long, default_value_t = 1_000, requires = "pct")]
    runs: u64,
    /// PCT: the bug depth (priority change points + 1).
    #[arg(long, default_value_t = 3, requires = "pct")]
    depth: u32,
    /// PCT: the seed of the priorities and change points.
    #[arg(long, default_value_t = 0, requires = "pct")]
    seed: u64,
    /// Exhaustive: stop after this many executions (the report then says
    /// the space was not exhausted).
    #[arg(long, default_value_t = 2_000_000)]
    executions_max: u64,
    /// Replay one execution of `--config` (or `--config-file`) from its
    /// schedule, as a report prints it ("1.0.2").
    #[arg(long, conflicts_with = "pct")]
    replay: Option<String>,
    /// Write the shortest counterexample (or the replayed execution) as
    /// an HTML timeline.
    #[arg(long)]
    html: Option<PathBuf>,
    /// List the catalogue's configurations.
    #[arg(long)]
    list: bool,
}

pub fn exec(args: Args, out: &mut dyn Write) -> Result<i32, String> {
    if args.list {
        return list(out);
    }
    if args.executions_max == 0 || (args.pct && (args.runs == 0 || args.depth == 0 || args.depth > 10)) {
        return Err("--executions-max and --runs must be positive, --depth between 1 and 10".into());
    }
    if args.all_variants {
        return all_variants(&args, out);
    }
    let configs = configs(&args)?;
    let subject = Subject::from(args.store);
    if let Some(schedule) = &args.replay {
        let [config] = configs.as_slice() else { return Err("--replay needs --config or --config-file".into()) };
        let schedule: Schedule = schedule.parse().line()?;
        let explorer = Explorer::new(config, &subject).map_err(|e| e.to_string())?;
        let execution = explorer.replay(&schedule).map_err(|e| e.to_string())?;
        show(&execution, out);
        write_html(&args, &format!("{} {}", config.name, schedule), &execution)?;
        return Ok(if execution.failed() { EXIT_VIOLATION } else { EXIT_CLEAN });
    }
    let detailed = configs.len() == 1;
    let mut code = EXIT_CLEAN;
    for config in &configs {
        let explorer = Explorer::new(config, &subject).map_err(|e| e.to_string())?;
        let report = explore(&args, &explorer)?;
        match detailed {
            true => detail(&args, &report, out)?,
            false => {
                let _ = writeln!(out, "{}", summary(&args, &report));
            }
        }
        if report.stopped {
            return Ok(EXIT_INTERRUPTED);
        }
        if !report.clean() {
            code = EXIT_VIOLATION;
        }
    }
    Ok(code)
}

fn explore(args: &Args, explorer: &Explorer) -> Result<ExploreReport, String> {
    let stop = &idemsim::sweep::stopped;
    let report = match args.pct {
        true => explorer.pct(args.runs, args.depth, args.seed, stop),
        false => explorer.exhaustive(args.executions_max, stop),
    };
    report.map_err(|e| e.to_string())
}

/// The configurations asked for, with the variant's steps.
fn configs(args: &Args) -> Result<Vec<ExploreConfig>, String> {
    let mut configs = match (&args.config, &args.config_file) {
        (Some(name), _) => vec![catalogue::config(name).ok_or_else(|| {
            format!("unknown configuration '{name}'; expected one of: {}", catalogue::NAMES.join(", "))
        })?],
        (None, Some(path)) => vec![read_config(path)?],
        (None, None) => catalogue::configs(),
    };
    if let Some(variant) = args.variant {
        for c in &mut configs {
            c.steps = variant.steps();
        }
    }
    Ok(configs)
}

fn read_config(path: &Path) -> Result<ExploreConfig, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {}", path.display(), idemsim::output::plain(&e)))?;
    let mut config: ExploreConfig = toml::from_str(&text).map_err(|e| {
        let first = e.to_string().lines().next().unwrap_or_default().to_string();
        format!("{}: {first}", path.display())
    })?;
    if config.name == ExploreConfig::default().name {
        config.name = path.file_stem().map_or("custom".into(), |s| s.to_string_lossy().into_owned());
    }
    config.validate().map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(config)
}

/// The command that replays `schedule` of `report`'s configuration.
fn reproduce(args: &Args, config: &str, schedule: &Schedule) -> String {
    let mut line = String::from("idemsim explore");
    match &args.config_file {
        Some(path) => line += &format!(" --config-file {}", path.display()),
        None => line += &format!(" --config {config}"),
    }
    if let Some(v) = args.variant {
        line += &format!(" --variant {}", v.name());
    }
    if args.store != StoreKind::Mem {
        line += &format!(" --store {}", args.store.name());
    }
    line + &format!(" --replay {schedule}")
}

/// One line: "N of M interleavings break P; the shortest has K steps".
fn summary(args: &Args, report: &ExploreReport) -> String {
    let space = match (report.exhausted, args.pct) {
        (_, true) => format!("{} randomized executions", report.executions),
        (true, false) if report.executions == 1 => "the one interleaving".to_string(),
        (true, false) => format!("all {} interleavings", report.executions),
        (false, false) => format!("{} interleavings (NOT exhausted)", report.executions),
    };
    let Some(c) = &report.shortest else {
        return format!("{:20} {space} checked, none breaks a property", report.config);
    };
    let broken: Vec<String> = report.broken.iter().map(|(p, n)| format!("{n} break {p}")).collect();
    let what = c.property.map_or("runs out of steps".into(), |p| format!("breaks {p}"));
    format!(
        "{:20} of {space}, {}; the shortest {what} in {} steps: {}",
        report.config,
        broken.join(", "),
        c.steps,
        reproduce(args, &report.config, &c.schedule)
    )
}

fn detail(args: &Args, report: &ExploreReport, out: &mut dyn Write) -> Result<(), String> {
    let _ = write!(out, "{report}");
    let Some(c) = &report.shortest else { return Ok(()) };
    let _ = writeln!(out, "\nthe shortest counterexample:");
    show(&c.execution, out);
    let _ = writeln!(out, "reproduce: {}", reproduce(args, &report.config, &c.schedule));
    write_html(args, &format!("{} {}", report.config, c.schedule), &c.execution)
}

/// An execution's steps where something could have gone otherwise, its
/// timeline, and the story of each property it breaks.
fn show(execution: &Execution, out: &mut dyn Write) {
    let _ = writeln!(out, "steps ({} in all; those with a choice):", execution.steps.len());
    for (i, step) in execution.steps.iter().enumerate().filter(|(_, s)| s.choices > 1) {
        let fault = step.fault.map_or(String::new(), |f| format!("  <- {}", f.name()));
        let _ = writeln!(out, "  {:>3} {:>9} {} {}{fault}", i + 1, step.at.to_string(), step.task, step.what);
    }
    let _ = writeln!(out, "timeline:\n{}", idemsim::sim::timeline::render(&execution.history));
    for v in &execution.violations {
        let _ = writeln!(out, "VIOLATION {}: {}", v.property, v.explanation);
        let _ = writeln!(out, "{}", idemsim::sim::story::story(&execution.history, v));
    }
    if execution.livelock {
        let _ = writeln!(out, "LIVELOCK: the execution ran out of steps");
    }
}

fn write_html(args: &Args, title: &str, execution: &Execution) -> Result<(), String> {
    let Some(path) = &args.html else { return Ok(()) };
    let output = idemsim::output::prepare(path, &["html", "htm"], "the timeline").line()?;
    let page = idemsim::sim::html::render(title, &execution.history, &execution.violations);
    std::fs::write(path, page)
        .map_err(|e| format!("cannot write the timeline to {}: {}", path.display(), idemsim::output::plain(&e)))?;
    output.keep();
    Ok(())
}

fn list(out: &mut dyn Write) -> Result<i32, String> {
    for config in catalogue::configs() {
        let faults: Vec<&str> = config.faults.iter().map(|f| f.name()).collect();
        let faults = match faults.is_empty() {
            true => "no faults".to_string(),
            false => format!("up to {} of {}", config.fault_budget, faults.join(", ")),
        };
        let _ = writeln!(out, "{:20} {} ({faults})", config.name, config.description);
    }
    Ok(EXIT_CLEAN)
}

/// Every variant over every configuration.
fn all_variants(args: &Args, out: &mut dyn Write) -> Result<i32, String> {
    let subject = Subject::from(args.store);
    let mut missed = Vec::new();
    for variant in Variant::ALL {
        let mut caught = Vec::new();
        for mut config in catalogue::configs() {
            config.steps = variant.steps();
            let explorer = Explorer::new(&config, &subject).map_err(|e| e.to_string())?;
            let report = explore(args, &explorer)?;
            if report.stopped {
                return Ok(EXIT_INTERRUPTED);
            }
            if let Some(c) = &report.shortest {
                let p = c.property.map_or("livelock".into(), |p| p.name().to_string());
                caught.push(format!(
                    "{} ({} of {}, {p} in {} steps)",
                    config.name, report.failing, report.executions, c.steps
                ));
            }
        }
        let verdict = match (variant == Variant::Correct, caught.is_empty()) {
            (true, true) => "clean in every configuration".to_string(),
            (_, true) => {
                missed.push(variant.name());
                "not caught by any configuration".to_string()
            }
            (_, false) => format!("caught by {}", caught.join(", ")),
        };
        let _ = writeln!(out, "{:32} {verdict}", variant.name());
    }
    let _ =
        writeln!(out, "{} of {} broken variants caught", Variant::ALL.len() - 1 - missed.len(), Variant::ALL.len() - 1);
    Ok(EXIT_CLEAN)
}
