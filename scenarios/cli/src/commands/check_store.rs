//! `idemsim check-store`: the conformance kit and a stress run against a
//! store, as a verdict table.

use crate::args::{StoreArgs, MAX_REQUESTS};
use crate::{EXIT_CLEAN, EXIT_INTERRUPTED, EXIT_VIOLATION};
use idemsim::report::plural;
use idemsim::stress::{stress, StressSpec, MAX_CLIENTS};
use idemsim::target::StoreTarget;
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct Args {
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

pub fn exec(args: Args, out: &mut dyn Write) -> Result<i32, String> {
    use idemsim_store::conformance::Conformance;
    let target = StoreTarget::parse(&args.target.store, args.target.url.as_deref())?;
    if args.cases == 0 || args.cases > 100_000 {
        return Err("--cases must be between 1 and 100000".into());
    }
    if args.requests == 0 || args.requests > MAX_REQUESTS {
        return Err(format!("--requests must be between 1 and {MAX_REQUESTS}"));
    }
    // Checked before the kit runs, not after it.
    if args.clients == 0 || args.clients > MAX_CLIENTS {
        return Err(format!("--clients must be between 1 and {MAX_CLIENTS}, not {}", args.clients));
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
                "  conformance  PASS  {}, {} (seed {})",
                plural(verdict.cases, "case"),
                plural(s.ops, "operation"),
                verdict.seed
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
    if idemsim::sweep::stopped() {
        let _ = writeln!(out, "  stress       not run (interrupted)");
        let _ = writeln!(out, "verdict: INTERRUPTED (Ctrl-C): the store was not stressed, so this is no pass");
        return Ok(EXIT_INTERRUPTED);
    }
    let spec = StressSpec {
        seed: args.seed,
        clients: args.clients,
        requests: args.requests,
        schema: "idemsim_check".into(),
        ..StressSpec::default()
    };
    let report = stress(&spec, &target, None, idemsim_sim::Variant::Correct.protocol()).map_err(|e| e.to_string())?;
    let mark = match (report.interrupted, report.violations.is_empty()) {
        (true, _) => "INTERRUPTED",
        (false, true) => "PASS",
        (false, false) => "FAIL",
    };
    let planned = match report.interrupted {
        true => {
            format!("{} of {} planned", plural(report.sends as u64, "send"), plural(report.requests as u64, "request"))
        }
        false => plural(report.requests as u64, "request"),
    };
    let _ = writeln!(
        out,
        "  stress       {mark}  {planned}, {}, {}, {:.0} sends/s (seed {})",
        plural(report.clients as u64, "client"),
        plural(report.violations.len() as u64, "violation"),
        report.requests_per_sec,
        report.seed
    );
    for v in report.violations.iter().take(5) {
        let _ = writeln!(out, "    {v}");
    }
    let pass = conforms && report.violations.is_empty();
    if report.interrupted {
        let found = if pass { "nothing found so far" } else { "what was found is above" };
        let _ = writeln!(out, "verdict: INTERRUPTED (Ctrl-C): {found}; this is no pass");
        return Ok(EXIT_INTERRUPTED);
    }
    let _ = writeln!(out, "verdict: {}", if pass { "PASS" } else { "FAIL" });
    Ok(if pass { EXIT_CLEAN } else { EXIT_VIOLATION })
}
