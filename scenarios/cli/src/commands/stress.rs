//! `idemsim stress`: the protocol against a real store, with real tasks,
//! connections and concurrency.

use crate::args::{parse_flaw, parse_variant, OneLine, StoreArgs, MAX_REQUESTS};
use crate::progress::Progress;
use crate::{EXIT_CLEAN, EXIT_INTERRUPTED, EXIT_VIOLATION};
use idemsim::stress::{stress, StressSpec};
use idemsim::target::StoreTarget;
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct Args {
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
    /// Write the recorded history as JSON Lines to this file (the events
    /// a violation cites as `#N` are its lines after the header).
    #[arg(long)]
    trace: Option<std::path::PathBuf>,
}

pub fn exec(args: Args, out: &mut dyn Write) -> Result<i32, String> {
    let target = StoreTarget::parse(&args.target.store, args.target.url.as_deref()).line()?;
    if args.requests == 0 || args.requests > MAX_REQUESTS {
        return Err(format!("--requests must be between 1 and {MAX_REQUESTS}"));
    }
    let trace_out =
        args.trace.as_deref().map(|p| idemsim::output::prepare(p, &["jsonl"], "the trace")).transpose().line()?;
    let progress = std::sync::Arc::new(Progress::of(args.requests as u64, !args.json, ("stressed", "requests")));
    let ticks = progress.clone();
    let spec = StressSpec {
        seed: args.seed,
        clients: args.clients,
        requests: args.requests,
        schema: args.schema,
        progress: Some(std::sync::Arc::new(move |done| ticks.tick(done as u64))),
        ..StressSpec::default()
    };
    let result = stress(&spec, &target, args.flaw, args.variant.protocol());
    progress.finish();
    let report = result.map_err(|e| e.to_string())?;
    if let Some(output) = trace_out {
        let label = format!("stress of {}", report.store);
        let text = idemsim_sim::to_jsonl(args.seed, &label, args.variant.name(), &report.history);
        let path = output.path();
        std::fs::write(path, text).map_err(|e| format!("cannot write the trace to {}: {e}", path.display()))?;
        output.keep();
    }
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report).expect("json")).map_err(|e| e.to_string())?;
    } else {
        idemsim::report::stress_text(&report, out).map_err(|e| e.to_string())?;
        if let Some(path) = &args.trace {
            let (n, path) = (report.history.entries.len(), path.display());
            let _ = writeln!(out, "trace: {n} events written to {path}; #N is event N, from 0, after its header line");
        }
    }
    if report.interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    Ok(if report.violations.is_empty() { EXIT_CLEAN } else { EXIT_VIOLATION })
}
