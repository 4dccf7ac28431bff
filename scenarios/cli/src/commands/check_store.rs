//! `idemsim check-store`: every check idemsim has for a store, one verdict
//! per part (conformance kit, linearizability, simulation sweep, stress),
//! each with the line that reruns it.

use crate::args::{parse_store, OneLine, StoreArgs, MAX_REQUESTS};
use crate::{EXIT_CLEAN, EXIT_INTERRUPTED, EXIT_VIOLATION};
use idemsim::store_check::{Outcome, Part, PartVerdict, StoreCheck, StoreCheckReport};
use idemsim::stress::{stress, MAX_CLIENTS};
use idemsim::sweep::parse_seeds;
use idemsim::target::StoreTarget;
use idemsim::Simulation;
use std::io::Write;
use std::ops::Range;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    target: StoreArgs,
    /// Run only this part (repeatable): conformance, linearizability,
    /// simulation or stress. Default: all, in that order.
    #[arg(long = "part", value_parser = parse_part)]
    parts: Vec<Part>,
    /// Seed of the conformance kit, the concurrent callers and the stress run.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Conformance cases.
    #[arg(long, default_value_t = 256)]
    cases: u32,
    /// Concurrent operations for the linearizability check.
    #[arg(long, default_value_t = 2000)]
    operations: usize,
    /// Concurrent callers for the linearizability check.
    #[arg(long, default_value_t = 8)]
    callers: usize,
    /// Scenario of the simulation sweep (mem and sqlite).
    #[arg(long, default_value = "default")]
    scenario: String,
    /// Seeds of the simulation sweep, as A..B.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_seeds, default_value = "0..200")]
    seeds: Range<u64>,
    /// Stress requests.
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// Stress concurrency.
    #[arg(long, default_value_t = 16)]
    clients: usize,
}

fn parse_part(name: &str) -> Result<Part, String> {
    let names: Vec<&str> = Part::ALL.iter().map(|p| p.name()).collect();
    Part::from_name(name).ok_or_else(|| format!("unknown part '{name}'; expected {}", names.join(", ")))
}

pub fn exec(args: Args, out: &mut dyn Write) -> Result<i32, String> {
    let target = StoreTarget::parse(&args.target.store, args.target.url.as_deref()).line()?;
    check_bounds(&args)?;
    let parts = if args.parts.is_empty() { Part::ALL.to_vec() } else { args.parts.clone() };
    let mut check = StoreCheck::new(target.name());
    check.seed(args.seed).cases(args.cases).operations(args.operations).callers(args.callers).seeds(args.seeds.clone());
    check.requests(args.requests).command(&format!("idemsim check-store --store {}", args.target.store));
    let _ = writeln!(out, "idemsim check-store: store {}", target.name());
    let mut report = StoreCheckReport { store: target.name().to_string(), parts: Vec::new() };
    for part in Part::ALL.into_iter().filter(|p| parts.contains(p)) {
        if idemsim::sweep::stopped() {
            report.parts.push(check.not_run(part, "interrupted (Ctrl-C)"));
            continue;
        }
        let verdict = run_part(part, &check, &target, &args)?;
        let setup_error = verdict.outcome == Outcome::NotRun && !idemsim::sweep::stopped();
        print_part(out, &verdict);
        if setup_error {
            // What ran before is printed; the error is the one line.
            return Err(verdict.summary);
        }
        report.parts.push(verdict);
    }
    if idemsim::sweep::stopped() {
        let found = if report.pass() { "nothing found so far" } else { "what was found is above" };
        let _ = writeln!(out, "verdict: INTERRUPTED (Ctrl-C): {found}; this is no pass");
        return Ok(EXIT_INTERRUPTED);
    }
    let _ = writeln!(out, "verdict: {}", if report.pass() { "PASS" } else { "FAIL" });
    Ok(if report.pass() { EXIT_CLEAN } else { EXIT_VIOLATION })
}

/// Bounds checked before anything runs.
fn check_bounds(args: &Args) -> Result<(), String> {
    if args.cases == 0 || args.cases > 100_000 {
        return Err("--cases must be between 1 and 100000".into());
    }
    if args.operations == 0 || args.operations > 1_000_000 {
        return Err("--operations must be between 1 and 1000000".into());
    }
    if args.callers == 0 || args.callers > 256 {
        return Err("--callers must be between 1 and 256".into());
    }
    if args.requests == 0 || args.requests > MAX_REQUESTS {
        return Err(format!("--requests must be between 1 and {MAX_REQUESTS}"));
    }
    if args.clients == 0 || args.clients > MAX_CLIENTS {
        return Err(format!("--clients must be between 1 and {MAX_CLIENTS}, not {}", args.clients));
    }
    if args.seeds.is_empty() {
        return Err("--seeds must not be empty".into());
    }
    Ok(())
}

/// Runs one part on a bundled store.
fn run_part(part: Part, check: &StoreCheck, target: &StoreTarget, args: &Args) -> Result<PartVerdict, String> {
    Ok(match part {
        Part::Conformance => {
            check.conformance(|| async { target.open("idemsim_check", 1, None).await.map(|(store, _)| store) })
        }
        Part::Linearizability => {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
            let rt = rt.map_err(|e| format!("cannot start a runtime: {e}"))?;
            let opened = rt.block_on(target.open("idemsim_check_concurrent", args.callers, None));
            match (opened, parse_store(target.name())) {
                (Err(e), _) => check.not_run(Part::Linearizability, &e.to_string()),
                // In process: the simulator's concurrent mode first.
                (Ok((store, _)), Ok(kind)) => {
                    drop(rt);
                    check.linearizability_in_process(&idemsim::sim::Subject::from(kind), store)
                }
                (Ok((store, terminator)), Err(_)) => rt.block_on(check.linearizability(store, terminator)),
            }
        }
        Part::Simulation => match parse_store(target.name()) {
            Ok(kind) => {
                let mut sim = Simulation::scenario(&args.scenario).line()?;
                sim.store_kind(kind);
                check.simulate(&sim)
            }
            Err(_) => PartVerdict {
                part,
                outcome: Outcome::NotApplicable,
                summary: "the simulator runs in-process stores (mem, sqlite, or one of your own); stress runs the protocol on this one".into(),
                detail: String::new(),
                reproduce: String::new(),
            },
        },
        Part::Stress => {
            let mut spec = check.stress_spec();
            spec.clients = args.clients;
            check.stress(stress(&spec, target, None, idemsim_sim::Variant::Correct.protocol()))
        }
    })
}

fn print_part(out: &mut dyn Write, verdict: &PartVerdict) {
    let _ = write!(out, "{verdict}");
}
