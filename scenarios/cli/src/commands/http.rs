//! `idemsim http`: attack a running HTTP service's Idempotency-Key
//! behaviour from outside.

use crate::args::OneLine;
use crate::{EXIT_CLEAN, EXIT_INTERRUPTED, EXIT_VIOLATION};
use idemsim::program::{program, quoted};
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct Args {
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
    /// A try without an answer after this is lost [default: 3000, or
    /// --slow-ms + 2000 with --lease-ms].
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// The service's longest lease: judges progress, and sets the defaults
    /// of --slow-ms, --deadline-ms and --max-secs to reach it.
    #[arg(long)]
    lease_ms: Option<u64>,
    /// The slow provider's delay, longer than the service's lease
    /// [default: 1200, or 1.5 x --lease-ms].
    #[arg(long)]
    slow_ms: Option<u64>,
    /// The run stops starting work after this [default: 120, or the
    /// deadline and a minute].
    #[arg(long)]
    max_secs: Option<u64>,
    /// A client gives up on an operation this long after its first send;
    /// longer than the service's lease, at most --max-secs [default: 30000,
    /// or --slow-ms + 3 x --lease-ms + 2000].
    #[arg(long)]
    deadline_ms: Option<u64>,
    /// Retry only 502, 503 and 504, not every 5xx.
    #[arg(long)]
    no_retry_5xx: bool,
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

pub fn exec(args: Args, out: &mut dyn Write) -> Result<i32, String> {
    let mut config = match &args.config {
        Some(path) => idemsim::http::config::HttpConfig::from_file(path).line()?,
        None => idemsim::http::config::HttpConfig::default(),
    };
    if let Some(t) = &args.target {
        config.target = Some(t.clone());
    }
    if let Some(p) = &args.provider_listen {
        config.provider_listen = p.clone();
    }
    let trace = match &args.trace {
        Some(path) => Some(idemsim::output::prepare(path, &["jsonl"], "the trace").line()?),
        None => None,
    };
    let lease_ms = args.lease_ms.or(config.lease_ms);
    let timings = match lease_ms {
        Some(lease_ms) => idemsim::http::HttpSpec::for_lease(lease_ms, args.slow_ms),
        None => idemsim::http::HttpSpec::default(),
    };
    let spec = idemsim::http::HttpSpec {
        config,
        seed: args.seed,
        ops: args.requests,
        clients: args.clients,
        timeout_ms: args.timeout_ms.unwrap_or(timings.timeout_ms),
        slow_ms: args.slow_ms.unwrap_or(timings.slow_ms),
        max_secs: args.max_secs.unwrap_or(timings.max_secs),
        deadline_ms: args.deadline_ms.unwrap_or(timings.deadline_ms),
        retry_5xx: !args.no_retry_5xx,
        lease_ms,
        tag: args.tag.clone(),
    };
    let report = idemsim::http::run(&spec).line()?;
    if let Some(trace) = trace {
        let mut file =
            std::io::BufWriter::new(std::fs::File::create(trace.path()).map_err(|e| idemsim::output::plain(&e))?);
        idemsim::http::report::trace(&report, &mut file)
            .and_then(|()| file.flush())
            .map_err(|e| format!("cannot write the trace: {}", idemsim::output::plain(&e)))?;
        trace.keep();
    }
    let reproduce = reproduce_line(&args, &spec, &report);
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report).expect("json")).map_err(|e| e.to_string())?;
    } else {
        idemsim::http::report::text(&report, &reproduce, out).map_err(|e| e.to_string())?;
    }
    match report.stopped_early.as_deref() {
        Some("interrupted") => return Ok(EXIT_INTERRUPTED),
        Some(idemsim::http::TARGET_DOWN) => {
            return Err(format!(
                "{}: {}; the report above covers what was sent",
                report.target,
                idemsim::http::TARGET_DOWN
            ))
        }
        _ => {}
    }
    Ok(if report.verdict.violations.is_empty() { EXIT_CLEAN } else { EXIT_VIOLATION })
}

/// The command that runs the same plan again: every flag that shapes it,
/// after the program as the user ran it.
fn reproduce_line(args: &Args, spec: &idemsim::http::HttpSpec, report: &idemsim::http::HttpReport) -> String {
    let mut words = vec![program().to_string(), "http".into(), "--target".into(), quoted(&report.target).into()];
    if let Some(config) = &args.config {
        words.extend(["--config".into(), quoted(&config.to_string_lossy()).into_owned()]);
    }
    let numbers = [
        ("--seed", report.seed),
        ("--requests", args.requests as u64),
        ("--clients", args.clients as u64),
        ("--timeout-ms", spec.timeout_ms),
        ("--slow-ms", spec.slow_ms),
        ("--max-secs", spec.max_secs),
        ("--deadline-ms", spec.deadline_ms),
    ];
    for (flag, value) in numbers {
        words.extend([flag.to_string(), value.to_string()]);
    }
    if let Some(lease_ms) = spec.lease_ms {
        words.extend(["--lease-ms".into(), lease_ms.to_string()]);
    }
    if let Some(listen) = &args.provider_listen {
        words.extend(["--provider-listen".into(), quoted(listen).into_owned()]);
    }
    if args.no_retry_5xx {
        words.push("--no-retry-5xx".into());
    }
    words.join(" ")
}
