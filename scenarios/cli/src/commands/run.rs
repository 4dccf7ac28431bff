//! `idemsim run`: sweep seeds of a scenario, report violations and coverage,
//! and shrink the first failing seed if asked.

use crate::args::{exit_code, parse_shard, target_scenario, variant_of, OneLine, ScenarioArgs, Shard};
use crate::progress::Progress;
use crate::{EXIT_CLEAN, EXIT_INTERRUPTED, EXIT_VIOLATION};
use idemsim::sweep::parse_seeds;
use idemsim::sweep::{sweep, SweepReport, SweepSpec};
use std::io::Write;
use std::ops::Range;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    target: ScenarioArgs,
    /// Seeds to sweep, as A..B (B excluded).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_seeds, conflicts_with = "seed", default_value = "0..1000")]
    seeds: Range<u64>,
    /// One seed (a sweep of seed..seed+1; `replay` runs any seed).
    #[arg(long, value_parser = parse_one_seed)]
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

pub fn exec(args: Args, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    let scenario = target_scenario(&args.target)?;
    let variant = variant_of(&args.target, &scenario)?;
    let seeds = args.seed.map_or(args.seeds.clone(), |s| s..s + 1);
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if jobs == 0 || jobs > 1024 {
        return Err("--jobs must be between 1 and 1024".into());
    }
    let shard = match args.shard {
        Some(Shard::Env) => Some(idemsim::shard::from_env().line()?),
        Some(Shard::Given(k, n)) => Some((k, n)),
        None => None,
    };
    let shrink_out = match (args.shrink, &args.shrink_out) {
        (true, Some(path)) => Some(idemsim::output::prepare(path, &["json", "toml"], "the shrunk scenario").line()?),
        _ => None,
    };
    let subject = crate::args::subject_of(&args.target, &scenario)?;
    let mut spec = SweepSpec {
        config: scenario.config_for(&variant).line()?,
        subject: subject.clone(),
        seeds: seeds.clone(),
        jobs,
        check_determinism: args.check_determinism,
        record_hashes: false,
        shard,
    };
    let total = spec.seed_count();
    spec.record_hashes = args.json && total <= 100_000;
    let progress = Progress::new(total, !args.json);
    let result = sweep(&spec, &|done| progress.tick(done));
    progress.finish();
    let report = result.map_err(|e| e.to_string())?;
    let ctx = idemsim::report::Context {
        scenario: &scenario,
        variant: &variant,
        subject: &subject,
        seeds,
        jobs,
        shard,
        file: args.target.file.as_deref(),
        all: false,
    };
    let written = match args.json {
        true => idemsim::report::sweep_json(&ctx, &report, out),
        false => idemsim::report::sweep_text(&ctx, &report, out),
    };
    if let Err(e) = written.and_then(|()| out.flush()) {
        // The report is lost, not what it found: the first failure's
        // reproduce line goes to stderr, and a violation still exits 1.
        let why = format!("cannot write the report to stdout ({})", idemsim::output::plain(&e));
        let Some(first) = report.failures.first() else { return Err(why) };
        let _ = writeln!(
            err,
            "idemsim: {why}; {} of {} seeds failed; reproduce: {}",
            report.seeds_failed,
            report.seeds_run,
            ctx.replay_command(first.seed)
        );
        return Ok(exit_code(&report));
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
        Some(expect) => judge_expect(expect, &scenario.sometimes, &report, said),
        None => exit_code(&report),
    };
    if let (true, Some(first)) = (args.shrink, report.failures.first()) {
        let path = shrink_out.as_ref().map_or_else(
            || super::shrink::default_shrink_path(&scenario.name, &variant, first.seed),
            |o| o.path().to_path_buf(),
        );
        let spec = idemsim::shrink::ShrinkSpec {
            scenario: &scenario,
            variant: &variant,
            subject: subject.clone(),
            seed: first.seed,
            runs_max: 3000,
            property: scenario.expected_property(&variant),
        };
        // With --json, stdout is one JSON document: the shrink's account
        // goes to stderr.
        let told: &mut dyn Write = if args.json { &mut *err } else { &mut *out };
        let _ = writeln!(told, "\nshrinking seed {}:", first.seed);
        // The sweep's verdict stands whether or not the shrink works.
        match super::shrink::shrink_and_write(&spec, &path, false, told) {
            Ok(()) => shrink_out.map_or((), idemsim::output::Output::keep),
            Err(why) => {
                let _ = writeln!(told, "  could not shrink: {why}");
            }
        }
    }
    Ok(code)
}

/// The exit code of a sweep of a scenario file that says what it expects:
/// 0 when the verdict is the expected one, 1 (with a line saying why) when
/// it is not.
fn judge_expect(expect: idemsim::Expect, sometimes: &[String], report: &SweepReport, out: &mut dyn Write) -> i32 {
    let broken: Vec<_> = report.violations_by_property.keys().copied().collect();
    let (met, why) = match expect {
        idemsim::Expect::Clean => {
            // A clean run that never showed the interleavings the file
            // exists for passed vacuously: that is not the verdict it asks.
            let never: Vec<&str> = sometimes
                .iter()
                .filter(|name| report.coverage_seeds.get(name.as_str()).copied().unwrap_or(0) == 0)
                .map(String::as_str)
                .collect();
            match never.is_empty() {
                true => (report.seeds_failed == 0, "the file expects a clean run".to_string()),
                false => (
                    false,
                    format!("the file expects a clean run that shows {}, which never happened", never.join(", ")),
                ),
            }
        }
        idemsim::Expect::Violates(p) => {
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

/// A seed a sweep can hold: a sweep is the half-open range `seed..seed+1`,
/// so the largest `u64` is refused with the command that does run it.
fn parse_one_seed(s: &str) -> Result<u64, String> {
    let seed: u64 = s.parse().map_err(|e| format!("'{s}' is not a seed (a whole number from 0): {e}"))?;
    match seed {
        u64::MAX => Err(format!("a sweep runs seeds below {}; `idemsim replay --seed {seed}` runs this one", u64::MAX)),
        seed => Ok(seed),
    }
}
