//! `idemsim http`: attack a running HTTP service's Idempotency-Key
//! behaviour from outside.

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
    /// A try without an answer after this is lost.
    #[arg(long, default_value_t = 3000)]
    timeout_ms: u64,
    /// The slow provider's delay (longer than the service's lease).
    #[arg(long, default_value_t = 1200)]
    slow_ms: u64,
    /// The run stops starting work after this.
    #[arg(long, default_value_t = 120)]
    max_secs: u64,
    /// A client gives up on an operation this long after its first send;
    /// make it longer than the service's lease (at most --max-secs).
    #[arg(long, default_value_t = 30_000)]
    deadline_ms: u64,
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
        Some(path) => idemsim::http::config::HttpConfig::from_file(path)?,
        None => idemsim::http::config::HttpConfig::default(),
    };
    if let Some(t) = &args.target {
        config.target = Some(t.clone());
    }
    if let Some(p) = &args.provider_listen {
        config.provider_listen = p.clone();
    }
    let trace = match &args.trace {
        Some(path) => Some(idemsim::output::prepare(path, &["jsonl"], "the trace")?),
        None => None,
    };
    let spec = idemsim::http::HttpSpec {
        config,
        seed: args.seed,
        ops: args.requests,
        clients: args.clients,
        timeout_ms: args.timeout_ms,
        slow_ms: args.slow_ms,
        max_secs: args.max_secs,
        deadline_ms: args.deadline_ms,
        retry_5xx: !args.no_retry_5xx,
        tag: args.tag.clone(),
    };
    let report = idemsim::http::run(&spec)?;
    if let Some(trace) = trace {
        let mut file =
            std::io::BufWriter::new(std::fs::File::create(trace.path()).map_err(|e| idemsim::output::plain(&e))?);
        idemsim::http::report::trace(&report, &mut file)
            .and_then(|()| file.flush())
            .map_err(|e| format!("cannot write the trace: {}", idemsim::output::plain(&e)))?;
        trace.keep();
    }
    let reproduce = reproduce_line(&args, &report);
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
fn reproduce_line(args: &Args, report: &idemsim::http::HttpReport) -> String {
    let mut words = vec![program().to_string(), "http".into(), "--target".into(), quoted(&report.target).into()];
    if let Some(config) = &args.config {
        words.extend(["--config".into(), quoted(&config.to_string_lossy()).into_owned()]);
    }
    let numbers = [
        ("--seed", report.seed),
        ("--requests", args.requests as u64),
        ("--clients", args.clients as u64),
        ("--timeout-ms", args.timeout_ms),
        ("--slow-ms", args.slow_ms),
        ("--max-secs", args.max_secs),
        ("--deadline-ms", args.deadline_ms),
    ];
    for (flag, value) in numbers {
        words.extend([flag.to_string(), value.to_string()]);
    }
    if let Some(listen) = &args.provider_listen {
        words.extend(["--provider-listen".into(), quoted(listen).into_owned()]);
    }
    if args.no_retry_5xx {
        words.push("--no-retry-5xx".into());
    }
    words.join(" ")
}
