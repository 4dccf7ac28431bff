//! `idemsim bench`: simulation speed and time to first failure, with
//! targets marked PASS or FAIL.

use crate::args::OneLine;
use crate::{EXIT_CLEAN, EXIT_INTERRUPTED, EXIT_VIOLATION};
use idemsim::target::StoreTarget;
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct Args {
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
    /// Explore versus random sweeps: at most this many executions per
    /// small configuration (0 skips the table).
    #[arg(long, default_value_t = 300_000)]
    explore_max: u64,
}

pub fn exec(args: Args, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    if args.seeds == 0 || args.sweeps == 0 || args.seeds_max == 0 || args.scaling_seeds == 0 {
        return Err("--seeds, --sweeps, --seeds-max and --scaling-seeds must be positive".into());
    }
    let server = idemsim::target::StoreName::from_name(&args.stress_store).filter(|s| s.is_server());
    let stress_target = match (args.stress_store.as_str(), server) {
        ("none", _) => None,
        (name, Some(_)) => Some(StoreTarget::parse(name, None).line()?),
        (other, None) => return Err(format!("--stress-store takes pg, mysql, redis or none, not '{other}'")),
    };
    let out_path =
        args.out.as_deref().map(|p| idemsim::output::prepare(p, &["json"], "the bench report")).transpose().line()?;
    let spec = crate::benchmark::BenchSpec {
        seeds: args.seeds,
        sweeps: args.sweeps,
        seeds_max: args.seeds_max,
        stress_target,
        scaling_seeds: args.scaling_seeds,
        instruction_seeds: args.instruction_seeds,
        repeats: args.repeats,
        explore_max: args.explore_max,
    };
    let quiet = args.json;
    let say = |line: &str| {
        if !quiet {
            crate::note(format_args!("bench: {line}"));
        }
    };
    let report = crate::benchmark::bench(&spec, &say)?;
    let json = serde_json::to_string_pretty(&report).expect("json");
    let _ = err.flush();
    let written = if args.json { writeln!(out, "{json}") } else { crate::benchmark::text(&report, out) };
    written.map_err(|e| e.to_string())?;
    if let Some(output) = out_path {
        let path = output.path();
        std::fs::write(path, format!("{json}\n")).map_err(|e| {
            format!("cannot write the bench report to {}: {}", path.display(), idemsim::output::plain(&e))
        })?;
        output.keep();
    }
    if report.interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    let failed = report.targets.iter().any(|t| !t.pass);
    Ok(if args.strict && failed { EXIT_VIOLATION } else { EXIT_CLEAN })
}
