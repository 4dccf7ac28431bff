//! `idemsim concurrent`: the simulator's concurrent mode. Many callers
//! issue store operations at once on an in-process store under madsim,
//! with replies lost, commits indeterminate and callers crashing; each
//! seed's history is judged for linearizability, and replays exactly.

use crate::args::parse_store;
use crate::args::OneLine;
use crate::{EXIT_CLEAN, EXIT_INTERRUPTED, EXIT_VIOLATION};
use idemsim::report::plural;
use idemsim::sim::concurrent::ConcurrentSim;
use idemsim::sim::{StoreKind, Subject};
use idemsim::sweep::parse_seeds;
use std::io::Write;
use std::ops::Range;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store: mem or sqlite (in-process; the servers run in
    /// `check-store`, with real parallelism).
    #[arg(long, value_parser = parse_store, default_value = "mem")]
    store: StoreKind,
    /// Seeds to run, as A..B (B excluded).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_seeds, conflicts_with = "seed", default_value = "0..100")]
    seeds: Range<u64>,
    /// One seed: its history, its verdict and its hash.
    #[arg(long)]
    seed: Option<u64>,
    /// Worker threads (default: all cores). The result does not depend on it.
    #[arg(long)]
    jobs: Option<usize>,
    /// Operations per seed.
    #[arg(long, default_value_t = 400)]
    operations: usize,
    /// Callers per seed.
    #[arg(long, default_value_t = 8)]
    callers: usize,
    /// Print every operation of a `--seed` run.
    #[arg(long, requires = "seed")]
    history: bool,
    /// Write a `--seed` run's history as an HTML page (callers as lanes,
    /// the witness marked).
    #[arg(long, requires = "seed")]
    html: Option<std::path::PathBuf>,
}

pub fn exec(args: Args, out: &mut dyn Write) -> Result<i32, String> {
    if args.operations == 0 || args.operations > 100_000 {
        return Err("--operations must be between 1 and 100000".into());
    }
    if args.callers == 0 || args.callers > 256 {
        return Err("--callers must be between 1 and 256".into());
    }
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if jobs == 0 || jobs > 1024 {
        return Err("--jobs must be between 1 and 1024".into());
    }
    let mut sim = ConcurrentSim::new();
    sim.operations(args.operations).callers(args.callers);
    let subject = Subject::from(args.store);
    let reproduce = |seed: u64| format!("idemsim concurrent --store {} --seed {seed}", args.store.name());
    if let Some(seed) = args.seed {
        let html = args
            .html
            .as_deref()
            .map(|p| idemsim::output::prepare(p, &["html", "htm"], "the history page"))
            .transpose()
            .line()?;
        let run = sim.run_seed(seed, &subject).line()?;
        if let (Some(output), Some(path)) = (html, &args.html) {
            std::fs::write(path, run.html()).map_err(|e| {
                format!("cannot write the history page to {}: {}", path.display(), idemsim::output::plain(&e))
            })?;
            output.keep();
        }
        if args.history {
            for op in &run.history {
                let _ = writeln!(out, "  {op}");
            }
        }
        let _ = writeln!(out, "{run}");
        if !run.linearizable() {
            let _ = writeln!(out, "reproduce: {}", reproduce(seed));
        }
        return Ok(if run.linearizable() { EXIT_CLEAN } else { EXIT_VIOLATION });
    }
    if args.seeds.is_empty() {
        return Err("--seeds must not be empty".into());
    }
    let sweep = sim.sweep_until(args.seeds.clone(), jobs, &subject, &idemsim::sweep::stopped);
    if let Some((seed, error)) = sweep.errors.first() {
        return Err(format!("seed {seed}: {error}"));
    }
    let seeds = sweep.hashes.len() as u64;
    let interrupted = seeds < args.seeds.end - args.seeds.start;
    let _ = writeln!(
        out,
        "idemsim concurrent: store {}, {}, {} of {} callers each ({} answers lost); histories {}",
        args.store.name(),
        plural(seeds, "seed"),
        plural(args.operations as u64, "operation"),
        args.callers,
        sweep.lost,
        sweep.hash()
    );
    if let Some(first) = sweep.failures.first() {
        let _ = writeln!(out, "{first}");
        let failed: Vec<String> = sweep.failures.iter().map(|f| f.seed.to_string()).collect();
        let _ =
            writeln!(out, "NOT LINEARIZABLE in {}: seeds {}", plural(failed.len() as u64, "seed"), failed.join(", "));
        let _ = writeln!(out, "reproduce: {}", reproduce(first.seed));
        return Ok(EXIT_VIOLATION);
    }
    if interrupted {
        let _ = writeln!(
            out,
            "INTERRUPTED (Ctrl-C) after {}: nothing found so far; this is no pass",
            plural(seeds, "seed")
        );
        return Ok(EXIT_INTERRUPTED);
    }
    if !sweep.unknown.is_empty() {
        let _ = writeln!(out, "UNKNOWN: the search ran out of budget on seeds {:?}; this is no pass", sweep.unknown);
        return Ok(EXIT_VIOLATION);
    }
    let _ = writeln!(out, "LINEARIZABLE: every history of {} is explained by some order", plural(seeds, "seed"));
    Ok(EXIT_CLEAN)
}
