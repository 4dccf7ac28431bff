//! `idemsim replay`: re-run one seed and print its timeline and story, or
//! write its trace or an HTML timeline.

use crate::args::{target_scenario, variant_of, OneLine, ScenarioArgs};
use crate::{EXIT_CLEAN, EXIT_VIOLATION};
use idemsim::sim::{run_seed, to_jsonl, trace_hash};
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    target: ScenarioArgs,
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

pub fn exec(args: Args, out: &mut dyn Write) -> Result<i32, String> {
    let scenario = target_scenario(&args.target)?;
    let variant = variant_of(&args.target, &scenario)?;
    let seed = args
        .seed
        .or(scenario.reproduces.as_ref().map(|r| r.seed))
        .ok_or_else(|| "--seed is required (the scenario names no run to reproduce)".to_string())?;
    let config = scenario.config_for(&variant).line()?;
    let trace_out =
        args.trace.as_deref().map(|p| idemsim::output::prepare(p, &["jsonl"], "the trace")).transpose().line()?;
    let html_out = args
        .html
        .as_deref()
        .map(|p| idemsim::output::prepare(p, &["html", "htm"], "the timeline"))
        .transpose()
        .line()?;
    let subject = crate::args::subject_of(&args.target, &scenario)?;
    let outcome = run_seed(&config, &subject, seed).map_err(|e| e.to_string())?;
    let ctx = idemsim::report::Context {
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
        idemsim::report::replay_json(&ctx, &outcome, out).map_err(|e| e.to_string())?;
    } else {
        idemsim::report::replay_text(&ctx, &outcome, out).map_err(|e| e.to_string())?;
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
