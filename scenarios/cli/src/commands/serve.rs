//! `idemsim serve`: the protocol (or a broken variant) as a real HTTP
//! service.

use crate::args::parse_variant;
use crate::args::OneLine;
use crate::EXIT_CLEAN;
use idemsim::target::StoreTarget;
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to listen (loopback; port 0 picks one and prints it).
    #[arg(long, default_value = "127.0.0.1:7400")]
    listen: String,
    /// The protocol variant (a catalogue name; default correct).
    #[arg(long, default_value = "correct", value_parser = parse_variant)]
    variant: idemsim_sim::Variant,
    /// The store: mem, sqlite, pg, mysql or redis.
    #[arg(long, default_value = "mem")]
    store: String,
    /// Connection URL of a server store.
    #[arg(long)]
    url: Option<String>,
    /// The payment provider's base URL (e.g. `idemsim http`'s,
    /// http://127.0.0.1:7410); default: an in-process one.
    #[arg(long)]
    provider: Option<String>,
    /// Replicas behind the listener (requests go round robin).
    #[arg(long, default_value_t = 2)]
    nodes: u32,
    /// Lease of a claim or takeover.
    #[arg(long, default_value_t = 500)]
    lease_ms: u64,
    /// Added to every store call, as for a store across a network.
    #[arg(long, default_value_t = 1)]
    store_delay_ms: u64,
    /// A call to the payment provider gives up after this (make it longer
    /// than `idemsim http`'s --slow-ms).
    #[arg(long, default_value_t = 5_000)]
    provider_timeout_ms: u64,
    /// Stop after this many seconds (0: run until Ctrl-C).
    #[arg(long, default_value_t = 0)]
    max_secs: u64,
}

pub fn exec(args: Args, out: &mut dyn Write) -> Result<i32, String> {
    let listen = idemsim::http::loopback_addr("--listen", &args.listen).line()?;
    let target = StoreTarget::parse(&args.store, args.url.as_deref()).line()?;
    let spec = idemsim::serve::ServeSpec {
        listen,
        nodes: args.nodes,
        lease_ms: args.lease_ms,
        store_delay_ms: args.store_delay_ms,
        provider: args.provider.clone(),
        max_secs: args.max_secs,
        provider_timeout_ms: args.provider_timeout_ms,
        ..idemsim::serve::ServeSpec::default()
    };
    idemsim::serve::serve(&spec, &target, args.variant.protocol(), out).line()?;
    // Stopped by Ctrl-C (or SIGTERM): 130, as every command; by --max-secs: 0.
    Ok(if idemsim::sweep::stopped() { crate::EXIT_INTERRUPTED } else { EXIT_CLEAN })
}
